//! The Chat Completions reader (SSE framing and the reply assembled from it) fed arbitrary
//! chunks: never panics, never holds a line past its line limit nor accepts a reply past
//! its reply limit. See `metron::testing::fuzz::sse`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::sse(data));
