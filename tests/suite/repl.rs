//! The interactive REPL, driven through the real `metron` binary against the fake Ollama
//! server: the banner and the slash commands, a whole editing session, approvals (piped
//! stdin fails closed; a pseudo-terminal asks), the trust rules for `auto_approve_patches`,
//! the context warning, Ctrl-C during a reply and at an idle prompt (where it clears the
//! line and never quits), and the input history kept between sessions on a terminal.
//!
//! Most tests pipe stdin, which is how scripts drive the REPL: lines are read as they come,
//! no prompt is printed, and approval questions cannot be asked. Tests that must act while
//! metron runs (Ctrl-C, typing an answer) use [`Live`], which keeps the pipes open and
//! collects the output as it arrives.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use metron::agent::prompt::{SYSTEM_PROMPT, tool_definitions};
use metron::config::KEYS;
use metron::tools::{ToolSpec, spec};

use super::common::{
    GREET_GO, GREET_HOLA, Live, PATIENCE, Run, TestProject, content, exit_on_a_terminal,
    greet_patch, greet_project, greet_session, hermetic, metron, on_a_terminal,
    on_a_terminal_at_home, rejoined, roles, script_available, skip, tool_messages, user_config,
    wait_for_exit,
};
use super::fake_ollama::{
    Chunk, FakeOllama, Gate, Reply, answer, call, done, json_answer, json_calls, refused_url, text,
    tool_calls,
};

/// A request a server would accept after an interrupted or failed turn: every tool call of
/// an assistant message is answered by a `tool` message with its id before the next
/// assistant or user message, and two user messages never follow each other.
#[track_caller]
fn assert_well_formed(body: &Value) {
    let messages = body["messages"].as_array().cloned().unwrap_or_default();
    assert_eq!(
        messages.first().map(|m| m["role"].clone()),
        Some(json!("system"))
    );
    for (i, message) in messages.iter().enumerate() {
        if message["role"] == "user" && i > 0 {
            assert_ne!(
                messages[i - 1]["role"],
                "user",
                "two user messages in a row at {i}: {body:#}"
            );
        }
        let Some(calls) = message["tool_calls"].as_array() else {
            continue;
        };
        let answered: Vec<&Value> = messages[i + 1..]
            .iter()
            .take_while(|m| m["role"] == "tool")
            .map(|m| &m["tool_call_id"])
            .collect();
        for call in calls {
            assert!(
                answered.contains(&&call["id"]),
                "tool call {} at {i} has no result: {body:#}",
                call["id"]
            );
        }
    }
}

/// The registry entries of these tools, in this order.
fn specs(names: &[&str]) -> Vec<&'static ToolSpec> {
    names
        .iter()
        .map(|n| spec(n).unwrap_or_else(|| panic!("no tool {n}")))
        .collect()
}

/// The banner of a session in the git work tree at `root`, for `model` chosen as `chosen`
/// says (`the built-in default`, `from --model`...), with the config line.
/// The context line is the one of a server that did not answer (see [`FAKE_CONTEXT`]).
fn banner(root: &Path, model: &str, chosen: &str, config: &str) -> String {
    format!(
        "=== metron (model: {model}, {chosen}) ===\nContext-disciplined terminal coder. /help for commands, /exit to quit.\n{NO_SERVER_CONTEXT}\nproject: {} (a git work tree)\nconfig: {config}\n\n",
        root.display()
    )
}

/// The banner's context line when no server said how long the model was trained for.
const NO_SERVER_CONTEXT: &str =
    "context 16384 tokens (num_ctx; the server did not report the model's trained length)";

/// The banner's context line for the fake server's default model.
const FAKE_CONTEXT: &str = "context 16384 tokens (num_ctx; the model was trained on 32768)";

/// The banner of a session on the defaults against the fake server's default model.
fn fake_banner(root: &Path) -> String {
    default_banner(root).replace(NO_SERVER_CONTEXT, FAKE_CONTEXT)
}

/// The banner of a session on the defaults in the git work tree at `root`.
fn default_banner(root: &Path) -> String {
    banner(
        root,
        "qwen2.5-coder:7b",
        "the built-in default",
        "built-in defaults (no config file)",
    )
}

// ---------------------------------------------------------------------------------------
// The banner and the commands
// ---------------------------------------------------------------------------------------

#[test]
fn the_banner_names_the_project_the_model_its_layer_and_the_config_file() {
    // Nothing answers at the endpoint: the start-up check says nothing, and the banner is
    // all there is.
    let nobody = refused_url();
    // As the README shows it: a project file is named relative to the project, even when
    // metron starts in a subdirectory.
    let p = TestProject::git();
    p.file(".metron.json", r#"{"model": "qwen3.8:27b-mlx"}"#);
    p.dir("deep/er");
    for cwd in [p.root().to_path_buf(), p.path("deep/er")] {
        let run = metron(&cwd).env("OLLAMA_HOST", &nobody).run();
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            run.stdout,
            banner(
                p.root(),
                "qwen3.8:27b-mlx",
                "from .metron.json",
                ".metron.json"
            ),
            "{run:?}"
        );
        assert_eq!(run.stderr, "", "{run:?}");
    }

    // No file at all, and the model from the environment.
    let p = TestProject::git();
    let run = metron(p.root())
        .env("OLLAMA_HOST", &nobody)
        .env("OLLAMA_MODEL", "gemma4:12b-mlx")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        banner(
            p.root(),
            "gemma4:12b-mlx",
            "from $OLLAMA_MODEL",
            "built-in defaults (no config file)"
        ),
        "{run:?}"
    );

    // A user file outside the project is named by its full path.
    let (_dir, path) = user_config(r#"{"model": "mine:7b"}"#);
    let run = metron(p.root())
        .env("OLLAMA_HOST", &nobody)
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let file = path.display().to_string();
    assert_eq!(
        run.stdout,
        banner(p.root(), "mine:7b", &format!("from {file}"), &file),
        "{run:?}"
    );

    // --model (and -m) beats the environment and the file.
    for flag in ["--model", "-m"] {
        let run = metron(p.root())
            .args([flag, "chosen:3b"])
            .env("OLLAMA_HOST", &nobody)
            .env("OLLAMA_MODEL", "gemma4:12b-mlx")
            .env("METRON_CONFIG", &path)
            .run();
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            run.stdout,
            banner(p.root(), "chosen:3b", "from --model", &file),
            "{run:?}"
        );
    }

    // The default, and a project that is not a git work tree.
    let plain = TestProject::new();
    let run = metron(plain.root()).env("OLLAMA_HOST", &nobody).run();
    assert_eq!(run.code, 0, "{run:?}");
    let first_lines: Vec<&str> = run.stdout.lines().take(4).collect();
    assert_eq!(
        first_lines,
        [
            "=== metron (model: qwen2.5-coder:7b, the built-in default) ===",
            "Context-disciplined terminal coder. /help for commands, /exit to quit.",
            NO_SERVER_CONTEXT,
            &format!(
                "project: {} (not a git work tree, so apply_patch is not offered)",
                plain.root().display()
            ),
        ],
        "{run:?}"
    );
}

/// With both the user's file and the project's `.metron.json`, the banner names both, the
/// user's first and the project's on top; the model's layer is the project's file.
#[test]
fn the_banner_names_both_config_files_when_both_exist() {
    let p = TestProject::git();
    p.file(".metron.json", r#"{"model": "project:1b"}"#);
    let (_dir, path) = user_config(r#"{"model": "mine:7b", "max_turns": 3}"#);
    let run = metron(p.root())
        .env("OLLAMA_HOST", refused_url())
        .env("METRON_CONFIG", &path)
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let files = format!(
        "{} (yours), .metron.json (the project's, on top)",
        path.display()
    );
    // The project's model replaced the user's own: the banner says so, naming both, and
    // so does a warning at start.
    assert_eq!(
        run.stdout,
        banner(
            p.root(),
            "project:1b",
            "from .metron.json, instead of your mine:7b",
            &files
        ),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("chooses the model project:1b instead of yours (mine:7b"),
        "{run:?}"
    );
}

#[test]
fn help_lists_every_command() {
    let p = TestProject::git();
    let run = metron(p.root())
        .env("OLLAMA_HOST", refused_url())
        .stdin("/help\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let help = run
        .stdout
        .strip_prefix(&default_banner(p.root()))
        .unwrap_or_else(|| panic!("banner first: {run:?}"));
    for command in [
        "/help", "/config", "/model", "/reset", "/history", "/tags", "/ledger", "/context", "/exit",
    ] {
        assert!(
            help.lines().any(|l| l.starts_with(&format!("{command} "))),
            "/help lacks a line for {command}: {help}"
        );
    }
    for alias in ["exit", "quit", "/quit", "Ctrl-D", "Ctrl-C"] {
        assert!(
            help.contains(alias),
            "/help does not mention {alias}: {help}"
        );
    }
    assert_eq!(run.stderr, "", "{run:?}");
}

#[test]
fn config_shows_every_key_with_its_layer_and_the_tools_with_their_cost() {
    let p = TestProject::git();
    // A Rust file, so find_symbol is offered.
    p.file("src/lib.rs", "pub fn f() {}\n");
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .chat(vec![answer("Hi.", 10, 1)])
        .start();
    let m = metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir .metron");
    std::fs::write(&user_file, r#"{"num_ctx": 8192, "max_turns": 4}"#).expect("write config");
    // The project's file is laid over the user's: its budget stands, its looser
    // `max_turns` does not, and the environment's model is above both.
    p.file(
        ".metron.json",
        r#"{"max_slice_lines": 200, "max_turns": 9, "model": "project:1b"}"#,
    );
    let run = m
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "qwen3:8b")
        .stdin("/config\nhello\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let user_layer = format!("(user {})", user_file.display());
    let files = run
        .stdout
        .lines()
        .find(|l| l.starts_with("config files: "))
        .unwrap_or_else(|| panic!("no config files line: {}", run.stdout));
    assert_eq!(
        files,
        format!(
            "config files: {} (yours), .metron.json (the project's, on top)",
            user_file.display()
        )
    );
    assert!(
        run.stderr.contains("ignoring `max_turns` 9") && run.stderr.contains("sets 4"),
        "{run:?}"
    );
    for key in KEYS {
        let line = run
            .stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .unwrap_or_else(|| panic!("/config has no line for {key}: {}", run.stdout));
        let layer = match *key {
            "endpoint" => "($OLLAMA_HOST)",
            "model" => "($OLLAMA_MODEL)",
            "num_ctx" | "max_turns" => user_layer.as_str(),
            "max_slice_lines" => "(project .metron.json)",
            _ => "(default)",
        };
        assert!(
            line.ends_with(layer),
            "{key}: {line:?} should end with {layer}"
        );
    }
    let value_of = |key: &str| {
        run.stdout
            .lines()
            .find(|l| l.split_whitespace().next() == Some(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .unwrap_or_default()
            .to_owned()
    };
    assert_eq!(
        value_of("endpoint"),
        format!("\"{}/api/chat\"", fake.base_url())
    );
    assert_eq!(value_of("model"), "\"qwen3:8b\"");
    assert_eq!(value_of("num_ctx"), "8192");
    assert_eq!(value_of("max_turns"), "4");
    assert_eq!(value_of("max_slice_lines"), "200");

    // The tools line: the five that can run here, and what their schemas cost.
    let tools = run
        .stdout
        .lines()
        .find(|l| l.starts_with("tools: "))
        .unwrap_or_else(|| panic!("no tools line: {}", run.stdout));
    let (names, cost) = tools
        .strip_prefix("tools: ")
        .and_then(|t| t.split_once(" ("))
        .unwrap_or_else(|| panic!("{tools}"));
    assert_eq!(
        names,
        "list_files, find_symbol, search_text, view_slice, apply_patch"
    );
    // The cost is the size of the tool definitions every request carries, verbatim.
    let definitions = tool_definitions(&specs(&[
        "list_files",
        "find_symbol",
        "search_text",
        "view_slice",
        "apply_patch",
    ]));
    let bytes = definitions.len();
    assert_eq!(
        cost,
        format!(
            "{bytes} schema bytes, ~{} tokens per request)",
            // The estimate is a quarter of the bytes, rounded up.
            bytes.div_ceil(4)
        ),
        "{tools}"
    );
    let requests = fake.chat_requests();
    assert_eq!(requests.len(), 1, "one question after /config");
    let sent = String::from_utf8_lossy(&requests[0].raw_body);
    assert!(
        sent.contains(&format!("\"tools\":{definitions}")),
        "the request carries exactly the definitions /config measured: {sent}"
    );
    let withdrawn = run
        .stdout
        .lines()
        .find(|l| l.starts_with("withdrawn: "))
        .unwrap_or_else(|| panic!("no withdrawn line: {}", run.stdout));
    assert!(
        withdrawn.starts_with("withdrawn: run_command (") && withdrawn.contains("allowed_commands"),
        "{withdrawn}"
    );

    // Outside a git repository apply_patch is withdrawn as well; disabled_tools withdraws
    // what it names; and the schema cost shrinks accordingly.
    let plain = TestProject::new();
    plain.file(".metron.json", r#"{"disabled_tools": ["search_text"]}"#);
    plain.file("main.go", "package main\n");
    let run2 = metron(plain.root()).stdin("/config\n").run();
    assert_eq!(run2.code, 0, "{run2:?}");
    let tools2 = run2
        .stdout
        .lines()
        .find(|l| l.starts_with("tools: "))
        .unwrap_or_default();
    assert!(
        tools2.starts_with("tools: list_files, find_symbol, view_slice ("),
        "{tools2}"
    );
    let bytes2: usize = tools2
        .split(" (")
        .nth(1)
        .and_then(|t| t.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    assert_eq!(
        bytes2,
        tool_definitions(&specs(&["list_files", "find_symbol", "view_slice"])).len(),
        "{tools2}"
    );
    for name in ["search_text", "apply_patch", "run_command"] {
        assert!(
            run2.stdout.contains(&format!("withdrawn: {name} (")),
            "{name}: {}",
            run2.stdout
        );
    }
    assert!(
        run2.stdout.contains("listed in `disabled_tools`"),
        "{}",
        run2.stdout
    );
    assert!(
        run2.stdout
            .contains("disabled_tools            [\"search_text\"]  (project .metron.json)"),
        "{}",
        run2.stdout
    );
}

#[test]
fn history_counts_messages_and_bytes_and_reset_empties_it() {
    let p = greet_project();
    let question = "what does greet.go do?";
    let reply = "It returns a greeting.";
    let fake = FakeOllama::start(vec![answer(reply, 120, 7), answer("Hello again.", 90, 3)]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(format!(
            "/history\n{question}\n/history\n/reset\n/history\nhello?\n"
        ))
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let empty = format!(
        "0 messages after the system prompt, {} bytes carried on every request",
        SYSTEM_PROMPT.len()
    );
    let after_turn = format!(
        "2 messages after the system prompt, {} bytes carried on every request",
        SYSTEM_PROMPT.len() + question.len() + reply.len()
    );
    let expected = format!(
        "{}{empty}\n{reply}\n{after_turn}\nconversation cleared (the system prompt is kept)\n{empty}\nHello again.\n",
        fake_banner(p.root())
    );
    assert_eq!(run.stdout, expected, "{run:?}");
    // The footers, one per turn.
    assert!(
        run.stderr
            .contains("[120 prompt / 7 generated tokens · 0 tool calls · "),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("[90 prompt / 3 generated tokens · 0 tool calls · "),
        "{run:?}"
    );
    // After /reset the model no longer sees the first exchange.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert_eq!(roles(&bodies[0]), ["system", "user"]);
    assert_eq!(content(&bodies[0], 1), question);
    assert_eq!(roles(&bodies[1]), ["system", "user"]);
    assert_eq!(content(&bodies[1], 1), "hello?");
    assert_eq!(content(&bodies[1], 0), SYSTEM_PROMPT);
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn history_carries_the_previous_turn_into_the_next_request() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![answer("First.", 10, 1), answer("Second.", 20, 1)]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("one\ntwo\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(content(&bodies[1], 1), "one");
    assert_eq!(content(&bodies[1], 2), "First.");
    assert_eq!(content(&bodies[1], 3), "two");
}

#[test]
fn tags_rebuilds_the_symbol_index() {
    let p = greet_project();
    p.file("notes.txt", "not code\n");
    let fake = FakeOllama::start(vec![]);
    let mut live = Live::metron(p.root(), &[], &fake);
    live.send("/tags\n");
    live.wait_stdout("symbol index rebuilt: 1 file (Go 1) in ", 1);
    // A file added during the session is seen after the next /tags.
    p.file("src/lib.rs", "pub fn hola() -> &'static str { \"hola\" }\n");
    live.send("/tags\n");
    live.wait_stdout("symbol index rebuilt: 2 files (Go 1, Rust 1) in ", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains("definitions are parsed on demand"),
        "{run:?}"
    );
    assert!(fake.chat_requests().is_empty());
}

/// `/tags` names the languages it found, not the ones metron happens to be written about.
#[test]
fn tags_names_the_languages_of_the_project() {
    let p = TestProject::git();
    p.file("app.py", "def main():\n    pass\n");
    p.file("lib/util.py", "def helper():\n    pass\n");
    p.file("README.md", "# app\n");
    let nobody = refused_url();
    let run = metron(p.root())
        .env("OLLAMA_HOST", &nobody)
        .stdin("/tags\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let line = run
        .stdout
        .lines()
        .find(|l| l.starts_with("symbol index rebuilt"))
        .unwrap_or_else(|| panic!("no /tags line: {run:?}"));
    assert!(
        line.starts_with("symbol index rebuilt: 2 files (Python 2) in "),
        "{line}"
    );
    assert!(!line.contains("Go") && !line.contains("Rust"), "{line}");

    // Nothing a grammar reads: it says so, and what does.
    let p = TestProject::git();
    p.file("notes.txt", "no code\n");
    let run = metron(p.root())
        .env("OLLAMA_HOST", &nobody)
        .stdin("/tags\n")
        .run();
    assert!(
        run.stdout
            .contains("no files find_symbol reads (it reads Go, Rust, "),
        "{run:?}"
    );
}

#[test]
fn a_line_starting_with_a_slash_never_reaches_the_model() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("A path is not a command.", 10, 2)]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin(
            "/frobnicate\n/confg\n/etc/passwd is what?\n/model qwen3 please\n/history all\n/history\nwhat is in /etc/passwd?\n",
        )
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(
        errors[..5],
        [
            "unknown command /frobnicate; /help lists the commands",
            "unknown command /confg; did you mean /config? (/help lists the commands)",
            "unknown command /etc/passwd; /help lists the commands. A line starting with / is never sent to the model: to ask about a path, start the line with a word (\"what is in /etc/hosts?\")",
            "/model takes one model name, and model names hold no spaces; did you mean /model qwen3? (/model alone lists the models with tool support)",
            "/history takes no arguments; did you mean /history? (/help lists the commands)",
        ],
        "{run:?}"
    );
    // Only the line that starts with a word was a question for the model.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(roles(&bodies[0]), ["system", "user"]);
    assert_eq!(content(&bodies[0], 1), "what is in /etc/passwd?");
    assert!(
        run.stdout.contains(&format!(
            "0 messages after the system prompt, {} bytes",
            SYSTEM_PROMPT.len()
        )),
        "{run:?}"
    );
    assert!(
        run.stdout.ends_with("A path is not a command.\n"),
        "{run:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Choosing a model
// ---------------------------------------------------------------------------------------

/// A server with two models that support tools and one that does not.
fn three_models() -> super::fake_ollama::FakeBuilder {
    FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools", "thinking"], 40960)
        .model("llama3.1:latest", &["completion", "tools"], 131072)
        .model("nomic-embed-text:latest", &["embedding"], 2048)
}

/// Every request the fake received that was not `/api/chat`, as `METHOD path`.
fn other_requests(fake: &FakeOllama) -> Vec<String> {
    fake.requests()
        .iter()
        .filter(|r| r.path != "/api/chat")
        .map(|r| format!("{} {}", r.method, r.path))
        .collect()
}

#[test]
fn model_lists_the_installed_models_with_tool_support_and_marks_the_current_one() {
    let p = TestProject::git();
    let fake = three_models().start();
    let run = metron(p.root())
        .args(["--model", "llama3.1"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("/model\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let listing = run
        .stdout
        .split_once("\n\n")
        .map(|(_, after)| after)
        .unwrap_or_else(|| panic!("banner first: {run:?}"));
    assert_eq!(
        listing,
        format!(
            "models with tool support at {}:
  qwen3:8b
* llama3.1:latest (current, from --model)
installed without tool support: nomic-embed-text:latest
/model NAME switches to another; the conversation is kept
",
            fake.base_url()
        ),
        "{run:?}"
    );
    assert!(fake.chat_requests().is_empty());
}

#[test]
fn model_switches_and_the_conversation_carries_over() {
    let p = TestProject::git();
    let fake = three_models()
        .chat(vec![answer("First.", 10, 1), answer("Second.", 20, 1)])
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "qwen3:8b")
        .stdin("one\n/model llama3.1\n/model llama3.1:latest\n/config\n/model\ntwo\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("First.\nmodel: llama3.1:latest (was qwen3:8b); the conversation is kept\nalready using llama3.1:latest\n"),
        "{run:?}"
    );
    // /config names the command as the layer that chose the model now.
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("model ") && l.ends_with("\"llama3.1:latest\"  (/model)")),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("* llama3.1:latest (current, chosen with /model)"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    assert_eq!(bodies[0]["model"], "qwen3:8b");
    assert_eq!(bodies[1]["model"], "llama3.1:latest");
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(content(&bodies[1], 1), "one");
    assert_eq!(content(&bodies[1], 2), "First.");
    assert_eq!(content(&bodies[1], 3), "two");
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn model_refuses_a_missing_or_toolless_model_without_a_chat_request() {
    let p = TestProject::git();
    let fake = three_models().start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "qwen3:8b")
        .stdin("/model foo\n/model nomic-embed-text\n/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let errors: Vec<&str> = run.stderr.lines().collect();
    assert_eq!(errors.len(), 2, "{run:?}");
    assert_eq!(
        errors[0],
        format!(
            "there is no model foo at {}; the model stays qwen3:8b; installed models with tool support: qwen3:8b, llama3.1:latest. Choose one of them with /model NAME, or run `ollama pull foo` first",
            fake.base_url()
        ),
        "{run:?}"
    );
    assert!(
        errors[1].starts_with("nomic-embed-text:latest is installed but does not support tools"),
        "{run:?}"
    );
    assert!(errors[1].contains("qwen3:8b, llama3.1:latest"), "{run:?}");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("model ") && l.ends_with("\"qwen3:8b\"  ($OLLAMA_MODEL)")),
        "the model did not stay: {run:?}"
    );
    // Only the model list and descriptions were asked for: no inference, and the name
    // that is not installed was never sent anywhere.
    assert!(fake.chat_requests().is_empty(), "{run:?}");
    for request in other_requests(&fake) {
        assert!(
            request == "GET /api/tags"
                || request == "POST /api/show"
                || request == "GET /api/version",
            "{request}"
        );
    }
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| String::from_utf8_lossy(&r.raw_body).contains("\"foo\"")),
        "the missing name reached the server"
    );
}

#[test]
fn a_model_that_is_not_installed_is_reported_at_start() {
    let p = TestProject::git();
    let fake = three_models().chat(vec![answer("Hi.", 10, 1)]).start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("/model qwen3:8b\nhello\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let first = run.stderr.lines().next().unwrap_or_default();
    assert_eq!(
        first,
        format!(
            "metron: the model qwen2.5-coder:7b (the built-in default) is not installed at {}; installed models with tool support: qwen3:8b, llama3.1:latest. Switch with /model NAME, or run `ollama pull qwen2.5-coder:7b`",
            fake.base_url()
        ),
        "{run:?}"
    );
    // Following the advice works: the session goes on with the model chosen.
    assert!(
        run.stdout
            .contains("model: qwen3:8b (was qwen2.5-coder:7b)"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(bodies[0]["model"], "qwen3:8b");

    // The notice names the layer that chose the missing model.
    let run = metron(p.root())
        .args(["-m", "gone:1b"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .starts_with("metron: the model gone:1b (from --model) is not installed at "),
        "{run:?}"
    );

    // An installed model (as `NAME:latest`) is not worth a word.
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "llama3.1")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
}

#[test]
fn model_names_from_the_server_cannot_drive_the_terminal() {
    let p = TestProject::git();
    let fake = FakeOllama::builder()
        .model("evil\x1b[2J:1b", &["completion", "tools"], 2048)
        .start();
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("/model\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        assert!(!text.contains('\x1b'), "{name} carries an escape: {run:?}");
        assert!(text.contains("evil\\u{1b}[2J:1b"), "{name}: {run:?}");
    }
}

#[test]
fn the_start_check_says_nothing_when_the_server_does_not_answer_in_time() {
    // A port that accepts connections and never answers: the check gives up after its two
    // seconds and leaves the server to the first prompt, as before.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", silent.local_addr().expect("address"));
    let p = TestProject::git();
    let started = Instant::now();
    let run = metron(p.root())
        .env("OLLAMA_HOST", &url)
        .stdin("/history\n")
        .run();
    let took = started.elapsed();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    assert!(
        run.stdout.contains("0 messages after the system prompt"),
        "{run:?}"
    );
    // Two seconds for the check, and room for a slow, shared machine; without the limit
    // the check would wait for `timeout_seconds` (180).
    assert!(took < Duration::from_secs(8), "startup took {took:?}");
    drop(silent);
}

#[test]
fn every_exit_alias_and_end_of_input_exit_0() {
    let p = TestProject::git();
    for alias in ["/exit", "exit", "quit", "/quit", "  /exit  "] {
        let run = metron(p.root()).stdin(format!("{alias}\n/history\n")).run();
        assert_eq!(run.code, 0, "{alias}: {run:?}");
        assert!(
            !run.stdout.contains("messages after the system prompt"),
            "{alias} did not quit before the next line: {run:?}"
        );
    }
    // End of input (Ctrl-D), with and without a final newline.
    for input in ["/history\n", "/history"] {
        let run = metron(p.root()).stdin(input).run();
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stdout.contains("0 messages after the system prompt"),
            "{run:?}"
        );
    }
    // Blank lines are skipped, not sent.
    let run = metron(p.root()).stdin("\n   \n\t\n").run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
}

// ---------------------------------------------------------------------------------------
// A whole session, approvals and trust
// ---------------------------------------------------------------------------------------

#[test]
fn a_full_session_edits_the_file_and_reports_what_it_cost() {
    let p = greet_project();
    let fake = FakeOllama::start(greet_session("Greet now returns \"hola\" (greet.go:5)."));
    let run = metron(p.root())
        .args(["--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("make Greet return \"hola\" instead of \"hello\"\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    // With `--yes` the banner says that nothing will be asked.
    let banner = fake_banner(p.root()).replace(
        "\n\n",
        "\napprovals: applying patches and running allowed commands without asking (--yes)\n\n",
    );
    assert_eq!(
        run.stdout,
        format!("{banner}Let me find Greet.\nGreet now returns \"hola\" (greet.go:5).\n"),
        "{run:?}"
    );
    let executing: Vec<&str> = run
        .stderr
        .lines()
        .filter(|l| l.starts_with("[executing: "))
        .collect();
    assert_eq!(
        executing,
        [
            "[executing: find_symbol]",
            "[executing: view_slice]",
            "[executing: apply_patch]"
        ],
        "{run:?}"
    );
    // The footer comes after the tools: the last prompt size, all generated tokens.
    let footer = "[600 prompt / 71 generated tokens · 3 tool calls · ";
    let at = run.stderr.find(footer).unwrap_or_else(|| panic!("{run:?}"));
    assert!(
        at > run
            .stderr
            .find("[executing: apply_patch]")
            .unwrap_or(usize::MAX)
    );
    assert!(!run.stderr.contains("warning"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 4);
    let results = tool_messages(&bodies[3]);
    assert!(
        results[2]["content"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Applied:"),
        "{results:?}"
    );
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn piped_stdin_without_yes_refuses_the_patch_and_tells_the_model() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("I could not apply it; rerun with --yes.", 150, 9),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("make Greet return \"hola\"\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    assert!(run.stderr.contains("[executing: apply_patch]"), "{run:?}");
    assert!(run.stdout.contains("I could not apply it"), "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    let result = tool_messages(&bodies[1])[0]["content"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert!(result.starts_with("Not applied:"), "{result}");
    assert!(result.contains("--yes"), "{result}");
    assert!(result.contains("Nothing was changed"), "{result}");
}

#[test]
fn a_project_config_cannot_auto_approve_patches() {
    let p = greet_project();
    p.file(".metron.json", r#"{"auto_approve_patches": true}"#);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Not applied.", 150, 9),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("make Greet return \"hola\"\n/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("warning: ignoring `auto_approve_patches`")
            && run.stderr.contains("cannot grant authority"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let result = tool_messages(&fake.chat_bodies()[1])[0]["content"].to_string();
    assert!(
        result.contains("Not applied:") && result.contains("--yes"),
        "{result}"
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("auto_approve_patches ") && l.ends_with("false  (default)")),
        "{run:?}"
    );
}

#[test]
fn a_trusted_user_config_auto_approves_patches_in_the_repl() {
    let p = greet_project();
    let (_dir, path) = user_config(r#"{"auto_approve_patches": true}"#);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Done.", 150, 9),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .stdin("make Greet return \"hola\"\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains("ignoring"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_HOLA
    );
    let result = tool_messages(&fake.chat_bodies()[1])[0]["content"].to_string();
    assert!(result.contains("Applied:"), "{result}");
}

#[test]
fn the_footer_warns_once_the_prompt_passes_80_percent_of_num_ctx() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![
        answer("Exactly at the line.", 800, 5),
        answer("Past it.", 801, 5),
    ]);
    let m = metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user_file, r#"{"num_ctx": 1000}"#).expect("write config");
    let run = m
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("first\nsecond\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let lines: Vec<&str> = run.stderr.lines().collect();
    let first = lines
        .iter()
        .position(|l| {
            l.starts_with("[800 prompt / 5 generated tokens · 0 tool calls · 80% of num_ctx]")
        })
        .unwrap_or_else(|| panic!("{run:?}"));
    let second = lines
        .iter()
        .position(|l| {
            l.starts_with("[801 prompt / 5 generated tokens · 0 tool calls · 80% of num_ctx]")
        })
        .unwrap_or_else(|| panic!("{run:?}"));
    // 80% exactly is not past it; each footer is two lines (tokens, then time), and the
    // line after the second footer is the warning.
    assert_eq!(second, first + 2, "no warning after 800 of 1000: {run:?}");
    let warning = lines.get(second + 2).copied().unwrap_or_default();
    assert!(
        warning.starts_with("warning: the prompt is at 80% of num_ctx (1000 tokens)")
            && warning.contains("/reset"),
        "{run:?}"
    );
    // The request asked for exactly that window.
    assert_eq!(fake.chat_bodies()[0]["options"]["num_ctx"], 1000);
}

#[test]
fn with_streaming_off_the_whole_answer_is_printed() {
    let p = greet_project();
    let (_dir, path) = user_config(r#"{"stream": false}"#);
    let fake = FakeOllama::start(vec![
        json_calls(&[("list_files", json!({}))], 40, 2),
        json_answer("All at once.", 50, 3),
    ]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path)
        .stdin("list them\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.ends_with("\nAll at once.\n"), "{run:?}");
    assert!(run.stderr.contains("[executing: list_files]"), "{run:?}");
    assert!(
        run.stderr
            .contains("[50 prompt / 5 generated tokens · 1 tool call · "),
        "{run:?}"
    );
    for body in fake.chat_bodies() {
        assert_eq!(body["stream"], false);
    }
}

#[test]
fn a_failed_turn_is_reported_and_the_session_goes_on() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![text("half"), Chunk::Hang]),
        Reply::Error(
            404,
            "model \"qwen2.5-coder:7b\" not found, try pulling it first".into(),
        ),
        answer("Recovered.", 30, 2),
    ]);
    let m = metron(p.root());
    let user_file = m.home().join(".metron").join("config.json");
    std::fs::create_dir_all(user_file.parent().expect("parent")).expect("mkdir");
    std::fs::write(&user_file, r#"{"timeout_seconds": 1}"#).expect("write config");
    let run = m
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("first\nsecond\nthird\n/history\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("metron: the model server was silent for 1 s in the middle of the reply"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains("ollama pull qwen2.5-coder:7b"),
        "{run:?}"
    );
    assert!(run.stdout.contains("half\n"), "{run:?}");
    assert!(
        run.stdout.contains("Recovered.\n2 messages after"),
        "{run:?}"
    );
    // Neither failed turn ran a tool, so both were undone.
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3);
    for body in &bodies[1..] {
        assert_well_formed(body);
        assert_eq!(roles(body), ["system", "user"]);
    }
    assert_eq!(content(&bodies[2], 1), "third");
}

// ---------------------------------------------------------------------------------------
// Ctrl-C
// ---------------------------------------------------------------------------------------

/// What closes a turn cancelled before any answer and before any tool ran.
const CANCELLED_NOTE: &str = "(cancelled by the user before an answer)";

#[test]
fn ctrl_c_during_a_reply_keeps_the_question_so_go_on_continues_it() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![text("partial"), Chunk::Hang]),
        answer("The second answer.", 50, 4),
    ]);
    let mut live = Live::metron(p.root(), &[], &fake);
    live.send("first question\n");
    assert!(
        fake.wait_for_chats(1, PATIENCE),
        "the first request never came"
    );
    live.wait_stdout("partial", 1);
    live.interrupt();
    live.wait_stderr("interrupted");
    live.send("/history\ngo on\n");
    live.wait_stdout("The second answer.", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr
            .contains("[interrupted: the turn was cancelled; the session is intact]"),
        "{run:?}"
    );
    // No tool ran, yet the question stays, closed by a note; the partial reply does not.
    assert!(
        run.stdout
            .contains("partial\n2 messages after the system prompt"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    assert_well_formed(&bodies[1]);
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(content(&bodies[1], 1), "first question");
    assert_eq!(content(&bodies[1], 2), CANCELLED_NOTE);
    assert_eq!(content(&bodies[1], 3), "go on");
    assert!(!bodies[1].to_string().contains("partial"));
    assert_eq!(fake.unexpected(), 0);
}

#[test]
fn ctrl_c_after_a_tool_ran_keeps_the_call_and_its_result_and_says_so() {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("list_files", json!({}), 100, 5),
        Reply::Stream(vec![text("Looking"), Chunk::Hang]),
        answer("Next answer.", 50, 4),
    ]);
    let mut live = Live::metron(p.root(), &[], &fake);
    live.send("what is here?\n");
    assert!(
        fake.wait_for_chats(2, PATIENCE),
        "the second round trip never came"
    );
    live.wait_stdout("Looking", 1);
    live.interrupt();
    live.wait_stderr("[interrupted");
    live.send("/history\nand now?\n");
    live.wait_stdout("Next answer.", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("[executing: list_files]"), "{run:?}");
    assert!(
        run.stdout.contains("4 messages after the system prompt"),
        "{run:?}"
    );

    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3, "{run:?}");
    let next = &bodies[2];
    assert_well_formed(next);
    assert_eq!(
        roles(next),
        ["system", "user", "assistant", "tool", "assistant", "user"]
    );
    assert_eq!(content(next, 1), "what is here?");
    assert_eq!(
        next["messages"][2]["tool_calls"][0]["function"]["name"],
        "list_files"
    );
    assert!(content(next, 3).contains("greet.go"), "{next:#}");
    assert_eq!(
        content(next, 4),
        "(interrupted by the user before answering)"
    );
    assert_eq!(content(next, 5), "and now?");
}

/// What the session says when Ctrl-C at the prompt finds nothing to stop or clear.
const QUIT_HINT: &str = "Ctrl-D or /exit quits";

#[test]
fn ctrl_c_at_an_idle_prompt_shows_how_to_quit_and_the_session_goes_on() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Still here.", 20, 2)]);
    let mut live = Live::metron(p.root(), &[], &fake);
    // Once a command has been answered, the session is waiting at its prompt with the
    // Ctrl-C handler installed.
    live.send("/history\n");
    live.wait_stdout("messages after the system prompt", 1);
    live.interrupt();
    live.wait_stderr(QUIT_HINT);
    // The read that was waiting when the press came still gets the next line.
    live.send("are you there?\n");
    live.wait_stdout("Still here.", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr.matches(QUIT_HINT).count(), 1, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "are you there?");
}

// ---------------------------------------------------------------------------------------
// On a terminal
// ---------------------------------------------------------------------------------------

/// Runs metron on a pseudo-terminal, asks for the Greet change, and answers the approval
/// question with `answer`; returns what the terminal showed and the file afterwards.
fn greet_on_a_terminal(answer: &str) -> (Run, String, Vec<Value>) {
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        super::fake_ollama::answer("Finished.", 150, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send(&format!("{answer}\r"));
    if answer == "n" {
        // A bare no is followed by a chance to say why; Return skips it.
        live.wait_stdout("Why not? A reason for the model (Return to skip): ", 1);
        live.send("\r");
    }
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    let on_disk = std::fs::read_to_string(p.path("greet.go")).expect("read");
    (run, on_disk, fake.chat_bodies())
}

#[test]
fn on_a_terminal_the_prompt_shows_and_y_applies_the_patch() {
    if !script_available() {
        return skip(
            "on_a_terminal_the_prompt_shows_and_y_applies_the_patch",
            "util-linux `script` is not installed",
        );
    }
    let (run, on_disk, bodies) = greet_on_a_terminal("y");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("=== metron (model: "), "{run:?}");
    // The diff is shown before the question.
    let diff_at = run.stdout.find("+\treturn \"hola\"").unwrap_or(usize::MAX);
    let question_at = run.stdout.find("Apply this patch? [y/N/a]").unwrap_or(0);
    assert!(diff_at < question_at, "{run:?}");
    assert_eq!(on_disk, GREET_HOLA);
    let result = tool_messages(&bodies[1])[0]["content"].to_string();
    assert!(result.contains("Applied:"), "{result}");
}

/// The mark metron's own questions start with; nothing else can print it.
const QUESTION_MARK: char = '\u{276f}';

/// A reply whose text imitates a diff and its question (mark included), then keeps the
/// person waiting before it asks for the real patch: a `y` typed at the imitation must not
/// answer the real question, which waits for a fresh answer.
#[test]
fn on_a_terminal_a_key_typed_while_the_reply_streams_does_not_answer_the_question() {
    if !script_available() {
        return skip(
            "on_a_terminal_a_key_typed_while_the_reply_streams_does_not_answer_the_question",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    let imitation = format!(
        "I will change it.\n--- a/greet.go\n+++ b/greet.go\n@@ -1 +1 @@\n-x\n+y\n{QUESTION_MARK} Apply this patch? [y/N/a] "
    );
    let typed = Gate::new();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            text(&imitation),
            Chunk::Gate(typed.clone()),
            tool_calls(&[("apply_patch", json!({"diff": greet_patch()}))]),
            done(100, 20),
        ]),
        answer("Finished.", 150, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    // The imitation is on screen while the reply is still streaming: the person answers it.
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("y\r");
    // The terminal echoes the `y`: it is in metron's input before the model goes on.
    live.wait_stdout_after("Apply this patch? [y/N/a] ", "y");
    typed.open();
    // The real question comes, and the `y` typed before it does not answer it: the `n`
    // below does (a surviving `y` would be ahead of it in the input).
    live.wait_stdout("Apply this patch? [y/N/a] ", 2);
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO,
        "a key typed before the question answered it:\n{}",
        live.stdout()
    );
    assert_eq!(fake.chat_requests().len(), 1, "{}", live.stdout());
    live.send("n\r");
    live.wait_stdout("Why not? A reason for the model (Return to skip): ", 1);
    live.send("\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    let result = tool_messages(&fake.chat_bodies()[1])[0]["content"].to_string();
    assert!(result.contains("The user declined this patch"), "{result}");
    // Only metron's own question carries the mark: the model's imitation shows it escaped.
    let marked = format!("{QUESTION_MARK} Apply this patch? [y/N/a] ");
    assert_eq!(run.stdout.matches(&marked).count(), 1, "{run:?}");
    assert!(
        run.stdout.contains("\\u{276f} Apply this patch? [y/N/a] "),
        "{run:?}"
    );
}

#[test]
fn on_a_terminal_n_declines_the_patch() {
    if !script_available() {
        return skip(
            "on_a_terminal_n_declines_the_patch",
            "util-linux `script` is not installed",
        );
    }
    let (run, on_disk, bodies) = greet_on_a_terminal("n");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(on_disk, GREET_GO);
    let result = tool_messages(&bodies[1])[0]["content"].to_string();
    assert!(result.contains("The user declined this patch"), "{result}");
}

#[test]
fn on_a_terminal_ctrl_c_cancels_a_reply_keeps_the_question_and_then_only_shows_how_to_quit() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_c_cancels_a_reply_keeps_the_question_and_then_only_shows_how_to_quit",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![text("partial"), Chunk::Hang]),
        answer("Second.", 20, 2),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    assert!(fake.wait_for_chats(1, PATIENCE), "{}", live.stdout());
    live.wait_stdout("partial", 1);
    // The Ctrl-C key: the terminal turns it into SIGINT while the reply streams.
    live.send("\x03");
    live.wait_stdout(
        "[interrupted: the turn was cancelled; the session is intact]",
        1,
    );
    live.wait_stdout_after("[interrupted", "metron > ");
    live.send("go on\r");
    live.wait_stdout("Second.", 1);
    live.wait_stdout_after("Second.", "metron > ");
    // At the prompt the line editor reads Ctrl-C as a key: on an empty line it says how
    // to quit, and the session stays.
    live.send("\x03");
    live.wait_stdout(QUIT_HINT, 1);
    live.wait_stdout_after(QUIT_HINT, "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    // The cancelled question stays, closed by a note, so "go on" means something.
    assert_eq!(roles(&bodies[1]), ["system", "user", "assistant", "user"]);
    assert_eq!(content(&bodies[1], 1), "first");
    assert_eq!(content(&bodies[1], 2), CANCELLED_NOTE);
    assert_eq!(content(&bodies[1], 3), "go on");
}

#[test]
fn on_a_terminal_ctrl_d_quits_with_0() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_d_quits_with_0",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("\x04");
    let deadline = Instant::now() + PATIENCE;
    while !live.exited() {
        assert!(
            Instant::now() < deadline,
            "Ctrl-D did not quit\n{}",
            live.stdout()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(fake.chat_requests().is_empty());
}

#[test]
#[should_panic(expected = "two user messages in a row")]
fn the_well_formedness_check_catches_a_dangling_user_message() {
    assert_well_formed(&json!({"messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "interrupted"},
        {"role": "user", "content": "next"},
    ]}));
}

#[test]
#[should_panic(expected = "has no result")]
fn the_well_formedness_check_catches_a_call_without_its_result() {
    assert_well_formed(&json!({"messages": [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_a", "function": {"name": "list_files", "arguments": {}}},
            {"id": "call_b", "function": {"name": "list_files", "arguments": {}}},
        ]},
        {"role": "tool", "content": "x", "tool_call_id": "call_a"},
        {"role": "assistant", "content": "note"},
    ]}));
}

#[test]
fn on_a_terminal_ctrl_c_at_the_approval_question_declines_and_cancels_the_turn() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_c_at_the_approval_question_declines_and_cancels_the_turn",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    // Whether the round trip after the declined patch is sent before the interrupt lands
    // is a race, so there is an answer for it and one for the next question.
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Answer.", 20, 2),
        answer("Answer.", 20, 2),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("\x03");
    live.wait_stdout(
        "[interrupted: the turn was cancelled; the session is intact]",
        1,
    );
    live.wait_stdout_after("[interrupted", "metron > ");
    live.send("and now?\r");
    live.wait_stdout_after("[interrupted", "Answer.");
    live.wait_stdout_after("Answer.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("greet.go")).expect("read"),
        GREET_GO
    );
    // The declined call stays in history with its result, and the turn is closed.
    let bodies = fake.chat_bodies();
    let last = bodies.last().expect("requests");
    assert_well_formed(last);
    assert_eq!(
        roles(last),
        ["system", "user", "assistant", "tool", "assistant", "user"],
        "{last:#}"
    );
    assert!(
        content(last, 3).contains("The user declined this patch"),
        "{last:#}"
    );
    assert_eq!(
        content(last, 4),
        "(interrupted by the user before answering)"
    );
    assert_eq!(content(last, 5), "and now?");
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_during_a_command_cancels_the_turn_and_the_prompt_stays() {
    // The command sees the press first; the session must not also take it as a Ctrl-C
    // at the idle prompt (which would show how to quit).
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "sleep 43"}), 100, 10),
        answer("Still here.", 120, 4),
    ]);
    let (mut command, home) = hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    let (_dir, path) =
        user_config(r#"{"allowed_commands": ["sleep"], "command_timeout_seconds": 60}"#);
    command
        .arg("--yes")
        .env("OLLAMA_HOST", fake.base_url())
        .env("METRON_CONFIG", &path);
    let mut live = Live::start(command, home);
    live.send("wait a while\n");
    live.wait_for_child("sleep");
    live.interrupt();
    live.wait_stderr("[interrupted");
    live.send("are you there?\n");
    live.wait_stdout("Still here.", 1);
    let run = live.finish();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains(QUIT_HINT), "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2, "{run:?}");
    let tools = tool_messages(&bodies[1]);
    assert!(
        tools[0]["content"]
            .as_str()
            .is_some_and(|c| c.contains("interrupted by the user (Ctrl-C); killed")),
        "{tools:#?}"
    );
}

/// Ctrl-C at an approval question cancels the turn: a later call of the same reply must
/// not run, even one a standing approval would let through without asking.
#[test]
fn ctrl_c_at_a_question_stops_the_calls_left_in_the_reply() {
    use super::fake_ollama::{done, tool_calls};
    use super::preconditions::{lines, read, top_patch};
    if !script_available() {
        return skip(
            "ctrl_c_at_a_question_stops_the_calls_left_in_the_reply",
            "util-linux `script` is not installed",
        );
    }
    let p = greet_project();
    p.file("notes.txt", lines(3));
    // A second change to greet.go, which the standing approval covers.
    let again = "--- a/greet.go\n+++ b/greet.go\n@@ -1,3 +1,3 @@\n-package greet\n+package greeting\n \n // Greet says hello.\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("First done.", 150, 9),
        Reply::Stream(vec![
            tool_calls(&[
                ("apply_patch", json!({"diff": top_patch("notes.txt")})),
                ("apply_patch", json!({"diff": again})),
            ]),
            done(100, 20),
        ]),
        answer("Never asked for.", 150, 9),
    ]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("a\r");
    live.wait_stdout("First done.", 1);
    live.wait_stdout_after("First done.", "metron > ");
    let before = read(&p, "greet.go");
    live.send("second\r");
    live.wait_stdout("Apply this patch? [y/N/a] ", 2);
    live.send("\x03");
    live.wait_stdout(
        "[interrupted: the turn was cancelled; the session is intact]",
        1,
    );
    live.wait_stdout_after("[interrupted", "metron > ");
    live.send("/ledger\r");
    live.wait_stdout("standing approval: patches", 1);
    let run = exit_on_a_terminal(live);
    assert_eq!(read(&p, "notes.txt"), lines(3), "{run:?}");
    assert!(
        run.stdout
            .contains("refused by policy: the user interrupted the turn"),
        "{}",
        run.stdout
    );
    assert_eq!(
        read(&p, "greet.go"),
        before,
        "the standing approval ran a call after the person cancelled the turn\n{}",
        run.stdout
    );
    // The refusals are not sent on to the model: the turn stops where it was cancelled.
    assert_eq!(fake.chat_bodies().len(), 3, "{}", run.stdout);
}

// ---------------------------------------------------------------------------------------
// The line editor: Ctrl-C at the prompt, and the input history
// ---------------------------------------------------------------------------------------

/// Where a session keeps the lines typed at its prompt, under the user's home.
fn history_file(home: &Path) -> std::path::PathBuf {
    home.join(".metron").join("input_history")
}

#[test]
fn on_a_terminal_ctrl_c_clears_a_typed_line_and_the_next_line_reaches_the_model() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_c_clears_a_typed_line_and_the_next_line_reaches_the_model",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Kept.", 20, 2)]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("throw this away");
    live.wait_stdout("throw this away", 1);
    live.send("\x03");
    live.wait_stdout_after("throw this away", "metron > ");
    live.send("keep this\r");
    live.wait_stdout("Kept.", 1);
    live.wait_stdout_after("Kept.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    // A line with text is cleared quietly: the hint is for an empty one.
    assert!(!run.stdout.contains(QUIT_HINT), "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(roles(&bodies[0]), ["system", "user"]);
    assert_eq!(content(&bodies[0], 1), "keep this");
}

#[test]
fn on_a_terminal_ctrl_c_on_an_empty_line_shows_how_to_quit_and_the_session_goes_on() {
    if !script_available() {
        return skip(
            "on_a_terminal_ctrl_c_on_an_empty_line_shows_how_to_quit_and_the_session_goes_on",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Here.", 20, 2)]);
    let mut live = on_a_terminal(&p, &fake);
    live.wait_stdout("metron > ", 1);
    live.send("\x03");
    live.wait_stdout(QUIT_HINT, 1);
    live.wait_stdout_after(QUIT_HINT, "metron > ");
    // Blanks only count as an empty line.
    live.send("   \x03");
    live.wait_stdout(QUIT_HINT, 2);
    live.wait_stdout_after(QUIT_HINT, "metron > ");
    assert!(
        !live.exited(),
        "Ctrl-C at the prompt quit\n{}",
        live.stdout()
    );
    live.send("still there?\r");
    live.wait_stdout("Here.", 1);
    live.wait_stdout_after("Here.", "metron > ");
    // Ctrl-D (end of input) is what quits, with status 0.
    live.send("\x04");
    let run = wait_for_exit(live, "Ctrl-D");
    assert_eq!(run.code, 0, "{run:?}");
    // The hint is a line of its own, once per press.
    assert_eq!(
        run.stdout.lines().filter(|l| *l == QUIT_HINT).count(),
        2,
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "still there?");
}

#[test]
fn on_a_terminal_typed_lines_are_offered_by_the_next_session_and_answers_are_not_kept() {
    if !script_available() {
        return skip(
            "on_a_terminal_typed_lines_are_offered_by_the_next_session_and_answers_are_not_kept",
            "util-linux `script` is not installed",
        );
    }
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("temp HOME");
    let p = greet_project();
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Left alone.", 150, 9),
        answer("Not kept.", 20, 2),
    ]);
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("make Greet return hola\r");
    // An approval answer and the reason that follows it are never kept.
    live.wait_stdout("Apply this patch? [y/N/a] ", 1);
    live.send("n\r");
    live.wait_stdout("Why not? A reason for the model (Return to skip): ", 1);
    live.send("a secret reason\r");
    live.wait_stdout("Left alone.", 1);
    live.wait_stdout_after("Left alone.", "metron > ");
    // Nor is a line that starts with a space (it still reaches the model).
    live.send(" a private question\r");
    live.wait_stdout("Not kept.", 1);
    live.wait_stdout_after("Not kept.", "metron > ");
    live.send("/history\r");
    live.wait_stdout("messages after the system prompt", 1);
    live.wait_stdout_after("messages after the system prompt", "metron > ");
    live.send("\x04");
    let run = wait_for_exit(live, "Ctrl-D");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(content(&fake.chat_bodies()[2], 5), " a private question");

    let file = history_file(home.path());
    assert_eq!(
        std::fs::read_to_string(&file).expect("the history file"),
        "make Greet return hola\n/history\n",
        "{run:?}"
    );
    let mode = std::fs::metadata(&file).expect("stat").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "{mode:o}");

    // The next session offers them, newest first: Up, Up, Return sends the first again.
    let again = FakeOllama::start(vec![answer("Again.", 20, 2)]);
    let mut live = on_a_terminal_at_home(&p, &again, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("\x1b[A");
    live.wait_stdout_after("metron > ", "/history");
    live.send("\x1b[A");
    live.wait_stdout_after("metron > ", "make Greet return hola");
    live.send("\r");
    live.wait_stdout("Again.", 1);
    live.wait_stdout_after("Again.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = again.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(content(&bodies[0], 1), "make Greet return hola");
    // A line recalled and sent again is kept again; `/exit` is a typed line like any other.
    assert_eq!(
        std::fs::read_to_string(&file).expect("the history file"),
        "make Greet return hola\n/history\nmake Greet return hola\n/exit\n"
    );
}

#[test]
fn with_save_input_history_off_or_without_a_terminal_no_history_is_written() {
    let p = TestProject::git();
    // Piped stdin is a script, not a person typing: nothing is kept.
    let piped = FakeOllama::start(vec![answer("Piped.", 20, 2)]);
    let m = metron(p.root());
    let home = m.home().to_path_buf();
    let run = m
        .env("OLLAMA_HOST", piped.base_url())
        .stdin("hello\n/history\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!history_file(&home).exists(), "{run:?}");

    if !script_available() {
        return skip(
            "with_save_input_history_off_or_without_a_terminal_no_history_is_written",
            "util-linux `script` is not installed",
        );
    }
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("temp HOME");
    std::fs::create_dir_all(home.path().join(".metron")).expect("mkdir .metron");
    std::fs::write(
        home.path().join(".metron/config.json"),
        r#"{"save_input_history": false}"#,
    )
    .expect("write the user config");
    let fake = FakeOllama::start(vec![answer("Hi.", 20, 2)]);
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("/config\r");
    live.wait_stdout("save_input_history", 1);
    live.send("hello\r");
    live.wait_stdout("Hi.", 1);
    live.wait_stdout_after("Hi.", "metron > ");
    // This session's lines are still there for the arrow keys.
    live.send("\x1b[A");
    live.wait_stdout_after("metron > ", "hello");
    live.send("\x15/exit\r");
    let run = wait_for_exit(live, "/exit");
    assert_eq!(run.code, 0, "{run:?}");
    // The line is wrapped on the terminal (the user's file is a long temp path).
    let shown = rejoined(&run.stdout)
        .into_iter()
        .find(|l| l.starts_with("save_input_history "))
        .unwrap_or_default();
    assert!(
        shown.contains("false") && shown.ends_with(".metron/config.json)"),
        "{run:?}"
    );
    assert!(!history_file(home.path()).exists(), "{run:?}");
}

#[test]
fn on_a_terminal_a_history_file_that_cannot_be_read_costs_one_warning() {
    if !script_available() {
        return skip(
            "on_a_terminal_a_history_file_that_cannot_be_read_costs_one_warning",
            "util-linux `script` is not installed",
        );
    }
    let home = tempfile::Builder::new()
        .prefix("metron-home-")
        .tempdir()
        .expect("temp HOME");
    // A directory where the file should be: it can be neither read nor appended to.
    std::fs::create_dir_all(history_file(home.path())).expect("mkdir");
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Fine.", 20, 2), answer("Still fine.", 20, 2)]);
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("first\r");
    live.wait_stdout("Fine.", 1);
    live.wait_stdout_after("Fine.", "metron > ");
    live.send("second\r");
    live.wait_stdout("Still fine.", 1);
    live.wait_stdout_after("Still fine.", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    // The warning is wrapped on the terminal: read it back whole.
    let lines = rejoined(&run.stdout);
    let warnings: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("input history"))
        .collect();
    assert_eq!(warnings.len(), 1, "{run:?}");
    let warning = warnings[0];
    assert!(
        warning.starts_with("metron: warning: cannot read the input history ")
            && warning.contains(&history_file(home.path()).display().to_string())
            && warning.contains("\"save_input_history\": false"),
        "{warning}"
    );
    assert_eq!(fake.chat_bodies().len(), 2, "{run:?}");
}
