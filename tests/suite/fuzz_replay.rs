//! The fuzz corpora, replayed as ordinary tests on stable Rust: every input under
//! `fuzz/corpus/<target>/` (and any crash kept under `tests/fuzz_regressions/<target>/`) goes
//! through the same property function the fuzz target calls, so CI checks what the fuzzer
//! found without a nightly toolchain or libFuzzer. A missing or empty corpus fails, so the
//! replay cannot pass by finding nothing.
//!
//! The corpora are minimised (`cargo fuzz cmin`: the fewest inputs that keep every
//! coverage feature the fuzzer saw). Every input of every corpus is replayed, except for
//! `read_budgets`, whose property builds a tree on disk and runs three tools per input
//! (about 25 ms each in a debug build, over 30 s for its whole corpus): `cargo test`
//! replays a fixed sample of it, every [`sample_stride`]-th input in name order, so the
//! whole replay stays under 10 s. `METRON_FUZZ_REPLAY_ALL=1` replays all of it. Crash
//! regressions are always replayed.

use std::path::{Path, PathBuf};

fn inputs(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.is_file())
            .collect(),
        Err(_) => Vec::new(),
    };
    files.sort();
    files
}

/// At most this many inputs of a sampled corpus are replayed by default.
const SAMPLE: usize = 200;

/// The stride that leaves at most [`SAMPLE`] of `len` inputs (1: every input).
fn sample_stride(len: usize) -> usize {
    len.div_ceil(SAMPLE).max(1)
}

fn replay(target: &str, property: fn(&[u8])) {
    replay_with(target, property, false);
}

/// [`replay`], with `sampled` replaying a fixed sample of the corpus (see the module
/// docs) unless `METRON_FUZZ_REPLAY_ALL` is set.
fn replay_with(target: &str, property: fn(&[u8]), sampled: bool) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut corpus = inputs(&base.join("fuzz/corpus").join(target));
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is missing or empty; the replay would check nothing"
    );
    let all = corpus.len();
    if sampled && std::env::var_os("METRON_FUZZ_REPLAY_ALL").is_none() {
        let stride = sample_stride(all);
        corpus = corpus.into_iter().step_by(stride).collect();
    }
    let regressions = inputs(&base.join("tests/fuzz_regressions").join(target));
    let started = std::time::Instant::now();
    for path in corpus.iter().chain(&regressions) {
        let bytes = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let outcome = std::panic::catch_unwind(|| property(&bytes));
        if let Err(panic) = outcome {
            let message = panic
                .downcast_ref::<String>()
                .map(String::as_str)
                .or_else(|| panic.downcast_ref::<&str>().copied())
                .unwrap_or("(no message)");
            panic!(
                "{target}: {} violates the property: {message}",
                path.display()
            );
        }
    }
    eprintln!(
        "fuzz replay: {target}: {} of {all} corpus inputs and {} regressions in {} ms",
        corpus.len(),
        regressions.len(),
        started.elapsed().as_millis()
    );
}

#[test]
fn patch_corpus() {
    replay("patch", metron::testing::fuzz::patch);
}

#[test]
fn paths_corpus() {
    replay("paths", metron::testing::fuzz::paths);
}

#[test]
fn ndjson_corpus() {
    replay("ndjson", metron::testing::fuzz::ndjson);
}

#[test]
fn sse_corpus() {
    replay("sse", metron::testing::fuzz::sse);
}

#[test]
fn config_corpus() {
    replay("config", metron::testing::fuzz::config);
}

#[test]
fn text_calls_corpus() {
    replay("text_calls", metron::testing::fuzz::text_calls);
}

#[test]
fn read_budgets_corpus() {
    replay_with("read_budgets", metron::testing::fuzz::read_budgets, true);
}

#[test]
fn the_sample_is_at_most_the_cap_and_spans_the_corpus() {
    for len in [1, 199, 200, 201, 1379, 5000] {
        let stride = sample_stride(len);
        let taken = (0..len).step_by(stride).count();
        assert!(taken <= SAMPLE, "{len}: {taken}");
        assert!(taken >= SAMPLE.min(len) / 2, "{len}: only {taken}");
        assert!(stride * (taken - 1) < len && len - stride * (taken - 1) <= stride);
    }
}
