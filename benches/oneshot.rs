//! What `metron -p` adds to a session: the release binary against an instant fake Ollama,
//! beside the same HTTP exchange made without metron.
//!
//! The target: `metron -p` adds under 20 ms of its own time to a session.
//!
//! A fake server on 127.0.0.1 (a thread in this process, one connection at a time, no
//! keep-alive) answers every `POST /api/chat` at once with the same short streamed answer
//! (20 NDJSON lines). The project is an empty git repository in a temp dir, and the
//! configuration is the defaults: `METRON_CONFIG_DIR` points at an empty dir and
//! `OLLAMA_HOST` at the fake. Group `oneshot`:
//!
//! - `spawn_true`: spawning `/bin/true` and waiting for it (the floor for any process);
//! - `raw_http_exchange`: the exchange itself from this process (connect, send the body
//!   metron sent, read the whole answer), no process;
//! - `curl_exchange`: `curl` sending that same body (a process plus the exchange);
//! - `metron_version`: `metron --version` (process start, argument parsing);
//! - `metron_p`: `metron -p "..."` to its exit: configuration, project, tools, runtime,
//!   one request, the streamed answer, the footer;
//! - `metron_p_localhost`: the same with the host spelled `localhost`, as in the default
//!   endpoint, so the name is resolved (and `::1` may be tried first) before connecting.
//!
//! metron's own time is `metron_p - spawn_true - raw_http_exchange`: what is left once
//! starting a process and the exchange itself are taken away. `curl_exchange` is there as
//! the trivial client a script would otherwise use; curl's own start-up (libcurl and the
//! libraries it loads) can cost more than metron's, so `metron_p - curl_exchange` may be
//! negative and is not the floor. Criterion prints each case; afterwards the cases are run
//! again in interleaved rounds (so drift on a shared machine hits all of them alike) and
//! the medians and differences are printed in one `summary` block. Set
//! `METRON_BENCH_ROUNDS` to change the number of rounds (default 100).
//!
//! The binary is the release `metron` that `cargo bench` builds next to this bench; the
//! bench skips with a SKIP line when it is missing (build it with `cargo build
//! --release`), and skips the curl case when curl is not installed.
//!
//! ```sh
//! cargo bench --bench oneshot -- --warm-up-time 1 --measurement-time 5
//! ```

mod support;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

/// The question asked on every run.
const QUESTION: &str = "Where does the server map errors to status codes?";
/// The model named in every chunk (the client does not compare it with the request's).
const MODEL: &str = "qwen2.5-coder:32b";

fn main() {
    let Some(binary) = support::metron_binary() else {
        eprintln!(
            "SKIP oneshot bench: no release metron binary next to this bench; run `cargo build --release` first"
        );
        return;
    };
    let mut c = support::criterion(Duration::from_secs(5));

    let dir = tempfile::Builder::new()
        .prefix("metron-bench-oneshot-")
        .tempdir()
        .expect("temp dir");
    let repo = dir.path().join("repo");
    let config_dir = dir.path().join("config");
    std::fs::create_dir_all(&repo).expect("create the repo dir");
    std::fs::create_dir_all(&config_dir).expect("create the config dir");
    support::git_init(&repo);

    let (body, answer) = answer_stream();
    let server = FakeServer::start(body);
    let metron_p = |host: &str| {
        let mut command = Command::new(&binary);
        command
            .args(["-p", QUESTION])
            .current_dir(&repo)
            .env(
                "OLLAMA_HOST",
                format!("http://{host}:{}", server.addr.port()),
            )
            .env("METRON_CONFIG_DIR", &config_dir)
            .env_remove("METRON_CONFIG")
            .env_remove("OLLAMA_MODEL")
            .env_remove("METRON_ALLOW_PROJECT_COMMANDS")
            .stdin(Stdio::null());
        command
    };

    // One checked run: it answers, and what it sent is what the baselines send.
    let checked = metron_p("127.0.0.1").output().expect("run metron -p");
    check(&checked, &answer);
    let request = server.last_request().expect("metron sent a chat request");
    let request_file = dir.path().join("request.json");
    std::fs::write(&request_file, &request).expect("write the request body");
    eprintln!(
        "metron -p sent {} bytes and got {} bytes back; its stderr:\n{}",
        request.len(),
        server.answer.len(),
        String::from_utf8_lossy(&checked.stderr).trim_end()
    );
    let url = format!("http://{}/api/chat", server.addr);
    let curl = || {
        let mut command = Command::new("curl");
        command
            .args(["-sS", "--fail", "-o", "/dev/null", "-H"])
            .arg("Content-Type: application/json")
            .arg("--data-binary")
            .arg(format!("@{}", request_file.display()))
            .arg(&url);
        command
    };
    let has_curl = curl()
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_curl {
        eprintln!("SKIP curl_exchange: curl is not installed (or failed)");
    }

    let mut cases: Vec<(&str, Case<'_>)> = vec![
        ("spawn_true", Box::new(|| timed(Command::new("/bin/true")))),
        (
            "raw_http_exchange",
            Box::new(|| {
                let started = Instant::now();
                let got = raw_exchange(server.addr, &request);
                let elapsed = started.elapsed();
                assert_eq!(got, server.answer.len(), "the whole answer");
                elapsed
            }),
        ),
    ];
    if has_curl {
        cases.push(("curl_exchange", Box::new(|| timed(curl()))));
    }
    cases.push((
        "metron_version",
        Box::new(|| {
            let mut command = Command::new(&binary);
            command.arg("--version");
            timed(command)
        }),
    ));
    cases.push(("metron_p", Box::new(|| timed(metron_p("127.0.0.1")))));
    cases.push((
        "metron_p_localhost",
        Box::new(|| timed(metron_p("localhost"))),
    ));

    let mut group = c.benchmark_group("oneshot");
    for (name, run) in &cases {
        group.bench_function(*name, |b| {
            b.iter_custom(|iters| (0..iters).map(|_| run()).sum());
        });
    }
    group.finish();
    c.final_summary();

    if std::env::args().any(|a| a == "--list" || a == "--test") {
        return;
    }
    let rounds: usize = std::env::var("METRON_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100);
    let mut times: Vec<Vec<Duration>> = vec![Vec::with_capacity(rounds); cases.len()];
    for _ in 0..rounds {
        for ((_, run), samples) in cases.iter().zip(&mut times) {
            samples.push(run());
        }
    }
    let medians: Vec<(&str, f64)> = cases
        .iter()
        .zip(&mut times)
        .map(|((name, _), samples)| {
            samples.sort();
            (*name, samples[samples.len() / 2].as_secs_f64() * 1e3)
        })
        .collect();
    let median = |name: &str| medians.iter().find(|(n, _)| *n == name).map(|(_, ms)| *ms);
    eprintln!("summary: medians of {rounds} interleaved rounds");
    for (name, ms) in &medians {
        eprintln!("  {name:<18} {ms:8.3} ms");
    }
    if let (Some(p), Some(t), Some(raw)) = (
        median("metron_p"),
        median("spawn_true"),
        median("raw_http_exchange"),
    ) {
        eprintln!(
            "  metron -p's own time: metron_p - spawn_true - raw_http_exchange = {:.3} ms",
            p - t - raw
        );
        if let Some(local) = median("metron_p_localhost") {
            eprintln!(
                "  with `localhost`: metron_p_localhost - spawn_true - raw_http_exchange = {:.3} ms",
                local - t - raw
            );
        }
        if let Some(curl) = median("curl_exchange") {
            eprintln!(
                "  against curl: metron_p - curl_exchange = {:.3} ms, metron_p / curl_exchange = {:.2}",
                p - curl,
                p / curl
            );
        }
    }
}

/// One timed run of a case.
type Case<'a> = Box<dyn Fn() -> Duration + 'a>;

/// Runs a command to its exit with nothing attached, and times it.
fn timed(mut command: Command) -> Duration {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    let started = Instant::now();
    let status = command.status().expect("spawn");
    let elapsed = started.elapsed();
    assert!(status.success(), "{command:?}: {status}");
    elapsed
}

/// The checked run printed exactly the answer and exited 0.
fn check(output: &Output, answer: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "metron -p failed: {stderr}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("{answer}\n"),
        "metron -p printed something else; stderr: {stderr}"
    );
}

/// One `POST /api/chat` with `body` over a fresh connection; the bytes of the answer body.
fn raw_exchange(addr: SocketAddr, body: &[u8]) -> usize {
    let mut stream = TcpStream::connect(addr).expect("connect");
    let head = format!(
        "POST /api/chat HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).expect("send");
    stream.write_all(body).expect("send");
    let mut response = Vec::new();
    stream.read_to_end(&mut response).expect("receive");
    let split = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("a complete head");
    response.len() - split - 4
}

/// The streamed answer: 19 content lines and a done line, and the text they add up to.
fn answer_stream() -> (Vec<u8>, String) {
    let words = "The server maps errors in src/server.rs:42 through `status_for`, which turns parse errors into 400, missing records into 404 and everything else into 500.";
    let pieces: Vec<&str> = words.split_inclusive(' ').collect();
    let mut body = Vec::new();
    let mut line = |message: serde_json::Value, extra: serde_json::Value| {
        let mut chunk =
            json!({"model": MODEL, "created_at": "2026-03-01T10:00:00.1Z", "message": message});
        for (key, value) in extra.as_object().into_iter().flatten() {
            chunk[key] = value.clone();
        }
        body.extend(serde_json::to_vec(&chunk).expect("a chunk"));
        body.push(b'\n');
    };
    for piece in &pieces {
        line(
            json!({"role": "assistant", "content": piece}),
            json!({"done": false}),
        );
    }
    line(
        json!({"role": "assistant", "content": ""}),
        json!({"done": true, "done_reason": "stop", "total_duration": 912_000_000_u64, "prompt_eval_count": 700, "eval_count": pieces.len()}),
    );
    (body, words.to_owned())
}

/// An instant Ollama stand-in: answers every `POST /api/chat` with `answer` and keeps the
/// last request body. It serves until the process exits.
struct FakeServer {
    addr: SocketAddr,
    answer: Vec<u8>,
    last: Arc<Mutex<Option<Vec<u8>>>>,
}

impl FakeServer {
    fn start(answer: Vec<u8>) -> FakeServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("address");
        let last = Arc::new(Mutex::new(None));
        let server = FakeServer {
            addr,
            answer: answer.clone(),
            last: Arc::clone(&last),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                // A client that gives up mid-request is not the bench's concern.
                let _ = serve(stream, &answer, &last);
            }
        });
        server
    }

    fn last_request(&self) -> Option<Vec<u8>> {
        self.last.lock().ok()?.clone()
    }
}

/// Reads one request and answers it, then closes the connection.
fn serve(stream: TcpStream, answer: &[u8], last: &Mutex<Option<Vec<u8>>>) -> std::io::Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header)? == 0 || header.trim_end().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let mut stream = stream;
    if request_line.starts_with("POST /api/chat ") {
        if let Ok(mut last) = last.lock() {
            *last = Some(body);
        }
        let head = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            answer.len()
        );
        stream.write_all(head.as_bytes())?;
        stream.write_all(answer)?;
    } else {
        stream.write_all(
            b"HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 18\r\nConnection: close\r\n\r\n404 page not found",
        )?;
    }
    stream.flush()?;
    stream.shutdown(Shutdown::Write)
}
