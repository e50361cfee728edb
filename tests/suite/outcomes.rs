//! What the person sees of each tool call and each turn, through the real binary with
//! the scripted fake model: one outcome line per call taken from the tool and the
//! journal, and a line of evidence at the end of a turn with effects. The model's words
//! ("Done.", "All tests pass.") are never the only account of an effect.

use serde_json::{Value, json};

use super::common::{
    GREET_GO, GREET_HOLA, Live, exit_on_a_terminal, greet_patch, greet_project, greet_session,
    hermetic, metron, metron_in_script, on_a_terminal, script_available, skip, user_config,
};
use super::fake_ollama::{FakeOllama, Reply, answer, call, done, tool_calls};

/// A patch whose context is not in greet.go.
fn wrong_patch() -> String {
    "--- a/greet.go\n+++ b/greet.go\n@@ -3,4 +3,4 @@\n // Greet says goodbye.\n func Greet() string {\n-\treturn \"hello\"\n+\treturn \"hola\"\n }\n".to_owned()
}

/// The JSON events of a `--json` run.
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect()
}

fn event<'a>(events: &'a [Value], kind: &str) -> &'a Value {
    events
        .iter()
        .find(|e| e["type"] == kind)
        .unwrap_or_else(|| panic!("no {kind} event in {events:#?}"))
}

#[test]
fn each_call_gets_an_outcome_line_from_the_tool() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Done: Greet returns hola now."));
    let run = metron(p.root())
        .args(["-p", "make Greet return hola", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Done: Greet returns hola now.\n");
    for line in [
        "find_symbol Greet → 1 definition (greet.go:4)\n",
        "view_slice greet.go 1-6 → 6 lines\n",
        "apply_patch → wrote greet.go (+1 -1)\n",
        "changed: greet.go (+1 -1)\n",
    ] {
        assert!(run.stderr.contains(line), "{line:?} missing: {run:?}");
    }
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
}

#[test]
fn a_refused_patch_followed_by_a_success_claim_says_not_applied() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": wrong_patch()}), 100, 20),
        answer("Done: Greet returns hola now.", 150, 9),
    ]);
    let run = metron(p.root())
        .args(["-p", "make Greet return hola", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    // An answer, but the patch did not land: 3, whatever the answer claims.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(run.stdout, "Done: Greet returns hola now.\n");
    let outcome = run
        .stderr
        .lines()
        .find(|l| l.starts_with("\u{25aa} apply_patch → "))
        .unwrap_or_else(|| panic!("no outcome line: {run:?}"));
    assert!(
        outcome.starts_with("\u{25aa} apply_patch → not applied: ") && outcome.contains("greet.go"),
        "{outcome}"
    );
    assert!(
        run.stderr
            .contains("changed: nothing · not applied: 1 patch\n"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
}

#[test]
fn without_yes_the_patch_is_not_applied_and_stderr_says_so() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Done: Greet returns hola now.", 150, 9),
    ]);
    let run = metron(p.root())
        .args(["-p", "make Greet return hola", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    // Refused for want of --yes: the patch did not land, exit 3.
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        run.stderr.contains(
            "apply_patch → not applied: nobody was asked to approve it (rerun with --yes to allow it)\n"
        ),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("changed: nothing · not applied: 1 patch\n"),
        "{run:?}"
    );
    // --json carries the same facts.
    let events = events(&run.stdout);
    let result = event(&events, "tool_result");
    assert_eq!(result["failed"], true);
    assert!(
        result["summary"]
            .as_str()
            .is_some_and(|s| s.starts_with("apply_patch → not applied: ")),
        "{result}"
    );
    let end = event(&events, "turn_end");
    assert_eq!(end["files_changed"], json!([]));
    assert_eq!(end["commands"], json!([]));
    let not_applied = end["patches_not_applied"]
        .as_array()
        .unwrap_or_else(|| panic!("{end}"));
    assert_eq!(not_applied.len(), 1, "{end}");
    assert_eq!(not_applied[0]["call_id"], result["call_id"]);
    assert!(
        not_applied[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("--yes")),
        "{end}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
}

#[test]
fn turn_end_lists_the_files_a_turn_changed() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Done."));
    let run = metron(p.root())
        .args(["-p", "make Greet return hola", "--json", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let events = events(&run.stdout);
    let end = event(&events, "turn_end");
    assert_eq!(
        end["files_changed"],
        json!([{"path": "greet.go", "added": 1, "removed": 1}])
    );
    assert_eq!(end["patches_not_applied"], json!([]));
    let summaries: Vec<&str> = events
        .iter()
        .filter(|e| e["type"] == "tool_result")
        .filter_map(|e| e["summary"].as_str())
        .collect();
    assert_eq!(
        summaries,
        [
            "find_symbol Greet → 1 definition (greet.go:4)",
            "view_slice greet.go 1-6 → 6 lines",
            "apply_patch → wrote greet.go (+1 -1)",
        ]
    );
}

/// A command that fails, then a model that says all is well.
fn failing_command_session() -> Vec<Reply> {
    vec![
        call(
            "run_command",
            json!({"command": "ls no-such-file"}),
            100,
            10,
        ),
        answer("All tests pass.", 120, 4),
    ]
}

#[test]
fn a_failing_command_followed_by_all_tests_pass_shows_the_exit_status() {
    let p = greet_project();
    let (_dir, config) = user_config(r#"{"allowed_commands": ["ls"]}"#);
    let fake = FakeOllama::start(failing_command_session());
    let run = metron(p.root())
        .args(["-p", "run the tests", "--yes", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &config)
        .env("LC_ALL", "C")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let outcome = run
        .stderr
        .lines()
        .find(|l| l.starts_with("\u{25aa} run_command `ls no-such-file` → exit "))
        .unwrap_or_else(|| panic!("no outcome line: {run:?}"));
    assert!(!outcome.contains("exit 0"), "{outcome}");
    assert!(outcome.contains(" s"), "the duration: {outcome}");
    // The last lines of its output, beneath it.
    assert!(
        run.stderr
            .lines()
            .any(|l| l.starts_with("  | ") && l.contains("cannot access 'no-such-file'")),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("\u{25aa} changed: nothing · ran: `ls no-such-file` exit "),
        "{run:?}"
    );
    let events = events(&run.stdout);
    let end = event(&events, "turn_end");
    let commands = end["commands"]
        .as_array()
        .unwrap_or_else(|| panic!("{end}"));
    assert_eq!(commands.len(), 1, "{end}");
    assert_eq!(commands[0]["command"], "ls no-such-file");
    assert_eq!(commands[0]["ran"], true);
    assert!(
        commands[0]["exit_code"].as_i64().is_some_and(|c| c != 0),
        "{end}"
    );
}

#[test]
fn a_stale_edit_answered_yes_says_not_applied_on_a_terminal() {
    if !script_available() {
        return skip(
            "a_stale_edit_answered_yes_says_not_applied_on_a_terminal",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Done: Greet returns hola now."));
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    // Someone edits the file while the question is open; the person then says yes.
    let edited = GREET_GO.replace("says hello", "says hello to you");
    std::fs::write(p.path("greet.go"), &edited).expect("edit");
    live.send("y\r");
    live.wait_stdout("Done: Greet returns hola now.", 1);
    live.wait_stdout_after("Done: Greet returns hola now.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert!(
        run.stdout
            .contains("apply_patch → not applied: greet.go changed on disk since it was read"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("changed: nothing · not applied: 1 patch"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        edited
    );
}

#[test]
fn outcome_lines_on_a_terminal_fit_its_width() {
    if !script_available() {
        return skip(
            "outcome_lines_on_a_terminal_fit_its_width",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    // The pseudo-terminal has no size set, so metron assumes 80 columns.
    let fake = FakeOllama::start(vec![
        call("search_text", json!({"pattern": "x".repeat(300)}), 100, 10),
        answer("Done.", 120, 4),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("look\r");
    live.wait_stdout("Done.", 1);
    live.wait_stdout_after("Done.", "metron > ");
    let run = exit_on_a_terminal(live);
    // Wider than the terminal, the line is wrapped at spaces, not cut: its rows each fit,
    // the rows after the first are indented (none starts with the mark), and it ends with
    // what the search found.
    let rows: Vec<&str> = run.stdout.lines().collect();
    let first = rows
        .iter()
        .position(|l| l.starts_with("\u{25aa} search_text \""))
        .unwrap_or_else(|| panic!("no outcome line: {run:?}"));
    let continued = rows[first + 1..]
        .iter()
        .take_while(|l| l.starts_with("  "))
        .count();
    assert!(continued > 0, "not wrapped: {run:?}");
    for line in &rows[first..=first + continued] {
        assert!(
            line.chars().count() <= 80,
            "{} chars: {line}",
            line.chars().count()
        );
    }
    let last = rows[first + continued];
    assert!(last.ends_with("no matches"), "{last}");
    // The footer fits 80 columns too, on two lines: tokens (with the share of num_ctx),
    // then time.
    let footer: Vec<&str> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("[120 prompt") || l.starts_with("[model "))
        .collect();
    assert_eq!(footer.len(), 2, "{run:?}");
    assert!(footer[0].contains("% of num_ctx]"), "{footer:?}");
    for line in footer {
        assert!(
            line.chars().count() <= 80,
            "{} chars: {line}",
            line.chars().count()
        );
    }
}

/// The greet session on a terminal, declined with `answers` typed in turn (each once its
/// prompt is on screen); returns the tool result the model read and the screen.
fn declined_on_a_terminal(answers: &[(&str, &str)]) -> (String, String) {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Understood."));
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    for (prompt, answer) in answers {
        live.wait_stdout(prompt, 1);
        live.send(answer);
    }
    live.wait_stdout("Understood.", 1);
    live.wait_stdout_after("Understood.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("requests");
    let result = super::common::tool_messages(last)
        .last()
        .and_then(|m| m["content"].as_str().map(str::to_owned))
        .unwrap_or_default();
    (result, run.stdout)
}

#[test]
fn a_decline_with_a_reason_reaches_the_model() {
    if !script_available() {
        return skip(
            "a_decline_with_a_reason_reaches_the_model",
            "util-linux `script` is not installed",
        );
    }
    // On the same line.
    let (result, screen) =
        declined_on_a_terminal(&[("Apply this patch? [y/N/a] ", "n use the existing helper\r")]);
    assert!(
        result.contains("The user declined this patch and said: \"use the existing helper\""),
        "{result}"
    );
    assert!(
        screen.contains("apply_patch → not applied: declined: use the existing helper"),
        "{screen}"
    );
    // At the follow-up prompt after a bare n.
    let (result, _) = declined_on_a_terminal(&[
        ("Apply this patch? [y/N/a] ", "n\r"),
        (
            "Why not? A reason for the model (Return to skip): ",
            "keep hello\r",
        ),
    ]);
    assert!(
        result.contains("The user declined this patch and said: \"keep hello\""),
        "{result}"
    );
    // A bare Return at the follow-up skips it.
    let (result, screen) = declined_on_a_terminal(&[
        ("Apply this patch? [y/N/a] ", "n\r"),
        ("Why not? A reason for the model (Return to skip): ", "\r"),
    ]);
    assert!(
        result.contains("The user declined this patch; nothing was changed."),
        "{result}"
    );
    assert!(
        screen.contains("apply_patch → not applied: declined\n"),
        "{screen}"
    );
}

#[test]
fn show_prints_a_calls_full_result_and_ledger_its_outcome() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Done."));
    let run = metron(p.root())
        .args(["--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("make Greet return hola\n/ledger\n/show 2\n/ledger 3\n/show 9\n/show x\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let out = &run.stdout;
    assert!(
        out.contains("     outcome: view_slice greet.go 1-6 → 6 lines\n"),
        "{out}"
    );
    assert!(
        out.contains("     outcome: apply_patch → wrote greet.go (+1 -1)\n"),
        "{out}"
    );
    // /show 2: the slice exactly as the model read it, every line.
    let slice: String = GREET_GO
        .lines()
        .enumerate()
        .map(|(i, line)| format!("{:>5} | {line}\n", i + 1))
        .collect();
    let shown = format!(
        "call 2 (turn 1): view_slice greet.go 1-6 → 6 lines\n--- what the model read ({} bytes) ---\n{slice}--- end ---\n",
        slice.len()
    );
    assert!(out.contains(&shown), "{out}");
    assert!(
        out.contains("call 3 (turn 1): apply_patch → wrote greet.go (+1 -1)\n"),
        "{out}"
    );
    assert!(
        run.stderr
            .contains("metron: there is no call 9; /ledger numbers the calls 1 to 3"),
        "{run:?}"
    );
    assert!(run.stderr.contains("/show takes a call number"), "{run:?}");
    // None of these lines reached the model.
    assert_eq!(fake.chat_bodies().len(), 4);
}

/// greet.go as a second patch leaves it: "ciao".
const GREET_CIAO: &str =
    "package greet\n\n// Greet says hello.\nfunc Greet() string {\n\treturn \"ciao\"\n}\n";

fn hola_to_ciao() -> String {
    greet_patch().replace("\"hello\"", "\"hola\"").replacen(
        "+\treturn \"hola\"",
        "+\treturn \"ciao\"",
        1,
    )
}

#[test]
fn diff_shows_the_sessions_writes_and_undo_walks_them_back() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 10),
        answer("Hola.", 100, 2),
        call("apply_patch", json!({"diff": hola_to_ciao()}), 100, 10),
        answer("Ciao.", 100, 2),
        answer("Noted.", 100, 2),
    ]);
    let mut live = Live::metron(p.root(), &["--yes"], &fake);
    live.send("make it hola\n");
    live.wait_stdout("Hola.", 1);
    live.send("make it ciao\n");
    live.wait_stdout("Ciao.", 1);
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_CIAO
    );

    // /diff: from before the first write to now, as one diff.
    live.send("/diff\n");
    live.wait_stdout("+\treturn \"ciao\"", 1);
    let out = live.stdout();
    assert!(out.contains("--- a/greet.go\n+++ b/greet.go\n"), "{out}");
    assert!(
        out.contains("-\treturn \"hello\"\n+\treturn \"ciao\"\n"),
        "{out}"
    );

    // /undo walks back through the session's patches, newest first.
    live.send("/undo\n");
    live.wait_stdout("undid the patch of call 2: wrote greet.go", 1);
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    live.send("/undo\n");
    live.wait_stdout("undid the patch of call 1: wrote greet.go", 1);
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    live.send("/undo\n");
    live.wait_stderr("nothing to undo");
    live.send("/diff\n");
    live.wait_stdout("no changes", 1);

    // The ledger records the undos as the person's, and the model hears of them first.
    live.send("/ledger\n");
    live.wait_stdout("by you: /undo of the patch of call 1: wrote greet.go", 1);
    live.send("what now?\n");
    live.wait_stdout("Noted.", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("requests");
    let messages = last["messages"].as_array().expect("messages");
    let asked = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default();
    assert!(
        asked.contains("the user ran /undo and reverted the patch of call 2: greet.go is back")
            && asked.contains("reverted the patch of call 1")
            && asked.ends_with("\n\nwhat now?"),
        "{asked}"
    );
}

#[test]
fn undo_refuses_when_a_file_changed_since_metron_wrote_it() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 10),
        answer("Hola.", 100, 2),
    ]);
    let mut live = Live::metron(p.root(), &["--yes"], &fake);
    live.send("make it hola\n");
    live.wait_stdout("Hola.", 1);
    let mine = GREET_HOLA.replace("says hello", "says hola");
    std::fs::write(p.path("greet.go"), &mine).expect("edit by hand");
    live.send("/undo\n");
    live.wait_stderr("cannot undo: `greet.go` changed since metron wrote it; nothing was changed");
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        mine
    );
}

#[test]
fn a_running_command_shows_its_elapsed_time_on_a_terminal() {
    if !script_available() {
        return skip(
            "a_running_command_shows_its_elapsed_time_on_a_terminal",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    // The command reads a FIFO, so it runs until the test writes to it: as long as the
    // test needs, and no longer.
    let gate = p.path("gate");
    let made = std::process::Command::new("mkfifo")
        .arg(&gate)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "cat gate"}), 100, 10),
        answer("Slept.", 120, 4),
    ]);
    let (mut script, home) = hermetic("script", p.root());
    let dir = home.path().join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join("config.json"), r#"{"allowed_commands": ["cat"]}"#)
        .expect("write config");
    metron_in_script(&mut script, &["--yes"]);
    script.env("OLLAMA_HOST", fake.base_url());
    let mut live = Live::start(script, home);
    live.wait_stdout("metron > ", 1);
    live.send("sleep a bit\r");
    // While it runs, the line says what, for how long, and how to stop it.
    live.wait_stdout("running cat gate 1 s (Ctrl-C stops it)", 1);
    std::fs::write(&gate, "done\n").expect("write to the FIFO");
    live.wait_stdout("Slept.", 1);
    live.wait_stdout_after("Slept.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert!(
        run.stdout
            .contains("run_command `cat gate` → exit 0 after "),
        "{run:?}"
    );
}

/// A file the session wrote that has since grown past `max_patch_file_bytes` is named in
/// `/diff` with why it is not diffed, and the session's other writes are still shown.
#[test]
fn diff_names_a_file_too_large_to_read_and_shows_the_rest() {
    let p = greet_project();
    p.file("notes.txt", "one\n");
    let notes = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-one\n+two\n";
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls(&[
                ("apply_patch", json!({"diff": greet_patch()})),
                ("apply_patch", json!({"diff": notes})),
            ]),
            done(100, 10),
        ]),
        answer("Both.", 100, 2),
    ]);
    let (_dir, config) = user_config(r#"{"max_patch_file_bytes": 1000}"#);
    let (mut command, home) = hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    command
        .arg("--yes")
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &config);
    let mut live = Live::start(command, home);
    live.send("change both\n");
    live.wait_stdout("Both.", 1);
    std::fs::write(p.path("notes.txt"), "x".repeat(5000)).expect("grow the file");
    live.send("/diff\n");
    live.wait_stdout("+\treturn \"hola\"", 1);
    live.wait_stdout("# notes.txt: not diffed:", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
}
