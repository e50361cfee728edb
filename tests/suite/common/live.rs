//! [`Live`]: a run of a real program (metron, or metron under `script`) that the test
//! talks to while it runs: stdin stays open, and stdout and stderr are collected as they
//! arrive, so a test can wait for a line, type an answer, or send Ctrl-C.

use std::io::Write;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{PATIENCE, Run};
use crate::suite::fake_ollama::FakeOllama;

/// A metron run whose stdin stays open, with stdout and stderr collected as they arrive.
/// The child is killed if the test ends without [`Live::finish`].
pub struct Live {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: Arc<Mutex<Vec<u8>>>,
    stderr: Arc<Mutex<Vec<u8>>>,
    readers: Vec<JoinHandle<()>>,
    _home: tempfile::TempDir,
}

/// A command for the real binary in `cwd` with the environment [`metron`] gives it: HOME
/// and METRON_CONFIG_DIR at a fresh temp dir (returned, to keep it alive), and every other
/// variable metron reads removed.
pub fn hermetic(program: impl AsRef<std::ffi::OsStr>, cwd: &Path) -> (Command, tempfile::TempDir) {
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("create a temp HOME");
    let mut command = Command::new(program);
    command
        .current_dir(cwd)
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path())
        .env_remove("METRON_CONFIG")
        .env_remove("OLLAMA_HOST")
        .env_remove("OLLAMA_MODEL")
        .env_remove("METRON_ALLOW_PROJECT_COMMANDS")
        .env_remove("XDG_CONFIG_HOME");
    (command, home)
}

impl Live {
    /// Starts `metron ARGS` in `cwd` against `fake`.
    pub fn metron(cwd: &Path, args: &[&str], fake: &FakeOllama) -> Live {
        let (mut command, home) = hermetic(env!("CARGO_BIN_EXE_metron"), cwd);
        command.args(args).env("OLLAMA_HOST", fake.base_url());
        Live::start(command, home)
    }

    /// Starts `command` with all three streams piped.
    pub fn start(mut command: Command, home: tempfile::TempDir) -> Live {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn metron");
        let stdin = child.stdin.take();
        let stdout = Arc::new(Mutex::new(Vec::new()));
        let stderr = Arc::new(Mutex::new(Vec::new()));
        let mut readers = Vec::new();
        let out = child.stdout.take().expect("child stdout");
        readers.push(collect(out, Arc::clone(&stdout)));
        let err = child.stderr.take().expect("child stderr");
        readers.push(collect(err, Arc::clone(&stderr)));
        Live {
            child,
            stdin,
            stdout,
            stderr,
            readers,
            _home: home,
        }
    }

    /// The child's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Writes `text` to the child's stdin.
    pub fn send(&mut self, text: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is still open");
        stdin.write_all(text.as_bytes()).expect("write to metron");
        stdin.flush().expect("flush metron's stdin");
    }

    /// Whether the child has exited (without waiting).
    pub fn exited(&mut self) -> bool {
        self.child.try_wait().expect("poll metron").is_some()
    }

    /// Closes the child's stdin (end of input).
    pub fn close_stdin(&mut self) {
        self.stdin = None;
    }

    /// Waits until the child has a running child process named `name` (a command it
    /// started) and returns that process's pid.
    #[cfg(target_os = "linux")]
    pub fn wait_for_child(&self, name: &str) -> u32 {
        let deadline = Instant::now() + PATIENCE;
        loop {
            if let Some(pid) = super::child_named(self.pid(), name) {
                return pid;
            }
            assert!(
                Instant::now() < deadline,
                "{name} never started: {}",
                self.stderr()
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Sends SIGINT, as Ctrl-C at a terminal would.
    pub fn interrupt(&self) {
        let pid = libc::pid_t::try_from(self.pid()).expect("pid fits pid_t");
        // SAFETY: kill(2) with a pid we spawned and still own (not yet reaped).
        let rc = unsafe { libc::kill(pid, libc::SIGINT) };
        assert_eq!(rc, 0, "kill -INT {pid}");
    }

    /// stdout so far, as text.
    pub fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout.lock().expect("stdout lock")).into_owned()
    }

    /// stderr so far, as text.
    pub fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().expect("stderr lock")).into_owned()
    }

    /// Waits until stdout contains `needle` `times` times; fails the test after [`PATIENCE`].
    #[track_caller]
    pub fn wait_stdout(&self, needle: &str, times: usize) {
        self.wait_for(&format!("{needle:?} {times} time(s)"), |out| {
            out.matches(needle).count() >= times
        });
    }

    /// Waits until stdout shows `needle` somewhere after the last `anchor`.
    #[track_caller]
    pub fn wait_stdout_after(&self, anchor: &str, needle: &str) {
        self.wait_for(&format!("{needle:?} after {anchor:?}"), |out| {
            out.rfind(anchor)
                .is_some_and(|at| out[at + anchor.len()..].contains(needle))
        });
    }

    #[track_caller]
    fn wait_for(&self, what: &str, done: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while !done(&self.stdout()) {
            if Instant::now() > deadline {
                panic!(
                    "stdout never showed {what}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Waits until stderr contains `needle`; fails the test after [`PATIENCE`].
    #[track_caller]
    pub fn wait_stderr(&self, needle: &str) {
        let deadline = Instant::now() + PATIENCE;
        while !self.stderr().contains(needle) {
            if Instant::now() > deadline {
                panic!(
                    "stderr never showed {needle:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// Closes stdin and waits for the exit; kills the child and fails the test if it has
    /// not exited within [`PATIENCE`].
    pub fn finish(mut self) -> Run {
        self.close_stdin();
        let deadline = Instant::now() + PATIENCE;
        let status = loop {
            if let Some(status) = self.child.try_wait().expect("poll metron") {
                break status;
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                let _ = self.child.wait();
                panic!(
                    "metron did not exit\n--- stdout ---\n{}\n--- stderr ---\n{}",
                    self.stdout(),
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(5));
        };
        for reader in self.readers.drain(..) {
            let _ = reader.join();
        }
        Run {
            code: status.code().unwrap_or(-1),
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

fn collect(
    mut from: impl std::io::Read + Send + 'static,
    into: Arc<Mutex<Vec<u8>>>,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let mut buf = [0u8; 4096];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => into
                    .lock()
                    .expect("output lock")
                    .extend_from_slice(&buf[..n]),
            }
        }
    })
}
