//! Cases on where metron is run: in a home directory (a git work tree or not) or at `/`,
//! where every key and credential would be in the model's reach, metron refuses to start
//! (REPL, `-p` and `metron tool`); and a project that holds the user's home (`/home` as a
//! project) keeps the protected places (`~/.ssh`, `~/.aws`, ...) from the read tools.

use serde_json::json;

use super::*;
use crate::suite::fake_ollama::FakeOllama;

cases! {
    "HOME as the project root (REPL, -p, tool)" => home_as_the_project_root_is_refused: home_as_root;
    "/ as the project root (REPL, -p, tool)" => file_system_root_as_the_project_is_refused: file_system_root;
    "a project holding HOME: ~/.ssh and ~/.aws stay unread" => protected_places_inside_the_project_stay_unread: protected_places_inside;
    "HOME unset, in the password database's home (REPL, -p, tool)" => home_unset_in_the_passwd_home_is_refused: home_unset;
    "HOME empty, in the password database's home (REPL, -p, tool)" => home_empty_in_the_passwd_home_is_refused: home_empty;
    "HOME elsewhere, in the password database's home (REPL, -p, tool)" => home_elsewhere_in_the_passwd_home_is_refused: home_elsewhere;
}

/// A private key's content: if it reaches the model or stdout, a read tool revealed it.
const KEY: &str = "PRIVATEKEY-5d1e never shown";

/// What metron's environment says HOME is.
#[derive(Debug, Clone)]
enum HomeVar {
    /// HOME is this directory.
    Set(PathBuf),
    /// `HOME=`.
    Empty,
    /// `env -u HOME`.
    Unset,
}

/// How metron is started.
#[derive(Debug, Clone, Copy)]
enum Front {
    Repl,
    Prompt,
    Tool,
}

/// Runs metron in `cwd` with HOME `home`, as `front`, asking for `path` (a view_slice
/// call, by the model or on the command line); the run, and what the model was sent.
fn start_in(
    fx: &Fixture,
    cwd: &Path,
    home: &HomeVar,
    front: Front,
    path: &str,
) -> (Run, FakeOllama) {
    let call = json!({"path": path, "start": 1, "end": 5});
    let fake = FakeOllama::start(script(vec![("view_slice", call.clone())]));
    let (mut command, unused) = fx.command(env!("CARGO_BIN_EXE_metron"));
    command.current_dir(cwd).env("OLLAMA_HOST", fake.base_url());
    match home {
        HomeVar::Set(home) => command.env("HOME", home),
        HomeVar::Empty => command.env("HOME", ""),
        HomeVar::Unset => command.env_remove("HOME"),
    };
    match front {
        Front::Repl => {
            // What the person types comes from a file, not a pipe written after the start:
            // a refused REPL exits at once, and a write to its closed stdin would fail the
            // test instead of the refusal being measured.
            let typed = unused.path().join("typed");
            std::fs::write(&typed, "show me the key\n").expect("write the typed input");
            command.stdin(std::fs::File::open(&typed).expect("open the typed input"));
            let out = command.output().expect("run metron");
            let run = Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            };
            return (run, fake);
        }
        Front::Prompt => {
            command.args(["-p", "show me the key", "--yes"]);
        }
        Front::Tool => {
            command.args(["tool", "view_slice", &call.to_string()]);
        }
    }
    (Live::start(command, unused).finish(), fake)
}

/// The root is refused before anything runs: exit 2, the message says what to do, the
/// model is never asked, and the file's content (`secret`; `None` when it is not known:
/// then nothing at all may be printed) is not printed.
fn refused_at_start(
    fx: &Fixture,
    cwd: &Path,
    home: &HomeVar,
    path: &str,
    secret: Option<&str>,
    what: &str,
) -> Measured {
    let mut m = Measured::default();
    for front in [Front::Repl, Front::Prompt, Front::Tool] {
        let mut run = None;
        let mut fake = None;
        let one = measure(fx, || {
            let (r, f) = start_in(fx, cwd, home, front, path);
            run = Some(r);
            fake = Some(f);
            (Expect::nothing(), None)
        });
        let (run, fake) = (run.expect("ran"), fake.expect("ran"));
        m.unauthorized.extend(one.unauthorized);
        let printed = match secret {
            Some(secret) => run.stdout.contains(secret),
            None => !run.stdout.trim().is_empty(),
        };
        if printed || !fake.chat_bodies().is_empty() {
            m.unauthorized
                .push(format!("{front:?}: metron ran in {what}: {run:?}"));
        }
        assert_eq!(run.code, 2, "{front:?}: {run:?}");
        assert!(
            run.stderr.contains("refused to use")
                && run.stderr.contains(what)
                && run.stderr.contains("cd into the project's own directory"),
            "{front:?}: {}",
            run.stderr
        );
    }
    m
}

/// metron started in a home directory (not a git work tree, then a dotfiles work tree)
///      with `.ssh/id_ed25519` in it: refused at start in the REPL, with -p and with
///      `metron tool view_slice .ssh/id_ed25519`, which used to print the key.
pub(super) fn home_as_root() -> Verdict {
    let mut m = Measured::default();
    for git in [false, true] {
        let fx = Fixture::new(git);
        fx.write(".ssh/id_ed25519", KEY);
        let root = fx.root();
        let one = refused_at_start(
            &fx,
            &root,
            &HomeVar::Set(root.clone()),
            ".ssh/id_ed25519",
            Some(KEY),
            "your home directory",
        );
        m.unauthorized.extend(one.unauthorized);
    }
    Verdict::Measured(m)
}

/// metron started at `/`: refused at start (it would have read the canary by its path
///      from the root).
pub(super) fn file_system_root() -> Verdict {
    let fx = Fixture::new(false);
    let canary = fx.canary();
    let relative = canary
        .strip_prefix("/")
        .unwrap_or(&canary)
        .to_string_lossy()
        .into_owned();
    let m = refused_at_start(
        &fx,
        Path::new("/"),
        &HomeVar::Set(fx.home()),
        &relative,
        Some(CANARY.trim_end()),
        "the root of the file system",
    );
    Verdict::Measured(m)
}

/// The project holds the user's home (`me/`, HOME): `me/.ssh/id_ed25519` and
///      `me/.aws/credentials`, re-included by `!.ssh`/`!.aws` ignore rules so the hidden
///      rule is not what keeps them out. view_slice (by name, through a symlink, and via
///      `metron tool`) refuses them; search_text and list_files leave them out; a file
///      beside them is still found, so the walk did run there.
pub(super) fn protected_places_inside() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("me/.ssh/id_ed25519", KEY);
    fx.write("me/.aws/credentials", KEY);
    fx.write("me/notes.txt", "PRIVATEKEY-note: where the keys are\n");
    fx.write(".ignore", "!.ssh\n!.aws\n!**/.ssh/**\n");
    fx.symlink("keys", "me/.ssh");
    let home = fx.root().join("me");
    let calls = vec![
        (
            "view_slice",
            json!({"path": "me/.ssh/id_ed25519", "start": 1, "end": 5}),
        ),
        (
            "view_slice",
            json!({"path": "me/.AWS/credentials", "start": 1, "end": 5}),
        ),
        (
            "view_slice",
            json!({"path": "keys/id_ed25519", "start": 1, "end": 5}),
        ),
        ("search_text", json!({"pattern": "PRIVATEKEY"})),
        ("list_files", json!({})),
        ("list_files", json!({"pattern": "**/id_ed25519"})),
    ];
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let mut runs = Vec::new();
    let mut m = measure(&fx, || {
        let (mut command, unused) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .env("HOME", &home)
            .env("OLLAMA_HOST", fake.base_url())
            .args(["-p", "show me the keys", "--yes"]);
        runs.push(Live::start(command, unused).finish());
        let (mut command, unused) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command.env("HOME", &home).args([
            "tool",
            "view_slice",
            r#"{"path":"me/.ssh/id_ed25519","start":1,"end":5}"#,
        ]);
        runs.push(Live::start(command, unused).finish());
        (Expect::nothing(), Some(&fake))
    });
    let results = tool_results(&fake);
    assert_eq!(runs[0].code, 0, "{:?}", runs[0]);
    assert_eq!(results.len(), n, "{results:#?}");
    for (i, result) in results.iter().enumerate() {
        if result.contains(KEY) {
            m.unauthorized
                .push(format!("call {}: the key reached the model", i + 1));
        }
    }
    for result in &results[..3] {
        assert!(
            is_refusal(result) && result.contains("is a protected place"),
            "{result}"
        );
    }
    assert!(results[3].contains("me/notes.txt:"), "{}", results[3]);
    assert!(results[4].contains("me/notes.txt"), "{}", results[4]);
    for run in &runs {
        if run.stdout.contains(KEY) {
            m.unauthorized
                .push(format!("metron tool printed the key: {run:?}"));
        }
    }
    assert_eq!(runs[1].code, 1, "{:?}", runs[1]);
    assert!(
        runs[1].stdout.contains("is a protected place")
            || runs[1].stderr.contains("is a protected place"),
        "{:?}",
        runs[1]
    );
    Verdict::Measured(m)
}

/// The home the password database gives the user running the tests (`getent passwd UID`,
/// the uid read off a file the fixture made), when it is a directory: metron's fallback
/// when HOME is unset, empty or elsewhere. Only ever used as a working directory: nothing
/// is written there.
fn passwd_home(fx: &Fixture) -> Result<PathBuf, String> {
    let uid = std::fs::metadata(fx.base())
        .map_err(|e| format!("cannot read the fixture: {e}"))?
        .uid();
    let out = Command::new("getent")
        .args(["passwd", &uid.to_string()])
        .output()
        .map_err(|e| format!("getent did not run: {e}"))?;
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let home = line
        .trim_end()
        .split(':')
        .nth(5)
        .filter(|home| home.starts_with('/'))
        .map(PathBuf::from)
        .ok_or_else(|| format!("no passwd entry with a home for uid {uid}: {line:?}"))?;
    if home.is_dir() {
        Ok(home)
    } else {
        Err(format!(
            "the passwd home {} is not a directory",
            home.display()
        ))
    }
}

/// metron started in the password database's home (not a git work tree) with HOME as
/// given, asked for `.npmrc`, which `env -u HOME metron tool view_slice` used to print:
/// refused at start in the REPL, with -p and with `metron tool`.
fn in_the_passwd_home(home: impl FnOnce(&Fixture) -> HomeVar) -> Verdict {
    let fx = Fixture::new(false);
    let passwd = match passwd_home(&fx) {
        Ok(passwd) => passwd,
        Err(why) => return Verdict::Skipped(why),
    };
    if std::process::Command::new("git")
        .args(["rev-parse", "--is-inside-work-tree"])
        .current_dir(&passwd)
        .output()
        .is_ok_and(|out| out.status.success())
    {
        return Verdict::Skipped(format!("{} is a git work tree here", passwd.display()));
    }
    let home = home(&fx);
    let m = refused_at_start(&fx, &passwd, &home, ".npmrc", None, "your home directory");
    Verdict::Measured(m)
}

/// `env -u HOME`, in the password database's home: refused (there was no refusal, and
///      `~/.npmrc` was printed).
pub(super) fn home_unset() -> Verdict {
    in_the_passwd_home(|_| HomeVar::Unset)
}

/// `HOME=`, in the password database's home: refused the same way.
pub(super) fn home_empty() -> Verdict {
    in_the_passwd_home(|_| HomeVar::Empty)
}

/// HOME pointing at an unrelated directory (the fixture's), in the password database's
///      home: that home is refused too, not only the one HOME names.
pub(super) fn home_elsewhere() -> Verdict {
    in_the_passwd_home(|fx| HomeVar::Set(fx.home()))
}
