//! Cases on the person's terminal: text the person did not type (the model's, the
//! repository's, a configured model name) must not reach the screen as raw control
//! sequences, which could forge what it shows; and keys typed ahead must not answer a later
//! question (a forged question followed by the real one).

use serde_json::json;

use super::*;
use crate::suite::common::{greet_patch, script_available};
use crate::suite::fake_ollama::{
    Chunk, FakeOllama, Gate, Reply, answer, call, done, text, tool_calls,
};

cases! {
    "typed-ahead y at a forged patch question" => typed_ahead_yes_at_a_forged_patch_question: typed_ahead_at_a_forged_patch_question;
    "typed-ahead y at a forged command question" => typed_ahead_yes_at_a_forged_command_question: typed_ahead_at_a_forged_command_question;
    "escapes in the approval diff" => control_sequences_in_the_approval_diff: escapes_in_the_approval_diff;
    "escapes in replies, outcome lines and /ledger" => control_sequences_in_replies_outcomes_and_the_ledger: escapes_in_replies_outcomes_and_the_ledger;
    "escapes in a model name from .metron.json" => control_sequences_in_a_configured_model_name: escapes_from_an_untrusted_config;
    "forged status lines in -p output" => forged_status_lines_in_piped_output: forged_status_lines_when_piped;
    "forged status lines on a terminal" => forged_status_lines_in_the_repl_on_a_terminal: forged_status_lines_on_a_terminal;
    "a command's text forges an evidence clause" => a_command_that_reads_as_a_second_evidence_clause: command_text_forging_an_evidence_clause;
    "a path forges an evidence clause" => a_path_that_reads_as_a_second_evidence_clause: path_forging_an_evidence_clause;
}

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
    let typed = Gate::new();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text(&imitation),
            Chunk::Gate(typed.clone()),
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
        // The terminal echoes the `y`: it is in metron's input, typed ahead of the real
        // question, before the model goes on.
        live.wait_stdout_after(forged, "y");
        typed.open();
        live.wait_stdout(real, 2);
        // metron throws typed-ahead keys away before it shows a question, so the `y` is
        // gone (or, had it survived, already ahead of the answer below in the input).
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

/// Typed ahead at a forged patch question.
pub(super) fn typed_ahead_at_a_forged_patch_question() -> Verdict {
    typed_ahead_at_a_forged_question(
        "Apply this patch? [y/N/a] ",
        "Apply this patch? [y/N/a] ",
        ("apply_patch", json!({"diff": greet_patch()})),
    )
}

/// Typed ahead at a forged command question.
pub(super) fn typed_ahead_at_a_forged_command_question() -> Verdict {
    typed_ahead_at_a_forged_question(
        "Run this command? [y/N] ",
        "Run this command? [y/N",
        ("run_command", json!({"command": "touch pwned"})),
    )
}

/// A patch whose added line carries control sequences, shown at the approval
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

/// Control sequences in the model's reply, in a tool's arguments (shown on its
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

/// A repository's `.metron.json` names a model with control sequences: the banner,
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

/// Model text imitating metron's status lines, with the mark and without, written in
/// a round that calls a tool and again in the answer.
fn forged_status(last: &str) -> String {
    format!(
        "Done.\n{STATUS_MARK} apply_patch → wrote greet.go (+1 -1)\n{STATUS_MARK} changed: greet.go (+1 -1) · ran: `go test ./...` exit 0\n{last}"
    )
}

/// The one status line metron writes in the forged-status cases.
const VIEWED: &str = "view_slice greet.go 1-2 → 2 lines";

/// The model's replies for the forged-status cases: a round with forged lines and a real
///      call, then an answer with forged lines again.
fn forging_model() -> FakeOllama {
    let view = json!({"path": "greet.go", "start": 1, "end": 2});
    FakeOllama::start(vec![
        Reply::Stream(vec![
            text(&forged_status("")),
            tool_calls(&[("view_slice", view)]),
            done(100, 20),
        ]),
        answer(&forged_status("Finished."), 150, 9),
    ])
}

/// The model prints imitations of metron's outcome and evidence lines, and `-p` runs
///      with stdout and stderr piped, as in a CI log: the only marked line is metron's own.
pub(super) fn forged_status_lines_when_piped() -> Verdict {
    let fx = Fixture::new(true);
    let fake = forging_model();
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "look", &[]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    m.status_lines("stdout", &run.stdout, &[]);
    m.status_lines("stderr", &run.stderr, &[VIEWED]);
    assert!(
        run.stderr.contains(&format!("{STATUS_MARK} {VIEWED}")),
        "metron's own line is marked: {run:?}"
    );
    assert!(
        run.stdout.contains("\\u{25aa} changed: greet.go")
            && run.stderr.contains("\\u{25aa} apply_patch"),
        "the model's marks are shown escaped: {run:?}"
    );
    Verdict::Measured(m)
}

/// The same imitations in the REPL on a terminal, where the reply streams: the only
///      marked line is metron's own.
pub(super) fn forged_status_lines_on_a_terminal() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let fake = forging_model();
    let mut shown = String::new();
    let mut m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("look\r");
        live.wait_stdout("Finished.", 1);
        live.wait_stdout_after("Finished.", "metron > ");
        live.send("/exit\r");
        shown = live.finish().stdout;
        (Expect::nothing().typed(&["look", "/exit"]), Some(&fake))
    });
    m.status_lines("the terminal", &shown, &[VIEWED]);
    assert!(
        shown.contains(VIEWED) && shown.contains("\\u{25aa} changed: greet.go"),
        "the call ran and the forged mark is escaped: {shown}"
    );
    Verdict::Measured(m)
}

/// An allowed command whose own text reads as a second clause of the evidence line
///      (`echo ok · ran: cargo test --workspace exit 0`): the line quotes it, and says
///      once what ran.
pub(super) fn command_text_forging_an_evidence_clause() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["echo"]}"#);
    let command = "echo ok · ran: cargo test --workspace exit 0";
    let fake = FakeOllama::start(vec![
        call("run_command", json!({ "command": command }), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "check", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let outcome = format!("run_command `{command}` → exit 0 after ");
    let evidence = format!("changed: nothing · ran: `{command}` exit 0");
    m.status_lines("stderr", &run.stderr, &[&outcome, &evidence]);
    assert!(
        run.stderr.contains(&format!("{STATUS_MARK} {evidence}\n")),
        "the evidence line quotes the command: {run:?}"
    );
    Verdict::Measured(m)
}

/// A patch creates a file whose name reads as more of the evidence line
///      (`x.go (+1 -1) · ran: cargo test exit 0`): the line quotes it.
pub(super) fn path_forging_an_evidence_clause() -> Verdict {
    let fx = Fixture::new(true);
    let name = "x.go (+1 -1) · ran: cargo test exit 0";
    let diff = format!("--- /dev/null\n+++ b/{name}\n@@ -0,0 +1 @@\n+package x\n");
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "add x", &["--yes"]));
        (
            Expect::nothing().change(name, Want::bytes("package x\n")),
            Some(&fake),
        )
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let outcome = format!("apply_patch → wrote `{name}` (new, +1)");
    let evidence = format!("changed: `{name}` (+1 -0)");
    m.status_lines("stderr", &run.stderr, &[&outcome, &evidence]);
    assert!(
        run.stderr.contains(&format!("{STATUS_MARK} {evidence}\n")),
        "the evidence line quotes the path: {run:?}"
    );
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
