//! Ollama's native chat API: wire types, the NDJSON stream parser, and the HTTP client.
//!
//! metron speaks `/api/chat` rather than the OpenAI-compatible `/v1` routes because only
//! the native API lets it fix `num_ctx` (the context window) for the session; `/v1`
//! silently runs at the server's default window. See `ollama-api.md` in the project's
//! reference notes for the versions and faults this code tolerates.

mod body;
mod client;
mod error;
mod stream;
mod tls;
mod tls_problem;
pub mod wire;

pub use client::Client;
pub use error::OllamaError;
#[cfg(any(test, feature = "testing"))]
pub(crate) use stream::StreamParser;
pub use stream::{Delta, Reply};
pub use tls_problem::TlsProblem;
