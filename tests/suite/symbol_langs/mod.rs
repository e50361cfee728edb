//! find_symbol per language, through the model's path (the `find_symbol` tool call): one
//! module per language with a fixture holding one of every default Universal Ctags kind,
//! the scope each answer shows, and qualified lookups. Go and Rust are in `symbols.rs`.
mod php;
mod python;
mod ruby;
