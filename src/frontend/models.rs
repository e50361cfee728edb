//! Which installed models could drive metron, asked of the server within a time limit.
//!
//! The REPL asks at start (is the configured model there?) and for `/model`; the doctor
//! asks for its model row. The rule for matching a name (`NAME` means `NAME:latest`, as
//! Ollama resolves it) lives here once, so they never disagree about whether a model is
//! installed. Nothing here ever calls `/api/chat`: choosing a model costs no inference.

use std::time::{Duration, Instant};

use crate::agent::TurnError;
use crate::authority::CancelToken;
use crate::disclosure::ModelPlace;
use crate::ollama::{Client, OllamaError, ServerKind};

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
    /// The server never describes its models (an OpenAI-compatible server has no
    /// `/api/show`): offered as a choice, with no claim either way.
    NotReported,
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
    /// The context length it was trained for, when the server said.
    pub(crate) trained: Option<u64>,
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

/// A served model of an OpenAI-compatible server: nothing is asked about it, since such a
/// server cannot say whether it supports tools, and it runs on the server itself.
fn served(name: String) -> Installed {
    Installed {
        name,
        tools: ToolSupport::NotReported,
        place: ModelPlace::Server,
        trained: None,
    }
}

/// Asks the server about each of `names` (`/api/show`) until `deadline`; the ones left
/// when it passes, or that the server fails to describe, are [`ToolSupport::Unknown`].
pub(crate) async fn describe(
    client: &Client,
    names: Vec<String>,
    deadline: Instant,
) -> Vec<Installed> {
    if client.kind() == ServerKind::OpenAi {
        return names.into_iter().map(served).collect();
    }
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        let left = deadline.saturating_duration_since(Instant::now());
        let (tools, place, trained) = if left.is_zero() {
            (ToolSupport::Unknown, unknown("not described in time"), None)
        } else {
            match client.show(&name, left).await {
                Ok(details) => (
                    if details.supports_tools() {
                        ToolSupport::Yes
                    } else {
                        ToolSupport::No
                    },
                    ModelPlace::from_remote_host(details.remote_host.as_deref()),
                    details.context_length,
                ),
                Err(e) => (ToolSupport::Unknown, unknown(&e.to_string()), None),
            }
        };
        found.push(Installed {
            name,
            tools,
            place,
            trained,
        });
    }
    found
}

fn unknown(reason: &str) -> ModelPlace {
    ModelPlace::Unknown {
        reason: reason.to_owned(),
    }
}

/// The model to offer instead of a configured one that is not installed: the only
/// installed model that supports tools, when there is exactly one and it runs on this
/// machine. None when the server did not describe every model (another might support
/// tools too), or when the one is a cloud model (choosing it would send the code to
/// another host, which a person must choose knowingly, not by answering `y`).
pub(crate) fn sole_tool_model(installed: &[Installed]) -> Option<&Installed> {
    if installed.iter().any(|m| m.tools == ToolSupport::Unknown) {
        return None;
    }
    let mut usable = installed.iter().filter(|m| m.tools == ToolSupport::Yes);
    match (usable.next(), usable.next()) {
        (Some(only), None) if only.place == ModelPlace::Server => Some(only),
        _ => None,
    }
}

/// The next step naming the model to use instead, when a turn failed because the
/// configured model is not installed and exactly one installed model could replace it
/// ([`sole_tool_model`]); asked of the server within [`PLACE_LIMIT`]. `None` for any
/// other failure, or when there is no single model to name. For `-p`, where nobody can
/// be asked: the error names the model, the person reruns.
pub(crate) async fn missing_model_hint(error: &TurnError, endpoint: &str) -> Option<String> {
    let TurnError::Model(OllamaError::ModelNotFound { model, .. }) = error else {
        return None;
    };
    let client = Client::new(endpoint, PLACE_LIMIT).ok()?;
    let installed = survey(&client, PLACE_LIMIT).await.ok()?;
    let sole = sole_tool_model(&installed)?;
    // The server listed the very model it then could not find (it was removed meanwhile,
    // or the listing disagrees): naming it again would send the person in a circle.
    if installed_as(model, [sole.name.as_str()]).is_some() {
        return None;
    }
    let name = crate::display::one_line_safe(&sole.name);
    Some(format!(
        "{name} is the one installed model with tool support; run again with --model {name}, or keep it with /model {name} --save in a session"
    ))
}

/// How long the start of a session waits for the server to say where the model runs.
/// A local server answers `/api/show` in milliseconds; one that takes longer than this
/// leaves the place unknown (see `disclosure::model_check`).
pub(crate) const PLACE_LIMIT: Duration = Duration::from_secs(3);

/// What the start of a session learns from the server before its first chat request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Described {
    /// Where the model runs (a cloud model is announced or refused).
    pub(crate) place: ModelPlace,
    /// The context length the model was trained for, when `/api/show` says.
    pub(crate) trained: Option<u64>,
    /// An OpenAI-compatible server's own context window (llama-server's `/props`, LM
    /// Studio's model info), when it says: fixed when the server started, and what
    /// every request gets, whatever `num_ctx` says.
    pub(crate) served: Option<u64>,
    /// The server's version (`/api/version`), when it answered in time.
    pub(crate) version: Option<String>,
}

/// What the server at `endpoint` says of `model` (`/api/show`) and of itself
/// (`/api/version`), both asked at once within `limit`, before a session's first chat
/// request: so that a cloud model is known before any code is sent, and the session's
/// context window and overflow handling are fixed before the first prompt. `None` when
/// Ctrl-C (`cancel`) ends the wait, as it would end the session's first request. Runs on
/// a runtime of its own, as the session's starts later; never calls `/api/chat`.
pub(crate) fn place_of(
    endpoint: &str,
    model: &str,
    limit: Duration,
    cancel: &CancelToken,
) -> Option<Described> {
    let failed = |reason: &str| Described {
        place: unknown(reason),
        trained: None,
        served: None,
        version: None,
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => return Some(failed(&format!("cannot start the async runtime: {e}"))),
    };
    let described = runtime.block_on(async {
        let client = match Client::new(endpoint, limit) {
            Ok(client) => client,
            Err(e) => return Some(failed(&e.to_string())),
        };
        let kind = client.kind();
        tokio::select! {
            biased;
            () = cancel.cancelled() => None,
            (shown, version, served) = async {
                // `/api/version` is Ollama's alone (it decides `truncate`, which only
                // `/api/chat` takes); `context_length` asks only the other kinds.
                let version = async {
                    match kind {
                        ServerKind::Ollama => client.version(limit).await,
                        ServerKind::OpenAi => Err(OllamaError::Protocol(String::new())),
                    }
                };
                tokio::join!(
                    client.show(model, limit),
                    version,
                    client.context_length(model, limit)
                )
            } => Some({
            // The server's own window, asked whatever `/api/show` answered: llama-server
            // answers it too (for Ollama clients) and LM Studio answers unknown routes
            // with a 200, so its answer says nothing about the window.
            let served = served.ok().flatten();
            match (shown, kind) {
                (Ok(details), _) => Described {
                    place: ModelPlace::from_remote_host(details.remote_host.as_deref()),
                    trained: details.context_length,
                    served,
                    version: version.ok(),
                },
                // Only Ollama (its `/v1` included) describes a model, and only Ollama
                // passes cloud models on: a server that answers `/api/show` with an HTTP
                // error is another kind, which runs its models itself, in a window of
                // its own that `num_ctx` cannot change.
                (Err(OllamaError::ServerHttp { .. } | OllamaError::NotServed { .. }), ServerKind::OpenAi) => {
                    Described {
                        place: ModelPlace::Server,
                        trained: None,
                        served,
                        version: None,
                    }
                }
                (Err(e), _) => Described {
                    version: version.ok(),
                    served,
                    ..failed(&e.to_string())
                },
            }
            }),
        }
    });
    // A name lookup the limit abandoned runs on a blocking thread; do not wait for it.
    runtime.shutdown_timeout(Duration::from_millis(100));
    described
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
    let path = ServerKind::of_endpoint(&shown).chat_path();
    match shown.strip_suffix(path) {
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

    fn model(name: &str, tools: ToolSupport, place: ModelPlace) -> Installed {
        Installed {
            name: name.to_owned(),
            tools,
            place,
            trained: None,
        }
    }

    #[test]
    fn only_a_single_local_tool_model_is_offered() {
        let here = || ModelPlace::Server;
        let cloud = || ModelPlace::Remote {
            host: "ollama.com".to_owned(),
        };
        let a = model("a", ToolSupport::Yes, here());
        let b = model("b", ToolSupport::Yes, here());
        let plain = model("plain", ToolSupport::No, here());
        let unsure = model("unsure", ToolSupport::Unknown, here());
        let sole = |list: &[Installed]| sole_tool_model(list).map(|m| m.name.clone());
        assert_eq!(sole(&[plain.clone(), a.clone()]), Some("a".to_owned()));
        assert_eq!(sole(&[a.clone(), b]), None, "two to choose from");
        assert_eq!(sole(&[a.clone(), unsure]), None, "one not described");
        assert_eq!(sole(&[plain]), None, "none with tools");
        assert_eq!(sole(&[model("c", ToolSupport::Yes, cloud())]), None);
        assert_eq!(sole(&[]), None);
    }

    #[test]
    fn the_server_is_named_without_the_chat_path() {
        assert_eq!(
            server_url("http://127.0.0.1:11434/api/chat"),
            "http://127.0.0.1:11434"
        );
        assert_eq!(server_url("http://h:1"), "http://h:1");
        assert_eq!(server_url("http://h:1/v1/chat/completions"), "http://h:1");
        assert_eq!(
            server_url("http://me:hunter2@h:1/api/chat"),
            "http://me:***@h:1"
        );
    }
}
