//! C: libgit2 (`.ci/corpora/c.sh`: include/, src/ and its vendored deps/).
//!
//! The `.c` files are compared with ctags' C parser. `.h` files are C++ to ctags, and
//! to find_symbol in a project with C++ sources (`c_headers_parse_as_cpp` in `cpp.rs`),
//! but C in a project with only C sources (see `HeaderVote` in lang.rs), as libgit2's
//! are: `c_headers_in_a_c_project` compares them with ctags' C parser.

use std::collections::HashSet;

use super::{
    Tag, ctags_tags, ctags_tags_with, kinds_and_tags, our_tags, our_tags_in, precision, recall,
    scope_agreement, source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' C scope as find_symbol shows it: without the kind (`struct:outer::inner` is
/// `outer::inner`).
fn c_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// ctags names an anonymous struct, union or enum `__anon` plus a hash of its place:
/// not a name in the source, so nobody can look it up and there is nothing to find.
/// Such tags are excluded from recall, and tags scoped by one from scope agreement
/// (find_symbol scopes the members of a typedef'd anonymous struct by the typedef).
fn is_made_up(name: &str) -> bool {
    name.starts_with("__anon")
}

#[test]
fn recall_against_ctags_on_a_c_tree() {
    let test = "recall_against_ctags_on_a_c_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("c") else {
        return skip(test, "run .ci/corpora/c.sh first");
    };
    let mut files = Vec::new();
    source_files(&root, "c", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .c files under {}", root.display()));
    }
    let tags = ctags_tags("C", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("C, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, (name, _, _)| is_made_up(name));
    assert!(total > 0, "ctags found no C tags");
    assert!(
        found * 100 >= total * 98,
        "C recall {found}/{total} is under 98%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 95,
        "C precision {listed}/{ours_total} is under 95%"
    );
    let named: Vec<_> = tags
        .into_iter()
        .filter(|t| !t.scope.contains("__anon"))
        .collect();
    let (agree, compared) = scope_agreement(&title, &named, &scopes, c_scope);
    assert!(
        agree * 100 >= compared * 95,
        "C scope agreement {agree}/{compared} is under 95%"
    );
}

/// libgit2's headers read as C, as find_symbol reads them in a project with C sources
/// and no C++ ones, against ctags' C parser mapped to `.h`.
#[test]
fn c_headers_in_a_c_project() {
    let test = "c_headers_in_a_c_project";
    let Some(files) = super::c::libgit2_headers(test) else {
        return;
    };
    let tags = ctags_tags_with("C", &["--map-C=+.h"], &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags_in(&files, Some("C"));
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("C headers as C, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, (name, _, _)| is_made_up(name));
    assert!(total > 0, "ctags found no C tags in the headers");
    assert!(
        found * 100 >= total * 98,
        "C header recall {found}/{total} is under 98%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 90,
        "C header precision {listed}/{ours_total} is under 90%"
    );
}

/// libgit2's `.h` files, for the two header tests (read as C here, as C++ in `cpp.rs`);
/// `None`, after saying why, when ctags or the corpus is missing.
pub(super) fn libgit2_headers(test: &str) -> Option<Vec<std::path::PathBuf>> {
    if !ctags_available() {
        skip(test, "needs Universal Ctags (`ctags --version` says so)");
        return None;
    }
    let Some(root) = super::corpus("c") else {
        skip(test, "run .ci/corpora/c.sh first");
        return None;
    };
    let mut files = Vec::new();
    source_files(&root, "h", &mut files);
    if files.is_empty() {
        skip(test, &format!("no .h files under {}", root.display()));
        return None;
    }
    Some(files)
}
