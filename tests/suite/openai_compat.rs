//! OpenAI-compatible servers (llama-server, LM Studio, vLLM, Ollama's `/v1`) through the
//! real binary: an endpoint ending in `/v1` speaks Chat Completions, and each server's
//! quirks are handled the way the person and the model need. One test per quirk, against
//! the fake server in its OpenAI mode.

use std::path::Path;

use serde_json::{Value, json};

use super::common::{Run, TestProject, events_of_type, greet_project, json_events, metron};
use super::disclosure::{loopback_alias, notices, with_user_file};
use super::fake_ollama::{FakeOllama, OpenAiMode, Reply};
use super::fake_openai::{
    delta_text, done_event, event, finish, openai_answer, openai_builder, openai_call_split,
    openai_error, start_openai, usage, v1,
};

/// `metron -p "where is Greet?" --json` at the fake's `/v1`, with `env` set.
fn ask(p: &TestProject, fake: &FakeOllama, env: &[(&str, &str)]) -> (Run, Vec<Value>) {
    let mut run = metron(p.root())
        .args(["-p", "where is Greet?", "--json"])
        .env("OLLAMA_HOST", v1(fake));
    for (key, value) in env {
        run = run.env(key, value);
    }
    json_events(run.run())
}

fn greet_call(pieces: usize) -> Reply {
    openai_call_split(
        "call_v1",
        "find_symbol",
        &json!({"symbol": "Greet"}),
        pieces,
    )
}

#[test]
fn arguments_split_over_many_chunks_make_one_call_sent_back_as_a_string() {
    let p = greet_project();
    let fake = start_openai(vec![greet_call(7), openai_answer("In greet.go.", 400, 5)]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let proposed = events_of_type(&events, "tool_proposed");
    assert_eq!(proposed.len(), 1, "{events:#?}");
    assert_eq!(proposed[0]["arguments"], json!({"symbol": "Greet"}));
    assert_eq!(proposed[0]["call_id"], "call_v1");
    let start = &events_of_type(&events, "session_start")[0];
    assert_eq!(start["server_kind"], "openai");

    let requests = fake.chat_requests();
    assert_eq!(requests.len(), 2);
    assert!(requests.iter().all(|r| r.path == "/v1/chat/completions"));
    let first = &requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(first["cache_prompt"], true);
    assert!(
        first["max_tokens"].as_u64().is_some_and(|n| n > 0),
        "{first}"
    );
    assert!(first.get("options").is_none() && first.get("tool_choice").is_none());
    assert!(first["tools"].as_array().is_some_and(|t| !t.is_empty()));

    let second = &requests[1].body;
    let assistant = &second["messages"][2];
    assert_eq!(assistant["role"], "assistant");
    assert_eq!(assistant["tool_calls"][0]["id"], "call_v1");
    assert_eq!(assistant["tool_calls"][0]["type"], "function");
    let arguments = assistant["tool_calls"][0]["function"]["arguments"]
        .as_str()
        .expect("arguments go back as a JSON string");
    assert_eq!(
        serde_json::from_str::<Value>(arguments).expect("json"),
        json!({"symbol": "Greet"})
    );
    let tool = &second["messages"][3];
    assert_eq!(tool["role"], "tool");
    assert_eq!(tool["tool_call_id"], "call_v1");
    assert_eq!(
        run.stdout.lines().last().map(|l| l.contains("turn_end")),
        Some(true)
    );
}

#[test]
fn finish_reason_tool_calls_with_a_whole_call_and_no_done_line() {
    // Ollama's `/v1`: the call whole in one delta, then a chunk with only the reason; here
    // the stream ends without `[DONE]`, which a finish_reason makes complete.
    let p = greet_project();
    let call = Reply::Stream(vec![
        event(
            json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": "",
            "tool_calls": [{"id": "call_x", "index": 0, "type": "function",
                "function": {"name": "find_symbol", "arguments": "{\"symbol\":\"Greet\"}"}}]}}]}),
        ),
        finish("tool_calls"),
    ]);
    let fake = start_openai(vec![call, openai_answer("Found.", 10, 2)]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["done_reason"], "tool_calls");
    assert_eq!(replies[0]["tool_calls"], 1);
    assert_eq!(events_of_type(&events, "tool_result").len(), 1);
}

#[test]
fn a_call_written_as_text_in_the_content_is_recovered() {
    let p = greet_project();
    let said = Reply::Stream(vec![
        delta_text("<tool_call>\n{\"name\": \"find_symbol\", "),
        delta_text("\"arguments\": {\"symbol\": \"Greet\"}}\n</tool_call>"),
        finish("stop"),
        done_event(),
    ]);
    let fake = start_openai(vec![said, openai_answer("Greet is in greet.go.", 10, 2)]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("[the model wrote a tool call as text"),
        "{run:?}"
    );
    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["calls_from_text"], 1, "{replies:#?}");
    let body = &fake.chat_bodies()[1];
    assert!(body["messages"][2]["tool_calls"][0]["function"]["arguments"].is_string());
}

#[test]
fn a_reply_without_a_usage_chunk_is_taken_with_counts_unreported() {
    let p = greet_project();
    let reply = Reply::Stream(vec![delta_text("Fine."), finish("stop"), done_event()]);
    let fake = start_openai(vec![reply]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["prompt_tokens"], 0);
    assert!(
        replies[0].get("prompt_cached_tokens").is_none(),
        "{replies:#?}"
    );
    assert!(replies[0].get("prompt_truncated").is_none(), "{replies:#?}");
    assert_eq!(replies[0]["tokens_unreported"], true, "{replies:#?}");
    let footer = metron(p.root())
        .args(["-p", "where is Greet?"])
        .env(
            "OLLAMA_HOST",
            v1(&start_openai(vec![Reply::Stream(vec![
                delta_text("Fine."),
                finish("stop"),
                done_event(),
            ])])),
        )
        .run();
    assert!(
        footer
            .stderr
            .contains("[tokens unknown (the server sent no counts) · 0 tool calls]"),
        "{footer:?}"
    );
}

#[test]
fn finish_reason_length_is_the_output_limit() {
    let p = greet_project();
    let reply = Reply::Stream(vec![delta_text("Greet is"), finish("length"), done_event()]);
    let fake = start_openai(vec![reply]);
    let (run, events) = ask(&p, &fake, &[]);
    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["done_reason"], "length", "{run:?}");
    assert!(run.stderr.contains("max_output_tokens"), "{run:?}");
}

#[test]
fn lm_studios_dummy_key_is_sent_as_a_bearer_key() {
    let p = greet_project();
    let fake = openai_builder()
        .openai(OpenAiMode {
            key: Some("lm-studio".to_owned()),
        })
        .chat(vec![openai_answer("Fine.", 10, 2)])
        .start();
    let (run, _) = ask(&p, &fake, &[("METRON_API_KEY", "lm-studio")]);
    assert_eq!(run.code, 0, "{run:?}");
    let chats = fake.chat_requests();
    assert_eq!(chats[0].header("authorization"), Some("Bearer lm-studio"));
}

#[test]
fn no_key_sends_no_authorization_header() {
    let p = greet_project();
    let fake = start_openai(vec![openai_answer("Fine.", 10, 2)]);
    let (run, _) = ask(&p, &fake, &[("OPENAI_API_KEY", "sk-cloud-not-for-here")]);
    assert_eq!(run.code, 0, "{run:?}");
    for request in fake.requests() {
        assert_eq!(request.header("authorization"), None, "{request:?}");
    }
}

#[test]
fn the_key_never_goes_to_an_endpoint_a_project_file_chose() {
    const KEY: &str = "sk-for-my-own-server";
    let p = greet_project();
    let fake = start_openai(vec![openai_answer("Fine.", 10, 2)]);
    p.file(".metron.json", json!({"endpoint": v1(&fake)}).to_string());
    let run = metron(p.root())
        .args(["-p", "where is Greet?"])
        .env_remove("OLLAMA_HOST")
        .env("METRON_API_KEY", KEY)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!fake.requests().is_empty(), "the project's server was used");
    for request in fake.requests() {
        assert_eq!(request.header("authorization"), None, "{request:?}");
    }
    assert!(
        run.stderr.contains("not sending METRON_API_KEY to")
            && run.stderr.contains("comes from the project's"),
        "{run:?}"
    );
    assert!(!run.stderr.contains(KEY), "{run:?}");
    // The doctor says the same, and sends no key either.
    let asked = fake.requests().len();
    let doctor = metron(p.root())
        .args(["--doctor"])
        .env_remove("OLLAMA_HOST")
        .env("METRON_API_KEY", KEY)
        .run();
    assert!(doctor.stdout.contains("is set but not sent"), "{doctor:?}");
    assert!(fake.requests().len() > asked, "{doctor:?}");
    for request in fake.requests() {
        assert_eq!(request.header("authorization"), None, "{request:?}");
    }
}

#[test]
fn a_server_that_wants_the_withheld_key_says_why_it_was_not_sent() {
    let p = greet_project();
    let fake = openai_builder()
        .openai(OpenAiMode {
            key: Some("sk-mine".to_owned()),
        })
        .chat(vec![openai_answer("Fine.", 10, 2)])
        .start();
    p.file(".metron.json", json!({"endpoint": v1(&fake)}).to_string());
    let run = metron(p.root())
        .args(["-p", "where is Greet?"])
        .env_remove("OLLAMA_HOST")
        .env("METRON_API_KEY", "sk-mine")
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("METRON_API_KEY is set but was not sent: the endpoint comes from the project's .metron.json"),
        "{run:?}"
    );
    // A native Ollama endpoint is never sent a key, so there is nothing to withhold.
    let ollama = FakeOllama::start(vec![super::fake_ollama::answer("Fine.", 10, 2)]);
    p.file(
        ".metron.json",
        json!({"endpoint": ollama.base_url()}).to_string(),
    );
    let run = metron(p.root())
        .args(["-p", "where is Greet?"])
        .env_remove("OLLAMA_HOST")
        .env("METRON_API_KEY", "sk-mine")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains("not sending"), "{run:?}");
}

/// Every file under `dir`, read for `needle`; the files that hold it.
fn files_holding(dir: &Path, needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if std::fs::read(&path)
                .is_ok_and(|bytes| String::from_utf8_lossy(&bytes).contains(needle))
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn the_key_is_never_printed_logged_or_saved() {
    const KEY: &str = "sk-metron-test-K3Y-4711";
    let p = greet_project();
    let fake = openai_builder()
        .openai(OpenAiMode {
            key: Some(KEY.to_owned()),
        })
        .chat(vec![greet_call(3), openai_answer("Found.", 10, 2)])
        .start();
    let run = metron(p.root())
        .args(["-p", "where is Greet?", "--json"])
        .env("OLLAMA_HOST", v1(&fake))
        .env("METRON_API_KEY", KEY);
    let home = run.home().to_path_buf();
    let run = run.run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(fake.chat_requests().len(), 2, "the key was accepted");
    assert!(
        !run.stdout.contains(KEY) && !run.stderr.contains(KEY),
        "{run:?}"
    );
    assert_eq!(files_holding(&home, KEY), Vec::<String>::new());
    assert_eq!(files_holding(p.root(), KEY), Vec::<String>::new());
    // The doctor says whether a key is set, never which.
    let doctor = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", v1(&fake))
        .env("METRON_API_KEY", KEY)
        .run();
    assert!(
        doctor.stdout.contains("METRON_API_KEY is set"),
        "{doctor:?}"
    );
    assert!(!doctor.stdout.contains(KEY) && !doctor.stderr.contains(KEY));
}

#[test]
fn a_401_names_the_key_variable() {
    let p = greet_project();
    let fake = openai_builder()
        .openai(OpenAiMode {
            key: Some("right".to_owned()),
        })
        .start();
    let (run, _) = ask(&p, &fake, &[]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("needs a key (HTTP 401"), "{run:?}");
    assert!(run.stderr.contains("set METRON_API_KEY"), "{run:?}");
    let (run, _) = ask(&p, &fake, &[("METRON_API_KEY", "wrong")]);
    assert!(
        run.stderr.contains("refused the key in METRON_API_KEY"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("wrong"), "{run:?}");
}

#[test]
fn vllms_auto_tool_choice_refusal_says_how_to_start_vllm() {
    let p = greet_project();
    let fake = start_openai(vec![openai_error(
        400,
        json!({"object": "error", "message": "\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set", "type": "BadRequestError", "param": null, "code": 400}),
    )]);
    let (run, _) = ask(&p, &fake, &[]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("start vLLM with `--enable-auto-tool-choice --tool-call-parser NAME`"),
        "{run:?}"
    );
}

#[test]
fn cache_prompt_is_sent_and_the_cached_tokens_are_reported() {
    let p = greet_project();
    let reply = Reply::Stream(vec![
        delta_text("Fine."),
        finish("stop"),
        usage(900, 3, Some(850)),
        done_event(),
    ]);
    let fake = start_openai(vec![reply]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(fake.chat_bodies()[0]["cache_prompt"], true);
    let replies = events_of_type(&events, "model_reply");
    assert_eq!(replies[0]["prompt_tokens"], 900);
    assert_eq!(replies[0]["prompt_cached_tokens"], 850);
    assert_eq!(replies[0]["generated_tokens"], 3);
}

#[test]
fn a_context_length_400_is_a_context_overflow() {
    let p = greet_project();
    let overflow = || {
        openai_error(
            400,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}),
        )
    };
    // Twice: a retry after trimming history meets the same answer.
    let fake = start_openai(vec![overflow(), overflow()]);
    let (run, _) = ask(&p, &fake, &[]);
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("no longer fits the model's context window"),
        "{run:?}"
    );
}

#[test]
fn remote_endpoint_refuse_holds_for_a_v1_endpoint() {
    let p = TestProject::git();
    let json =
        r#"{"endpoint": "http://metron-disclosure.invalid:8080/v1", "remote_endpoint": "refuse"}"#;
    let run = with_user_file(metron(p.root()).args(["-p", "hi"]), json).run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(
        run.stderr.contains("metron-disclosure.invalid:8080") && run.stderr.contains("\"refuse\""),
        "{run:?}"
    );
}

#[test]
fn a_remote_v1_endpoint_is_announced_before_the_first_request() {
    let Some(alias) = loopback_alias() else {
        super::common::skip_live(
            "a_remote_v1_endpoint_is_announced_before_the_first_request",
            "no name in /etc/hosts maps to 127.0.0.1 without being `localhost`",
        );
        return;
    };
    let p = greet_project();
    let fake = start_openai(vec![openai_answer("Fine.", 10, 2)]);
    let port = fake.addr().port();
    let json = format!(r#"{{"endpoint": "http://{alias}:{port}/v1"}}"#);
    let run = with_user_file(metron(p.root()).args(["-p", "hi"]), &json).run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(notices(&run).len(), 1, "{run:?}");
    assert!(
        notices(&run)[0].contains(&format!("{alias}:{port}")),
        "{run:?}"
    );
}

#[test]
fn model_lists_what_the_server_serves_without_claiming_tools() {
    let p = greet_project();
    let fake = openai_builder()
        .model("qwen2.5-coder-7b-instruct", &[], 0)
        .model("gemma-3-270m", &[], 0)
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", v1(&fake))
        .env("OLLAMA_MODEL", "gemma-3-270m")
        .stdin("/model\n/model qwen2.5-coder-7b-instruct\n/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let base = fake.base_url();
    assert!(
        run.stdout.contains(&format!(
            "models served at {base} (an OpenAI-compatible server does not say which support tools):"
        )),
        "{run:?}"
    );
    assert!(run.stdout.contains("* gemma-3-270m (current"), "{run:?}");
    assert!(
        run.stdout.contains("  qwen2.5-coder-7b-instruct\n"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("model: qwen2.5-coder-7b-instruct (was gemma-3-270m)"),
        "{run:?}"
    );
    assert!(run.stdout.contains("server: OpenAI-compatible"), "{run:?}");
    assert!(fake.chat_requests().is_empty());
    assert!(
        fake.requests().iter().all(|r| matches!(
            r.path.as_str(),
            "/v1/models" | "/api/show" | "/props"
        ) || r.path.starts_with("/api/v0/models/")),
        "{:?}",
        fake.requests()
            .iter()
            .map(|r| r.path.clone())
            .collect::<Vec<_>>()
    );
}

#[test]
fn doctor_names_the_kind_and_the_window_llama_server_reports() {
    let p = greet_project();
    let fake = openai_builder()
        .get_json(
            "/props",
            json!({"default_generation_settings": {"n_ctx": 8192}, "total_slots": 1}),
        )
        .start();
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", v1(&fake))
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("an OpenAI-compatible server at"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("it says it runs a context window of 8192 tokens"),
        "{run:?}"
    );
    assert!(run.stdout.contains("METRON_API_KEY is not set"), "{run:?}");
    assert!(run.stdout.contains("qwen2.5-coder:7b is served"), "{run:?}");
    assert!(fake.chat_requests().is_empty());
    assert!(
        !fake.requests().iter().any(|r| r.path == "/api/show"),
        "no /api/show checks"
    );
}

#[test]
fn doctor_reads_lm_studios_loaded_context_length() {
    let p = greet_project();
    let fake = openai_builder()
        .model("qwen/qwen3-4b", &[], 0)
        .get_json(
            "/api/v0/models/qwen%2Fqwen3-4b",
            json!({"id": "qwen/qwen3-4b", "state": "loaded", "max_context_length": 32768, "loaded_context_length": 4096}),
        )
        .start();
    let run = metron(p.root())
        .args(["--doctor", "--model", "qwen/qwen3-4b"])
        .env("OLLAMA_HOST", v1(&fake))
        .run();
    assert!(
        run.stdout
            .contains("it says it runs a context window of 4096 tokens"),
        "{run:?}"
    );
}

#[test]
fn doctor_fails_a_model_the_server_does_not_serve() {
    let p = greet_project();
    let fake = openai_builder().start();
    let run = metron(p.root())
        .args(["--doctor", "--model", "nope"])
        .env("OLLAMA_HOST", v1(&fake))
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("nope (from --model) is not served; it serves qwen2.5-coder:7b"),
        "{run:?}"
    );
}

#[test]
fn an_unreachable_v1_server_is_named_as_the_model_server() {
    let p = greet_project();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let endpoint = format!("http://127.0.0.1:{port}/v1");
    let run = metron(p.root())
        .args(["-p", "hi"])
        .env("OLLAMA_HOST", &endpoint)
        .run();
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains("cannot reach the model server at"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("ollama serve"), "{run:?}");
    let doctor = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", &endpoint)
        .run();
    assert_eq!(doctor.code, 1, "{doctor:?}");
    assert!(doctor.stdout.contains("nothing answers at"), "{doctor:?}");
}

#[test]
fn the_start_up_check_names_a_model_the_server_does_not_serve() {
    let p = greet_project();
    let fake = openai_builder().model("gemma-3-270m", &[], 0).start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", v1(&fake))
        .env("OLLAMA_MODEL", "nope")
        .stdin("/exit\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "metron: the model nope (from $OLLAMA_MODEL) is not served at {}; models served: gemma-3-270m. Switch with /model NAME, or load that model on the server",
            fake.base_url()
        )),
        "{run:?}"
    );
}

#[test]
fn keep_alive_comments_do_not_hold_off_the_idle_watchdog() {
    // llama-server and proxies send `: ping` comments; they are not progress, so a server
    // that sends only those after its first words is cut like a silent one.
    let p = greet_project();
    let mut chunks = vec![delta_text("Thinking")];
    for _ in 0..40 {
        chunks.push(super::fake_ollama::Chunk::Raw(": ping\n\n".to_owned()));
        chunks.push(super::fake_ollama::Chunk::Pause(
            std::time::Duration::from_millis(100),
        ));
    }
    chunks.push(super::fake_ollama::Chunk::Hang);
    let fake = start_openai(vec![Reply::Stream(chunks)]);
    let started = std::time::Instant::now();
    let run = with_user_file(
        metron(p.root())
            .args(["-p", "hi"])
            .env("OLLAMA_HOST", v1(&fake)),
        r#"{"timeout_seconds": 1}"#,
    )
    .run();
    assert_ne!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("silent for 1 s in the middle of the reply"),
        "{run:?}"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
}

/// A fake llama-server whose `/props` says it runs a window of `n_ctx` tokens.
fn llama_server_with_window(n_ctx: u64, replies: Vec<Reply>) -> FakeOllama {
    openai_builder()
        .get_json(
            "/props",
            json!({"default_generation_settings": {"n_ctx": n_ctx}, "total_slots": 1}),
        )
        .chat(replies)
        .start()
}

#[test]
fn the_servers_own_window_is_the_sessions_window_whatever_num_ctx_says() {
    let p = greet_project();
    let fake = llama_server_with_window(2048, vec![openai_answer("It is in greet.go.", 50, 5)]);
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let start = events_of_type(&events, "session_start");
    // The configured num_ctx (16384 by default) cannot change a window the server fixed.
    assert_eq!(start[0]["num_ctx"], 2048, "{start:?}");
}

#[test]
fn an_overflow_on_a_v1_server_is_trimmed_and_asked_once_more() {
    let p = greet_project();
    let text: String = (1..=150)
        .map(|n| format!("line {n:04} of a long file\n"))
        .collect();
    p.file("a.txt", text);
    // The first turn reads a file; the second turn's request no longer fits.
    let overflow = openai_error(
        400,
        json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}),
    );
    let read = openai_call_split(
        "call_v1",
        "view_slice",
        &json!({"path": "a.txt", "start": 1, "end": 150}),
        3,
    );
    let fake = start_openai(vec![
        read,
        openai_answer("A read.", 50, 5),
        overflow,
        openai_answer("Second.", 50, 5),
    ]);
    // The slice is kept after its turn, so there is an old tool result to drop.
    let run = with_user_file(
        metron(p.root()),
        r#"{"compact_threshold_bytes": 1000000, "max_slice_lines": 200}"#,
    )
    .env("OLLAMA_HOST", v1(&fake))
    .stdin("read a\nsecond question\n")
    .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Second."), "{run:?}");
    assert!(run.stderr.contains("asked again"), "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4, "the refused request is sent once more");
    let (refused, retried) = (&bodies[2], &bodies[3]);
    // The retry kept the system message byte for byte, dropped the old file slice, and
    // sent less.
    assert_eq!(retried["messages"][0], refused["messages"][0]);
    assert!(refused.to_string().contains("line 0150"));
    assert!(!retried.to_string().contains("line 0150"), "{retried:#}");
    assert!(retried.to_string().len() < refused.to_string().len());
}

#[test]
fn a_second_overflow_in_the_servers_own_window_says_to_restart_the_server() {
    let p = greet_project();
    let overflow = || {
        openai_error(
            400,
            json!({"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": 5000, "n_ctx": 4096}}),
        )
    };
    let fake = llama_server_with_window(4096, vec![overflow(), overflow()]);
    let (run, _) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains("the model server's own window")
            && run
                .stderr
                .contains("restart the model server with a larger context window"),
        "{run:?}"
    );
    assert!(!run.stderr.contains("raise `num_ctx`"), "{run:?}");
}

#[test]
fn doctor_fails_a_server_window_too_small_for_the_fixed_prompt() {
    let p = greet_project();
    let fake = llama_server_with_window(512, Vec::new());
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", v1(&fake))
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .contains("the model server's own context window of 512 tokens"),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("restart the model server with a context window of"),
        "{run:?}"
    );
}

#[test]
fn llama_servers_own_api_show_does_not_hide_its_window() {
    let p = greet_project();
    // llama-server answers `/api/show` for Ollama clients: a 200 with the trained length
    // and no architecture. Its `/props` window still decides.
    let fake = openai_builder()
        .post_json(
            "/api/show",
            json!({"model_info": {"llama.context_length": 131072}, "capabilities": ["completion"]}),
        )
        .get_json(
            "/props",
            json!({"default_generation_settings": {"n_ctx": 3072}, "total_slots": 1}),
        )
        .chat(vec![openai_answer("It is in greet.go.", 50, 5)])
        .start();
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let start = events_of_type(&events, "session_start");
    assert_eq!(start[0]["num_ctx"], 3072, "{start:?}");
}

#[test]
fn lm_studios_200_to_an_unknown_route_does_not_hide_its_window() {
    let p = greet_project();
    let fake = openai_builder()
        .post_json(
            "/api/show",
            json!({"error": "Unexpected endpoint or method. (POST /api/show)"}),
        )
        .get_json(
            &format!("/api/v0/models/{}", super::fake_ollama::DEFAULT_MODEL),
            json!({"id": super::fake_ollama::DEFAULT_MODEL, "state": "loaded", "loaded_context_length": 5120, "max_context_length": 32768}),
        )
        .chat(vec![openai_answer("It is in greet.go.", 50, 5)])
        .start();
    let (run, events) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 0, "{run:?}");
    let start = events_of_type(&events, "session_start");
    assert_eq!(start[0]["num_ctx"], 5120, "{start:?}");
}

#[test]
fn an_overflow_on_a_server_that_hides_its_window_never_says_raise_num_ctx() {
    let p = greet_project();
    let overflow = || {
        openai_error(
            400,
            json!({"error": {"message": "This model's maximum context length is 4096 tokens. However, you requested 9000 tokens.", "type": "BadRequestError", "code": 400}}),
        )
    };
    // vLLM: no `/props`, no LM Studio model info; the window is only assumed.
    let fake = start_openai(vec![overflow(), overflow()]);
    let (run, _) = ask(&p, &fake, &[]);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(
            "restart the model server with a larger context window and set `num_ctx` to match"
        ),
        "{run:?}"
    );
    assert!(!run.stderr.contains("raise `num_ctx`"), "{run:?}");
}

#[test]
fn an_overflow_from_the_replys_share_alone_trims_nothing_and_names_max_output_tokens() {
    let p = greet_project();
    // vLLM with `--max-model-len 4096` and `max_output_tokens` 4096: the messages are
    // small, and no trim can make room.
    let refusal = openai_error(
        400,
        json!({"object": "error", "message": "This model's maximum context length is 4096 tokens. However, you requested 4896 tokens (800 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.", "type": "BadRequestError", "code": 400}),
    );
    let fake = start_openai(vec![
        greet_call(2),
        openai_answer("In greet.go.", 50, 5),
        refusal,
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", v1(&fake))
        .stdin("where is Greet?\nand again?\n")
        .run();
    assert!(run.stdout.contains("In greet.go."), "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 3, "no retry: {run:?}");
    assert!(!run.stderr.contains("asked again"), "{run:?}");
    assert!(
        run.stderr.contains("lower `max_output_tokens`")
            && run.stderr.contains("no trim or /reset helps"),
        "{run:?}"
    );
}

#[test]
fn a_prompt_past_num_ctx_on_a_v1_server_is_not_called_cut() {
    let p = greet_project();
    // vLLM run with a larger window than metron assumes: it takes the whole prompt and
    // says so. Only Ollama cuts silently to a num_ctx metron set.
    let fake = start_openai(vec![openai_answer("Read it all.", 4000, 5)]);
    let prompt = "x".repeat(15_000);
    let run = metron(p.root())
        .args(["-p", &prompt, "--json", "--set", "num_ctx=2048"])
        .env("OLLAMA_HOST", v1(&fake))
        .run();
    let (run, events) = json_events(run);
    assert_eq!(run.code, 0, "{run:?}");
    let replies = events_of_type(&events, "model_reply");
    assert!(replies[0].get("prompt_truncated").is_none(), "{replies:#?}");
    assert!(!run.stderr.contains("probably cut"), "{run:?}");
}

#[test]
fn model_asks_lm_studio_for_the_new_models_own_window() {
    let p = greet_project();
    let model_info = |id: &str, loaded: u64| json!({"id": id, "state": "loaded", "loaded_context_length": loaded, "max_context_length": 131072});
    let fake = openai_builder()
        .model("qwen/qwen3-4b", &[], 0)
        .get_json(
            &format!("/api/v0/models/{}", super::fake_ollama::DEFAULT_MODEL),
            model_info(super::fake_ollama::DEFAULT_MODEL, 4096),
        )
        .get_json(
            "/api/v0/models/qwen%2Fqwen3-4b",
            model_info("qwen/qwen3-4b", 32768),
        )
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", v1(&fake))
        .stdin("/model qwen/qwen3-4b\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("context 32768 tokens (the model server's own window"),
        "{run:?}"
    );
}
