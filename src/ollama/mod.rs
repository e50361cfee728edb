//! The model client: wire types, stream parsers and the HTTP client, for both protocols
//! metron speaks.
//!
//! - Ollama's native `/api/chat` (NDJSON): the only API that lets metron fix `num_ctx`
//!   (the context window) for the session.
//! - OpenAI's Chat Completions (`/v1/chat/completions`, SSE) for llama-server, LM Studio,
//!   vLLM and Ollama's own `/v1`: there the window is whatever the server was started
//!   with (see [`openai`]).
//!
//! Which one is decided once, from the endpoint's path ([`ServerKind`]). See
//! `ollama-api.md` in the project's reference notes for the versions and faults this
//! code tolerates.

mod body;
mod client;
mod error;
mod kind;
pub(crate) mod openai;
mod parser;
mod stream;
mod tls;
mod tls_problem;
pub mod wire;

pub use client::Client;
pub use error::OllamaError;
pub(crate) use kind::ServerKind;
pub(crate) use kind::{API_KEY_VAR, ApiKey, withhold_api_key};
#[cfg(any(test, feature = "testing"))]
pub(crate) use stream::StreamParser;
pub use stream::{Delta, Reply};
pub use tls_problem::TlsProblem;
