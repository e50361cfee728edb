//! The in-process symbol index behind `find_symbol`: where is `Name` defined, in Go and
//! Rust sources, without running any external program.
//!
//! It replaces Universal Ctags with tree-sitter grammars and two short definition
//! queries (`grammars/*.scm`) whose kinds follow ctags, so answers read the same as a
//! tags file would. Parsing is the expensive part (about 8 MB/s against ctags' 60), so
//! the index is lazy and never parses what it does not have to:
//!
//! 1. the file list comes from the shared walk ([`crate::tools::walk`]), so ignore rules
//!    are exactly those of list_files, and is reused only while the `stat` of every
//!    directory and ignore file it depends on is unchanged (`tree.rs`);
//! 2. a file is read once, and a Bloom filter of its identifiers is kept
//!    ([`prefilter`]); a lookup parses only files that contain the name;
//! 3. a parsed file's definitions are kept ([`extract`]), so a file is parsed at most once
//!    per content version;
//! 4. files are visited in path order on a few threads, and the visit stops once one
//!    definition more than the caller's limit is known: output is sorted by path and
//!    capped, so later files cannot change it.
//!
//! Freshness is checked on every lookup and never traded for speed (`cache.rs`): new and
//! removed files are found through directory stamps (or a new walk), every visited file
//! is `stat`ed, and a file whose stamp changed is read again. A file indexed within two seconds of its
//! modification time could change again without its stamp changing on a coarse clock,
//! so its content hash is checked too. Nothing is written anywhere.

mod cache;
pub(crate) mod extract;
mod index;
pub(crate) mod lang;
pub(crate) mod prefilter;
mod tree;

use std::cmp::Ordering;

pub use index::{LookupStats, SymbolIndex};

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
    /// How many Go and Rust files the project has (whether or not they were visited).
    pub files: usize,
    /// Files that were listed but could not be read (permissions, a symlink swapped in).
    pub unreadable: usize,
}

/// Why a lookup failed.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum SymbolError {
    /// The name was empty or only whitespace.
    #[error("the symbol is empty; give one identifier, such as `NewReader`")]
    EmptyName,
    /// A qualified name such as `io.Reader` or `fmt::Display`.
    #[error("`{given}` is a qualified name; find_symbol takes one identifier, so ask for `{last}`")]
    Qualified {
        /// The name as given.
        given: String,
        /// Its last segment.
        last: String,
    },
    /// Anything else that cannot be an identifier.
    #[error("`{0}` is not an identifier; give one Go or Rust name such as `NewReader`")]
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
            SymbolError::Qualified { .. } | SymbolError::NotAnIdentifier(_) => {
                ToolError::Refused(error.to_string())
            }
            SymbolError::Grammar { .. } | SymbolError::Query { .. } => {
                ToolError::Fault(error.to_string())
            }
        }
    }
}

/// The longest name accepted; longer input is not a real identifier.
const MAX_NAME_BYTES: usize = 256;

/// Turns the name a model or person typed into the identifier to look up: trimmed,
/// without a Rust `r#`, and checked to be one identifier.
pub(crate) fn normalize_name(raw: &str) -> Result<String, SymbolError> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(SymbolError::EmptyName);
    }
    let name = trimmed.strip_prefix("r#").unwrap_or(trimmed);
    let is_ident_char = |c: char| c == '_' || c.is_alphanumeric();
    let starts_well = name
        .chars()
        .next()
        .is_some_and(|c| c == '_' || c.is_alphabetic());
    if starts_well && name.len() <= MAX_NAME_BYTES && name.chars().all(is_ident_char) {
        return Ok(name.to_owned());
    }
    let last = trimmed
        .rsplit(['.', ':'])
        .next()
        .map(|s| s.trim_end_matches(['(', ')']))
        .unwrap_or("");
    let qualified = trimmed.contains(['.', ':'])
        && last.len() <= MAX_NAME_BYTES
        && last
            .chars()
            .next()
            .is_some_and(|c| c == '_' || c.is_alphabetic())
        && last.chars().all(is_ident_char);
    if qualified {
        Err(SymbolError::Qualified {
            given: trimmed.to_owned(),
            last: last.to_owned(),
        })
    } else {
        Err(SymbolError::NotAnIdentifier(
            trimmed.chars().take(80).collect(),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_normalised_or_refused() {
        assert_eq!(normalize_name(" NewReader\n"), Ok("NewReader".to_owned()));
        assert_eq!(normalize_name("r#match"), Ok("match".to_owned()));
        assert_eq!(normalize_name("_x1"), Ok("_x1".to_owned()));
        assert_eq!(normalize_name("Größe"), Ok("Größe".to_owned()));
        assert_eq!(normalize_name(" \t"), Err(SymbolError::EmptyName));
        assert_eq!(
            normalize_name("io.Reader"),
            Err(SymbolError::Qualified {
                given: "io.Reader".to_owned(),
                last: "Reader".to_owned()
            })
        );
        assert!(matches!(
            normalize_name("std::fmt::Display"),
            Err(SymbolError::Qualified { last, .. }) if last == "Display"
        ));
        assert!(matches!(
            normalize_name("a b"),
            Err(SymbolError::NotAnIdentifier(_))
        ));
        assert!(matches!(
            normalize_name("2x"),
            Err(SymbolError::NotAnIdentifier(_))
        ));
        assert!(matches!(
            normalize_name(&"x".repeat(300)),
            Err(SymbolError::NotAnIdentifier(_))
        ));
    }

    #[test]
    fn definitions_sort_like_the_walk() {
        let def = |path: &str, line| Definition {
            path: path.to_owned(),
            line,
            name: "X".to_owned(),
            kind: "func",
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
