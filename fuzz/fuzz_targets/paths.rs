//! Path resolution against a tree with symlinks (inside, outside, absolute, loops, into .git):
//! never panics, never resolves or opens anything outside the root. See
//! `metron::testing::fuzz::paths`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::paths(data));
