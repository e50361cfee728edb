//! The agent loop end to end: the real HTTP client and the real tools in a temp git repo,
//! against the fake Ollama server. Each test asserts on what metron *sent* (request
//! bodies) as well as on what it did.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use metron::agent::{Agent, Observer, REDACTED_SLICE, Settings, TurnError, TurnReport};
use metron::authority::approval::ApproveAll;
use metron::config::Config;
use metron::ollama::wire::ToolCall;
use metron::ollama::{Client, Delta, OllamaError};
use metron::tools::{Budgets, CommandLimits};

use super::common::{TestProject, greet_patch, greet_project, tool_messages};
use super::fake_ollama::{
    Chunk, FakeOllama, Reply, answer, call, done, done_with_calls, error_line, message_chunk,
    refused_url, text, tool_calls, tool_calls_without_ids,
};

/// What the person would have seen.
#[derive(Default)]
struct Seen {
    text: String,
    executed: Vec<String>,
    model_calls: usize,
}

impl Observer for Seen {
    fn model_call_started(&mut self) {
        self.model_calls += 1;
    }
    fn delta(&mut self, delta: Delta<'_>) {
        if let Delta::Content(t) = delta {
            self.text.push_str(t);
        }
    }
    fn tool_started(&mut self, call: &ToolCall) {
        self.executed.push(call.function.name.clone());
    }
}

fn config_for(url: &str) -> Config {
    Config {
        endpoint: format!("{url}/api/chat"),
        model: "qwen2.5-coder:32b".into(),
        timeout_seconds: 5,
        ..Config::default()
    }
}

fn agent(project: &TestProject, config: &Config) -> Agent<Client> {
    let toolbox = project
        .toolbox(Budgets::from_config(config))
        .with_limits(CommandLimits::from_config(config))
        .with_approver(Box::new(ApproveAll));
    let client = Client::new(
        &config.endpoint,
        Duration::from_secs(config.timeout_seconds),
    )
    .expect("client");
    Agent::new(client, toolbox, Settings::from_config(config))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn turn(agent: &mut Agent<Client>, line: &str) -> (Result<TurnReport, TurnError>, Seen) {
    let mut seen = Seen::default();
    let result = runtime().block_on(agent.turn(line, &mut seen));
    (result, seen)
}

#[test]
fn find_symbol_view_slice_apply_patch_changes_the_file_on_disk() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        call("find_symbol", json!({"symbol": "Greet"}), 300, 10),
        call(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            400,
            12,
        ),
        call("apply_patch", json!({"diff": greet_patch()}), 500, 40),
        answer("Greet now returns \"hola\" (greet.go:5).", 600, 9),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    let (result, seen) = turn(
        &mut agent,
        "make Greet return \"hola\" instead of \"hello\"",
    );
    let report = result.expect("the turn succeeds");

    assert_eq!(seen.executed, ["find_symbol", "view_slice", "apply_patch"]);
    assert_eq!(report.answer, "Greet now returns \"hola\" (greet.go:5).");
    assert_eq!(seen.text, report.answer);
    assert_eq!((report.prompt_tokens, report.generated_tokens), (600, 71));
    assert_eq!((report.tool_calls, report.round_trips), (3, 4));
    let on_disk = std::fs::read_to_string(project.path("greet.go")).expect("read");
    assert!(on_disk.contains("return \"hola\""), "{on_disk}");

    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4);
    let results = tool_messages(&bodies[3]);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("greet.go:4"),
        "{results:?}"
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap_or("")
            .contains("    5 | \treturn \"hello\"")
    );
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap_or("")
            .starts_with("Applied")
    );
    for (i, result) in results.iter().enumerate() {
        // Both names for the call: older servers match by name, newer ones by id.
        assert!(result["tool_name"].is_string(), "result {i}: {result}");
        assert!(result["tool_call_id"].is_string(), "result {i}: {result}");
    }
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn every_request_carries_the_same_options_tools_and_model() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        call("list_files", json!({}), 100, 5),
        answer("greet.go", 120, 3),
    ]);
    let config = Config {
        num_ctx: 8192,
        max_output_tokens: 512,
        temperature: 0.3,
        top_p: 0.5,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    turn(&mut agent, "what files are there?").0.expect("turn");
    let bodies = fake.chat_bodies();
    for body in &bodies {
        assert_eq!(body["model"], "qwen2.5-coder:32b");
        assert_eq!(body["stream"], true);
        assert_eq!(
            body["options"],
            json!({"num_ctx": 8192, "num_predict": 512, "temperature": 0.3, "top_p": 0.5})
        );
        let names: Vec<_> = body["tools"]
            .as_array()
            .map(|t| t.iter().map(|t| t["function"]["name"].clone()).collect())
            .unwrap_or_default();
        // run_command is withdrawn (no allowed_commands), so it is not advertised.
        assert_eq!(
            names,
            [
                "list_files",
                "find_symbol",
                "search_text",
                "view_slice",
                "apply_patch"
            ]
        );
        assert_eq!(body["messages"][0]["role"], "system");
    }
    assert_eq!(bodies[0]["messages"].as_array().map(Vec::len), Some(2));
}

#[test]
fn slices_are_purged_after_the_turn_and_the_next_request_no_longer_carries_them() {
    let project = TestProject::git();
    let body: String = (1..=40)
        .map(|i| format!("line number {i} of the file\n"))
        .collect();
    project.file("big.txt", &body);
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "big.txt", "start": 1, "end": 40}),
            100,
            5,
        ),
        answer("It counts lines.", 900, 5),
        answer("Still yes.", 200, 2),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    turn(&mut agent, "what is in big.txt?").0.expect("turn 1");
    turn(&mut agent, "sure?").0.expect("turn 2");
    let bodies = fake.chat_bodies();
    let during = tool_messages(&bodies[1]);
    assert!(
        during[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("line number 40")
    );
    let after = tool_messages(&bodies[2]);
    assert_eq!(after[0]["content"], REDACTED_SLICE);
    assert!(!bodies[2].to_string().contains("line number 40"));
}

#[test]
fn history_is_trimmed_between_turns_and_the_model_is_told() {
    let project = greet_project();
    let mut replies = Vec::new();
    for i in 0..4 {
        replies.push(call(
            "list_files",
            json!({"pattern": format!("*{i}")}),
            10,
            1,
        ));
        replies.push(answer(&format!("answer {i}"), 10, 1));
    }
    let fake = FakeOllama::start(replies);
    let config = Config {
        max_history_messages: 5,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    for i in 0..4 {
        turn(&mut agent, &format!("question {i}")).0.expect("turn");
    }
    let bodies = fake.chat_bodies();
    let last = &bodies[7]["messages"];
    let roles: Vec<_> = last
        .as_array()
        .map(|m| {
            m.iter()
                .map(|m| m["role"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    // system, then only the last exchange plus the current one (each 4 messages when done,
    // and the current one is mid-flight): never a tool result without its call.
    assert_eq!(
        roles,
        [
            "system",
            "user",
            "assistant",
            "tool",
            "assistant",
            "user",
            "assistant",
            "tool"
        ]
    );
    // The system message stays as it was; the note came with the next line.
    assert_eq!(last[0]["content"], bodies[0]["messages"][0]["content"]);
    assert_eq!(
        last[1]["content"],
        "(Note from metron: earlier messages were dropped to save context; look things up again if you need them.)\n\nquestion 2"
    );
}

#[test]
fn max_turns_ends_the_turn_with_an_error() {
    let project = greet_project();
    let replies = (0..3)
        .map(|i| call("list_files", json!({"pattern": format!("*.{i}")}), 10, 1))
        .collect();
    let fake = FakeOllama::start(replies);
    let config = Config {
        max_turns: 3,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    let (result, seen) = turn(&mut agent, "loop forever");
    let error = result.expect_err("max turns");
    assert!(
        matches!(error, TurnError::MaxTurns { limit: 3 }),
        "{error:?}"
    );
    assert!(error.to_string().contains("max turns exceeded"));
    assert_eq!(seen.model_calls, 3);
    assert_eq!(fake.unexpected(), 0);
    // The tools ran, so history keeps them and says how the turn ended.
    let last = agent.history().messages().last().map(|m| m.content.clone());
    assert!(last.unwrap_or_default().contains("max turns exceeded"));
}

#[test]
fn a_tool_that_was_not_advertised_is_refused_before_it_runs() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "touch pwned"}), 10, 1),
        call("delete_everything", json!({}), 10, 1),
        answer("ok", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    turn(&mut agent, "go").0.expect("turn");
    assert!(!project.path("pwned").exists());
    let results = tool_messages(&fake.chat_bodies()[2]);
    let first = results[0]["content"].as_str().unwrap_or("");
    assert!(first.contains("not available in this session"), "{first}");
    assert!(first.contains("allowed_commands"), "{first}");
    assert!(first.contains("Do not call it again"), "{first}");
    let second = results[1]["content"].as_str().unwrap_or("");
    assert!(
        second.contains("no tool named `delete_everything`"),
        "{second}"
    );
}

#[test]
fn disabled_tools_are_neither_advertised_nor_run() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        call("search_text", json!({"pattern": "hello"}), 10, 1),
        answer("ok", 10, 1),
    ]);
    let config = Config {
        disabled_tools: vec!["search_text".into()],
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    turn(&mut agent, "go").0.expect("turn");
    let bodies = fake.chat_bodies();
    assert!(!bodies[0]["tools"].to_string().contains("search_text"));
    let result = &tool_messages(&bodies[1])[0];
    assert!(
        result["content"]
            .as_str()
            .unwrap_or("")
            .contains("disabled_tools"),
        "{result}"
    );
}

#[test]
fn the_third_identical_call_in_a_turn_is_refused() {
    let project = greet_project();
    let same = json!({"path": "greet.go", "start": 1, "end": 2});
    // The same call with numbers written as strings still counts as the same.
    let as_strings = json!({"path": "greet.go", "start": "1", "end": "2"});
    let fake = FakeOllama::start(vec![
        call("view_slice", same.clone(), 10, 1),
        call("view_slice", as_strings, 10, 1),
        call("view_slice", same, 10, 1),
        answer("done", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    let (result, seen) = turn(&mut agent, "look");
    result.expect("turn");
    assert_eq!(seen.executed.len(), 3);
    let results = tool_messages(&fake.chat_bodies()[3]);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("package greet")
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap_or("")
            .contains("package greet")
    );
    let third = results[2]["content"].as_str().unwrap_or("");
    assert!(
        third.starts_with("Refused: you already called view_slice"),
        "{third}"
    );
}

#[test]
fn tool_failures_go_back_to_the_model_as_text() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "../outside", "start": 1, "end": 2}),
            10,
            1,
        ),
        call("view_slice", json!({"path": "greet.go"}), 10, 1),
        answer("sorry", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    turn(&mut agent, "look").0.expect("turn");
    let results = tool_messages(&fake.chat_bodies()[2]);
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("outside"),
        "{results:?}"
    );
    assert!(
        results[1]["content"]
            .as_str()
            .unwrap_or("")
            .contains("start"),
        "{results:?}"
    );
}

// ---- The faults of ollama-api.md section 9 ----

#[test]
fn tool_calls_only_on_the_done_chunk_are_run() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text("Let me look."),
            done_with_calls(&[("find_symbol", json!({"symbol": "Greet"}))], 10, 2),
        ]),
        answer("In greet.go.", 10, 2),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    let (result, seen) = turn(&mut agent, "where is Greet?");
    assert_eq!(result.expect("turn").answer, "In greet.go.");
    assert_eq!(seen.executed, ["find_symbol"]);
}

#[test]
fn string_encoded_arguments_and_missing_ids_are_accepted() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls_without_ids(&[
                ("find_symbol", json!("{\"symbol\":\"Greet\"}")),
                ("list_files", json!({"pattern": "*.go"})),
            ]),
            done(10, 2),
        ]),
        answer("ok", 10, 2),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    turn(&mut agent, "go").0.expect("turn");
    let second = &fake.chat_bodies()[1];
    let calls = &second["messages"][2]["tool_calls"];
    // Arguments go back as an object (Ollama rejects strings), with ids metron made up.
    assert_eq!(
        calls[0]["function"]["arguments"],
        json!({"symbol": "Greet"})
    );
    let ids: Vec<_> = calls
        .as_array()
        .map(|c| {
            c.iter()
                .map(|c| c["id"].as_str().unwrap_or("").to_owned())
                .collect()
        })
        .unwrap_or_default();
    assert_eq!(ids.len(), 2);
    assert!(
        ids.iter().all(|id| !id.is_empty()) && ids[0] != ids[1],
        "{ids:?}"
    );
    let results = tool_messages(second);
    assert_eq!(results[0]["tool_call_id"].as_str(), Some(ids[0].as_str()));
    assert!(
        results[0]["content"]
            .as_str()
            .unwrap_or("")
            .contains("greet.go:4")
    );
}

fn failing_turn(
    replies: Vec<Reply>,
    timeout_seconds: u64,
) -> (OllamaError, Agent<Client>, FakeOllama) {
    let project = greet_project();
    let fake = FakeOllama::start(replies);
    let config = Config {
        timeout_seconds,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    let (result, _) = turn(&mut agent, "hello?");
    match result {
        Err(TurnError::Model(e)) => (e, agent, fake),
        other => panic!("expected a model error, got {other:?}"),
    }
}

#[test]
fn an_error_line_mid_stream_fails_the_turn_and_the_session_survives() {
    let (error, mut agent, fake) = failing_turn(
        vec![
            Reply::Stream(vec![
                text("Partial"),
                error_line("an error was encountered while running the model: unexpected EOF"),
            ]),
            answer("second try works", 10, 1),
        ],
        5,
    );
    assert!(
        matches!(error, OllamaError::MidStream(ref m) if m.contains("unexpected EOF")),
        "{error:?}"
    );
    // No tool ran, so the failed turn is undone and the next turn starts clean.
    assert_eq!(agent.history().messages().len(), 1);
    let (result, _) = turn(&mut agent, "again");
    assert_eq!(result.expect("second turn").answer, "second try works");
    assert_eq!(
        fake.chat_bodies()[1]["messages"].as_array().map(Vec::len),
        Some(2)
    );
}

#[test]
fn a_stream_cut_before_done_is_an_error() {
    for ending in [Chunk::End, Chunk::Drop] {
        let (error, _, _) = failing_turn(vec![Reply::Stream(vec![text("Half an ans"), ending])], 5);
        assert!(matches!(error, OllamaError::Truncated), "{error:?}");
        assert!(
            error
                .to_string()
                .contains("the server never marked it done")
        );
    }
}

#[test]
fn a_silent_server_trips_the_watchdog_and_the_session_survives() {
    let started = Instant::now();
    // (The clock includes setting up the project and the fake, so the bound is loose;
    // without the watchdog the turn would hang for the server's 60 s.)
    let (error, mut agent, _fake) = failing_turn(
        vec![
            Reply::Stream(vec![text("Thinking about it"), Chunk::Hang]),
            answer("back", 10, 1),
        ],
        1,
    );
    let waited = started.elapsed();
    assert!(
        matches!(error, OllamaError::IdleTimeout { seconds: 1, .. }),
        "{error:?}"
    );
    assert!(error.to_string().contains("timeout_seconds"));
    assert!(waited < Duration::from_secs(20), "{waited:?}");
    assert_eq!(
        turn(&mut agent, "still there?").0.expect("turn").answer,
        "back"
    );
}

#[test]
fn a_slow_reply_that_keeps_producing_is_never_cut() {
    let project = greet_project();
    let mut chunks = Vec::new();
    for i in 0..8 {
        chunks.push(text(&format!("{i} ")));
        chunks.push(Chunk::Pause(Duration::from_millis(500)));
    }
    chunks.push(done(10, 8));
    let fake = FakeOllama::start(vec![Reply::Stream(chunks)]);
    let config = Config {
        timeout_seconds: 3,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    // 4 s in all, more than the 3 s watchdog, but never more than 0.5 s of silence: the
    // watchdog must not fire (and a stall of a loaded machine has 2.5 s of slack).
    let (result, _) = turn(&mut agent, "count slowly");
    assert_eq!(result.expect("turn").answer, "0 1 2 3 4 5 6 7 ");
}

#[test]
fn http_errors_become_actionable_messages() {
    let cases: Vec<(Reply, &str)> = vec![
        (
            Reply::Error(404, "model 'qwen2.5-coder:32b' not found".into()),
            "ollama pull qwen2.5-coder:32b",
        ),
        (
            Reply::Error(
                400,
                "registry.ollama.ai/library/qwen2.5-coder:32b does not support tools".into(),
            ),
            "does not support tools, so it cannot drive metron",
        ),
        (
            Reply::Error(
                503,
                "server busy, please try again.  maximum pending requests exceeded".into(),
            ),
            "busy",
        ),
        (
            Reply::Error(
                500,
                "error parsing tool call: raw='{', err=unexpected end of JSON input".into(),
            ),
            "HTTP 500: error parsing tool call",
        ),
    ];
    for (reply, expected) in cases {
        let (error, _, _) = failing_turn(vec![reply], 5);
        assert!(error.to_string().contains(expected), "{error}");
    }
}

#[test]
fn connection_refused_names_the_url_and_suggests_ollama_serve() {
    let project = greet_project();
    let url = refused_url();
    let mut agent = agent(&project, &config_for(&url));
    let (result, _) = turn(&mut agent, "hello?");
    let message = result.expect_err("refused").to_string();
    assert!(message.contains(&url), "{message}");
    assert!(message.contains("ollama serve"), "{message}");
}

#[test]
fn stream_false_works_too() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Json(json!({
            "model": "qwen2.5-coder:32b", "created_at": "2026-03-01T10:00:01.5Z",
            "message": {"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "find_symbol", "arguments": {"symbol": "Greet"}}}]},
            "done": true, "done_reason": "stop", "prompt_eval_count": 50, "eval_count": 7
        })),
        Reply::Json(json!({
            "model": "qwen2.5-coder:32b", "created_at": "2026-03-01T10:00:02Z",
            "message": {"role": "assistant", "content": "greet.go:4"},
            "done": true, "done_reason": "stop", "prompt_eval_count": 60, "eval_count": 3
        })),
    ]);
    let config = Config {
        stream: false,
        ..config_for(&fake.base_url())
    };
    let mut agent = agent(&project, &config);
    let (result, seen) = turn(&mut agent, "where?");
    let report = result.expect("turn");
    assert_eq!(report.answer, "greet.go:4");
    assert_eq!(seen.executed, ["find_symbol"]);
    assert_eq!(report.generated_tokens, 10);
    assert!(fake.chat_bodies().iter().all(|b| b["stream"] == false));
}

#[test]
fn calls_split_over_several_chunks_are_all_run_in_order() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls(&[("list_files", json!({"pattern": "*.go"}))]),
            tool_calls(&[("find_symbol", json!({"symbol": "Greet"}))]),
            done_with_calls(&[("search_text", json!({"pattern": "hello"}))], 10, 3),
        ]),
        answer("ok", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    let (_, seen) = turn(&mut agent, "go");
    assert_eq!(seen.executed, ["list_files", "find_symbol", "search_text"]);
}

/// Every tool call id in `body`'s messages, and each tool result's id paired with the id
/// of the call it should answer (the n-th call of the latest assistant message).
fn call_ids(body: &Value) -> (Vec<String>, Vec<(String, String)>) {
    let mut ids = Vec::new();
    let mut pairs = Vec::new();
    let mut pending: Vec<String> = Vec::new();
    for m in body["messages"].as_array().cloned().unwrap_or_default() {
        if let Some(calls) = m["tool_calls"].as_array() {
            pending = calls
                .iter()
                .map(|c| c["id"].as_str().unwrap_or("").to_owned())
                .collect();
            ids.extend(pending.iter().cloned());
            pending.reverse();
        }
        if m["role"] == "tool" {
            let id = m["tool_call_id"].as_str().unwrap_or("").to_owned();
            pairs.push((id, pending.pop().unwrap_or_default()));
        }
    }
    (ids, pairs)
}

#[test]
fn a_server_that_reuses_one_call_id_across_replies_still_gets_unique_ids() {
    let project = greet_project();
    let same_id = |name: &str, args: Value| {
        Reply::Stream(vec![
            message_chunk(json!({"role": "assistant", "content": "", "tool_calls": [
                {"id": "call_0", "function": {"index": 0, "name": name, "arguments": args}}]})),
            done(10, 1),
        ])
    };
    let fake = FakeOllama::start(vec![
        same_id("find_symbol", json!({"symbol": "Greet"})),
        same_id("list_files", json!({})),
        answer("ok", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    turn(&mut agent, "go").0.expect("turn");
    let (ids, pairs) = call_ids(&fake.chat_bodies()[2]);
    assert_eq!(ids.len(), 2);
    assert_ne!(ids[0], ids[1], "{ids:?}");
    assert_eq!(pairs.len(), 2);
    for (result, call) in pairs {
        assert_eq!(result, call);
    }
}

#[test]
fn a_server_that_hangs_up_before_answering_is_not_reported_as_unreachable() {
    use std::io::Read;
    // Something accepts the connection and reads the request, then closes without a
    // status line: Ollama crashing while it loads the model. It is reachable, so
    // "start it with `ollama serve`" would send the person the wrong way.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let server = std::thread::spawn(move || {
        if let Ok((mut stream, _)) = listener.accept() {
            let mut buf = [0u8; 65536];
            let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
            let _ = stream.read(&mut buf);
        }
    });
    let project = greet_project();
    let mut agent = agent(&project, &config_for(&url));
    let (result, _) = turn(&mut agent, "hello?");
    let _ = server.join();
    let message = result.expect_err("hung up").to_string();
    assert!(!message.contains("ollama serve"), "{message}");
    assert!(message.contains("log"), "{message}");
    assert_eq!(agent.history().messages().len(), 1);
}

#[test]
fn every_model_error_says_what_to_do_next() {
    let cases = vec![
        Reply::Error(418, "I'm a teapot".into()),
        Reply::Stream(vec![
            text("Par"),
            error_line("llama runner process has terminated"),
        ]),
        Reply::Raw(
            200,
            "application/x-ndjson",
            "<html>proxy says no</html>\n".into(),
        ),
    ];
    for reply in cases {
        let (error, _, _) = failing_turn(vec![reply], 5);
        let message = error.to_string();
        let next = message.rsplit(';').next().unwrap_or("");
        assert!(
            ["try", "check", "run", "raise", "point"]
                .iter()
                .any(|verb| next.contains(verb)),
            "no next step in: {message}"
        );
    }
}

#[test]
fn an_interrupted_turn_leaves_history_valid_at_either_await_point() {
    let project = greet_project();
    let fake = FakeOllama::start(vec![
        // Turn 1: interrupted while waiting for the first reply.
        Reply::Stream(vec![text("Let me"), Chunk::Hang]),
        // Turn 2: a tool runs, then interrupted while waiting for the next reply.
        call("find_symbol", json!({"symbol": "Greet"}), 10, 1),
        Reply::Stream(vec![Chunk::Hang]),
        answer("fine", 10, 1),
    ]);
    let mut agent = agent(&project, &config_for(&fake.base_url()));
    let rt = runtime();
    // Cuts the turn once `hangs` replies in all have reached their hang (so the request
    // is in, its reply has started arriving, and the turn is waiting at the await point
    // under test), however slow the machine is.
    let cut = |agent: &mut Agent<Client>, line: &str, hangs: usize| {
        let mut seen = Seen::default();
        let finished = rt.block_on(async {
            tokio::select! {
                _ = agent.turn(line, &mut seen) => true,
                () = async {
                    let deadline = Instant::now() + Duration::from_secs(20);
                    let hanging = || fake.wait_for_hangs(hangs, Duration::ZERO);
                    while !hanging() && Instant::now() < deadline {
                        tokio::time::sleep(Duration::from_millis(5)).await;
                    }
                } => false,
            }
        });
        assert!(!finished, "the turn should still be running");
        agent.interrupted(&mut Seen::default());
    };
    use metron::ollama::wire::Role;
    cut(&mut agent, "first", 1);
    // Nothing ran: the question stays, closed by a note, so "go on" means something.
    let messages = agent.history().messages();
    let roles: Vec<_> = messages.iter().map(|m| m.role).collect();
    assert_eq!(roles, [Role::System, Role::User, Role::Assistant]);
    assert_eq!(messages[1].content, "first");
    assert!(messages[2].content.contains("cancelled"), "{messages:?}");
    cut(&mut agent, "second", 2);
    let roles: Vec<_> = agent.history().messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert!(
        agent.history().messages()[6]
            .content
            .contains("interrupted")
    );
    // The same runtime as before: the client's pooled connections are driven by it.
    let third = rt.block_on(agent.turn("third", &mut Seen::default()));
    assert_eq!(third.expect("turn").answer, "fine");
    let (ids, pairs) = call_ids(&fake.chat_bodies()[3]);
    assert_eq!(ids.len(), 1);
    assert!(pairs.iter().all(|(result, call)| result == call));
}

// ---------------------------------------------------------------------------------------
// The agent loop's events, against a scripted model
// ---------------------------------------------------------------------------------------

/// The loop's events and ledger, with a model that answers from a script instead of the
/// fake server (its own module: `Reply` here is the client's, not the fake's).
mod scripted {
    use std::collections::VecDeque;
    use std::future::Future;
    use std::sync::Mutex;
    use std::time::Duration;

    use metron::agent::{Agent, CallOutcome, Event, Observer, Settings, TurnStatus};
    use metron::authority::approval::{ApproveAll, Approver, Decision, Request};
    use metron::config::Config;
    use metron::ollama::wire::{ChatRequest, FunctionCall, ToolCall};
    use metron::ollama::{Delta, OllamaError, Reply};
    use metron::tools::Budgets;
    use serde_json::json;

    use super::super::common::TestProject;
    use super::super::preconditions::{lines, read, top_patch};

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
            usage_missing: false,
            generated_tokens: 10,
            cached_tokens: None,
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

        fn turn_ends(&self) -> Vec<TurnStatus> {
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
        assert_eq!(run(vec![reply("done", vec![])], 5), [TurnStatus::Ok]);
        assert_eq!(run(vec![model_error()], 5), [TurnStatus::Error]);
        assert_eq!(
            run(vec![reply("", vec![view()]), model_error()], 5),
            [TurnStatus::Error]
        );
        assert_eq!(
            run(vec![reply("", vec![view()]), reply("", vec![view()])], 2),
            [TurnStatus::Error]
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
            assert_eq!(
                events.turn_ends(),
                [TurnStatus::Error],
                "{:?}",
                events.kinds()
            );
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
        assert_eq!(result, Some(CallOutcome::Fault));
        assert_eq!(read(&p, "a.txt"), lines(3), "nothing was written");
        let entry = &agent.ledger().entries()[0];
        assert_eq!(entry.outcome, CallOutcome::Fault);
        assert!(entry.effects.is_empty(), "{entry:?}");
        assert!(
            entry.reported.contains("apply_patch failed"),
            "{}",
            entry.reported
        );
    }
}
