//! Which installed models could drive metron, asked of the server within a time limit.
//!
//! The REPL asks at start (is the configured model there?) and for `/model`; the doctor
//! asks for its model row. The rule for matching a name (`NAME` means `NAME:latest`, as
//! Ollama resolves it) lives here once, so they never disagree about whether a model is
//! installed. Nothing here ever calls `/api/chat`: choosing a model costs no inference.

use std::time::{Duration, Instant};

use crate::authority::CancelToken;
use crate::disclosure::ModelPlace;
use crate::ollama::{Client, OllamaError};

/// Whether an installed model can be given tools. Three states, because a model the
/// server did not describe in time must not be offered as a choice, nor reported as
/// unable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ToolSupport {
    /// Its capabilities (or, on an old server, its template) include tools.
    Yes,
    /// It cannot be given tools, so it could never see the code.
    No,
    /// The server did not describe it within the time limit, or failed to.
    Unknown,
}

/// One installed model and whether it supports tools.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    /// The name as the server lists it (`qwen3:8b`, `llama3.1:latest`).
    pub(crate) name: String,
    /// Whether metron could use it.
    pub(crate) tools: ToolSupport,
    /// Where the server says it runs: [`ModelPlace::Remote`] for a cloud model, whose
    /// requests go on to another host; [`ModelPlace::Unknown`] when it was not described.
    pub(crate) place: ModelPlace,
}

/// The installed models in the server's order, each with its tool support, within
/// `limit` in all: `/api/tags` must answer in time (otherwise `Err`), and a model whose
/// `/api/show` does not answer before the time is up is [`ToolSupport::Unknown`].
pub(crate) async fn survey(
    client: &Client,
    limit: Duration,
) -> Result<Vec<Installed>, OllamaError> {
    let deadline = Instant::now() + limit;
    let names = client.models(limit).await?;
    Ok(describe(client, names, deadline).await)
}

/// Asks the server about each of `names` (`/api/show`) until `deadline`; the ones left
/// when it passes, or that the server fails to describe, are [`ToolSupport::Unknown`].
pub(crate) async fn describe(
    client: &Client,
    names: Vec<String>,
    deadline: Instant,
) -> Vec<Installed> {
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let left = deadline.saturating_duration_since(Instant::now());
        let (tools, place) = if left.is_zero() {
            (ToolSupport::Unknown, unknown("not described in time"))
        } else {
            match client.show(&name, left).await {
                Ok(details) => (
                    if details.supports_tools() {
                        ToolSupport::Yes
                    } else {
                        ToolSupport::No
                    },
                    ModelPlace::from_remote_host(details.remote_host.as_deref()),
                ),
                Err(e) => (ToolSupport::Unknown, unknown(&e.to_string())),
            }
        };
        found.push(Installed { name, tools, place });
    }
    found
}

fn unknown(reason: &str) -> ModelPlace {
    ModelPlace::Unknown {
        reason: reason.to_owned(),
    }
}

/// How long the start of a session waits for the server to say where the model runs.
/// A local server answers `/api/show` in milliseconds; one that takes longer than this
/// leaves the place unknown (see `disclosure::model_check`).
pub(crate) const PLACE_LIMIT: Duration = Duration::from_secs(3);

/// Where the server at `endpoint` says `model` runs (`/api/show`, within `limit`), asked
/// before a session's first chat request so that a cloud model is known before any code
/// is sent; `None` when Ctrl-C (`cancel`) ends the wait, as it would end the session's
/// first request. Runs on a runtime of its own, as the session's starts later; never
/// calls `/api/chat`.
pub(crate) fn place_of(
    endpoint: &str,
    model: &str,
    limit: Duration,
    cancel: &CancelToken,
) -> Option<ModelPlace> {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Some(unknown(&format!("cannot start the async runtime: {e}"))),
    };
    let place = runtime.block_on(async {
        let client = match Client::new(endpoint, limit) {
            Ok(client) => client,
            Err(e) => return Some(unknown(&e.to_string())),
        };
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            shown = client.show(model, limit) => Some(match shown {
                Ok(details) => ModelPlace::from_remote_host(details.remote_host.as_deref()),
                Err(e) => unknown(&e.to_string()),
            }),
        }
    });
    // A name lookup the limit abandoned runs on a blocking thread; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    place
}

/// The installed name `model` resolves to, as Ollama resolves it: the name exactly, or
/// `NAME:latest` when it names no tag.
pub(crate) fn installed_as<'a>(
    model: &str,
    installed: impl IntoIterator<Item = &'a str>,
) -> Option<&'a str> {
    let latest = (!has_tag(model)).then(|| format!("{model}:latest"));
    installed
        .into_iter()
        .find(|&name| name == model || latest.as_deref() == Some(name))
}

/// Whether a model name carries a tag: a `:` in its last path segment (a registry host's
/// port, as in `localhost:5000/m`, is not a tag).
fn has_tag(model: &str) -> bool {
    model
        .rsplit('/')
        .next()
        .is_some_and(|last| last.contains(':'))
}

/// The base URL of a chat endpoint (`http://host:port`), as messages name the server:
/// without the password of `http://user:password@host` (see `config::shown_endpoint`).
pub(crate) fn server_url(endpoint: &str) -> String {
    let shown = crate::config::shown_endpoint(endpoint);
    match shown.strip_suffix("/api/chat") {
        Some(base) => base.to_owned(),
        None => shown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_names_match_exactly_or_as_latest() {
        let installed = ["qwen3:8b", "llama3:latest", "localhost:5000/m:latest"];
        let find = |model| installed_as(model, installed);
        assert_eq!(find("qwen3:8b"), Some("qwen3:8b"));
        assert_eq!(find("llama3"), Some("llama3:latest"));
        assert_eq!(find("llama3:latest"), Some("llama3:latest"));
        assert_eq!(find("localhost:5000/m"), Some("localhost:5000/m:latest"));
        assert_eq!(find("qwen3"), None);
        assert_eq!(find("qwen3:4b"), None);
        assert_eq!(find("llama3:8b"), None);
        assert!(has_tag("a:b") && !has_tag("host:1/a") && has_tag("host:1/a:b"));
    }

    #[test]
    fn the_server_is_named_without_the_chat_path() {
        assert_eq!(
            server_url("http://127.0.0.1:11434/api/chat"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(server_url("http://h:1"), "http://h:1");
        assert_eq!(
            server_url("http://me:hunter2@h:1/api/chat"),
            "http://me:***@h:1"
        );
    }
}
