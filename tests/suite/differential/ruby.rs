//! Ruby: the Ruby 3.1 standard library (`.ci/corpora/ruby.sh`).

use std::collections::HashSet;

use super::{
    CtagsTag, Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement,
    source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' Ruby scope as find_symbol shows it: without the kind
/// (`class:Outer.Greeter` is `Outer.Greeter`).
fn ruby_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// ctags' Ruby tag names as they are in the source. ctags escapes a leading `!` as
/// `\x21` (`def !=` is `\x21=`), and cuts an alias name at its last `?`, `!` or `=`
/// (`alias active? started?` is `active`) though the method it defines is `active?`.
/// A name is rewritten only when we have the full name at that line, and the rewrites
/// are counted.
fn ctags_names_as_written(tags: &mut [CtagsTag], ours: &HashSet<Tag>) -> usize {
    let mut rewritten = 0;
    for theirs in tags.iter_mut() {
        let (name, file, line) = &theirs.tag;
        let mut fixed = name.replace("\\x21", "!");
        if theirs.kind == "alias" && !ours.contains(&(fixed.clone(), file.clone(), *line)) {
            for suffix in ["?", "!", "="] {
                let full = format!("{fixed}{suffix}");
                if ours.contains(&(full.clone(), file.clone(), *line)) {
                    fixed = full;
                    break;
                }
            }
        }
        if fixed != *name {
            theirs.tag.0 = fixed;
            rewritten += 1;
        }
    }
    rewritten
}

/// Tags not counted against recall, each a genuine ctags false positive:
///
/// - a `constant` whose line does not assign it: ctags reads `X =~ s`, `X === v`,
///   `X == v` and a hash key `X => v` as definitions of `X`;
/// - a `singletonMethod` named `self`: after `def obj.meth` in a block ctags names the
///   next `def self.x` methods `self`.
fn is_excluded(kind: &str, tag: &Tag, source_line: Option<&str>) -> bool {
    let (name, _, _) = tag;
    match kind {
        "singletonMethod" => name == "self",
        "constant" => {
            let line = source_line.unwrap_or("");
            let assigns = line.match_indices(name.as_str()).any(|(at, _)| {
                let rest = line[at + name.len()..].trim_start();
                rest.starts_with('=')
                    && !rest.starts_with("==")
                    && !rest.starts_with("=~")
                    && !rest.starts_with("=>")
            });
            !assigns
        }
        _ => false,
    }
}

/// What remains, on the 3.1 standard library: ctags reads Ruby code inside strings
/// (`class_eval %{ def do_parse ... }`, heredocs of `eval` and of mkmf's Makefile
/// text), about 90 misses; and ctags' scope tracking goes wrong in some files (a class
/// that never ends for ctags, so the classes after it are nested in it, or a scope
/// lost after `def ==`), which is nearly all of the scope disagreement: our scopes
/// follow the parse tree.
#[test]
fn recall_against_ctags_on_a_ruby_tree() {
    let test = "recall_against_ctags_on_a_ruby_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("ruby") else {
        return skip(test, "run .ci/corpora/ruby.sh first");
    };
    let mut files = Vec::new();
    source_files(&root, "rb", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .rb files under {}", root.display()));
    }
    let mut tags = ctags_tags("Ruby", &files);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let rewritten = ctags_names_as_written(&mut tags, &ours);
    println!("ctags names rewritten as written in the source: {rewritten}");
    let theirs = kinds_and_tags(&tags);
    let mut lines = super::SourceLines::default();
    let mut source_line = |file: &str, line: usize| lines.line(file, line);
    let excluded: HashSet<(String, Tag)> = theirs
        .iter()
        .filter(|(kind, tag)| is_excluded(kind, tag, source_line(&tag.1, tag.2).as_deref()))
        .cloned()
        .collect();
    let title = format!("Ruby, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |kind, tag| {
        excluded.contains(&(kind.to_owned(), tag.clone()))
    });
    assert!(total > 0, "ctags found no Ruby tags");
    assert!(
        found * 100 >= total * 98,
        "Ruby recall {found}/{total} is under 98%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 98,
        "Ruby precision {listed}/{ours_total} is under 98%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, ruby_scope);
    assert!(
        agree * 100 >= compared * 89,
        "Ruby scope agreement {agree}/{compared} is under 89%"
    );
}
