//! Cases on hostile inputs (issue 12): each finding of an adversarial review, with the
//! variants of its class. Besides the filesystem, these cases measure two more channels an
//! attacker aims at: the person's terminal (a raw control sequence from text the person
//! did not type is an unauthorized effect: it can forge what the screen shows) and the
//! network (a request that reaches a host other than the configured endpoint is one too).

use std::process::Command;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::suite::common::{Live, greet_patch, script_available};
use crate::suite::fake_ollama::{Chunk, FakeOllama, Reply, answer, call, done, text, tool_calls};

/// The mark metron puts before its own questions (model text showing it is escaped).
const QUESTION_MARK: char = '\u{276f}';

/// Text carrying the control sequences a hostile model or repository sends: an OSC window
/// title, C1 CSI and OSC (U+009B, U+009D, U+009C), an ESC CSI erase-display and
/// cursor-up, and the Arabic letter mark (U+061C). The readable word `EVIL` shows that
/// the text did reach the screen, escaped.
const HOSTILE: &str =
    "EVIL\u{1b}]0;EVIL\u{7}\u{9b}2J\u{9d}0;EVIL\u{9c}\u{1b}[2J\u{1b}[7F\u{61c}EVIL";

/// The raw forms of [`HOSTILE`]'s sequences; none may reach the terminal. (metron's own
/// line editor sends other sequences: bracketed paste, synchronized output, erase line.)
const RAW_CONTROLS: [(&str, &str); 6] = [
    ("\u{1b}]0;", "an OSC window-title sequence"),
    ("\u{9b}", "a C1 CSI (U+009B)"),
    ("\u{9d}", "a C1 OSC (U+009D)"),
    ("\u{1b}[2J", "an erase-display sequence"),
    ("\u{1b}[7F", "a cursor-up sequence"),
    ("\u{61c}", "the Arabic letter mark (U+061C)"),
];

impl Measured {
    /// Counts every raw control sequence of [`HOSTILE`] that reached what the person saw.
    fn terminal(&mut self, channel: &str, shown: &str) {
        for (raw, what) in RAW_CONTROLS {
            let n = shown.matches(raw).count();
            if n > 0 {
                self.unauthorized.push(format!(
                    "{channel}: {what} reached the terminal {n} time(s)"
                ));
            }
        }
    }

    /// Counts every request that reached `elsewhere`, a server that is not the endpoint.
    fn left_for(&mut self, elsewhere: &FakeOllama) {
        for request in elsewhere.requests() {
            self.unauthorized.push(format!(
                "a request reached a host that is not the endpoint: {} {}",
                request.method, request.path
            ));
        }
    }
}

/// Answers the open question on the terminal with no (and no reason), waits for the
/// model's closing "Finished." and the next prompt, then quits with `/exit`.
fn decline_and_exit(mut live: Live) -> Run {
    live.send("n\r");
    live.wait_stdout("Why not?", 1);
    live.send("\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    live.send("/exit\r");
    live.finish()
}

impl Fixture {
    /// `metron ARGS` in the project against `fake`, stdin closed, failing (not hanging)
    /// when it does not exit within the suite's patience.
    fn bounded(&self, fake: &FakeOllama, args: &[&str]) -> Run {
        let (mut command, home) = self.command(env!("CARGO_BIN_EXE_metron"));
        command.args(args).env("OLLAMA_HOST", fake.base_url());
        Live::start(command, home).finish()
    }
}

// ---------------------------------------------------------------------------------------
// Finding 1: keys typed ahead answer a later question
// ---------------------------------------------------------------------------------------

/// The model prints an imitation of metron's question, then keeps generating its real
/// call; the person answers the imitation with `y`. The real question discards that
/// typed-ahead answer; the person then says no.
fn typed_ahead_at_a_forged_question(forged: &str, real: &str, call: (&str, Value)) -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["touch"]}"#);
    let imitation = format!("I will do it now.\n{QUESTION_MARK} {forged}");
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text(&imitation),
            Chunk::Pause(Duration::from_millis(1500)),
            tool_calls(&[call]),
            done(100, 20),
        ]),
        answer("Finished.", 150, 9),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("do it\r");
        live.wait_stdout(forged, 1);
        live.send("y\r");
        live.wait_stdout(real, 2);
        // Long enough for a typed-ahead `y` to have answered, had it survived.
        std::thread::sleep(Duration::from_millis(600));
        run = Some(decline_and_exit(live));
        (Expect::nothing().typed(&["do it", "/exit"]), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:#?}");
    assert!(is_refusal(&results[0]), "{}", results[0]);
    Verdict::Measured(m)
}

/// 13a. ... at a forged patch question.
pub(super) fn typed_ahead_at_a_forged_patch_question() -> Verdict {
    typed_ahead_at_a_forged_question(
        "Apply this patch? [y/N/a] ",
        "Apply this patch? [y/N/a] ",
        ("apply_patch", json!({"diff": greet_patch()})),
    )
}

/// 13b. ... at a forged command question.
pub(super) fn typed_ahead_at_a_forged_command_question() -> Verdict {
    typed_ahead_at_a_forged_question(
        "Run this command? [y/N] ",
        "Run this command? [y/N",
        ("run_command", json!({"command": "touch pwned"})),
    )
}

// ---------------------------------------------------------------------------------------
// Finding 2: ignore rules that reopen `.git` to the walking tools
// ---------------------------------------------------------------------------------------

/// A definition that only exists inside git's internals.
const IN_GIT: &str = "EvilInGit";

/// Git internals with the credential and a Go file the symbol index would pick up: in
/// `.git/`, in a submodule's git dir (`.git/modules/sub`, named by `sub/.git`, a file) and
/// in a nested repository's `.git/`.
fn git_internals(fx: &Fixture) {
    let go = format!("package x\n\n// {GIT_SECRET}\nfunc {IN_GIT}() {{}}\n");
    fx.write(".git/hooks/evil.go", &go);
    fx.write(
        ".git/modules/sub/config",
        format!("[remote \"origin\"]\n\turl = https://me:{GIT_SECRET}@example.invalid/s.git\n"),
    );
    fx.write(".git/modules/sub/evil.go", &go);
    fx.write(
        "sub/.git",
        format!("gitdir: ../.git/modules/sub\n# {GIT_SECRET}\n"),
    );
    fx.write("sub/lib.go", "package sub\n\nfunc Lib() {}\n");
    fx.write("nested/.git/config", format!("# {GIT_SECRET}\n"));
    fx.write("nested/.git/evil.go", &go);
}

/// `rules` written to the ignore file `file`, then every walking tool asked for what is
/// in `.git`: the credential never reaches the model, no `.git` path is listed, and the
/// definition inside `.git` is not found.
fn ignore_rules_reopen_git(file: &str, rules: &str) -> Verdict {
    let fx = Fixture::new(true);
    git_internals(&fx);
    fx.write(file, rules);
    let calls = vec![
        ("search_text", json!({"pattern": "GITSECRET"})),
        ("list_files", json!({})),
        ("list_files", json!({"pattern": ".git/**"})),
        ("list_files", json!({"pattern": "**/.git*"})),
        ("find_symbol", json!({"symbol": IN_GIT})),
    ];
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "what is in .git?", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 5, "{results:#?}");
    for (i, result) in results.iter().enumerate() {
        let names_git = result.lines().any(|line| {
            line.split(['/', ':', ' '])
                .any(|part| part.eq_ignore_ascii_case(".git"))
        });
        if names_git && !is_refusal(result) {
            m.unauthorized
                .push(format!("call {}: a walking tool showed a .git path", i + 1));
        }
    }
    if !results[4].starts_with("No definition") {
        m.unauthorized
            .push("find_symbol found a definition inside .git".to_owned());
    }
    // The walk still sees the project (a case cannot pass by finding nothing).
    assert!(results[1].contains("sub/lib.go"), "{}", results[1]);
    Verdict::Measured(m)
}

/// 14a. `!.git` in `.ignore`.
pub(super) fn ignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".ignore", "!.git\n!.git/**\n")
}

/// 14b. `!.git/` in `.gitignore`.
pub(super) fn gitignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".gitignore", "!.git/\n!/.git/*\n")
}

/// 14c. `!.git` in `.rgignore`.
pub(super) fn rgignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".rgignore", "!.git\n")
}

/// 14d. `!.*` (every hidden name) in `.ignore`.
pub(super) fn every_hidden_name_reopened() -> Verdict {
    ignore_rules_reopen_git(".ignore", "!.*\n!**/.*\n")
}

/// 14e. The rules in a nested directory's ignore file, aimed at the submodule's and the
///      nested repository's git dirs.
pub(super) fn nested_ignore_reopens_git_dirs() -> Verdict {
    ignore_rules_reopen_git("nested/.ignore", "!.git\n!.git/**\n")
}

// ---------------------------------------------------------------------------------------
// Findings 5 and 7: control sequences from text the person did not type
// ---------------------------------------------------------------------------------------

/// 15a. A patch whose added line carries control sequences, shown at the approval
///      question on a terminal (and declined).
pub(super) fn escapes_in_the_approval_diff() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let diff = format!(
        "--- a/greet.go\n+++ b/greet.go\n@@ -1,3 +1,4 @@\n package greet\n+// {HOSTILE}\n \n // Greet says hello.\n"
    );
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("add a comment\r");
        live.wait_stdout("Apply this patch? [y/N/a] ", 1);
        shown = decline_and_exit(live).stdout;
        (
            Expect::nothing().typed(&["add a comment", "/exit"]),
            Some(&fake),
        )
    });
    let mut m = m;
    m.terminal("the approval diff", &shown);
    assert!(shown.matches("EVIL").count() >= 2, "{shown}");
    Verdict::Measured(m)
}

/// 15b. Control sequences in the model's reply, in a tool's arguments (shown on its
///      outcome line) and then in `/ledger`, which must not let them rewrite the audit
///      trail it shows.
pub(super) fn escapes_in_replies_outcomes_and_the_ledger() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text(&format!("Looking. {HOSTILE}\n")),
            tool_calls(&[
                ("search_text", json!({ "pattern": HOSTILE })),
                ("view_slice", json!({"path": HOSTILE, "start": 1, "end": 2})),
            ]),
            done(100, 20),
        ]),
        answer(&format!("Nothing found. {HOSTILE}"), 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("look\r");
        live.wait_stdout("Nothing found.", 1);
        live.wait_stdout_after("Nothing found.", "metron > ");
        live.send("/ledger\r");
        live.wait_stdout_after("/ledger", "metron > ");
        live.send("/exit\r");
        shown = live.finish().stdout;
        (
            Expect::nothing().typed(&["look", "/ledger", "/exit"]),
            Some(&fake),
        )
    });
    let mut m = m;
    m.terminal("replies, outcome lines and /ledger", &shown);
    let ledger = shown.rsplit("/ledger").next().unwrap_or_default();
    assert!(
        ledger.contains("EVIL"),
        "the ledger shows the calls: {shown}"
    );
    Verdict::Measured(m)
}

/// 15c. A repository's `.metron.json` names a model with control sequences: the banner,
///      `--doctor` and the stderr of `-p` show it escaped.
pub(super) fn escapes_from_an_untrusted_config() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".metron.json", json!({ "model": HOSTILE }).to_string());
    let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
    let mut shown = Vec::new();
    let m = measure(&fx, || {
        for args in [&["--doctor"][..], &["-p", "hi"][..]] {
            let run = fx.bounded(&fake, args);
            shown.push(format!("{}{}", run.stdout, run.stderr));
        }
        let mut repl = fx.repl(&fake, &[]);
        repl.send("/config\n/exit\n");
        let run = repl.finish();
        shown.push(format!("{}{}", run.stdout, run.stderr));
        (Expect::nothing(), Some(&fake))
    });
    let mut m = m;
    for (channel, text) in ["--doctor", "-p", "the banner and /config"]
        .iter()
        .zip(&shown)
    {
        m.terminal(channel, text);
    }
    // -p names the model only when something goes wrong; the others always do.
    for (channel, text) in [("--doctor", &shown[0]), ("the banner", &shown[2])] {
        assert!(text.contains("EVIL"), "{channel} names the model: {text}");
    }
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Finding 6: a reply that quotes JSON is not a call
// ---------------------------------------------------------------------------------------

/// A call's JSON as a model would write it.
fn call_json() -> String {
    json!({"name": "apply_patch", "arguments": {"diff": greet_patch()}}).to_string()
}

/// 16a. The model reads `example.json`, which holds a call's JSON, and answers with the
///      file's content, as "show me example.json" asks. It is a quote, not a call.
pub(super) fn a_reply_that_quotes_a_json_file() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("example.json", format!("{}\n", call_json()));
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "example.json", "start": 1, "end": 1}),
            100,
            10,
        ),
        answer(&call_json(), 200, 30),
        answer("Should never be asked.", 300, 3),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "show me example.json", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        fake.chat_bodies().len(),
        2,
        "the quote ran as a call: {run:?}"
    );
    Verdict::Measured(m)
}

/// 16b. A call's JSON inside a code fence, in a reply that explains it: an example for
///      the person, never a call.
pub(super) fn a_fenced_json_call_in_a_reply() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        answer(&format!("```json\n{}\n```", call_json()), 200, 30),
        answer("Should never be asked.", 300, 3),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "what would a call look like?", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        fake.chat_bodies().len(),
        1,
        "the fence ran as a call: {run:?}"
    );
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Finding 8: redirects
// ---------------------------------------------------------------------------------------

/// The endpoint answers the chat with a redirect to another server: metron does not follow
/// it (which would re-send the chat body, the code the tools read), and says where it
/// pointed.
fn redirected(status: u16, user_config: Option<&str>) -> Verdict {
    let fx = Fixture::new(true);
    if let Some(config) = user_config {
        fx.user_config(config);
    }
    let elsewhere = FakeOllama::start(vec![answer("Followed the redirect.", 10, 2)]);
    let fake = FakeOllama::start(vec![Reply::Redirect(status, elsewhere.chat_url())]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&elsewhere.chat_url()), "{run:?}");
    let mut m = m;
    m.left_for(&elsewhere);
    Verdict::Measured(m)
}

/// 17a. A 307 while `remote_endpoint` is "refuse".
pub(super) fn redirect_307_with_remote_refused() -> Verdict {
    redirected(307, Some(r#"{"remote_endpoint": "refuse"}"#))
}

/// 17b. A 308 with the default settings.
pub(super) fn redirect_308_by_default() -> Verdict {
    redirected(308, None)
}

// ---------------------------------------------------------------------------------------
// Finding 9: config and ignore files that are symlinks, devices or huge
// ---------------------------------------------------------------------------------------

/// 18a. `.metron.json` is a symlink to `/dev/zero` (endless) or to the canary outside the
///      project: metron neither hangs nor reads past the tree, and says what to fix.
pub(super) fn config_file_symlinked_out_of_the_tree() -> Verdict {
    let mut notes = Vec::new();
    let mut all = Measured::default();
    for target in [
        PathBuf::from("/dev/zero"),
        PathBuf::from("../outside/canary.txt"),
    ] {
        let fx = Fixture::new(true);
        fx.symlink(".metron.json", &target);
        let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
        let mut run = None;
        let m = measure(&fx, || {
            run = Some(fx.bounded(&fake, &["-p", "hi"]));
            (Expect::nothing(), Some(&fake))
        });
        let run = run.expect("ran");
        assert!(run.stderr.contains(".metron.json"), "{run:?}");
        if run.stderr.contains(CANARY.trim_end()) || run.stdout.contains(CANARY.trim_end()) {
            all.unauthorized
                .push("the canary's content was printed".to_owned());
        }
        notes.push(format!("-> {}: exit {}", target.display(), run.code));
        all.unauthorized.extend(m.unauthorized);
        all.lost.extend(m.lost);
    }
    all.notes = notes;
    Verdict::Measured(all)
}

/// 18b. Ignore files that are `/dev/zero`, or lead outside the tree (whose content would
///      hide files: an oracle for what the outside file lists): every walking tool
///      answers or refuses promptly, and no answer depends on the outside file.
pub(super) fn ignore_files_symlinked_out_of_the_tree() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("probe/probe.go", "package probe\n\nfunc Probe() {}\n");
    std::fs::write(fx.outside().join("list"), "*\n").expect("write the outside list");
    fx.symlink(".gitignore", "/dev/zero");
    std::os::unix::fs::symlink("../../outside/list", fx.root().join("probe/.ignore"))
        .expect("symlink");
    let fake = FakeOllama::start(script(vec![
        ("list_files", json!({})),
        ("search_text", json!({"pattern": "Probe"})),
        ("find_symbol", json!({"symbol": "Probe"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.bounded(&fake, &["-p", "list everything", "--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    // The root's ignore file cannot be skipped: every walking tool refuses, naming it.
    for result in &results {
        assert!(
            is_refusal(result) || result.contains(".gitignore"),
            "{result}"
        );
    }
    Verdict::Measured(m)
}

/// 18c. The same outside list reached from a subdirectory's `.gitignore`: that directory
///      is skipped with a note whatever the list says, so its answer is no oracle.
pub(super) fn nested_ignore_file_as_an_oracle() -> Verdict {
    let mut m = Measured::default();
    let mut answers = Vec::new();
    for list in ["*\n", "nothing-matches-this\n"] {
        let fx = Fixture::new(true);
        fx.write("probe/secret_name.go", "package probe\n\nfunc Probe() {}\n");
        std::fs::write(fx.outside().join("list"), list).expect("write the outside list");
        std::os::unix::fs::symlink("../../outside/list", fx.root().join("probe/.gitignore"))
            .expect("symlink");
        let fake = FakeOllama::start(script(vec![
            ("list_files", json!({})),
            ("search_text", json!({"pattern": "Probe"})),
        ]));
        let one = measure(&fx, || {
            fx.bounded(&fake, &["-p", "list everything", "--yes"]);
            (Expect::nothing(), Some(&fake))
        });
        m.unauthorized.extend(one.unauthorized);
        answers.push(tool_results(&fake));
    }
    if answers[0] != answers[1] {
        m.unauthorized.push(format!(
            "the answers depend on a file outside the project: {answers:#?}"
        ));
    }
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Finding 10: protected state inside the writable tree
// ---------------------------------------------------------------------------------------

/// 19a. `git init --separate-git-dir=meta`: the real git directory is `meta/`, inside
///      the tree. Patches into it (hooks, config, any letter case) and reads of its
///      credential are refused like `.git/`'s.
pub(super) fn separate_git_dir_inside_the_project() -> Verdict {
    let fx = Fixture::new(false);
    let made = Command::new("git")
        .args(["init", "-q", "--separate-git-dir=meta"])
        .current_dir(fx.root())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        return Verdict::Skipped("git is not installed".to_owned());
    }
    let config = fx.root().join("meta/config");
    let mut text = std::fs::read_to_string(&config).expect("meta/config");
    text.push_str(&format!(
        "[remote \"origin\"]\n\turl = https://me:{GIT_SECRET}@example.invalid/g.git\n"
    ));
    std::fs::write(&config, text).expect("write meta/config");
    let first = "[core]";
    let mut calls = vec![
        (
            "view_slice",
            json!({"path": "meta/config", "start": 1, "end": 50}),
        ),
        ("search_text", json!({"pattern": "GITSECRET"})),
        (
            "apply_patch",
            json!({"diff": create_patch("meta/hooks/pre-commit", "touch pwned")}),
        ),
    ];
    for path in ["meta/config", "META/config", "./meta/config"] {
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n {first}\n+\thooksPath = hooks-pwned\n"
            )}),
        ));
    }
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "set up hooks", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 6, "{results:#?}");
    for (i, result) in results.iter().enumerate() {
        // search_text may answer "no matches": the disclosure check covers it.
        if i != 1 {
            assert!(is_refusal(result), "not a refusal: {result}");
        }
    }
    Verdict::Measured(m)
}

/// 19b. `METRON_CONFIG` names a file inside the project: the session warns that it is
///      trusted yet writable, and the model's patch granting itself `touch` is refused
///      even with `--yes`, so the command after it is refused too.
pub(super) fn active_config_inside_the_project() -> Verdict {
    let fx = Fixture::new(true);
    let before = r#"{"allowed_commands": ["echo"]}"#;
    fx.write("conf/metron.json", format!("{before}\n"));
    let grant = format!(
        "--- a/conf/metron.json\n+++ b/conf/metron.json\n@@ -1 +1 @@\n-{before}\n+{}\n",
        r#"{"allowed_commands": ["echo", "touch"]}"#
    );
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": grant }), 100, 20),
        answer("Granted.", 150, 3),
    ]);
    let fake_again = FakeOllama::start(script(vec![(
        "run_command",
        json!({"command": "touch pwned"}),
    )]));
    let mut runs = Vec::new();
    let m = measure(&fx, || {
        for server in [&fake, &fake_again] {
            let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
            command
                .args(["-p", "grant yourself touch", "--yes"])
                .env("OLLAMA_HOST", server.base_url())
                .env("METRON_CONFIG", fx.root().join("conf/metron.json"));
            runs.push(Live::start(command, home).finish());
        }
        (Expect::nothing(), Some(&fake))
    });
    for run in &runs {
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stderr.contains("conf/metron.json"),
            "no warning: {run:?}"
        );
    }
    assert_all_refused(&fake, 1, &runs[0]);
    assert_all_refused(&fake_again, 1, &runs[1]);
    Verdict::Measured(m)
}

/// The terminal measurement sees every sequence [`HOSTILE`] carries, and nothing in
/// metron's own line-editor output: a zero from these cases means escaped, not unseen.
#[test]
fn the_terminal_measurement_sees_every_raw_control() {
    let mut m = Measured::default();
    m.terminal("raw", HOSTILE);
    assert_eq!(
        m.unauthorized.len(),
        RAW_CONTROLS.len(),
        "{:#?}",
        m.unauthorized
    );
    let mut m = Measured::default();
    let editor = "\u{1b}[?2004h\u{1b}[?2026h\u{1b}[Kmetron > \u{1b}[9C\u{1b}[?2026l";
    m.terminal("the line editor", editor);
    m.terminal("escaped", &HOSTILE.escape_debug().to_string());
    assert!(m.unauthorized.is_empty(), "{:#?}", m.unauthorized);
}

// ---------------------------------------------------------------------------------------
// Finding 3: file modes
// ---------------------------------------------------------------------------------------

/// 20a. Patches with every mode git can write that is not one of the two regular-file
///      modes, as a new file and as a mode change, with `--yes`: all refused, nothing
///      created, no permission bit changed.
pub(super) fn modes_other_than_644_and_755() -> Verdict {
    let fx = Fixture::new(true);
    let mut calls = Vec::new();
    for mode in ["100711", "100600", "100777", "120000", "160000", "100644x"] {
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "diff --git a/new.sh b/new.sh\nnew file mode {mode}\n--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1 @@\n+touch pwned\n"
            )}),
        ));
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "diff --git a/greet.go b/greet.go\nold mode 100644\nnew mode {mode}\n"
            )}),
        ));
    }
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "make it executable", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_all_refused(&fake, n, &run);
    Verdict::Measured(m)
}

/// 20b. A mode-only patch making greet.go executable, on a terminal: the question says
///      so before the person answers (no).
pub(super) fn a_mode_change_is_shown_at_the_question() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let diff = "diff --git a/greet.go b/greet.go\nold mode 100644\nnew mode 100755\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("make it executable\r");
        live.wait_stdout("Apply this patch? [y/N/a] ", 1);
        shown = live.stdout();
        decline_and_exit(live);
        (
            Expect::nothing().typed(&["make it executable", "/exit"]),
            Some(&fake),
        )
    });
    assert!(
        shown.contains("mode 100644 -> 100755 (becomes executable)"),
        "the question hides the mode change:\n{shown}"
    );
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Finding 4 and the run_command decisions
// ---------------------------------------------------------------------------------------

/// A stand-in for an allowed program, outside the project, first on PATH: it would leave
/// `ran-<name>` in the outside directory if it ever ran.
fn fake_program(fx: &Fixture, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = fx.outside().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir outside/bin");
    let program = bin.join(name);
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\ntouch \"{}/ran-{name}\"\n",
            fx.outside().display()
        ),
    )
    .expect("write the fake program");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// 21a. An allowed `cargo` whose toolchain the repository points at a directory inside
///      the project: the question on a terminal warns before the person answers (no).
pub(super) fn a_repository_configured_cargo_at_the_question() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["cargo"]}"#);
    let path = fake_program(&fx, "cargo");
    fx.write(
        "rust-toolchain.toml",
        format!("[toolchain]\npath = \"{}/tools\"\n", fx.root().display()),
    );
    fx.write("tools/bin/cargo", "#!/bin/sh\ntouch pwned\n");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "cargo build"}), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let (mut command, home) = fx.command("script");
        metron_in_script(&mut command, &[]);
        command
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        let mut live = Live::start(command, home);
        live.wait_stdout("metron > ", 1);
        live.send("build it\r");
        live.wait_stdout("Run this command? [y/N", 1);
        shown = live.stdout();
        decline_and_exit(live);
        (Expect::nothing().typed(&["build it", "/exit"]), Some(&fake))
    });
    assert!(
        shown.contains("this repository configures cargo: rust-toolchain.toml line 2 sets `path`"),
        "no warning at the question:\n{shown}"
    );
    Verdict::Measured(m)
}

/// 21b. `make` with a Makefile that sets `SHELL`, and `npm` with an `.npmrc` that sets
///      `script-shell`, in `-p` without `--yes` (nobody to ask): refused, and the
///      warning reaches stderr.
pub(super) fn repository_configured_make_and_npm() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["make", "npm"]}"#);
    let path = fake_program(&fx, "make");
    fake_program(&fx, "npm");
    fx.write("Makefile", "SHELL := ./tools/sh\nall:\n\t@true\n");
    fx.write(".npmrc", "script-shell=./tools/sh\n");
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "make all"})),
        ("run_command", json!({"command": "npm test"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "build and test"])
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        run = Some(Live::start(command, home).finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_all_refused(&fake, 2, &run);
    for warned in ["configures make: Makefile", "configures npm: .npmrc"] {
        assert!(
            run.stderr.contains(warned),
            "no {warned:?} warning: {run:?}"
        );
    }
    Verdict::Measured(m)
}

/// 21c. A project's `.metron.json` grants itself a program inside the project
///      (`allowed_project_programs`, which only the user's own config may set), with
///      `--yes`: refused, the program never runs.
pub(super) fn project_config_grants_a_project_program() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["echo"]}"#);
    fx.write(
        ".metron.json",
        r#"{"allowed_project_programs": ["./run.sh", ".venv/bin/pytest"]}"#,
    );
    fx.write("run.sh", "#!/bin/sh\ntouch pwned\n");
    fx.write(".venv/bin/pytest", "#!/bin/sh\ntouch pwned\n");
    for program in ["run.sh", ".venv/bin/pytest"] {
        let file = fx.root().join(program);
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "./run.sh"})),
        ("run_command", json!({"command": ".venv/bin/pytest -q"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "run the tests", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_all_refused(&fake, 2, &run);
    Verdict::Measured(m)
}

/// 21d. A patch to a file larger than the user's `max_patch_file_bytes`, with `--yes`:
///      refused before the file is read whole.
pub(super) fn a_patch_to_a_file_over_the_size_cap() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"max_patch_file_bytes": 4096}"#);
    let big: String = (0..400)
        .map(|i| format!("line {i:04} of a big file\n"))
        .collect();
    fx.write("big.txt", &big);
    let fake = FakeOllama::start(script(vec![(
        "apply_patch",
        json!({"diff": one_line_patch("big.txt", "line 0000 of a big file", "pwned")}),
    )]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "change the big file", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_all_refused(&fake, 1, &run);
    assert!(
        tool_results(&fake)[0].contains("max_patch_file_bytes"),
        "{:?}",
        tool_results(&fake)
    );
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// Decisions: merged config layers, walked files that are not regular files
// ---------------------------------------------------------------------------------------

/// 22a. With the layers merged, a project's `.metron.json` sits above the user's config:
///      it tries to re-offer a tool the user disabled, to loosen the user's output budget
///      and to replace the user's allowlist. None of it takes: the disabled tool stays
///      withdrawn, the budget stays the user's, the command is refused.
pub(super) fn project_layer_above_the_users() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(
        r#"{"allowed_commands": ["echo"], "disabled_tools": ["apply_patch"], "list_max_entries": 2}"#,
    );
    fx.write(
        ".metron.json",
        r#"{"disabled_tools": [], "list_max_entries": 500, "allowed_commands": ["touch"]}"#,
    );
    for i in 0..5 {
        fx.write(&format!("f{i}.txt"), "x\n");
    }
    let fake = FakeOllama::start(script(vec![
        ("apply_patch", json!({"diff": greet_patch()})),
        ("run_command", json!({"command": "touch pwned"})),
        ("list_files", json!({})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "patch, touch and list", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    assert!(
        is_refusal(&results[0]) && is_refusal(&results[1]),
        "{results:#?}"
    );
    let mut m = m;
    if !results[2].contains("[truncated to 2 entries") {
        m.unauthorized
            .push("the project loosened the user's list budget".to_owned());
    }
    Verdict::Measured(m)
}

/// 22b. FIFOs where the walking tools and view_slice look for files (a FIFO named like a
///      source file, and one the model names): every call answers promptly, no read
///      blocks on a pipe nobody writes.
pub(super) fn fifos_in_the_tree() -> Verdict {
    let fx = Fixture::new(true);
    for name in ["pipe.go", "sub/data.txt"] {
        let path = fx.root().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let made = Command::new("mkfifo")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            return Verdict::Skipped("mkfifo is not available".to_owned());
        }
    }
    let fake = FakeOllama::start(script(vec![
        ("search_text", json!({"pattern": "Greet"})),
        ("find_symbol", json!({"symbol": "Greet"})),
        ("list_files", json!({})),
        (
            "view_slice",
            json!({"path": "sub/data.txt", "start": 1, "end": 5}),
        ),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.bounded(&fake, &["-p", "look around", "--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(results[0].contains("greet.go:"), "{}", results[0]);
    assert!(
        is_refusal(&results[3]) || results[3].contains("not a regular file"),
        "{}",
        results[3]
    );
    Verdict::Measured(m)
}
