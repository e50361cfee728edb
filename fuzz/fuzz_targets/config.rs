//! Config text parsing and validation (a project file and a user file): never panics; a
//! project file never grants authority. See `metron::testing::fuzz::config`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::config(data));
