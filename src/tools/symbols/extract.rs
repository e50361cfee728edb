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
//! A pattern may say which ancestors a capture must have,
//! `(#has-parent? @definition.variable translation_unit declaration_list)` or
//! `(#has-ancestors? @definition.variable "module" "block _ module")`, which kinds it
//! may be nested in, however deep, up to one (`#inside?`), or what must follow it
//! (`#before-macro-body?`): a match whose node fails is dropped before the
//! earliest pattern wins, exactly as if the query had spelled that structure out (which
//! costs far more to compile; see [`super::lang::NodeTest`]).
//!
//! A pattern may name its definition by more than the captured text: `(#set! suffix
//! "=")` appends `=` (a Ruby `attr_writer :x` defines `x=`, a name not in the source).
//! A name node then yields one definition per suffix, so `attr_accessor :x` gives both
//! `x` and `x=` from two patterns.
//!
//! A `@name` capture is normally the identifier itself. When it is a whole type (the
//! self type of a Rust impl block), `principal_name` reduces it to the one identifier
//! ctags would name it by. Kinds listed in `KINDS_AT_ITEM_LINE` report the line where
//! the construct starts rather than the line of the name, as ctags does for impl blocks
//! whose header spans several lines.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::ControlFlow;

use streaming_iterator::StreamingIterator;
use tree_sitter::{Node, ParseOptions, Parser, QueryCursor, QueryCursorOptions, TreeCursor};

use super::SymbolError;
use super::budget::Budget;
use super::escapes;
use super::lang::{Definitions, KINDS, Lang, QueryPart, ScopeName};

/// Kinds whose line is the line of the whole construct, not of its name.
const KINDS_AT_ITEM_LINE: &[&str] = &["implementation"];

/// How deep in the syntax tree a definition's pattern may start. A definition's scope
/// path is read from the nodes above it, so every level of nesting costs every
/// definition beneath it; 40,000 nested `mod a {` once took 71 s and 3 GB. One level of
/// source nesting is two or three syntax levels (`mod_item`, `declaration_list`), so
/// this is about a hundred nested modules, namespaces or classes, far more than code
/// people write. A file with any syntax deeper (a definition or not: the check is one
/// walk down, not a second query) is marked [`Cut::Depth`], and a lookup that visits it
/// says so.
pub(crate) const MAX_DEPTH: u32 = 256;

/// The most definitions kept from one file (16 bytes each, plus their names): twice the
/// 50,000-key object literal the linear-time tests extract. What follows is not indexed
/// ([`Cut::Definitions`]).
pub(crate) const MAX_DEFINITIONS: usize = 100_000;

/// The longest scope path kept, in bytes. With [`MAX_DEPTH`] it bounds the work per
/// definition; a definition under a longer one is not indexed ([`Cut::Text`]).
pub(crate) const MAX_SCOPE_BYTES: usize = 4096;

/// Files larger than this are not parsed (they are generated tables, not code anyone
/// navigates, and parsing one would take seconds); a lookup names them ([`Cut::Size`]).
pub(crate) const MAX_FILE_BYTES: u64 = 8 * 1024 * 1024;

/// The most bytes of names and distinct scope paths kept from one file (twice the
/// largest file indexed, [`MAX_FILE_BYTES`]). Past it, definitions are not
/// indexed ([`Cut::Text`]).
pub(crate) const MAX_TEXT_BYTES: usize = 16 * 1024 * 1024;

/// Query matches read before giving up on a file: every definition is one match or a
/// few (several patterns may capture one name).
const MAX_CANDIDATES: usize = 4 * MAX_DEFINITIONS;

/// How often (in definitions) the walk over a file's definitions asks its budget.
const CHECK_EVERY: usize = 256;

/// Why a file's definitions are only part of what it holds. A lookup that reads such a
/// file says so, so a definition the bounds left out is never missed silently.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// Something is nested deeper than [`MAX_DEPTH`].
    Depth,
    /// It holds more than [`MAX_DEFINITIONS`] definitions.
    Definitions,
    /// A scope path passed [`MAX_SCOPE_BYTES`], or names and scopes [`MAX_TEXT_BYTES`].
    Text,
    /// The file is larger than [`MAX_FILE_BYTES`] and is not parsed at all.
    Size,
}

impl Cut {
    /// What was left out, for the model.
    pub(crate) fn describe(self) -> String {
        match self {
            Cut::Depth => format!(
                "definitions nested more than {MAX_DEPTH} syntax levels deep are not indexed"
            ),
            Cut::Definitions => {
                format!("only its first {MAX_DEFINITIONS} definitions are indexed")
            }
            Cut::Size => format!(
                "it is larger than {} MiB, and files that large are not parsed",
                MAX_FILE_BYTES / (1024 * 1024)
            ),
            Cut::Text => format!(
                "definitions under a scope longer than {MAX_SCOPE_BYTES} bytes, or past {} MiB of names, are not indexed",
                MAX_TEXT_BYTES >> 20
            ),
        }
    }
}

/// The definitions of one file, compactly: all names and scope paths in one string, each
/// distinct scope path stored once.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub(crate) struct FileDefs {
    names: String,
    /// Byte ranges in `names` of the file's distinct scope paths (segments joined by the
    /// language's separator). [`RawDef::scope`] is an index into this plus one.
    scopes: Box<[(u32, u32)]>,
    defs: Box<[RawDef]>,
    /// Why some of the file's definitions are not here, if any are not.
    cut: Option<Cut>,
}

impl FileDefs {
    /// No definitions, for a file too large to parse: a lookup that may find the name
    /// there says the file was not searched, rather than nothing.
    pub(crate) fn too_large() -> FileDefs {
        FileDefs {
            cut: Some(Cut::Size),
            ..FileDefs::default()
        }
    }
}

/// One definition inside [`FileDefs`]: 16 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct RawDef {
    /// Start of the name in `FileDefs::names`.
    start: u32,
    /// 1-based line of the name.
    line: u32,
    /// One plus the index of the scope path in `FileDefs::scopes`; 0 for a top-level
    /// definition.
    scope: u32,
    /// Length of the name in bytes.
    len: u16,
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
    /// What it belongs to, ctags' way (`Context`, `outer::inner::S`); empty at top level.
    pub scope: &'a str,
}

impl FileDefs {
    /// Every definition, in line order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = Def<'_>> + '_ {
        self.defs.iter().map(|raw| {
            let start = raw.start as usize;
            let scope = match raw.scope.checked_sub(1) {
                Some(index) => self
                    .scopes
                    .get(index as usize)
                    .and_then(|&(from, to)| self.names.get(from as usize..to as usize)),
                None => None,
            };
            Def {
                name: self
                    .names
                    .get(start..start + usize::from(raw.len))
                    .unwrap_or(""),
                line: raw.line as usize,
                kind: KINDS.get(usize::from(raw.kind)).copied().unwrap_or("?"),
                scope: scope.unwrap_or(""),
            }
        })
    }

    /// Why some of the file's definitions are missing (`None`: every one is here).
    pub(crate) fn cut(&self) -> Option<Cut> {
        self.cut
    }

    /// Heap bytes held: names and scope paths, their ranges, and 16 bytes per definition.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.names.capacity()
            + std::mem::size_of_val(&*self.scopes)
            + std::mem::size_of_val(&*self.defs)
    }

    /// The definitions named `name` (a C++ operator however it is spaced:
    /// [`super::same_name`]), in line order.
    pub(crate) fn named<'a>(&'a self, name: &'a str) -> impl Iterator<Item = Def<'a>> + 'a {
        self.iter()
            .filter(move |def| super::same_name(def.name, name))
    }

    /// The namespace of the whole file (Go's or Java's package, a C# file-scoped
    /// namespace): the first top-level definition of `kind` that scopes nothing in the
    /// file. A block namespace (`namespace A { class X }`) scopes what it holds, so it is
    /// already in those definitions' scope paths and is not the file's (an empty one,
    /// which scopes nothing, is still taken for the file's: a rare false match).
    pub(crate) fn file_scope(&self, kind: &str) -> Option<&str> {
        let opens = |name: &str| {
            self.iter().any(|def| {
                def.scope
                    .strip_prefix(name)
                    .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', ':']))
            })
        };
        self.iter()
            .find(|def| def.kind == kind && def.scope.is_empty() && !opens(def.name))
            .map(|def| def.name)
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
struct Candidate<'tree> {
    node: Node<'tree>,
    /// The node's byte range, read once: the sort compares it many times.
    range: (usize, usize),
    /// Text the pattern appends to the name (its `suffix` property), usually empty.
    suffix: &'static str,
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

    /// Parses `source` as `lang` and returns its definitions, however long that takes.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn extract(&mut self, lang: Lang, source: &[u8]) -> Result<FileDefs, SymbolError> {
        self.extract_within(lang, source, &Budget::unlimited())
            .map(Option::unwrap_or_default)
    }

    /// Parses `source` as `lang` and returns its definitions, or `None` when `budget`
    /// halted it first (the parse, the query and the walk over the definitions each ask
    /// it as they go).
    pub(crate) fn extract_within(
        &mut self,
        lang: Lang,
        source: &[u8],
        budget: &Budget<'_>,
    ) -> Result<Option<FileDefs>, SymbolError> {
        let parser = match self.parsers.entry(lang) {
            std::collections::hash_map::Entry::Occupied(slot) => slot.into_mut(),
            std::collections::hash_map::Entry::Vacant(slot) => {
                let mut parser = Parser::new();
                parser.set_language(&(lang.spec().grammar)()).map_err(|e| {
                    SymbolError::Grammar {
                        lang: lang.name(),
                        message: e.to_string(),
                    }
                })?;
                slot.insert(parser)
            }
        };
        let mut tick = budget.ticker();
        let mut progress = |_: &tree_sitter::ParseState| {
            if tick() {
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        // What is parsed and queried: `source`, or a same-length copy the grammar reads
        // as the language means it (`respell.rs`). Names and scopes are read from
        // `source` (`collect`), so what is shown is what the file says.
        let respelled = lang.spec().respell.apply(source);
        let parsed = respelled.as_deref().unwrap_or(source);
        let len = parsed.len();
        // `parse` gives up only when the budget halts it (or without a language, which
        // cannot happen here).
        let tree = parser.parse_with_options(
            &mut |at, _| parsed.get(at..len).unwrap_or_default(),
            None,
            Some(ParseOptions::new().progress_callback(&mut progress)),
        );
        let Some(tree) = tree else {
            // A halted parse leaves state behind that the next parse would resume.
            parser.reset();
            return Ok(None);
        };
        // Only now the query: while it is still compiling on its own thread (the first
        // files of a fresh process), the parse above ran beside it instead of after it.
        let query = lang.definitions()?;

        let depth = query
            .max_start_depth
            .map_or(MAX_DEPTH, |d| d.min(MAX_DEPTH));
        self.cursor.set_max_start_depth(Some(depth));
        let mut cut =
            (depth == MAX_DEPTH && deeper_than(tree.root_node(), MAX_DEPTH)).then_some(Cut::Depth);
        let mut candidates = Vec::new();
        let mut tick = budget.ticker();
        // Remembered, not asked again afterwards: a stop that has since been lifted (a
        // warm-up's waiting lookup) must not let a cut-short match list pass as whole.
        let mut halted = false;
        let mut progress = |_: &tree_sitter::QueryCursorState| {
            if tick() {
                halted = true;
                ControlFlow::Break(())
            } else {
                ControlFlow::Continue(())
            }
        };
        'parts: for part in &query.parts {
            let options = QueryCursorOptions::new().progress_callback(&mut progress);
            let mut matches =
                self.cursor
                    .matches_with_options(&part.query, tree.root_node(), parsed, options);
            let mut read = 0usize;
            while let Some(found) = matches.next() {
                read += 1;
                if read.is_multiple_of(CHECK_EVERY) && budget.check().is_some() {
                    return Ok(None);
                }
                if let Some(candidate) = candidate(part, found, parsed) {
                    if candidates.len() >= MAX_CANDIDATES {
                        cut = Some(Cut::Definitions);
                        break 'parts;
                    }
                    candidates.push(candidate);
                }
            }
        }
        // The cursor's callback ends the matches as if there were no more.
        if halted {
            return Ok(None);
        }
        let Some(mut defs) = collect(source, tree.root_node(), query, candidates, budget) else {
            return Ok(None);
        };
        defs.cut = defs.cut.or(cut);
        Ok(Some(defs))
    }
}

/// Whether any node lies more than `limit` levels below `root`: one walk that stops at
/// the first such node, so a deeply nested file costs only the way down to it.
fn deeper_than(root: Node<'_>, limit: u32) -> bool {
    let mut cursor = root.walk();
    let mut depth = 0u32;
    loop {
        if cursor.goto_first_child() {
            depth += 1;
            if depth > limit {
                return true;
            }
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return false;
            }
            depth -= 1;
        }
    }
}

/// The definition one match of `part` names, if its node tests hold.
fn candidate<'tree>(
    part: &'static QueryPart,
    found: &tree_sitter::QueryMatch<'_, 'tree>,
    source: &[u8],
) -> Option<Candidate<'tree>> {
    let mut name = None;
    let mut item = None;
    for capture in found.captures() {
        match part.capture_kinds.get(capture.index as usize) {
            Some(Some(kind)) => item = Some((capture.node, *kind)),
            _ if capture.index == part.name_capture => name = Some(capture.node),
            _ => {}
        }
    }
    let (name, (item, kind)) = (name?, item?);
    let tests_hold = part
        .node_tests
        .get(found.pattern_index)
        .is_none_or(|tests| {
            tests.iter().all(|test| {
                found
                    .captures()
                    .iter()
                    .filter(|capture| capture.index == test.capture)
                    .all(|capture| test.holds(capture.node, source))
            })
        });
    if !tests_hold {
        return None;
    }
    let node = principal_name(name)?;
    let properties = part.query.property_settings(found.pattern_index);
    let suffix = properties
        .iter()
        .find(|property| &*property.key == "suffix")
        .and_then(|property| property.value.as_deref())
        .unwrap_or("");
    // A pattern whose name can sit lines below its construct's start (a PHP `define()`
    // named by a heredoc) asks for the construct's line, where ctags puts it, with
    // `(#set! line "construct")`.
    let at_item = KINDS
        .get(usize::from(kind))
        .is_some_and(|k| KINDS_AT_ITEM_LINE.contains(k))
        || properties.iter().any(|property| {
            &*property.key == "line" && property.value.as_deref() == Some("construct")
        });
    let row = if at_item { item } else { node }.start_position().row;
    Some(Candidate {
        node,
        range: (node.start_byte(), node.end_byte()),
        suffix,
        pattern: part.first_pattern + found.pattern_index,
        line: u32::try_from(row.saturating_add(1)).unwrap_or(u32::MAX),
        kind,
    })
}

/// The identifier a captured name node stands for: the node itself when it is a leaf,
/// else the identifier ctags would pick out of a type. `&'a T`, `*const T`, `T<U>`,
/// `a::T` and `[T; 4]` name `T`; a tuple and `dyn A + B` are named by their last part,
/// as ctags names them. A Java package and a C# namespace keep their whole dotted name;
/// a C# `#define`'s name is its `preproc_arg`. `None` when there is
/// no identifier (`()`).
fn principal_name(node: Node<'_>) -> Option<Node<'_>> {
    // A Java or Kotlin package and a C# namespace are named by their whole dotted name,
    // as ctags names them (`java.util.concurrent`), not by their last part. So is a
    // TypeScript `namespace a.b`, which also scopes its members `a.b`.
    if matches!(
        node.kind(),
        "scoped_identifier" | "qualified_name" | "qualified_identifier" | "nested_identifier"
    ) && node.parent().is_some_and(|parent| {
        matches!(
            parent.kind(),
            "package_declaration"
                | "namespace_declaration"
                | "file_scoped_namespace_declaration"
                | "package_header"
                | "internal_module"
        )
    }) {
        return Some(node);
    }
    let mut node = node;
    // Types nest only as deep as the source does; the bound just keeps this a loop.
    for _ in 0..64 {
        // Names that are more than one identifier: C++ `~Stack` and `operator==`, a Ruby
        // setter's `x=`, a PHP namespace's `App\Models`, kept whole as ctags names them.
        if matches!(
            node.kind(),
            "destructor_name" | "operator_name" | "setter" | "namespace_name" | "operator_cast"
        ) {
            return Some(node);
        }
        if node.named_child_count() == 0 {
            return matches!(
                node.kind(),
                "identifier"
                    | "type_identifier"
                    | "field_identifier"
                    | "primitive_type"
                    | "package_identifier"
                    | "preproc_arg"
                    // JavaScript and TypeScript keys, members and quoted names.
                    | "property_identifier"
                    | "private_property_identifier"
                    | "shorthand_property_identifier"
                    | "shorthand_property_identifier_pattern"
                    | "string_fragment"
                    | "number"
                    | "namespace_identifier"
                    // Ruby: `Foo`, `:sym`, `def ==`, `alias $new $old`, `"text"`.
                    | "constant"
                    | "simple_symbol"
                    | "operator"
                    | "global_variable"
                    | "string_content"
                    // PHP; a nowdoc's text names a `define()` (`define(<<<'K'`).
                    | "name"
                    | "nowdoc_string"
                    // Shell: a function's name, or an alias's `name=value`.
                    | "word"
            )
            .then_some(node);
        }
        let next = match node.kind() {
            "scoped_type_identifier" | "scoped_identifier" | "scope_resolution" => {
                node.child_by_field_name("name")
            }
            "generic_type" | "reference_type" => node.child_by_field_name("type"),
            // Rust names the pointee `type`; Go's `*T` has no field names.
            "pointer_type" => node
                .child_by_field_name("type")
                .or_else(|| node.named_child(0)),
            "array_type" => node.child_by_field_name("element"),
            // JavaScript: `'key'` is named by its text, `['key']` by its string (ctags
            // names `[ expr ]` by its source text, which is no name), and a member
            // `X.y` (assigned to) by its property, as ctags names them.
            // A key spelled with escapes (`'\u00e9'`) is the whole string, decoded
            // by [`definition_name`].
            "string" if has_escapes(node) => return Some(node),
            "string" => node.named_child(0),
            "computed_property_name" => node.named_child(0).filter(|n| n.kind() == "string"),
            "member_expression" => node.child_by_field_name("property"),
            // C declarators wrap the name: `*p`, `a[4]`, `f(void)`, `x = 1`, `(*fp)`.
            "pointer_declarator"
            | "array_declarator"
            | "function_declarator"
            | "init_declarator" => node.child_by_field_name("declarator"),
            "attributed_declarator" => node.named_child(0),
            "parenthesized_declarator" => parenthesized(node),
            // C++: `&r`, `a::b::name`, `Box<T>`, `get<T>`.
            "reference_declarator" => node.named_child(0),
            "qualified_identifier" | "template_type" | "template_function" => {
                node.child_by_field_name("name")
            }
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

/// The declarator inside a C parenthesized declarator: `(*fp)`, and `(__stdcall *fp)`,
/// `(WINAPI *fp)` or `(WINAPI f)`, where a calling convention, or a macro standing for
/// one (which tree-sitter reads as a type, or as an ERROR of one word), comes before
/// it.
/// Anything else before it is a parse that macros broke, which names nothing.
fn parenthesized(node: Node<'_>) -> Option<Node<'_>> {
    let mut cursor = node.walk();
    let parts: Vec<Node<'_>> = node
        .named_children(&mut cursor)
        .filter(|child| child.kind() != "comment")
        .collect();
    let one_word = |part: Node<'_>| {
        matches!(part.kind(), "identifier" | "type_identifier") && part.named_child_count() == 0
    };
    match parts.as_slice() {
        [] => None,
        [only] => Some(*only),
        // Only a function's declarator (`(WINAPI *fp)(int)`): `typedef M(a, b) t;`,
        // a macro call tree-sitter also reads as parentheses, names nothing inside.
        [convention, declarator]
            if node
                .parent()
                .is_some_and(|parent| parent.kind() == "function_declarator") =>
        {
            let convention_like = matches!(convention.kind(), "ms_call_modifier")
                || one_word(*convention)
                || (convention.kind() == "ERROR"
                    && convention.child_count() == 1
                    && convention.named_child(0).is_some_and(one_word));
            if !convention_like {
                return None;
            }
            // `(WINAPI f)` reads as an ERROR of the macro, then the name.
            if declarator.kind() == "pointer_declarator"
                || (convention.kind() == "ERROR" && one_word(*declarator))
            {
                return Some(*declarator);
            }
            // Or as the macro read as a type, then an ERROR of the name.
            (declarator.kind() == "ERROR" && declarator.named_child_count() == 1)
                .then(|| declarator.named_child(0))
                .flatten()
                .filter(|name| one_word(*name))
        }
        _ => None,
    }
}

/// Whether `node`, a string, is a JavaScript one (fragments and escapes only) with at
/// least one escape: its name is its decoded value, not its first fragment.
fn has_escapes(node: Node<'_>) -> bool {
    let mut cursor = node.walk();
    let mut escapes = false;
    for child in node.named_children(&mut cursor) {
        match child.kind() {
            "escape_sequence" => escapes = true,
            "string_fragment" => {}
            _ => return false,
        }
    }
    escapes
}

/// The identifier node that names a scope node, by its rule.
fn scope_name<'t>(source: &[u8], node: Node<'t>, rule: ScopeName) -> Option<Node<'t>> {
    match rule {
        ScopeName::FieldUnless(field, word) => principal_name(node.child_by_field_name(field)?)
            .filter(|named| source.get(named.byte_range()) != Some(word.as_bytes())),
        ScopeName::Field(field) => principal_name(node.child_by_field_name(field)?),
        ScopeName::TypeIn(field) => principal_name(node.child_by_field_name(field)?),
        ScopeName::FieldOrTypedef(field) => match node.child_by_field_name(field) {
            Some(name) => principal_name(name),
            None => {
                let parent = node.parent()?;
                if parent.kind() != "type_definition" {
                    return None;
                }
                principal_name(parent.child_by_field_name("declarator")?)
            }
        },
        ScopeName::FunctionDefinition => {
            let error = || {
                let mut cursor = node.walk();
                node.children(&mut cursor).find(|c| c.kind() == "ERROR")
            };
            if let Some(class) = node.child_by_field_name("type")
                && matches!(class.kind(), "class_specifier" | "struct_specifier")
                && class.child_by_field_name("body").is_none()
            {
                if let Some(name) = node.child_by_field_name("declarator")
                    && name.kind() == "identifier"
                {
                    return Some(name);
                }
                let first = error()?.named_child(0)?;
                return (first.kind() == "identifier").then_some(first);
            }
            let declarator = node.child_by_field_name("declarator")?;
            if matches!(
                declarator.kind(),
                "function_declarator" | "pointer_declarator" | "reference_declarator"
            ) {
                return principal_name(declarator);
            }
            let error = error()?;
            let mut cursor = error.walk();
            let inner = error
                .named_children(&mut cursor)
                .find(|c| c.kind() == "function_declarator")?;
            principal_name(inner)
        }
        ScopeName::FirstParameterType(field) => {
            let parameters = node.child_by_field_name(field)?;
            let first = parameters.named_child(0)?;
            principal_name(first.child_by_field_name("type")?)
        }
        ScopeName::Member(field) => {
            let left = node.child_by_field_name(field)?;
            match left.kind() {
                "identifier" => Some(left),
                "member_expression"
                    if left
                        .child_by_field_name("object")
                        .is_some_and(|object| object.kind() == "this") =>
                {
                    left.child_by_field_name("property")
                }
                "member_expression" => Some(left),
                _ => None,
            }
        }
        // A path has several names; `ScopeWalk` reads them with `path_segments`.
        ScopeName::Path(_) => None,
    }
}

/// The text a scope node's name adds to a scope path; `None` when the name is the
/// definition's own (a function's own node, an impl's self type). When the name is a
/// member path holding the definition's name (`X.prototype.m` in
/// `X.prototype.m = function`), the part before it is the scope, as ctags has it: `m`
/// belongs to `X`, with `this.` and a final `.prototype` dropped. A path split by
/// spaces or comments names nothing.
fn scope_text<'s>(source: &'s [u8], named: Node<'_>, name: Node<'_>) -> Option<&'s str> {
    if named.byte_range() == name.byte_range() {
        return None;
    }
    let text = if named.start_byte() <= name.start_byte() && name.end_byte() <= named.end_byte() {
        let prefix = source.get(named.start_byte()..name.start_byte())?;
        std::str::from_utf8(prefix).ok()?.trim_end_matches('.')
    } else {
        identifier(source, named)?
    };
    let text = text.strip_prefix("this.").unwrap_or(text);
    let text = text.strip_suffix(".prototype").unwrap_or(text);
    (!text.is_empty() && !text.contains(|c: char| c.is_whitespace() || c == '/')).then_some(text)
}

/// The segments of a Ruby `A::B` path, outermost first. Read in a loop, not by
/// recursion: a path nests as deep as the source makes it.
fn path_segments<'s>(source: &'s [u8], path: Node<'_>) -> Vec<&'s str> {
    let mut chain = vec![path];
    let mut node = path;
    while node.kind() == "scope_resolution"
        && let Some(scope) = node.child_by_field_name("scope")
    {
        chain.push(scope);
        node = scope;
    }
    chain
        .iter()
        .rev()
        .filter_map(|&node| {
            let name = if node.kind() == "scope_resolution" {
                node.child_by_field_name("name")
            } else {
                Some(node)
            };
            identifier(source, principal_name(name?)?)
        })
        .collect()
}

/// The text of an identifier node, without a Rust `r#`, the `#` of a JavaScript private
/// name (ctags names `#count` `count`) or the `:` of a Ruby symbol (`attr_reader :name`
/// defines `name`, as ctags names it).
fn identifier<'s>(source: &'s [u8], node: Node<'_>) -> Option<&'s str> {
    let text = std::str::from_utf8(source.get(node.start_byte()..node.end_byte())?).ok()?;
    if node.kind() == "simple_symbol" {
        return Some(text.strip_prefix(':').unwrap_or(text));
    }
    // A C# conversion operator (`implicit operator byte(Digit d)`) is captured by its
    // keyword and named up to its parameters, `operator byte`, as ctags names it; the
    // keyword's line is the declaration's, whatever attributes come before it.
    if node.kind() == "operator"
        && let Some(declaration) = node
            .parent()
            .filter(|parent| parent.kind() == "conversion_operator_declaration")
    {
        let parameters = declaration.child_by_field_name("parameters")?;
        let name = source.get(node.start_byte()..parameters.start_byte())?;
        return Some(std::str::from_utf8(name).ok()?.trim_end());
    }
    // A shell alias is a word that assigns (`ll='ls -l'` is the word `ll=` and a string):
    // its name is what is before the `=`. A function's name never holds one.
    if node.kind() == "word" {
        return Some(text.split_once('=').map_or(text, |(name, _)| name));
    }
    // A C++ conversion operator (`operator T&() const`) is named without its parameters
    // and qualifiers, `operator T&`, as ctags names it: up to the parameter list, which
    // the abstract declarator holds under any `*` or `&`.
    if node.kind() == "operator_cast" {
        let mut declarator = node.child_by_field_name("declarator")?;
        for _ in 0..8 {
            if let Some(parameters) = declarator.child_by_field_name("parameters") {
                let end = parameters.start_byte().checked_sub(node.start_byte())?;
                return Some(text.get(..end)?.trim_end());
            }
            declarator = declarator
                .child_by_field_name("declarator")
                .or_else(|| declarator.named_child(0))?;
        }
        return None;
    }
    Some(
        text.strip_prefix("r#")
            .or_else(|| text.strip_prefix('#'))
            .unwrap_or(text),
    )
}

/// The name a definition is stored under: its [`identifier`], except that a C++
/// destructor written with a space (`Class:: ~ Class() {}`) is named `~Class`, as
/// ctags names it and as a lookup spells it, a C `#pragma weak name = target` by its
/// `name`, a JavaScript name with escapes by its decoded value, and a PHP constant
/// named by a heredoc without its indentation. `None` when there is no name or an
/// escape cannot be decoded.
fn definition_name<'s>(source: &'s [u8], node: Node<'_>) -> Option<Cow<'s, str>> {
    let text = identifier(source, node)?;
    if node.kind() == "preproc_arg"
        && node
            .parent()
            .is_some_and(|parent| parent.kind() == "preproc_call")
    {
        let rest = text.trim_start().strip_prefix("weak")?.trim_start();
        let end = rest
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        let name = rest.get(..end)?;
        return (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit()))
            .then_some(Cow::Borrowed(name));
    }
    // A PHP `define()` named by a heredoc or nowdoc holds the line's indentation, which
    // PHP 7.3 strips up to the closing marker's: the name is the text without it.
    if matches!(node.kind(), "string_content" | "nowdoc_string")
        && node
            .parent()
            .is_some_and(|parent| matches!(parent.kind(), "heredoc_body" | "nowdoc_body"))
    {
        let name = text.trim();
        return (!name.is_empty()).then_some(Cow::Borrowed(name));
    }
    if node.kind() == "destructor_name" && text.contains(char::is_whitespace) {
        let compact: String = text.chars().filter(|c| !c.is_whitespace()).collect();
        return Some(Cow::Owned(compact));
    }
    // A JavaScript string's or identifier's escapes are decoded (`\u00e9_2` is `é_2`, as
    // ctags names it).
    if node.kind() == "string" {
        return escapes::string_value(text).map(Cow::Owned);
    }
    if matches!(
        node.kind(),
        "identifier"
            | "property_identifier"
            | "private_property_identifier"
            | "shorthand_property_identifier"
            | "shorthand_property_identifier_pattern"
    ) {
        // An identifier of another language that holds a backslash for another reason
        // keeps its text.
        return escapes::identifier(text).or(Some(Cow::Borrowed(text)));
    }
    Some(Cow::Borrowed(text))
}

/// What a scope node on the way down to a definition adds to its scope path.
enum Part<'t, 's> {
    /// Nothing: the node opens no scope, or its name cannot be read.
    Nothing,
    /// The segments of a Ruby `A::B` path, each its own part of the scope path.
    Path(Vec<&'s str>),
    /// The node that names the scope; what it adds depends on the definition
    /// ([`scope_text`]).
    Named(Node<'t>),
}

/// A node on the way down to the current definition, with what it adds to a scope path.
struct Level<'t, 's> {
    node: Node<'t>,
    part: Part<'t, 's>,
}

/// The scope paths of a file's definitions, found in one walk of its tree for all of
/// them: the definitions are asked for in source order (by start byte, then end byte),
/// and the walk goes on from where the last one was found, descending only into nodes
/// that hold the next definition and stepping over the rest, with a stack of the nodes
/// it descended into. Asking for each definition by descending from the root instead
/// scans every level's children again each time: quadratic in the definitions at one
/// level (a generated table, an object literal with thousands of keys).
///
/// The path is the one a descent from the root with [`Node::child_with_descendant`]
/// gives: at each level, the first child that is the definition's name node, or that
/// has children and whose byte range holds the name's; the descent stops at the name,
/// or when a child starts after it or none is left.
struct ScopeWalk<'t, 's, 'q> {
    source: &'s [u8],
    query: &'q Definitions,
    /// At a child of the innermost level's node (of the root when there is no level).
    cursor: TreeCursor<'t>,
    levels: Vec<Level<'t, 's>>,
    /// Whether the root has children; without, nothing has a scope.
    started: bool,
    /// Whether the last descent stopped short of its name node. The cursor then stands
    /// past children that a later name may be in, so that level is scanned again.
    rescan: bool,
}

impl<'t, 's, 'q> ScopeWalk<'t, 's, 'q> {
    fn new(source: &'s [u8], root: Node<'t>, query: &'q Definitions) -> Self {
        let mut cursor = root.walk();
        let started = cursor.goto_first_child();
        ScopeWalk {
            source,
            query,
            cursor,
            levels: Vec::new(),
            started,
            rescan: false,
        }
    }

    /// Writes into `out` the scope path of the definition named by `name`: the names of
    /// the scope nodes on the way down from the root, joined by the language's
    /// separator. A scope named by `name` itself (a function's own node, an impl block's
    /// self type) is the definition, not its scope ([`scope_text`]). Names must come in
    /// order of start byte, then end byte; `name` must not be empty. False (with `out`
    /// cut short) when the path would pass [`MAX_SCOPE_BYTES`].
    fn scope_path(&mut self, name: Node<'t>, out: &mut String) -> bool {
        out.clear();
        if !self.started {
            return true;
        }
        let (start, end) = (name.start_byte(), name.end_byte());
        // Back up to the innermost node on the way down that holds `name` (and is not it).
        let mut popped = false;
        while let Some(level) = self.levels.last() {
            if level.node.id() != name.id()
                && level.node.start_byte() <= start
                && end <= level.node.end_byte()
            {
                break;
            }
            self.levels.pop();
            self.cursor.goto_parent();
            popped = true;
        }
        if self.rescan && !popped {
            self.cursor.goto_parent();
            self.cursor.goto_first_child();
        }
        self.rescan = false;
        loop {
            let node = self.cursor.node();
            if node.start_byte() > start {
                self.rescan = true;
                break;
            }
            if node.id() == name.id() {
                break;
            }
            if end <= node.end_byte() && node.child_count() > 0 {
                let part = self.part(node);
                self.levels.push(Level { node, part });
                self.cursor.goto_first_child();
                continue;
            }
            if !self.cursor.goto_next_sibling() {
                self.rescan = true;
                break;
            }
        }
        let separator = self.query.separator;
        // Checked before each segment is copied: one huge name must not be copied for
        // every definition beneath it.
        let mut push = |text: &str| {
            let sep = if out.is_empty() { "" } else { separator };
            if out.len() + sep.len() + text.len() > MAX_SCOPE_BYTES {
                return false;
            }
            out.push_str(sep);
            out.push_str(text);
            true
        };
        for level in &self.levels {
            let fits = match &level.part {
                Part::Nothing => true,
                Part::Path(segments) => segments.iter().all(|segment| push(segment)),
                Part::Named(named) => scope_text(self.source, *named, name).is_none_or(&mut push),
            };
            if !fits {
                return false;
            }
        }
        true
    }

    /// What `node` adds to the scope paths of the definitions inside it, by the
    /// language's scope rule for its kind.
    fn part(&self, node: Node<'t>) -> Part<'t, 's> {
        let kind = node.kind_id();
        let rule = self
            .query
            .scopes
            .iter()
            .find(|(id, _)| *id == kind)
            .map(|&(_, rule)| rule);
        match rule {
            None => Part::Nothing,
            Some(ScopeName::Path(field)) => match node.child_by_field_name(field) {
                Some(path) => Part::Path(path_segments(self.source, path)),
                None => Part::Nothing,
            },
            Some(rule) => match scope_name(self.source, node, rule) {
                Some(named) => Part::Named(named),
                None => Part::Nothing,
            },
        }
    }
}

/// Keeps one definition per name node and suffix (the earliest pattern's), in source
/// order, with its scope.
fn collect<'t>(
    source: &[u8],
    root: Node<'t>,
    query: &Definitions,
    mut candidates: Vec<Candidate<'t>>,
    budget: &Budget<'_>,
) -> Option<FileDefs> {
    candidates.sort_unstable_by_key(|c| (c.range, c.suffix, c.pattern));
    candidates.dedup_by_key(|c| (c.range, c.suffix));
    let mut cut = None;
    let mut names = String::new();
    let mut scopes: Vec<(u32, u32)> = Vec::new();
    let mut scope_ids: HashMap<String, u32> = HashMap::new();
    let mut scope = String::new();
    let mut walk = ScopeWalk::new(source, root, query);
    let mut defs = Vec::with_capacity(candidates.len().min(MAX_DEFINITIONS));
    for (at, candidate) in candidates.into_iter().enumerate() {
        if at % CHECK_EVERY == CHECK_EVERY - 1 && budget.check().is_some() {
            return None;
        }
        if defs.len() >= MAX_DEFINITIONS {
            cut = Some(Cut::Definitions);
            break;
        }
        let Some(text) = definition_name(source, candidate.node) else {
            continue;
        };
        let text = &*text;
        let Ok(len) = u16::try_from(text.len() + candidate.suffix.len()) else {
            continue;
        };
        if text.is_empty() {
            continue;
        }
        // A preprocessor macro belongs to no scope, whatever namespace or class its
        // #define sits in (ctags gives C and C++ macros none).
        let preprocessor = KINDS.get(usize::from(candidate.kind)) == Some(&"macro")
            && candidate
                .node
                .parent()
                .is_some_and(|parent| parent.kind().starts_with("preproc_"));
        if preprocessor {
            scope.clear();
        } else if !walk.scope_path(candidate.node, &mut scope) {
            cut = cut.or(Some(Cut::Text));
            continue;
        }
        if names.len() + scope.len() + text.len() + candidate.suffix.len() > MAX_TEXT_BYTES {
            cut = cut.or(Some(Cut::Text));
            break;
        }
        let scope_id = if scope.is_empty() {
            0
        } else if let Some(&id) = scope_ids.get(scope.as_str()) {
            id
        } else {
            let Some(range) = append(&mut names, &scope) else {
                break;
            };
            scopes.push(range);
            let Ok(id) = u32::try_from(scopes.len()) else {
                break;
            };
            scope_ids.insert(scope.clone(), id);
            id
        };
        let Some((start, _)) = append(&mut names, text) else {
            break;
        };
        if append(&mut names, candidate.suffix).is_none() {
            break;
        }
        defs.push(RawDef {
            start,
            line: candidate.line,
            scope: scope_id,
            len,
            kind: candidate.kind,
        });
    }
    names.shrink_to_fit();
    Some(FileDefs {
        names,
        scopes: scopes.into_boxed_slice(),
        defs: defs.into_boxed_slice(),
        cut,
    })
}

/// Appends `text` to `names` and returns its byte range; `None` once the string would
/// pass 4 GiB (the ranges are `u32`).
fn append(names: &mut String, text: &str) -> Option<(u32, u32)> {
    let start = u32::try_from(names.len()).ok()?;
    let end = u32::try_from(names.len() + text.len()).ok()?;
    names.push_str(text);
    Some((start, end))
}

#[cfg(all(test, feature = "lang-go", feature = "lang-rust"))]
mod tests {
    use super::*;

    mod lang_of {
        use super::Lang;
        pub(super) fn go() -> Lang {
            Lang::of_path("x.go").expect("Go is compiled in")
        }
        pub(super) fn rust() -> Lang {
            Lang::of_path("x.rs").expect("Rust is compiled in")
        }
    }

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
        let found = defs(
            lang_of::go(),
            "package p\n\nconst A, B = 1, 2\nconst C = A\n",
        );
        assert!(has(&found, "A", 3, "const"), "{found:?}");
        assert!(has(&found, "B", 3, "const"), "{found:?}");
        assert!(has(&found, "C", 4, "const"), "{found:?}");
        // `A` in the value of C is a use, not a definition.
        assert_eq!(found.iter().filter(|d| d.0 == "A").count(), 1, "{found:?}");
    }

    #[test]
    fn go_locals_are_not_definitions() {
        let found = defs(
            lang_of::go(),
            "package p\n\nfunc F() {\n\tconst c = 1\n\tvar v = 2\n\ttype T struct{ f int }\n}\n",
        );
        let names: Vec<&str> = found.iter().map(|d| d.0.as_str()).collect();
        assert_eq!(names, ["p", "F"]);
    }

    #[test]
    fn one_definition_per_name_node() {
        let found = defs(
            lang_of::rust(),
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
            lang_of::rust(),
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
        let found = defs(lang_of::rust(), "pub fn r#match() {}\nstruct r#Type;\n");
        assert!(has(&found, "match", 1, "function"), "{found:?}");
        assert!(has(&found, "Type", 2, "struct"), "{found:?}");
    }

    /// `#has-ancestors?` keeps module and class attributes, under one or two levels of
    /// compound statements, and drops a function's locals, as the nested patterns it
    /// replaced did.
    #[cfg(feature = "lang-python")]
    #[test]
    fn ancestor_chains_keep_attributes_and_drop_locals() {
        let Some(python) = Lang::of_path("x.py") else {
            panic!("Python is compiled in");
        };
        let source = "X = 1\nif A:\n    Y = 2\nelse:\n    try:\n        Z = 3\n    except E:\n        pass\ndef f():\n    W = 4\nclass C:\n    if T:\n        V = 5\n    def m(self):\n        U = 6\n    @property\n    def p(self):\n        pass\n";
        let found = defs(python, source);
        let variables: Vec<&str> = found
            .iter()
            .filter(|(_, _, kind)| *kind == "variable")
            .map(|(name, _, _)| name.as_str())
            .collect();
        assert_eq!(variables, ["X", "Y", "Z", "V"]);
        assert!(has(&found, "m", 14, "member"), "{found:?}");
        assert!(has(&found, "p", 17, "member"), "{found:?}");
        assert!(has(&found, "f", 9, "function"), "{found:?}");
    }

    #[test]
    fn broken_and_empty_sources_do_not_fail() {
        assert!(defs(lang_of::go(), "").is_empty());
        assert!(defs(lang_of::rust(), "").is_empty());
        let found = defs(lang_of::rust(), "fn ok() {}\nfn broken( {\n\x00\x01");
        assert!(has(&found, "ok", 1, "function"), "{found:?}");
    }

    fn scoped(lang: Lang, source: &str) -> Vec<String> {
        let mut extractor = Extractor::new();
        match extractor.extract(lang, source.as_bytes()) {
            Ok(defs) => defs
                .iter()
                .map(|d| format!("{} [{}] {}:{}", d.name, d.kind, d.scope, d.line))
                .collect(),
            Err(e) => panic!("{e}"),
        }
    }

    #[test]
    fn go_scopes_follow_ctags() {
        let found = scoped(
            lang_of::go(),
            "package gin\n\ntype Context struct {\n\tWriter int\n\tio.Reader\n}\n\n\
             func (c *Context) JSON() {}\nfunc (Context) Plain() {}\nfunc (p *Pair[K, V]) Get() {}\n\n\
             type Greeter interface {\n\tGreet() string\n}\n\nfunc Top() {}\n",
        );
        assert_eq!(
            found,
            [
                "gin [package] :1",
                "Context [struct] :3",
                "Writer [member] Context:4",
                "Reader [anonMember] Context:5",
                "JSON [func] Context:8",
                "Plain [func] Context:9",
                "Get [func] Pair:10",
                "Greeter [interface] :12",
                "Greet [methodSpec] Greeter:13",
                "Top [func] :16",
            ]
        );
    }

    #[test]
    fn rust_scopes_follow_ctags() {
        let found = scoped(
            lang_of::rust(),
            "mod outer {\n    pub mod inner {\n        pub struct S { f: i32 }\n        \
             impl S { fn new() -> Self { S { f: 0 } } }\n    }\n}\n\
             pub enum E { A, B { x: i32 } }\n\
             trait Greeter { fn greet(&self); }\n\
             impl Greeter for &Point { fn greet(&self) {} }\n\
             impl<T> Wrap<T> { fn get(&self) { fn nested() {} } }\n",
        );
        assert_eq!(
            found,
            [
                "outer [module] :1",
                "inner [module] outer:2",
                "S [struct] outer::inner:3",
                "f [field] outer::inner::S:3",
                "S [implementation] outer::inner:4",
                "new [method] outer::inner::S:4",
                "E [enum] :7",
                "A [enumerator] E:7",
                "B [enumerator] E:7",
                "x [field] E::B:7",
                "Greeter [interface] :8",
                "greet [method] Greeter:8",
                "Point [implementation] :9",
                "greet [method] Point:9",
                "Wrap [implementation] :10",
                "get [method] Wrap:10",
                "nested [function] Wrap::get:10",
            ]
        );
    }

    /// Conversion operators are named as ctags names them, and the shapes grammars/cpp.scm
    /// reads back from a parse broken by unexpanded macros are found at their lines: an
    /// export macro before a class name, a macro call after a method's parameters, and a
    /// statement-like macro without `;` before an enum.
    #[cfg(feature = "lang-cpp")]
    #[test]
    fn cpp_conversion_operators_and_macro_broken_shapes() {
        let cpp = Lang::of_path("x.cpp").expect("C++ is compiled in");
        let found = defs(
            cpp,
            "struct A {\n\
             \x20 explicit operator T&() { return t; }\n\
             \x20 operator const char*() const { return 0; }\n\
             };\n\
             A::operator int() const { return 1; }\n\
             class API Widget {\n\
             \x20public:\n\
             \x20 Widget() {}\n\
             \x20 bool ready() const LOCKS_EXCLUDED(mu) { return ok_; }\n\
             \x20 bool ok_;\n\
             };\n\
             END_NS\n\
             enum class color : unsigned char { red, green = 2 };\n\
             Widget* Widget::self() { return this; }\n\
             struct API Point : Base { int x; };\n\
             void prototype();\n\
             int f(int) { return 0; }\n\
             class API operator_guard {\n\
             \x20public:\n\
             \x20 operator_guard() {}\n\
             \x20 int operator_count;\n\
             };\n\
             struct Counter { int operator_total; };\n\
             void unfinished(int) const\n\
             int after = 1;\n",
        );
        assert!(
            !found.iter().any(|(name, _, _)| name == "prototype"),
            "a prototype before an ordinary function is no definition: {found:?}"
        );
        assert!(
            !found.iter().any(|(name, _, _)| name == "unfinished"),
            "a declaration missing its `;` is a definition only before a macro's body: {found:?}"
        );
        for (name, line, kind) in [
            ("operator T&", 2, "function"),
            ("operator const char*", 3, "function"),
            ("operator int", 5, "function"),
            ("Widget", 6, "class"),
            ("Widget", 8, "function"),
            ("ready", 9, "function"),
            ("ok_", 10, "member"),
            ("color", 13, "enum"),
            ("red", 13, "enumerator"),
            ("green", 13, "enumerator"),
            ("self", 14, "function"),
            ("Point", 15, "struct"),
            ("f", 17, "function"),
            // A name that only starts with `operator` is no operator.
            ("operator_guard", 18, "class"),
            ("operator_guard", 20, "function"),
            ("operator_count", 21, "member"),
            ("operator_total", 23, "member"),
        ] {
            assert!(has(&found, name, line, kind), "{name}: {found:?}");
        }
    }

    /// Extracts `source`, prints how long it took, and returns the definitions as
    /// `name [kind] scope:line`.
    fn timed(what: &str, lang: Lang, source: &str) -> (std::time::Duration, Vec<String>) {
        let mut extractor = Extractor::new();
        let start = std::time::Instant::now();
        let defs = match extractor.extract(lang, source.as_bytes()) {
            Ok(defs) => defs,
            Err(e) => panic!("{e}"),
        };
        let took = start.elapsed();
        let found: Vec<String> = defs
            .iter()
            .map(|d| format!("{} [{}] {}:{}", d.name, d.kind, d.scope, d.line))
            .collect();
        eprintln!("{what}: {} definitions in {took:?}", found.len());
        (took, found)
    }

    /// The most the extractions below may take. Their time is mostly parsing and query
    /// matching, well under a second in a debug build on an idle machine; the bound is
    /// loose because CI shares two cores with other builds (3 s once failed there), and
    /// still far below what a quadratic walk over 50,000 siblings would take.
    const LINEAR_BOUND_SECONDS: f64 = 10.0;

    /// A level holding tens of thousands of definitions (a generated table, a big object
    /// literal) is extracted in time linear in its size, with its scopes.
    #[test]
    fn many_definitions_at_one_level_are_scoped_in_linear_time() {
        let mut go = String::from("package p\n\n");
        for i in 0..20_000 {
            go.push_str(&format!("const C{i} = {i}\n"));
        }
        go.push_str("type T struct {\n\tF int\n}\n");
        let (took, found) = timed("go, 20000 top-level consts", lang_of::go(), &go);
        assert_eq!(found.len(), 20_003, "{:?}", &found[..5]);
        assert_eq!(found[0], "p [package] :1");
        assert_eq!(found[1], "C0 [const] :3");
        assert_eq!(found[12_346], "C12345 [const] :12348");
        assert_eq!(found[20_000], "C19999 [const] :20002");
        assert_eq!(found[20_001], "T [struct] :20003");
        assert_eq!(found[20_002], "F [member] T:20004");
        assert!(took.as_secs_f64() < LINEAR_BOUND_SECONDS, "{took:?}");
    }

    fn extracted(lang: Lang, source: &str) -> FileDefs {
        match Extractor::new().extract(lang, source.as_bytes()) {
            Ok(defs) => defs,
            Err(e) => panic!("{e}"),
        }
    }

    /// `depth` nested `mod a {` around `struct target;`.
    fn nested_mods(depth: usize) -> String {
        format!(
            "{}struct target;\n{}",
            "mod a {\n".repeat(depth),
            "}\n".repeat(depth)
        )
    }

    /// A struct inside 127 modules starts 255 syntax levels deep (each module is a
    /// `mod_item` and a `declaration_list`; its name is one level below), and is found
    /// with its whole scope; one more module puts it past [`MAX_DEPTH`]: it is left out,
    /// and the file says it is cut.
    #[test]
    fn definitions_are_kept_down_to_the_depth_bound_and_the_file_says_when_cut() {
        let at_bound = extracted(lang_of::rust(), &nested_mods(127));
        let target: Vec<Def<'_>> = at_bound.named("target").collect();
        assert_eq!(target.len(), 1, "{:?}", at_bound.cut());
        assert_eq!(target[0].scope, vec!["a"; 127].join("::"));
        assert_eq!(at_bound.cut(), None);

        let past = extracted(lang_of::rust(), &nested_mods(128));
        assert_eq!(past.named("target").count(), 0);
        assert_eq!(past.cut(), Some(Cut::Depth));
        // The outer modules are still there.
        assert_eq!(past.named("a").count(), 128);
    }

    /// 40,000 nested modules (the shape that once took 71 s and 3 GB) take well under
    /// the linear bound and keep the outer definitions.
    #[test]
    fn forty_thousand_nested_modules_are_cut_quickly() {
        let (took, found) = timed(
            "rust, 40000 nested modules",
            lang_of::rust(),
            &nested_mods(40_000),
        );
        assert_eq!(found.len(), 128, "{:?}", &found[..3]);
        assert!(took.as_secs_f64() < LINEAR_BOUND_SECONDS, "{took:?}");
    }

    /// A scope path of exactly [`MAX_SCOPE_BYTES`] is kept; one byte more leaves the
    /// definitions under it out, and says so.
    #[test]
    fn scope_paths_are_kept_up_to_their_bound() {
        let module = |len: usize| format!("mod {} {{\n    fn inner() {{}}\n}}\n", "m".repeat(len));
        let kept = extracted(lang_of::rust(), &module(MAX_SCOPE_BYTES));
        assert_eq!(kept.named("inner").count(), 1);
        assert_eq!(kept.cut(), None);
        let cut = extracted(lang_of::rust(), &module(MAX_SCOPE_BYTES + 1));
        assert_eq!(cut.named("inner").count(), 0);
        assert_eq!(cut.cut(), Some(Cut::Text));
    }

    /// Distinct long scope paths stop being stored at [`MAX_TEXT_BYTES`].
    #[test]
    fn names_and_scopes_stop_at_their_byte_bound() {
        let outer = "o".repeat(MAX_SCOPE_BYTES - 16);
        let inner = MAX_TEXT_BYTES / MAX_SCOPE_BYTES + 64;
        let mut source = format!("mod {outer} {{\n");
        for i in 0..inner {
            source.push_str(&format!("mod m{i} {{ fn f() {{}} }}\n"));
        }
        source.push_str("}\n");
        let defs = extracted(lang_of::rust(), &source);
        assert_eq!(defs.cut(), Some(Cut::Text));
        let kept = defs.named("f").count();
        assert!(kept > inner / 2 && kept < inner, "{kept} of {inner}");
        assert!(defs.heap_bytes() <= MAX_TEXT_BYTES + 64 * MAX_DEFINITIONS);
    }

    /// A file with [`MAX_DEFINITIONS`] definitions keeps them all; one more is left out
    /// and the file says it is cut.
    #[test]
    fn definitions_per_file_are_kept_up_to_their_bound() {
        let consts = |n: usize| {
            let mut go = String::from("package p\n\n");
            for i in 0..n {
                go.push_str(&format!("const C{i} = {i}\n"));
            }
            go
        };
        // The package is a definition too.
        let at_bound = extracted(lang_of::go(), &consts(MAX_DEFINITIONS - 1));
        assert_eq!(at_bound.iter().count(), MAX_DEFINITIONS);
        assert_eq!(at_bound.cut(), None);
        let past = extracted(lang_of::go(), &consts(MAX_DEFINITIONS));
        assert_eq!(past.iter().count(), MAX_DEFINITIONS);
        assert_eq!(past.cut(), Some(Cut::Definitions));
        let last = format!("C{}", MAX_DEFINITIONS - 1);
        assert_eq!(
            past.named(&last).count(),
            0,
            "the one past the bound is left out"
        );
    }

    /// A budget that says stop halts the extraction: nothing is returned, so nothing
    /// half-parsed is kept.
    #[test]
    fn a_halted_extraction_returns_nothing() {
        let stop = || true;
        let budget = Budget::until(std::time::Instant::now(), &stop);
        let source = nested_mods(20_000);
        let result = Extractor::new().extract_within(lang_of::rust(), source.as_bytes(), &budget);
        assert!(matches!(result, Ok(None)), "{result:?}");
        // A later, unhurried extraction of the same parser set still works.
        let mut extractor = Extractor::new();
        let _ = extractor.extract_within(lang_of::rust(), source.as_bytes(), &budget);
        let defs = extractor
            .extract(lang_of::rust(), b"fn after() {}\n")
            .expect("extract");
        assert_eq!(defs.named("after").count(), 1);
    }

    #[cfg(feature = "lang-javascript")]
    #[test]
    fn many_object_keys_are_scoped_in_linear_time() {
        let js = Lang::of_path("x.js").expect("JavaScript is compiled in");
        let mut source = String::from("const o = {\n");
        for i in 0..50_000 {
            source.push_str(&format!("  k{i}: {i},\n"));
        }
        source.push_str("};\nfunction f() {}\n");
        let (took, found) = timed("javascript, 50000 keys in one object", js, &source);
        assert_eq!(found.len(), 50_002, "{:?}", &found[..5]);
        assert_eq!(found[0], "o [constant] :1");
        assert_eq!(found[1], "k0 [property] o:2");
        assert_eq!(found[12_346], "k12345 [property] o:12347");
        assert_eq!(found[50_000], "k49999 [property] o:50001");
        assert_eq!(found[50_001], "f [function] :50003");
        assert!(took.as_secs_f64() < LINEAR_BOUND_SECONDS, "{took:?}");
    }
}
