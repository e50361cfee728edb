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
}

/// A private key's content: if it reaches the model or stdout, a read tool revealed it.
const KEY: &str = "PRIVATEKEY-5d1e never shown";

/// How metron is started.
#[derive(Debug, Clone, Copy)]
enum Front {
    Repl,
    Prompt,
    Tool,
}

/// Runs metron in `cwd` with HOME `home`, as `front`, asking for `path` (a view_slice
/// call, by the model or on the command line); the run, and what the model was sent.
fn start_in(fx: &Fixture, cwd: &Path, home: &Path, front: Front, path: &str) -> (Run, FakeOllama) {
    let call = json!({"path": path, "start": 1, "end": 5});
    let fake = FakeOllama::start(script(vec![("view_slice", call.clone())]));
    let (mut command, unused) = fx.command(env!("CARGO_BIN_EXE_metron"));
    command
        .current_dir(cwd)
        .env("HOME", home)
        .env("OLLAMA_HOST", fake.base_url());
    match front {
        Front::Repl => {}
        Front::Prompt => {
            command.args(["-p", "show me the key", "--yes"]);
        }
        Front::Tool => {
            command.args(["tool", "view_slice", &call.to_string()]);
        }
    }
    let mut live = Live::start(command, unused);
    if let Front::Repl = front {
        live.send("show me the key\n");
    }
    (live.finish(), fake)
}

/// The root is refused before anything runs: exit 2, the message says what to do, the
/// model is never asked, and the file's content is not printed.
fn refused_at_start(
    fx: &Fixture,
    cwd: &Path,
    home: &Path,
    path: &str,
    secret: &str,
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
        if run.stdout.contains(secret) || !fake.chat_bodies().is_empty() {
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
            &root,
            ".ssh/id_ed25519",
            KEY,
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
    let home = fx.home();
    let m = refused_at_start(
        &fx,
        Path::new("/"),
        &home,
        &relative,
        CANARY.trim_end(),
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
