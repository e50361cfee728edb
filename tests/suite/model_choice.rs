//! Choosing the model: `/model NAME --save` writes the user's own config file (the only
//! config write metron makes, and it says so); when the configured model is not installed
//! and exactly one installed model supports tools, the session offers it (a yes/no
//! question on a terminal) and `-p` and `--doctor` name it; the doctor fails a `num_ctx`
//! too small for the fixed prompt. Through the real binary against the fake Ollama server.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use serde_json::Value;

use super::common::{
    Live, TestProject, exit_on_a_terminal, hermetic, metron, on_a_terminal_at_home, rejoined,
    script_available, skip,
};
use super::fake_ollama::{FakeBuilder, FakeOllama, Reply, answer};

/// Two installed models with tool support and one without: nothing to offer.
fn two_tool_models() -> FakeBuilder {
    FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .model("llama3.1:latest", &["completion", "tools"], 131072)
        .model("nomic-embed-text:latest", &["embedding"], 2048)
}

/// One installed model with tool support (qwen3:8b) beside one without: the one to offer
/// when the configured model is missing.
fn one_tool_model() -> FakeBuilder {
    FakeOllama::builder()
        .model("nomic-embed-text:latest", &["embedding"], 2048)
        .model("qwen3:8b", &["completion", "tools"], 40960)
}

/// The user's own config file under `home` (HOME and METRON_CONFIG_DIR in these runs).
fn user_file(home: &Path) -> std::path::PathBuf {
    home.join(".metron").join("config.json")
}

/// Writes the user's config file under `home` with `text` and `mode`.
fn write_user_file(home: &Path, text: &str, mode: u32) {
    let path = user_file(home);
    std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    std::fs::write(&path, text).expect("write the user config");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

/// `metron` in `p` against `fake`, with `home` (which the test keeps, to look at what was
/// written after metron has exited) as HOME and METRON_CONFIG_DIR.
fn at_home(p: &TestProject, fake: &FakeOllama, home: &Path) -> super::common::Metron {
    metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .env("HOME", home)
        .env("METRON_CONFIG_DIR", home)
}

fn mode_of(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

#[test]
fn model_save_on_a_terminal_writes_the_users_config_and_says_so() {
    if !script_available() {
        return skip(
            "model_save_on_a_terminal_writes_the_users_config_and_says_so",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let home = tempfile::tempdir().expect("home");
    write_user_file(
        home.path(),
        "{\"num_ctx\": 8192,\n \"model\": \"qwen3:8b\", \"disabled_tools\": [\"list_files\"]}",
        0o640,
    );
    let fake = two_tool_models().chat(vec![answer("Hi.", 10, 1)]).start();
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    live.send("/model llama3.1 --save\r");
    live.wait_stdout("saved: updated ", 1);
    live.wait_stdout_after("saved: updated ", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");

    let path = user_file(home.path());
    assert!(
        run.stdout.contains("model: llama3.1:latest (was qwen3:8b)"),
        "{run:?}"
    );
    let saved = format!(
        "saved: updated {} with \"model\": \"llama3.1:latest\" (every other key kept); /model --save is the only way metron ever writes a config file",
        path.display()
    );
    assert!(rejoined(&run.stdout).contains(&saved), "{run:?}");
    let text = std::fs::read_to_string(&path).expect("read");
    assert_eq!(
        text,
        "{\n  \"num_ctx\": 8192,\n  \"model\": \"llama3.1:latest\",\n  \"disabled_tools\": [\"list_files\"]\n}\n"
    );
    assert_eq!(mode_of(&path), 0o640, "the file keeps its mode");
    // No temporary file was left beside it.
    let left: Vec<String> = std::fs::read_dir(path.parent().expect("dir"))
        .expect("list")
        .filter_map(|entry| entry.ok())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "config.json" && name != "input_history")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn model_save_creates_the_users_config_readable_by_its_owner_only() {
    let p = TestProject::git();
    let fake = two_tool_models().start();
    let home = tempfile::tempdir().expect("home");
    let path = user_file(home.path());
    let run = at_home(&p, &fake, home.path())
        .stdin("/model qwen3:8b --save\n")
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("saved: created "), "{run:?}");
    let saved: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("read")).expect("json");
    assert_eq!(saved, serde_json::json!({"model": "qwen3:8b"}));
    assert_eq!(mode_of(&path), 0o600);
    assert_eq!(mode_of(path.parent().expect("dir")), 0o700);
}

#[test]
fn model_save_says_when_a_project_file_chooses_the_model_above_yours() {
    let p = TestProject::git();
    p.file(".metron.json", r#"{"model": "qwen3:8b"}"#);
    let fake = two_tool_models().start();
    let home = tempfile::tempdir().expect("home");
    let run = at_home(&p, &fake, home.path())
        .stdin("/model llama3.1 --save\n")
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.contains("saved: created "), "{run:?}");
    assert!(
        run.stdout.contains(&format!(
            "note: the project's {} chooses the model above your config file",
            p.path(".metron.json").display()
        )),
        "{run:?}"
    );
}

#[test]
fn model_save_of_a_model_that_is_not_installed_writes_nothing() {
    let p = TestProject::git();
    let fake = two_tool_models().start();
    let home = tempfile::tempdir().expect("home");
    let path = user_file(home.path());
    let run = at_home(&p, &fake, home.path())
        .stdin("/model nomic-embed-text --save\n")
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("does not support tools"), "{run:?}");
    assert!(run.stderr.contains("nothing was saved"), "{run:?}");
    assert!(!path.exists(), "a config file was written");
}

#[test]
fn model_save_refuses_a_config_that_is_not_json_and_leaves_it_alone() {
    let p = TestProject::git();
    let fake = two_tool_models().start();
    let (mut command, unused) = hermetic(env!("CARGO_BIN_EXE_metron"), p.root());
    // A HOME the test keeps, to look at the file after metron has exited.
    let home = tempfile::tempdir().expect("home");
    command
        .env("OLLAMA_HOST", fake.base_url())
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path());
    let path = user_file(home.path());
    write_user_file(home.path(), r#"{"num_ctx": 8192}"#, 0o600);
    let mut live = Live::start(command, unused);
    live.wait_stdout("=== metron", 1);
    // Broken after the start (at the start it would stop metron with exit 2).
    std::fs::write(&path, "{\"num_ctx\": 8192,,}").expect("break the file");
    live.send("/model qwen3:8b --save\n/history\n");
    live.wait_stdout("after the system prompt", 1);
    let run = live.finish();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stderr.contains(&format!(
            "metron: not saved: your config file {} is not valid JSON (",
            path.display()
        )) && run.stderr.contains("then save again"),
        "{run:?}"
    );
    assert_eq!(
        std::fs::read_to_string(&path).expect("read"),
        "{\"num_ctx\": 8192,,}"
    );
}

#[test]
fn a_missing_model_offers_the_one_installed_tool_model_on_a_terminal() {
    if !script_available() {
        return skip(
            "a_missing_model_offers_the_one_installed_tool_model_on_a_terminal",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let home = tempfile::tempdir().expect("home");
    let fake = one_tool_model().chat(vec![answer("Hi.", 10, 1)]).start();
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    let question = "Use qwen3:8b for this session instead? [y/N] ";
    live.wait_stdout(question, 1);
    // An answer that is neither is not taken for either: asked again.
    live.send("ok\r");
    live.wait_stdout(question, 2);
    live.send("y\r");
    live.wait_stdout("model: qwen3:8b (was qwen2.5-coder:7b)", 1);
    live.wait_stdout("/model qwen3:8b --save keeps it for the next session", 1);
    live.send("hello\r");
    live.wait_stdout("Hi.", 1);
    let run = exit_on_a_terminal(live);

    assert_eq!(run.code, 0, "{run:?}");
    assert!(
        run.stdout
            .contains("the model qwen2.5-coder:7b (the built-in default) is not installed"),
        "{run:?}"
    );
    assert!(
        run.stdout.contains("Answer y (switch to qwen3:8b) or n"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    assert_eq!(bodies[0]["model"], "qwen3:8b");
    assert!(!user_file(home.path()).exists(), "the offer saved a file");
}

#[test]
fn declining_the_offered_model_keeps_the_configured_one() {
    if !script_available() {
        return skip(
            "declining_the_offered_model_keeps_the_configured_one",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let home = tempfile::tempdir().expect("home");
    let fake = one_tool_model().start();
    let mut live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("Use qwen3:8b for this session instead? [y/N] ", 1);
    live.send("\r");
    live.wait_stdout("keeping qwen2.5-coder:7b", 1);
    live.wait_stdout_after("keeping qwen2.5-coder:7b", "metron > ");
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("model: qwen3:8b"), "{run:?}");
}

#[test]
fn with_two_tool_models_nothing_is_offered() {
    if !script_available() {
        return skip(
            "with_two_tool_models_nothing_is_offered",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let home = tempfile::tempdir().expect("home");
    let fake = two_tool_models().start();
    let live = on_a_terminal_at_home(&p, &fake, home.path());
    live.wait_stdout("metron > ", 1);
    assert!(
        rejoined(&live.stdout())
            .iter()
            .any(|line| line
                .contains("installed models with tool support: qwen3:8b, llama3.1:latest")),
        "{}",
        live.stdout()
    );
    let run = exit_on_a_terminal(live);
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stdout.contains("instead? [y/N]"), "{run:?}");
}

#[test]
fn one_shot_names_the_one_installed_tool_model_when_the_model_is_missing() {
    let p = TestProject::git();
    let fake = one_tool_model()
        .chat(vec![Reply::Error(
            404,
            "model \"qwen2.5-coder:7b\" not found, try pulling it first".into(),
        )])
        .start();
    let run = metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();

    assert_eq!(run.code, 1, "{run:?}");
    assert_eq!(run.stdout, "", "{run:?}");
    assert!(
        run.stderr.contains("ollama pull qwen2.5-coder:7b"),
        "{run:?}"
    );
    let last = run.stderr.lines().last().unwrap_or_default();
    assert_eq!(
        last,
        "metron: qwen3:8b is the one installed model with tool support; run again with --model qwen3:8b, or keep it with /model qwen3:8b --save in a session",
        "{run:?}"
    );
}

#[test]
fn one_shot_names_no_model_when_two_could_replace_it() {
    let p = TestProject::git();
    let fake = two_tool_models()
        .chat(vec![Reply::Error(
            404,
            "model \"qwen2.5-coder:7b\" not found, try pulling it first".into(),
        )])
        .start();
    let run = metron(p.root())
        .args(["-p", "hello"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();

    assert_eq!(run.code, 1, "{run:?}");
    assert!(!run.stderr.contains("the one installed model"), "{run:?}");
}

#[test]
fn the_doctor_names_the_one_installed_tool_model() {
    let p = TestProject::git();
    let fake = one_tool_model().start();
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();

    assert_eq!(run.code, 1, "{run:?}");
    let mut lines = run.stdout.lines();
    lines
        .by_ref()
        .find(|l| {
            l.starts_with("fail")
                && l.contains("qwen2.5-coder:7b (built-in default) is not installed")
        })
        .unwrap_or_else(|| panic!("no failing model row: {}", run.stdout));
    let remedy = lines.next().unwrap_or_default().trim_start();
    assert!(
        remedy.starts_with(
            "→ use qwen3:8b, the one installed model with tool support: `metron --model qwen3:8b`"
        ),
        "{}",
        run.stdout
    );
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.path == "/api/show" && r.body["model"] == "qwen2.5-coder:7b"),
        "asked /api/show for the model that is not installed"
    );
}

/// `metron --doctor` with `num_ctx` set to `num_ctx` in the user's own file.
fn doctor_with_num_ctx(p: &TestProject, fake: &FakeOllama, num_ctx: u64) -> super::common::Run {
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", fake.base_url());
    write_user_file(run.home(), &format!(r#"{{"num_ctx": {num_ctx}}}"#), 0o600);
    run.run()
}

/// The row saying `num_ctx` cannot hold the fixed prompt, and its remedy.
fn fixed_prompt_row(run: &super::common::Run) -> Option<(String, String)> {
    let mut lines = run.stdout.lines();
    let row = lines
        .by_ref()
        .find(|l| l.contains("cannot hold the fixed prompt"))?;
    let remedy = lines.next().unwrap_or_default().trim_start().to_owned();
    Some((row.to_owned(), remedy))
}

#[test]
fn the_doctor_fails_a_num_ctx_too_small_for_the_fixed_prompt() {
    let p = TestProject::git();
    let fake = FakeOllama::builder().start();
    let run = doctor_with_num_ctx(&p, &fake, 400);
    assert_eq!(run.code, 1, "{run:?}");
    let (row, remedy) = fixed_prompt_row(&run).unwrap_or_else(|| panic!("{}", run.stdout));
    assert!(row.starts_with("fail"), "{row}");
    assert!(row.contains("num_ctx 400 (from "), "{row}");
    // The bound the remedy names holds exactly: one below fails, at it passes.
    let needed: u64 = remedy
        .strip_prefix("→ set `num_ctx` to ")
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no bound in {remedy:?}"));
    assert!(
        (1024 + 400..4096).contains(&needed),
        "the fixed prompt plus 1024 tokens: {needed}"
    );
    let below = doctor_with_num_ctx(&p, &fake, needed - 1);
    assert!(fixed_prompt_row(&below).is_some(), "{}", below.stdout);
    assert_eq!(below.code, 1, "{below:?}");
    let at = doctor_with_num_ctx(&p, &fake, needed);
    assert!(fixed_prompt_row(&at).is_none(), "{}", at.stdout);
    assert_eq!(at.code, 0, "{at:?}");
}
