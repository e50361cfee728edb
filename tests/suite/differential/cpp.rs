//! C++ on two corpora, reported separately: mainstream C++ (`.ci/corpora/cpp-apps.sh`:
//! Google Test/Mock's sources, spdlog and fmt), which must meet the 98% recall goal, and
//! Boost (`.ci/corpora/cpp.sh`), the stress corpus, whose unexpanded macros break a
//! parser that does not preprocess; plus the C headers of the C corpus (libgit2), which
//! find_symbol parses as C++ like ctags does.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use super::{
    CtagsTag, Tag, ctags_tags, kinds_and_tags, our_tags, precision, recall, scope_agreement,
    source_files,
};
use crate::suite::common::{ctags_available, skip};

/// ctags' C++ scope as find_symbol shows it: without the kind
/// (`class:boost::asio::io_context` is `boost::asio::io_context`).
/// An operator in the path is written as find_symbol writes it (`operator()`).
fn cpp_scope(field: &str) -> String {
    let path = field.split_once(':').map_or("", |(_, path)| path);
    path.split("::")
        .map(operator_name)
        .collect::<Vec<_>>()
        .join("::")
}

/// An operator's name without spaces: ctags prints `operator ==` and `operator ()`,
/// find_symbol the source's `operator==`; the same name either way.
fn operator_name(name: &str) -> String {
    match name.strip_prefix("operator") {
        Some(rest) if rest.starts_with(|c: char| !(c == '_' || c.is_alphanumeric())) => {
            let op: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
            if op.starts_with(|c: char| c == '_' || c.is_alphanumeric()) {
                // A conversion (`operator bool`) keeps one space.
                format!("operator {op}")
            } else {
                format!("operator{op}")
            }
        }
        _ => name.to_owned(),
    }
}

/// ctags names an anonymous class, struct, union, enum or namespace `__anon` plus a hash
/// of its place: not a name in the source, nothing to look up. Such tags are excluded
/// from recall, and tags scoped by one from scope agreement.
fn is_made_up(name: &str) -> bool {
    name.starts_with("__anon")
}

/// A ctags false positive: a "function" named in upper case with underscores is an
/// unexpanded macro call in a return type (Boost.Asio's
/// `BOOST_ASIO_INITFN_AUTO_RESULT_TYPE(Handler, void(error_code)) async_read(…)`), which
/// ctags takes for the function's name; the function is `async_read`. No Boost function
/// is named that way (Boost names functions in lower case and macros in upper case).
/// In Google Test the same shape is a test: `TEST_F(Suite, Name) { … }` (and `TEST_P`,
/// `TYPED_TEST`, `ACTION_P`…, 920 tags) defines a class named by the macro's arguments,
/// not a function `TEST_F`. The rule also drops Google Test's one upper-case function,
/// `RUN_ALL_TESTS` (which find_symbol does find), from both counts.
fn is_ctags_false_positive(kind: &str, name: &str) -> bool {
    kind == "function"
        && name.contains('_')
        && name
            .chars()
            .all(|c| c == '_' || c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Every file under `root` with one of find_symbol's C++ extensions that ctags also
/// maps to C++, sorted.
fn cpp_files(root: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for extension in ["cc", "cpp", "cxx", "hh", "hpp", "hxx", "h", "inl"] {
        source_files(root, extension, &mut files);
    }
    files.sort();
    files
}

/// Compares ours and ctags' C++ tags on `files`, prints the tables, and returns
/// (recall found, recall total, precision listed, precision total, scopes agreeing,
/// scopes compared).
fn compare(title: &str, files: &[PathBuf]) -> [usize; 6] {
    let tags: Vec<CtagsTag> = ctags_tags("C++", files)
        .into_iter()
        .map(|t| CtagsTag {
            tag: (operator_name(&t.tag.0), t.tag.1, t.tag.2),
            ..t
        })
        .collect();
    let theirs = kinds_and_tags(&tags);
    let scopes: HashMap<Tag, (String, &'static str)> = our_tags(files)
        .into_iter()
        .map(|((name, file, line), v)| ((operator_name(&name), file, line), v))
        .collect();
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let (found, total) = recall(title, &theirs, &ours, |kind, (name, _, _)| {
        is_made_up(name) || is_ctags_false_positive(kind, name)
    });
    let (listed, ours_total) = precision(title, &scopes, &theirs, |_| false);
    let named: Vec<CtagsTag> = tags
        .into_iter()
        .filter(|t| !t.scope.contains("__anon"))
        .collect();
    let (agree, compared) = scope_agreement(title, &named, &scopes, cpp_scope);
    [found, total, listed, ours_total, agree, compared]
}

/// Mainstream C++: .cc sources, headers, tests and samples as most projects write them.
#[test]
fn recall_against_ctags_on_mainstream_cpp() {
    let test = "recall_against_ctags_on_mainstream_cpp";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("cpp-apps") else {
        return skip(test, "run .ci/corpora/cpp-apps.sh first");
    };
    let files = cpp_files(&root);
    if files.is_empty() {
        return skip(test, &format!("no C++ files under {}", root.display()));
    }
    let title = format!("C++ (googletest, spdlog, fmt), {} files", files.len());
    let [found, total, listed, ours_total, agree, compared] = compare(&title, &files);
    assert!(total > 0, "ctags found no C++ tags");
    assert!(
        found * 100 >= total * 98,
        "C++ recall {found}/{total} is under 98% (measured 98.16%)"
    );
    assert!(
        listed * 100 >= ours_total * 94,
        "C++ precision {listed}/{ours_total} is under 94% (measured 95.36%)"
    );
    assert!(
        agree * 100 >= compared * 84,
        "C++ scope agreement {agree}/{compared} is under 84% (measured 85.8%)"
    );
}

/// The stress corpus: Boost, where unexpanded macros (`BOOST_FORCEINLINE`,
/// `BOOST_NOEXCEPT_IF((…))`, export macros) break tree-sitter's parse of whole regions.
/// Its numbers are asserted as measured, below the 98% goal, to catch regressions.
#[test]
fn recall_against_ctags_on_boost_the_stress_corpus() {
    let test = "recall_against_ctags_on_boost_the_stress_corpus";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = super::corpus("cpp") else {
        return skip(test, "run .ci/corpora/cpp.sh first");
    };
    let files = cpp_files(&root);
    if files.is_empty() {
        return skip(test, &format!("no C++ files under {}", root.display()));
    }
    let title = format!("C++ stress corpus (Boost), {} files", files.len());
    let [found, total, listed, ours_total, agree, compared] = compare(&title, &files);
    assert!(total > 0, "ctags found no C++ tags");
    assert!(
        found * 100 >= total * 95,
        "Boost (stress corpus) recall {found}/{total} is under 95% (measured 96.08%; below the 98% goal, see the doc comment)"
    );
    assert!(
        listed * 100 >= ours_total * 87,
        "Boost (stress corpus) precision {listed}/{ours_total} is under 87% (measured 89.5%)"
    );
    assert!(
        agree * 100 >= compared * 85,
        "Boost (stress corpus) scope agreement {agree}/{compared} is under 85% (measured 87.1%)"
    );
}

/// `.h` is C++ to find_symbol, as to ctags: a C project's headers go through the C++
/// grammar and query. libgit2's headers measure what that costs.
#[test]
fn c_headers_parse_as_cpp() {
    let test = "c_headers_parse_as_cpp";
    let Some(files) = super::c::libgit2_headers(test) else {
        return;
    };
    let title = format!("C headers as C++, {} files", files.len());
    let [found, total, listed, ours_total, agree, compared] = compare(&title, &files);
    assert!(total > 0, "ctags found no tags in C headers");
    assert!(
        found * 100 >= total * 94,
        "C header recall {found}/{total} is under 94% (measured 95.8%)"
    );
    assert!(
        listed * 100 >= ours_total * 97,
        "C header precision {listed}/{ours_total} is under 97% (measured 98.6%)"
    );
    assert!(
        agree * 100 >= compared * 99,
        "C header scope agreement {agree}/{compared} is under 99% (measured 99.96%)"
    );
}
