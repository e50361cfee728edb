//! `-p`'s exit status and `turn_end.status` say whether the turn's edits landed, whatever
//! the model's final words claim: 0 (`ok`) when every proposed patch landed or was
//! replaced by a later patch that landed, 3 (`incomplete`) when one had not, 1 (`error`)
//! without an answer. The evidence line is the last line on stderr.

use serde_json::{Value, json};

use super::super::common::{GREET_GO, GREET_HOLA, greet_patch, greet_project};
use super::super::fake_ollama::{FakeOllama, Reply, answer, call, done, tool_calls};
use super::{last_stderr_line, oneshot};

/// A patch of greet.go whose old lines are not in the file: it can never apply.
fn patch_that_does_not_match() -> String {
    "--- a/greet.go\n+++ b/greet.go\n@@ -3,4 +3,4 @@\n func Nope() string {\n-\treturn \"nope\"\n+\treturn \"hola\"\n }\n"
        .to_owned()
}

/// A patch creating `other.go`.
fn patch_of_another_file() -> String {
    "--- /dev/null\n+++ b/other.go\n@@ -0,0 +1 @@\n+package greet\n".to_owned()
}

/// The fake's script for a Greet request: one `apply_patch` call per diff, in order, then
/// `final_answer`.
fn patches_then(diffs: &[String], final_answer: &str) -> FakeOllama {
    let mut replies: Vec<Reply> = diffs
        .iter()
        .zip(0u64..)
        .map(|(diff, n)| call("apply_patch", json!({"diff": diff}), 100 + 20 * n, 20))
        .collect();
    replies.push(answer(final_answer, 150, 9));
    FakeOllama::start(replies)
}

/// The `--json` events of a run's stdout.
fn events(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

/// The one `turn_end` event.
fn turn_end(stdout: &str) -> Value {
    let ends: Vec<Value> = events(stdout)
        .into_iter()
        .filter(|e| e["type"] == "turn_end")
        .collect();
    assert_eq!(ends.len(), 1, "{stdout}");
    ends[0].clone()
}

/// The call ids of the `apply_patch` proposals, in order.
fn patch_call_ids(stdout: &str) -> Vec<String> {
    events(stdout)
        .iter()
        .filter(|e| e["type"] == "tool_proposed" && e["tool"] == "apply_patch")
        .map(|e| e["call_id"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn a_patch_that_never_lands_exits_3_and_the_evidence_is_the_last_line() {
    let p = greet_project();
    let fake = patches_then(
        &[patch_that_does_not_match()],
        "Done: Greet returns \"hola\" now.",
    );
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes"]);
    assert_eq!(run.code, 3, "{run:?}");
    // The claim is still the answer on stdout; the evidence has the last word on stderr,
    // after the footer.
    assert_eq!(run.stdout, "Done: Greet returns \"hola\" now.\n");
    assert_eq!(
        last_stderr_line(&run),
        "\u{25aa} changed: nothing · not applied: 1 patch",
        "{run:?}"
    );
    let footer = run.stderr.find("generated tokens").expect("a footer");
    let evidence = run.stderr.rfind("changed: nothing").expect("evidence");
    assert!(footer < evidence, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
}

#[test]
fn a_patch_replaced_by_one_that_lands_exits_0() {
    let p = greet_project();
    let fake = patches_then(
        &[patch_that_does_not_match(), greet_patch()],
        "Greet returns \"hola\".",
    );
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        last_stderr_line(&run),
        "\u{25aa} changed: greet.go (+1 -1) · not applied: 1 patch (replaced by a later patch that applied)",
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
}

#[test]
fn a_later_patch_of_another_file_does_not_replace_one_that_failed() {
    let p = greet_project();
    let fake = patches_then(
        &[patch_that_does_not_match(), patch_of_another_file()],
        "Done.",
    );
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes"]);
    assert_eq!(run.code, 3, "{run:?}");
    assert!(
        p.path("other.go").exists(),
        "the second patch landed: {run:?}"
    );
}

#[test]
fn a_patch_that_lands_before_a_failed_one_does_not_replace_it() {
    let p = greet_project();
    let fake = patches_then(&[greet_patch(), patch_that_does_not_match()], "Done.");
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes"]);
    assert_eq!(run.code, 3, "{run:?}");
}

#[test]
fn turn_end_status_is_incomplete_when_a_patch_never_lands() {
    let p = greet_project();
    let fake = patches_then(&[patch_that_does_not_match()], "Done.");
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes", "--json"]);
    assert_eq!(run.code, 3, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "incomplete", "{end:#}");
    assert_eq!(end["answer"], "Done.", "{end:#}");
    let not_applied = end["patches_not_applied"].as_array().expect("a list");
    assert_eq!(not_applied.len(), 1, "{end:#}");
    assert!(not_applied[0].get("replaced_by").is_none(), "{end:#}");
    assert_eq!(
        last_stderr_line(&run),
        "\u{25aa} changed: nothing · not applied: 1 patch",
        "{run:?}"
    );
}

#[test]
fn turn_end_status_is_ok_and_names_the_patch_that_replaced_a_failed_one() {
    let p = greet_project();
    let fake = patches_then(&[patch_that_does_not_match(), greet_patch()], "Done.");
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "ok", "{end:#}");
    let ids = patch_call_ids(&run.stdout);
    assert_eq!(ids.len(), 2, "{run:?}");
    assert_eq!(end["patches_not_applied"][0]["call_id"], ids[0].as_str());
    assert_eq!(
        end["patches_not_applied"][0]["replaced_by"],
        ids[1].as_str()
    );
}

#[test]
fn turn_end_status_is_ok_when_every_patch_landed() {
    let p = greet_project();
    let fake = patches_then(&[greet_patch()], "Done.");
    let run = oneshot(&p, &fake, "make Greet return hola", &["--yes", "--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "ok", "{end:#}");
    assert_eq!(end["patches_not_applied"], json!([]), "{end:#}");
}

#[test]
fn a_patch_declined_for_want_of_yes_makes_the_turn_incomplete() {
    let p = greet_project();
    let fake = patches_then(&[greet_patch()], "I need --yes to apply it.");
    let run = oneshot(&p, &fake, "make Greet return hola", &["--json"]);
    assert_eq!(run.code, 3, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "incomplete", "{end:#}");
    let reason = end["patches_not_applied"][0]["reason"]
        .as_str()
        .unwrap_or_default();
    assert!(reason.contains("--yes"), "{end:#}");
}

#[test]
fn a_turn_without_patches_is_ok_and_exits_0() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("find_symbol", json!({"symbol": "Greet"}), 100, 20),
        answer("greet.go:4", 150, 9),
    ]);
    let run = oneshot(&p, &fake, "where is Greet?", &["--json"]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(turn_end(&run.stdout)["status"], "ok");
}

#[test]
fn an_empty_answer_is_an_error_in_turn_end_and_exits_1() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![answer("", 100, 0)]);
    let run = oneshot(&p, &fake, "say nothing", &["--json"]);
    assert_eq!(run.code, 1, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "error", "{end:#}");
    assert!(end.get("answer").is_none(), "{end:#}");
    let error = end["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("the model's answer was empty"), "{end:#}");
}

#[test]
fn max_turns_ends_the_turn_with_status_error() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls(&[("apply_patch", json!({"diff": patch_that_does_not_match()}))]),
            done(100, 10),
        ]),
        call("list_files", json!({}), 100, 10),
    ]);
    let m = super::super::common::metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user_file, r#"{"max_turns": 2}"#).expect("write config");
    let run = m
        .args(["-p", "loop", "--yes", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    // No answer: 1, not 3, though a patch did not land either.
    assert_eq!(run.code, 1, "{run:?}");
    let end = turn_end(&run.stdout);
    assert_eq!(end["status"], "error", "{end:#}");
    assert!(
        end["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("max turns exceeded")),
        "{end:#}"
    );
    // The evidence comes before the error line, which says why the run failed.
    let lines: Vec<&str> = run.stderr.lines().collect();
    let evidence = lines
        .iter()
        .position(|l| l.contains("not applied: 1 patch"))
        .unwrap_or_else(|| panic!("no evidence: {run:?}"));
    let error = lines
        .iter()
        .position(|l| l.contains("max turns exceeded"))
        .unwrap_or_else(|| panic!("no error: {run:?}"));
    assert!(evidence < error, "{run:?}");
}

#[test]
fn the_man_page_lists_exit_status_3() {
    let p = greet_project();
    let run = super::super::common::metron(p.root()).args(["man"]).run();
    assert_eq!(run.code, 0, "{run:?}");
    let at = run
        .stdout
        .find("\n\\fB3\\fR\n")
        .unwrap_or_else(|| panic!("no exit status 3:\n{}", run.stdout));
    let entry = &run.stdout[at..];
    assert!(
        entry.contains("a patch it proposed had still not landed"),
        "{entry}"
    );
}
