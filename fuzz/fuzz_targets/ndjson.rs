//! The Ollama NDJSON stream reader fed arbitrary chunks: never panics, never holds a line past
//! its line limit nor accepts a reply past its reply limit. See `metron::testing::fuzz::ndjson`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::ndjson(data));
