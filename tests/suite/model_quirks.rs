//! What small models and Ollama do wrong, through the real binary.
//!
//! Tool calls written as reply text (fault 11 of the Ollama notes) are recovered into
//! proper calls, pass the same policy and approval as any other, and history carries them
//! as calls so the next request is well formed. A prompt Ollama silently cut to fit
//! `num_ctx` (fault 9) is noticed and reported. Numbers sent as strings (14) and a
//! `<think>` block in the text (15) are taken for what they mean.

use serde_json::{Value, json};

use super::common::{GREET_GO, greet_patch, greet_project, tool_messages};
use super::common::{Metron, Run, TestProject, events_of_type, json_events, metron};
use super::fake_ollama::{FakeOllama, Reply, answer, call, done, text};

fn oneshot_json(p: &TestProject, fake: &FakeOllama, extra: &[&str]) -> (Run, Vec<Value>) {
    json_events(
        metron(p.root())
            .args(["-p", "where is Greet?", "--json"])
            .args(extra)
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    )
}

/// A streamed reply whose text is `pieces`, with no `tool_calls` anywhere.
fn said(pieces: &[&str]) -> Reply {
    let mut chunks: Vec<_> = pieces.iter().map(|p| text(p)).collect();
    chunks.push(done(200, 30));
    Reply::Stream(chunks)
}

#[test]
fn a_tagged_call_split_across_chunks_runs_and_history_carries_it_as_a_call() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        said(&[
            "Let me look.\n<tool_",
            "call>\n{\"name\": \"find_symbol\", \"arguments\": {\"symbol\": ",
            "\"Greet\"}}\n</tool_call>",
        ]),
        answer("Greet is in greet.go at line 4.", 300, 9),
    ]);
    let (run, events) = oneshot_json(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("[the model wrote a tool call as text; metron treats it as a request"),
        "{run:?}"
    );
    assert!(run.stderr.contains("[executing: find_symbol]"), "{run:?}");

    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["tool_calls"], 1, "{replies:#?}");
    assert_eq!(replies[0]["calls_from_text"], 1, "{replies:#?}");
    assert!(replies[1].get("calls_from_text").is_none(), "{replies:#?}");
    let proposed = events_of_type(&events, "tool_proposed");
    assert_eq!(proposed[0]["tool"], "find_symbol");
    assert_eq!(proposed[0]["arguments"], json!({"symbol": "Greet"}));
    let results = events_of_type(&events, "tool_result");
    assert_eq!(results.len(), 1, "{events:#?}");

    // The second request: the assistant message holds the call (and only the prose
    // around it), and the tool result answers that call's id.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let assistant = &bodies[1]["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["content"], "Let me look.");
    let calls = assistant["tool_calls"].as_array().expect("tool_calls");
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0]["function"]["name"], "find_symbol");
    let tools = tool_messages(&bodies[1]);
    assert_eq!(tools.len(), 1);
    assert_eq!(tools[0]["tool_name"], "find_symbol");
    assert_eq!(tools[0]["tool_call_id"], calls[0]["id"]);
    assert!(
        tools[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("greet.go:4")),
        "{tools:#?}"
    );
}

#[test]
fn a_patch_written_as_bare_json_still_needs_approval() {
    let p = greet_project();
    let patch = json!({"name": "apply_patch", "arguments": {"diff": greet_patch()}}).to_string();
    let fake = FakeOllama::start(vec![
        said(&[&patch]),
        answer("The patch needs --yes.", 300, 9),
    ]);
    let (run, events) = oneshot_json(&p, &fake, &[]);
    // Refused for want of --yes: the patch did not land, exit 3.
    assert_eq!(run.code, 3, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO,
        "nothing written without --yes"
    );
    assert_eq!(
        events_of_type(&events, "model_reply")[0]["calls_from_text"],
        1
    );
    assert!(events_of_type(&events, "effect").is_empty(), "{events:#?}");
    let bodies = fake.chat_bodies();
    let tools = tool_messages(&bodies[1]);
    let result = tools[0]["content"].as_str().unwrap_or_default();
    assert!(result.starts_with("Not applied:"), "{result}");
}

#[test]
fn prose_that_shows_json_is_an_answer_not_a_call() {
    let p = TestProject::git();
    p.file("greet.go", GREET_GO);
    let shown = "Use this shape: {\"name\": \"find_symbol\", \"arguments\": {\"symbol\": \"X\"}}";
    for reply in [shown, "{\"name\": \"Ada\", \"arguments\": {\"age\": 36}}"] {
        let fake = FakeOllama::start(vec![said(&[reply])]);
        let (run, events) = oneshot_json(&p, &fake, &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            events_of_type(&events, "tool_proposed").is_empty(),
            "{events:#?}"
        );
        assert!(!run.stderr.contains("as text"), "{run:?}");
        let end = events_of_type(&events, "turn_end");
        assert_eq!(end[0]["status"], "ok", "{end:#?}");
        assert_eq!(end[0]["answer"], reply, "{end:#?}");
        assert_eq!(fake.chat_bodies().len(), 1);
    }
}

/// The natural answer to "show me example.json" is the file itself: when that file holds a
/// call's JSON, the reply reproduces a tool result the model was shown, so it is a quote
/// and the turn ends with it as the answer (it once ran as a call).
#[test]
fn a_reply_quoting_a_file_the_model_read_is_an_answer_not_a_call() {
    let p = TestProject::git();
    let example = "{\n  \"name\": \"find_symbol\",\n  \"arguments\": {\"symbol\": \"Greet\"}\n}\n";
    p.file("example.json", example);
    p.file("greet.go", GREET_GO);
    for reply in [
        example.to_owned(),
        format!("<tool_call>{example}</tool_call>"),
    ] {
        let fake = FakeOllama::start(vec![
            call(
                "view_slice",
                json!({"path": "example.json", "start": 1, "end": 4}),
                100,
                5,
            ),
            said(&[&reply]),
            answer("(a second call was run)", 300, 9),
        ]);
        let (run, events) = oneshot_json(&p, &fake, &[]);
        assert_eq!(run.code, 0, "{run:?}");
        let proposed = events_of_type(&events, "tool_proposed");
        assert_eq!(proposed.len(), 1, "only the view_slice: {events:#?}");
        assert_eq!(proposed[0]["tool"], "view_slice");
        assert!(!run.stderr.contains("as text"), "{run:?}");
        let end = events_of_type(&events, "turn_end");
        assert_eq!(end[0]["status"], "ok", "{end:#?}");
        assert_eq!(end[0]["answer"], reply.as_str(), "{end:#?}");
        assert_eq!(fake.chat_bodies().len(), 2, "{run:?}");
    }
}

/// A code fence is how a model shows JSON, so a reply that is one fenced call is an
/// answer (it once ran as a call); the same JSON unfenced is still recovered.
#[test]
fn fenced_json_is_an_answer_and_bare_json_a_call() {
    let p = greet_project();
    let json = r#"{"name": "find_symbol", "arguments": {"symbol": "Greet"}}"#;
    let fenced = format!("Here is an example call:\n\n```json\n{json}\n```");
    for reply in [format!("```json\n{json}\n```"), fenced] {
        let fake = FakeOllama::start(vec![said(&[&reply]), answer("(ran)", 300, 9)]);
        let (run, events) = oneshot_json(&p, &fake, &[]);
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            events_of_type(&events, "tool_proposed").is_empty(),
            "{events:#?}"
        );
        let end = events_of_type(&events, "turn_end");
        assert_eq!(end[0]["answer"], reply.as_str(), "{end:#?}");
        assert_eq!(fake.chat_bodies().len(), 1);
    }
    let fake = FakeOllama::start(vec![said(&[json]), answer("Greet is in greet.go.", 300, 9)]);
    let (run, events) = oneshot_json(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let proposed = events_of_type(&events, "tool_proposed");
    assert_eq!(proposed.len(), 1, "{events:#?}");
    assert_eq!(proposed[0]["tool"], "find_symbol");
}

/// `metron -p PROMPT --json` with `num_ctx` set in the user's config, against a model that
/// reports `evaluated` prompt tokens.
fn with_window(num_ctx: u64, prompt: &str, evaluated: u64) -> (Run, Vec<Value>) {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("An answer.", evaluated, 4)]);
    let m = configured(&p, num_ctx);
    json_events(
        m.args(["-p", prompt, "--json"])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    )
}

fn configured(p: &TestProject, num_ctx: u64) -> Metron {
    let m = metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user_file, format!("{{\"num_ctx\": {num_ctx}}}")).expect("write config");
    m
}

#[test]
fn a_prompt_longer_than_the_window_is_reported_as_cut() {
    // 12,000 bytes of prompt alone is over 2,048 tokens at any real tokenizer's rate;
    // Ollama answers 200 and says it evaluated exactly the window.
    let prompt = "explain this log line by line\n".repeat(400);
    let (run, events) = with_window(2048, &prompt, 2048);
    assert_eq!(run.code, 0, "{run:?}");
    let reply = events_of_type(&events, "model_reply")[0];
    let cut = &reply["prompt_truncated"];
    assert_eq!(cut["num_ctx"], 2048, "{reply:#}");
    assert_eq!(cut["evaluated_tokens"], 2048, "{reply:#}");
    assert!(
        cut["estimated_tokens"].as_u64().is_some_and(|t| t > 2400),
        "{reply:#}"
    );
    assert!(
        run.stderr.contains(
            "warning: Ollama probably cut the prompt to fit num_ctx (2048 tokens): metron sent at least"
        ) && run.stderr.contains("/reset, or raise num_ctx"),
        "{run:?}"
    );
    // The 80% warning would only repeat it.
    assert!(
        !run.stderr
            .contains("of num_ctx (2048 tokens); the next turn"),
        "{run:?}"
    );
}

#[test]
fn a_half_window_count_for_a_bigger_prompt_is_reported_as_cut() {
    // About 3,400 tokens at the least fits a 4,096 window, but newer servers cut a prompt
    // they cannot keep whole to half the window and report num_ctx / 2 + 2.
    let prompt = "x".repeat(15_000);
    let (run, events) = with_window(4096, &prompt, 2050);
    assert_eq!(run.code, 0, "{run:?}");
    let reply = events_of_type(&events, "model_reply")[0];
    assert_eq!(
        reply["prompt_truncated"]["evaluated_tokens"], 2050,
        "{reply:#}"
    );
    assert!(run.stderr.contains("probably cut the prompt"), "{run:?}");
}

#[test]
fn ordinary_counts_raise_no_suspicion() {
    for (prompt, evaluated) in [("x".repeat(15_000), 3900), ("where is Greet?".into(), 2050)] {
        let (run, events) = with_window(4096, &prompt, evaluated);
        assert_eq!(run.code, 0, "{run:?}");
        let reply = events_of_type(&events, "model_reply")[0];
        assert!(reply.get("prompt_truncated").is_none(), "{reply:#}");
        assert!(!run.stderr.contains("probably cut"), "{run:?}");
    }
}

#[test]
fn numbers_written_as_strings_are_taken_as_numbers() {
    // Fault 14: Ollama does not check arguments against the schema.
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        super::fake_ollama::call(
            "view_slice",
            json!({"path": "greet.go", "start": "4", "end": "5"}),
            100,
            10,
        ),
        answer("It returns hello.", 200, 5),
    ]);
    let (run, _events) = oneshot_json(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let tools = tool_messages(&fake.chat_bodies()[1]);
    let result = tools[0]["content"].as_str().unwrap_or_default();
    assert!(
        result.contains("func Greet() string {") && result.contains("return \"hello\""),
        "{result}"
    );
}

#[test]
fn a_think_block_in_the_text_is_reasoning_not_answer() {
    // Fault 15: older servers leave `<think>...</think>` at the head of the content.
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        said(&[
            "<think>\nFind it first.\n</think>\n",
            "<tool_call>{\"name\": \"find_symbol\", \"arguments\": {\"symbol\": \"Greet\"}}</tool_call>",
        ]),
        said(&["<think>Found it.</think>\n\nGreet is in greet.go at line 4."]),
    ]);
    let run = metron(p.root())
        .args(["-p", "where is Greet?"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Greet is in greet.go at line 4.\n");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "the call after the block was found");
    let assistant = &bodies[1]["messages"][2];
    assert_eq!(assistant["thinking"], "Find it first.", "{assistant:#}");
    assert_eq!(assistant["content"], "", "{assistant:#}");
    assert_eq!(
        assistant["tool_calls"][0]["function"]["name"],
        "find_symbol"
    );
}
