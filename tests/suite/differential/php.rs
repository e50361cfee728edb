//! PHP: Doctrine DBAL, Symfony Console and Monolog as Debian packages them
//! (`.ci/corpora/php.sh`).

use std::collections::HashSet;

use super::{
    CtagsTag, Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement,
    source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' PHP scope as find_symbol shows it: without the kind and the namespace
/// (`class:App\\Models\\Greeter` is `Greeter`, `function:App\\Models\\Greeter::nested`
/// is `Greeter::nested`, a namespace scope is top level). ctags doubles backslashes.
fn php_scope(field: &str) -> String {
    match field.split_once(':') {
        Some(("namespace", _)) | None => String::new(),
        Some((_, path)) => {
            let path = path.replace("\\\\", "\\");
            path.rsplit_once('\\')
                .map_or(path.as_str(), |(_, rest)| rest)
                .to_owned()
        }
    }
}

/// ctags doubles the backslashes of a namespace's name (`App\\Models`).
fn unescape_names(tags: &mut [CtagsTag]) {
    for tag in tags {
        tag.tag.0 = tag.tag.0.replace("\\\\", "\\");
    }
}

/// Tags not counted against recall: the classes ctags names `AnonymousClass` plus a
/// hash for `new class { ... }`. The name is not in the source, so no one can ask for
/// it (deliberate; their methods are found).
fn is_excluded(kind: &str, tag: &Tag) -> bool {
    kind == "class" && tag.0.starts_with("AnonymousClass")
}

/// What remains, on these libraries: ctags takes the local variables of closures (an
/// autoloader's `spl_autoload_register(function () { ... })`, a validator returned by a
/// method) for global variables, and tags some of their uses (`return $answer;`) too:
/// 39 `variable` misses, all ctags false positives, left counted. The two scope
/// disagreements are methods of anonymous classes, which ctags scopes by a made-up
/// `AnonymousClass<hash>`.
#[test]
fn recall_against_ctags_on_a_php_tree() {
    let test = "recall_against_ctags_on_a_php_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("php") else {
        return skip(test, "run .ci/corpora/php.sh first");
    };
    let mut files = Vec::new();
    source_files(&root, "php", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .php files under {}", root.display()));
    }
    let mut tags = ctags_tags("PHP", &files);
    unescape_names(&mut tags);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("PHP, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, is_excluded);
    assert!(total > 0, "ctags found no PHP tags");
    assert!(
        found * 100 >= total * 99,
        "PHP recall {found}/{total} is under 99%"
    );
    let (listed, ours_total) = precision(&title, &scopes, &theirs, |_| false);
    assert!(
        listed * 100 >= ours_total * 99,
        "PHP precision {listed}/{ours_total} is under 99%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, php_scope);
    assert!(
        agree * 100 >= compared * 99,
        "PHP scope agreement {agree}/{compared} is under 99%"
    );
}
