//! The context window as the server runs it, through the real binary and the fake server:
//! `num_ctx` fixed once per session at the smaller of the configured value and the
//! model's trained length, `truncate: false` only for servers that honour it, and a
//! prompt the server refuses as too long trimmed by metron's own policy and sent once
//! more (docs/models.md, "When the conversation no longer fits").

use serde_json::{Value, json};

use super::common::{TestProject, content, metron, roles, user_config};
use super::fake_ollama::{DEFAULT_MODEL, FakeOllama, Reply, answer, call};

/// What the fake answers when a prompt does not fit: llama.cpp's wording, with the sizes.
const OVERFLOW: &str = "request (1100 tokens) exceeds the available context size (1000 tokens)";

/// A project with two files of `lines` numbered lines each, in git.
fn two_files(lines: usize) -> TestProject {
    let p = TestProject::git();
    let body: String = (1..=lines)
        .map(|n| format!("line {n:04} of a file that fills the context window\n"))
        .collect();
    p.file("a.txt", &body);
    p.file("b.txt", &body);
    p
}

/// Asserts that no two messages of the person's or of the model's follow each other, and
/// that none of the person's follows a tool result: what chat templates that check the
/// roles alternate (Gemma 3's, Mistral's) accept.
fn alternates(body: &Value) {
    let roles = roles(body);
    for pair in roles.windows(2) {
        let ok = match (pair[0].as_str(), pair[1].as_str()) {
            ("tool", "tool") => true,
            ("tool", "user") => false,
            (a, b) => a != b,
        };
        assert!(ok, "{pair:?} in {roles:?}");
    }
}

/// `num_ctx` as the request carried it.
fn num_ctx(body: &Value) -> u64 {
    body["options"]["num_ctx"].as_u64().unwrap_or_default()
}

/// The serialised size of a request's messages.
fn messages_bytes(body: &Value) -> usize {
    body["messages"].to_string().len()
}

#[test]
fn num_ctx_is_the_trained_length_on_every_request_when_that_is_smaller() {
    let p = two_files(3);
    let (_dir, user) = user_config(r#"{"num_ctx": 16384}"#);
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 4096)
        .chat(vec![
            call(
                "view_slice",
                json!({"path": "a.txt", "start": 1, "end": 150}),
                100,
                5,
            ),
            answer("Done.", 200, 3),
        ])
        .start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .args(["-p", "read a.txt", "--json"])
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    for body in &bodies {
        assert_eq!(num_ctx(body), 4096, "{body}");
    }
    let start: Value = serde_json::from_str(run.stdout.lines().next().unwrap_or_default())
        .expect("session_start first");
    assert_eq!(start["num_ctx"], 4096, "{start}");
    // The footer's share is of the window actually asked for: 200 of 4096.
    assert!(run.stderr.contains("· 4% of num_ctx"), "{run:?}");
}

#[test]
fn the_banner_and_config_say_the_window_and_why() {
    let p = TestProject::git();
    let (_dir, user) = user_config(r#"{"num_ctx": 16384}"#);
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 4096)
        .start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("/config\n/context\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let line = "context 4096 tokens (the model's trained length; num_ctx 16384 configured)";
    assert_eq!(
        run.stdout.matches(line).count(),
        3,
        "banner, /config, /context: {run:?}"
    );
    assert!(fake.chat_requests().is_empty());
}

#[test]
fn a_model_switch_fixes_the_window_again_for_the_new_model() {
    let p = TestProject::git();
    let (_dir, user) = user_config(r#"{"num_ctx": 16384}"#);
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .model("small:1b", &["completion", "tools"], 2048)
        .chat(vec![answer("First.", 10, 1), answer("Second.", 20, 1)])
        .start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "qwen3:8b")
        .stdin("one\n/model small:1b\ntwo\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("context 2048 tokens (the model's trained length; num_ctx 16384 configured)"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    assert_eq!(num_ctx(&bodies[0]), 16384);
    assert_eq!(num_ctx(&bodies[1]), 2048);
}

/// The `truncate` field of the one request a `-p` run against a server of `version` sends.
fn truncate_sent(version: &str) -> Option<Value> {
    let p = TestProject::git();
    let fake = FakeOllama::builder()
        .version(version)
        .chat(vec![answer("Hi.", 10, 1)])
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .args(["-p", "hi"])
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    bodies[0].get("truncate").cloned()
}

#[test]
fn truncate_false_is_sent_to_servers_from_0_12_4_on() {
    assert_eq!(truncate_sent("0.12.4"), Some(json!(false)));
    assert_eq!(truncate_sent("0.13.1"), Some(json!(false)));
}

#[test]
fn truncate_is_not_sent_to_older_or_unreadable_versions() {
    assert_eq!(truncate_sent("0.12.3"), None);
    assert_eq!(truncate_sent("0.6.7"), None);
    assert_eq!(truncate_sent("not a version"), None);
}

/// Two earlier turns that each read a file whole, then a third whose first request the
/// server refuses `refusals` times before `last` answers it.
fn overflowing_session(refusals: usize) -> (TestProject, FakeOllama, super::common::Run) {
    let p = two_files(150);
    let (_dir, user) = user_config(
        r#"{"compact_threshold_bytes": 1000000, "max_slice_lines": 200, "num_ctx": 8192}"#,
    );
    let mut chat = vec![
        call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 150}),
            100,
            5,
        ),
        answer("A read.", 200, 3),
        call(
            "view_slice",
            json!({"path": "b.txt", "start": 1, "end": 150}),
            100,
            5,
        ),
        answer("B read.", 200, 3),
    ];
    for _ in 0..refusals {
        chat.push(Reply::Error(400, OVERFLOW.to_owned()));
    }
    chat.push(answer("Third.", 300, 3));
    let fake = FakeOllama::builder().chat(chat).start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("read a\nread b\nthird question\n/ledger\n")
        .run();
    (p, fake, run)
}

#[test]
fn an_overflow_drops_the_oldest_tool_result_and_asks_once_more() {
    let (_p, fake, run) = overflowing_session(1);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("Third."), "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 6, "{run:?}");
    let (refused, retried) = (&bodies[4], &bodies[5]);
    assert!(
        messages_bytes(retried) < messages_bytes(refused),
        "the retry is smaller"
    );
    // The system message is byte for byte the same (the server's cache keeps it).
    assert_eq!(content(retried, 0), content(refused, 0));
    // The oldest result went, as a stub that keeps its pairing; the newer one stayed.
    let results: Vec<&Value> = retried["messages"]
        .as_array()
        .map(|m| m.iter().filter(|m| m["role"] == "tool").collect())
        .unwrap_or_default();
    assert_eq!(results.len(), 2, "{retried:#}");
    let first = results[0]["content"].as_str().unwrap_or_default();
    let second = results[1]["content"].as_str().unwrap_or_default();
    assert!(first.starts_with("[Tool result dropped"), "{first}");
    assert!(second.contains("line 0150"), "{second}");
    // The current request is kept, and the model is told at its end: a message of its
    // own would put two of the person's in a row, which alternating templates refuse.
    alternates(retried);
    let n = roles(retried).len();
    assert_eq!(roles(retried)[n - 1], "user");
    let line = content(retried, n - 1);
    assert!(
        line.starts_with("third question\n\n(Note from metron: the conversation no longer fit"),
        "{retried:#}"
    );
    // The ledger keeps it under the turn.
    assert!(
        run.stdout
            .contains("  metron: the conversation no longer fit the context window (8192 tokens)"),
        "{run:?}"
    );
    // The person is told too.
    assert!(
        run.stderr.contains(
            "metron: the conversation no longer fit the context window (8192 tokens): dropped 1 earlier tool result"
        ),
        "{run:?}"
    );
}

#[test]
fn a_second_overflow_ends_the_turn_with_the_clear_error() {
    let (_p, fake, run) = overflowing_session(2);
    // The REPL goes on after a failed turn; the next line would be the answer's.
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("the conversation no longer fits the model's context window"),
        "{run:?}"
    );
    // The window came from `num_ctx` (the model was trained on more): raising it helps.
    assert!(
        run.stderr.contains("; context 8192 tokens (num_ctx;")
            && run.stderr.contains("); use /reset, or raise `num_ctx`"),
        "{run:?}"
    );
    assert_eq!(fake.chat_bodies().len(), 6, "one retry, no more: {run:?}");
    assert!(!run.stdout.contains("Third."), "{run:?}");
}

#[test]
fn a_second_overflow_in_one_shot_mode_exits_1() {
    let p = two_files(10);
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 150}),
            100,
            5,
        ),
        Reply::Error(400, OVERFLOW.to_owned()),
        Reply::Error(400, OVERFLOW.to_owned()),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .args(["-p", "read a.txt", "--json"])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains("the conversation no longer fits the model's context window"),
        "{run:?}"
    );
    assert_eq!(fake.chat_bodies().len(), 3, "{run:?}");
    let trimmed: Vec<Value> = run
        .stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "history_trimmed")
        .collect();
    assert_eq!(trimmed.len(), 1, "{run:?}");
    assert_eq!(trimmed[0]["round"], 2);
    assert_eq!(trimmed[0]["refusal"], OVERFLOW);
    // Refused in round 2, after a tool result: the note goes at the end of that result.
    let retried = &fake.chat_bodies()[2];
    alternates(retried);
    let n = roles(retried).len();
    assert_eq!(roles(retried)[n - 1], "tool", "{retried:#}");
    assert!(
        content(retried, n - 1).ends_with(
            "\n\n(Note from metron: the conversation no longer fit the context window, so metron dropped 1 earlier tool result; call the tools again for anything you still need from them.)"
        ),
        "{retried:#}"
    );
}

#[test]
fn a_second_overflow_at_the_trained_length_suggests_another_model_not_num_ctx() {
    let p = two_files(10);
    let (_dir, user) = user_config(r#"{"num_ctx": 16384}"#);
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 4096)
        .chat(vec![
            call(
                "view_slice",
                json!({"path": "a.txt", "start": 1, "end": 10}),
                100,
                5,
            ),
            Reply::Error(400, OVERFLOW.to_owned()),
            Reply::Error(400, OVERFLOW.to_owned()),
        ])
        .start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .args(["-p", "read a.txt"])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "the conversation no longer fits the model's context window ({OVERFLOW}); context 4096 tokens (the model's trained length; num_ctx 16384 configured); use /reset, or choose a model trained on a longer context"
        )),
        "{run:?}"
    );
    // Raising `num_ctx` would change nothing: the model was trained on 4096.
    assert!(!run.stderr.contains("raise `num_ctx`"), "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 3, "{run:?}");
}

#[test]
fn the_doctor_fails_a_trained_length_too_small_for_the_fixed_prompt_and_one_result() {
    let p = TestProject::git();
    let (_dir, user) = user_config(r#"{"num_ctx": 16384}"#);
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 1024)
        .start();
    let run = metron(p.root())
        .env("METRON_CONFIG", &user)
        .env("OLLAMA_HOST", fake.base_url())
        .args(["--doctor"])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    let mut lines = run.stdout.lines();
    let row = lines
        .by_ref()
        .find(|l| l.contains("cannot hold the fixed prompt"))
        .unwrap_or_else(|| panic!("no row: {run:?}"));
    assert!(row.starts_with("fail"), "{row}");
    assert!(
        row.contains(
            "the context window of 1024 tokens (the model's trained length; num_ctx 16384"
        ),
        "{row}"
    );
    // The numbers: the fixed prompt's tokens and one result at its budget (4000 bytes).
    assert!(row.contains(" tokens on every request"), "{row}");
    assert!(
        row.contains("1024 more for one tool result at its budget"),
        "{row}"
    );
    let remedy = lines.next().unwrap_or_default();
    assert!(remedy.contains("choose a model trained on "), "{remedy}");
    assert!(fake.chat_requests().is_empty());
}

#[test]
fn a_resumed_session_fixes_the_window_again_from_the_server_it_resumes_against() {
    let p = TestProject::git();
    let home = tempfile::Builder::new()
        .prefix("metron-window-")
        .tempdir()
        .expect("temp home");
    let run = |fake: &FakeOllama, args: &[&str]| {
        metron(p.root())
            .env("HOME", home.path())
            .env("METRON_CONFIG_DIR", home.path())
            .env("OLLAMA_HOST", fake.base_url())
            .args(args)
            .run()
    };
    let roomy = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .chat(vec![answer("First.", 10, 1)])
        .start();
    assert_eq!(run(&roomy, &["-p", "one"]).code, 0);
    // The same model, now served with a shorter trained length (another build of it).
    let small = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 4096)
        .chat(vec![answer("Second.", 20, 1)])
        .start();
    let second = run(&small, &["-c", "-p", "two"]);
    assert_eq!(second.code, 0, "{second:?}");
    assert_eq!(num_ctx(&roomy.chat_bodies()[0]), 16384);
    let bodies = small.chat_bodies();
    assert_eq!(bodies.len(), 1, "{second:?}");
    assert_eq!(num_ctx(&bodies[0]), 4096);
    assert_eq!(
        content(&bodies[0], 1),
        "one",
        "the conversation carried over"
    );
}
