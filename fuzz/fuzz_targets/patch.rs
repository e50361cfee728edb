//! The diff parser, repair and in-memory apply: never panics; repair reproduces exactly what
//! the diff says (the exact diff of a generated edit gives the intended file, a damaged one is
//! placed by repair's stated rule) or refuses. See `metron::testing::fuzz::patch`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::patch(data));
