//! The languages find_symbol understands, and the compiled definition query of each.
//!
//! A language is chosen by file extension alone (`.go`, `.rs`); every other file is
//! skipped. The queries live in `grammars/*.scm` so they can be read and tried on their
//! own; each is compiled once per process, the first time it is needed, and shared by
//! every thread (a [`Query`] is immutable once built).
//!
//! Query captures follow one convention: `@name` is the defined identifier and
//! `@definition.<kind>` the construct, where `<kind>` is a Universal Ctags kind name.
//! Compiling a query also checks that every kind it uses is in [`KINDS`], so a typo in a
//! `.scm` file fails the first lookup loudly instead of printing a made-up kind.

use std::sync::OnceLock;

use tree_sitter::{Language, Query};

use super::SymbolError;

/// Every kind name a query may use, as Universal Ctags spells it (plus `constant` and
/// `union` for the Rust items ctags does not tag). A definition stores an index into
/// this table.
pub(crate) const KINDS: &[&str] = &[
    // Go
    "package",
    "func",
    "struct",
    "interface",
    "type",
    "talias",
    "const",
    "var",
    "member",
    "anonMember",
    "methodSpec",
    "packageName",
    // Rust (struct and interface are shared with Go above)
    "method",
    "function",
    "module",
    "enum",
    "union",
    "enumerator",
    "field",
    "typedef",
    "implementation",
    "macro",
    "variable",
    "constant",
];

/// A source language with a definitions query.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Lang {
    /// Go (`.go`).
    Go,
    /// Rust (`.rs`).
    Rust,
}

impl Lang {
    /// Every supported language.
    pub(crate) const ALL: [Lang; 2] = [Lang::Go, Lang::Rust];

    /// The language of a file, from its extension; `None` for files find_symbol skips.
    pub(crate) fn of_path(path: &str) -> Option<Lang> {
        let (_, extension) = path.rsplit_once('.')?;
        match extension {
            "go" => Some(Lang::Go),
            "rs" => Some(Lang::Rust),
            _ => None,
        }
    }

    /// The language's name, for messages.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Lang::Go => "Go",
            Lang::Rust => "Rust",
        }
    }

    /// The tree-sitter grammar.
    pub(crate) fn language(self) -> Language {
        match self {
            Lang::Go => tree_sitter_go::LANGUAGE.into(),
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    /// The definitions query source.
    pub(crate) fn query_source(self) -> &'static str {
        match self {
            Lang::Go => include_str!("../../../grammars/go.scm"),
            Lang::Rust => include_str!("../../../grammars/rust.scm"),
        }
    }

    /// How deep in the tree a pattern may start. Go definitions that ctags reports all
    /// start within five levels of the root (source_file → type_declaration → type_spec →
    /// struct_type → field_declaration_list → field_declaration), so the cursor can skip
    /// function bodies, about a fifth of the query time. Rust items nest inside functions,
    /// modules and impls at any depth, and ctags tags nested functions, so no limit.
    fn max_start_depth(self) -> Option<u32> {
        match self {
            Lang::Go => Some(5),
            Lang::Rust => None,
        }
    }

    /// The compiled query, built on first use.
    pub(crate) fn definitions(self) -> Result<&'static Definitions, SymbolError> {
        static GO: OnceLock<Result<Definitions, SymbolError>> = OnceLock::new();
        static RUST: OnceLock<Result<Definitions, SymbolError>> = OnceLock::new();
        let cell = match self {
            Lang::Go => &GO,
            Lang::Rust => &RUST,
        };
        cell.get_or_init(|| Definitions::compile(self))
            .as_ref()
            .map_err(Clone::clone)
    }
}

/// A compiled definitions query and what its captures mean.
#[derive(Debug)]
pub(crate) struct Definitions {
    /// The grammar.
    pub(crate) language: Language,
    /// The query.
    pub(crate) query: Query,
    /// Index of the `@name` capture.
    pub(crate) name_capture: u32,
    /// For each capture index, the index into [`KINDS`] of a `@definition.<kind>`
    /// capture; `None` for `@name`.
    pub(crate) capture_kinds: Vec<Option<u8>>,
    /// How deep in the tree a pattern may start (`None`: anywhere).
    pub(crate) max_start_depth: Option<u32>,
}

impl Definitions {
    fn compile(lang: Lang) -> Result<Definitions, SymbolError> {
        let bad = |message: String| SymbolError::Query {
            lang: lang.name(),
            message,
        };
        let language = lang.language();
        let query = Query::new(&language, lang.query_source()).map_err(|e| bad(e.to_string()))?;
        let mut name_capture = None;
        let mut capture_kinds = Vec::with_capacity(query.capture_names().len());
        for (index, capture) in query.capture_names().iter().enumerate() {
            if *capture == "name" {
                name_capture = u32::try_from(index).ok();
                capture_kinds.push(None);
                continue;
            }
            let kind = capture
                .strip_prefix("definition.")
                .and_then(|kind| KINDS.iter().position(|known| *known == kind))
                .and_then(|kind| u8::try_from(kind).ok())
                .ok_or_else(|| {
                    bad(format!(
                        "capture @{capture} is neither @name nor @definition.<a kind in KINDS>"
                    ))
                })?;
            capture_kinds.push(Some(kind));
        }
        let name_capture = name_capture.ok_or_else(|| bad("no @name capture".to_owned()))?;
        Ok(Definitions {
            language,
            query,
            name_capture,
            capture_kinds,
            max_start_depth: lang.max_start_depth(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_grammar_loads_and_every_query_compiles() {
        for lang in Lang::ALL {
            let mut parser = tree_sitter::Parser::new();
            // Fails at run time when the grammar's ABI is outside the runtime's range.
            assert!(
                parser.set_language(&lang.language()).is_ok(),
                "{} grammar does not load",
                lang.name()
            );
            let definitions = lang.definitions();
            assert!(definitions.is_ok(), "{definitions:?}");
        }
    }

    #[test]
    fn every_pattern_has_a_name_and_a_kind() {
        for lang in Lang::ALL {
            let Ok(defs) = lang.definitions() else {
                panic!("{} query does not compile", lang.name());
            };
            assert!(defs.capture_kinds.iter().any(Option::is_some));
            assert_eq!(
                defs.capture_kinds.iter().filter(|k| k.is_none()).count(),
                1,
                "exactly one @name capture"
            );
        }
    }

    #[test]
    fn languages_by_extension() {
        assert_eq!(Lang::of_path("a/b.go"), Some(Lang::Go));
        assert_eq!(Lang::of_path("src/lib.rs"), Some(Lang::Rust));
        assert_eq!(Lang::of_path("x.py"), None);
        assert_eq!(Lang::of_path("Makefile"), None);
        assert_eq!(Lang::of_path("a.go/README"), None);
        assert_eq!(Lang::of_path("x.GO"), None);
    }
}
