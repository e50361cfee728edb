//! The live tier: metron against a real Ollama server and a real model.
//!
//! Runs when a server answers at `$OLLAMA_HOST` (default `127.0.0.1:11434`), and always
//! when `METRON_LIVE=1` (then an unreachable server is a failure, not a skip). The model
//! is `$METRON_TEST_MODEL`, or the smallest installed model that advertises tools.
//! `METRON_TEST_TIMEOUT_SECONDS` raises the idle watchdog for slow hardware.
//!
//! Model behaviour is not deterministic, so a model that answers without using its tools
//! or writes a diff that does not apply is reported as a SKIP with the transcript; a
//! broken loop (a crash, a protocol error, a non-zero exit) is a failure.

use std::time::Duration;

use metron::config::normalize_endpoint;
use metron::ollama::Client;

use super::common::{GREET_GO, TestProject, metron, skip_live};

/// The live Ollama server and the model to use on it.
struct LiveServer {
    host: String,
    model: String,
    timeout_seconds: u64,
}

fn live(test: &str) -> Option<LiveServer> {
    let required = std::env::var("METRON_LIVE").is_ok_and(|v| v == "1");
    let raw = std::env::var("OLLAMA_HOST").unwrap_or_else(|_| "127.0.0.1:11434".into());
    let endpoint = normalize_endpoint(&raw).ok()?;
    let client = Client::new(&endpoint, Duration::from_secs(5)).ok()?;
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .ok()?;
    let limit = Duration::from_secs(3);
    let found = runtime.block_on(async {
        let with_tools = metron::testing::models_with_tools(&client, limit)
            .await
            .map_err(|e| e.to_string())?;
        if let Ok(pinned) = std::env::var("METRON_TEST_MODEL") {
            return Ok(Some(pinned));
        }
        Ok::<_, String>(with_tools.into_iter().next())
    });
    let why = match found {
        Ok(Some(model)) => {
            return Some(LiveServer {
                host: raw,
                model,
                timeout_seconds: std::env::var("METRON_TEST_TIMEOUT_SECONDS")
                    .ok()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(600),
            });
        }
        Ok(None) => "the Ollama server has no model that advertises tools".to_owned(),
        Err(e) => format!("no Ollama server reachable ({e})"),
    };
    assert!(!required, "METRON_LIVE=1 but {why}");
    skip_live(
        test,
        &format!("{why}; set METRON_LIVE=1 to require this tier"),
    );
    None
}

fn run(project: &TestProject, live: &LiveServer, prompt: &str, yes: bool) -> super::common::Run {
    // The user's config lives outside the project, so the model never sees it.
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("config.json");
    std::fs::write(
        &config,
        format!(
            "{{\"model\": \"{}\", \"timeout_seconds\": {}}}",
            live.model, live.timeout_seconds
        ),
    )
    .expect("write config");
    let mut args = vec!["-p".to_owned(), prompt.to_owned()];
    if yes {
        args.push("--yes".into());
    }
    metron(project.root())
        .env("OLLAMA_HOST", &live.host)
        .env("METRON_CONFIG", &config)
        .args(args)
        .run()
}

#[test]
fn live_model_round_trips_and_uses_its_tools() {
    let Some(live) = live("live_model_round_trips_and_uses_its_tools") else {
        return;
    };
    let project = TestProject::git();
    project.file("greet.go", GREET_GO);
    let run = run(
        &project,
        &live,
        "Which file defines the function Greet? Use your tools, then answer with the file name.",
        false,
    );
    assert_eq!(run.code, 0, "model {}:\n{}", live.model, run.stderr);
    assert!(
        !run.stdout.trim().is_empty(),
        "empty answer; stderr:\n{}",
        run.stderr
    );
    if !run.stderr.contains("[executing:") {
        skip_live(
            "live_model_round_trips_and_uses_its_tools",
            &format!(
                "{} answered without calling a tool: {}",
                live.model, run.stdout
            ),
        );
    }
}

#[test]
fn live_patch_session_edits_a_real_file() {
    let Some(live) = live("live_patch_session_edits_a_real_file") else {
        return;
    };
    let project = TestProject::git();
    project.file("greet.go", GREET_GO);
    let run = run(
        &project,
        &live,
        "Make Greet in greet.go return \"hola\" instead of \"hello\".",
        true,
    );
    assert_eq!(run.code, 0, "model {}:\n{}", live.model, run.stderr);
    let after = std::fs::read_to_string(project.path("greet.go")).expect("read greet.go");
    if !after.contains("\"hola\"") {
        skip_live(
            "live_patch_session_edits_a_real_file",
            &format!(
                "{} did not produce a patch that applies (a fact about the model, not the loop).\nstdout:\n{}\nstderr:\n{}",
                live.model, run.stdout, run.stderr
            ),
        );
    }
}
