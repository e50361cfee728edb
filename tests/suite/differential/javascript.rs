//! JavaScript: three.js's ES-module sources and lodash's CommonJS modules (see
//! `.ci/corpora/javascript.sh`).

use std::collections::HashSet;
use std::path::PathBuf;

use super::{
    CtagsTag, Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement,
    source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' JavaScript scope as find_symbol shows it: without the kind
/// (`class:Foo.bar` is `Foo.bar`).
fn js_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// Words ctags has been seen to report as names after losing its place (`case 'X':`
/// read as a class `case`).
const KEYWORDS: &[&str] = &["case", "default", "return", "await", "new", "typeof"];

/// Tags that are not definitions a user can ask for, each counted and printed. `lines`
/// are the lines of the tag's file.
///
/// - `AnonymousFunction1a2b…`: the name ctags makes up for a function without one;
/// - names that are not identifiers (`[ Symbol.iterator ]`, `[ 3 ]`) or are keywords
///   (`case`): ctags prints the source text of a computed key or of an index assigned
///   to, and reads `case 'X': {` as a class;
/// - names that appear in their line only after a backslash: ctags decodes the escapes
///   of a quoted key (`'\u017a'` is tagged `ź`, `'\xfa'` is tagged `xfa`);
/// - a `class` tag on a line `X.prototype.m = ...`: ctags adds the class X there, but X
///   is defined by its own function or class declaration, which ctags tags too;
/// - `field` tags on lines that declare no field: ctags' parser loses its place after
///   some statements (a method named `set(`, a `for` header, an index assignment) and
///   then reports identifiers of the following lines as fields of the class
///   (`this.y = y` inside `set( radius, theta, y )`, `point0L.copy( ... )`). A field is a
///   class field declaration (`name;`, `name = 1;`, `static name`, `#name`) or a
///   shorthand key of an exported object (`name,`), so a tag whose line is not the name
///   (after `static` or `#`) followed by `;`, `,`, `=` or nothing is not one;
/// - top-level `constant` and `variable` tags (no scope) in an indented statement: when
///   ctags loses its place the same way, it reports the locals of the method that follows
///   as top-level constants and variables (`const ae = a * e` inside
///   `Matrix4.makeRotationFromEuler`). A top-level declaration starts at column 0 in
///   these trees; its statement starts at the first line of a comma-continued
///   declaration (lodash's `var a = require('a'),\n    b = require('b');`).
fn is_ctags_false_positive(tag: &CtagsTag, lines: &[String]) -> bool {
    let (name, _, line_no) = &tag.tag;
    let at = |n: usize| -> &str {
        n.checked_sub(1)
            .and_then(|i| lines.get(i))
            .map_or("", |l| l)
    };
    let line = at(*line_no);
    if name.starts_with("AnonymousFunction") || KEYWORDS.contains(&name.as_str()) {
        return true;
    }
    if !name
        .chars()
        .all(|c| c == '_' || c == '$' || c.is_alphanumeric())
    {
        return true;
    }
    if !line
        .match_indices(name.as_str())
        .any(|(i, _)| !line[..i].ends_with('\\'))
    {
        return true;
    }
    match tag.kind.as_str() {
        "class" => line.contains(&format!("{name}.prototype")),
        "field" => {
            let line = line.trim_start();
            let line = line.strip_prefix("static ").unwrap_or(line).trim_start();
            let line = line.strip_prefix('#').unwrap_or(line);
            let Some(rest) = line.strip_prefix(name.as_str()) else {
                return true;
            };
            let rest = rest.trim_start();
            let declares = rest.is_empty()
                || rest.starts_with(';')
                || rest.starts_with(',')
                || (rest.starts_with('=') && !rest.starts_with("=="));
            !declares
        }
        "constant" | "variable" if tag.scope.is_empty() => {
            let mut start = *line_no;
            while start > 1 && at(start - 1).trim_end().ends_with(',') {
                start -= 1;
            }
            at(start).starts_with(char::is_whitespace)
        }
        _ => false,
    }
}

#[test]
fn recall_against_ctags_on_a_javascript_tree() {
    let test = "recall_against_ctags_on_a_javascript_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("javascript") else {
        return skip(test, "run .ci/corpora/javascript.sh for a JavaScript tree");
    };
    let mut files: Vec<PathBuf> = Vec::new();
    source_files(&root, "js", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .js files under {}", root.display()));
    }
    let tags = ctags_tags("JavaScript", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let mut lines = super::SourceLines::default();
    let excluded: HashSet<Tag> = tags
        .iter()
        .filter(|tag| is_ctags_false_positive(tag, lines.file(&tag.tag.1)))
        .map(|tag| tag.tag.clone())
        .collect();
    let title = format!("JavaScript, {} files", files.len());
    // Measured on three 0.170.0 + lodash 4.17.21 (2,056 files): recall 99.39% (18,222
    // of 18,334; 2,264 ctags tags excluded above), precision 95.26%, scope agreement
    // 97.30%.
    let (found, total) = recall(&title, &theirs, &ours, |_, tag| excluded.contains(tag));
    assert!(total > 0, "ctags found no JavaScript tags");
    assert!(
        found * 100 >= total * 99,
        "JavaScript recall {found}/{total} is under 99%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 94,
        "JavaScript precision {listed}/{ours_total} is under 94%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, js_scope);
    assert!(
        agree * 100 >= compared * 96,
        "JavaScript scope agreement {agree}/{compared} is under 96%"
    );
}
