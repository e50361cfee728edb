//! Reasons reach the person whole: in `--json` and in a pipe on one line, uncut; on a
//! terminal wrapped at spaces, never cut with `…` and never broken in the middle of a word,
//! with continuation rows indented (so only metron's first row can start with its mark).
//! Driven through the real binary with the scripted model, on pipes and on a
//! pseudo-terminal of a set width.

use std::ffi::OsStr;

use serde_json::json;

use super::common::{
    Live, Run, TestProject, assert_rows_fit, events_of_type, exit_on_a_terminal, json_events,
    metron, on_a_terminal_of_width, script_available, skip, terminal_rows, unwrapped, user_config,
};
use super::fake_ollama::{FakeOllama, Reply, answer, call};

/// The mark metron's status lines start with.
const STATUS_MARK: char = '\u{25aa}';

/// The width of the terminals here: the classic one, where the issue was seen.
const COLUMNS: u16 = 80;

/// The model's one model, installed, so no start-up notice comes between the rows.
const MODEL: &str = "qwen3:8b";

/// What metron says of a project program run by a path that no list allows: the reason,
/// with its remedy (`allowed_project_programs`) at the end, where a cut used to fall.
const PATH_REFUSED: &str = "`.venv/bin/pytest` is a path and is refused: run_command runs only programs found by name on PATH outside the project, or the project programs the user lists in `allowed_project_programs`, with their arguments";

/// A fake serving [`MODEL`] and answering with `chat`.
fn fake_with(chat: Vec<Reply>) -> FakeOllama {
    FakeOllama::builder()
        .model(MODEL, &["completion", "tools"], 40960)
        .chat(chat)
        .start()
}

/// The model asks to run the project's pytest by its path, then claims success.
fn pytest_by_path() -> Vec<Reply> {
    vec![
        call(
            "run_command",
            json!({"command": ".venv/bin/pytest -x"}),
            100,
            10,
        ),
        answer("All tests pass.", 120, 4),
    ]
}

// ---- whole in JSON and in a pipe ----

#[test]
fn a_refused_project_program_reaches_json_whole_with_its_remedy() {
    let p = TestProject::git();
    let (_dir, config) = user_config(r#"{"allowed_commands": ["echo"]}"#);
    let fake = fake_with(pytest_by_path());
    let (run, events) = json_events(
        metron(p.root())
            .args(["-p", "run the tests", "--yes", "--json", "--model", MODEL])
            .env("OLLAMA_HOST", fake.base_url())
            .env("METRON_CONFIG", &config)
            .run(),
    );
    let end = events_of_type(&events, "turn_end");
    let end = end
        .first()
        .unwrap_or_else(|| panic!("no turn_end: {run:?}"));
    let status = end["commands"][0]["status"].as_str().unwrap_or_default();
    assert_eq!(status, format!("not run: {PATH_REFUSED}"), "{run:?}");
    let result = events_of_type(&events, "tool_result");
    let summary = result[0]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.ends_with(&format!("→ not run: {PATH_REFUSED}")),
        "{summary}"
    );
    assert!(
        !run.stdout.contains('…'),
        "a reason was cut: {}",
        run.stdout
    );
    // The stderr of a pipe (a CI log) has the line whole, on one line, for grep.
    assert!(
        run.stderr.lines().any(|line| line.starts_with(STATUS_MARK)
            && line.ends_with(&format!("→ not run: {PATH_REFUSED}"))),
        "{run:?}"
    );
}

#[test]
fn a_patch_that_does_not_apply_reaches_json_with_its_whole_reason() {
    let p = TestProject::git();
    // A path long enough that the reason passes the 120 characters it was once cut at.
    let path = "services/billing/internal/greeting/localisation/greet_with_a_long_name.go";
    p.file(
        path,
        "package greet\n\nfunc Greet() string {\n\treturn \"hello\"\n}\n",
    );
    let diff = format!(
        "--- a/{path}\n+++ b/{path}\n@@ -3,3 +3,3 @@\n func Greet() string {{\n-\treturn \"bye\"\n+\treturn \"hola\"\n }}\n"
    );
    let fake = fake_with(vec![
        call("apply_patch", json!({"diff": diff}), 100, 10),
        answer("Done.", 120, 4),
    ]);
    let (run, events) = json_events(
        metron(p.root())
            .args([
                "-p",
                "make Greet return hola",
                "--yes",
                "--json",
                "--model",
                MODEL,
            ])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    let end = events_of_type(&events, "turn_end");
    let end = end
        .first()
        .unwrap_or_else(|| panic!("no turn_end: {run:?}"));
    let reason = end["patches_not_applied"][0]["reason"]
        .as_str()
        .unwrap_or_else(|| panic!("no reason: {end}"));
    assert!(
        reason.chars().count() > 120,
        "the fixture is too short: {reason}"
    );
    assert!(reason.contains(path), "{reason}");
    assert!(reason.ends_with("as it is now"), "{reason}");
    assert!(
        !run.stdout.contains('…'),
        "a reason was cut: {}",
        run.stdout
    );
}

#[test]
fn a_read_refused_at_the_boundary_says_refused_once() {
    let p = TestProject::git();
    p.file(".git/info/notes", "private\n");
    let fake = fake_with(vec![
        call(
            "view_slice",
            json!({"path": ".git/info/notes", "start": 1, "end": 5}),
            100,
            10,
        ),
        answer("I cannot read it.", 120, 4),
    ]);
    let (run, events) = json_events(
        metron(p.root())
            .args(["-p", "show me the notes", "--json", "--model", MODEL])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let result = events_of_type(&events, "tool_result");
    let summary = result[0]["summary"].as_str().unwrap_or_default();
    assert!(
        summary.starts_with(
            "view_slice .git/info/notes 1-5 → refused: `.git/info/notes` is inside .git/"
        ),
        "{summary}"
    );
    assert!(!run.stdout.contains("refused: refused"), "{}", run.stdout);
    assert!(!run.stderr.contains("refused: refused"), "{}", run.stderr);
    assert!(
        run.stderr
            .contains("→ refused: `.git/info/notes` is inside .git/"),
        "{run:?}"
    );
}

#[test]
fn the_servers_own_error_reaches_the_person_and_json_whole() {
    let p = TestProject::git();
    // Longer than the 300 bytes an error body was once cut at, with its point at the end.
    let reason = format!(
        "llama runner process has terminated: {}model requires more system memory (23.4 GiB) than is available (15.2 GiB)",
        "error loading model: ".repeat(16)
    );
    assert!(reason.len() > 300, "the fixture is too short");
    let fake = fake_with(vec![Reply::Error(500, reason.clone())]);
    let (run, events) = json_events(
        metron(p.root())
            .args(["-p", "hello", "--json", "--model", MODEL])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stderr.contains(&reason), "{run:?}");
    let end = events_of_type(&events, "turn_end");
    let error = end
        .first()
        .and_then(|end| end["error"].as_str())
        .unwrap_or_else(|| panic!("no turn_end error: {run:?}"));
    assert!(error.contains(&reason), "{error}");
}

#[test]
fn a_proxys_error_page_is_quoted_in_part_and_says_how_much_was_left_out() {
    let p = TestProject::git();
    let page = format!(
        "<html><body>{}</body></html>",
        "<p>502 Bad Gateway</p>".repeat(40)
    );
    let fake = fake_with(vec![Reply::Raw(502, "text/html", page.clone())]);
    let run = metron(p.root())
        .args(["-p", "hello", "--model", MODEL])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    // Quoted up to 300 bytes (the page is ASCII, so exactly), and the cut says so.
    let quoted = &page[..300];
    let left = page.len() - 300;
    assert!(
        run.stderr
            .contains(&format!("{quoted} [{left} more bytes not shown]")),
        "{run:?}"
    );
    assert!(!run.stderr.contains('…'), "{run:?}");
}

// ---- wrapped on a terminal ----

/// The rows after the first row for which `from` holds, up to (not including) the next
/// row holding the prompt: what one command or turn printed.
fn rows_after(rows: &[String], from: impl Fn(&str) -> bool) -> Vec<String> {
    let start = rows
        .iter()
        .position(|row| from(row))
        .unwrap_or_else(|| panic!("no such row in:\n{}", rows.join("\n")));
    rows[start + 1..]
        .iter()
        .take_while(|row| !row.contains("metron > "))
        .cloned()
        .collect()
}

/// `skip`s and says so when no pseudo-terminal can be had.
fn no_terminal(test: &str) -> bool {
    if script_available() {
        return false;
    }
    skip(test, "util-linux `script` is not installed");
    true
}

/// Types `line` at the prompt of a session on an 80-column terminal, waits for `last`
/// (the end of what it prints) and the prompt after it, and quits.
fn typed_on_a_terminal(p: &TestProject, fake: &FakeOllama, line: &str, last: &str) -> Run {
    let mut live: Live = on_a_terminal_of_width(p, fake, COLUMNS, &["--model", MODEL], &[]);
    live.wait_stdout("metron > ", 1);
    live.send(&format!("{line}\r"));
    live.wait_stdout(last, 1);
    live.wait_stdout_after(last, "metron > ");
    exit_on_a_terminal(live)
}

/// The same command through a pipe: nothing is wrapped there, so its words are the
/// words the terminal must show, in the same order. The banner (up to its blank line)
/// is left out.
fn piped(p: &TestProject, fake: &FakeOllama, line: &str) -> String {
    let run = metron(p.root())
        .args(["--model", MODEL])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(format!("{line}\n"))
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    run.stdout
        .split_once("\n\n")
        .map(|(_, after)| after.to_owned())
        .unwrap_or_else(|| panic!("banner first: {run:?}"))
}

/// Asserts that `rows` (what the terminal showed) are `whole` (the same text through a
/// pipe) wrapped: every row fits, the words are the same in the same order (a word broken
/// across rows would be two), and at least one line was wrapped, so the case was there.
#[track_caller]
fn assert_wrapped_from(rows: &[String], whole: &str, what: &str) {
    assert_rows_fit(rows, usize::from(COLUMNS), what);
    let shown: Vec<&str> = rows.iter().flat_map(|row| row.split_whitespace()).collect();
    let words: Vec<&str> = whole.split_whitespace().collect();
    assert_eq!(
        shown,
        words,
        "{what}: the words differ\n{}",
        rows.join("\n")
    );
    assert!(
        rows.len() > whole.lines().count(),
        "{what}: nothing was long enough to wrap\n{}",
        rows.join("\n")
    );
}

#[test]
fn on_a_terminal_help_wraps_at_80_columns_without_splitting_a_word() {
    if no_terminal("on_a_terminal_help_wraps_at_80_columns_without_splitting_a_word") {
        return;
    }
    let p = TestProject::git();
    let fake = fake_with(Vec::new());
    let run = typed_on_a_terminal(&p, &fake, "/help", "adds a line.");
    let rows = rows_after(&terminal_rows(&run.stdout), |row| row.ends_with("> /help"));
    assert_wrapped_from(&rows, &piped(&p, &fake, "/help"), "/help");
    // An entry's help continues under its column.
    assert!(
        rows.iter()
            .any(|row| row.starts_with(&" ".repeat(15)) && !row.starts_with(&" ".repeat(16))),
        "{}",
        rows.join("\n")
    );
}

#[test]
fn on_a_terminal_config_wraps_at_80_columns_without_splitting_a_word() {
    if no_terminal("on_a_terminal_config_wraps_at_80_columns_without_splitting_a_word") {
        return;
    }
    let p = TestProject::git();
    p.file("src/lib.rs", "pub fn f() {}\n");
    let fake = fake_with(Vec::new());
    let run = typed_on_a_terminal(&p, &fake, "/config", "tools: ");
    let rows = rows_after(&terminal_rows(&run.stdout), |row| {
        row.ends_with("> /config")
    });
    assert_wrapped_from(&rows, &piped(&p, &fake, "/config"), "/config");
}

#[test]
fn on_a_terminal_the_missing_model_notice_wraps_at_80_columns_without_splitting_a_word() {
    if no_terminal(
        "on_a_terminal_the_missing_model_notice_wraps_at_80_columns_without_splitting_a_word",
    ) {
        return;
    }
    let p = TestProject::git();
    // Two models with tools installed, so no offer of one of them follows the notice.
    let fake = FakeOllama::builder()
        .model(MODEL, &["completion", "tools"], 40960)
        .model("llama3.1:latest", &["completion", "tools"], 131072)
        .start();
    let missing = "qwen2.5-coder:32b-instruct-q4_K_M";
    let live = on_a_terminal_of_width(&p, &fake, COLUMNS, &["--model", missing], &[]);
    live.wait_stdout("metron > ", 1);
    let run = exit_on_a_terminal(live);
    let rows = rows_after(&terminal_rows(&run.stdout), |row| row.is_empty());
    let piped = metron(p.root())
        .args(["--model", missing])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    let notice = piped
        .stderr
        .lines()
        .next()
        .unwrap_or_else(|| panic!("no notice: {piped:?}"));
    assert!(notice.starts_with("metron: the model "), "{piped:?}");
    assert_wrapped_from(&rows, notice, "the start-up notice");
}

#[test]
fn on_a_terminal_the_standing_approval_offer_and_grant_wrap_at_80_columns() {
    if no_terminal("on_a_terminal_the_standing_approval_offer_and_grant_wrap_at_80_columns") {
        return;
    }
    let p = TestProject::git();
    let (_dir, config) = user_config(r#"{"allowed_commands": ["echo"]}"#);
    let fake = fake_with(vec![
        call("run_command", json!({"command": "echo hi"}), 100, 10),
        answer("It said hi.", 120, 4),
    ]);
    let mut live = on_a_terminal_of_width(
        &p,
        &fake,
        COLUMNS,
        &["--model", MODEL],
        &[("METRON_CONFIG", config.as_os_str() as &OsStr)],
    );
    live.wait_stdout("metron > ", 1);
    live.send("say hi\r");
    live.wait_stdout("Run this command? [y/N/a] ", 1);
    live.send("a\r");
    live.wait_stdout("It said hi.", 1);
    live.wait_stdout_after("It said hi.", "metron > ");
    let run = exit_on_a_terminal(live);
    let rows = rows_after(&terminal_rows(&run.stdout), |row| row.ends_with("> say hi"));
    let shown: Vec<String> = rows
        .iter()
        .filter(|row| !row.contains("Run this command?"))
        .cloned()
        .collect();
    assert_rows_fit(&shown, usize::from(COLUMNS), "the question and the grant");
    let text = unwrapped(&rows);
    for sentence in [
        "(a = yes, and do not ask again for commands starting with `echo` (allowlisted), run as ",
        "standing approval granted: commands starting with `echo` (allowlisted), run as ",
        ", in this session (listed by /ledger)",
    ] {
        assert!(
            text.contains(sentence),
            "{sentence:?} not whole in:\n{}",
            rows.join("\n")
        );
    }
    // Both were longer than a row: the offer starts on one row and ends on another.
    let offer = rows
        .iter()
        .position(|row| row.starts_with("(a = yes"))
        .unwrap_or_else(|| panic!("no offer in:\n{}", rows.join("\n")));
    assert!(
        !rows[offer].ends_with("in this session)"),
        "{}",
        rows[offer]
    );
}

#[test]
fn on_a_terminal_a_refusal_wraps_whole_under_its_status_line() {
    if no_terminal("on_a_terminal_a_refusal_wraps_whole_under_its_status_line") {
        return;
    }
    let p = TestProject::git();
    let (_dir, config) = user_config(r#"{"allowed_commands": ["echo"]}"#);
    let fake = fake_with(pytest_by_path());
    let mut live = on_a_terminal_of_width(
        &p,
        &fake,
        COLUMNS,
        &["--model", MODEL, "--yes"],
        &[("METRON_CONFIG", config.as_os_str() as &OsStr)],
    );
    live.wait_stdout("metron > ", 1);
    live.send("run the tests\r");
    live.wait_stdout("All tests pass.", 1);
    live.wait_stdout_after("All tests pass.", "metron > ");
    let run = exit_on_a_terminal(live);
    let rows = terminal_rows(&run.stdout);
    let first = rows
        .iter()
        .position(|row| row.starts_with(&format!("{STATUS_MARK} run_command")))
        .unwrap_or_else(|| panic!("no outcome line:\n{}", rows.join("\n")));
    let continued: Vec<String> = rows[first + 1..]
        .iter()
        .take_while(|row| row.starts_with("  ") && !row.starts_with("  | "))
        .cloned()
        .collect();
    assert!(!continued.is_empty(), "not wrapped:\n{}", rows.join("\n"));
    let line: Vec<String> = std::iter::once(rows[first].clone())
        .chain(continued)
        .collect();
    assert_rows_fit(&line, usize::from(COLUMNS), "the outcome line");
    let text = unwrapped(&line);
    assert!(
        text.ends_with(&format!("→ not run: {PATH_REFUSED}")),
        "{text}"
    );
    assert!(!text.contains('…'), "{text}");
    // Only the first row is metron's status line.
    assert_eq!(text.matches(STATUS_MARK).count(), 1, "{text}");
}
