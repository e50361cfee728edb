//! The release binaries where users run them: a static Linux binary in an empty root (no
//! `/etc`, no certificates, no libc files, no HOME or PATH: what `FROM scratch` gives),
//! and the arm64 binary under `qemu-aarch64-static`, each talking to the fake Ollama on
//! loopback, over http and over https with a private CA named by SSL_CERT_FILE.
//!
//! The binaries come from `cargo xtask dist`: `.ci/run` builds them and names them in
//! `METRON_STATIC_BIN` (x86_64) and `METRON_STATIC_BIN_ARM64` (aarch64). Outside CI the
//! tests skip when those are unset; the empty root is made with bubblewrap (Debian package
//! `bubblewrap`), which needs no container engine.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::common::{GREET_GO, GREET_HOLA, Run, git_init, greet_session, skip};
use super::fake_ollama::{DEFAULT_MODEL, FakeOllama};
use super::tls::Pki;

/// Where the project sits inside the empty root.
const PROJECT: &str = "/proj";

/// A static binary named by `var`, or `None` after saying why the test skips.
fn release_binary(test: &str, var: &str) -> Option<PathBuf> {
    match std::env::var_os(var).map(PathBuf::from) {
        Some(path) if path.is_file() => Some(path),
        Some(path) => panic!("{var} names {}, which is not a file", path.display()),
        None => {
            skip(
                test,
                &format!(
                    "{var} is not set; build the release binaries with `cargo xtask dist` and \
                     point {var} at the unpacked `metron` (see .ci/run)"
                ),
            );
            None
        }
    }
}

/// Whether bubblewrap can make an empty root here; says why the test skips otherwise.
fn bwrap_works(test: &str) -> bool {
    let probe = Command::new("bwrap")
        .args(["--bind", "/", "/", "true"])
        .stdin(Stdio::null())
        .output();
    match probe {
        Ok(out) if out.status.success() => true,
        Ok(out) => {
            skip(
                test,
                &format!(
                    "bwrap cannot make a sandbox here: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            );
            false
        }
        Err(e) => {
            skip(
                test,
                &format!("bwrap is not installed ({e}); apt install bubblewrap"),
            );
            false
        }
    }
}

/// An empty root holding only `/metron`, the greet project at `/proj` (a git repository)
/// and whatever a test adds; run commands in it with [`EmptyRoot::run`].
struct EmptyRoot {
    dir: tempfile::TempDir,
    /// An emulator bound into the root and put in front of the binary (the arm64 runs).
    emulator: Option<PathBuf>,
}

impl EmptyRoot {
    fn new(binary: &Path) -> EmptyRoot {
        let dir = tempfile::Builder::new()
            .prefix("metron-empty-root-")
            .tempdir()
            .expect("create the root");
        let metron = dir.path().join("metron");
        std::fs::copy(binary, &metron).expect("copy the binary into the root");
        let project = dir.path().join(PROJECT.trim_start_matches('/'));
        std::fs::create_dir(&project).expect("create the project");
        std::fs::write(project.join("greet.go"), GREET_GO).expect("write greet.go");
        git_init(&project);
        EmptyRoot {
            dir,
            emulator: None,
        }
    }

    /// Runs every command under `emulator` (bound read-only into the root as `/emulator`).
    fn under(mut self, emulator: PathBuf) -> EmptyRoot {
        self.emulator = Some(emulator);
        self
    }

    /// A file of the project, seen from outside the root.
    fn project_file(&self, rel: &str) -> PathBuf {
        self.dir
            .path()
            .join(PROJECT.trim_start_matches('/'))
            .join(rel)
    }

    /// Runs `/metron ARGS` in the root with exactly the environment `env` (nothing else: no
    /// HOME, no PATH), in `/proj`, sharing only the network (so the loopback fake is
    /// reachable), and how long it took.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> (Run, Duration) {
        let mut command = Command::new("bwrap");
        command
            .args([
                "--unshare-user",
                "--unshare-pid",
                "--unshare-ipc",
                "--unshare-uts",
            ])
            .arg("--bind")
            .arg(self.dir.path())
            .arg("/")
            .args(["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"])
            .args(["--chdir", PROJECT, "--clearenv", "--die-with-parent"]);
        if let Some(emulator) = &self.emulator {
            command.arg("--ro-bind").arg(emulator).arg("/emulator");
        }
        for (key, value) in env {
            command.args(["--setenv", key, value]);
        }
        command.arg("--");
        if self.emulator.is_some() {
            command.arg("/emulator");
        }
        command.arg("/metron").args(args).stdin(Stdio::null());
        let started = Instant::now();
        let out = command.output().expect("run bwrap");
        let took = started.elapsed();
        let run = Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        };
        (run, took)
    }
}

/// `http://localhost:PORT` for the fake: the name, not the address, so the run shows that
/// `localhost` resolves with no /etc/hosts.
fn localhost_url(fake: &FakeOllama) -> String {
    format!("http://localhost:{}", fake.addr().port())
}

/// What every release binary must do in an empty root: print its version, run a tool,
/// pass the doctor through `localhost` within a second, and finish a `-p` turn that reads
/// and patches a file.
fn works_in_an_empty_root(root: &EmptyRoot, doctor_limit: Duration) {
    let (run, _) = root.run(&["--version"], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with(concat!("metron ", env!("CARGO_PKG_VERSION"))),
        "{run:?}"
    );

    let (run, _) = root.run(&["tool", "find_symbol", r#"{"symbol":"Greet"}"#], &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("greet.go:4"), "{run:?}");

    // The doctor, through `localhost`: the failure this guards against is the resolver
    // looking for /etc/hosts, then asking DNS, and giving up after 5 s. The best of three
    // runs is compared, so a loaded machine does not make it flaky.
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .start();
    let endpoint = localhost_url(&fake);
    let env = [
        ("OLLAMA_HOST", endpoint.as_str()),
        ("OLLAMA_MODEL", DEFAULT_MODEL),
    ];
    let mut best = Duration::MAX;
    for _ in 0..3 {
        let (run, took) = root.run(&["--doctor"], &env);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(run.stdout.contains("doctor: ready"), "{run:?}");
        best = best.min(took);
    }
    assert!(
        best < doctor_limit,
        "--doctor took {best:?} at best, over {doctor_limit:?}"
    );

    // https through `localhost`, trusting a private CA whose PEM file is the only other
    // file in the root: the built-in roots and SSL_CERT_FILE work with no /etc/ssl.
    let pki = Pki::new("metron empty-root test CA");
    std::fs::copy(&pki.ca_file, root.dir.path().join("ca.pem")).expect("copy the CA file");
    let fake = pki.server(&["localhost"], false);
    let endpoint = format!("https://localhost:{}", fake.addr().port());
    let mut env = vec![
        ("OLLAMA_HOST", endpoint.as_str()),
        ("OLLAMA_MODEL", DEFAULT_MODEL),
    ];
    let (run, _) = root.run(&["--doctor"], &env);
    assert_eq!(
        run.code, 1,
        "without SSL_CERT_FILE the CA is unknown: {run:?}"
    );
    assert!(run.stdout.contains("SSL_CERT_FILE"), "{run:?}");
    env.push(("SSL_CERT_FILE", "/ca.pem"));
    let (run, _) = root.run(&["--doctor"], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("doctor: ready"), "{run:?}");
    assert!(run.stdout.contains("/ca.pem"), "{run:?}");

    // A whole turn: find_symbol, view_slice, apply_patch (approved by --yes), the answer.
    let answer = "Greet now returns \"hola\" (greet.go:5).";
    let fake = FakeOllama::start(greet_session(answer));
    let endpoint = localhost_url(&fake);
    let env = [
        ("OLLAMA_HOST", endpoint.as_str()),
        ("OLLAMA_MODEL", DEFAULT_MODEL),
    ];
    let (run, _) = root.run(&["-p", "make Greet return \"hola\"", "--yes"], &env);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, format!("{answer}\n"), "{run:?}");
    let patched = std::fs::read_to_string(root.project_file("greet.go")).expect("read greet.go");
    assert_eq!(patched, GREET_HOLA);
}

#[test]
fn the_static_x86_64_binary_works_in_an_empty_root() {
    let test = "the_static_x86_64_binary_works_in_an_empty_root";
    let Some(binary) = release_binary(test, "METRON_STATIC_BIN") else {
        return;
    };
    if !bwrap_works(test) {
        return;
    }
    works_in_an_empty_root(&EmptyRoot::new(&binary), Duration::from_secs(1));
}

#[test]
fn the_static_arm64_binary_works_under_qemu_in_an_empty_root() {
    let test = "the_static_arm64_binary_works_under_qemu_in_an_empty_root";
    let Some(binary) = release_binary(test, "METRON_STATIC_BIN_ARM64") else {
        return;
    };
    if !bwrap_works(test) {
        return;
    }
    let Some(qemu) = ["/usr/bin/qemu-aarch64-static", "/usr/bin/qemu-aarch64"]
        .iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
    else {
        skip(
            test,
            "qemu-aarch64-static is not installed; apt install qemu-user-static",
        );
        return;
    };
    // Emulation costs each start some tens of milliseconds and every instruction about
    // ten times its native time; the 5 s resolver stall stays well outside this limit.
    works_in_an_empty_root(&EmptyRoot::new(&binary).under(qemu), Duration::from_secs(3));
}
