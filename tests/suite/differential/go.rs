//! Go: the Debian golang-src tree (`$METRON_GO_TREE`, then a `go` corpus, override it).

use std::collections::HashSet;
use std::path::PathBuf;

use super::{
    Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement, source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' Go scope as find_symbol shows it: without the kind and the package
/// (`struct:gin.Context` is `Context`; `package:gin` is top level).
fn go_scope(field: &str) -> String {
    match field.split_once(':') {
        Some(("package", _)) | None => String::new(),
        Some((_, path)) => path
            .split_once('.')
            .map_or(path, |(_, rest)| rest)
            .to_owned(),
    }
}

/// The Go tree to compare on: `$METRON_GO_TREE`, a `go` corpus, else an installed
/// golang-src.
fn go_tree() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("METRON_GO_TREE") {
        return Some(PathBuf::from(dir));
    }
    if let Some(dir) = super::corpus("go") {
        return Some(dir);
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/share")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("go"))
        })
        .map(|p| p.join("src"))
        .filter(|p| p.join("fmt").is_dir())
        .collect();
    candidates.sort();
    candidates.pop()
}

#[test]
fn recall_against_ctags_on_a_go_tree() {
    let test = "recall_against_ctags_on_a_go_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = go_tree() else {
        return skip(test, "set METRON_GO_TREE or install golang-src");
    };
    let mut files = Vec::new();
    source_files(&root, "go", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .go files under {}", root.display()));
    }
    let tags = ctags_tags("Go", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("Go, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, _| false);
    assert!(total > 0, "ctags found no Go tags");
    assert!(
        found * 1000 >= total * 999,
        "Go recall {found}/{total} is under 99.9%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 95,
        "Go precision {listed}/{ours_total} is under 95%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, go_scope);
    assert!(
        agree * 100 >= compared * 99,
        "Go scope agreement {agree}/{compared} is under 99%"
    );
}

/// The index's memory rule (`SymbolIndex::held_bytes`), on the largest corpus with every
/// file parsed: under a quarter of the source's size plus 200 bytes a file.
#[test]
fn held_bytes_stay_within_the_rule_on_the_go_tree() {
    let test = "held_bytes_stay_within_the_rule_on_the_go_tree";
    let Some(root) = go_tree() else {
        return skip(test, "set METRON_GO_TREE or install golang-src");
    };
    let Ok(project) = metron::project::Project::open(&root, false) else {
        return skip(test, &format!("cannot open {}", root.display()));
    };
    let index = metron::tools::symbols::SymbolIndex::new(std::sync::Arc::new(project));
    let project = index.project();
    // Every Go file holds the word `package`, so no summary rules a file out and every
    // file is parsed; no limit stops the lookup early.
    let Ok((_, stats)) = index.lookup_with_stats("package", usize::MAX) else {
        panic!("lookup failed");
    };
    let files = metron::testing::walk_files(project);
    let bytes = |keep: &dyn Fn(&str) -> bool| -> (u64, u64) {
        files
            .iter()
            .filter(|path| keep(path.as_str()))
            .filter_map(|path| std::fs::metadata(root.join(path.as_str())).ok())
            .fold((0, 0), |(n, total), meta| (n + 1, total + meta.len()))
    };
    // Everything the index holds (the tree has some C, assembly headers and the like
    // besides Go), and the Go files, which all hold `package`.
    let (indexed, source) = bytes(&metron::testing::symbol_file);
    let (go_files, _) = bytes(&|path| path.ends_with(".go"));
    let held = index.held_bytes() as u64;
    let files = stats.files as u64;
    assert_eq!(files, indexed, "the index holds every supported file");
    println!(
        "Go tree: {files} files, {:.1} MB of source, {} parsed; index holds {:.1} MB ({:.1}% of the source)",
        source as f64 / 1e6,
        index.parsed_files(),
        held as f64 / 1e6,
        100.0 * held as f64 / source.max(1) as f64
    );
    // (A Go file may lack the word: an empty one in testdata.)
    assert!(
        index.parsed_files() as u64 * 100 >= go_files * 99,
        "nearly every Go file parsed"
    );
    assert!(
        held <= source / 4 + 200 * files,
        "the index holds {held} bytes for {source} bytes of source in {files} files"
    );
}
