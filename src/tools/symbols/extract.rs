//! Parsing one file and running its definitions query: bytes in, [`FileDefs`] out.
//!
//! An [`Extractor`] owns the mutable tree-sitter state (a parser per language and one
//! query cursor), so each worker thread has its own and nothing is locked while parsing.
//!
//! Two rules from tree-sitter's own tagging crate apply here:
//!
//! - each name node yields at most one definition; when several patterns capture it,
//!   the one written first in the query wins (so "function inside an impl" beats
//!   "function");
//! - Rust raw identifiers are stored without their `r#`, as ctags reports them.
//!
//! A `@name` capture is normally the identifier itself. When it is a whole type (the
//! self type of a Rust impl block), `principal_name` reduces it to the one identifier
//! ctags would name it by. Kinds listed in `KINDS_AT_ITEM_LINE` report the line where
//! the construct starts rather than the line of the name, as ctags does for impl blocks
//! whose header spans several lines.

use std::collections::HashMap;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, Parser, QueryCursor};

use super::SymbolError;
use super::lang::{KINDS, Lang};

/// Kinds whose line is the line of the whole construct, not of its name.
const KINDS_AT_ITEM_LINE: &[&str] = &["implementation"];

/// The definitions of one file, compactly: all names in one string.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FileDefs {
    names: String,
    defs: Box<[RawDef]>,
}

/// One definition inside [`FileDefs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawDef {
    /// Byte range of the name in `FileDefs::names`.
    start: u32,
    end: u32,
    /// 1-based line of the name.
    line: u32,
    /// Index into [`KINDS`].
    kind: u8,
}

/// A definition as read back out of [`FileDefs`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Def<'a> {
    /// The defined name (without `r#`).
    pub name: &'a str,
    /// 1-based line of the name.
    pub line: usize,
    /// Universal Ctags kind name.
    pub kind: &'static str,
}

impl FileDefs {
    /// Every definition, in line order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Def<'_>> + '_ {
        self.defs.iter().map(|raw| Def {
            name: self
                .names
                .get(raw.start as usize..raw.end as usize)
                .unwrap_or(""),
            line: raw.line as usize,
            kind: KINDS.get(usize::from(raw.kind)).copied().unwrap_or("?"),
        })
    }

    /// The definitions named exactly `name`, in line order.
    pub(crate) fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Def<'a>> + 'a {
        self.iter().filter(move |def| def.name == name)
    }
}

/// Parses files and extracts their definitions. One per thread.
pub(crate) struct Extractor {
    parsers: HashMap<Lang, Parser>,
    cursor: QueryCursor,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extractor").finish_non_exhaustive()
    }
}

impl Default for Extractor {
    fn default() -> Self {
        Extractor::new()
    }
}

/// A captured name before deduplication.
struct Candidate {
    start_byte: usize,
    end_byte: usize,
    pattern: usize,
    line: u32,
    kind: u8,
}

impl Extractor {
    /// An extractor with no parser created yet (they are made on first use).
    pub(crate) fn new() -> Extractor {
        Extractor {
            parsers: HashMap::new(),
            cursor: QueryCursor::new(),
        }
    }

    /// Parses `source` as `lang` and returns its definitions.
    pub(crate) fn extract(&mut self, lang: Lang, source: &[u8]) -> Result<FileDefs, SymbolError> {
        let query = lang.definitions()?;
        let parser = match self.parsers.entry(lang) {
            std::collections::hash_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let mut parser = Parser::new();
                parser
                    .set_language(&query.language)
                    .map_err(|e| SymbolError::Grammar {
                        lang: lang.name(),
                        message: e.to_string(),
                    })?;
                slot.insert(parser)
            }
        };
        // `parse` gives up only when cancelled or without a language; neither applies.
        let Some(tree) = parser.parse(source, None) else {
            return Ok(FileDefs::default());
        };

        self.cursor.set_max_start_depth(query.max_start_depth);
        let mut candidates = Vec::new();
        let mut matches = self.cursor.matches(&query.query, tree.root_node(), source);
        while let Some(found) = matches.next() {
            let mut name = None;
            let mut item = None;
            for capture in found.captures() {
                match query.capture_kinds.get(capture.index as usize) {
                    Some(Some(kind)) => item = Some((capture.node, *kind)),
                    _ if capture.index == query.name_capture => name = Some(capture.node),
                    _ => {}
                }
            }
            let (Some(name), Some((item, kind))) = (name, item) else {
                continue;
            };
            let Some(node) = principal_name(name) else {
                continue;
            };
            let at_item = KINDS
                .get(usize::from(kind))
                .is_some_and(|k| KINDS_AT_ITEM_LINE.contains(k));
            let row = if at_item { item } else { node }.start_position().row;
            candidates.push(Candidate {
                start_byte: node.start_byte(),
                end_byte: node.end_byte(),
                pattern: found.pattern_index,
                line: u32::try_from(row.saturating_add(1)).unwrap_or(u32::MAX),
                kind,
            });
        }
        Ok(collect(source, candidates))
    }
}

/// The identifier a captured name node stands for: the node itself when it is a leaf,
/// else the identifier ctags would pick out of a type. `&'a T`, `*const T`, `T<U>`,
/// `a::T` and `[T; 4]` name `T`; a tuple and `dyn A + B` are named by their last part,
/// as ctags names them. `None` when there is no identifier (`()`).
fn principal_name(node: Node<'_>) -> Option<Node<'_>> {
    let mut node = node;
    // Types nest only as deep as the source does; the bound just keeps this a loop.
    for _ in 0..64 {
        if node.named_child_count() == 0 {
            return matches!(
                node.kind(),
                "identifier"
                    | "type_identifier"
                    | "field_identifier"
                    | "primitive_type"
                    | "package_identifier"
            )
            .then_some(node);
        }
        let next = match node.kind() {
            "scoped_type_identifier" | "scoped_identifier" => node.child_by_field_name("name"),
            "generic_type" | "reference_type" | "pointer_type" => node.child_by_field_name("type"),
            "array_type" => node.child_by_field_name("element"),
            "dynamic_type" | "abstract_type" => node.child_by_field_name("trait"),
            "tuple_type" | "bounded_type" => {
                let last = node.named_child_count().checked_sub(1)?;
                node.named_child(u32::try_from(last).ok()?)
            }
            _ => None,
        };
        node = next?;
    }
    None
}

/// Keeps one definition per name node (the earliest pattern's), in source order.
fn collect(source: &[u8], mut candidates: Vec<Candidate>) -> FileDefs {
    candidates.sort_unstable_by_key(|c| (c.start_byte, c.end_byte, c.pattern));
    candidates.dedup_by_key(|c| (c.start_byte, c.end_byte));
    let mut names = String::new();
    let mut defs = Vec::with_capacity(candidates.len());
    for candidate in candidates {
        let Some(bytes) = source.get(candidate.start_byte..candidate.end_byte) else {
            continue;
        };
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        let text = text.strip_prefix("r#").unwrap_or(text);
        if text.is_empty() {
            continue;
        }
        let (Ok(start), Ok(end)) = (
            u32::try_from(names.len()),
            u32::try_from(names.len() + text.len()),
        ) else {
            break;
        };
        names.push_str(text);
        defs.push(RawDef {
            start,
            end,
            line: candidate.line,
            kind: candidate.kind,
        });
    }
    FileDefs {
        names,
        defs: defs.into_boxed_slice(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn defs(lang: Lang, source: &str) -> Vec<(String, usize, &'static str)> {
        let mut extractor = Extractor::new();
        match extractor.extract(lang, source.as_bytes()) {
            Ok(defs) => defs
                .iter()
                .map(|d| (d.name.to_owned(), d.line, d.kind))
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    fn has(found: &[(String, usize, &str)], name: &str, line: usize, kind: &str) -> bool {
        found
            .iter()
            .any(|(n, l, k)| n == name && *l == line && *k == kind)
    }

    #[test]
    fn go_const_lists_yield_every_name() {
        let found = defs(Lang::Go, "package p\n\nconst A, B = 1, 2\nconst C = A\n");
        assert!(has(&found, "A", 3, "const"), "{found:?}");
        assert!(has(&found, "B", 3, "const"), "{found:?}");
        assert!(has(&found, "C", 4, "const"), "{found:?}");
        // `A` in the value of C is a use, not a definition.
        assert_eq!(found.iter().filter(|d| d.0 == "A").count(), 1, "{found:?}");
    }

    #[test]
    fn go_locals_are_not_definitions() {
        let found = defs(
            Lang::Go,
            "package p\n\nfunc F() {\n\tconst c = 1\n\tvar v = 2\n\ttype T struct{ f int }\n}\n",
        );
        let names: Vec<&str> = found.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(names, ["p", "F"]);
    }

    #[test]
    fn one_definition_per_name_node() {
        let found = defs(
            Lang::Rust,
            "impl S {\n    fn m(&self) {}\n}\ntrait T {\n    fn s(&self);\n    fn d(&self) {}\n}\nfn f() {}\n",
        );
        assert_eq!(
            found,
            [
                ("S".to_owned(), 1, "implementation"),
                ("m".to_owned(), 2, "method"),
                ("T".to_owned(), 4, "interface"),
                ("s".to_owned(), 5, "method"),
                ("d".to_owned(), 6, "method"),
                ("f".to_owned(), 8, "function"),
            ]
        );
    }

    #[test]
    fn impl_blocks_are_named_by_their_self_type_on_the_impl_line() {
        let found = defs(
            Lang::Rust,
            "impl<'a> Tr for &&'a mut a::Point<T> {}\n\
             impl Index<Span> for [u8] {}\n\
             impl<T> P for *const T {}\n\
             impl W for dyn std::io::Write + Send {}\n\
             impl S for (A, &B) {}\n\
             impl U for () {}\n\
             impl<X> Iterator\n    for Multi<X>\n{}\n",
        );
        let impls: Vec<(&str, usize)> = found
            .iter()
            .filter(|d| d.2 == "implementation")
            .map(|d| (d.0.as_str(), d.1))
            .collect();
        assert_eq!(
            impls,
            [
                ("Point", 1),
                ("u8", 2),
                ("T", 3),
                ("Send", 4),
                ("B", 5),
                ("Multi", 7)
            ]
        );
    }

    #[test]
    fn raw_identifiers_lose_their_prefix() {
        let found = defs(Lang::Rust, "pub fn r#match() {}\nstruct r#Type;\n");
        assert!(has(&found, "match", 1, "function"), "{found:?}");
        assert!(has(&found, "Type", 2, "struct"), "{found:?}");
    }

    #[test]
    fn broken_and_empty_sources_do_not_fail() {
        assert!(defs(Lang::Go, "").is_empty());
        assert!(defs(Lang::Rust, "").is_empty());
        let found = defs(Lang::Rust, "fn ok() {}\nfn broken( {\n\x00\x01");
        assert!(has(&found, "ok", 1, "function"), "{found:?}");
    }
}
