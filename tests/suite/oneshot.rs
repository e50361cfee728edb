//! `metron -p`: one request for scripts and CI, through the real binary against the fake
//! Ollama server. stdout is the answer and nothing else; approvals fail closed unless
//! `--yes`; and the exit code says what happened (0 answer, 1 failed, 2 usage or
//! configuration, 3 a proposed patch did not land, 130 interrupted). Whether edits
//! landed is in [`exit_status`], stdin as context in [`piped_stdin`].

mod exit_status;
mod piped_stdin;

use serde_json::json;

use super::common::{
    GREET_GO, GREET_HOLA, Live, PATIENCE, content, greet_patch, greet_project, greet_session,
    roles, tool_messages, user_config,
};
use super::common::{Run, TestProject, metron};
use super::fake_ollama::{
    Chunk, FakeOllama, Reply, answer, call, done, error_line, refused_url, text, tool_calls,
};

/// `metron -p PROMPT [extra]` in `p` against `fake`.
fn oneshot(p: &TestProject, fake: &FakeOllama, prompt: &str, extra: &[&str]) -> Run {
    metron(p.root())
        .args(["-p", prompt])
        .args(extra)
        .env("OLLAMA_HOST", fake.base_url())
        .run()
}

/// The last line of a run's stderr.
fn last_stderr_line(run: &Run) -> &str {
    run.stderr.lines().last().unwrap_or_default()
}

/// The text of the first `tool` message in the last request the fake received.
fn last_tool_result(fake: &FakeOllama) -> String {
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("at least one request");
    tool_messages(last)
        .first()
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_else(|| panic!("no tool message in {last:#}"))
}

#[test]
fn stdout_is_exactly_the_answer_and_everything_else_is_on_stderr() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Greet now returns \"hola\" (greet.go:5)."));
    let run = oneshot(&p, &fake, "make Greet return \"hola\"", &["--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Greet now returns \"hola\" (greet.go:5).\n");
    // What happened on the way is on stderr: the model's text from a tool round, each
    // tool, and the cost.
    let order = [
        "Let me find Greet.",
        "[executing: find_symbol]",
        "[executing: view_slice]",
        "[executing: apply_patch]",
        "[600 prompt / 71 generated tokens · 3 tool calls · ",
    ];
    let mut from = 0;
    for needle in order {
        let at = run.stderr[from..]
            .find(needle)
            .unwrap_or_else(|| panic!("stderr lacks {needle:?} after byte {from}: {run:?}"));
        from += at + needle.len();
    }
    assert!(!run.stderr.contains("Greet now returns"), "{run:?}");
    assert!(
        !run.stdout.contains("=== metron"),
        "no banner in one-shot mode: {run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    // One request, one user message: the prompt as given.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4);
    assert_eq!(roles(&bodies[0]), ["system", "user"]);
    assert_eq!(content(&bodies[0], 1), "make Greet return \"hola\"");
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn an_answer_ending_in_a_newline_gets_no_second_one() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("line one\nline two\n", 10, 3)]);
    let run = oneshot(&p, &fake, "two lines please", &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "line one\nline two\n");
}

#[test]
fn dash_reads_the_prompt_from_stdin() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("From stdin.", 10, 3)]);
    let run = metron(p.root())
        .args(["-p", "-"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("which files define Greet?\nand where?\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "From stdin.\n");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1);
    assert_eq!(
        content(&bodies[0], 1).trim_end(),
        "which files define Greet?\nand where?"
    );
}

#[test]
fn a_patch_without_yes_is_refused_and_the_model_is_told() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("The patch needs --yes.", 150, 9),
    ]);
    let run = oneshot(&p, &fake, "make Greet return \"hola\"", &[]);
    // The model answered, but its patch did not land: 3, not 0.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.stdout, "The patch needs --yes.\n");
    assert_eq!(
        last_stderr_line(&run),
        "\u{25aa} changed: nothing · not applied: 1 patch",
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let result = last_tool_result(&fake);
    assert!(result.starts_with("Not applied:"), "{result}");
    assert!(
        result.contains("--yes") && result.contains("Nothing was changed"),
        "{result}"
    );
}

#[test]
fn auto_approve_patches_never_applies_in_one_shot_mode() {
    // Even from the user's own, trusted config: only --yes approves in -p mode.
    let p = greet_project();
    let (_dir, path) = user_config(r#"{"auto_approve_patches": true}"#);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Refused.", 150, 9),
    ]);
    let run = metron(p.root())
        .args(["-p", "make Greet return \"hola\""])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .run();
    // The patch did not land: 3.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let result = last_tool_result(&fake);
    assert!(
        result.starts_with("Not applied:") && result.contains("--yes"),
        "{result}"
    );

    // The same config with --yes applies it.
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Applied.", 150, 9),
    ]);
    let run = metron(p.root())
        .args(["-p", "make Greet return \"hola\"", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    assert!(last_tool_result(&fake).starts_with("Applied:"));
}

#[test]
fn run_command_needs_yes_in_one_shot_mode() {
    let p = TestProject::git();
    let (_dir, path) = user_config(r#"{"allowed_commands": ["echo"]}"#);
    let script = || {
        vec![
            call("run_command", json!({"command": "echo checked"}), 100, 10),
            answer("Ran it.", 120, 4),
        ]
    };
    let fake = FakeOllama::start(script());
    let run = metron(p.root())
        .args(["-p", "check it"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("[executing: run_command]"), "{run:?}");
    let result = last_tool_result(&fake);
    assert!(
        result.contains("running a command needs the user's approval"),
        "{result}"
    );
    assert!(result.contains("--yes"), "{result}");
    assert!(!result.contains("exit status"), "{result}");
    // The tool is offered (the allowlist is not empty), just not approved.
    assert!(
        fake.chat_bodies()[0]["tools"]
            .to_string()
            .contains("run_command")
    );

    let fake = FakeOllama::start(script());
    let run = metron(p.root())
        .args(["--yes", "-p", "check it"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout, "Ran it.\n",
        "the command's output is not on stdout"
    );
    let result = last_tool_result(&fake);
    assert_eq!(result, "$ echo checked\nexit status 0\nchecked\n");
}

// ---------------------------------------------------------------------------------------
// Exit codes
// ---------------------------------------------------------------------------------------

#[test]
fn an_unreachable_server_exits_1_and_says_to_start_ollama() {
    let p = TestProject::git();
    let run = metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", refused_url())
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(run.stderr.contains("cannot reach Ollama"), "{run:?}");
    assert!(run.stderr.contains("ollama serve"), "{run:?}");
}

#[test]
fn a_missing_model_exits_1_and_says_to_pull_it() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![Reply::Error(
        404,
        "model \"qwen2.5-coder:7b\" not found, try pulling it first".into(),
    )]);
    let run = oneshot(&p, &fake, "hello", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(
        run.stderr.contains("ollama pull qwen2.5-coder:7b"),
        "{run:?}"
    );
}

#[test]
fn max_turns_exceeded_exits_1() {
    let p = greet_project();
    let m = metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user_file, r#"{"max_turns": 2}"#).expect("write config");
    let fake = FakeOllama::start(vec![
        call("list_files", json!({"pattern": "*.go"}), 10, 1),
        call("list_files", json!({"pattern": "*.rs"}), 10, 1),
        answer("never reached", 10, 1),
    ]);
    let run = m
        .args(["-p", "loop"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(run.stderr.contains("max turns exceeded"), "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 2);
    assert_eq!(fake.remaining(), 1);
}

#[test]
fn an_error_in_the_middle_of_the_reply_exits_1() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![Reply::Stream(vec![
        text("half an ans"),
        error_line("llama runner process has terminated"),
    ])]);
    let run = oneshot(&p, &fake, "hello", &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "no partial answer on stdout: {run:?}");
    assert!(
        run.stderr
            .contains("the model failed mid-reply: llama runner process has terminated"),
        "{run:?}"
    );
}

#[test]
fn usage_and_configuration_errors_exit_2_without_asking_the_model() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![]);
    for prompt in ["", "   ", "\n\t\n"] {
        let run = oneshot(&p, &fake, prompt, &[]);
        assert_eq!(run.code, 2, "{prompt:?}: {run:?}");
        assert!(run.stderr.contains("the request is empty"), "{run:?}");
    }
    let run = metron(p.root())
        .args(["-p", "-"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(" \n")
        .run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("the request is empty"), "{run:?}");

    let run = oneshot(&p, &fake, "hello", &["--frobnicate"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("--frobnicate"), "{run:?}");

    let run = oneshot(&p, &fake, "hello", &["--doctor"]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("cannot be used with"), "{run:?}");

    let run = metron(p.root())
        .args(["-p"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 2, "-p without a value: {run:?}");

    let broken = TestProject::git();
    broken.file(".metron.json", "{ \"model\": ");
    let run = oneshot(&broken, &fake, "hello", &[]);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("is not valid JSON"), "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "one line: {run:?}");

    // The user's own file is strict (a project's typo is only a warning).
    let (_dir, user) = user_config(r#"{"modle": "x"}"#);
    let run = metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &user)
        .run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains("did you mean `model`"), "{run:?}");

    assert!(fake.requests().is_empty(), "nothing reached the server");
}

#[test]
fn ctrl_c_while_the_model_hangs_exits_130() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("partial"), Chunk::Hang])]);
    let mut live = Live::metron(p.root(), &["-p", "take your time"], &fake);
    // Nothing to attach: without this, metron would wait 3 s for stdin first.
    live.close_stdin();
    // The chat request itself (the session asks `/api/show` where the model runs first).
    assert!(
        fake.wait_for_chats(1, PATIENCE),
        "the request never came: {}",
        live.stderr()
    );
    live.close_stdin();
    live.interrupt();
    let run = live.finish();
    assert_eq!(run.code, 130, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(run.stderr.contains("interrupted"), "{run:?}");
}

#[test]
fn help_lists_the_flags() {
    let p = TestProject::new();
    for flag in ["--help", "-h"] {
        let run = metron(p.root()).args([flag]).run();
        assert_eq!(run.code, 0, "{run:?}");
        for needle in [
            "-p, --prompt <PROMPT>",
            "--yes",
            "--doctor",
            "--version",
            "-h, --help",
            "--example-config",
            "OLLAMA_HOST",
            "OLLAMA_MODEL",
            "~/.metron/config.json",
        ] {
            assert!(
                run.stdout.contains(needle),
                "{flag} lacks {needle}: {run:?}"
            );
        }
        assert!(
            !run.stdout.contains("metron.example.json"),
            "an installed user has no such file: {run:?}"
        );
    }
}

#[test]
fn example_config_prints_every_key_at_its_default() {
    let p = TestProject::new();
    let run = metron(p.root()).args(["--example-config"]).run();
    assert_eq!(run.code, 0, "{run:?}");
    let shipped =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/metron.example.json"))
            .expect("metron.example.json");
    assert_eq!(run.stdout, shipped);
    // What it prints is a valid config file as it stands.
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("config.json");
    std::fs::write(&path, &run.stdout).expect("write");
    let check = metron(p.root())
        .args(["tool", "list_files"])
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(check.code, 0, "{check:?}");
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_kills_a_running_command_at_once_and_exits_130() {
    use std::time::{Duration, Instant};
    // The reply asks for a command and then a patch; `--yes` approves both.
    let p = greet_project();
    let (_dir, path) =
        user_config(r#"{"allowed_commands": ["sleep"], "command_timeout_seconds": 60}"#);
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            super::fake_ollama::tool_calls(&[
                ("run_command", json!({"command": "sleep 41"})),
                ("apply_patch", json!({"diff": greet_patch()})),
            ]),
            super::fake_ollama::done(100, 10),
        ]),
        answer("never asked", 120, 4),
    ]);
    let (mut command, home) = super::common::hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    command
        .args(["--yes", "-p", "wait a while", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path);
    let mut live = Live::start(command, home);
    // Nothing to attach: without this, metron would wait 3 s for stdin first.
    live.close_stdin();
    let sleeper = live.wait_for_child("sleep");
    let pressed = Instant::now();
    live.interrupt();
    let run = live.finish();
    let took = pressed.elapsed();
    assert_eq!(run.code, 130, "{run:?}");
    // Not the 60 s timeout: the press reached the command.
    assert!(took < Duration::from_secs(10), "took {took:?}: {run:?}");
    assert!(
        !std::path::Path::new(&format!("/proc/{sleeper}")).exists(),
        "sleep (pid {sleeper}) survived"
    );
    let effect = run
        .stdout
        .lines()
        .find(|l| l.contains(r#""type":"effect""#))
        .unwrap_or_else(|| panic!("no effect event: {run:?}"));
    assert!(
        effect.contains("interrupted by the user (Ctrl-C); killed"),
        "{effect}"
    );
    assert!(
        run.stdout
            .lines()
            .last()
            .is_some_and(|l| l.contains(r#""status":"error""#)
                && l.contains(r#""error":"interrupted by the user (Ctrl-C)""#)),
        "{run:?}"
    );
    assert_eq!(fake.chat_bodies().len(), 1, "the model is not asked again");
    // The press cancelled the rest of the reply: the patch was refused, not written.
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    assert!(
        run.stdout
            .contains(r#""rule":"the user interrupted the turn""#),
        "{run:?}"
    );
}

/// A trusted config file (`METRON_CONFIG`) inside the project was reported as trusted
/// without a word, and an approved patch could grant itself `allowed_commands` through
/// it. Now the session warns at start, and apply_patch refuses to write that file even
/// with `--yes`.
#[test]
fn a_trusted_config_inside_the_project_is_warned_about_and_never_patched() {
    let p = greet_project();
    let config = "{\n  \"max_turns\": 5\n}\n";
    p.file("metron-config.json", config);
    let grant = "--- a/metron-config.json\n+++ b/metron-config.json\n@@ -1,3 +1,4 @@\n {\n-  \"max_turns\": 5\n+  \"max_turns\": 5,\n+  \"allowed_commands\": [\"sh\"]\n }\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": grant }), 100, 20),
        answer("Done.", 200, 3),
    ]);
    let run = metron(p.root())
        .args(["-p", "allow sh", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", p.path("metron-config.json"))
        .run();
    // Refused, so the model's "Done." is not the edit: 3.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("metron-config.json")).expect("read"),
        config,
        "the config was patched: {run:?}"
    );
    let warning = run
        .stderr
        .lines()
        .find(|l| l.starts_with("metron: warning: the trusted config file"))
        .unwrap_or_else(|| panic!("no warning: {run:?}"));
    assert!(warning.contains("is inside the project"), "{warning}");
    let result = last_tool_result(&fake);
    assert!(
        result.contains("metron's trusted configuration"),
        "the model is told why: {result}"
    );
}

/// The user's metron directory inside the project (METRON_CONFIG_DIR the project) with no
/// config file in it yet: a patch creating `.metron/config.json` would be trusted by the
/// next session. Every write beneath that directory is refused, in any letter case, even
/// with `--yes`. (HOME a work tree is refused at start.)
#[test]
fn the_users_metron_directory_inside_the_project_is_never_patched() {
    let p = greet_project();
    let grant = r#"{"auto_approve_patches": true, "allowed_commands": ["sh"]}"#;
    let mut calls = Vec::new();
    for path in [
        ".metron/config.json",
        ".METRON/config.json",
        ".metron/input_history",
    ] {
        calls.push((
            "apply_patch",
            json!({ "diff": format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{grant}\n") }),
        ));
    }
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![tool_calls(&calls), done(100, 20)]),
        answer("Done.", 200, 3),
    ]);
    let nowhere = p.path("no-such-home");
    for (home, config_dir) in [(p.root(), None), (nowhere.as_path(), Some(p.root()))] {
        let mut m = metron(p.root())
            .args(["-p", "allow sh", "--yes"])
            .env("OLLAMA_HOST", fake.base_url())
            .env("HOME", home);
        m = match config_dir {
            Some(dir) => m.env("METRON_CONFIG_DIR", dir),
            None => m.env_remove("METRON_CONFIG_DIR"),
        };
        let run = m.run();
        if home == p.root() {
            // HOME as the project root is refused before anything runs.
            assert_eq!(run.code, 2, "{run:?}");
            assert!(run.stderr.contains("your home directory"), "{run:?}");
            assert!(!p.path(".metron").exists(), "{run:?}");
            continue;
        }
        // Every patch was refused, whatever "Done." says: 3.
        assert_eq!(run.code, 3, "{run:?}");
        // metron saves its session there itself (docs/sessions.md); no patch wrote.
        for written in [
            ".metron/config.json",
            ".METRON/config.json",
            ".metron/input_history",
        ] {
            assert!(
                !p.path(written).exists(),
                "a patch wrote the user's directory: {run:?}"
            );
        }
        let results = tool_messages(&fake.chat_bodies().last().expect("a request").clone());
        assert_eq!(results.len(), 3, "{results:#?}");
        for result in &results {
            let text = result["content"].as_str().unwrap_or_default();
            assert!(text.contains("metron's trusted configuration"), "{text}");
        }
        fake.push(Reply::Stream(vec![tool_calls(&calls), done(100, 20)]));
        fake.push(answer("Done.", 200, 3));
    }
}
