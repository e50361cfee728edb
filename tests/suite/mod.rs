//! Integration tests, one module per area.

mod apply_patch;
mod boundary;
mod cli;
mod common;
mod doctor;
mod fake_ollama;
mod fake_ollama_selftest;
mod read_tools;
mod run_command;
mod symbols;
