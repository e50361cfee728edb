//! The doctor's server rows for an OpenAI-compatible endpoint (llama-server, LM Studio,
//! vLLM, Ollama's `/v1`).
//!
//! Such a server has no `/api/version` and no `/api/show`, so the rows are what it can
//! say: that it answers `/v1/models` (and is of this kind), which models it serves,
//! whether the configured one is among them, and whether a key is sent. Whether a model
//! supports tools is never claimed either way. No row calls the chat endpoint.

use std::time::Instant;

use super::{Check, Deadline, origin, out_of_time};
use crate::agent::window::Window;
use crate::config::{Loaded, Source};
use crate::frontend::models::installed_as;
use crate::ollama::{API_KEY_VAR, Client, OllamaError};

/// The served names listed when the configured model is not among them.
const LISTED: usize = 8;

/// The rows after `tls`: server, key, model, tool use.
pub(super) async fn checks(
    loaded: &Loaded,
    client: &Client,
    base: &str,
    deadline: &Deadline,
    session_window: &mut Window,
) -> Vec<Check> {
    let key = key_check(
        client.has_key(),
        crate::ollama::ApiKey::in_environment().is_some(),
    );
    let Some(limit) = deadline.next() else {
        return vec![out_of_time("server"), key];
    };
    let started = Instant::now();
    let served = client.models(limit).await;
    let elapsed = started.elapsed();
    let endpoint_source = loaded.source(crate::config::Key::endpoint);
    let served = match served {
        Ok(served) => served,
        Err(e) => return vec![server_failed(&e, base), key],
    };
    let model = loaded.config.model.as_str();
    // Where the server says (llama-server, LM Studio); a detail, never a failure.
    let window = match deadline.next() {
        Some(limit) => client.context_length(model, limit).await.ok().flatten(),
        None => None,
    };
    *session_window = session_window.with_served(window);
    let window = window
        .map(|n| format!("; it says it runs a context window of {n} tokens"))
        .unwrap_or_default();
    vec![
        Check::ok(
            "server",
            format!(
                "an OpenAI-compatible server at {base} ({}) answered /v1/models in {} ms{window}",
                origin(endpoint_source),
                elapsed.as_millis()
            ),
        ),
        key,
        model_check(model, loaded.source(crate::config::Key::model), &served),
        Check::ok(
            "tool use",
            "not checked: an OpenAI-compatible server does not say whether a model supports tools (vLLM needs `--enable-auto-tool-choice --tool-call-parser NAME`; the first request says so when it is missing)",
        ),
    ]
}

/// Whether a key is sent (`sent`) and whether one is set at all (`set`); never the key.
fn key_check(sent: bool, set: bool) -> Check {
    let measured = if sent {
        format!("{API_KEY_VAR} is set: sent as `Authorization: Bearer` (never shown)")
    } else if set {
        format!(
            "{API_KEY_VAR} is set but not sent: the project's config chose this endpoint (see the config row)"
        )
    } else {
        format!(
            "{API_KEY_VAR} is not set, so no key is sent (llama-server, LM Studio and vLLM without `--api-key` need none)"
        )
    };
    Check::ok("key", measured)
}

/// The `server` row when `/v1/models` failed.
fn server_failed(error: &OllamaError, base: &str) -> Check {
    let measured = match error {
        OllamaError::ServerUnreachable { reason, .. } => {
            format!("nothing answers at {base} ({reason})")
        }
        other => format!("{base} did not list its models (/v1/models): {other}"),
    };
    let remedy = match error {
        OllamaError::KeyNeeded { .. } | OllamaError::KeyRefused { .. } => format!(
            "set {API_KEY_VAR} to the key the server was started with, then run metron --doctor again"
        ),
        OllamaError::KeyWithheld { .. } => format!(
            "if the server is yours, set OLLAMA_HOST or `endpoint` in your own config to it, so that {API_KEY_VAR} is sent; then run metron --doctor again"
        ),
        OllamaError::ServerUnreachable { .. } => "start the server (llama-server, LM Studio, vLLM), or point `endpoint` (or OLLAMA_HOST) at a running one".to_owned(),
        _ => "check that `endpoint` ends in /v1 of an OpenAI-compatible server, and that server's log, then run metron --doctor again".to_owned(),
    };
    Check::fail("server", measured, remedy)
}

/// Whether the configured model is served.
fn model_check(model: &str, source: &Source, served: &[String]) -> Check {
    if let Some(found) = installed_as(model, served.iter().map(String::as_str)) {
        return Check::ok("model", format!("{found} is served ({})", origin(source)));
    }
    let listing = if served.is_empty() {
        "the server lists no model".to_owned()
    } else {
        let mut names: Vec<&str> = served.iter().take(LISTED).map(String::as_str).collect();
        if served.len() > LISTED {
            names.push("...");
        }
        format!("it serves {}", names.join(", "))
    };
    Check::fail(
        "model",
        format!("{model} ({}) is not served; {listing}", origin(source)),
        "choose a served model (--model NAME, OLLAMA_MODEL or `model`), or load that model on the server",
    )
}

#[cfg(test)]
mod tests {
    use super::super::Status;
    use super::*;

    #[test]
    fn the_key_row_never_holds_a_key_and_the_model_row_lists_what_is_served() {
        assert!(key_check(true, true).measured.contains("never shown"));
        assert!(key_check(false, false).measured.contains("not set"));
        assert!(key_check(false, true).measured.contains("not sent"));
        let served = vec!["a".to_owned(), "b".to_owned()];
        assert_eq!(
            model_check("a", &Source::Default, &served).status,
            Status::Ok
        );
        let missing = model_check("c", &Source::Default, &served);
        assert_eq!(missing.status, Status::Fail);
        assert!(
            missing.measured.contains("it serves a, b"),
            "{}",
            missing.measured
        );
    }
}
