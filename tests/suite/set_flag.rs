//! `--set KEY=VALUE` (docs/configuration.md): one setting for one run, through the real
//! binary. Values are JSON when they parse and text otherwise; the flag is the highest
//! layer and gives any key the user's own file may set; an unknown key or a value of the
//! wrong type is a usage error (exit 2) naming the key; `/config`, `--doctor` and `-p
//! --json` name the layer; `metron tool` obeys a budget set with it; `--set model=` wins
//! over the model a continued session saved.

use std::path::Path;

use serde_json::Value;

use super::common::*;
use super::fake_ollama::*;

/// A git project with `n` small files, for `list_files` budgets.
fn numbered(n: usize) -> TestProject {
    let p = TestProject::git();
    for i in 0..n {
        p.file(&format!("f{i}.txt"), "line one\n");
    }
    p
}

/// `metron -p hi ARGS` against a fake that answers once; the run and the chat request.
fn one_request(dir: &Path, args: &[&str]) -> (Run, Value) {
    let fake = FakeOllama::start(vec![answer("Done.", 10, 2)]);
    let run = metron(dir)
        .env("OLLAMA_HOST", fake.base_url())
        .args(["-p", "hi"])
        .args(args)
        .run();
    let body = fake.chat_bodies().into_iter().next().unwrap_or(Value::Null);
    (run, body)
}

/// A usage error: exit 2, nothing on stdout, a stderr line holding every needle.
#[track_caller]
fn assert_usage_error(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "stderr lacks {needle:?}: {run:?}"
        );
    }
}

/// The `/config` line of `key`, its columns one space apart: `key value (layer)`.
fn config_line(stdout: &str, key: &str) -> String {
    stdout
        .lines()
        .find(|l| l.split_whitespace().next() == Some(key))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|| panic!("/config has no line for {key}: {stdout}"))
}

#[test]
fn a_value_that_is_not_json_is_a_string() {
    let p = TestProject::git();
    let (run, body) = one_request(p.root(), &["--set", "model=qwen3:8b"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(body["model"], "qwen3:8b", "{body:#}");
}

#[test]
fn a_number_is_a_number() {
    let p = TestProject::git();
    let (run, body) = one_request(p.root(), &["--set", "max_output_tokens=123"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(body["options"]["num_predict"], 123, "{body:#}");
}

#[test]
fn a_list_is_a_list_and_a_privileged_key_is_taken_with_the_users_authority() {
    // `allowed_commands` is a key only the user's own file may set; `--set` is typed by
    // that user, so it may give it too.
    let p = TestProject::git();
    let run = metron(p.root())
        .env("OLLAMA_HOST", refused_url())
        .args(["--set", r#"allowed_commands=["go test", "make check"]"#])
        .stdin("/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        config_line(&run.stdout, "allowed_commands"),
        r#"allowed_commands ["go test","make check"] (--set)"#
    );
}

#[test]
fn config_names_the_set_layer_of_each_key_it_gave() {
    let p = TestProject::git();
    let run = metron(p.root())
        .env("OLLAMA_HOST", refused_url())
        .args(["--set", "max_turns=3", "--set", "model=qwen3:8b"])
        .stdin("/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(config_line(&run.stdout, "max_turns"), "max_turns 3 (--set)");
    assert!(
        config_line(&run.stdout, "num_ctx").ends_with("(default)"),
        "{run:?}"
    );
    // The banner says where the model came from, as for every layer.
    assert!(
        run.stdout.contains("(model: qwen3:8b, from --set)"),
        "{run:?}"
    );
}

#[test]
fn set_is_above_the_users_file_and_the_environment() {
    let p = TestProject::git();
    let m = metron(p.root());
    let user = m.home().join("user.json");
    std::fs::write(&user, r#"{"max_turns": 4, "model": "file:1b"}"#).expect("write");
    let run = m
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", refused_url())
        .env("OLLAMA_MODEL", "env:1b")
        .args(["--set", "max_turns=7", "--set", "model=set:1b"])
        .stdin("/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(config_line(&run.stdout, "max_turns"), "max_turns 7 (--set)");
    assert_eq!(
        config_line(&run.stdout, "model"),
        r#"model "set:1b" (--set)"#
    );
}

#[test]
fn an_unknown_key_is_a_usage_error_with_the_nearest_key() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .args(["--set", "max_turn=3", "-p", "hi"])
        .run();
    assert_usage_error(
        &run,
        &[
            "unknown key `max_turn` in `--set KEY=VALUE`",
            "did you mean `max_turns`?",
        ],
    );
    assert!(fake.requests().is_empty(), "nothing reached the server");
}

#[test]
fn a_name_no_config_file_may_set_is_refused() {
    // `--set` gives the keys of the user's own file and nothing else: an environment
    // variable's name is not one of them.
    let p = TestProject::git();
    let run = metron(p.root())
        .args([
            "tool",
            "list_files",
            "--set",
            "OLLAMA_HOST=http://example.com",
        ])
        .run();
    assert_usage_error(
        &run,
        &["unknown key `OLLAMA_HOST`", "metron --example-config"],
    );
}

#[test]
fn a_value_of_the_wrong_type_is_a_usage_error_naming_the_key() {
    let p = TestProject::git();
    let run = metron(p.root())
        .args(["tool", "list_files", "--set", "list_max_entries=many"])
        .run();
    assert_usage_error(
        &run,
        &[
            "`list_max_entries` in `--set list_max_entries=VALUE` must be a positive integer",
            "such as `--set list_max_entries=60`",
        ],
    );
    // A string key given JSON of another type is told how to quote it.
    let run = metron(p.root())
        .args(["tool", "list_files", "--set", "model=7"])
        .run();
    assert_usage_error(&run, &["`model`", r#"'model="..."'"#, "reads as JSON"]);
    // ... without quoting the value back: it may hold a password.
    let run = metron(p.root())
        .args([
            "tool",
            "list_files",
            "--set",
            r#"endpoint=["http://me:hunter2@gpu:8080/v1"]"#,
        ])
        .run();
    assert_usage_error(&run, &["`endpoint`", "reads as JSON"]);
    assert!(!run.stderr.contains("hunter2"), "{run:?}");
    // Without `=` there is no value at all.
    let run = metron(p.root())
        .args(["tool", "list_files", "--set", "max_turns"])
        .run();
    assert_usage_error(&run, &["has no `=`; give it the form KEY=VALUE"]);
}

#[test]
fn a_key_given_twice_keeps_the_last_value() {
    let p = numbered(6);
    let run = metron(p.root())
        .args(["tool", "list_files", "--set", "list_max_entries=1"])
        .args(["--set", "list_max_entries=2"])
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .starts_with("f0.txt\nf1.txt\n[truncated to 2 entries; narrow with a glob]\n"),
        "{run:?}"
    );
}

#[test]
fn model_and_set_model_together_are_a_usage_error() {
    let p = TestProject::git();
    let run = metron(p.root())
        .args(["-m", "a:1b", "--set", "model=b:1b", "--doctor"])
        .run();
    assert_usage_error(&run, &["--model and `--set model=...` both set `model`"]);
    let run = metron(p.root())
        .args([
            "--no-instructions",
            "--set",
            "instructions=true",
            "--doctor",
        ])
        .run();
    assert_usage_error(&run, &["both set `instructions`"]);
}

#[test]
fn metron_tool_obeys_a_budget_set_before_or_after_the_subcommand() {
    let p = numbered(6);
    for args in [
        &["tool", "list_files", "--set", "list_max_entries=3"][..],
        &["--set", "list_max_entries=3", "tool", "list_files"][..],
    ] {
        let run = metron(p.root()).args(args).run();
        assert_eq!(run.code, 0, "{args:?}: {run:?}");
        assert!(
            run.stdout
                .contains("[truncated to 3 entries; narrow with a glob]\n"),
            "{args:?}: {run:?}"
        );
    }
    // A slice budget, as the benchmarking recipe in docs/performance.md varies it.
    p.file("three.txt", "one\ntwo\nthree\n");
    let run = metron(p.root())
        .args([
            "tool",
            "view_slice",
            r#"{"path":"three.txt","start":1,"end":3}"#,
        ])
        .args(["--set", "max_slice_lines=2"])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("at most 2 lines"), "{run:?}");
}

#[test]
fn the_doctor_checks_what_set_gave_and_names_it_from_set() {
    let p = TestProject::git();
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "missing:1b")
        .args([
            "--doctor",
            "--set",
            "model=qwen3:8b",
            "--set",
            "max_turns=5",
        ])
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let row = |name: &str| {
        run.stdout
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name))
            .unwrap_or_else(|| panic!("no {name} row: {run:?}"))
    };
    assert_eq!(
        row("model"),
        "ok    model     qwen3:8b is installed (from --set)"
    );
    assert!(
        row("config").ends_with("overridden by $OLLAMA_HOST and --set (max_turns, model)"),
        "{run:?}"
    );
    assert!(
        fake.requests()
            .iter()
            .all(|r| !r.path.starts_with("/api/chat")),
        "the doctor never asks the model"
    );
}

#[test]
fn json_session_start_credits_set() {
    let p = TestProject::git();
    let (run, _) = one_request(p.root(), &["--json", "--set", "max_turns=5"]);
    assert_eq!(run.code, 0, "{run:?}");
    let start: Value = run
        .stdout
        .lines()
        .next()
        .and_then(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no session_start: {run:?}"));
    assert_eq!(start["config_sources"]["max_turns"], "--set", "{start:#}");
}

#[test]
fn set_model_wins_over_the_model_a_continued_session_saved() {
    let p = TestProject::git();
    let home = tempfile::tempdir().expect("a home kept across runs");
    let fake = FakeOllama::start(vec![answer("One.", 10, 2), answer("Two.", 20, 2)]);
    let run = |args: &[&str]| {
        metron(p.root())
            .env("HOME", home.path())
            .env("METRON_CONFIG_DIR", home.path())
            .env("OLLAMA_HOST", fake.base_url())
            .args(args)
            .run()
    };
    let first = run(&["-m", "saved:7b", "-p", "first"]);
    assert_eq!(first.code, 0, "{first:?}");
    let second = run(&["-c", "--set", "model=chosen:1b", "-p", "second"]);
    assert_eq!(second.code, 0, "{second:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies[1]["model"], "chosen:1b", "{second:?}");
    assert_eq!(bodies[1]["messages"][1]["content"], "first");
}
