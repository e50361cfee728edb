//! Tool calls recovered from reply text: never panics; only offered tools; quoted, fenced or
//! followed-by-prose calls never recovered. See `metron::testing::fuzz::text_calls`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::text_calls(data));
