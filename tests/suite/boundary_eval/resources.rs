//! Cases on resource limits (issue 25): what a broken or hostile server sends, and what a
//! patch makes metron read. Each server case answers one request with a body that never
//! ends and measures metron's peak memory (its `VmHWM`, sampled until it exits; see
//! [`crate::suite::common::run_with_peak`]) and how long it took: metron must stop
//! reading at its bound, say what happened, and exit well within the probe's time. The
//! patch cases put a patch's files exactly at its read budget (applied) and one byte over
//! (refused before a byte is read). And what `/diff` says of a file the session created or
//! deleted (issue 25, L7): it must not read as if a created file had existed.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use serde_json::json;

use super::*;
use crate::suite::common::{Peak, run_with_peak};
use crate::suite::fake_ollama::{FakeOllama, Reply, call};

cases! {
    "endless error body on /api/chat" => endless_error_body_on_chat: error_status_body_never_ends;
    "endless /api/version (doctor)" => endless_version_body_in_the_doctor: endless_version_in_the_doctor;
    "endless /api/tags (doctor)" => endless_tags_body_in_the_doctor: endless_tags_in_the_doctor;
    "endless /api/show (doctor)" => endless_show_body_in_the_doctor: endless_show_in_the_doctor;
    "endless /api/tags (/model)" => endless_tags_body_for_the_model_list: endless_tags_for_the_model_list;
    "/api/tags of exactly 8 MiB (doctor)" => tags_of_exactly_the_bound_are_read: tags_of_exactly_the_bound;
    "/api/tags one byte over 8 MiB (doctor)" => tags_one_byte_over_the_bound_are_refused: tags_one_byte_over_the_bound;
    "patch reading exactly its budget" => a_patch_reading_exactly_its_budget_is_applied: patch_at_the_budget;
    "patch reading one byte over its budget" => a_patch_reading_one_byte_over_its_budget_is_refused: patch_over_the_budget;
    "/diff of a created file" => diff_shows_a_created_file_as_new: diff_of_a_created_file;
    "/diff of a deleted file" => diff_shows_a_deleted_file_as_deleted: diff_of_a_deleted_file;
    "endless blank lines on /api/chat" => endless_blank_lines_are_cut_at_the_timeout: endless_blank_lines;
    "endless empty chunks on /api/chat" => endless_empty_chunks_are_cut_at_the_timeout: endless_empty_chunks;
}

/// The peak memory a run may reach while a server sends without end: metron's own
/// (about 20 MiB in a debug build) plus the largest body bound (8 MiB) several times over.
/// Before the bounds, the same runs passed 2 GiB.
const PEAK_RSS_KIB: u64 = 64 << 10;

/// How long a run against an endless body may take: less than the doctor's 5 s per probe,
/// so a run that only stopped at the time limit (having read all it could) fails.
const QUICK: Duration = Duration::from_secs(4);

/// Fails unless the run stayed under [`PEAK_RSS_KIB`] (where /proc can tell) and
/// [`QUICK`], and notes both.
fn assert_bounded(m: &mut Measured, peak: &Peak) {
    m.notes.push(format!(
        "peak RSS {} in {} ms",
        shown_kib(peak.rss_kib),
        peak.took.as_millis()
    ));
    if let Some(rss) = peak.rss_kib {
        assert!(
            rss < PEAK_RSS_KIB,
            "peak RSS {rss} KiB, over the {PEAK_RSS_KIB} KiB bound\n{:?}",
            peak.run
        );
    }
    assert!(
        peak.took < QUICK,
        "took {:?}, not under {QUICK:?}\n{:?}",
        peak.took,
        peak.run
    );
}

/// A peak for the report: MiB, or why there is none.
fn shown_kib(kib: Option<u64>) -> String {
    kib.map_or_else(
        || "not measured (no /proc)".to_owned(),
        |kib| format!("{} MiB", kib >> 10),
    )
}

// ---------------------------------------------------------------------------------------
// A server whose one answer never ends
// ---------------------------------------------------------------------------------------

/// The answer of [`Hostile`] that is not the usual one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Endpoint {
    Version,
    Tags,
    Show,
}

/// How long that answer's body is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Length {
    /// It never ends (until metron hangs up).
    Endless,
    /// Exactly this many bytes, the usual answer with a padding field.
    Exactly(usize),
}

impl Endpoint {
    fn path(self) -> &'static str {
        match self {
            Endpoint::Version => "/api/version",
            Endpoint::Tags => "/api/tags",
            Endpoint::Show => "/api/show",
        }
    }

    /// The usual answer, as JSON text with its closing brace left off, so a field can be
    /// appended.
    fn open_answer(self) -> String {
        let answer = match self {
            Endpoint::Version => json!({"version": "0.12.10"}),
            Endpoint::Tags => {
                json!({"models": [{"name": "qwen2.5-coder:7b", "model": "qwen2.5-coder:7b"}]})
            }
            Endpoint::Show => json!({
                "capabilities": ["completion", "tools"],
                "model_info": {"general.architecture": "qwen3", "qwen3.context_length": 32768},
            }),
        }
        .to_string();
        answer[..answer.len() - 1].to_owned()
    }

    /// The body: the usual answer with a `pad` string that is `length` long in all, or
    /// whose string never closes.
    fn body(self, length: Length) -> (Vec<u8>, Option<usize>) {
        let mut start = self.open_answer().into_bytes();
        start.extend_from_slice(br#","pad":""#);
        match length {
            Length::Endless => (start, None),
            Length::Exactly(n) => {
                let pad = n - start.len() - br#""}"#.len();
                (start, Some(pad))
            }
        }
    }

    /// The usual answer of the endpoint asked as `path`.
    fn usual(path: &str) -> String {
        [Endpoint::Version, Endpoint::Tags, Endpoint::Show]
            .into_iter()
            .find(|e| e.path() == path)
            .map_or_else(
                || match path {
                    "/api/ps" => json!({"models": []}).to_string(),
                    _ => json!({"error": "not found"}).to_string(),
                },
                |e| format!("{}}}", e.open_answer()),
            )
    }
}

/// An Ollama look-alike on 127.0.0.1 that answers `/api/version`, `/api/tags`,
/// `/api/show` and `/api/ps` as a server with qwen2.5-coder:7b does, except that one of
/// them sends a chunked body that never ends (until metron hangs up). The fake server
/// scripts only `/api/chat`, hence this one. It records the paths asked.
struct Hostile {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    asked: Arc<Mutex<Vec<String>>>,
    acceptor: Option<JoinHandle<()>>,
}

impl Hostile {
    fn start(endpoint: Endpoint, length: Length) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let stop = Arc::new(AtomicBool::new(false));
        let asked = Arc::new(Mutex::new(Vec::new()));
        let (flag, log) = (Arc::clone(&stop), Arc::clone(&asked));
        let acceptor = std::thread::spawn(move || {
            let mut conns = Vec::new();
            for stream in listener.incoming() {
                if flag.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let (flag, log) = (Arc::clone(&flag), Arc::clone(&log));
                conns.push(std::thread::spawn(move || {
                    serve(stream, endpoint, length, &flag, &log);
                }));
            }
            for conn in conns {
                let _ = conn.join();
            }
        });
        Hostile {
            addr,
            stop,
            asked,
            acceptor: Some(acceptor),
        }
    }

    fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    fn asked(&self) -> Vec<String> {
        self.asked.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

/// Answers one request on `stream`, then closes it.
fn serve(
    stream: TcpStream,
    endpoint: Endpoint,
    length: Length,
    stop: &AtomicBool,
    asked: &Mutex<Vec<String>>,
) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
    let mut content_length = 0usize;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).is_err() || header.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; content_length.min(1 << 20)];
    let _ = reader.read_exact(&mut body);
    asked
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .push(path.clone());
    if path != endpoint.path() {
        let answer = Endpoint::usual(&path);
        let _ = writer.write_all(
            format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            )
            .as_bytes(),
        );
        return;
    }
    // Chunked, so the client cannot know the length before it has read the body.
    let _ = writer.write_all(
        b"HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n",
    );
    let chunk = |data: &[u8]| {
        let mut out = format!("{:x}\r\n", data.len()).into_bytes();
        out.extend_from_slice(data);
        out.extend_from_slice(b"\r\n");
        out
    };
    let (start, pad) = endpoint.body(length);
    if writer.write_all(&chunk(&start)).is_err() {
        return;
    }
    let filler = chunk(&[b'x'; 64 << 10]);
    match pad {
        None => while !stop.load(Ordering::SeqCst) && writer.write_all(&filler).is_ok() {},
        Some(mut left) => {
            while left >= 64 << 10 {
                if writer.write_all(&filler).is_err() {
                    return;
                }
                left -= 64 << 10;
            }
            let mut end = vec![b'x'; left];
            end.extend_from_slice(br#""}"#);
            let _ = writer.write_all(&chunk(&end));
            let _ = writer.write_all(b"0\r\n\r\n");
        }
    }
}

/// `metron --doctor` against a server whose answer at `endpoint` is `length` long: the
/// measurement, the run, and what the doctor printed. Fails unless metron asked
/// `endpoint`.
fn doctor_run(endpoint: Endpoint, length: Length) -> (Measured, Peak, String) {
    let fx = Fixture::new(true);
    let server = Hostile::start(endpoint, length);
    let mut peak = None;
    let m = measure(&fx, || {
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .arg("--doctor")
            .env("OLLAMA_HOST", server.base_url());
        peak = Some(run_with_peak(command));
        (Expect::nothing(), None)
    });
    let peak = peak.expect("ran");
    let path = endpoint.path();
    assert!(
        server.asked().iter().any(|p| p == path),
        "metron never asked {path}: {:?}\n{:?}",
        server.asked(),
        peak.run
    );
    let shown = format!("{}{}", peak.run.stdout, peak.run.stderr);
    (m, peak, shown)
}

/// What the doctor says of an answer past the bound.
fn too_large(path: &str) -> String {
    format!("sent more than 8 MiB for {path}, far more than a model server sends")
}

/// The doctor against an `endpoint` that never ends: it stops reading at the bound, names
/// the endpoint, the bound and the next step in its row, and ends quickly.
fn doctor_against_endless(endpoint: Endpoint) -> Verdict {
    let (mut m, peak, shown) = doctor_run(endpoint, Length::Endless);
    let said = too_large(endpoint.path());
    assert!(shown.contains(&said), "no {said:?} in\n{shown}");
    assert!(
        shown.contains("points at Ollama or at an OpenAI-compatible server"),
        "no next step in\n{shown}"
    );
    assert_eq!(peak.run.code, 1, "{:?}", peak.run);
    assert_bounded(&mut m, &peak);
    Verdict::Measured(m)
}

/// `/api/version` never ends: the doctor's first probe.
pub(super) fn endless_version_in_the_doctor() -> Verdict {
    doctor_against_endless(Endpoint::Version)
}

/// `/api/tags` never ends: the doctor's model row.
pub(super) fn endless_tags_in_the_doctor() -> Verdict {
    doctor_against_endless(Endpoint::Tags)
}

/// `/api/show` never ends: the doctor's tool-support row.
pub(super) fn endless_show_in_the_doctor() -> Verdict {
    doctor_against_endless(Endpoint::Show)
}

/// `/api/tags` of exactly the bound (8 MiB, sent chunked): read whole, and the model row
/// finds the model in it.
pub(super) fn tags_of_exactly_the_bound() -> Verdict {
    let (mut m, peak, shown) = doctor_run(Endpoint::Tags, Length::Exactly(8 << 20));
    assert!(!shown.contains("sent more than"), "{shown}");
    assert!(
        shown.contains("qwen2.5-coder:7b is installed"),
        "the model row did not find the model:\n{shown}"
    );
    m.notes
        .push(format!("read whole, peak RSS {}", shown_kib(peak.rss_kib)));
    Verdict::Measured(m)
}

/// `/api/tags` one byte over the bound: refused, with the bound named.
pub(super) fn tags_one_byte_over_the_bound() -> Verdict {
    let (mut m, peak, shown) = doctor_run(Endpoint::Tags, Length::Exactly((8 << 20) + 1));
    let said = too_large("/api/tags");
    assert!(shown.contains(&said), "no {said:?} in\n{shown}");
    assert_eq!(peak.run.code, 1, "{:?}", peak.run);
    m.notes
        .push(format!("refused, peak RSS {}", shown_kib(peak.rss_kib)));
    Verdict::Measured(m)
}

/// `/api/tags` never ends while the REPL lists the models (`/model`), and at its start-up
/// check before that: the listing names the bound, and the session goes on.
pub(super) fn endless_tags_for_the_model_list() -> Verdict {
    let fx = Fixture::new(true);
    let server = Hostile::start(Endpoint::Tags, Length::Endless);
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command.env("OLLAMA_HOST", server.base_url());
        let mut live = Live::start(command, home);
        live.send("/model\n");
        live.wait_stderr("cannot list the models installed at");
        live.wait_stderr("sent more than 8 MiB for /api/tags");
        live.send("/exit\n");
        run = Some(live.finish());
        (Expect::nothing(), None)
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let tags = server.asked().iter().filter(|p| *p == "/api/tags").count();
    assert!(tags >= 1, "{:?}", server.asked());
    Verdict::Measured(m)
}

/// The chat answers HTTP 500 with a body that never ends: metron keeps the start for the
/// message, stops reading, and exits 1 instead of aborting out of memory.
pub(super) fn error_status_body_never_ends() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![Reply::Endless(
        500,
        r#"{"error":"model runner crashed: "#.to_owned(),
    )]);
    let mut peak = None;
    let mut m = measure(&fx, || {
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "hi"])
            .env("OLLAMA_HOST", fake.base_url());
        peak = Some(run_with_peak(command));
        (Expect::nothing(), Some(&fake))
    });
    let peak = peak.expect("ran");
    assert_eq!(fake.chat_requests().len(), 1, "{:?}", peak.run);
    let stderr = &peak.run.stderr;
    assert!(
        stderr.contains("Ollama answered HTTP 500: {\"error\":\"model runner crashed: xxx"),
        "{stderr}"
    );
    assert!(stderr.contains("check the Ollama server's log"), "{stderr}");
    assert_eq!(peak.run.code, 1, "{:?}", peak.run);
    assert_bounded(&mut m, &peak);
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// A patch's read budget
// ---------------------------------------------------------------------------------------

/// apply_patch's read budget for one patch, with the default `max_patch_file_bytes`.
const BUDGET: usize = 32 << 20;
/// The default `max_patch_file_bytes`: the largest file a patch may touch.
const FILE_CAP: usize = 16 << 20;

/// A file of exactly `size` bytes whose first line is `first`.
fn sized(first: &str, size: usize) -> Vec<u8> {
    let mut bytes = format!("{first}\n").into_bytes();
    let line = b"filler line of a large generated file\n";
    while bytes.len() + line.len() <= size {
        bytes.extend_from_slice(line);
    }
    bytes.resize(size, b'\n');
    bytes
}

/// A patch that changes the first line of each of `names` from `old` to `new`.
fn first_line_patch(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| format!("--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-old\n+new\n"))
        .collect()
}

/// The model sends one patch over files of `sizes` bytes (their sum is the patch's read),
/// with `--yes`; returns the measurement, the tool result and the run.
fn budget_case(
    sizes: &[usize],
    expect: impl FnOnce(&[&str]) -> Expect,
) -> (Measured, String, Peak) {
    let fx = Fixture::new(true);
    let names: Vec<String> = (0..sizes.len()).map(|i| format!("big{i}.txt")).collect();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    for (name, size) in names.iter().zip(sizes) {
        fx.write(name, sized("old", *size));
    }
    let fake = FakeOllama::start(vec![
        call(
            "apply_patch",
            json!({"diff": first_line_patch(&names)}),
            100,
            20,
        ),
        answer("Done.", 200, 2),
    ]);
    let mut peak = None;
    let m = measure(&fx, || {
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "change the first lines", "--yes"])
            .env("OLLAMA_HOST", fake.base_url());
        peak = Some(run_with_peak(command));
        (expect(&names), Some(&fake))
    });
    let peak = peak.expect("ran");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{results:?}\n{:?}", peak.run);
    let result = results.into_iter().next().unwrap_or_default();
    (m, result, peak)
}

/// Two files at the per-file cap: together exactly the budget, so the patch is applied.
pub(super) fn patch_at_the_budget() -> Verdict {
    let sizes = [FILE_CAP, BUDGET - FILE_CAP];
    let (mut m, result, peak) = budget_case(&sizes, |names| {
        names
            .iter()
            .zip(sizes)
            .fold(Expect::nothing(), |e, (name, size)| {
                e.change(name, Want::Bytes(sized("new", size)))
            })
    });
    assert!(result.starts_with("Applied:"), "{result}\n{:?}", peak.run);
    assert_eq!(peak.run.code, 0, "{:?}", peak.run);
    m.notes.push(format!(
        "{} MiB read, peak RSS {}",
        BUDGET >> 20,
        shown_kib(peak.rss_kib)
    ));
    Verdict::Measured(m)
}

/// Three files one byte over the budget together, so the
/// patch is refused from the files' sizes, before any is read, saying how to go on.
pub(super) fn patch_over_the_budget() -> Verdict {
    // The third file is `old` and its newline: 4 bytes, one more than the budget leaves.
    let (mut m, result, peak) =
        budget_case(&[FILE_CAP, BUDGET - FILE_CAP - 3, 4], |_| Expect::nothing());
    assert!(is_refusal(&result), "{result}");
    let said = format!(
        "The 3 files this patch changes hold {} bytes together, more than apply_patch reads for one patch ({BUDGET} bytes",
        BUDGET + 1
    );
    assert!(result.contains(&said), "no {said:?} in {result}");
    assert!(
        result.contains("split the change into several smaller patches"),
        "{result}"
    );
    m.notes
        .push(format!("refused, peak RSS {}", shown_kib(peak.rss_kib)));
    // Nothing was read: metron's memory stayed below the 32 MiB the files hold.
    if let Some(rss) = peak.rss_kib {
        assert!(
            rss < BUDGET as u64 >> 10,
            "peak RSS {rss} KiB: the files were read\n{:?}",
            peak.run
        );
    }
    m.notes.push(first_line(&result));
    Verdict::Measured(m)
}

// ---------------------------------------------------------------------------------------
// What /diff says of a created or deleted file
// ---------------------------------------------------------------------------------------

/// The REPL (`--yes`): the model sends `diff`, then the person asks for `/diff`, which
/// must hold `header` and must not hold `not`.
fn diff_case(diff: &str, expect: Expect, header: &str, not: &str) -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": diff}), 100, 20),
        answer("Patched.", 200, 2),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let mut live = fx.repl(&fake, &["--yes"]);
        live.send("change the files\n");
        live.wait_stdout("Patched.", 1);
        live.send("/diff\n");
        live.wait_stdout(header, 1);
        live.send("/exit\n");
        run = Some(live.finish());
        (expect, Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert!(
        results.len() == 1 && results[0].starts_with("Applied:"),
        "{results:?}"
    );
    assert!(!run.stdout.contains(not), "{not:?} in\n{}", run.stdout);
    let mut m = m;
    m.notes.push(format!(
        "/diff shows {:?}",
        header.lines().collect::<Vec<_>>()
    ));
    Verdict::Measured(m)
}

/// A file the model created is shown from `/dev/null`, with `new file mode 100644`.
pub(super) fn diff_of_a_created_file() -> Verdict {
    diff_case(
        &create_patch("n.txt", "hello"),
        Expect::nothing().change("n.txt", Want::bytes("hello\n")),
        "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+hello\n",
        "--- a/n.txt",
    )
}

/// A file the model deleted is shown to `/dev/null`, with `deleted file mode 100644`.
pub(super) fn diff_of_a_deleted_file() -> Verdict {
    let removed: String = GREET_GO.lines().map(|l| format!("-{l}\n")).collect();
    let lines = GREET_GO.lines().count();
    let diff = format!("--- a/greet.go\n+++ /dev/null\n@@ -1,{lines} +0,0 @@\n{removed}");
    diff_case(
        &diff,
        Expect::nothing().change("greet.go", Want::Absent),
        &format!(
            "diff --git a/greet.go b/greet.go\ndeleted file mode 100644\n--- a/greet.go\n+++ /dev/null\n@@ -1,{lines} +0,0 @@\n"
        ),
        "+++ b/greet.go",
    )
}

/// The `timeout_seconds` of the busy-server cases, from the user's config.
const BUSY_TIMEOUT_S: u64 = 2;
/// How long a busy-server run may take: the timeout plus start-up and a slow machine's
/// slack. The server streams for 60 s, so a watchdog that any chunk restarts runs past it.
const BUSY_BOUND: Duration = Duration::from_secs(15);

/// A server that answers the chat with `chunk` every 100 ms for 60 s and nothing else (no
/// text, no reasoning, no call, no `done`): `-p` must stop at `timeout_seconds`, saying it
/// was given only empty chunks and what to do, instead of running for as long as the
/// server keeps sending (with `timeout_seconds: 10` it ran past 40 s).
fn busy_server(chunk: crate::suite::fake_ollama::Chunk) -> Verdict {
    use crate::suite::fake_ollama::Chunk;
    let fx = Fixture::new(true);
    fx.user_config(&format!(r#"{{"timeout_seconds": {BUSY_TIMEOUT_S}}}"#));
    let body = (0..600)
        .flat_map(|_| [chunk.clone(), Chunk::Pause(Duration::from_millis(100))])
        .collect();
    let fake = FakeOllama::start(vec![Reply::Stream(body)]);
    let mut run = None;
    let mut took = Duration::ZERO;
    let mut m = measure(&fx, || {
        let started = Instant::now();
        run = Some(fx.oneshot(&fake, "hi", &[]));
        took = started.elapsed();
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(
        !fake.chat_bodies().is_empty(),
        "the chat never reached the server: {run:?}"
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stderr
            .contains(&format!("silent for {BUSY_TIMEOUT_S} s"))
            && run.stderr.contains("only empty chunks")
            && run.stderr.contains("raise `timeout_seconds`"),
        "{run:?}"
    );
    assert!(took < BUSY_BOUND, "took {took:?}: {run:?}");
    m.notes.push(format!(
        "cut after {:.1} s with timeout_seconds {BUSY_TIMEOUT_S}",
        took.as_secs_f64()
    ));
    Verdict::Measured(m)
}

/// Blank lines, forever: cut at the timeout.
pub(super) fn endless_blank_lines() -> Verdict {
    busy_server(crate::suite::fake_ollama::Chunk::Raw("\n".to_owned()))
}

/// `{"message":{"role":"assistant","content":""},"done":false}`, forever: cut at the
/// timeout.
pub(super) fn endless_empty_chunks() -> Verdict {
    busy_server(crate::suite::fake_ollama::Chunk::Line(json!({
        "model": crate::suite::fake_ollama::DEFAULT_MODEL,
        "message": {"role": "assistant", "content": ""},
        "done": false
    })))
}
