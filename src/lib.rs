//! metron: a terminal coding agent for local Ollama models that sees and changes code only
//! through narrow, budgeted tools confined to the project.
//!
//! The crate is laid out the way data flows:
//!
//! - [`config`]: settings in layers (defaults < file < environment < `--model`),
//!   validated, with the layer each value came from and the trust rules for a project's
//!   own file;
//! - [`project`]: the project root and its boundary, the only code that opens, reads or
//!   stats files beneath the root (directory listing by the walker in `tools::walk` is
//!   the documented exception);
//! - [`tools`]: the registry and one module per tool, each returning the exact text the
//!   model reads;
//! - [`ollama`]: Ollama's chat API (wire types, the NDJSON stream, the HTTP client);
//! - [`authority`]: every decision between a tool's proposal and its effect: policy
//!   (offered, withdrawn, repeated, cancelled), who approves, standing grants, stale-edit
//!   preconditions, and the journal the ledger is written from;
//! - `instructions`: the AGENTS.md files sent after the system prompt, found from the
//!   project root down to the working directory and capped;
//! - [`agent`]: the loop (model → tool call → policy → approval → execution → result),
//!   the system prompt, history compaction and the ledger;
//! - [`sandbox`]: what an approved command can reach while it runs (Landlock, seccomp
//!   and a mount namespace on Linux, Seatbelt on macOS), from one policy type;
//! - `disclosure`: whether code leaves the machine: the remote notice and `refuse`;
//! - `frontend`: what the front ends share: startup, exit codes, the terminal's approval
//!   questions and Ctrl-C (turned into the session's cancel token in one place);
//! - [`cli`]: the command line, dispatching to the REPL, `-p`, `--doctor` and `metron tool`.
//!
//! [`testing`] is hidden: it exposes a few internals that the integration tests and
//! benches compare against references (rg, ctags, git) and is not an API.

pub mod agent;
pub mod authority;
pub mod cli;
pub mod config;
mod disclosure;
mod display;
mod doctor;
mod frontend;
mod instructions;
pub mod ollama;
mod oneshot;
mod private_files;
pub mod project;
pub(crate) mod quoting;
mod repl;
pub mod sandbox;
mod sessions;
#[cfg(feature = "testing")]
#[doc(hidden)]
pub mod testing;
pub mod tools;
mod version;
