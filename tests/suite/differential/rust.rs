//! Rust: this crate's sources plus the first crates of the cargo registry.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::{
    Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement, source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' Rust scope as find_symbol shows it: without the kind
/// (`implementation:outer::S` is `outer::S`).
fn rust_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// Known ctags false positives, documented in the project's tree-sitter research notes:
/// ctags reads `&'static T` in any Rust type as a static item named `T` (kind
/// `variable`), and reads `%2` inside tracing-style macro calls as a macro named `2`.
/// Neither is a definition, so neither counts against recall.
fn is_ctags_false_positive(kind: &str, tag: &Tag, source_line: Option<&str>) -> bool {
    let (name, _, _) = tag;
    if !name.starts_with(|c: char| c == '_' || c.is_alphabetic()) {
        return true;
    }
    if kind == "variable" {
        // A real static has `static NAME` or `static mut NAME` not preceded by `'`.
        let line = source_line.unwrap_or("");
        let defines = line.match_indices("static ").any(|(at, _)| {
            let rest = &line[at + "static ".len()..];
            let rest = rest.strip_prefix("mut ").unwrap_or(rest);
            !line[..at].ends_with('\'')
                && rest.starts_with(name.as_str())
                && !rest[name.len()..].starts_with(|c: char| c == '_' || c.is_alphanumeric())
        });
        return !defines;
    }
    false
}

/// This crate's sources plus the first crates of the cargo registry, for a Rust tree.
fn rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["src", "tests", "benches"] {
        source_files(&manifest.join(dir), "rs", &mut files);
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(registry) = cargo_home.map(|h| h.join("registry").join("src")) else {
        return files;
    };
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&registry)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .flat_map(|index| std::fs::read_dir(index.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    crates.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
    for krate in crates.iter().take(40) {
        source_files(krate, "rs", &mut files);
    }
    files
}

#[test]
fn recall_against_ctags_on_a_rust_tree() {
    let test = "recall_against_ctags_on_a_rust_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let files = rust_files();
    let tags = ctags_tags("Rust", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let mut lines = super::SourceLines::default();
    let mut source_line = |file: &str, line: usize| lines.line(file, line);
    let excluded: HashSet<Tag> = theirs
        .iter()
        .filter(|(kind, tag)| {
            is_ctags_false_positive(kind, tag, source_line(&tag.1, tag.2).as_deref())
        })
        .map(|(_, tag)| tag.clone())
        .collect();
    let title = format!("Rust, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, tag| excluded.contains(tag));
    assert!(total > 0, "ctags found no Rust tags");
    assert!(
        found * 1000 >= total * 999,
        "Rust recall {found}/{total} is under 99.9%"
    );
    // Universal Ctags 5.9 tags no `const` item and no union in Rust, so ours cannot be
    // checked against it: how many a tree holds (const-oid's generated tables alone have
    // 1,495 constants) would otherwise decide the figure. A ctags that tags them is
    // checked.
    let their_kinds: HashSet<&str> = theirs.iter().map(|(kind, _)| kind.as_str()).collect();
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |kind| {
        matches!(kind, "constant" | "union") && !their_kinds.contains(kind)
    });
    assert!(
        listed * 100 >= ours_total * 95,
        "Rust precision {listed}/{ours_total} is under 95%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, rust_scope);
    assert!(
        agree * 100 >= compared * 95,
        "Rust scope agreement {agree}/{compared} is under 95%"
    );
}
