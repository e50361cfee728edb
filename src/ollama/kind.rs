//! Which protocol a server speaks, decided once from the endpoint's path.
//!
//! The path is the only signal that is there before any request: `/api/chat` (or a bare
//! host) is Ollama's native API, a path ending in `/v1/chat/completions` is OpenAI's Chat
//! Completions (llama-server, LM Studio, vLLM, Ollama's own `/v1`). Deciding once, from
//! the normalised endpoint, means every part of metron (client, doctor, banner, events)
//! agrees, and no probe request is sent anywhere before the user's checks have run.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{OLLAMA_CHAT_PATH, OPENAI_CHAT_PATH};

/// The protocol of the model server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ServerKind {
    /// Ollama's `/api/chat` (NDJSON stream, `num_ctx` settable per session).
    Ollama,
    /// OpenAI's Chat Completions (SSE stream, the window is the server's).
    OpenAi,
}

impl ServerKind {
    /// The kind a normalised endpoint (see `config::normalize_endpoint`) speaks.
    pub(crate) fn of_endpoint(endpoint: &str) -> ServerKind {
        if endpoint.ends_with(OPENAI_CHAT_PATH) {
            ServerKind::OpenAi
        } else {
            ServerKind::Ollama
        }
    }

    /// The name people read (banner, `/config`, `--doctor`).
    pub(crate) fn label(self) -> &'static str {
        match self {
            ServerKind::Ollama => "Ollama",
            ServerKind::OpenAi => "OpenAI-compatible",
        }
    }

    /// The stable name in `--json` events (`session_start`'s `server_kind`).
    pub(crate) fn json_name(self) -> &'static str {
        match self {
            ServerKind::Ollama => "ollama",
            ServerKind::OpenAi => "openai",
        }
    }

    /// The chat path this kind's endpoints end in.
    pub(crate) fn chat_path(self) -> &'static str {
        match self {
            ServerKind::Ollama => OLLAMA_CHAT_PATH,
            ServerKind::OpenAi => OPENAI_CHAT_PATH,
        }
    }
}

/// The environment variable the key for an OpenAI-compatible server is read from.
///
/// metron's own, and deliberately not `OPENAI_API_KEY`: that one is usually set for
/// OpenAI's cloud, and reading it would send a paid cloud credential to whatever server
/// `endpoint` names (a colleague's GPU box, a proxy). Local servers (llama-server, vLLM
/// without `--api-key`, LM Studio) need no key, so setting this is always a choice.
pub(crate) const API_KEY_VAR: &str = "METRON_API_KEY";

/// A bearer key, read from [`API_KEY_VAR`]. Its `Debug` never shows it, so a `{:?}` of the
/// client in a log or a panic message cannot leak it.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct ApiKey(String);

/// Set once a session's endpoint turns out not to be the person's choice (see
/// [`withhold_api_key`]); from then on no client of this process sends a key.
static WITHHELD: AtomicBool = AtomicBool::new(false);

/// Sends no key for the rest of this process: the endpoint came from a repository's
/// `.metron.json`, and a key goes only to a server the person chose
/// (`disclosure::key_withheld` decides and words it). One switch for the process, set
/// at start-up before any client exists, so no code path that builds a client (session,
/// doctor, Tab's model list) can forget it.
pub(crate) fn withhold_api_key() {
    WITHHELD.store(true, Ordering::SeqCst);
}

/// Whether a key is set but withheld (see [`withhold_api_key`]): a 401 then needs a
/// different remedy from "set the key".
pub(crate) fn api_key_withheld() -> bool {
    WITHHELD.load(Ordering::SeqCst) && ApiKey::in_environment().is_some()
}

impl ApiKey {
    /// The key in the environment, when set and not blank, and not withheld.
    pub(crate) fn from_env() -> Option<ApiKey> {
        if WITHHELD.load(Ordering::SeqCst) {
            return None;
        }
        ApiKey::in_environment()
    }

    /// The key in the environment, withheld or not: whether the person set one.
    pub(crate) fn in_environment() -> Option<ApiKey> {
        let value = std::env::var(API_KEY_VAR).ok()?;
        let value = value.trim();
        (!value.is_empty()).then(|| ApiKey(value.to_owned()))
    }

    /// The key itself, only for the `Authorization` header.
    pub(crate) fn secret(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ApiKey(***)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_path_decides_the_kind() {
        assert_eq!(
            ServerKind::of_endpoint("http://h:1/api/chat"),
            ServerKind::Ollama
        );
        assert_eq!(
            ServerKind::of_endpoint("http://h:8080/v1/chat/completions"),
            ServerKind::OpenAi
        );
        assert_eq!(
            ServerKind::of_endpoint("https://h:443/proxy/v1/chat/completions"),
            ServerKind::OpenAi
        );
    }

    #[test]
    fn the_key_never_shows_in_debug() {
        let key = ApiKey("sk-SECRET".to_owned());
        assert!(!format!("{key:?}").contains("SECRET"));
        assert_eq!(key.secret(), "sk-SECRET");
    }
}
