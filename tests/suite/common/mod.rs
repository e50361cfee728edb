//! Shared helpers for the integration tests.
//!
//! - [`TestProject`]: a temporary project tree built file by file, optionally a git repo;
//! - [`metron`]: runs the real `metron` binary in a directory with a hermetic environment
//!   (HOME and METRON_CONFIG_DIR always point at a fresh temp dir, so the user's own config
//!   is never read, and the test process's environment is never mutated);
//! - [`rg_available`] / [`ctags_available`] / [`skip`]: external programs are optional, and
//!   a test that needs a missing one says `SKIP` and why instead of passing silently; under
//!   `CI=true` it fails instead, since CI installs them ([`skip_live`] is for what CI lacks:
//!   a live Ollama server, the network);
//! - [`rg_lines`]: runs the real ripgrep and normalises its output for comparison;
//! - [`assert_text_eq`]: whole-output comparison that prints a line diff;
//! - [`alloc_meter`]: counts heap bytes per thread, so a test can bound a tool's memory;
//! - [`Live`] (in `live.rs`): a run the test talks to while it goes on, and [`hermetic`],
//!   the same environment as [`metron`] for any program;
//! - `peak.rs`: a run's peak memory ([`run_with_peak`]), sampled from /proc, which
//!   `wait4` cannot give on Linux;
//! - `terminal.rs`: metron on a pseudo-terminal ([`on_a_terminal`], [`script_available`]);
//! - `greet.rs`: the Greet fixture ([`GREET_GO`], [`greet_project`], [`greet_patch`],
//!   [`greet_session`]) and readers of the fake's requests ([`roles`], [`tool_messages`]).
//!
//! Helpers are added, never changed in meaning: several test modules share these files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::Duration;

use metron::project::Project;
use metron::tools::{Budgets, Toolbox};

mod greet;
mod live;
mod peak;
mod terminal;

pub use greet::*;
pub use live::*;
pub use peak::*;
pub use terminal::*;

/// How long any wait in these tests may take before the test fails.
pub const PATIENCE: Duration = Duration::from_secs(20);

/// A temporary project directory, deleted when dropped.
pub struct TestProject {
    dir: tempfile::TempDir,
    git: bool,
}

impl TestProject {
    /// An empty project that is not a git repository.
    pub fn new() -> TestProject {
        TestProject {
            dir: tempfile::Builder::new()
                .prefix("metron-test-")
                .tempdir()
                .expect("create a temp dir"),
            git: false,
        }
    }

    /// An empty project that is a git repository (`.gitignore` applies inside it).
    pub fn git() -> TestProject {
        let mut project = TestProject::new();
        git_init(project.root());
        project.git = true;
        project
    }

    /// The project root (the temp dir itself).
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// The absolute path of `rel` inside the project.
    pub fn path(&self, rel: &str) -> PathBuf {
        self.root().join(rel)
    }

    /// Writes a file, creating its parent directories.
    pub fn file(&self, rel: &str, contents: impl AsRef<[u8]>) -> &TestProject {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::fs::write(&path, contents).unwrap_or_else(|e| panic!("write {rel}: {e}"));
        self
    }

    /// Creates a directory (and its parents).
    pub fn dir(&self, rel: &str) -> &TestProject {
        std::fs::create_dir_all(self.path(rel)).unwrap_or_else(|e| panic!("mkdir {rel}: {e}"));
        self
    }

    /// Creates a symlink at `rel` whose target is `target`, verbatim (relative or absolute).
    pub fn symlink(&self, rel: &str, target: impl AsRef<Path>) -> &TestProject {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        std::os::unix::fs::symlink(target.as_ref(), &path)
            .unwrap_or_else(|e| panic!("symlink {rel}: {e}"));
        self
    }

    /// Creates a named pipe (FIFO) at `rel`, with the `mkfifo` program.
    pub fn fifo(&self, rel: &str) -> &TestProject {
        let path = self.path(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("create parent dirs");
        }
        let status = Command::new("mkfifo")
            .arg(&path)
            .status()
            .expect("run mkfifo");
        assert!(status.success(), "mkfifo {rel} failed");
        self
    }

    /// Opens the project rooted exactly here, as metron would.
    pub fn project(&self) -> Project {
        Project::open(self.root(), self.git).expect("open the project")
    }

    /// A toolbox over this project with the given budgets.
    pub fn toolbox(&self, budgets: Budgets) -> Toolbox {
        Toolbox::new(self.project(), budgets)
    }
}

/// Makes `dir` a git work tree: `git init` when git is installed, else a bare `.git`
/// directory, which is all the walk (and ripgrep) look for.
pub fn git_init(dir: &Path) {
    let ran = Command::new("git")
        .args(["init", "-q"])
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ran {
        std::fs::create_dir_all(dir.join(".git")).expect("create .git");
    }
}

/// Budgets with every limit set to `n`.
pub fn budgets_all(n: usize) -> Budgets {
    Budgets {
        max_slice_lines: n,
        max_line_chars: n,
        search_max_matches: n,
        search_max_per_file: n,
        list_max_entries: n,
    }
}

/// Budgets so large that nothing is ever truncated or clipped.
pub fn huge_budgets() -> Budgets {
    budgets_all(usize::MAX / 4)
}

/// The captured result of one `metron` run.
#[derive(Debug, Default)]
pub struct Run {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// stdout, as text.
    pub stdout: String,
    /// stderr, as text.
    pub stderr: String,
}

/// A `metron` invocation being built. See [`metron`].
pub struct Metron {
    command: Command,
    stdin: Option<Vec<u8>>,
    home: tempfile::TempDir,
}

/// Starts building a run of the real `metron` binary in `cwd`. HOME and METRON_CONFIG_DIR
/// point at a fresh empty temp dir, and the other variables metron reads are removed, so
/// nothing of the real user's setup leaks in; override them with [`Metron::env`].
pub fn metron(cwd: &Path) -> Metron {
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("create a temp HOME");
    let mut command = Command::new(env!("CARGO_BIN_EXE_metron"));
    command
        .current_dir(cwd)
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path())
        .env_remove("METRON_CONFIG")
        .env_remove("OLLAMA_HOST")
        .env_remove("OLLAMA_MODEL")
        .env_remove("METRON_ALLOW_PROJECT_COMMANDS")
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("SSL_CERT_FILE")
        .env_remove("METRON_API_KEY")
        .env_remove("OPENAI_API_KEY");
    Metron {
        command,
        stdin: None,
        home,
    }
}

impl Metron {
    /// The temp dir used as HOME and METRON_CONFIG_DIR.
    pub fn home(&self) -> &Path {
        self.home.path()
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Metron
    where
        I: IntoIterator<Item = S>,
        S: AsRef<std::ffi::OsStr>,
    {
        self.command.args(args);
        self
    }

    /// Sets an environment variable on the child only.
    pub fn env(mut self, key: &str, value: impl AsRef<std::ffi::OsStr>) -> Metron {
        self.command.env(key, value);
        self
    }

    /// Removes an environment variable from the child only.
    pub fn env_remove(mut self, key: &str) -> Metron {
        self.command.env_remove(key);
        self
    }

    /// Feeds `text` on stdin (otherwise stdin is empty).
    pub fn stdin(mut self, text: impl Into<Vec<u8>>) -> Metron {
        self.stdin = Some(text.into());
        self
    }

    /// Runs to completion and captures everything.
    pub fn run(mut self) -> Run {
        use std::io::Write;
        let mut child = self
            .command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn metron");
        let input = self.stdin.take().unwrap_or_default();
        let mut pipe = child.stdin.take().expect("child stdin");
        let writer = std::thread::spawn(move || {
            // The child may exit without reading; a broken pipe here is fine.
            let _ = pipe.write_all(&input);
        });
        let output = child.wait_with_output().expect("wait for metron");
        let _ = writer.join();
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }
}

impl Metron {
    /// Runs like [`Metron::run`] (stdin empty), but kills the child and returns `None` when
    /// it has not exited within `limit`, so a test of "this must not hang" fails instead
    /// of hanging the suite.
    pub fn run_within(mut self, limit: std::time::Duration) -> Option<Run> {
        use std::io::Read;
        let mut child = self
            .command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn metron");
        let drain = |pipe: Option<Box<dyn Read + Send>>| {
            std::thread::spawn(move || {
                let mut text = Vec::new();
                if let Some(mut pipe) = pipe {
                    let _ = pipe.read_to_end(&mut text);
                }
                String::from_utf8_lossy(&text).into_owned()
            })
        };
        let stdout = drain(
            child
                .stdout
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let stderr = drain(
            child
                .stderr
                .take()
                .map(|p| Box::new(p) as Box<dyn Read + Send>),
        );
        let deadline = std::time::Instant::now() + limit;
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait for metron") {
                break Some(status);
            }
            if std::time::Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                break None;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        let (stdout, stderr) = (
            stdout.join().unwrap_or_default(),
            stderr.join().unwrap_or_default(),
        );
        status.map(|status| Run {
            code: status.code().unwrap_or(-1),
            stdout,
            stderr,
        })
    }
}

/// Whether `program --version` runs and its output contains `needle`.
fn program_runs(program: &str, needle: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains(needle))
}

/// True when ripgrep is installed. Tests that need it call [`skip`] otherwise.
pub fn rg_available() -> bool {
    static RG: OnceLock<bool> = OnceLock::new();
    *RG.get_or_init(|| program_runs("rg", "ripgrep"))
}

/// True when Universal Ctags is installed (BSD ctags does not count).
pub fn ctags_available() -> bool {
    static CTAGS: OnceLock<bool> = OnceLock::new();
    *CTAGS.get_or_init(|| program_runs("ctags", "Universal Ctags"))
}

/// Prints the line that says a test did not run, and why. Call it and return.
///
/// Under `CI=true` it panics instead: CI installs everything such a test needs (ripgrep,
/// Universal Ctags, golang-src, git; util-linux `script` comes with every Debian system),
/// so a skip there means a test silently stopped running. What CI deliberately lacks (a
/// live Ollama server, the network) goes through [`skip_live`] instead.
#[track_caller]
pub fn skip(test: &str, why: &str) {
    if in_ci() {
        panic!(
            "{test} cannot run under CI=true: {why}. CI must install what this test needs \
             (see .ci/run); tests may only skip outside CI"
        );
    }
    eprintln!("SKIP {test}: {why}");
}

/// Like [`skip`], but never fails, even under CI: for what no CI machine has by design —
/// a live Ollama server, the network, a name for the machine other than `localhost`.
pub fn skip_live(test: &str, why: &str) {
    eprintln!("SKIP {test}: {why}");
}

/// Whether the tests run in CI (`CI=true`, as CI services and `.ci/run` set it).
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v.eq_ignore_ascii_case("true"))
}

/// Runs ripgrep in `dir` and returns its stdout as normalised lines: the `./` prefix
/// removed, one trailing `\r` dropped (metron's clip_line drops it too), invalid UTF-8
/// replaced with U+FFFD (metron prints lines lossily, so converting ripgrep's raw bytes the
/// same way makes the two comparable without dropping any line), and ripgrep's
/// `PATH: binary file matches (found "\0" byte ...)` notices removed (they are not matches;
/// metron keeps the matches found before the NUL, exactly like ripgrep, and says nothing).
/// The environment is the test process's, minus `RIPGREP_CONFIG_PATH`, so ripgrep reads the
/// same global git excludes as the in-process walk. Exit code 1 (no match) is fine.
pub fn rg_lines(dir: &Path, args: &[&str]) -> Vec<String> {
    let output = Command::new("rg")
        .args(args)
        .current_dir(dir)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .output()
        .expect("run rg");
    let code = output.status.code().unwrap_or(-1);
    assert!(
        code == 0 || code == 1,
        "rg {args:?} in {} failed with {code}: {}",
        dir.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    normalise_lines(&output.stdout)
        .into_iter()
        .filter(|line| !is_rg_binary_notice(line))
        .collect()
}

/// Splits raw output into lines, normalised as [`rg_lines`] describes.
pub fn normalise_lines(bytes: &[u8]) -> Vec<String> {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    if bytes.is_empty() {
        return Vec::new();
    }
    bytes
        .split(|&b| b == b'\n')
        .map(|line| {
            let line = line.strip_prefix(b"./").unwrap_or(line);
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            String::from_utf8_lossy(line).into_owned()
        })
        .collect()
}

fn is_rg_binary_notice(line: &str) -> bool {
    line.contains(": binary file matches (found \"\\0\" byte around offset ")
        || line.starts_with("WARNING: stopped searching binary file")
}

/// The lines of a tool's text output (no trailing empty line).
pub fn lines(text: &str) -> Vec<String> {
    text.lines().map(str::to_owned).collect()
}

/// Asserts two texts are equal; on failure prints where they differ, line by line.
#[track_caller]
pub fn assert_text_eq(actual: &str, expected: &str) {
    if actual != expected {
        panic!(
            "texts differ\n{}\n--- full actual ---\n{actual}\n--- end ---",
            line_diff(
                &expected.lines().collect::<Vec<_>>(),
                &actual.lines().collect::<Vec<_>>()
            )
        );
    }
}

/// Asserts two line lists are equal; on failure prints a diff of the differing region.
#[track_caller]
pub fn assert_lines_eq(actual: &[String], expected: &[String], what: &str) {
    if actual != expected {
        let a: Vec<&str> = actual.iter().map(String::as_str).collect();
        let e: Vec<&str> = expected.iter().map(String::as_str).collect();
        panic!(
            "{what}: {} lines vs {} expected\n{}",
            a.len(),
            e.len(),
            line_diff(&e, &a)
        );
    }
}

/// A compact diff: the common prefix and suffix are skipped, and the differing middle is
/// shown as `-expected` / `+actual` lines (at most 40 of each).
pub fn line_diff(expected: &[&str], actual: &[&str]) -> String {
    let prefix = expected
        .iter()
        .zip(actual)
        .take_while(|(e, a)| e == a)
        .count();
    let suffix = expected[prefix..]
        .iter()
        .rev()
        .zip(actual[prefix..].iter().rev())
        .take_while(|(e, a)| e == a)
        .count();
    let mut out = format!("@@ first difference at line {} @@\n", prefix + 1);
    let show = |out: &mut String, sign: char, lines: &[&str]| {
        for line in lines.iter().take(40) {
            out.push_str(&format!("{sign}{line}\n"));
        }
        if lines.len() > 40 {
            out.push_str(&format!("{sign}... {} more\n", lines.len() - 40));
        }
    };
    show(&mut out, '-', &expected[prefix..expected.len() - suffix]);
    show(&mut out, '+', &actual[prefix..actual.len() - suffix]);
    out
}

/// Runs `f` on another thread and returns its result, or `None` if it has not finished
/// after `limit`; then `unblock` is called (to release whatever it waits on) and the thread
/// is joined.
pub fn within<T: Send + 'static>(
    limit: Duration,
    f: impl FnOnce() -> T + Send + 'static,
    unblock: impl FnOnce(),
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    let handle = std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(limit) {
        Ok(value) => {
            let _ = handle.join();
            Some(value)
        }
        Err(_) => {
            unblock();
            let _ = handle.join();
            None
        }
    }
}

/// Opens a FIFO for writing and closes it again, which releases a reader blocked in open.
pub fn release_fifo(path: &Path) {
    let _ = std::fs::OpenOptions::new().write(true).open(path);
}

/// Heap accounting per thread, for tests that bound how much memory a tool uses.
///
/// A counting wrapper around the system allocator is installed for the whole test binary;
/// its cost is two thread-local additions per allocation. [`alloc_meter::peak_during`]
/// reports the most heap the *calling thread* held at once while running a closure.
pub mod alloc_meter {
    use std::alloc::{GlobalAlloc, Layout, System};
    use std::cell::Cell;

    struct Meter;

    thread_local! {
        // Const-initialised with no destructor, so these are safe to touch from inside
        // the allocator at any point of a thread's life.
        static CURRENT: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn add(delta: isize) {
        let now = CURRENT.with(|c| {
            let v = c.get().wrapping_add(delta);
            c.set(v);
            v
        });
        PEAK.with(|p| {
            if now > p.get() {
                p.set(now);
            }
        });
    }

    // SAFETY: every method forwards to `System` unchanged; the bookkeeping only touches
    // thread-local integers and never allocates.
    unsafe impl GlobalAlloc for Meter {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let ptr = unsafe { System.alloc(layout) };
            if !ptr.is_null() {
                add(layout.size() as isize);
            }
            ptr
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let ptr = unsafe { System.alloc_zeroed(layout) };
            if !ptr.is_null() {
                add(layout.size() as isize);
            }
            ptr
        }
        unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
            // SAFETY: same contract as the caller's.
            unsafe { System.dealloc(ptr, layout) };
            add(-(layout.size() as isize));
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: same contract as the caller's.
            let new = unsafe { System.realloc(ptr, layout, new_size) };
            if !new.is_null() {
                add(new_size as isize - layout.size() as isize);
            }
            new
        }
    }

    #[global_allocator]
    static GLOBAL: Meter = Meter;

    /// Runs `f` and returns its result with the peak number of heap bytes this thread held
    /// above what it held when `f` started.
    pub fn peak_during<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let start = CURRENT.with(Cell::get);
        PEAK.with(|p| p.set(start));
        let result = f();
        let peak = PEAK.with(Cell::get);
        (result, usize::try_from(peak - start).unwrap_or(0))
    }
}

/// The pid of a running child of `parent` whose command name is `name` (Linux `/proc`).
#[cfg(target_os = "linux")]
pub fn child_named(parent: u32, name: &str) -> Option<u32> {
    std::fs::read_dir("/proc")
        .ok()?
        .flatten()
        .find_map(|entry| {
            let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(entry.path().join("stat")).ok()?;
            // `pid (comm) state ppid ...`; comm may hold spaces and parentheses.
            let (head, tail) = stat.rsplit_once(") ")?;
            let comm = head.split_once(" (")?.1;
            let mut fields = tail.split(' ');
            let state = fields.next()?;
            let ppid: u32 = fields.next()?.parse().ok()?;
            (ppid == parent && comm == name && state != "Z").then_some(pid)
        })
}

/// A run of `metron -p --json` with its stdout parsed: one event per line, each must be
/// JSON.
pub fn json_events(run: Run) -> (Run, Vec<serde_json::Value>) {
    let events = run
        .stdout
        .lines()
        .map(|line| {
            serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}\n{run:?}"))
        })
        .collect();
    (run, events)
}

/// The events of one `type`, in order.
pub fn events_of_type<'a>(
    events: &'a [serde_json::Value],
    kind: &str,
) -> Vec<&'a serde_json::Value> {
    events.iter().filter(|e| e["type"] == kind).collect()
}

/// Sets a file's modification time `by` into the past.
pub fn age(path: &Path, by: std::time::Duration) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .unwrap_or_else(|e| panic!("open {}: {e}", path.display()));
    file.set_modified(std::time::SystemTime::now() - by)
        .unwrap_or_else(|e| panic!("set the time of {}: {e}", path.display()));
}
