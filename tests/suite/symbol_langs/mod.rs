//! find_symbol per language, through the model's path (the `find_symbol` tool call): one
//! module per language with a fixture holding one of every default Universal Ctags kind,
//! the scope each answer shows, and qualified lookups. Go and Rust are in `symbols.rs`.

#[cfg(feature = "lang-c")]
mod c;
#[cfg(feature = "lang-cpp")]
mod cpp;
#[cfg(feature = "lang-csharp")]
mod csharp;
#[cfg(feature = "lang-java")]
mod java;
#[cfg(feature = "lang-javascript")]
mod javascript;
#[cfg(feature = "lang-php")]
mod php;
#[cfg(feature = "lang-python")]
mod python;
#[cfg(feature = "lang-ruby")]
mod ruby;
#[cfg(feature = "lang-typescript")]
mod typescript;
