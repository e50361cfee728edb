//! Integration tests, one module per area.

mod agent;
mod apply_patch;
mod architecture;
mod boundary;
mod boundary_eval;
mod cli;
mod common;
mod differential;
mod disclosure;
mod doctor;
mod fake_ollama;
mod fake_ollama_selftest;
mod file_modes;
mod fuzz_replay;
mod ledger;
mod live;
mod model_quirks;
mod oneshot;
mod outcomes;
mod preconditions;
mod read_tools;
mod repl;
mod run_command;
mod symbol_langs;
mod symbols;
mod walk_hardening;
