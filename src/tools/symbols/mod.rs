//! The in-process symbol index behind `find_symbol`: where is `Name` defined, and in
//! what scope, in the languages of [`lang::LANGS`], without running any external program.
//!
//! It replaces Universal Ctags with tree-sitter grammars and two short definition
//! queries (`grammars/*.scm`) whose kinds and scopes follow ctags, so answers read the
//! same as a tags file would. A qualified name (`Context.JSON`, `outer::S::new`) narrows
//! a lookup to definitions whose scope path ends with the qualifier. Parsing is the
//! expensive part (about 8 MB/s against ctags' 60), so the index parses only what it must,
//! and tries to have done that before it is asked:
//!
//! 1. the file list comes from the shared walk ([`crate::tools::walk`]), so ignore rules
//!    are exactly those of list_files, and is reused only while the `stat` of every
//!    directory and ignore file it depends on is unchanged (`tree.rs`);
//! 2. a file is read once, and a Bloom filter of its identifiers is kept
//!    ([`prefilter`]); a lookup parses every file that contains the name, and no other.
//!    That is the only file a lookup passes over, and it is sound: a file without the
//!    name's identifier cannot define it. Nothing guesses from the text around a mention
//!    whether it is a definition (an earlier version did, and a declarator split over two
//!    lines made it answer "No definition" for one that exists);
//! 3. a parsed file's definitions are kept ([`extract`]), so a file is parsed at most once
//!    per content version;
//! 4. files are visited in path order on a few threads, and the visit stops once one
//!    definition more than the caller's limit is known: output is sorted by path and
//!    capped, so later files cannot change it;
//! 5. a session starts [`SymbolIndex::warm`] while the model reads the first prompt: it
//!    reads and summarises every file, then parses them in path order, giving way to any
//!    lookup, so the model's first find_symbol call finds most of the work done.
//!
//! A repository decides how much work a file takes, so the work is bounded ([`extract`]:
//! how deep a definition may start, how many definitions and how much scope text a file
//! keeps; `budget.rs`: how long a lookup parses, and Ctrl-C), and a lookup says when a
//! bound cut a file that mentions the name, or stopped it early: it never misses
//! silently.
//!
//! Freshness is checked on every lookup and never traded for speed (`cache.rs`): new and
//! removed files are found through directory stamps (or a new walk), every visited file
//! is `stat`ed, and a file whose stamp changed is read again. A file indexed within two seconds of its
//! modification time could change again without its stamp changing on a coarse clock,
//! so its content hash is checked too. Nothing is written anywhere.

mod budget;
mod cache;
pub(crate) mod census;
mod escapes;
pub(crate) mod extract;
mod index;
pub(crate) mod lang;
#[cfg(feature = "lang-php")]
mod php_script;
pub(crate) mod prefilter;
mod respell;
#[cfg(feature = "lang-bash")]
mod shell_source;
#[cfg(test)]
mod soundness;
mod tree;
#[cfg(feature = "lang-c")]
mod trigraphs;

use std::cmp::Ordering;

pub use budget::Halt;
pub(crate) use budget::LOOKUP_TIME;
pub use extract::Cut;
pub use index::{LookupStats, SymbolIndex, WarmStats};

use crate::tools::ToolError;

/// One definition found in the project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Definition {
    /// Path relative to the project root, with `/` separators.
    pub path: String,
    /// 1-based line of the name.
    pub line: usize,
    /// The symbol's name (a Rust raw identifier without its `r#`).
    pub name: String,
    /// Universal Ctags kind name (see [`lang::KINDS`]).
    pub kind: &'static str,
    /// What it belongs to, as ctags names it (`Context`, `outer::inner::S`); empty for a
    /// top-level definition.
    pub scope: String,
}

impl Ord for Definition {
    /// Path order is the walk's order (and list_files'): component by component, so
    /// `a/b.go` comes before `a.go`, then line, then name and kind.
    fn cmp(&self, other: &Self) -> Ordering {
        self.path
            .split('/')
            .cmp(other.path.split('/'))
            .then(self.line.cmp(&other.line))
            .then_with(|| self.name.cmp(&other.name))
            .then_with(|| self.kind.cmp(other.kind))
            .then_with(|| self.scope.cmp(&other.scope))
    }
}

impl PartialOrd for Definition {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The answer to one lookup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lookup {
    /// Definitions, sorted by path then line, at most `limit` of them.
    pub definitions: Vec<Definition>,
    /// True when more definitions exist than were returned.
    pub truncated: bool,
    /// How many files in a supported language the project has (whether or not they were
    /// visited).
    pub files: usize,
    /// The languages of those files, in the language table's order, so a miss can say
    /// what was searched (`Go and Rust`) without listing every language compiled in.
    pub languages: Vec<&'static str>,
    /// For a qualified name: definitions of the bare name whose scope did not match.
    pub elsewhere: usize,
    /// Files that were listed but could not be read (permissions, a symlink swapped in).
    pub unreadable: usize,
    /// Files that mention the name but are indexed only in part (a bound of
    /// [`extract`] cut them), with why: a definition there may be missing.
    pub cut: Vec<(String, Cut)>,
    /// Set when the lookup stopped before visiting every file it needed.
    pub halted: Option<Halted>,
    /// For a lookup that found no definition at all: the names that differ from the one
    /// asked for only in case (`JSON` for `Json`), with how many definitions each has, at
    /// most [`OTHER_CASE_NAMED`] of them in sorted order. Taken from the definitions the
    /// index already holds (the session's warm-up parses the whole project), so the hint
    /// costs no walk, read or parse; a file not parsed yet is not in it.
    pub other_case: Vec<(String, usize)>,
    /// How many more such names there are beyond [`Lookup::other_case`].
    pub other_case_more: usize,
}

/// The most names a miss offers as differing only in case; more are counted.
pub const OTHER_CASE_NAMED: usize = 5;

/// Whether `held` is `wanted` spelled with other capitals (not the same spelling).
pub(crate) fn differs_only_in_case(held: &str, wanted: &str) -> bool {
    held != wanted
        && held
            .chars()
            .flat_map(char::to_lowercase)
            .eq(wanted.chars().flat_map(char::to_lowercase))
}

/// Why and where a lookup stopped early.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Halted {
    /// Ctrl-C, or the time budget.
    pub why: Halt,
    /// Files in a supported language the lookup did not get to.
    pub unvisited: usize,
}

/// Why a lookup failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SymbolError {
    /// The name was empty or only whitespace.
    #[error("the symbol is empty; give one identifier, such as `NewReader`")]
    EmptyName,
    /// Anything else that cannot be an identifier.
    #[error(
        "`{0}` is not an identifier; give one name such as `NewReader`, or a qualified one such as `Reader.Read`"
    )]
    NotAnIdentifier(String),
    /// A grammar failed to load (its ABI does not match the tree-sitter runtime).
    #[error("the {lang} grammar does not load: {message}")]
    Grammar {
        /// The language.
        lang: &'static str,
        /// tree-sitter's complaint.
        message: String,
    },
    /// A definitions query failed to compile (a bug in `grammars/*.scm`).
    #[error("the {lang} definitions query is broken: {message}")]
    Query {
        /// The language.
        lang: &'static str,
        /// tree-sitter's complaint.
        message: String,
    },
}

impl From<SymbolError> for ToolError {
    fn from(error: SymbolError) -> Self {
        match error {
            SymbolError::EmptyName => ToolError::BadArguments(error.to_string()),
            SymbolError::NotAnIdentifier(_) => ToolError::Refused(error.to_string()),
            SymbolError::Grammar { .. } | SymbolError::Query { .. } => {
                ToolError::Fault(error.to_string())
            }
        }
    }
}

/// The longest name accepted; longer input is not a real identifier.
const MAX_NAME_BYTES: usize = 256;

/// A name to look up: its last segment, and the scope path before it (empty for a plain
/// name). `Context.JSON`, `Context::JSON` and `(*Context).JSON` all look up `JSON` in a
/// scope ending with `Context`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SymbolQuery {
    /// The name to find, in its canonical spelling (`operator==`); the prefilter looks
    /// for the identifier in it ([`prefilter::token`]).
    pub(crate) name: String,
    /// The scope segments the definition's scope path must end with.
    pub(crate) qualifier: Vec<String>,
    /// How the qualifier was written (`.` or `::`), to echo it in messages.
    pub(crate) separator: &'static str,
}

impl SymbolQuery {
    /// Whether a definition whose file has namespace `file_scope` (Go's package) and
    /// whose scope path is `scope` (joined by `separator`) is in the qualifier's scope:
    /// the qualifier is a suffix of the file namespace followed by the scope path.
    pub(crate) fn in_scope(&self, file_scope: Option<&str>, scope: &str, separator: &str) -> bool {
        if self.qualifier.is_empty() {
            return true;
        }
        // A dotted file namespace (a Java package, `java.util`) is several segments.
        let path: Vec<&str> = file_scope
            .into_iter()
            .flat_map(|namespace| namespace.split(separator))
            .chain(scope.split(separator))
            .filter(|segment| !segment.is_empty())
            .collect();
        path.len() >= self.qualifier.len()
            && path[path.len() - self.qualifier.len()..]
                .iter()
                .zip(&self.qualifier)
                .all(|(have, want)| *have == want.as_str())
    }
}

/// Is `text` one identifier (letters, digits and `_`, not starting with a digit)?
fn is_identifier(text: &str) -> bool {
    // `$` is an identifier character in JavaScript and TypeScript (`$`, `$scope`, rxjs'
    // `destroy$`). Such a name has no prefilter token, so files are scanned for it.
    let is_ident_char = |c: char| c == '_' || c == '$' || c.is_alphanumeric();
    text.len() <= MAX_NAME_BYTES
        && text
            .chars()
            .next()
            .is_some_and(|c| c == '_' || c == '$' || c.is_alphabetic())
        && text.chars().all(is_ident_char)
}

/// Ruby's operator method names (`def <=>(other)`), which ctags names as written.
const RUBY_OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "%", "**", "==", "!=", "===", "=~", "!~", "<", ">", "<=", ">=", "<=>",
    "<<", ">>", "&", "|", "^", "~", "!", "+@", "-@", "~@", "!@", "[]", "[]=", "`",
];

/// The operators C++ lets a class overload, as they follow `operator` (spaces removed).
const CPP_OPERATORS: &[&str] = &[
    "+", "-", "*", "/", "%", "^", "&", "|", "~", "!", "=", "<", ">", "+=", "-=", "*=", "/=", "%=",
    "^=", "&=", "|=", "<<", ">>", "<<=", ">>=", "==", "!=", "<=", ">=", "<=>", "&&", "||", "++",
    "--", ",", "->*", "->", "()", "[]", "new", "delete", "new[]", "delete[]", "co_await",
];

/// A definition's name that is more than an identifier, in its canonical spelling:
/// a Ruby predicate, bang method or setter (`ready?`, `save!`, `name=`), a Ruby operator
/// method (`<=>`, `[]`), a C++ destructor (`~Stack`), operator (`operator==`, written
/// without spaces), literal operator (`operator""_km`) or conversion (`operator bool`,
/// one space between words). `None` for anything else, identifiers included.
fn special_name(text: &str) -> Option<String> {
    if text.len() > MAX_NAME_BYTES {
        return None;
    }
    let stem = text
        .strip_suffix(['?', '!', '='])
        .or_else(|| text.strip_prefix('~'));
    if stem.is_some_and(is_identifier) || RUBY_OPERATORS.contains(&text) {
        return Some(text.to_owned());
    }
    let rest = text.strip_prefix("operator")?;
    let compact: String = rest.chars().filter(|c| !c.is_whitespace()).collect();
    if CPP_OPERATORS.contains(&compact.as_str())
        || compact.strip_prefix("\"\"").is_some_and(is_identifier)
    {
        // `operator new[]` keeps its space, `operator==` has none.
        let space = if compact.starts_with(char::is_alphabetic) {
            " "
        } else {
            ""
        };
        return Some(format!("operator{space}{compact}"));
    }
    // A conversion: `operator` and a type of words, `*` and `&` (`operator const char*`).
    let words: Vec<&str> = rest.split_whitespace().collect();
    let is_type = rest.starts_with(char::is_whitespace)
        && words.first().is_some_and(|word| is_identifier(word))
        && words.iter().all(|word| {
            is_identifier(word.trim_end_matches(['*', '&']))
                || word.chars().all(|c| c == '*' || c == '&')
        });
    is_type.then(|| format!("operator {}", words.join(" ")))
}

/// Whether a stored definition name is the name a query asks for. A C++ operator is
/// stored as the source spells it (`operator ==`, `operator()`), so spaces in it do not
/// count.
pub(crate) fn same_name(stored: &str, wanted: &str) -> bool {
    stored == wanted
        || (stored.starts_with("operator")
            && wanted.starts_with("operator")
            && stored
                .chars()
                .filter(|c| !c.is_whitespace())
                .eq(wanted.chars().filter(|c| !c.is_whitespace())))
}

/// Turns what a model or person typed into a query: trimmed, without Rust `r#`
/// prefixes, and checked to be one name or names joined by `.` or `::`. A name is an
/// identifier or one of the [`special_name`]s (Ruby `ready?` and `<=>`, C++ `~Stack` and
/// `operator==`); a qualifier is identifiers. In a qualified name, the punctuation of Go
/// method expressions and calls is dropped (`(*T).M()` is `T.M`).
pub(crate) fn parse_query(raw: &str) -> Result<SymbolQuery, SymbolError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(SymbolError::EmptyName);
    }
    let bad = || SymbolError::NotAnIdentifier(trimmed.chars().take(80).collect());
    let plain = trimmed.strip_prefix("r#").unwrap_or(trimmed);
    if is_identifier(plain) {
        return Ok(SymbolQuery {
            name: plain.to_owned(),
            qualifier: Vec::new(),
            separator: ".",
        });
    }
    if let Some(name) = special_name(trimmed) {
        return Ok(SymbolQuery {
            name,
            qualifier: Vec::new(),
            separator: ".",
        });
    }
    if !trimmed.contains(['.', ':']) {
        return Err(bad());
    }
    let separator = if trimmed.contains("::") { "::" } else { "." };
    let joined = trimmed.replace("::", ".");
    // Neither C++ nor Ruby operators contain `.`, so the last `.` ends the qualifier.
    let (scope, last) = joined.rsplit_once('.').ok_or_else(bad)?;
    let name = match special_name(last.trim()) {
        Some(name) => name,
        None => {
            let last = last.strip_suffix("()").unwrap_or(last);
            let last = last
                .trim()
                .trim_start_matches(['(', '*', '&'])
                .trim_end_matches(')');
            let last = last.strip_prefix("r#").unwrap_or(last);
            if !is_identifier(last) {
                return Err(bad());
            }
            last.to_owned()
        }
    };
    let mut qualifier = Vec::new();
    for segment in scope.split('.') {
        let segment = segment
            .trim()
            .trim_start_matches(['(', '*', '&'])
            .trim_end_matches(')');
        let segment = segment.strip_prefix("r#").unwrap_or(segment);
        if !is_identifier(segment) {
            return Err(bad());
        }
        qualifier.push(segment.to_owned());
    }
    Ok(SymbolQuery {
        name,
        qualifier,
        separator,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(raw: &str) -> Result<(String, Vec<String>), SymbolError> {
        parse_query(raw).map(|q| (q.name, q.qualifier))
    }

    #[test]
    fn names_are_normalised_or_refused() {
        let plain = |name: &str| Ok((name.to_owned(), Vec::new()));
        assert_eq!(query(" NewReader\n"), plain("NewReader"));
        assert_eq!(query("r#match"), plain("match"));
        assert_eq!(query("_x1"), plain("_x1"));
        assert_eq!(query("Größe"), plain("Größe"));
        assert_eq!(query(" \t"), Err(SymbolError::EmptyName));
        for bad in [
            "a b",
            "2x",
            "Greet()",
            "a..b",
            ".x",
            "x.",
            "a:b",
            "io.2",
            "a?b",
            "ready??",
            "~a b",
            "x=y",
            "operator==x",
            "operator 2",
            "operator a+b",
            ".*",
            "^foo$",
            "a|b",
            "Foo.bar?.baz",
            "?x",
            "=",
            "[]x",
            "~~x",
            "a.b c",
            "operator<<<<",
        ] {
            assert!(
                matches!(query(bad), Err(SymbolError::NotAnIdentifier(_))),
                "{bad}"
            );
        }
        assert!(matches!(
            query(&"x".repeat(300)),
            Err(SymbolError::NotAnIdentifier(_))
        ));
    }

    #[test]
    fn ruby_and_cpp_method_names_are_names() {
        let plain = |name: &str| Ok((name.to_owned(), Vec::new()));
        for name in [
            "ready?",
            "save!",
            "name=",
            "==",
            "<=>",
            "[]",
            "[]=",
            "-@",
            "`",
            "~Stack",
            "operator==",
            "operator()",
            "operator[]",
            "operator<<=",
            "operator->*",
            "operator bool",
            "operator new[]",
            "operator\"\"_km",
            "größe?",
        ] {
            assert_eq!(query(name), plain(name), "{name}");
        }
        // Operators are spelled without spaces, conversions with one.
        assert_eq!(query("operator == "), plain("operator=="));
        assert_eq!(query("operator ( )"), plain("operator()"));
        assert_eq!(
            query("operator  const  char*"),
            plain("operator const char*")
        );
        assert_eq!(query("operator new"), plain("operator new"));
        let q = |qualifier: &[&str], name: &str| {
            let qualifier = qualifier.iter().map(|s| (*s).to_owned()).collect();
            Ok((name.to_owned(), qualifier))
        };
        assert_eq!(query("Stack::~Stack"), q(&["Stack"], "~Stack"));
        assert_eq!(
            query("ns::Stack::operator()"),
            q(&["ns", "Stack"], "operator()")
        );
        assert_eq!(query("Stack::operator=="), q(&["Stack"], "operator=="));
        assert_eq!(query("Greeter.ready?"), q(&["Greeter"], "ready?"));
        assert_eq!(
            query("Shop::Greeter.name="),
            q(&["Shop", "Greeter"], "name=")
        );
        assert_eq!(query("Vector.*"), q(&["Vector"], "*"));
        assert_eq!(query("Hash.[]"), q(&["Hash"], "[]"));
    }

    #[test]
    fn operators_match_however_they_are_spaced() {
        assert!(same_name("operator ==", "operator=="));
        assert!(same_name("operator()", "operator()"));
        assert!(same_name("operator  bool", "operator bool"));
        assert!(!same_name("operator=", "operator=="));
        assert!(!same_name("a b", "ab"));
        assert!(same_name("ready?", "ready?"));
    }

    #[test]
    fn qualified_names_split_into_scope_and_name() {
        let q = |qualifier: &[&str], name: &str| {
            let qualifier = qualifier.iter().map(|s| (*s).to_owned()).collect();
            Ok((name.to_owned(), qualifier))
        };
        assert_eq!(query("io.Reader"), q(&["io"], "Reader"));
        assert_eq!(query("std::fmt::Display"), q(&["std", "fmt"], "Display"));
        assert_eq!(query("(*Context).JSON()"), q(&["Context"], "JSON"));
        assert_eq!(query("r#mod::r#fn"), q(&["mod"], "fn"));
    }

    #[test]
    fn a_qualifier_matches_the_end_of_the_scope_path() {
        let Ok(query) = parse_query("Context.JSON") else {
            panic!("parses");
        };
        assert!(query.in_scope(Some("gin"), "Context", "."));
        assert!(query.in_scope(None, "gin::Context", "::"));
        assert!(!query.in_scope(Some("gin"), "", "."));
        assert!(!query.in_scope(None, "Context::Inner", "::"));
        let Ok(package) = parse_query("gin.Top") else {
            panic!("parses");
        };
        assert!(package.in_scope(Some("gin"), "", "."));
        assert!(!package.in_scope(Some("gin"), "Context", "."));
        // A dotted namespace (a Java package) matches segment by segment.
        let Ok(java) = parse_query("util.HashMap.put") else {
            panic!("parses");
        };
        assert!(java.in_scope(Some("java.util"), "HashMap", "."));
        assert!(!java.in_scope(Some("java.util.concurrent"), "HashMap", "."));
        let Ok(plain) = parse_query("JSON") else {
            panic!("parses");
        };
        assert!(plain.in_scope(None, "anything", "::"));
    }

    #[test]
    fn only_capitals_may_differ() {
        assert!(differs_only_in_case("JSON", "Json"));
        assert!(differs_only_in_case("json", "JSON"));
        assert!(differs_only_in_case("Größe", "größe"));
        assert!(!differs_only_in_case("Json", "Json"));
        assert!(!differs_only_in_case("Jsonx", "Json"));
        assert!(!differs_only_in_case("JSO", "Json"));
    }

    #[test]
    fn definitions_sort_like_the_walk() {
        let def = |path: &str, line| Definition {
            path: path.to_owned(),
            line,
            name: "X".to_owned(),
            kind: "func",
            scope: String::new(),
        };
        let mut defs = [
            def("a.go", 1),
            def("a/b.go", 9),
            def("a/b.go", 2),
            def("B.go", 5),
        ];
        defs.sort();
        let order: Vec<(&str, usize)> = defs.iter().map(|d| (d.path.as_str(), d.line)).collect();
        assert_eq!(
            order,
            [("B.go", 5), ("a/b.go", 2), ("a/b.go", 9), ("a.go", 1)]
        );
    }
}
