//! C#: Python.NET 3.0.5 (`.ci/corpora/csharp.sh`): its runtime, embedding tests and
//! tools, from the PyPI sdist.

use std::collections::HashSet;

use super::{
    Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement, source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' C# scope as find_symbol shows it: without the kind
/// (`class:Python.Runtime.Converter` is `Python.Runtime.Converter`). Unlike Java's
/// package, a C# namespace is part of the scope, as ctags prints it.
fn csharp_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// Tags that ctags 5.9 makes of what is not a declaration, each counted and printed as
/// excluded in the recall table:
///
/// - a parameter as a field: ctags does not know expression-bodied members
///   (`static T F(Ref ob) => G(ob);`) and tags the last parameter as a field. Such a tag
///   is followed on its line by `)` or `,` and preceded by a `(`;
/// - a name in a `where` constraint as a type or property: ctags reads
///   `class Ops<T> where T : Enum` as a class `T`, and `where T: PyObject` after a method
///   as a property `PyObject`.
fn is_ctags_false_positive(kind: &str, name: &str, line: Option<&str>) -> bool {
    let Some(line) = line else {
        return false;
    };
    let Some(at) = find_word(line, name) else {
        return false;
    };
    let (before, after) = (&line[..at], line[at + name.len()..].trim_start());
    let parameter = kind == "field"
        && before.contains('(')
        && (after.starts_with(')') || after.starts_with(','));
    let words: Vec<&str> = line
        .split(|c: char| !c.is_alphanumeric() && c != '_')
        .filter(|w| !w.is_empty())
        .collect();
    let constraint = words
        .iter()
        .position(|w| *w == "where")
        .is_some_and(|at| words[at + 1..].contains(&name));
    parameter || constraint
}

/// Where `word` first stands alone in `line` (not inside a longer identifier).
fn find_word(line: &str, word: &str) -> Option<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    line.match_indices(word).map(|(at, _)| at).find(|&at| {
        !line[..at].chars().next_back().is_some_and(is_ident)
            && !line[at + word.len()..].chars().next().is_some_and(is_ident)
    })
}

#[test]
fn recall_against_ctags_on_a_csharp_tree() {
    let test = "recall_against_ctags_on_a_csharp_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("csharp") else {
        return skip(test, "run .ci/corpora/csharp.sh first");
    };
    let mut files = Vec::new();
    source_files(&root, "cs", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .cs files under {}", root.display()));
    }
    let tags = ctags_tags("C#", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("C#, {} files", files.len());
    let mut lines = super::SourceLines::default();
    let mut source_line = |file: &str, line: usize| lines.line(file, line);
    let excluded: HashSet<Tag> = theirs
        .iter()
        .filter(|(kind, tag)| {
            is_ctags_false_positive(kind, &tag.0, source_line(&tag.1, tag.2).as_deref())
        })
        .map(|(_, tag)| tag.clone())
        .collect();
    let (found, total) = recall(&title, &theirs, &ours, |_, tag| excluded.contains(tag));
    assert!(total > 0, "ctags found no C# tags");
    assert!(
        found * 1000 >= total * 985,
        "C# recall {found}/{total} is under 98.5%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 1000 >= ours_total * 925,
        "C# precision {listed}/{ours_total} is under 92.5%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, csharp_scope);
    assert!(
        agree * 1000 >= compared * 975,
        "C# scope agreement {agree}/{compared} is under 97.5%"
    );
}
