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

/// The live tier against an OpenAI-compatible server: `.ci/live-openai.sh` builds
/// llama-cpp-python's server, serves a small GGUF shipped by a Python package, and runs
/// this group with `METRON_LIVE_OPENAI` set to the server's `/v1` URL. Any other such
/// server (llama-server, LM Studio, vLLM, Ollama's own `/v1`) can be named there instead.
///
/// Unset, every case prints a SKIP line and passes, under CI too (no CI machine has the
/// server: building it takes longer than a CI run may). Set, the server is required: one
/// that does not answer, or lists no model, fails the case. As in the Ollama tier above,
/// what the model does with its tools is a fact about the model, reported as a SKIP with
/// the transcript; a crash, a protocol error or a non-zero exit is a failure.
///
/// The model is `$METRON_TEST_MODEL`, or the first one `/v1/models` lists, read here with
/// a plain HTTP request so that picking it does not depend on the client under test.
mod live_openai {
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Duration;

    use super::super::common::{GREET_GO, Run, TestProject, metron, skip_live};

    /// The variable that turns this group on.
    const VAR: &str = "METRON_LIVE_OPENAI";

    /// The most of `/v1/models`' reply read: a server lists a handful of models.
    const MODELS_MAX_BYTES: u64 = 1 << 20;

    /// The most one reply may generate. A small base model (the script's Gemma 3 270M)
    /// rarely stops by itself: at the default 4,096 it fills the server's whole 4,096-token
    /// window, about 280 s a request at 15 tokens/s on 2 cores; 512 is room enough for an
    /// answer or a call.
    const MAX_OUTPUT_TOKENS: u64 = 512;

    /// The live server and the model to use on it.
    struct Server {
        /// The `/v1` URL, as metron's `endpoint`.
        endpoint: String,
        model: String,
        timeout_seconds: u64,
    }

    fn server(test: &str) -> Option<Server> {
        let Ok(endpoint) = std::env::var(VAR) else {
            skip_live(
                test,
                &format!(
                    "{VAR} is not set; run .ci/live-openai.sh, or set it to an OpenAI-compatible server's /v1 URL"
                ),
            );
            return None;
        };
        let model = match std::env::var("METRON_TEST_MODEL") {
            Ok(model) => model,
            Err(_) => first_model(&endpoint).unwrap_or_else(|why| {
                panic!("{VAR}={endpoint} is set, so the server is required, but {why}")
            }),
        };
        Some(Server {
            endpoint,
            model,
            timeout_seconds: std::env::var("METRON_TEST_TIMEOUT_SECONDS")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(600),
        })
    }

    /// The first model id `GET {endpoint}/models` lists.
    fn first_model(endpoint: &str) -> Result<String, String> {
        let rest = endpoint
            .strip_prefix("http://")
            .ok_or("the URL is not http:// (the test reads /v1/models over plain HTTP; set METRON_TEST_MODEL to skip that)")?;
        let (authority, path) = rest.split_once('/').unwrap_or((rest, ""));
        let path = format!("/{}/models", path.trim_end_matches('/'));
        let mut stream = TcpStream::connect(authority)
            .map_err(|e| format!("{authority} refused the connection: {e}"))?;
        let limit = Some(Duration::from_secs(30));
        stream
            .set_read_timeout(limit)
            .and_then(|()| stream.set_write_timeout(limit))
            .map_err(|e| e.to_string())?;
        // HTTP/1.0, so the reply is never chunked and ends when the server closes.
        write!(stream, "GET {path} HTTP/1.0\r\nHost: {authority}\r\n\r\n")
            .map_err(|e| format!("cannot send GET {path}: {e}"))?;
        let mut reply = Vec::new();
        stream
            .take(MODELS_MAX_BYTES)
            .read_to_end(&mut reply)
            .map_err(|e| format!("GET {path} was not answered: {e}"))?;
        let reply = String::from_utf8_lossy(&reply);
        let (head, body) = reply
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("GET {path} got no HTTP reply: {reply}"))?;
        if !head.starts_with("HTTP/1.1 200") && !head.starts_with("HTTP/1.0 200") {
            return Err(format!("GET {path} answered {head}\n{body}"));
        }
        let models: serde_json::Value =
            serde_json::from_str(body).map_err(|e| format!("GET {path}: {e}: {body}"))?;
        models["data"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| format!("GET {path} lists no model: {body}"))
    }

    /// `metron ARGS` in `project`, with the server and model in the user's own config
    /// (outside the project, so the model never sees it).
    fn run(project: &TestProject, server: &Server, args: &[&str]) -> Run {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = dir.path().join("config.json");
        let settings = serde_json::json!({
            "endpoint": server.endpoint,
            "model": server.model,
            "timeout_seconds": server.timeout_seconds,
            "max_output_tokens": MAX_OUTPUT_TOKENS,
            // The same reply every run against the same server and model, so a failure
            // can be reproduced.
            "temperature": 0,
        });
        std::fs::write(&config, settings.to_string()).expect("write config");
        metron(project.root())
            .env("METRON_CONFIG", &config)
            .args(args)
            .run()
    }

    /// Whether metron ended the run because the model said nothing (exit 1 with its
    /// warning): a fact about the model, which a small base model produces at random.
    fn empty_answer(run: &Run) -> bool {
        run.code == 1 && run.stderr.contains("the model's answer was empty")
    }

    /// The whole of a run, for a failure or a SKIP line.
    fn transcript(server: &Server, run: &Run) -> String {
        format!(
            "model {} at {}, exit {}\nstdout:\n{}\nstderr:\n{}",
            server.model, server.endpoint, run.code, run.stdout, run.stderr
        )
    }

    /// A question that needs no tool streams an answer back and exits 0.
    #[test]
    fn plain_answer() {
        let Some(server) = server("live_openai::plain_answer") else {
            return;
        };
        let project = TestProject::git();
        let run = run(
            &project,
            &server,
            &["-p", "What is the capital of France? Answer in one word."],
        );
        answered("live_openai::plain_answer", &server, &run);
    }

    /// Whether `run` (of `test`) ended with an answer: an empty one is a SKIP (a fact about
    /// the model, not the loop); otherwise it must exit 0 and print something.
    fn answered(test: &str, server: &Server, run: &Run) -> bool {
        if empty_answer(run) {
            skip_live(
                test,
                &format!(
                    "the model's answer was empty (a fact about the model, not the loop)\n{}",
                    transcript(server, run)
                ),
            );
            return false;
        }
        assert_eq!(run.code, 0, "{}", transcript(server, run));
        assert!(
            !run.stdout.trim().is_empty(),
            "empty answer; {}",
            transcript(server, run)
        );
        true
    }

    /// `--doctor` reaches the server, finds the model in `/v1/models`, and fails no row.
    #[test]
    fn doctor_finds_the_model() {
        let Some(server) = server("live_openai::doctor_finds_the_model") else {
            return;
        };
        let project = TestProject::git();
        let run = run(&project, &server, &["--doctor"]);
        assert_eq!(run.code, 0, "{}", transcript(&server, &run));
        assert!(
            run.stdout
                .lines()
                .any(|line| line.starts_with("ok") && line.contains(&server.model)),
            "no ok row names {}; {}",
            server.model,
            transcript(&server, &run)
        );
    }

    /// A question that needs the tools: the loop must survive whatever the model does
    /// (exit 0, an answer); whether it called a tool is reported, not required.
    #[test]
    fn tool_request() {
        let Some(server) = server("live_openai::tool_request") else {
            return;
        };
        let project = TestProject::git();
        project.file("greet.go", GREET_GO);
        let run = run(
            &project,
            &server,
            &[
                "-p",
                "Which file defines the function Greet? Use your tools, then answer with the file name.",
            ],
        );
        if !answered("live_openai::tool_request", &server, &run) {
            return;
        }
        if !run.stderr.contains("[executing:") {
            skip_live(
                "live_openai::tool_request",
                &format!(
                    "the model answered without calling a tool (a fact about the model, not the loop)\n{}",
                    transcript(&server, &run)
                ),
            );
        }
    }
}
