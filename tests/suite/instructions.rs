//! Project instructions (AGENTS.md) through the real binary and the fake Ollama server:
//! which files are found and in what order, the fallback names, the cap and its notes (to
//! the person and in the request), the place in the prompt (byte-identical across turns,
//! after a history trim too), turning them off, escaping what is shown, the doctor's row,
//! and the files that cannot be used (each a note, never a crash or an unbounded read).

use std::path::Path;

use serde_json::Value;

use metron::agent::prompt::SYSTEM_PROMPT;

use super::common::{Metron, Run, TestProject, content, metron};
use super::fake_ollama::{FakeOllama, answer, refused_url};

/// `metron -p hello` in `cwd` against `fake`, with the run adjusted by `setup` (a user
/// file in its HOME, a flag).
fn ask(cwd: &Path, fake: &FakeOllama, setup: impl FnOnce(Metron) -> Metron) -> Run {
    let m = metron(cwd)
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url());
    setup(m).run()
}

/// A fake that answers `n` requests.
fn answering(n: usize) -> FakeOllama {
    FakeOllama::start(
        (0..n)
            .map(|i| answer(&format!("Answer {i}."), 10, 2))
            .collect(),
    )
}

/// Writes `text` as `name` in the run's metron directory (HOME/.metron).
fn in_user_dir(m: Metron, name: &str, text: &str) -> Metron {
    let dir = m.home().join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join(name), text).expect("write into .metron");
    m
}

/// The system message of a request.
fn system(body: &Value) -> String {
    assert_eq!(body["messages"][0]["role"], "system", "{body:#}");
    content(body, 0)
}

/// The position of each needle in `haystack`, failing on one that is missing.
#[track_caller]
fn positions(haystack: &str, needles: &[&str]) -> Vec<usize> {
    needles
        .iter()
        .map(|n| {
            haystack
                .find(n)
                .unwrap_or_else(|| panic!("{n:?} is not in:\n{haystack}"))
        })
        .collect()
}

#[test]
fn nested_files_are_sent_the_users_first_then_from_the_root_down_to_the_working_directory() {
    let p = TestProject::git();
    p.file("AGENTS.md", "ROOT RULE: run go test.\n")
        .file("svc/AGENTS.md", "SVC RULE: keep handlers small.\n")
        .file("svc/api/README.md", "not an instruction file\n")
        .file("other/AGENTS.md", "OTHER RULE: never sent.\n");
    let fake = answering(1);
    let run = ask(&p.path("svc/api"), &fake, |m| {
        in_user_dir(m, "AGENTS.md", "USER RULE: answer in English.\n")
    });
    assert_eq!(run.code, 0, "{run:?}");
    let sent = system(&fake.chat_bodies()[0]);
    assert!(sent.starts_with(SYSTEM_PROMPT), "{sent}");
    let at = positions(
        &sent,
        &[
            "USER RULE: answer in English.",
            "--- AGENTS.md ---\nROOT RULE: run go test.",
            "--- svc/AGENTS.md ---\nSVC RULE: keep handlers small.",
        ],
    );
    assert!(at[0] < at[1] && at[1] < at[2], "order {at:?}:\n{sent}");
    assert!(!sent.contains("OTHER RULE"), "{sent}");
    assert!(sent.contains("not permissions"), "{sent}");
    // The person is told which files, the user's by its path, with their size in tokens.
    let line = run
        .stderr
        .lines()
        .find(|l| l.starts_with("instructions: "))
        .unwrap_or_else(|| panic!("no instructions line: {run:?}"));
    let user = Path::new(&line["instructions: ".len()..line.find(" (~").unwrap_or(0)]);
    assert!(user.ends_with(".metron/AGENTS.md"), "{line}");
    assert!(
        line.ends_with("AGENTS.md (~8 tokens), AGENTS.md (~6 tokens), svc/AGENTS.md (~8 tokens)"),
        "{line}"
    );
    assert_eq!(run.stdout, "Answer 0.\n");
}

#[test]
fn claude_md_is_read_where_a_directory_has_no_agents_md() {
    let p = TestProject::git();
    p.file("AGENTS.md", "ROOT AGENTS.\n")
        .file("CLAUDE.md", "ROOT CLAUDE: shadowed by AGENTS.md.\n")
        .file("lib/CLAUDE.md", "LIB CLAUDE.\n");
    let fake = answering(1);
    let run = ask(&p.path("lib"), &fake, |m| m);
    assert_eq!(run.code, 0, "{run:?}");
    let sent = system(&fake.chat_bodies()[0]);
    let at = positions(
        &sent,
        &["--- AGENTS.md ---", "--- lib/CLAUDE.md ---\nLIB CLAUDE."],
    );
    assert!(at[0] < at[1], "{sent}");
    assert!(
        !sent.contains("ROOT CLAUDE"),
        "one file per directory: {sent}"
    );
    assert!(
        run.stderr
            .contains("instructions: AGENTS.md (~4 tokens), lib/CLAUDE.md (~3 tokens)"),
        "{run:?}"
    );
}

#[test]
fn a_configured_fallback_name_replaces_claude_md() {
    let p = TestProject::git();
    p.file("GEMINI.md", "GEMINI RULES.\n")
        .file("CLAUDE.md", "CLAUDE RULES.\n");
    let fake = answering(1);
    let run = ask(p.root(), &fake, |m| {
        in_user_dir(
            m,
            "config.json",
            r#"{"instructions_fallbacks": ["GEMINI.md"]}"#,
        )
    });
    assert_eq!(run.code, 0, "{run:?}");
    let sent = system(&fake.chat_bodies()[0]);
    assert!(sent.contains("--- GEMINI.md ---\nGEMINI RULES."), "{sent}");
    assert!(!sent.contains("CLAUDE RULES"), "{sent}");

    // A repository cannot choose the names: its `.metron.json` is ignored, with a warning.
    p.file(".metron.json", r#"{"instructions_fallbacks": ["EVIL.md"]}"#)
        .file("EVIL.md", "EVIL RULES.\n");
    let fake = answering(1);
    let run = ask(p.root(), &fake, |m| m);
    assert_eq!(run.code, 0, "{run:?}");
    let sent = system(&fake.chat_bodies()[0]);
    assert!(
        sent.contains("CLAUDE RULES") && !sent.contains("EVIL"),
        "{sent}"
    );
    assert!(run.stderr.contains("instructions_fallbacks"), "{run:?}");
}

#[test]
fn the_cap_cuts_at_a_line_and_both_the_person_and_the_model_are_told() {
    let p = TestProject::git();
    let line = "Keep every function under forty lines.\n"; // 39 bytes
    p.file("AGENTS.md", line.repeat(10))
        .file("sub/AGENTS.md", "SUB RULE: never reached.\n");
    let fake = answering(1);
    let run = ask(&p.path("sub"), &fake, |m| {
        in_user_dir(m, "config.json", r#"{"instructions_max_bytes": 100}"#)
    });
    assert_eq!(run.code, 0, "{run:?}");
    let sent = system(&fake.chat_bodies()[0]);
    // Two whole lines (78 bytes) fit in 100; the third would not.
    let kept = format!("--- AGENTS.md ---\n{}", line.repeat(2).trim_end());
    assert!(
        sent.contains(&format!(
            "{kept}\n[metron: the instructions were cut here at the 100-byte cap"
        )),
        "{sent}"
    );
    assert_eq!(sent.matches("Keep every function").count(), 2, "{sent}");
    assert!(!sent.contains("SUB RULE"), "{sent}");
    assert!(
        run.stderr
            .contains("instructions: AGENTS.md (~20 tokens, cut)"),
        "{run:?}"
    );
    assert!(
        run.stderr.contains(
            "instructions: note: AGENTS.md was cut after 78 bytes: the instructions are capped at 100 bytes (`instructions_max_bytes`)"
        ),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("instructions: note: sub/AGENTS.md was not read: the files before it used up the 100-byte cap"),
        "{run:?}"
    );

    // The session's banner says the same, on stdout before the first prompt.
    let m = metron(&p.path("sub"));
    let run = in_user_dir(m, "config.json", r#"{"instructions_max_bytes": 100}"#)
        .env("OLLAMA_HOST", refused_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout.contains(
            "\ninstructions: AGENTS.md (~20 tokens, cut)\ninstructions: note: AGENTS.md was cut after 78 bytes"
        ),
        "{run:?}"
    );
}

#[test]
fn the_prompt_prefix_is_byte_identical_across_turns_and_after_a_history_trim() {
    let p = TestProject::git();
    p.file("AGENTS.md", "Run the tests with make check.\n");
    let fake = answering(3);
    let m = metron(p.root());
    // Two messages after the system prompt: the second turn's end trims the first.
    let m = in_user_dir(m, "config.json", r#"{"max_history_messages": 2}"#);
    let run = m
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("first\nsecond\nthird\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 3, "{run:?}");
    let first = system(&bodies[0]);
    assert!(first.contains("Run the tests with make check."), "{first}");
    for (turn, body) in bodies.iter().enumerate() {
        let sent = system(body);
        assert!(
            sent.starts_with(&first),
            "turn {turn}: the system message no longer starts with the first one's bytes:\n{sent}"
        );
        assert_eq!(body["tools"], bodies[0]["tools"], "turn {turn}");
    }
    // The third request follows a trim: the system message is still the first one's, byte
    // for byte, and the note comes with the person's line.
    assert_eq!(system(&bodies[2]), first);
    assert_eq!(content(&bodies[2], 1), "second", "{:#}", bodies[2]);
    let line = content(&bodies[2], 3);
    assert!(
        line.contains("earlier messages were dropped") && line.ends_with("\n\nthird"),
        "{:#}",
        bodies[2]
    );
}

#[test]
fn no_instructions_and_the_config_key_turn_them_off() {
    let p = TestProject::git();
    p.file("AGENTS.md", "ROOT RULE.\n");
    let fake = answering(1);
    let run = ask(p.root(), &fake, |m| m.args(["--no-instructions"]));
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(system(&fake.chat_bodies()[0]), SYSTEM_PROMPT);
    assert!(run.stderr.contains("instructions: off"), "{run:?}");

    let fake = answering(1);
    let run = ask(p.root(), &fake, |m| {
        in_user_dir(m, "config.json", r#"{"instructions": false}"#)
    });
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(system(&fake.chat_bodies()[0]), SYSTEM_PROMPT);

    // In the session: the banner says so, and /config names the flag as the layer.
    let run = metron(p.root())
        .args(["--no-instructions"])
        .env("OLLAMA_HOST", refused_url())
        .stdin("/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("\ninstructions: off"), "{run:?}");
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("instructions ") && l.ends_with("false  (--no-instructions)")),
        "{run:?}"
    );
}

#[test]
fn control_characters_in_names_and_text_are_escaped_in_the_banner_and_context() {
    let p = TestProject::git();
    let dir = "sub\x1b[31mred";
    p.file(
        &format!("{dir}/AGENTS.md"),
        "\x1b]0;owned\x07Rule one\nRule two\n",
    );
    let run = metron(&p.path(dir))
        .env("OLLAMA_HOST", refused_url())
        .stdin("/context\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        !run.stdout.contains('\x1b') && !run.stdout.contains('\x07'),
        "{run:?}"
    );
    assert!(
        run.stdout
            .contains("instructions: sub\\u{1b}[31mred/AGENTS.md (~7 tokens)"),
        "banner: {run:?}"
    );
    // /context names the file and shows its first line, escaped.
    assert!(
        run.stdout
            .contains("  sub\\u{1b}[31mred/AGENTS.md: \\u{1b}]0;owned\\u{7}Rule one"),
        "/context: {run:?}"
    );
    assert!(run.stdout.contains("fixed prompt: "), "{run:?}");
}

#[test]
fn the_doctor_names_the_files_and_counts_them_in_the_fixed_prompt() {
    let p = TestProject::git();
    p.file("AGENTS.md", "x".repeat(2000) + "\n");
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", refused_url())
        .run();
    let row = run
        .stdout
        .lines()
        .find(|l| l.starts_with("ok    agents "))
        .unwrap_or_else(|| panic!("no agents row: {run:?}"));
    assert!(row.ends_with("AGENTS.md (~501 tokens)"), "{row}");
    let tools = run
        .stdout
        .lines()
        .find(|l| l.contains("schema bytes"))
        .unwrap_or_else(|| panic!("no tools row: {run:?}"));
    assert!(
        tools.contains("with the system prompt and instructions)"),
        "{tools}"
    );

    let bare = TestProject::git();
    let run = metron(bare.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", refused_url())
        .run();
    assert!(
        run.stdout
            .contains("none found (looked for AGENTS.md, CLAUDE.md"),
        "{run:?}"
    );
}

#[test]
fn unusable_files_each_get_a_note_and_the_session_still_starts() {
    let p = TestProject::git();
    // Root: a symlink out of the project (to an endless device), so CLAUDE.md is read.
    p.symlink("AGENTS.md", "/dev/zero")
        .file("CLAUDE.md", "ROOT CLAUDE.\n");
    // a: a directory named AGENTS.md, then CLAUDE.md that is not UTF-8.
    p.dir("a/AGENTS.md")
        .file("a/CLAUDE.md", b"\xff\xfe\x00bad".as_slice());
    // a/b: a FIFO, which must never block the start.
    p.fifo("a/b/AGENTS.md");
    // a/b/c: a 64 MiB file, of which at most the cap is read.
    p.dir("a/b/c");
    let huge = std::fs::File::create(p.path("a/b/c/AGENTS.md")).expect("create");
    huge.set_len(64 << 20).expect("grow");
    let fake = answering(1);
    let run = ask(&p.path("a/b/c"), &fake, |m| m);
    assert_eq!(run.code, 0, "{run:?}");
    for note in [
        "instructions: note: AGENTS.md was not read: it is a symlink leading out of the project",
        "instructions: note: a/AGENTS.md was not read: it is a directory, not a file",
        "instructions: note: a/CLAUDE.md was not read: it is not UTF-8 text",
        "instructions: note: a/b/AGENTS.md was not read: it is not a regular file",
        "instructions: note: a/b/c/AGENTS.md was cut after",
    ] {
        assert!(run.stderr.contains(note), "{note}: {run:?}");
    }
    let sent = system(&fake.chat_bodies()[0]);
    assert!(sent.contains("--- CLAUDE.md ---\nROOT CLAUDE."), "{sent}");
    // The cut file is NUL bytes (valid UTF-8): sent up to the cap, never more.
    assert!(
        sent.len() < SYSTEM_PROMPT.len() + 8192 + 1024,
        "{}",
        sent.len()
    );
}

#[test]
fn an_unreadable_file_gets_a_note() {
    // The user's file is a socket: opening it fails (ENXIO) for root as for anyone, so
    // the case runs wherever the suite does (permission bits do not stop root).
    let p = TestProject::git();
    let fake = answering(1);
    let mut socket = None;
    let run = ask(p.root(), &fake, |m| {
        let dir = m.home().join(".metron");
        std::fs::create_dir_all(&dir).expect("mkdir .metron");
        socket = Some(std::os::unix::net::UnixListener::bind(dir.join("AGENTS.md")).expect("bind"));
        m
    });
    drop(socket);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("AGENTS.md was not read: "), "{run:?}");
    assert_eq!(system(&fake.chat_bodies()[0]), SYSTEM_PROMPT);
}
