//! Tests of the fake Ollama server itself, spoken to over raw HTTP/1.1 on std sockets so
//! that a bug in the fake cannot hide behind a bug in metron's client (or vice versa).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::fake_ollama::*;

/// A response as read off the wire.
struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The HTTP chunks of a chunked body, each as received.
    chunks: Vec<Vec<u8>>,
    /// False when a chunked body ended without its terminating zero-length chunk.
    complete: bool,
}

impl Response {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("UTF-8 body")
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("JSON body")
    }

    /// The body as NDJSON: one value per line.
    fn lines(&self) -> Vec<Value> {
        self.text()
            .lines()
            .map(|l| serde_json::from_str(l).expect("each line is JSON"))
            .collect()
    }
}

/// One client connection that can carry several requests.
struct Client {
    reader: BufReader<TcpStream>,
}

impl Client {
    fn connect(fake: &FakeOllama) -> Client {
        let stream = TcpStream::connect(fake.addr()).expect("connect to the fake");
        stream
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        Client {
            reader: BufReader::new(stream),
        }
    }

    fn stream(&mut self) -> &mut TcpStream {
        self.reader.get_mut()
    }

    /// Sends a request with a `Content-Length` body (none when `body` is `None`).
    fn send(&mut self, method: &str, path: &str, body: Option<&[u8]>, headers: &[(&str, &str)]) {
        let mut out = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
        for (name, value) in headers {
            out.push_str(&format!("{name}: {value}\r\n"));
        }
        if let Some(body) = body {
            out.push_str(&format!("Content-Length: {}\r\n", body.len()));
        }
        out.push_str("\r\n");
        let mut bytes = out.into_bytes();
        bytes.extend_from_slice(body.unwrap_or_default());
        self.stream().write_all(&bytes).expect("send the request");
    }

    fn line(&mut self) -> Option<String> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(line.trim_end_matches(['\r', '\n']).to_string()),
        }
    }

    /// Reads the status line and headers.
    fn read_head(&mut self) -> Response {
        let status_line = self.line().expect("a status line");
        let status = status_line
            .split(' ')
            .nth(1)
            .and_then(|s| s.parse().ok())
            .expect("a status code");
        let mut headers = Vec::new();
        loop {
            let line = self.line().expect("a header line");
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':').expect("name: value");
            headers.push((name.trim().to_string(), value.trim().to_string()));
        }
        Response {
            status,
            headers,
            body: Vec::new(),
            chunks: Vec::new(),
            complete: false,
        }
    }

    /// The next HTTP chunk of a chunked body: `Some(empty)` for the terminator, `None` when
    /// the connection ended first.
    fn read_chunk(&mut self) -> Option<Vec<u8>> {
        let size = self.line()?;
        let size = usize::from_str_radix(size.split(';').next()?.trim(), 16).expect("chunk size");
        let mut data = vec![0; size];
        self.reader.read_exact(&mut data).ok()?;
        if size == 0 {
            while !self.line()?.is_empty() {}
        } else {
            assert_eq!(self.line()?, "", "chunk data ends with CRLF");
        }
        Some(data)
    }

    /// Reads a whole response; `head` says it answers a HEAD request (no body).
    fn read(&mut self, head: bool) -> Response {
        let mut response = self.read_head();
        if head {
            response.complete = true;
        } else if response.header("transfer-encoding") == Some("chunked") {
            while let Some(chunk) = self.read_chunk() {
                if chunk.is_empty() {
                    response.complete = true;
                    break;
                }
                response.body.extend_from_slice(&chunk);
                response.chunks.push(chunk);
            }
        } else if let Some(n) = response.header("content-length") {
            let mut body = vec![0; n.parse().expect("numeric Content-Length")];
            self.reader.read_exact(&mut body).expect("the whole body");
            response.body = body;
            response.complete = true;
        } else {
            self.reader.read_to_end(&mut response.body).unwrap();
            response.complete = true;
        }
        response
    }

    /// Whether the server has closed the connection (EOF or reset, not a timeout).
    fn closed_by_server(&mut self) -> bool {
        let mut buf = [0u8; 64];
        match self.reader.read(&mut buf) {
            Ok(0) => true,
            Ok(_) => false,
            Err(e) => !matches!(
                e.kind(),
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
            ),
        }
    }
}

/// One request on a fresh connection that asks to be closed afterwards.
fn request(fake: &FakeOllama, method: &str, path: &str, body: Option<&str>) -> Response {
    let mut client = Client::connect(fake);
    client.send(
        method,
        path,
        body.map(str::as_bytes),
        &[("Connection", "close")],
    );
    client.read(method == "HEAD")
}

fn chat(fake: &FakeOllama, body: Value) -> Response {
    request(fake, "POST", "/api/chat", Some(&body.to_string()))
}

fn chat_request(model: &str) -> Value {
    json!({"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": true})
}

#[test]
fn streamed_answer_decodes_into_ndjson_lines_ending_with_done() {
    let fake = FakeOllama::start(vec![answer("Hello big world", 12, 3)]);
    let response = chat(&fake, chat_request("qwen3:8b"));

    assert_eq!(response.status, 200);
    assert_eq!(
        response.header("content-type"),
        Some("application/x-ndjson")
    );
    assert_eq!(response.header("transfer-encoding"), Some("chunked"));
    assert!(
        response.complete,
        "the body ends with the terminating chunk"
    );
    let lines = response.lines();
    assert_eq!(lines.len(), 4, "three words and the done line: {lines:?}");
    let content: String = lines
        .iter()
        .map(|l| l["message"]["content"].as_str().unwrap())
        .collect();
    assert_eq!(content, "Hello big world");
    for line in &lines {
        assert_eq!(line["model"], "qwen3:8b", "the request's model is echoed");
        assert_eq!(line["message"]["role"], "assistant");
        let created = line["created_at"].as_str().unwrap();
        assert!(created.ends_with('Z') && created.contains('.'), "{created}");
        assert!(created.len() >= "2026-01-01T00:00:00.1Z".len(), "{created}");
    }
    assert!(lines[..3].iter().all(|l| l["done"] == false));
    let last = lines.last().unwrap();
    assert_eq!(last["done"], true);
    assert_eq!(last["done_reason"], "stop");
    assert_eq!(last["prompt_eval_count"], 12);
    assert_eq!(last["eval_count"], 3);
    assert!(last["total_duration"].as_u64().unwrap() > 0);
    assert!(last["eval_duration"].as_u64().unwrap() > 0);
    assert_eq!(fake.unexpected(), 0);
    assert_eq!(fake.remaining(), 0);
}

#[test]
fn each_stream_item_is_its_own_http_chunk() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![
        Chunk::Raw("{\"message\":{\"content\":\"a".to_string()),
        Chunk::Pause(Duration::from_millis(5)),
        Chunk::Raw("b\"}}\n".to_string()),
        Chunk::Raw(String::new()),
        done(0, 0),
    ])]);
    let response = chat(&fake, chat_request("m"));

    assert!(response.complete);
    assert_eq!(response.chunks.len(), 3, "the empty Raw item is skipped");
    assert_eq!(response.chunks[0], b"{\"message\":{\"content\":\"a");
    assert_eq!(response.chunks[1], b"b\"}}\n");
    let lines = response.lines();
    assert_eq!(lines[0]["message"]["content"], "ab");
    // Zero counts are left out, as Go omits zero values.
    assert_eq!(lines[1]["done"], true);
    assert!(lines[1].get("prompt_eval_count").is_none());
    assert!(lines[1].get("eval_duration").is_none());
}

#[test]
fn chunks_are_written_like_go_json() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("<b>&"), done(1, 1)])]);
    let response = chat(&fake, chat_request("m"));
    let raw = String::from_utf8(response.chunks[0].clone()).unwrap();
    assert!(
        raw.starts_with("{\"model\":\"m\",\"created_at\":\""),
        "{raw}"
    );
    assert!(
        raw.contains(
            r#""message":{"role":"assistant","content":"\u003cb\u003e\u0026"},"done":false}"#
        ),
        "{raw}"
    );
    assert_eq!(response.lines()[0]["message"]["content"], "<b>&");
}

#[test]
fn tool_call_builders_match_the_server_shapes() {
    let calls = [
        ("read_file", json!({"path": "src/lib.rs"})),
        ("grep", json!({"pattern": "fn main"})),
    ];
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls(&calls),
            tool_calls_without_ids(&calls),
            done_with_calls(&calls[..1], 5, 6),
        ]),
        call("list_dir", json!({"path": "."}), 7, 8),
    ]);
    let lines = chat(&fake, chat_request("m")).lines();

    let modern = lines[0]["message"]["tool_calls"].as_array().unwrap();
    assert_eq!(lines[0]["message"]["content"], "");
    assert_eq!(lines[0]["done"], false);
    for (i, call) in modern.iter().enumerate() {
        let id = call["id"].as_str().unwrap();
        let suffix = id.strip_prefix("call_").expect("call_ prefix");
        assert_eq!(suffix.len(), 8, "{id}");
        assert!(
            suffix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit()),
            "{id}"
        );
        assert_eq!(call["function"]["index"], i);
        assert_eq!(call["function"]["name"], calls[i].0);
        assert_eq!(call["function"]["arguments"], calls[i].1);
    }
    assert_ne!(modern[0]["id"], modern[1]["id"]);

    let legacy = lines[1]["message"]["tool_calls"].as_array().unwrap();
    assert!(legacy.iter().all(|c| c.get("id").is_none()));
    assert!(
        legacy[0]["function"].get("index").is_none(),
        "index 0 is omitted"
    );
    assert_eq!(legacy[1]["function"]["index"], 1);

    assert_eq!(lines[2]["done"], true);
    assert_eq!(
        lines[2]["message"]["tool_calls"][0]["function"]["name"],
        "read_file"
    );
    assert_eq!(lines[2]["prompt_eval_count"], 5);

    let round = chat(&fake, chat_request("m")).lines();
    assert_eq!(round.len(), 2);
    assert_eq!(
        round[0]["message"]["tool_calls"][0]["function"]["name"],
        "list_dir"
    );
    assert_eq!(round[1]["done"], true);
}

#[test]
fn keep_alive_serves_several_requests_on_one_connection() {
    let fake = FakeOllama::start(vec![answer("one", 1, 1), answer("two", 1, 1)]);
    let mut client = Client::connect(&fake);

    client.send("GET", "/api/version", None, &[]);
    let version = client.read(false);
    assert_eq!(version.json(), json!({"version": "0.12.10"}));
    assert_eq!(
        version.header("content-type"),
        Some("application/json; charset=utf-8")
    );

    for expected in ["one", "two"] {
        let body = chat_request("m").to_string();
        client.send("POST", "/api/chat", Some(body.as_bytes()), &[]);
        let response = client.read(false);
        assert!(response.complete);
        assert_eq!(response.lines()[0]["message"]["content"], expected);
    }

    client.send("HEAD", "/", None, &[]);
    let head = client.read(true);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some("17"));

    client.send("GET", "/", None, &[("Connection", "close")]);
    let root = client.read(false);
    assert_eq!(root.text(), "Ollama is running");
    assert_eq!(root.header("connection"), Some("close"));
    assert!(client.closed_by_server(), "Connection: close is honoured");
    assert_eq!(fake.requests().len(), 5);
}

#[test]
fn hang_does_not_delay_dropping_the_server() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("partial"), Chunk::Hang])]);
    let mut client = Client::connect(&fake);
    let body = chat_request("m").to_string();
    client.send("POST", "/api/chat", Some(body.as_bytes()), &[]);
    let head = client.read_head();
    assert_eq!(head.status, 200);
    let first = client.read_chunk().expect("the first chunk");
    assert!(String::from_utf8(first).unwrap().contains("partial"));

    let started = Instant::now();
    drop(fake);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "drop took {:?}",
        started.elapsed()
    );
    assert_eq!(
        client.read_chunk(),
        None,
        "no terminating chunk after a hang"
    );
}

/// The hang is observable: not before the request, and once every chunk before it was
/// written (the client can read them).
#[test]
fn wait_for_hangs_sees_a_reply_reach_its_hang() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("partial"), Chunk::Hang])]);
    assert!(
        !fake.wait_for_hangs(1, Duration::from_millis(50)),
        "no request yet, so nothing hangs"
    );
    let mut client = Client::connect(&fake);
    let body = chat_request("m").to_string();
    client.send("POST", "/api/chat", Some(body.as_bytes()), &[]);
    assert!(fake.wait_for_hangs(1, Duration::from_secs(10)));
    assert!(!fake.wait_for_hangs(2, Duration::from_millis(50)));
    assert_eq!(client.read_head().status, 200);
    let first = client.read_chunk().expect("the chunk before the hang");
    assert!(String::from_utf8_lossy(&first).contains("partial"));
}

#[test]
fn a_client_giving_up_on_a_hang_frees_the_server() {
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![Chunk::Hang]),
        answer("after", 1, 1),
    ]);
    let mut client = Client::connect(&fake);
    let body = chat_request("m").to_string();
    client.send("POST", "/api/chat", Some(body.as_bytes()), &[]);
    assert_eq!(client.read_head().status, 200);
    drop(client);

    let response = chat(&fake, chat_request("m"));
    assert_eq!(response.lines()[0]["message"]["content"], "after");
}

#[test]
fn drop_closes_the_connection_without_the_terminating_chunk() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![
        text("half an answer"),
        Chunk::Drop,
        done(1, 1),
    ])]);
    let response = chat(&fake, chat_request("m"));
    assert_eq!(response.status, 200);
    assert!(!response.complete, "the body must be cut short");
    let lines = response.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["done"], false);
}

#[test]
fn end_terminates_cleanly_without_a_done_line() {
    let fake = FakeOllama::start(vec![Reply::Stream(vec![
        text("no done"),
        Chunk::End,
        done(1, 1),
    ])]);
    let response = chat(&fake, chat_request("m"));
    assert!(response.complete);
    let lines = response.lines();
    assert_eq!(lines.len(), 1);
    assert_eq!(lines[0]["done"], false);
}

#[test]
fn mid_stream_error_line_keeps_status_200() {
    let message = "an error was encountered while running the model: unexpected EOF";
    let fake = FakeOllama::start(vec![Reply::Stream(vec![text("a"), error_line(message)])]);
    let response = chat(&fake, chat_request("m"));
    assert_eq!(response.status, 200);
    assert_eq!(response.lines()[1], json!({"error": message}));
}

#[test]
fn requests_are_recorded_with_parsed_bodies() {
    let fake = FakeOllama::start(vec![answer("ok", 1, 1)]);
    let chat_body = chat_request("qwen2.5-coder:7b");
    let response = chat(&fake, chat_body.clone());
    assert_eq!(response.status, 200);

    // A chunked request body, split mid-JSON.
    let show = br#"{"model":"qwen2.5-coder:7b"}"#;
    let mut client = Client::connect(&fake);
    let mut out = b"POST /api/show?verbose=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n".to_vec();
    for piece in show.chunks(7) {
        out.extend_from_slice(format!("{:x};ext=1\r\n", piece.len()).as_bytes());
        out.extend_from_slice(piece);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\nX-Trailer: yes\r\n\r\n");
    client.stream().write_all(&out).unwrap();
    assert_eq!(client.read(false).status, 200);

    request(&fake, "GET", "/api/tags", None);

    let requests = fake.requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0].method, "POST");
    assert_eq!(requests[0].path, "/api/chat");
    assert_eq!(requests[0].body, chat_body);
    assert_eq!(requests[0].raw_body, chat_body.to_string().into_bytes());
    assert_eq!(requests[0].header("HOST"), Some("127.0.0.1"));
    assert_eq!(requests[1].path, "/api/show?verbose=0");
    assert_eq!(requests[1].raw_body, show.to_vec());
    assert_eq!(requests[1].body["model"], "qwen2.5-coder:7b");
    assert_eq!(requests[2].method, "GET");
    assert_eq!(requests[2].body, Value::Null);
    assert!(requests[2].raw_body.is_empty());
    assert_eq!(fake.chat_bodies(), vec![chat_body]);
}

#[test]
fn bad_chat_bodies_get_400_and_consume_no_reply() {
    let fake = FakeOllama::start(vec![answer("kept", 1, 1)]);

    let empty = request(&fake, "POST", "/api/chat", Some(""));
    assert_eq!(empty.status, 400);
    assert_eq!(empty.json(), json!({"error": "missing request body"}));

    let garbage = request(&fake, "POST", "/api/chat", Some("hello"));
    assert_eq!(garbage.status, 400);
    assert_eq!(
        garbage.json()["error"],
        "invalid character 'h' looking for beginning of value"
    );

    let array = request(&fake, "POST", "/api/chat", Some("[]"));
    assert_eq!(array.status, 400);
    assert!(
        array.json()["error"]
            .as_str()
            .unwrap()
            .contains("cannot unmarshal array")
    );

    assert_eq!(fake.remaining(), 1);
    let good = chat(&fake, chat_request("m"));
    assert_eq!(good.lines()[0]["message"]["content"], "kept");
    assert_eq!(
        fake.requests().len(),
        4,
        "refused requests are still recorded"
    );
    assert_eq!(fake.chat_bodies().len(), 2, "the [] body parsed as JSON");
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn an_exhausted_script_answers_500_and_counts_it() {
    let fake = FakeOllama::start(vec![Reply::Json(
        json!({"model": MODEL_ECHO, "done": true}),
    )]);
    let first = chat(&fake, chat_request("echo-me"));
    assert_eq!(first.status, 200);
    assert_eq!(first.json(), json!({"model": "echo-me", "done": true}));

    for expected in 1..=2 {
        let extra = chat(&fake, chat_request("m"));
        assert_eq!(extra.status, 500);
        assert_eq!(
            extra.header("content-type"),
            Some("application/json; charset=utf-8")
        );
        assert_eq!(
            extra.json(),
            json!({"error": "fake ollama: no scripted reply left"})
        );
        assert_eq!(fake.unexpected(), expected);
    }
    assert_eq!(fake.chat_bodies().len(), 3);

    fake.push(answer("late", 1, 1));
    assert_eq!(chat(&fake, chat_request("m")).status, 200);
}

#[test]
fn delayed_error_and_raw_replies() {
    let fake = FakeOllama::start(vec![
        Reply::Delayed(
            Duration::from_millis(100),
            Box::new(json_answer("slow", 3, 4)),
        ),
        Reply::Error(404, "model 'nope' not found".to_string()),
        Reply::Raw(502, "text/html", "<html>bad gateway</html>".to_string()),
    ]);

    let started = Instant::now();
    let slow = chat(&fake, chat_request("m"));
    assert!(started.elapsed() >= Duration::from_millis(100));
    assert_eq!(slow.status, 200);
    assert_eq!(
        slow.header("content-type"),
        Some("application/json; charset=utf-8")
    );
    let slow = slow.json();
    assert_eq!(slow["model"], "m");
    assert_eq!(slow["message"]["content"], "slow");
    assert_eq!(slow["done"], true);
    assert_eq!(slow["eval_count"], 4);

    let missing = chat(&fake, chat_request("m"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json(), json!({"error": "model 'nope' not found"}));

    let raw = chat(&fake, chat_request("m"));
    assert_eq!(raw.status, 502);
    assert_eq!(raw.header("content-type"), Some("text/html"));
    assert_eq!(raw.text(), "<html>bad gateway</html>");
}

#[test]
fn dropping_the_server_is_prompt_with_idle_and_delayed_connections() {
    let fake = FakeOllama::start(vec![Reply::Delayed(
        Duration::from_secs(30),
        Box::new(answer("never", 1, 1)),
    )]);
    let mut idle = Client::connect(&fake);
    idle.send("GET", "/", None, &[]);
    assert_eq!(idle.read(false).status, 200);

    let mut waiting = Client::connect(&fake);
    let body = chat_request("m").to_string();
    waiting.send("POST", "/api/chat", Some(body.as_bytes()), &[]);
    assert!(fake.wait_for_requests(2, Duration::from_secs(10)));

    let started = Instant::now();
    drop(fake);
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "drop took {:?}",
        started.elapsed()
    );
    assert!(idle.closed_by_server());
    assert!(waiting.closed_by_server());
}

#[test]
fn show_reports_known_old_and_unknown_models() {
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools", "thinking"], 40960)
        .model("gemma3:4b", &["completion"], 8192)
        .old_model("llama3:latest", "{{ .Prompt }}")
        .start();

    let known = request(&fake, "POST", "/api/show", Some(r#"{"model":"qwen3:8b"}"#));
    assert_eq!(known.status, 200);
    let known = known.json();
    assert_eq!(
        known["capabilities"],
        json!(["completion", "tools", "thinking"])
    );
    assert_eq!(known["model_info"]["general.architecture"], "qwen3");
    assert_eq!(known["model_info"]["qwen3.context_length"], 40960);
    assert!(known["template"].as_str().unwrap().contains(".Tools"));
    for key in ["modelfile", "parameters", "details"] {
        assert!(known.get(key).is_some(), "{key}");
    }

    let no_tools = request(&fake, "POST", "/api/show", Some(r#"{"name":"gemma3:4b"}"#)).json();
    assert_eq!(no_tools["capabilities"], json!(["completion"]));
    assert!(!no_tools["template"].as_str().unwrap().contains(".Tools"));

    let old = request(&fake, "POST", "/api/show", Some(r#"{"model":"llama3"}"#));
    assert_eq!(old.status, 200, "X finds X:latest");
    let old = old.json();
    assert!(old.get("capabilities").is_none());
    assert_eq!(old["template"], "{{ .Prompt }}");

    let unknown = request(&fake, "POST", "/api/show", Some(r#"{"model":"nope"}"#));
    assert_eq!(unknown.status, 404);
    assert_eq!(unknown.json(), json!({"error": "model 'nope' not found"}));

    let missing = request(&fake, "POST", "/api/show", Some(r#"{"verbose":true}"#));
    assert_eq!(missing.status, 400);
    assert_eq!(missing.json(), json!({"error": "model is required"}));

    let tags = request(&fake, "GET", "/api/tags", None).json();
    let models = tags["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|m| m["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["qwen3:8b", "gemma3:4b", "llama3:latest"]);
    for model in models {
        let digest = model["digest"].as_str().unwrap();
        assert_eq!(digest.len(), 64);
        assert!(digest.bytes().all(|b| b.is_ascii_hexdigit()), "{digest}");
        assert_eq!(model["model"], model["name"]);
        assert!(model["details"]["family"].is_string());
    }
}

#[test]
fn default_model_version_and_root() {
    let fake = FakeOllama::builder().version("0.0.0").start();
    let tags = request(&fake, "GET", "/api/tags", None).json();
    assert_eq!(tags["models"][0]["name"], "qwen2.5-coder:7b");
    let show = request(
        &fake,
        "POST",
        "/api/show",
        Some(r#"{"model":"qwen2.5-coder:7b"}"#),
    )
    .json();
    assert_eq!(show["capabilities"], json!(["completion", "tools"]));
    assert_eq!(show["model_info"]["qwen3.context_length"], 32768);

    let version = request(&fake, "GET", "/api/version", None);
    assert_eq!(version.json(), json!({"version": "0.0.0"}));
    let head = request(&fake, "HEAD", "/api/version", None);
    assert_eq!(head.status, 200);
    assert!(head.body.is_empty());

    let root = request(&fake, "GET", "/", None);
    assert_eq!(root.status, 200);
    assert!(
        root.header("content-type")
            .unwrap()
            .starts_with("text/plain")
    );
    assert_eq!(root.text(), "Ollama is running");
}

#[test]
fn unknown_routes_are_plain_404_and_wrong_methods_405() {
    let fake = FakeOllama::start(vec![]);
    let missing = request(&fake, "POST", "/v1/responses", Some("{}"));
    assert_eq!(missing.status, 404);
    assert_eq!(missing.header("content-type"), Some("text/plain"));
    assert_eq!(missing.text(), "404 page not found");

    let wrong = request(&fake, "GET", "/api/chat", None);
    assert_eq!(wrong.status, 405);
    assert_eq!(wrong.header("allow"), Some("POST"));
    assert_eq!(wrong.text(), "405 method not allowed");
    let wrong = request(&fake, "DELETE", "/api/tags", None);
    assert_eq!(wrong.status, 405);
    assert_eq!(fake.unexpected(), 0, "only chat requests count");
}

#[test]
fn refused_url_refuses_connections() {
    let url = refused_url();
    let addr = url.strip_prefix("http://").expect("an http URL");
    assert!(addr.starts_with("127.0.0.1:"), "{url}");
    let error = TcpStream::connect(addr).expect_err("nothing listens there");
    assert_eq!(error.kind(), std::io::ErrorKind::ConnectionRefused);
}

#[test]
fn urls_name_the_listening_port() {
    let fake = FakeOllama::start(vec![]);
    let base = fake.base_url();
    assert_eq!(base, format!("http://127.0.0.1:{}", fake.addr().port()));
    assert_eq!(fake.chat_url(), format!("{base}/api/chat"));
}
