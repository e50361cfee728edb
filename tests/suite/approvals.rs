//! The approval question and `--yes`, through the real binary: an answer that is neither
//! yes nor no is asked again with the answers the question takes (end of input and Ctrl-C
//! at the repeated question stay what they are at the first one), and an interactive
//! `--yes` session shows each patch it applies as the question would have, with the
//! banner and `/config` saying that nothing is asked.

use serde_json::json;

use super::common::{
    GREET_GO, GREET_HOLA, Live, Run, TestProject, exit_on_a_terminal, greet_patch, greet_project,
    hermetic, metron, metron_in_script, on_a_terminal, rejoined, script_available, skip,
    tool_messages, wait_for_exit,
};
use super::fake_ollama::{FakeOllama, answer, call, refused_url};

/// The question metron asks about the Greet patch in the REPL.
const QUESTION: &str = "Apply this patch? [y/N/a] ";

/// What the REPL says after an answer the question does not take.
/// The first words of [`NOT_AN_ANSWER`], which fit on one row of any terminal.
const HINT_START: &str = "not an answer: type y to go ahead";

const NOT_AN_ANSWER: &str = "not an answer: type y to go ahead, n to decline (`n REASON` also tells the model why), or a for yes and not asking again for what is named above; Return alone declines";

/// What `--yes` says in the banner and in `/config`.
const YES_LINE: &str =
    "approvals: applying patches and running allowed commands without asking (--yes)";

/// The line under a patch `--yes` approved.
const APPROVED_BY_YES: &str = "approved without asking (--yes)";

/// The fake's script: the Greet patch, then one answer (and a spare, for a round trip
/// that may or may not happen after an interrupt).
fn greet_patch_then(final_answer: &str) -> FakeOllama {
    FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer(final_answer, 150, 9),
        answer(final_answer, 150, 9),
    ])
}

/// The Greet project on a terminal, asked for the patch, with `typed` answered to the
/// first question; returns once the question has been asked a second time.
fn asked_again_after(typed: &str) -> (TestProject, FakeOllama, Live) {
    let p = greet_project();
    let fake = greet_patch_then("Finished.");
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    live.wait_stdout(QUESTION, 1);
    live.send(&format!("{typed}\r"));
    // The hint wraps on the terminal: its first words are on one row.
    live.wait_stdout(HINT_START, 1);
    live.wait_stdout_after(HINT_START, QUESTION);
    // Nothing was decided: the file is as it was and the model has not been answered.
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO,
        "{}",
        live.stdout()
    );
    assert_eq!(fake.chat_requests().len(), 1, "{}", live.stdout());
    (p, fake, live)
}

/// What the model was told about the patch.
fn patch_result(fake: &FakeOllama) -> String {
    let bodies = fake.chat_bodies();
    tool_messages(&bodies[1])[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn on_a_terminal_an_unrecognised_answer_is_asked_again_with_the_answers_it_takes() {
    if !script_available() {
        return skip(
            "on_a_terminal_an_unrecognised_answer_is_asked_again_with_the_answers_it_takes",
            "util-linux `script` is not installed",
        );
    }
    let (p, fake, mut live) = asked_again_after("ok");
    // A second unrecognised answer is asked again too; then a yes applies.
    live.send("yes please\r");
    live.wait_stdout(QUESTION, 3);
    live.send("y\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    assert!(patch_result(&fake).starts_with("Applied:"), "{run:?}");
    assert_eq!(
        rejoined(&run.stdout)
            .iter()
            .filter(|line| line.as_str() == NOT_AN_ANSWER)
            .count(),
        2,
        "{run:?}"
    );
    // The diff is shown once, above the first question; a repeated question is one line.
    assert_eq!(
        run.stdout.matches("+\treturn \"hola\"").count(),
        1,
        "{run:?}"
    );
}

#[test]
fn on_a_terminal_end_of_input_at_a_repeated_question_declines() {
    if !script_available() {
        return skip(
            "on_a_terminal_end_of_input_at_a_repeated_question_declines",
            "util-linux `script` is not installed",
        );
    }
    let (p, fake, mut live) = asked_again_after("ok");
    live.send("\x04");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let result = patch_result(&fake);
    assert!(result.contains("The user declined this patch"), "{result}");
}

#[test]
fn on_a_terminal_ctrl_c_at_a_repeated_question_cancels_the_turn() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_c_at_a_repeated_question_cancels_the_turn",
            "util-linux `script` is not installed",
        );
    }
    let (p, fake, mut live) = asked_again_after("ok");
    live.send("\x03");
    live.wait_stdout(
        "[interrupted: the turn was cancelled; the session is intact]",
        1,
    );
    live.wait_stdout_after("[interrupted", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    // The call is closed with the decline; nothing was applied.
    let bodies = fake.chat_bodies();
    if let Some(second) = bodies.get(1) {
        let result = tool_messages(second)[0]["content"].to_string();
        assert!(result.contains("The user declined this patch"), "{result}");
    }
}

/// `metron tool` asks on the terminal through its own reader: the same rule holds there.
#[test]
fn on_a_terminal_metron_tool_asks_again_after_an_unrecognised_answer() {
    if !script_available() {
        return skip(
            "on_a_terminal_metron_tool_asks_again_after_an_unrecognised_answer",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    let args = json!({"diff": greet_patch()}).to_string();
    let (mut command, home) = hermetic("script", p.root());
    metron_in_script(&mut command, &["tool", "apply_patch", &args]);
    let mut live = Live::start(command, home);
    let question = "Apply this patch? [y/N] ";
    live.wait_stdout(question, 1);
    live.send("ok\r");
    let hint = "not an answer: type y to go ahead or n to decline (`n REASON` also tells the model why); Return alone declines";
    live.wait_stdout(HINT_START, 1);
    live.wait_stdout_after(HINT_START, question);
    assert!(
        rejoined(&live.stdout()).iter().any(|line| line == hint),
        "{}",
        live.stdout()
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    live.send("y\r");
    let run = wait_for_exit(live, "metron tool");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Applied:"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
}

/// The lines a terminal showed after the first `[executing: apply_patch]`, up to (not
/// including) the first line that contains `end`.
fn shown_before(run: &Run, end: &str) -> Vec<String> {
    run.stdout
        .lines()
        .skip_while(|l| !l.contains("[executing: apply_patch]"))
        .skip(1)
        .take_while(|l| !l.contains(end))
        .map(str::to_owned)
        .collect()
}

#[test]
fn on_a_terminal_yes_shows_each_patch_as_the_question_would() {
    if !script_available() {
        return skip(
            "on_a_terminal_yes_shows_each_patch_as_the_question_would",
            "util-linux `script` is not installed",
        );
    }
    // What the question shows about the patch.
    let asked = {
        let p = greet_project();
        let fake = greet_patch_then("Finished.");
        let mut live = on_a_terminal(&p, &fake);
        live.wait_stdout("metron > ", 1);
        live.send("make Greet return hola\r");
        live.wait_stdout(QUESTION, 1);
        live.send("y\r");
        live.wait_stdout("Finished.", 1);
        live.wait_stdout_after("Finished.", "metron > ");
        exit_on_a_terminal(live)
    };
    // What `--yes` shows, asking nothing.
    let p = greet_project();
    let fake = greet_patch_then("Finished.");
    let (mut command, home) = hermetic("script", p.root());
    metron_in_script(&mut command, &["--yes"]);
    command.env("OLLAMA_HOST", fake.base_url());
    let mut live = Live::start(command, home);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    assert!(!run.stdout.contains("Apply this patch?"), "{run:?}");
    assert!(run.stdout.contains(YES_LINE), "the banner says so: {run:?}");
    let shown = shown_before(&run, APPROVED_BY_YES);
    assert!(
        shown.iter().any(|l| l == "+\treturn \"hola\""),
        "the diff is shown: {run:?}"
    );
    // The question's lines down to its offer of a standing approval, which `--yes` has
    // no use for.
    assert_eq!(shown, shown_before(&asked, "(a = yes, "), "{run:?}");
    // Then what landed.
    let approved = run.stdout.find(APPROVED_BY_YES).unwrap_or(usize::MAX);
    let wrote = run.stdout.find("apply_patch → wrote greet.go").unwrap_or(0);
    assert!(approved < wrote, "{run:?}");
}

#[test]
fn yes_with_piped_input_shows_the_patch_on_stderr_and_one_shot_does_not() {
    let p = greet_project();
    let fake = greet_patch_then("Finished.");
    let run = metron(p.root())
        .args(["--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("make Greet return hola\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let diff = run.stderr.find("+\treturn \"hola\"").unwrap_or(usize::MAX);
    let approved = run.stderr.find(APPROVED_BY_YES).unwrap_or(0);
    assert!(diff < approved, "{run:?}");
    assert!(run.stderr.contains("M greet.go (+1 -1)"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );

    // `-p --yes` reports what landed in its outcome line and events, not the diff.
    let p = greet_project();
    let fake = greet_patch_then("Finished.");
    let run = metron(p.root())
        .args(["-p", "make Greet return hola", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA,
        "{run:?}"
    );
    assert!(!run.stderr.contains(APPROVED_BY_YES), "{run:?}");
    assert!(!run.stderr.contains("+\treturn \"hola\""), "{run:?}");
}

#[test]
fn the_banner_and_config_say_that_yes_asks_nothing() {
    let nobody = refused_url();
    let p = TestProject::git();
    let with = metron(p.root())
        .args(["--yes"])
        .env("OLLAMA_HOST", &nobody)
        .stdin("/config\n")
        .run();
    assert_eq!(with.code, 0, "{with:?}");
    // Once in the banner, before the first prompt; once in /config.
    let lines: Vec<&str> = with.stdout.lines().collect();
    let at: Vec<usize> = (0..lines.len()).filter(|&i| lines[i] == YES_LINE).collect();
    assert_eq!(at.len(), 2, "{with:?}");
    assert!(lines[..at[0]].iter().any(|l| l.starts_with("=== metron")));
    assert_eq!(lines[at[0] + 1], "", "the banner ends with it: {with:?}");
    assert!(lines[at[1] - 1].starts_with("config files: "), "{with:?}");

    let without = metron(p.root())
        .env("OLLAMA_HOST", &nobody)
        .stdin("/config\n")
        .run();
    assert_eq!(without.code, 0, "{without:?}");
    assert!(!without.stdout.contains("approvals:"), "{without:?}");
}
