//! Review of the authority-and-evidence work (issue 5): cases found missing by review.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use metron::agent::{Agent, Event, Observer, Settings};
use metron::config::Config;
use metron::ollama::wire::{ChatRequest, FunctionCall, ToolCall};
use metron::ollama::{Delta, OllamaError, Reply};
use metron::tools::approval::{ApproveAll, Approver, Decision, Request};
use metron::tools::{Budgets, ToolError};
use serde_json::json;

use super::common::*;
use super::preconditions::{lines, read, toolbox, top_patch};

/// The model reads a file through a symlink in the tree and patches it under its real
/// name (apply_patch refuses to write through symlinks, so that is the only way): the
/// revision it read must still hold the patch.
#[test]
fn a_file_read_through_a_symlink_is_held_to_that_revision_under_its_real_name() {
    let p = TestProject::git();
    p.file("src/real.txt", lines(12));
    p.symlink("link.txt", "src/real.txt");
    let toolbox = toolbox(&p);
    toolbox
        .call(
            "view_slice",
            json!({"path": "link.txt", "start": 1, "end": 5}),
        )
        .expect("view through the link");
    let theirs = lines(12).replace("line 11\n", "line 11, edited by someone else\n");
    p.file("src/real.txt", &theirs);

    match toolbox.call("apply_patch", json!({"diff": top_patch("src/real.txt")})) {
        Err(ToolError::Refused(text)) => {
            assert!(text.starts_with("Conflict: "), "{text}");
            assert!(
                text.contains("`src/real.txt` changed on disk since you read it (you last saw it through view_slice 1-5 of `link.txt`)"),
                "{text}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(read(&p, "src/real.txt"), theirs, "the other edit is kept");
}

// ---------------------------------------------------------------------------------------
// The agent loop's events, against a scripted model
// ---------------------------------------------------------------------------------------

/// A model that answers from a script; `None` never answers (a hung request).
struct Scripted(Mutex<VecDeque<Option<Result<Reply, OllamaError>>>>);

impl Scripted {
    fn new(replies: Vec<Option<Result<Reply, OllamaError>>>) -> Scripted {
        Scripted(Mutex::new(replies.into()))
    }
}

impl metron::agent::Model for Scripted {
    fn chat(
        &self,
        _request: &ChatRequest<'_>,
        _on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> impl Future<Output = Result<Reply, OllamaError>> {
        let next = self
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop_front()
            .flatten();
        async move {
            match next {
                Some(reply) => reply,
                None => std::future::pending().await,
            }
        }
    }
}

fn reply(
    content: &str,
    calls: Vec<(&str, serde_json::Value)>,
) -> Option<Result<Reply, OllamaError>> {
    Some(Ok(Reply {
        content: content.to_owned(),
        thinking: String::new(),
        tool_calls: calls
            .into_iter()
            .enumerate()
            .map(|(index, (name, arguments))| ToolCall {
                id: format!("call_{index}"),
                function: FunctionCall {
                    index,
                    name: name.to_owned(),
                    arguments,
                },
            })
            .collect(),
        prompt_tokens: 100,
        generated_tokens: 10,
        done_reason: Some("stop".to_owned()),
        // Sub-millisecond parts, as real replies have.
        first_token: Some(Duration::from_micros(1_600)),
        elapsed: Duration::from_micros(3_200),
    }))
}

fn model_error() -> Option<Result<Reply, OllamaError>> {
    Some(Err(OllamaError::Protocol("the stream broke".to_owned())))
}

#[derive(Default)]
struct Events(Vec<Event>);

impl Observer for Events {
    fn event(&mut self, event: &Event) {
        self.0.push(event.clone());
    }
}

impl Events {
    fn kinds(&self) -> Vec<String> {
        self.0
            .iter()
            .map(|e| {
                serde_json::to_value(e).expect("serialises")["type"]
                    .as_str()
                    .unwrap_or("?")
                    .to_owned()
            })
            .collect()
    }

    fn turn_ends(&self) -> Vec<&'static str> {
        self.0
            .iter()
            .filter_map(|e| match e {
                Event::TurnEnd { status, .. } => Some(*status),
                _ => None,
            })
            .collect()
    }
}

fn scripted_agent(
    p: &TestProject,
    replies: Vec<Option<Result<Reply, OllamaError>>>,
    approver: Box<dyn Approver>,
    max_turns: u64,
) -> Agent<Scripted> {
    let config = Config {
        max_turns,
        ..Config::default()
    };
    let toolbox = p.toolbox(Budgets::default()).with_approver(approver);
    Agent::new(
        Scripted::new(replies),
        toolbox,
        Settings::from_config(&config),
    )
}

fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(future)
}

fn view() -> (&'static str, serde_json::Value) {
    ("view_slice", json!({"path": "a.txt", "start": 1, "end": 2}))
}

#[test]
fn model_time_is_first_token_plus_generation_to_the_millisecond() {
    let p = TestProject::git();
    p.file("a.txt", lines(3));
    let mut agent = scripted_agent(
        &p,
        vec![reply("", vec![view()]), reply("done", vec![])],
        Box::new(ApproveAll),
        5,
    );
    let mut events = Events::default();
    let report = block_on(agent.turn("look", &mut events)).expect("the turn succeeds");
    let replies: u64 = events
        .0
        .iter()
        .filter_map(|e| match e {
            Event::ModelReply { duration_ms, .. } => Some(*duration_ms),
            _ => None,
        })
        .sum();
    let latency = report.latency;
    assert_eq!(
        latency.first_token_ms + latency.generation_ms,
        replies,
        "the turn's model time is the sum of its replies' durations: {latency:?}"
    );
}

#[test]
fn turn_end_appears_exactly_once_on_every_path() {
    let p = TestProject::git();
    p.file("a.txt", lines(3));
    let run = |replies, max_turns| {
        let mut agent = scripted_agent(&p, replies, Box::new(ApproveAll), max_turns);
        let mut events = Events::default();
        let _ = block_on(agent.turn("go", &mut events));
        agent.interrupted(&mut events); // a late Ctrl-C after the turn ended adds nothing
        events.turn_ends()
    };
    assert_eq!(run(vec![reply("done", vec![])], 5), ["ok"]);
    assert_eq!(run(vec![model_error()], 5), ["error"]);
    assert_eq!(
        run(vec![reply("", vec![view()]), model_error()], 5),
        ["error"]
    );
    assert_eq!(
        run(vec![reply("", vec![view()]), reply("", vec![view()])], 2),
        ["max_turns"]
    );
    // Interrupted while waiting for the model: first round, and after a tool ran.
    for replies in [vec![None], vec![reply("", vec![view()]), None]] {
        let mut agent = scripted_agent(&p, replies, Box::new(ApproveAll), 5);
        let mut events = Events::default();
        block_on(async {
            let turn = agent.turn("go", &mut events);
            let cut = tokio::time::timeout(Duration::from_millis(50), turn).await;
            assert!(cut.is_err(), "the turn must still be waiting");
        });
        agent.interrupted(&mut events);
        agent.interrupted(&mut events);
        assert_eq!(events.turn_ends(), ["interrupted"], "{:?}", events.kinds());
    }
}

/// An approver with a bug: it panics while asking.
#[derive(Debug)]
struct Panics;

impl Approver for Panics {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        panic!("the approver broke");
    }
}

#[test]
fn a_tool_that_panics_still_gets_every_event_and_the_turn_goes_on() {
    let p = TestProject::git();
    p.file("a.txt", lines(3));
    let mut agent = scripted_agent(
        &p,
        vec![
            reply(
                "",
                vec![("apply_patch", json!({"diff": top_patch("a.txt")}))],
            ),
            reply("could not patch", vec![]),
        ],
        Box::new(Panics),
        5,
    );
    let mut events = Events::default();
    let report = block_on(agent.turn("patch it", &mut events)).expect("the turn goes on");
    assert_eq!(report.answer, "could not patch");
    assert_eq!(
        events.kinds(),
        [
            "turn_start",
            "model_reply",
            "tool_proposed",
            "decision",
            "tool_result",
            "model_reply",
            "turn_end"
        ]
    );
    let result = events.0.iter().find_map(|e| match e {
        Event::ToolResult { outcome, .. } => Some(*outcome),
        _ => None,
    });
    assert_eq!(result, Some("fault"));
    assert_eq!(read(&p, "a.txt"), lines(3), "nothing was written");
    let entry = &agent.ledger().entries()[0];
    assert_eq!(entry.outcome, "fault");
    assert!(entry.effects.is_empty(), "{entry:?}");
    assert!(
        entry.reported.contains("apply_patch failed"),
        "{}",
        entry.reported
    );
}

// ---------------------------------------------------------------------------------------
// Ctrl-C at a question cancels the rest of the reply's calls
// ---------------------------------------------------------------------------------------

/// Ctrl-C at an approval question cancels the turn: a later call of the same reply must
/// not run, even one a standing approval would let through without asking.
#[test]
fn ctrl_c_at_a_question_stops_the_calls_left_in_the_reply() {
    use super::common::{greet_patch, greet_project, on_a_terminal, script_available};
    use super::fake_ollama::{FakeOllama, Reply as FakeReply, answer, call, done, tool_calls};
    if !script_available() {
        return skip(
            "ctrl_c_at_a_question_stops_the_calls_left_in_the_reply",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    p.file("notes.txt", lines(3));
    // A second change to greet.go, which the standing approval covers.
    let again = "--- a/greet.go\n+++ b/greet.go\n@@ -1,3 +1,3 @@\n-package greet\n+package greeting\n \n // Greet says hello.\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("First done.", 150, 9),
        FakeReply::Stream(vec![
            tool_calls(&[
                ("apply_patch", json!({"diff": top_patch("notes.txt")})),
                ("apply_patch", json!({"diff": again})),
            ]),
            done(100, 20),
        ]),
        answer("Never asked for.", 150, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("a\r");
    live.wait_stdout("First done.", 1);
    live.wait_stdout_after("First done.", "metron > ");
    let before = read(&p, "greet.go");
    live.send("second\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 2);
    live.send("\x03");
    live.wait_stdout(
        "[interrupted: the turn was cancelled; the session is intact]",
        1,
    );
    live.wait_stdout_after("[interrupted", "metron > ");
    live.send("/ledger\r");
    live.wait_stdout("standing approval: patches", 1);
    live.send("\x03");
    let run = live.finish();
    assert_eq!(read(&p, "notes.txt"), lines(3), "{run:?}");
    assert!(
        run.stdout
            .contains("refused by policy: the user interrupted the turn"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read(&p, "greet.go"),
        before,
        "the standing approval ran a call after the person cancelled the turn\n{}",
        run.stdout
    );
    // The refusals are not sent on to the model: the turn stops where it was cancelled.
    assert_eq!(fake.chat_bodies().len(), 3, "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------
// Standing patch approvals stay on the files approved
// ---------------------------------------------------------------------------------------

/// Answers `a` to the first question and counts every question after it (declining).
#[derive(Debug, Default)]
struct AThenCount(Mutex<usize>);

impl Approver for AThenCount {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        let mut asked = self.0.lock().unwrap_or_else(|e| e.into_inner());
        *asked += 1;
        if *asked == 1 {
            Decision::ApprovedForSession
        } else {
            Decision::Declined
        }
    }
}

#[test]
fn a_standing_patch_approval_does_not_cover_a_same_named_file_elsewhere_or_a_rename() {
    let p = TestProject::git();
    p.file("src/a.txt", lines(3));
    p.file("lib/a.txt", lines(3));
    let toolbox = p
        .toolbox(Budgets::default())
        .with_approver(Box::new(AThenCount::default()));
    toolbox
        .call("apply_patch", json!({"diff": top_patch("src/a.txt")}))
        .expect("approved with a");
    let create = "--- /dev/null\n+++ b/other/a.txt\n@@ -0,0 +1 @@\n+new\n";
    let rename = "diff --git a/src/a.txt b/lib/b.txt\nsimilarity index 100%\nrename from src/a.txt\nrename to lib/b.txt\n";
    for diff in [top_patch("lib/a.txt"), create.to_owned(), rename.to_owned()] {
        match toolbox.call("apply_patch", json!({ "diff": diff })) {
            Err(ToolError::Refused(text)) => assert!(text.contains("declined"), "{text}"),
            other => panic!("expected the question (declined), got {other:?}"),
        }
    }
    assert_eq!(read(&p, "lib/a.txt"), lines(3));
    assert!(!p.path("other/a.txt").exists() && !p.path("lib/b.txt").exists());
}
