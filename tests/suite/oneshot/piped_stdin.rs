//! stdin as context: with `-p "REQUEST"` and a stdin that is not a terminal, what is piped
//! in follows the request in a fenced block. At most 32 KiB is attached and at most one
//! byte more is read into memory; a stdin that stays silent is waited for 3 s; bytes that
//! are not UTF-8 are shown as U+FFFD. Checked in the request the fake server received.
//! `-p -`, where stdin is the request itself, takes at most 256 KiB.

use std::io::{Seek, Write};
use std::process::Stdio;
use std::time::{Duration, Instant};

use super::super::common::{Live, PATIENCE, TestProject, content, hermetic, metron};
use super::super::fake_ollama::{FakeOllama, Gate, Reply, answer};

/// The byte cap on piped input (docs/usage.md, "One-shot mode").
const CAP: usize = 32 * 1024;

/// `lines` lines of 16 bytes each.
fn sixteen_byte_lines(lines: usize) -> String {
    (0..lines).map(|n| format!("line {n:>10}\n")).collect()
}

/// The user message of the one request the fake received.
fn request_text(fake: &FakeOllama) -> String {
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "one request");
    content(&bodies[0], 1)
}

#[test]
fn piped_stdin_is_attached_as_context() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Looks fine.", 10, 3)]);
    let diff = "--- a/x.go\n+++ b/x.go\n@@ -1 +1 @@\n-a\n+b\n";
    let run = metron(p.root())
        .args(["-p", "review this diff"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(diff)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Looks fine.\n");
    assert_eq!(
        request_text(&fake),
        format!(
            "review this diff\n\nThe input piped to metron (stdin, {} bytes):\n```\n{diff}```",
            diff.len()
        )
    );
    assert!(
        !run.stderr.contains("stdin"),
        "no note when nothing was cut: {run:?}"
    );
}

#[test]
fn piped_stdin_at_the_cap_is_attached_whole() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let input = sixteen_byte_lines(CAP / 16);
    assert_eq!(input.len(), CAP);
    let run = metron(p.root())
        .args(["-p", "summarise"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(input.clone())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let sent = request_text(&fake);
    assert!(
        sent.starts_with(&format!(
            "summarise\n\nThe input piped to metron (stdin, {CAP} bytes):\n```\n"
        )),
        "{}",
        &sent[..200]
    );
    assert!(sent.ends_with(&format!("{input}```")));
    assert!(!run.stderr.contains("stdin"), "{run:?}");
}

#[test]
fn piped_stdin_over_the_cap_is_cut_with_a_note() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    // One byte over the cap: the last whole line within it ends at the cap.
    let whole = sixteen_byte_lines(CAP / 16);
    let run = metron(p.root())
        .args(["-p", "summarise"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(format!("{whole}x"))
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let sent = request_text(&fake);
    assert!(
        sent.starts_with(&format!(
            "summarise\n\nThe input piped to metron (stdin, {CAP} bytes): it was longer than {CAP} bytes, so it is cut after its last whole line within them, and the rest was not read:\n```\n"
        )),
        "{}",
        &sent[..300]
    );
    assert!(sent.ends_with(&format!("{whole}```")));
    assert!(
        run.stderr.contains(&format!(
            "metron: stdin is longer than {CAP} bytes: the model gets its first {CAP} bytes (up to the last whole line)"
        )),
        "{run:?}"
    );
}

#[test]
fn stdin_from_a_file_is_read_no_further_than_the_cap_and_one_byte() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let dir = tempfile::tempdir().expect("temp dir");
    let path = dir.path().join("big.txt");
    std::fs::write(&path, sixteen_byte_lines(CAP / 16 * 4)).expect("write");
    let mut file = std::fs::File::open(&path).expect("open");
    // The child's stdin shares this open file, and so its offset: how far metron read.
    let stdin = file.try_clone().expect("dup");
    let (mut command, _home) = hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    let output = command
        .args(["-p", "summarise"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(Stdio::from(stdin))
        .output()
        .expect("run metron");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let read = file.stream_position().expect("offset");
    assert_eq!(read, CAP as u64 + 1, "{stderr}");
    assert!(stderr.contains("stdin is longer than"), "{stderr}");
}

#[test]
fn an_open_stdin_with_nothing_coming_is_waited_for_3_s_then_left_out() {
    // A CI runner's stdin: a pipe that stays open and never carries a byte.
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let started = Instant::now();
    let live = Live::metron(p.root(), &["-p", "what is here?"], &fake);
    assert!(
        fake.wait_for_chats(1, PATIENCE),
        "the request never came: {}",
        live.stderr()
    );
    let waited = started.elapsed();
    assert!(waited >= Duration::from_secs(3), "asked after {waited:?}");
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(request_text(&fake), "what is here?");
    assert!(
        run.stderr.contains(
            "metron: nothing arrived on stdin within 3 s, so the request goes without it"
        ),
        "{run:?}"
    );
}

#[test]
fn stdin_that_pauses_is_attached_up_to_the_pause_with_a_note() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let mut live = Live::metron(p.root(), &["-p", "explain"], &fake);
    live.send("first part\n");
    assert!(
        fake.wait_for_chats(1, PATIENCE),
        "the request never came: {}",
        live.stderr()
    );
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        request_text(&fake),
        "explain\n\nThe input piped to metron (stdin, 11 bytes): it paused for 3 s without closing, so this is what arrived before the pause, and more may have followed:\n```\nfirst part\n```"
    );
    assert!(
        run.stderr.contains(
            "metron: stdin paused for 3 s without closing, so the model gets the 11 bytes"
        ),
        "{run:?}"
    );
}

#[test]
fn dev_null_stdin_attaches_nothing_and_says_nothing() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let run = metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url())
        .run_within(PATIENCE)
        .expect("metron exits");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(request_text(&fake), "hello");
    assert!(!run.stderr.contains("stdin"), "{run:?}");
}

#[test]
fn piped_bytes_that_are_not_utf8_are_shown_as_replacement_characters() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("ok", 10, 3)]);
    let run = metron(p.root())
        .args(["-p", "what is this?"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(b"caf\xe9 \xff\xfe ok\n".to_vec())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        request_text(&fake),
        "what is this?\n\nThe input piped to metron (stdin, 11 bytes; not UTF-8: 3 bytes, each run of them shown as \u{FFFD}):\n```\ncaf\u{FFFD} \u{FFFD} ok\n```"
    );
    assert!(
        run.stderr
            .contains("metron: stdin holds bytes that are not UTF-8 (3 bytes)"),
        "{run:?}"
    );
}

#[test]
fn the_rest_of_a_long_pipe_is_read_away_so_its_writer_is_not_broken() {
    // Under `set -o pipefail`, a writer killed by a broken pipe fails the CI step.
    let p = TestProject::git();
    let gate = Gate::new();
    let fake = FakeOllama::start(vec![Reply::AfterGate(
        gate.clone(),
        Box::new(answer("ok", 10, 3)),
    )]);
    let (mut command, _home) = hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    let mut child = command
        .args(["-p", "summarise"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn metron");
    let mut pipe = child.stdin.take().expect("stdin");
    // Far more than the cap and a pipe's buffer: it ends only if metron keeps reading.
    let (done, wrote) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = done.send(pipe.write_all(&vec![b'y'; CAP * 16]));
    });
    assert!(fake.wait_for_chats(1, PATIENCE), "the request never came");
    // metron is still waiting for the model (the gate is shut), and the writer is done.
    let wrote = wrote.recv_timeout(PATIENCE);
    assert!(
        child.try_wait().expect("poll").is_none(),
        "metron is still running"
    );
    assert!(
        matches!(wrote, Ok(Ok(()))),
        "the writer did not finish while metron ran: {wrote:?}"
    );
    gate.open();
    let status = child.wait().expect("wait");
    assert_eq!(status.code(), Some(0));
    let sent = request_text(&fake);
    assert!(
        sent.contains("it was longer than 32768 bytes"),
        "{}",
        &sent[..200]
    );
}

/// The bound on `-p -` (docs/usage.md, "One-shot mode").
const REQUEST_CAP: usize = 256 * 1024;

#[test]
fn a_request_on_stdin_at_the_cap_is_sent_whole() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Read it.", 10, 3)]);
    let request = sixteen_byte_lines(REQUEST_CAP / 16);
    assert_eq!(request.len(), REQUEST_CAP);
    let run = metron(p.root())
        .args(["-p", "-"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(request.clone())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(request_text(&fake), request);
}

#[test]
fn a_request_on_stdin_over_the_cap_is_refused_with_the_next_step() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![]);
    let mut request = sixteen_byte_lines(REQUEST_CAP / 16);
    request.push('x');
    let run = metron(p.root())
        .args(["-p", "-"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(request)
        .run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("the request on stdin is over 256 KiB")
            && run.stderr.contains("pipe the input in"),
        "{run:?}"
    );
    assert!(fake.chat_bodies().is_empty(), "nothing was sent");
}

#[test]
fn a_request_on_stdin_that_is_not_utf8_is_sent_with_replacement_characters() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Read it.", 10, 3)]);
    let run = metron(p.root())
        .args(["-p", "-"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(b"explain caf\xe9\n".to_vec())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(request_text(&fake), "explain caf\u{fffd}\n");
}
