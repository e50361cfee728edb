//! Each tool's outcome line agrees with its result, for empty, truncated, refused and
//! failed results. A call goes the model's way: the agent loop, the fake server's scripted
//! call, the real tool in a temp git repo; the line is read from the `tool_result` event
//! and the text the model got from the next request the fake server recorded.

use std::time::Duration;

use serde_json::{Value, json};

use metron::agent::{Agent, Event, Observer, Settings};
use metron::authority::approval::{ApproveAll, Approver, Decision, Request};
use metron::config::Config;
use metron::tools::{Budgets, CommandLimits};

use super::common::{TestProject, greet_patch, greet_project, tool_messages};
use super::fake_ollama::{FakeOllama, answer, call};

/// The `tool_result` events of a turn.
#[derive(Default)]
struct Lines(Vec<(String, bool)>);

impl Observer for Lines {
    fn event(&mut self, event: &Event) {
        if let Event::ToolResult {
            summary, failed, ..
        } = event
        {
            self.0.push((summary.clone(), *failed));
        }
    }
}

/// Says no to every question.
#[derive(Debug)]
struct DeclineAll;

impl Approver for DeclineAll {
    fn decide(&self, _: &Request<'_>) -> Decision {
        Decision::Declined(None)
    }
}

/// One call of `tool` with `args` in `project` under `config`, approved by `approver`:
/// the person's outcome line, whether it reads as a failure, and the text the model got.
fn outcome(
    project: &TestProject,
    config: Config,
    approver: Box<dyn Approver>,
    tool: &str,
    args: Value,
) -> (String, bool, String) {
    let fake = FakeOllama::start(vec![call(tool, args, 10, 1), answer("done", 10, 1)]);
    let config = Config {
        endpoint: format!("{}/api/chat", fake.base_url()),
        model: "qwen2.5-coder:32b".into(),
        timeout_seconds: 5,
        ..config
    };
    let toolbox = project
        .toolbox(Budgets::from_config(&config))
        .with_limits(CommandLimits::from_config(&config))
        .with_approver(approver);
    let client =
        metron::ollama::Client::new(&config.endpoint, Duration::from_secs(5)).expect("client");
    let mut agent = Agent::new(client, toolbox, Settings::from_config(&config));
    let mut lines = Lines::default();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
        .block_on(agent.turn("go", &mut lines))
        .expect("turn");
    let bodies = fake.chat_bodies();
    let results = tool_messages(&bodies[1]);
    let text = results[0]["content"].as_str().unwrap_or("").to_owned();
    let [(line, failed)] = <[_; 1]>::try_from(lines.0).expect("one tool_result event");
    (line, failed, text)
}

fn read(project: &TestProject, tool: &str, args: Value) -> (String, bool, String) {
    outcome(project, Config::default(), Box::new(ApproveAll), tool, args)
}

fn with_entries(n: u64) -> Config {
    Config {
        list_max_entries: n,
        search_max_matches: n,
        ..Config::default()
    }
}

fn commands(allowed: &[&str]) -> Config {
    Config {
        allowed_commands: allowed.iter().map(|s| (*s).to_owned()).collect(),
        command_timeout_seconds: 2,
        ..Config::default()
    }
}

fn go_files() -> TestProject {
    let project = greet_project();
    project.file(
        "other.go",
        "package greet\n\nfunc Other() string { return \"hello\" }\n",
    );
    project
}

// ---- list_files ----

#[test]
fn list_files_with_no_match_reads_no_files_match() {
    let (line, failed, text) = read(&go_files(), "list_files", json!({"pattern": "*.rs"}));
    assert!(text.contains("No files match"), "{text}");
    assert_eq!(line, "list_files *.rs → no files match");
    assert!(!failed);
}

#[test]
fn list_files_with_a_newline_in_the_glob_counts_files_not_lines() {
    let (line, _, text) = read(&go_files(), "list_files", json!({"pattern": "*.rs\n*.py"}));
    assert!(text.contains("No files match"), "{text}");
    assert!(line.ends_with("→ no files match"), "{line}");
}

#[test]
fn list_files_cut_by_the_budget_says_truncated() {
    let project = go_files();
    let (line, failed, text) = outcome(
        &project,
        with_entries(1),
        Box::new(ApproveAll),
        "list_files",
        json!({}),
    );
    assert!(text.contains("[truncated to 1 entries"), "{text}");
    assert_eq!(line, "list_files → 1 file (truncated)");
    assert!(!failed);
}

#[test]
fn list_files_refused_says_why() {
    let (line, failed, text) = read(&go_files(), "list_files", json!({"pattern": "a{"}));
    assert!(text.starts_with("bad glob"), "{text}");
    assert!(
        line.starts_with("list_files `a{` → refused: bad glob"),
        "{line}"
    );
    assert!(failed);
}

#[test]
fn list_files_with_bad_arguments_is_an_error() {
    let (line, failed, _) = read(&go_files(), "list_files", json!({"pattern": ["*.go"]}));
    assert!(
        line.starts_with("list_files `[\"*.go\"]` → error: "),
        "{line}"
    );
    assert!(failed);
}

// ---- find_symbol ----

#[test]
fn find_symbol_with_no_definition_reads_no_definition() {
    let (line, failed, text) = read(&go_files(), "find_symbol", json!({"symbol": "Absent"}));
    assert!(text.starts_with("No definition of `Absent`"), "{text}");
    assert_eq!(line, "find_symbol Absent → no definition");
    assert!(!failed);
}

#[test]
fn find_symbol_names_the_first_definition_and_the_cut() {
    let project = go_files();
    project.file(
        "third.go",
        "package greet\n\nfunc Greet2() {}\n\ntype Greet int\n",
    );
    let (line, _, text) = outcome(
        &project,
        with_entries(1),
        Box::new(ApproveAll),
        "find_symbol",
        json!({"symbol": "Greet"}),
    );
    assert!(text.contains("[truncated to 1 definitions"), "{text}");
    assert_eq!(
        line,
        "find_symbol Greet → 1 definition (greet.go:4), truncated"
    );
}

#[test]
fn find_symbol_with_bad_arguments_is_an_error() {
    let (line, failed, _) = read(&go_files(), "find_symbol", json!({}));
    assert!(line.starts_with("find_symbol → error: "), "{line}");
    assert!(failed);
}

// ---- search_text ----

#[test]
fn search_text_with_no_match_reads_no_matches() {
    let (line, failed, text) = read(&go_files(), "search_text", json!({"pattern": "zzz_absent"}));
    assert!(text.contains("No matches found"), "{text}");
    assert_eq!(line, "search_text \"zzz_absent\" → no matches");
    assert!(!failed);
}

#[test]
fn search_text_counts_matches_and_files_and_the_cut() {
    let (line, _, text) = outcome(
        &go_files(),
        with_entries(2),
        Box::new(ApproveAll),
        "search_text",
        json!({"pattern": "hello|package"}),
    );
    assert!(text.contains("[truncated to 2 matches"), "{text}");
    assert!(
        line.ends_with("→ 2 matches in 1 file (truncated)")
            || line.ends_with("in 2 files (truncated)"),
        "{line}"
    );
}

#[test]
fn search_text_of_an_invalid_regex_says_plain_text() {
    let (line, _, text) = read(&go_files(), "search_text", json!({"pattern": "Greet("}));
    assert!(text.contains("searched for it as plain text"), "{text}");
    assert!(line.ends_with("(as plain text)"), "{line}");
}

// ---- view_slice ----

#[test]
fn view_slice_counts_the_lines_shown() {
    let (line, failed, text) = read(
        &go_files(),
        "view_slice",
        json!({"path": "greet.go", "start": 1, "end": 500}),
    );
    let shown = text.lines().filter(|l| l.contains(" | ")).count();
    assert_eq!(line, format!("view_slice greet.go 1-500 → {shown} lines"));
    assert!(!failed);
}

#[test]
fn view_slice_past_the_end_is_refused() {
    let (line, failed, text) = read(
        &go_files(),
        "view_slice",
        json!({"path": "greet.go", "start": 90, "end": 95}),
    );
    assert!(text.contains("past the end of the file"), "{text}");
    assert!(
        line.starts_with("view_slice greet.go 90-95 → refused: "),
        "{line}"
    );
    assert!(failed);
}

#[test]
fn view_slice_of_a_missing_file_is_refused() {
    let (line, failed, _) = read(
        &go_files(),
        "view_slice",
        json!({"path": "absent.go", "start": 1, "end": 2}),
    );
    assert!(
        line.starts_with("view_slice absent.go 1-2 → refused: "),
        "{line}"
    );
    assert!(failed);
}

// ---- apply_patch ----

#[test]
fn apply_patch_written_names_the_files() {
    let (line, failed, text) = read(&go_files(), "apply_patch", json!({"diff": greet_patch()}));
    assert!(text.starts_with("Applied:"), "{text}");
    assert_eq!(line, "apply_patch → wrote greet.go (+1 -1)");
    assert!(!failed);
}

#[test]
fn apply_patch_declined_says_not_applied() {
    let (line, failed, _) = outcome(
        &go_files(),
        Config::default(),
        Box::new(DeclineAll),
        "apply_patch",
        json!({"diff": greet_patch()}),
    );
    assert_eq!(line, "apply_patch → not applied: declined");
    assert!(failed);
}

#[test]
fn apply_patch_that_does_not_fit_says_not_applied() {
    let wrong = greet_patch().replace("\"hello\"", "\"bonjour\"");
    let (line, failed, text) = read(&go_files(), "apply_patch", json!({"diff": wrong}));
    assert!(text.contains("Nothing was changed"), "{text}");
    assert!(line.starts_with("apply_patch → not applied: "), "{line}");
    assert!(failed);
}

// ---- run_command ----

#[test]
fn run_command_that_exits_0_says_so() {
    let (line, failed, text) = outcome(
        &go_files(),
        commands(&["true"]),
        Box::new(ApproveAll),
        "run_command",
        json!({"command": "true"}),
    );
    assert!(text.contains("exit status 0"), "{text}");
    assert!(
        line.starts_with("run_command `true` → exit 0 after "),
        "{line}"
    );
    assert!(!failed);
}

#[test]
fn run_command_that_fails_says_its_exit_status() {
    let (line, failed, text) = outcome(
        &go_files(),
        commands(&["false"]),
        Box::new(ApproveAll),
        "run_command",
        json!({"command": "false"}),
    );
    assert!(text.contains("exit status 1"), "{text}");
    assert!(
        line.starts_with("run_command `false` → exit 1 after "),
        "{line}"
    );
    assert!(failed);
}

#[test]
fn run_command_that_times_out_says_so() {
    let (line, failed, text) = outcome(
        &go_files(),
        commands(&["sleep"]),
        Box::new(ApproveAll),
        "run_command",
        json!({"command": "sleep 30"}),
    );
    assert!(text.contains("timed out after 2 s; killed"), "{text}");
    assert!(
        line.starts_with("run_command `sleep 30` → timed out after 2 s; killed after "),
        "{line}"
    );
    assert!(failed);
}

#[test]
fn run_command_not_allowed_says_not_run() {
    let (line, failed, _) = outcome(
        &go_files(),
        commands(&["true"]),
        Box::new(ApproveAll),
        "run_command",
        json!({"command": "false"}),
    );
    assert!(
        line.starts_with("run_command `false` → not run: "),
        "{line}"
    );
    assert!(failed);
}
