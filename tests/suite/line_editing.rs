//! Editing the line at the prompt, through the real binary on a pseudo-terminal against
//! the fake Ollama server: Tab completes slash commands, `/model` names from the server's
//! list and paths in the project; Alt-Enter and Ctrl-J put a line break in the request,
//! a bracketed paste keeps its line breaks, and the request reaches the model and the
//! input history with them.

use std::time::{Duration, Instant};

use super::common::{
    TestProject, content, exit_on_a_terminal, on_a_terminal, on_a_terminal_at_home,
    on_a_terminal_of_width, on_a_terminal_then, roles, script_available, skip, wait_for_exit,
};
use super::fake_ollama::{Chunk, FakeOllama, Gate, Reply, answer, done, text};

/// Skips the test (outside CI) when no pseudo-terminal can be had; true when it may run.
fn terminal_or_skip(test: &str) -> bool {
    if script_available() {
        return true;
    }
    skip(test, "util-linux `script` is not installed");
    false
}

/// A fake server with two models that support tools and one that does not.
fn three_models() -> super::fake_ollama::FakeBuilder {
    FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .model("llama3.1:latest", &["completion", "tools"], 131072)
        .model("nomic-embed-text:latest", &["embedding"], 2048)
}

/// Types `keys` at a fresh prompt, waits until the terminal shows `shown`, sends with
/// Return, waits for the model's reply, quits, and returns the text of the one request
/// the fake server received.
fn request_typed_as(test: &str, keys: &str, shown: &str) -> Option<String> {
    request_typed_in(test, &TestProject::git(), keys, shown)
}

/// [`request_typed_as`] in the project `p`.
fn request_typed_in(test: &str, p: &TestProject, keys: &str, shown: &str) -> Option<String> {
    if !terminal_or_skip(test) {
        return None;
    }
    let fake = FakeOllama::start(vec![answer("Got it.", 20, 2)]);
    let mut live = on_a_terminal(p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send(keys);
    live.wait_stdout_after("metron > ", shown);
    live.send("\r");
    live.wait_stdout("Got it.", 1);
    live.wait_stdout_after("Got it.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(roles(&bodies[0]), ["system", "user"], "{run:?}");
    Some(content(&bodies[0], 1))
}

#[test]
fn tab_completes_a_slash_command() {
    if !terminal_or_skip("tab_completes_a_slash_command") {
        return;
    }
    let p = TestProject::git();
    let fake = three_models().start();
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("/mo\t");
    live.wait_stdout_after("metron > ", "/model ");
    // Return runs what Tab completed: the list of installed models.
    live.send("\r");
    live.wait_stdout("models with tool support at", 1);
    live.wait_stdout_after("switches to another; the conversation is kept", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(fake.chat_bodies().is_empty(), "{run:?}");
}

#[test]
fn tab_completes_a_model_name_from_the_servers_list() {
    if !terminal_or_skip("tab_completes_a_model_name_from_the_servers_list") {
        return;
    }
    let p = TestProject::git();
    let fake = three_models().start();
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("/model q\t");
    live.wait_stdout_after("metron > ", "qwen3:8b");
    live.send("\r");
    live.wait_stdout("model: qwen3:8b (was qwen2.5-coder:7b)", 1);
    live.wait_stdout_after("the conversation is kept", "metron > ");
    // The list was asked for once: a second Tab uses it again.
    live.send("/model l\t");
    live.wait_stdout_after("metron > ", "llama3.1:latest");
    live.send("\r");
    live.wait_stdout("model: llama3.1:latest (was qwen3:8b)", 1);
    live.wait_stdout_after("(was qwen3:8b)", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(fake.chat_bodies().is_empty(), "{run:?}");
}

#[test]
fn tab_completes_a_path_in_the_project_after_a_space() {
    if !terminal_or_skip("tab_completes_a_path_in_the_project_after_a_space") {
        return;
    }
    let p = TestProject::git();
    p.file("src/greeting.rs", "pub fn hola() {}\n");
    let fake = FakeOllama::start(vec![answer("Read it.", 20, 2)]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    // A directory completes with its slash, then the file inside it.
    live.send("explain sr\t");
    live.wait_stdout_after("metron > ", "src/");
    live.send("gr\t");
    live.wait_stdout_after("metron > ", "src/greeting.rs");
    live.send("\r");
    live.wait_stdout("Read it.", 1);
    live.wait_stdout_after("Read it.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "explain src/greeting.rs");
}

#[test]
fn return_sends_the_line_on_a_terminal_the_line_editor_cannot_drive() {
    if !terminal_or_skip("return_sends_the_line_on_a_terminal_the_line_editor_cannot_drive") {
        return;
    }
    // TERM=dumb (an editor's shell buffer, a serial console): rustyline reads whole lines
    // from the terminal, so Return must stay the line feed that ends one.
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Got it.", 20, 2)]);
    let dumb = std::ffi::OsStr::new("dumb");
    let mut live = on_a_terminal_of_width(&p, &fake, 80, &[], &[("TERM", dumb)]);
    live.wait_stdout("metron > ", 1);
    live.send("hello\r");
    live.wait_stdout("Got it.", 1);
    live.wait_stdout_after("Got it.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "hello");
}

#[test]
fn tab_completes_a_path_after_a_no_break_space() {
    let p = TestProject::git();
    p.file("src/greeting.rs", "pub fn hola() {}\n");
    // Option-Space on a Mac keyboard types U+00A0, two bytes in UTF-8.
    if let Some(request) = request_typed_in(
        "tab_completes_a_path_after_a_no_break_space",
        &p,
        "explain\u{a0}src/gr\t",
        "src/greeting.rs",
    ) {
        assert_eq!(request, "explain\u{a0}src/greeting.rs");
    }
}

#[test]
fn alt_enter_inserts_a_line_break_and_enter_sends_both_lines() {
    if let Some(request) = request_typed_as(
        "alt_enter_inserts_a_line_break_and_enter_sends_both_lines",
        "first line\x1b\rsecond line",
        // The lines after the first have no prompt; the hint says they are one request.
        "second line  (2 lines; Enter sends them all)",
    ) {
        assert_eq!(request, "first line\nsecond line");
    }
}

#[test]
fn ctrl_j_inserts_a_line_break_and_enter_sends_both_lines() {
    if let Some(request) = request_typed_as(
        "ctrl_j_inserts_a_line_break_and_enter_sends_both_lines",
        "first line\nsecond line",
        "second line  (2 lines; Enter sends them all)",
    ) {
        assert_eq!(request, "first line\nsecond line");
    }
}

#[test]
fn a_bracketed_paste_keeps_its_line_breaks() {
    // The terminal wraps a paste in ESC[200~ ... ESC[201~; its Returns are line breaks in
    // the request, and only the Return typed after it sends.
    if let Some(request) = request_typed_as(
        "a_bracketed_paste_keeps_its_line_breaks",
        "\x1b[200~fn main() {\r    println!(\"hi\");\r}\x1b[201~",
        "}  (3 lines; Enter sends them all)",
    ) {
        assert_eq!(request, "fn main() {\n    println!(\"hi\");\n}");
    }
}

#[test]
fn a_multi_line_request_is_kept_in_the_history_and_recalled_whole() {
    if !terminal_or_skip("a_multi_line_request_is_kept_in_the_history_and_recalled_whole") {
        return;
    }
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("temp HOME");
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Once.", 20, 2)]);
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("first line\x1b\rsecond line\r");
    live.wait_stdout("Once.", 1);
    live.wait_stdout_after("Once.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let file = home.path().join(".metron").join("input_history");
    assert_eq!(
        std::fs::read_to_string(&file).expect("the history file"),
        "first line\\nsecond line\n/exit\n",
        "{run:?}"
    );

    // The next session offers it whole: Up, Up, Return sends both lines again.
    let again = FakeOllama::start(vec![answer("Twice.", 20, 2)]);
    let mut live = on_a_terminal_at_home(&p, &again, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("\x1b[A");
    live.wait_stdout_after("metron > ", "/exit");
    live.send("\x1b[A");
    live.wait_stdout_after("metron > ", "second line");
    live.send("\r");
    live.wait_stdout("Twice.", 1);
    live.wait_stdout_after("Twice.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = again.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "first line\nsecond line");
}

#[test]
fn a_server_that_does_not_answer_completes_no_model_name_and_the_prompt_goes_on() {
    if !terminal_or_skip(
        "a_server_that_does_not_answer_completes_no_model_name_and_the_prompt_goes_on",
    ) {
        return;
    }
    // A port that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", silent.local_addr().expect("address"));
    let p = TestProject::git();
    let fake = FakeOllama::start(Vec::new());
    let mut live = on_a_terminal_of_width(
        &p,
        &fake,
        80,
        &[],
        &[("OLLAMA_HOST", std::ffi::OsStr::new(&url))],
    );
    // The start-up check gives up after its two seconds, then the prompt shows.
    live.wait_stdout("metron > ", 1);
    let pressed = Instant::now();
    live.send("/model q\t");
    // Tab gives up within its limit: Ctrl-U then clears the line it left as typed, and
    // the next command runs.
    live.send("\x15/history\r");
    live.wait_stdout("0 messages after the system prompt", 1);
    let took = pressed.elapsed();
    live.wait_stdout_after("0 messages after the system prompt", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    // One second for the list, and room for a slow, shared machine; without the limit
    // Tab would wait for `timeout_seconds` (180).
    assert!(took < Duration::from_secs(6), "Tab took {took:?}");
    drop(silent);
}

#[test]
fn a_line_typed_while_the_reply_streams_is_sent_by_its_return() {
    // Between two reads the terminal is in its ordinary mode, which would turn that
    // Return into the line feed Ctrl-J sends: the line would wait for another Return.
    if !terminal_or_skip("a_line_typed_while_the_reply_streams_is_sent_by_its_return") {
        return;
    }
    let p = TestProject::git();
    let held = Gate::new();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text("Working"),
            Chunk::Gate(held.clone()),
            text(" on it."),
            done(20, 2),
        ]),
        answer("Second.", 30, 2),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    live.wait_stdout("Working", 1);
    live.send("second\r");
    // The terminal echoes it while the reply is held: it is in metron's input.
    live.wait_stdout_after("Working", "second");
    held.open();
    live.wait_stdout("Second.", 1);
    live.wait_stdout_after("Second.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(content(&bodies[1], 3), "second");
}

#[test]
fn the_terminal_is_left_as_it_was_found() {
    // metron keeps Return a carriage return while it runs; the shell after it gets the
    // terminal's usual translation back.
    if !terminal_or_skip("the_terminal_is_left_as_it_was_found") {
        return;
    }
    let p = TestProject::git();
    let fake = FakeOllama::start(Vec::new());
    let mut live = on_a_terminal_then(&p, &fake, "stty -a; echo stty-done");
    live.wait_stdout("metron > ", 1);
    live.send("/exit\r");
    let run = wait_for_exit(live, "/exit then stty");
    let after = run
        .stdout
        .rsplit_once("/exit")
        .map_or("", |(_, after)| after);
    assert!(after.contains("stty-done"), "{run:?}");
    assert!(
        after.split_whitespace().any(|w| w == "icrnl"),
        "the terminal lost its Return translation: {after}"
    );
}
