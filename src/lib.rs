//! metron: a terminal coding agent for local Ollama models that sees and changes code only
//! through narrow, budgeted tools confined to the project.
//!
//! The crate is laid out the way data flows:
//!
//! - [`config`]: settings in layers (defaults < file < environment), validated, with the
//!   layer each value came from and the trust rules for a project's own file;
//! - [`project`]: the project root and its boundary, the only code that opens, reads or
//!   stats files beneath the root (directory listing by the walker in `tools::walk` is
//!   the documented exception);
//! - [`tools`]: the registry and one module per tool, each returning the exact text the
//!   model reads;
//! - [`ollama`]: Ollama's chat API (wire types, the NDJSON stream, the HTTP client);
//! - [`agent`]: the loop (model → tool call → policy → approval → execution → result),
//!   the system prompt, and history compaction;
//! - [`disclosure`]: whether code leaves the machine: the remote notice and `refuse`;
//! - [`interrupt`]: Ctrl-C for blocking code (a running command);
//! - [`cli`]: the command line (`metron tool ...`), mapping results to exit codes.

pub mod agent;
pub mod authority;
pub mod cli;
pub mod config;
pub mod disclosure;
mod display;
mod doctor;
mod frontend;
pub mod ollama;
mod oneshot;
pub mod project;
mod repl;
#[doc(hidden)]
pub mod testing;
pub mod tools;
mod version;
