//! `metron tool NAME [ARGS]`, `--version`, `-h`, and configuration as the binary sees it.
//!
//! Every run goes through [`metron`], which gives the child a fresh HOME and
//! METRON_CONFIG_DIR and strips the variables metron reads; tests set variables on the
//! child only. Exit codes: 0 a result (including "No matches found."), 1 refused or failed,
//! 2 usage or configuration error.

use std::path::Path;
use std::process::Stdio;

use metron::tools::{Budgets, Toolbox};
use serde_json::json;

use super::common::*;

/// A small git project with a source file and a subdirectory.
fn project() -> TestProject {
    let p = TestProject::git();
    p.file("src/main.rs", "fn main() {\n    println!(\"hi\");\n}\n")
        .file("src/lib.rs", "pub fn hello() {}\n")
        .file("README.md", "hello\n")
        .file("sub/deep/notes.txt", "hello again\n");
    p
}

/// Runs `metron tool NAME ARGS` in `dir` with nothing else set.
fn tool(dir: &Path, name: &str, args: &str) -> Run {
    metron(dir).args(["tool", name, args]).run()
}

#[track_caller]
fn assert_run(run: &Run, code: i32, stdout: &str, stderr: &str) {
    assert_eq!(run.code, code, "exit code; {run:?}");
    assert_text_eq(&run.stdout, stdout);
    assert_text_eq(&run.stderr, stderr);
}

/// Asserts a usage error: exit 2, nothing on stdout, one `metron: ...` line on stderr
/// containing `needle`.
#[track_caller]
fn assert_usage_error(run: &Run, needle: &str) {
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(
        run.stderr.contains(needle),
        "stderr lacks {needle:?}: {run:?}"
    );
}

/// Asserts a one-line configuration error with exit 2.
#[track_caller]
fn assert_config_error(run: &Run, needles: &[&str]) {
    assert_eq!(run.code, 2, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert_eq!(run.stderr.lines().count(), 1, "one line: {run:?}");
    assert!(run.stderr.starts_with("metron: "), "{run:?}");
    for needle in needles {
        assert!(
            run.stderr.contains(needle),
            "stderr lacks {needle:?}: {run:?}"
        );
    }
}

/// What the model would read for this call, plus the newline the CLI ends output with.
fn model_text(p: &TestProject, name: &str, args: serde_json::Value) -> Result<String, String> {
    let toolbox = Toolbox::new(p.project(), Budgets::default());
    let with_newline = |text: String| {
        if text.ends_with('\n') {
            text
        } else {
            format!("{text}\n")
        }
    };
    toolbox
        .call(name, args)
        .map(with_newline)
        .map_err(|e| with_newline(e.to_string()))
}

#[test]
fn stdout_is_exactly_what_the_model_reads() {
    let p = project();
    let cases = [
        ("list_files", json!({})),
        ("list_files", json!({"pattern": "*.rs"})),
        ("list_files", json!({"pattern": "*.zig"})),
        ("search_text", json!({"pattern": "hello"})),
        ("search_text", json!({"pattern": "absent"})),
        (
            "view_slice",
            json!({"path": "src/main.rs", "start": 1, "end": 3}),
        ),
    ];
    for (name, args) in cases {
        let expected = model_text(&p, name, args.clone()).expect("tool succeeds in process");
        let run = tool(p.root(), name, &args.to_string());
        assert_run(&run, 0, &expected, "");
    }
    // A miss is a result, not a failure.
    let run = tool(p.root(), "search_text", r#"{"pattern":"absent"}"#);
    assert_run(&run, 0, "No matches found.\n", "");
}

#[test]
fn refusals_and_failures_exit_1_with_the_text_on_stdout() {
    let p = project();
    p.file("long.txt", "line\n".repeat(500));
    let cases = [
        (
            "view_slice",
            json!({"path": "../etc/passwd", "start": 1, "end": 2}),
        ),
        (
            "view_slice",
            json!({"path": "/etc/passwd", "start": 1, "end": 2}),
        ),
        (
            "view_slice",
            json!({"path": "missing.rs", "start": 1, "end": 2}),
        ),
        (
            "view_slice",
            json!({"path": "long.txt", "start": 1, "end": 500}),
        ),
        (
            "view_slice",
            json!({"path": "src/main.rs", "start": 3, "end": 1}),
        ),
        (
            "view_slice",
            json!({"path": "src/main.rs", "start": 9, "end": 9}),
        ),
        ("search_text", json!({"pattern": "a\\nb"})),
        ("list_files", json!({"pattern": "src/[a"})),
    ];
    for (name, args) in cases {
        let expected = model_text(&p, name, args.clone()).expect_err("tool refuses");
        let run = tool(p.root(), name, &args.to_string());
        assert_run(&run, 1, &expected, "");
    }
    let run = tool(
        p.root(),
        "view_slice",
        r#"{"path":"../outside","start":1,"end":1}"#,
    );
    assert!(run.stdout.contains("`../outside`") && run.stdout.contains("climbs out"));
}

#[test]
fn paths_are_relative_to_the_repository_root_from_any_subdirectory() {
    let p = project();
    let sub = p.path("sub/deep");
    let run = tool(&sub, "list_files", "{}");
    assert_run(
        &run,
        0,
        "README.md\nsrc/lib.rs\nsrc/main.rs\nsub/deep/notes.txt\n",
        "",
    );
    let run = tool(
        &sub,
        "view_slice",
        r#"{"path":"src/lib.rs","start":1,"end":1}"#,
    );
    assert_run(&run, 0, "    1 | pub fn hello() {}\n", "");
    let run = tool(&sub, "search_text", r#"{"pattern":"again"}"#);
    assert_run(&run, 0, "sub/deep/notes.txt:1:hello again\n", "");
}

#[test]
fn outside_a_repository_the_working_directory_is_the_project() {
    let p = TestProject::new();
    p.file("a.txt", "x\n").file("d/b.txt", "y\n");
    let run = tool(&p.path("d"), "list_files", "{}");
    assert_run(&run, 0, "b.txt\n", "");
}

#[test]
fn usage_errors_exit_2() {
    let p = project();
    let root = p.root();
    let run = tool(root, "nope", "{}");
    assert_usage_error(
        &run,
        "there is no tool `nope`; the tools are list_files, find_symbol, search_text, view_slice",
    );
    for (name, args, needle) in [
        ("list_files", "{", "not valid JSON"),
        // A bare name: the example shows this tool's own arguments.
        (
            "find_symbol",
            "Greeter",
            r#"not valid JSON (expected value at line 1 column 1); pass an object such as '{"symbol":"Config"}'"#,
        ),
        ("list_files", "[1]", "must be a JSON object"),
        ("list_files", "null", "must be a JSON object"),
        ("list_files", r#""*.rs""#, "must be a JSON object"),
        ("search_text", "{}", "missing field `pattern`"),
        // (A number for a string and "1" for an integer are converted: plain meaning.)
        ("search_text", r#"{"pattern":true}"#, "invalid type"),
        (
            "view_slice",
            r#"{"path":"src/main.rs","start":"one","end":2}"#,
            "invalid type",
        ),
        (
            "view_slice",
            r#"{"path":"src/main.rs","start":1.5,"end":2}"#,
            "invalid type",
        ),
        (
            "view_slice",
            r#"{"path":"src/main.rs","start":1}"#,
            "missing field `end`",
        ),
        ("list_files", r#"{"glob":"*.rs"}"#, "unknown field `glob`"),
    ] {
        let run = tool(root, name, args);
        assert_usage_error(&run, needle);
        assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    }
    // Missing NAME, unknown flags and extra operands are clap's usage errors.
    for args in [
        &["tool"][..],
        &["--bogus"],
        &["tool", "list_files", "{}", "extra"],
    ] {
        let run = metron(root).args(args).run();
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert_eq!(run.stdout, "", "{args:?}: {run:?}");
    }
}

#[test]
fn args_from_stdin_and_omitted_args() {
    let p = project();
    let args = r#"{"path":"src/lib.rs","start":1,"end":1}"#;
    let inline = tool(p.root(), "view_slice", args);
    let piped = metron(p.root())
        .args(["tool", "view_slice", "-"])
        .stdin(format!("  {args}\n"))
        .run();
    assert_run(&piped, 0, &inline.stdout, "");
    assert_run(&inline, 0, "    1 | pub fn hello() {}\n", "");

    let run = metron(p.root())
        .args(["tool", "view_slice", "-"])
        .stdin("")
        .run();
    assert_usage_error(&run, "not valid JSON");
    let run = metron(p.root())
        .args(["tool", "search_text", "-"])
        .stdin("{\"pattern\":")
        .run();
    assert_usage_error(&run, "not valid JSON");

    // Omitted ARGS means {}: fine for list_files, a missing field for the others.
    let run = metron(p.root()).args(["tool", "list_files"]).run();
    assert_run(
        &run,
        0,
        "README.md\nsrc/lib.rs\nsrc/main.rs\nsub/deep/notes.txt\n",
        "",
    );
    let run = metron(p.root()).args(["tool", "search_text"]).run();
    assert_usage_error(&run, "missing field `pattern`");
}

#[test]
fn config_errors_exit_2_with_one_line() {
    let p = project();
    // The user's own file is strict; a project's unknown key or bad value is only a
    // warning (tests/suite/project_config.rs), but a project's file that is not JSON stops.
    let (dir, user) = user_config("{}");
    let with_user_file = |text: &str| {
        std::fs::write(&user, text).expect("write the user config");
        metron(p.root())
            .args(["tool", "list_files", "{}"])
            .env("METRON_CONFIG", &user)
            .run()
    };
    assert_config_error(
        &with_user_file(r#"{"modle": "x"}"#),
        &[
            "unknown key `modle`",
            "config.json",
            "did you mean `model`?",
        ],
    );
    assert_config_error(
        &with_user_file(r#"{"zzzzzzzzzz": 1}"#),
        &[
            "unknown key `zzzzzzzzzz`",
            "`metron --example-config` prints all",
        ],
    );
    assert_config_error(
        &with_user_file(r#"{"max_slice_lines": 0}"#),
        &["`max_slice_lines`", "must be positive, got 0"],
    );
    assert_config_error(
        &with_user_file(r#"{"list_max_entries": "ten"}"#),
        &["`list_max_entries`", "must be a positive integer"],
    );
    assert_config_error(&with_user_file(r#"{"top_p": 1.5}"#), &["`top_p`", "(0, 1]"]);
    assert_config_error(
        &with_user_file(r#"{"disabled_tools": ["nope"]}"#),
        &["`disabled_tools`", "`nope`, which is not a tool"],
    );
    drop(dir);
    p.file(".metron.json", "{ not json");
    assert_config_error(&tool(p.root(), "list_files", "{}"), &["is not valid JSON"]);
    p.file(".metron.json", "[]");
    assert_config_error(
        &tool(p.root(), "list_files", "{}"),
        &["expected a JSON object"],
    );
    std::fs::remove_file(p.path(".metron.json")).expect("remove");

    // An explicit METRON_CONFIG that does not exist is an error, not a fallback.
    let missing = p.path("no-such-config.json");
    let run = metron(p.root())
        .args(["tool", "list_files"])
        .env("METRON_CONFIG", &missing)
        .run();
    assert_config_error(&run, &["cannot read config file", "no-such-config.json"]);

    // The environment layer is validated too, and named.
    let run = metron(p.root())
        .args(["tool", "list_files"])
        .env("OLLAMA_HOST", "ftp://example.com")
        .run();
    assert_config_error(&run, &["$OLLAMA_HOST", "only http and https"]);
    let run = metron(p.root())
        .args(["tool", "list_files"])
        .env("OLLAMA_MODEL", "   ")
        .run();
    assert_config_error(&run, &["`model`", "$OLLAMA_MODEL", "must name a model"]);

    // Bare `metron` reports a configuration problem before anything else.
    p.file(".metron.json", r#"{"model": "#);
    let run = metron(p.root()).run();
    assert_config_error(&run, &["is not valid JSON"]);
}

#[test]
fn config_layers_choose_the_budgets() {
    let p = numbered(6);
    // Files listed, plus the truncation line when cut (not the note on the rest).
    let listing = |run: &Run| {
        run.stdout
            .lines()
            .filter(|line| !line.starts_with("[not listed: "))
            .count()
    };
    // Defaults: 60 entries, so all 6 files.
    assert_eq!(listing(&tool(p.root(), "list_files", "{}")), 6);

    // $METRON_CONFIG_DIR/.metron/config.json...
    let m = metron(p.root()).args(["tool", "list_files"]);
    write_user_config(m.home(), r#"{"list_max_entries": 2}"#);
    let run = m.run();
    assert_run(
        &run,
        0,
        "f0.txt\nf1.txt\n[truncated to 2 entries; narrow with a glob]\n[not listed: the top level (4 more)]\n",
        "",
    );

    // ...else ~/.metron/config.json when METRON_CONFIG_DIR is unset.
    let m = metron(p.root())
        .args(["tool", "list_files"])
        .env_remove("METRON_CONFIG_DIR");
    write_user_config(m.home(), r#"{"list_max_entries": 3}"#);
    assert_eq!(listing(&m.run()), 4);

    // The project's file is laid over the user's: it may lower the user's limit...
    p.file(".metron.json", r#"{"list_max_entries": 4}"#);
    let m = metron(p.root()).args(["tool", "list_files"]);
    write_user_config(m.home(), r#"{"list_max_entries": 5}"#);
    assert_eq!(listing(&m.run()), 5);
    // ...but not raise it, and says so.
    let m = metron(p.root()).args(["tool", "list_files"]);
    write_user_config(m.home(), r#"{"list_max_entries": 1}"#);
    let run = m.run();
    assert_eq!(listing(&run), 2);
    assert!(
        run.stderr.contains("ignoring `list_max_entries` 4"),
        "{run:?}"
    );
    // A key the user does not set is the project's to choose.
    let m = metron(p.root()).args(["tool", "list_files"]);
    write_user_config(m.home(), r#"{"max_turns": 3}"#);
    assert_eq!(listing(&m.run()), 5);

    // $METRON_CONFIG names the user's layer instead of ~/.metron/config.json; the
    // project's file is still on top.
    let explicit = p.path("explicit.json");
    std::fs::write(&explicit, r#"{"list_max_entries": 5}"#).expect("write");
    let m = metron(p.root())
        .args(["tool", "list_files"])
        .env("METRON_CONFIG", &explicit);
    write_user_config(m.home(), r#"{"list_max_entries": 1}"#);
    let run = m.run();
    assert_eq!(listing(&run), 5, "{run:?}");
    std::fs::remove_file(p.path(".metron.json")).expect("remove");
    let run = metron(p.root())
        .args(["tool", "list_files"])
        .env("METRON_CONFIG", &explicit)
        .run();
    assert!(
        run.stdout
            .contains("[truncated to 5 entries; narrow with a glob]\n"),
        "{run:?}"
    );

    // The search and slice budgets reach their tools.
    p.file(
        ".metron.json",
        r#"{"search_max_matches": 1, "max_slice_lines": 2, "max_line_chars": 3}"#,
    );
    let run = tool(p.root(), "search_text", r#"{"pattern":"line"}"#);
    assert_run(
        &run,
        0,
        "f0.txt:1:lin [...clipped]\n[truncated to 1 matches; narrow the pattern]\n",
        "",
    );
    let run = tool(
        p.root(),
        "view_slice",
        r#"{"path":"f0.txt","start":1,"end":3}"#,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("at most 2 lines"), "{run:?}");
}

fn numbered(n: usize) -> TestProject {
    let p = TestProject::git();
    for i in 0..n {
        p.file(&format!("f{i}.txt"), "line one\nline two\nline three\n");
    }
    p
}

fn write_user_config(base: &Path, text: &str) {
    let dir = base.join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join("config.json"), text).expect("write config");
}

#[test]
fn a_project_config_cannot_grant_authority_and_says_so() {
    let p = project();
    p.file(
        ".metron.json",
        r#"{"auto_approve_patches": true, "list_max_entries": 1}"#,
    );
    let run = tool(p.root(), "list_files", "{}");
    assert_eq!(run.code, 0, "{run:?}");
    // Budgets from the project file still apply.
    assert_text_eq(
        &run.stdout,
        "README.md\n[truncated to 1 entries; narrow with a glob]\n[not listed: src/ (2 more), sub/deep/ (1 more)]\n",
    );
    assert_eq!(run.stderr.lines().count(), 1, "{run:?}");
    assert!(
        run.stderr
            .starts_with("metron: warning: ignoring `auto_approve_patches` in ")
            && run.stderr.contains(".metron.json"),
        "{run:?}"
    );

    p.file(".metron.json", r#"{"allowed_commands": ["cargo test"]}"#);
    for (allow, warned) in [
        (None, true),
        (Some("0"), true),
        (Some("no"), true),
        (Some("1"), false),
        (Some("true"), false),
        (Some("YES"), false),
    ] {
        let mut m = metron(p.root()).args(["tool", "list_files"]);
        if let Some(value) = allow {
            m = m.env("METRON_ALLOW_PROJECT_COMMANDS", value);
        }
        let run = m.run();
        assert_eq!(run.code, 0, "{run:?}");
        assert_eq!(
            run.stderr.contains("ignoring `allowed_commands`"),
            warned,
            "METRON_ALLOW_PROJECT_COMMANDS={allow:?}: {run:?}"
        );
    }
    // METRON_ALLOW_PROJECT_COMMANDS never lets auto-approval through.
    p.file(".metron.json", r#"{"auto_approve_patches": true}"#);
    let run = metron(p.root())
        .args(["tool", "list_files"])
        .env("METRON_ALLOW_PROJECT_COMMANDS", "1")
        .run();
    assert!(
        run.stderr.contains("ignoring `auto_approve_patches`"),
        "{run:?}"
    );

    // The user's own file may set both, silently.
    std::fs::remove_file(p.path(".metron.json")).expect("remove");
    let m = metron(p.root()).args(["tool", "list_files"]);
    write_user_config(
        m.home(),
        r#"{"auto_approve_patches": true, "allowed_commands": ["cargo test"]}"#,
    );
    let run = m.run();
    assert_eq!((run.code, run.stderr.as_str()), (0, ""), "{run:?}");
}

#[test]
fn disabled_tools_are_refused() {
    let p = project();
    p.file(".metron.json", r#"{"disabled_tools": ["search_text"]}"#);
    let run = tool(p.root(), "search_text", r#"{"pattern":"x"}"#);
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        run.stdout
            .starts_with("search_text is disabled by `disabled_tools` ("),
        "{run:?}"
    );
    assert_eq!(tool(p.root(), "list_files", "{}").code, 0);
}

#[test]
fn version_and_help() {
    let dir = TestProject::new();
    let run = metron(dir.root()).args(["--version"]).run();
    assert_eq!(run.code, 0, "{run:?}");
    let version = env!("CARGO_PKG_VERSION");
    let line = run.stdout.trim_end();
    let stamped = line
        .strip_prefix(&format!("metron {version} (commit "))
        .and_then(|rest| rest.strip_suffix(')'))
        .is_some_and(|commit| {
            (7..=40).contains(&commit.len()) && commit.chars().all(|c| c.is_ascii_hexdigit())
        });
    assert!(
        stamped || line == format!("metron {version} (not built from a git checkout)"),
        "{run:?}"
    );

    for flag in ["-h", "--help"] {
        let run = metron(dir.root()).args([flag]).run();
        assert_eq!(run.code, 0, "{run:?}");
        for needle in ["--yes", "--version", "-h, --help", "tool"] {
            assert!(
                run.stdout.contains(needle),
                "{flag} lacks {needle}: {run:?}"
            );
        }
    }
    // `metron tool --help` lists every tool with what the model is told about it (help is
    // wrapped to the terminal's width, so words are compared, not line breaks).
    let run = metron(dir.root()).args(["tool", "--help"]).run();
    assert_eq!(run.code, 0, "{run:?}");
    let words = |text: &str| text.split_whitespace().collect::<Vec<_>>().join(" ");
    let shown = words(&run.stdout);
    for spec in metron::tools::REGISTRY {
        for needle in [spec.name, spec.description, spec.parameters] {
            assert!(
                shown.contains(&words(needle)),
                "tool --help lacks {needle}: {run:?}"
            );
        }
    }
    // --version and -h work even when the configuration is broken.
    dir.file(".metron.json", "{ broken");
    assert_eq!(metron(dir.root()).args(["--version"]).run().code, 0);
    assert_eq!(metron(dir.root()).args(["-h"]).run().code, 0);
}

/// Every subcommand is listed under "Commands:" in `-h` and `--help`, `man` too (it was
/// hidden, so the man page could only be found in the docs).
#[test]
fn help_lists_every_subcommand_including_man() {
    let dir = TestProject::new();
    for flag in ["-h", "--help"] {
        let run = metron(dir.root()).args([flag]).run();
        assert_eq!(run.code, 0, "{run:?}");
        let commands: Vec<&str> = run
            .stdout
            .split("Commands:\n")
            .nth(1)
            .unwrap_or_default()
            .lines()
            .take_while(|line| line.starts_with("  "))
            .filter_map(|line| line.split_whitespace().next())
            .collect();
        assert_eq!(
            commands,
            ["tool", "completions", "man", "sessions", "help"],
            "{flag}: {run:?}"
        );
    }
    // The page lists itself among the commands, with what it is for.
    let page = metron(dir.root()).args(["man"]).run();
    assert_eq!(page.code, 0, "{page:?}");
    assert!(
        page.stdout.contains("\\fBmetron man\\fR"),
        "{}",
        page.stdout
    );
}

#[test]
fn bare_metron_starts_the_session_and_ends_at_end_of_input() {
    let p = project();
    let run = metron(p.root()).run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.starts_with("=== metron (model: "), "{run:?}");
}

#[test]
fn tool_cannot_be_combined_with_prompt_or_doctor() {
    let p = project();
    for args in [
        ["-p", "hi", "tool", "list_files"],
        ["--doctor", "tool", "list_files", "{}"],
        ["--model", "qwen3:8b", "tool", "list_files"],
        ["-c", "tool", "list_files", "{}"],
        ["--resume", "1-1", "tool", "list_files"],
    ] {
        let run = metron(p.root()).args(args).run();
        assert_eq!(run.code, 2, "{args:?}: {run:?}");
        assert!(
            run.stderr
                .contains("cannot be combined with -p, --doctor, --model, -c or --resume"),
            "{args:?}: {run:?}"
        );
    }
}

#[test]
fn a_request_without_p_is_a_usage_error_with_the_spelling_that_works() {
    let p = project();
    let run = metron(p.root()).args(["some text"]).run();
    assert_run(
        &run,
        2,
        "",
        "metron: unexpected argument 'some text': to run one request, pass it with -p: metron -p \"some text\"; to start the interactive session, run metron with no arguments\n",
    );
    // Unquoted words make one request in the hint.
    let run = metron(p.root()).args(["fix", "the", "bug"]).run();
    assert_usage_error(&run, "metron -p \"fix the bug\"");
    let run = metron(p.root()).args(["doctor"]).run();
    assert_run(
        &run,
        2,
        "",
        "metron: unexpected argument 'doctor': the setup check is a flag; run `metron --doctor`\n",
    );
    // Nothing was started: no banner, no request.
    let run = metron(p.root())
        .args(["-m", "x", "hello"])
        .stdin("hi\n")
        .run();
    assert_usage_error(&run, "metron -p \"hello\"");
}

#[test]
fn the_model_flag_reaches_one_shot_mode_and_names_its_layer() {
    use super::fake_ollama::{FakeOllama, answer};
    let p = project();
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .chat(vec![answer("Hi.", 10, 1), answer("Hi again.", 10, 1)])
        .start();
    let run = metron(p.root())
        .args(["-p", "hello", "--model", "qwen3:8b"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("OLLAMA_MODEL", "other:1b")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Hi.\n", "{run:?}");
    let (run, events) = json_events(
        metron(p.root())
            .args(["-m", "qwen3:8b", "-p", "hello", "--json"])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let start = &events_of_type(&events, "session_start")[0];
    assert_eq!(start["model"], "qwen3:8b", "{start}");
    assert_eq!(start["config_sources"]["model"], "--model", "{start}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 2);
    assert!(
        bodies.iter().all(|b| b["model"] == "qwen3:8b"),
        "{bodies:?}"
    );
    // An empty name is a configuration error that names the flag.
    let run = metron(p.root()).args(["-p", "hello", "--model", ""]).run();
    assert_config_error(&run, &["`model` from --model must name a model"]);
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    // More output than a pipe holds, and a reader that goes away at once (`| head -0`).
    let p = TestProject::git();
    for i in 0..1500 {
        p.file(
            &format!("a-rather-long-directory-name/file-{i:05}.txt"),
            "x\n",
        );
    }
    p.file(".metron.json", r#"{"list_max_entries": 100000}"#);
    let home = tempfile::tempdir().expect("home");
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_metron"))
        .args(["tool", "list_files"])
        .current_dir(p.root())
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    drop(child.stdout.take());
    let output = child.wait_with_output().expect("wait");
    assert_eq!(
        output.status.code(),
        Some(0),
        "stderr: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

#[cfg(target_os = "linux")]
#[test]
fn ctrl_c_during_a_command_run_by_hand_kills_it_and_exits_130() {
    use std::time::{Duration, Instant};
    let p = TestProject::git();
    let (mut command, home) = super::common::hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    std::fs::create_dir_all(home.path().join(".metron")).expect("mkdir");
    std::fs::write(
        home.path().join(".metron").join("config.json"),
        r#"{"allowed_commands": ["sleep"], "command_timeout_seconds": 60}"#,
    )
    .expect("write config");
    command.args(["tool", "run_command", r#"{"command": "sleep 44"}"#, "--yes"]);
    let live = super::common::Live::start(command, home);
    let sleeper = live.wait_for_child("sleep");
    let pressed = Instant::now();
    live.interrupt();
    let run = live.finish();
    assert!(pressed.elapsed() < Duration::from_secs(10), "{run:?}");
    assert_eq!(run.code, 130, "{run:?}");
    assert!(
        run.stdout
            .starts_with("$ sleep 44\ninterrupted by the user (Ctrl-C); killed\n"),
        "{run:?}"
    );
    assert!(
        !std::path::Path::new(&format!("/proc/{sleeper}")).exists(),
        "sleep (pid {sleeper}) outlived metron"
    );
}

/// The layers as `-p --json` reports them: the project's file over the user's, the
/// environment over the project's file, a flag over the environment; `config_files` names
/// both files, the user's first, and a privileged key only the user's file may set.
#[test]
fn session_start_reports_the_merged_layers_and_both_files() {
    use super::fake_ollama::{FakeOllama, answer};
    let p = project();
    p.file(
        ".metron.json",
        r#"{"model": "qwen3:8b", "max_slice_lines": 90, "num_ctx": 4096, "allowed_commands": ["curl"]}"#,
    );
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .model("env:1b", &["completion", "tools"], 40960)
        .model("flag:1b", &["completion", "tools"], 40960)
        .chat(vec![
            answer("One.", 10, 1),
            answer("Two.", 10, 1),
            answer("Three.", 10, 1),
        ])
        .start();
    let session_start = |model_env: Option<&str>, flag: Option<&str>| {
        let mut m = metron(p.root())
            .args(["-p", "hello", "--json"])
            .env("OLLAMA_HOST", fake.base_url());
        write_user_config(
            m.home(),
            r#"{"model": "user:1b", "num_ctx": 8192, "max_turns": 4, "allowed_commands": ["cargo test"]}"#,
        );
        let user_file = m.home().join(".metron/config.json");
        if let Some(model) = model_env {
            m = m.env("OLLAMA_MODEL", model);
        }
        if let Some(model) = flag {
            m = m.args(["--model", model]);
        }
        let (run, events) = json_events(m.run());
        assert_eq!(run.code, 0, "{run:?}");
        assert!(
            run.stderr.contains("ignoring `allowed_commands`"),
            "{run:?}"
        );
        (
            events_of_type(&events, "session_start")[0].clone(),
            user_file,
        )
    };

    let (start, user_file) = session_start(None, None);
    let user = user_file.display().to_string();
    let theirs = p.path(".metron.json").display().to_string();
    assert_eq!(
        start["config_files"],
        serde_json::json!([user, theirs]),
        "{start}"
    );
    let sources = &start["config_sources"];
    assert_eq!(sources["model"], theirs.as_str(), "{start}");
    assert_eq!(sources["max_slice_lines"], theirs.as_str(), "{start}");
    assert_eq!(sources["num_ctx"], theirs.as_str(), "tightened: {start}");
    assert_eq!(sources["max_turns"], user.as_str(), "{start}");
    assert_eq!(sources["allowed_commands"], user.as_str(), "{start}");
    let offered = start["tools_offered"].to_string();
    assert!(
        offered.contains("run_command"),
        "the user's commands hold: {start}"
    );

    let (start, _) = session_start(Some("env:1b"), None);
    assert_eq!(start["model"], "env:1b", "{start}");
    assert_eq!(start["config_sources"]["model"], "$OLLAMA_MODEL", "{start}");

    let (start, _) = session_start(Some("env:1b"), Some("flag:1b"));
    assert_eq!(start["model"], "flag:1b", "{start}");
    assert_eq!(start["config_sources"]["model"], "--model", "{start}");
}

#[test]
fn completions_for_each_shell_know_the_flags_and_subcommands() {
    let p = project();
    // fish names a long option `-l doctor`; the others spell it out.
    for (shell, doctor) in [
        ("bash", "--doctor"),
        ("zsh", "--doctor"),
        ("fish", "-l doctor"),
    ] {
        let run = metron(p.root()).args(["completions", shell]).run();
        assert_eq!(run.code, 0, "{shell}: {run:?}");
        assert_eq!(run.stderr, "", "{shell}: {run:?}");
        for needle in [doctor, "tool", "completions"] {
            assert!(
                run.stdout.contains(needle),
                "{shell} completions lack {needle:?}:\n{}",
                run.stdout
            );
        }
    }
    let run = metron(p.root()).args(["completions", "tcsh"]).run();
    assert_eq!(run.code, 2, "{run:?}");
}

#[test]
fn the_man_page_has_the_standard_sections_and_every_slash_command() {
    let p = project();
    let run = metron(p.root()).args(["man"]).run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stderr, "", "{run:?}");
    let page = run.stdout;
    assert!(page.starts_with(".ie "), "roff first: {page}");
    for section in [
        "NAME",
        "SYNOPSIS",
        "DESCRIPTION",
        "OPTIONS",
        "COMMANDS",
        "SLASH COMMANDS",
        "EXIT STATUS",
        "ENVIRONMENT",
        "FILES",
    ] {
        let heading = if section.contains(' ') {
            format!("\n.SH \"{section}\"\n")
        } else {
            format!("\n.SH {section}\n")
        };
        assert!(page.contains(&heading), "no {section} section:\n{page}");
    }
    for needle in [
        "OLLAMA_HOST",
        "OLLAMA_MODEL",
        "METRON_CONFIG\\fR",
        "METRON_CONFIG_DIR",
        "SSL_CERT_FILE",
        ".metron/config.json",
        "\\fB130\\fR",
        "\\-\\-doctor",
    ] {
        assert!(page.contains(needle), "the page lacks {needle:?}:\n{page}");
    }
    // Every command the session's /help lists, taken from the session itself.
    let help = metron(p.root())
        .env("OLLAMA_HOST", super::fake_ollama::refused_url())
        .stdin("/help\n")
        .run();
    assert_eq!(help.code, 0, "{help:?}");
    let commands: Vec<&str> = help
        .stdout
        .lines()
        .filter(|line| line.starts_with('/'))
        .filter_map(|line| line.split("  ").next())
        .collect();
    assert!(commands.len() >= 12, "{help:?}");
    for command in commands {
        assert!(
            page.contains(&format!("\\fB{}\\fR", command.trim())),
            "the page lacks {command}:\n{page}"
        );
    }
}
