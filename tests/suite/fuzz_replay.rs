//! The fuzz corpora, replayed as ordinary tests on stable Rust: every input under
//! `fuzz/corpus/<target>/` (and any crash kept under `tests/fuzz_regressions/<target>/`) goes
//! through the same property function the fuzz target calls, so CI checks what the fuzzer
//! found without a nightly toolchain or libFuzzer. A missing or empty corpus fails, so the
//! replay cannot pass by finding nothing.

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

fn replay(target: &str, property: fn(&[u8])) {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let corpus = inputs(&base.join("fuzz/corpus").join(target));
    assert!(
        !corpus.is_empty(),
        "fuzz/corpus/{target}/ is missing or empty; the replay would check nothing"
    );
    let regressions = inputs(&base.join("tests/fuzz_regressions").join(target));
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
fn config_corpus() {
    replay("config", metron::testing::fuzz::config);
}

#[test]
fn text_calls_corpus() {
    replay("text_calls", metron::testing::fuzz::text_calls);
}

#[test]
fn read_budgets_corpus() {
    replay("read_budgets", metron::testing::fuzz::read_budgets);
}
