//! C: libgit2 (`.ci/corpora/c.sh`: include/, src/ and its vendored deps/).
//!
//! The `.c` files are compared with ctags' C parser. `.h` files are C++ to find_symbol,
//! as to ctags (see the C entry in lang.rs), so libgit2's headers are compared with
//! ctags' C++ parser in `cpp.rs` (`c_headers_parse_as_cpp`).

use std::collections::HashSet;

use super::{
    Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement, source_files,
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
