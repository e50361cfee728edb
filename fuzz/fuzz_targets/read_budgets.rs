//! The read tools' output budgets on a small tree with arbitrary arguments: never panics,
//! a result never exceeds the bytes its budgets allow. See
//! `metron::testing::fuzz::read_budgets`.

#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| metron::testing::fuzz::read_budgets(data));
