//! The shape of `src/`: its top-level modules (`src/foo.rs` and everything under `src/foo/`
//! are `foo`; `src/lib.rs` and `src/main.rs` are the root) must not depend on each other in
//! a cycle, so each can be read, tested and changed with only what is below it in mind; and
//! no two source files may import each other, directly or around a longer circle (see
//! [`file_graph`]).
//!
//! A dependency is a `crate::NAME` path anywhere in the code, in a `use` (grouped forms
//! such as `use crate::{a, b::c}` included) or inline (`crate::foo::bar()`); comments and
//! string literals do not count. `super::` paths are not followed: they stay inside a
//! top-level module except in its own root file, where `super` is the crate root.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

/// Where one dependency is written: the file (relative to the crate) and the line.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Site {
    file: String,
    line: usize,
}

/// Module to module, with every place the dependency is written.
type Graph = BTreeMap<String, BTreeMap<String, Vec<Site>>>;

/// Every `.rs` file beneath `dir`, sorted.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries =
            std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("read {}: {e}", dir.display()));
        for entry in entries {
            let path = entry
                .unwrap_or_else(|e| panic!("read an entry of {}: {e}", dir.display()))
                .path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The top-level module a file beneath `src/` belongs to (`rel` is relative to `src/`,
/// `/`-separated); `None` for the crate root (`lib.rs`, `main.rs`).
fn top_module(rel: &str) -> Option<String> {
    match rel.split_once('/') {
        Some((dir, _)) => Some(dir.to_owned()),
        None if rel == "lib.rs" || rel == "main.rs" => None,
        None => rel.strip_suffix(".rs").map(str::to_owned),
    }
}

/// `source` with comments and the contents of string and character literals replaced by
/// spaces (newlines are kept, so line numbers still hold).
fn code_only(source: &str) -> String {
    let chars: Vec<char> = source.chars().collect();
    let mut out = String::with_capacity(source.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            // Block comments nest in Rust.
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if let Some(hashes) = raw_string_start(&chars, i) {
            // r"..." or r#"..."#: no escapes; ends at a quote followed by as many hashes.
            let open = 1 + hashes + 1;
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            while i < chars.len() {
                if chars[i] == '"' && (1..=hashes).all(|k| chars.get(i + k) == Some(&'#')) {
                    out.extend(std::iter::repeat_n(' ', 1 + hashes));
                    i += 1 + hashes;
                    break;
                }
                out.push(blank(chars[i]));
                i += 1;
            }
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                let step = if chars[i] == '\\' { 2 } else { 1 };
                for k in 0..step {
                    if let Some(&c) = chars.get(i + k) {
                        out.push(blank(c));
                    }
                }
                i += step;
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' && is_char_literal(&chars, i) {
            // '"' and '\'' would otherwise open or close a string; lifetimes are left alone.
            let len = if next == Some('\\') {
                chars[i..]
                    .iter()
                    .skip(3)
                    .position(|&c| c == '\'')
                    .map_or(1, |p| p + 4)
            } else {
                3
            };
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

/// The number of `#`s when a raw string literal starts at `i` (`r"`, `r#"`, `br##"`...).
fn raw_string_start(chars: &[char], i: usize) -> Option<usize> {
    if chars[i] != 'r' || i > 0 && is_ident(chars[i - 1]) && chars[i - 1] != 'b' {
        return None;
    }
    if i > 1 && chars[i - 1] == 'b' && is_ident(chars[i - 2]) {
        return None;
    }
    let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
    (chars.get(i + 1 + hashes) == Some(&'"')).then_some(hashes)
}

/// Whether the `'` at `i` opens a character literal (`'x'`, `'\n'`, `'\u{1F600}'`) rather
/// than a lifetime or a label.
fn is_char_literal(chars: &[char], i: usize) -> bool {
    match chars.get(i + 1) {
        Some('\\') => true,
        Some(_) => chars.get(i + 2) == Some(&'\''),
        None => false,
    }
}

fn is_ident(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// The top-level names `code` (already through [`code_only`]) reaches through `crate::`,
/// each with its 1-based line: `crate::a::b` gives `a`, `crate::{a, b::{c, d}}` gives `a`
/// and `b`.
fn crate_references(code: &str) -> Vec<(String, usize)> {
    let chars: Vec<char> = code.chars().collect();
    let needle: Vec<char> = "crate".chars().collect();
    let mut found = Vec::new();
    let line_of = |at: usize| 1 + chars[..at].iter().filter(|&&c| c == '\n').count();
    let mut i = 0;
    while i + needle.len() <= chars.len() {
        let starts_word = i == 0 || !(is_ident(chars[i - 1]) || chars[i - 1] == '$');
        if !starts_word || chars[i..i + needle.len()] != needle[..] {
            i += 1;
            continue;
        }
        let mut j = skip_space(&chars, i + needle.len());
        if chars.get(j) != Some(&':') || chars.get(j + 1) != Some(&':') {
            i += needle.len();
            continue;
        }
        j = skip_space(&chars, j + 2);
        if chars.get(j) == Some(&'{') {
            // A group: the first name of each item at the group's top level.
            let mut depth = 0;
            let mut expect_name = true;
            while j < chars.len() {
                match chars[j] {
                    '{' => {
                        depth += 1;
                        expect_name = depth == 1;
                    }
                    '}' => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    ',' if depth == 1 => expect_name = true,
                    c if expect_name && depth == 1 && is_ident(c) => {
                        let name: String =
                            chars[j..].iter().take_while(|&&c| is_ident(c)).collect();
                        j += name.len() - 1;
                        found.push((name, line_of(j)));
                        expect_name = false;
                    }
                    _ => {}
                }
                j += 1;
            }
        } else {
            let name: String = chars[j..].iter().take_while(|&&c| is_ident(c)).collect();
            if !name.is_empty() {
                found.push((name, line_of(j)));
            }
        }
        i = j.max(i + 1);
    }
    found
}

fn skip_space(chars: &[char], mut i: usize) -> usize {
    while chars.get(i).is_some_and(|c| c.is_whitespace()) {
        i += 1;
    }
    i
}

/// The dependency graph of the top-level modules of the crate at `root`. Every module is
/// a key, even one that depends on nothing; a `crate::NAME` where NAME is not a module
/// (an item of the crate root) is no edge.
fn module_graph(root: &Path) -> Graph {
    let src = root.join("src");
    let files: Vec<(String, String)> = rust_files(&src)
        .into_iter()
        .map(|path| {
            let rel = path
                .strip_prefix(&src)
                .expect("beneath src")
                .to_string_lossy()
                .replace('\\', "/");
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            (rel, text)
        })
        .collect();
    let mut graph = Graph::new();
    for (rel, _) in &files {
        if let Some(module) = top_module(rel) {
            graph.entry(module).or_default();
        }
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (rel, text) in &files {
        let Some(from) = top_module(rel) else {
            continue;
        };
        for (to, line) in crate_references(&code_only(text)) {
            if to != from && modules.contains(&to) {
                let site = Site {
                    file: format!("src/{rel}"),
                    line,
                };
                let sites = graph
                    .get_mut(&from)
                    .expect("every module is a key")
                    .entry(to)
                    .or_default();
                sites.push(site);
            }
        }
    }
    graph
}

/// The cycles of `graph`: for every module on a cycle, the shortest cycle through it,
/// each written from its smallest module (`[a, b]` is `a -> b -> a`), without repeats.
fn cycles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for start in graph.keys() {
        // Breadth first from `start`, back to `start`.
        let mut parent: BTreeMap<&String, &String> = BTreeMap::new();
        let mut queue = VecDeque::from([start]);
        let mut closing = None;
        while let Some(node) = queue.pop_front() {
            for next in graph.get(node).into_iter().flatten() {
                if next == start {
                    closing = Some(node);
                    break;
                }
                if !parent.contains_key(next) {
                    parent.insert(next, node);
                    queue.push_back(next);
                }
            }
            if closing.is_some() {
                break;
            }
        }
        let Some(mut node) = closing else {
            continue;
        };
        let mut cycle = vec![node.clone()];
        while node != start {
            node = parent[node];
            cycle.push(node.clone());
        }
        cycle.reverse();
        let smallest = cycle
            .iter()
            .enumerate()
            .min_by_key(|(_, name)| *name)
            .map_or(0, |(at, _)| at);
        cycle.rotate_left(smallest);
        found.insert(cycle);
    }
    found.into_iter().collect()
}

/// A cycle as `a -> b -> a`, then one line per edge with where it is written.
fn describe(cycle: &[String], graph: &Graph) -> String {
    let mut path = cycle.to_vec();
    path.push(cycle[0].clone());
    let mut text = path.join(" -> ");
    for pair in path.windows(2) {
        let sites = &graph[&pair[0]][&pair[1]];
        let shown: Vec<String> = sites
            .iter()
            .map(|s| format!("{}:{}", s.file, s.line))
            .collect();
        text.push_str(&format!(
            "\n    {} -> {}: {}",
            pair[0],
            pair[1],
            shown.join(", ")
        ));
    }
    text
}

#[test]
fn the_top_level_modules_of_src_import_each_other_without_cycles() {
    let graph = module_graph(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert!(
        graph.len() >= 5,
        "found only the modules {:?}: is src/ where this test looks?",
        graph.keys().collect::<Vec<_>>()
    );
    let edges: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
        .collect();
    let found = cycles(&edges);
    assert!(
        found.is_empty(),
        "{} import cycle(s) between the top-level modules of src/:\n\n{}",
        found.len(),
        found
            .iter()
            .map(|cycle| describe(cycle, &graph))
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// A graph from `a>b` edge strings.
fn graph_of(edges: &[&str]) -> BTreeMap<String, BTreeSet<String>> {
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for edge in edges {
        let (from, to) = edge.split_once('>').expect("an edge is from>to");
        graph.entry(to.to_owned()).or_default();
        graph
            .entry(from.to_owned())
            .or_default()
            .insert(to.to_owned());
    }
    graph
}

fn names(cycle: &[&str]) -> Vec<String> {
    cycle.iter().map(|s| (*s).to_owned()).collect()
}

#[test]
fn the_cycle_finder_finds_cycles_and_passes_a_dag() {
    // A DAG with a diamond: no cycle, although d is reached twice.
    assert!(cycles(&graph_of(&["a>b", "a>c", "b>d", "c>d", "d>e"])).is_empty());
    // Two cycles sharing `cli`, plus a longer one elsewhere and an edge out of it.
    let found = cycles(&graph_of(&[
        "cli>repl",
        "repl>cli",
        "cli>doctor",
        "doctor>cli",
        "x>y",
        "y>z",
        "z>x",
        "z>tools",
    ]));
    assert_eq!(
        found,
        [
            names(&["cli", "doctor"]),
            names(&["cli", "repl"]),
            names(&["x", "y", "z"]),
        ]
    );
}

#[test]
fn references_are_read_from_code_and_not_from_comments_or_strings() {
    let source = r##"//! Uses crate::nothing in a doc comment.
use crate::config::{self, Config};
use crate::{
    agent::Agent,
    tools::{Budgets, spec},
};
pub(crate) fn f() {
    // crate::commented
    /* crate::blocked /* nested crate::deeper */ still crate::comment */
    let s = "crate::quoted \" crate::escaped";
    let r = r#"crate::raw "# ;
    let c = '"';
    let _ = crate::display::show(s, r, c);
    let _: &'static str = crate :: version::VERSION;
}
"##;
    let found: Vec<(String, usize)> = crate_references(&code_only(source));
    let expect: Vec<(String, usize)> = [
        ("config", 2),
        ("agent", 4),
        ("tools", 5),
        ("display", 13),
        ("version", 14),
    ]
    .iter()
    .map(|(name, line)| ((*name).to_owned(), *line))
    .collect();
    assert_eq!(found, expect);
}

#[test]
fn files_map_to_their_top_level_module() {
    assert_eq!(top_module("cli.rs").as_deref(), Some("cli"));
    assert_eq!(top_module("tools/mod.rs").as_deref(), Some("tools"));
    assert_eq!(
        top_module("tools/apply_patch/parse.rs").as_deref(),
        Some("tools")
    );
    assert_eq!(top_module("lib.rs"), None);
    assert_eq!(top_module("main.rs"), None);
}

// ---------------------------------------------------------------------------------------
// Circles between files
// ---------------------------------------------------------------------------------------

/// File circles that are known and being broken: each entry is the files of one circle,
/// sorted. The test fails on any other circle, and on an entry here that is no longer a
/// circle (so the list only shrinks).
const KNOWN_FILE_CIRCLES: &[&[&str]] = &[];

/// One source file as the file graph reads it.
#[derive(Default)]
struct FileFacts {
    /// Names defined anywhere in the file (`fn`, `struct`, `enum`, `trait`, `type`,
    /// `const`, `static`, `union`, `macro_rules!`, inline `mod`).
    defines: BTreeSet<String>,
    /// `use` imports: the local name (None for a glob), the path as written (relative to
    /// `module`), the module the `use` stands in, whether it is a re-export (`pub ...
    /// use`), and its line.
    uses: Vec<UseItem>,
    /// Paths written in code outside `use` (`a::b::c`), with the module they stand in and
    /// the line.
    paths: Vec<(Vec<String>, Vec<String>, usize)>,
}

#[derive(Clone, Debug)]
struct UseItem {
    local: Option<String>,
    path: Vec<String>,
    module: Vec<String>,
    reexport: bool,
    line: usize,
}

/// The module path of a file beneath `src/` (`agent/ledger.rs` is `[agent, ledger]`,
/// `agent/mod.rs` is `[agent]`, `lib.rs` is `[]`); `None` for `main.rs`, which is a crate
/// of its own and reaches the library as `metron::`.
fn module_path(rel: &str) -> Option<Vec<String>> {
    if rel == "main.rs" {
        return None;
    }
    if rel == "lib.rs" {
        return Some(Vec::new());
    }
    let mut parts: Vec<String> = rel.split('/').map(str::to_owned).collect();
    let last = parts.pop().expect("a file name");
    if last != "mod.rs" {
        parts.push(last.strip_suffix(".rs").unwrap_or(&last).to_owned());
    }
    Some(parts)
}

/// The identifier that starts at `i`, if one does.
fn ident_at(chars: &[char], i: usize) -> Option<String> {
    let first = *chars.get(i)?;
    if !(first.is_alphabetic() || first == '_') || i > 0 && is_ident(chars[i - 1]) {
        return None;
    }
    Some(chars[i..].iter().take_while(|&&c| is_ident(c)).collect())
}

/// Expands a use tree (`a::{b, c::{d as e, self}, f::*}`) beneath `prefix` into
/// (local name or None for a glob, full path) pairs.
fn expand_use_tree(tree: &str, prefix: &[String], out: &mut Vec<(Option<String>, Vec<String>)>) {
    let tree = tree.trim();
    // Split at the first top-level `{`.
    if let Some(open) = tree.find('{') {
        let head = tree[..open].trim().trim_end_matches("::").trim();
        let mut base = prefix.to_vec();
        base.extend(segments(head));
        let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
        let mut depth = 0;
        let mut start = 0;
        let bytes: Vec<char> = inner.chars().collect();
        let mut parts = Vec::new();
        for (i, &c) in bytes.iter().enumerate() {
            match c {
                '{' => depth += 1,
                '}' => depth -= 1,
                ',' if depth == 0 => {
                    parts.push(bytes[start..i].iter().collect::<String>());
                    start = i + 1;
                }
                _ => {}
            }
        }
        parts.push(bytes[start..].iter().collect::<String>());
        for part in parts {
            if !part.trim().is_empty() {
                expand_use_tree(&part, &base, out);
            }
        }
        return;
    }
    let (path, alias) = match tree.split_once(" as ") {
        Some((path, alias)) => (path.trim(), Some(alias.trim().to_owned())),
        None => (tree, None),
    };
    let mut full = prefix.to_vec();
    let segs = segments(path);
    if segs.last().is_some_and(|s| s == "*") {
        full.extend(segs[..segs.len() - 1].iter().cloned());
        out.push((None, full));
        return;
    }
    if segs.len() == 1 && segs[0] == "self" {
        let local = alias.or_else(|| full.last().cloned());
        out.push((local, full));
        return;
    }
    full.extend(segs);
    let local = alias.or_else(|| full.last().cloned());
    if local.as_deref() != Some("_") {
        out.push((local, full));
    } else {
        out.push((Some(String::new()), full));
    }
}

fn segments(path: &str) -> Vec<String> {
    path.split("::")
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

/// Reads one file (already through [`code_only`]) standing for module `module`.
fn file_facts(code: &str, module: &[String]) -> FileFacts {
    let chars: Vec<char> = code.chars().collect();
    let mut facts = FileFacts::default();
    let line_of = |at: usize| 1 + chars[..at].iter().filter(|&&c| c == '\n').count();
    // Inline modules: (name, the brace depth inside them).
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut pending_mod: Option<(String, bool)> = None;
    // The depth of the unit-test module being skipped, if inside one.
    let mut skip_from: Option<usize> = None;
    let mut i = 0;
    let here = |inline: &[(String, usize)]| {
        let mut m = module.to_vec();
        m.extend(inline.iter().map(|(n, _)| n.clone()));
        m
    };
    while i < chars.len() {
        let c = chars[i];
        if c == '{' {
            depth += 1;
            if let Some((name, test)) = pending_mod.take() {
                inline.push((name, depth));
                if test && skip_from.is_none() {
                    skip_from = Some(depth);
                }
            }
            i += 1;
            continue;
        }
        if c == '}' {
            if inline.last().is_some_and(|(_, d)| *d == depth) {
                inline.pop();
            }
            if skip_from == Some(depth) {
                skip_from = None;
            }
            depth = depth.saturating_sub(1);
            i += 1;
            continue;
        }
        if c == ';' {
            pending_mod = None;
        }
        let Some(word) = ident_at(&chars, i) else {
            i += 1;
            continue;
        };
        let after = i + word.chars().count();
        if skip_from.is_some() && word != "mod" {
            i = after;
            continue;
        }
        match word.as_str() {
            "fn" | "struct" | "enum" | "trait" | "type" | "const" | "static" | "union" | "mod" => {
                let j = skip_space(&chars, after);
                if let Some(name) = ident_at(&chars, j) {
                    if word == "mod" {
                        // Unit tests (`#[cfg(test)] mod tests { ... }`) are not part of
                        // the program's structure: what they use is skipped.
                        let before: String = chars[i.saturating_sub(40)..i].iter().collect();
                        let test = before.contains("cfg(test)");
                        pending_mod = Some((name.clone(), test));
                    }
                    facts.defines.insert(name);
                }
                i = after;
            }
            "macro_rules" => {
                let j = skip_space(&chars, after);
                let j = skip_space(&chars, j + 1);
                if let Some(name) = ident_at(&chars, j) {
                    facts.defines.insert(name);
                }
                i = after;
            }
            "use" => {
                // A re-export when `pub` (or `pub(...)`) stands right before it.
                let before: String = chars[..i].iter().collect();
                let before = before.trim_end();
                let reexport = before.ends_with("pub")
                    || before.ends_with(')')
                        && before
                            .rfind("pub")
                            .is_some_and(|p| before[p + 3..].trim_start().starts_with('('));
                let end = chars[after..]
                    .iter()
                    .position(|&c| c == ';')
                    .map_or(chars.len(), |p| after + p);
                let tree: String = chars[after..end].iter().collect();
                let tree = tree.split_whitespace().collect::<Vec<_>>().join(" ");
                let mut expanded = Vec::new();
                expand_use_tree(&tree, &[], &mut expanded);
                let line = line_of(i);
                let module = here(&inline);
                for (local, path) in expanded {
                    facts.uses.push(UseItem {
                        local,
                        path,
                        module: module.clone(),
                        reexport,
                        line,
                    });
                }
                i = end;
            }
            _ => {
                // A path: word(::word)+, not preceded by `::` (then it is part of one seen).
                let mut segs = vec![word.clone()];
                let mut j = after;
                loop {
                    let k = skip_space(&chars, j);
                    if chars.get(k) == Some(&':') && chars.get(k + 1) == Some(&':') {
                        let k = skip_space(&chars, k + 2);
                        if let Some(next) = ident_at(&chars, k) {
                            j = k + next.chars().count();
                            segs.push(next);
                            continue;
                        }
                    }
                    break;
                }
                if segs.len() > 1 {
                    facts.paths.push((segs, here(&inline), line_of(i)));
                }
                i = j;
            }
        }
    }
    facts
}

/// The crate's files with what each defines, imports and names.
struct Crate {
    /// Module path to file (relative to the crate, `src/...`).
    files: BTreeMap<Vec<String>, String>,
    facts: BTreeMap<String, FileFacts>,
    /// File to its module path.
    modules: BTreeMap<String, Vec<String>>,
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let src = root.join("src");
        let mut krate = Crate {
            files: BTreeMap::new(),
            facts: BTreeMap::new(),
            modules: BTreeMap::new(),
        };
        for path in rust_files(&src) {
            let rel = path
                .strip_prefix(&src)
                .expect("beneath src")
                .to_string_lossy()
                .replace('\\', "/");
            let Some(module) = module_path(&rel) else {
                continue;
            };
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            let file = format!("src/{rel}");
            krate
                .facts
                .insert(file.clone(), file_facts(&code_only(&text), &module));
            krate.files.insert(module.clone(), file.clone());
            krate.modules.insert(file, module);
        }
        krate
    }

    /// The file that holds `module`, or the file of the nearest module above it (an inline
    /// module lives in its parent's file).
    fn file_of(&self, module: &[String]) -> Option<&String> {
        (0..=module.len())
            .rev()
            .find_map(|n| self.files.get(&module[..n]))
    }

    /// `path`, written in `module`, as a path from the crate root; None when it leaves the
    /// crate (std, a dependency) or names a local thing.
    fn absolute(&self, path: &[String], module: &[String]) -> Option<Vec<String>> {
        self.absolute_within(path, module, 0)
    }

    /// `absolute`, following at most 16 `use`s: a name a `use` brings in under its own
    /// first segment (`use log::Log as log`-like shapes) would otherwise loop forever.
    fn absolute_within(
        &self,
        path: &[String],
        module: &[String],
        hops: usize,
    ) -> Option<Vec<String>> {
        if hops > 16 {
            return None;
        }
        let (first, rest) = path.split_first()?;
        let mut base: Vec<String> = match first.as_str() {
            "crate" => Vec::new(),
            "self" => module.to_vec(),
            "super" => {
                let mut m = module.to_vec();
                m.pop()?;
                let mut rest = rest;
                while rest.first().is_some_and(|s| s == "super") {
                    m.pop()?;
                    rest = &rest[1..];
                }
                m.extend(rest.iter().cloned());
                return Some(m);
            }
            _ => {
                let mut child = module.to_vec();
                child.push(first.clone());
                if self.files.contains_key(&child) {
                    child
                } else {
                    // A name brought in by a `use` of this module.
                    let file = self.file_of(module)?;
                    let item = self.facts[file].uses.iter().find(|u| {
                        u.local.as_deref() == Some(first.as_str()) && u.module == module
                    })?;
                    // `use memchr::memchr;`: the name is brought in from a crate
                    // of the same name, not from a module of this one.
                    if item.path.first() == Some(first) {
                        return None;
                    }
                    self.absolute_within(&item.path, &item.module, hops + 1)?
                }
            }
        };
        base.extend(rest.iter().cloned());
        Some(base)
    }

    /// The file that defines what the absolute `path` names, following `use`s (re-exports
    /// and globs); a path to a module itself is None.
    fn defining_file(&self, path: &[String], hops: usize) -> Option<String> {
        if hops > 16 {
            return None;
        }
        let mut module = Vec::new();
        for seg in path {
            let mut next = module.clone();
            next.push(seg.clone());
            if self.files.contains_key(&next) {
                module = next;
                continue;
            }
            let file = self.files.get(&module)?;
            let facts = &self.facts[file];
            if facts.defines.contains(seg) {
                return Some(file.clone());
            }
            if let Some(item) = facts
                .uses
                .iter()
                .find(|u| u.local.as_deref() == Some(seg.as_str()) && u.module == module)
            {
                let target = self.absolute(&item.path, &item.module)?;
                return self.defining_file(&target, hops + 1);
            }
            for glob in facts
                .uses
                .iter()
                .filter(|u| u.local.is_none() && u.module == module)
            {
                let Some(mut target) = self.absolute(&glob.path, &glob.module) else {
                    continue;
                };
                target.push(seg.clone());
                if let Some(found) = self.defining_file(&target, hops + 1) {
                    return Some(found);
                }
            }
            return Some(file.clone());
        }
        None
    }

    /// File to file, with every place the dependency is written: a `use` that is not a
    /// re-export, or a path in code, that names an item another file defines (a re-export
    /// is followed to the file that defines the item; a module itself is no dependency; a
    /// glob depends on the globbed module's file). A file's uses of the files of its own
    /// submodules are left out: `agent/mod.rs` calling into `agent/ledger.rs`, which it
    /// declares, is the module being put together, while `ledger.rs` using `outcome.rs`
    /// (or `agent/mod.rs`) is an import.
    fn graph(&self) -> Graph {
        let mut graph = Graph::new();
        for (file, facts) in &self.facts {
            graph.entry(file.clone()).or_default();
            let here = &self.modules[file];
            let mut add = |to: String, line: usize| {
                // A module's own file using what it declares beneath it is how a module
                // is built, not an import: only edges to files outside it count.
                let beneath = self.modules[&to].starts_with(here);
                if !beneath {
                    graph
                        .get_mut(file)
                        .expect("a key")
                        .entry(to)
                        .or_default()
                        .push(Site {
                            file: file.clone(),
                            line,
                        });
                }
            };
            for item in facts.uses.iter().filter(|u| !u.reexport) {
                let Some(path) = self.absolute(&item.path, &item.module) else {
                    continue;
                };
                if item.local.is_none() {
                    // A glob: every file that defines something the globbed module holds.
                    if self.files.contains_key(&path) && self.file_of(&path) != Some(file) {
                        add(self.file_of(&path).expect("a module").clone(), item.line);
                    }
                    continue;
                }
                if let Some(to) = self.defining_file(&path, 0) {
                    add(to, item.line);
                }
            }
            for (segs, module, line) in &facts.paths {
                let Some(path) = self.absolute(segs, module) else {
                    continue;
                };
                if let Some(to) = self.defining_file(&path, 0) {
                    add(to, *line);
                }
            }
        }
        graph
    }
}

/// The strongly connected parts of `graph` with more than one node: each a set of nodes
/// every one of which reaches every other.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<BTreeSet<String>> {
    let reach = |start: &String| {
        let mut seen = BTreeSet::new();
        let mut stack = vec![start];
        while let Some(node) = stack.pop() {
            for next in graph.get(node).into_iter().flatten() {
                if seen.insert(next.clone()) {
                    stack.push(next);
                }
            }
        }
        seen
    };
    let reached: BTreeMap<&String, BTreeSet<String>> =
        graph.keys().map(|node| (node, reach(node))).collect();
    let mut found: BTreeSet<BTreeSet<String>> = BTreeSet::new();
    for (node, from_it) in &reached {
        if !from_it.contains(*node) {
            continue;
        }
        let part: BTreeSet<String> = from_it
            .iter()
            .filter(|other| reached[other].contains(*node))
            .cloned()
            .collect();
        if part.len() > 1 {
            found.insert(part);
        }
    }
    found.into_iter().collect()
}

/// A circle's files, then every edge between two of them with where it is written.
fn describe_circle(part: &BTreeSet<String>, graph: &Graph) -> String {
    let mut text = part.iter().cloned().collect::<Vec<_>>().join(", ");
    for from in part {
        for (to, sites) in &graph[from] {
            if part.contains(to) {
                let mut lines: Vec<usize> = sites.iter().map(|s| s.line).collect();
                lines.dedup();
                let shown: Vec<String> = lines.iter().map(|l| format!("{from}:{l}")).collect();
                text.push_str(&format!("\n    {from} -> {to}: {}", shown.join(", ")));
            }
        }
    }
    text
}

fn file_graph(root: &Path) -> Graph {
    Crate::read(root).graph()
}

#[test]
fn no_two_source_files_import_each_other_even_around_a_circle() {
    let graph = file_graph(Path::new(env!("CARGO_MANIFEST_DIR")));
    let edges: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
        .collect();
    assert!(
        edges.len() >= 20 && edges.values().map(BTreeSet::len).sum::<usize>() >= 40,
        "the file graph has too few files or edges to be read right: {edges:#?}"
    );
    let found = circles(&edges);
    let known: BTreeSet<BTreeSet<String>> = KNOWN_FILE_CIRCLES
        .iter()
        .map(|files| files.iter().map(|f| (*f).to_owned()).collect())
        .collect();
    let new: Vec<String> = found
        .iter()
        .filter(|part| !known.contains(*part))
        .map(|part| describe_circle(part, &graph))
        .collect();
    let all: Vec<String> = found.iter().map(|p| describe_circle(p, &graph)).collect();
    eprintln!(
        "{} file circle(s) in src/:\n{}",
        found.len(),
        all.join("\n")
    );
    assert!(
        new.is_empty(),
        "{} import circle(s) between files of src/ (each file reaches every other):\n\n{}",
        new.len(),
        new.join("\n\n")
    );
    let gone: Vec<&BTreeSet<String>> = known.iter().filter(|k| !found.contains(*k)).collect();
    assert!(
        gone.is_empty(),
        "no longer circles: remove them from KNOWN_FILE_CIRCLES: {gone:?}"
    );
}

/// A crate written out in a temporary directory: (path beneath `src/`, text).
fn crate_of(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temp dir");
    for (rel, text) in files {
        let path = dir.path().join("src").join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }
    dir
}

fn edge_list(graph: &Graph) -> Vec<String> {
    graph
        .iter()
        .flat_map(|(from, to)| to.keys().map(move |to| format!("{from} > {to}")))
        .collect()
}

#[test]
fn the_file_graph_follows_uses_paths_and_re_exports_to_the_defining_file() {
    let dir = crate_of(&[
        ("lib.rs", "pub mod agent;\npub mod tools;\n"),
        (
            "agent/mod.rs",
            "mod ledger;\nmod outcome;\npub use ledger::Ledger;\npub(crate) use outcome::{Line, render as draw};\npub struct Agent;\n",
        ),
        // A sibling through `super::` and through the parent's re-export.
        (
            "agent/ledger.rs",
            "use super::outcome::Line;\npub struct Ledger;\nfn f() { super::draw(); }\n",
        ),
        (
            "agent/outcome.rs",
            "pub struct Line;\npub fn render() {}\n#[cfg(test)]\nmod tests {\n    use super::*;\n    use crate::tools::Tool;\n    fn t() { render(); super::super::ledger::Ledger; }\n}\n",
        ),
        // A grouped use, a module brought in by name and a glob; a comment does not count.
        (
            "tools/mod.rs",
            "use crate::{agent::Agent, tools::spec};\nmod spec;\nuse crate::agent;\nfn g() { agent::Ledger::new(); spec::x(); }\n// crate::agent::outcome::Line\n",
        ),
        (
            "tools/spec.rs",
            "use super::super::agent::*;\npub fn x() {}\n",
        ),
    ]);
    let graph = file_graph(dir.path());
    assert_eq!(
        edge_list(&graph),
        [
            "src/agent/ledger.rs > src/agent/outcome.rs",
            "src/tools/mod.rs > src/agent/ledger.rs",
            "src/tools/mod.rs > src/agent/mod.rs",
            "src/tools/spec.rs > src/agent/mod.rs",
        ]
    );
}

#[test]
fn every_file_circle_is_found_with_the_files_on_it() {
    let dir = crate_of(&[
        ("lib.rs", "mod a;\nmod b;\nmod c;\nmod d;\nmod e;\n"),
        ("a.rs", "use crate::b::B;\npub struct A;\n"),
        ("b.rs", "pub struct B;\nfn f() { crate::a::A; }\n"),
        ("c.rs", "use crate::d::D;\npub struct C;\n"),
        ("d.rs", "use crate::e::E;\npub struct D;\n"),
        ("e.rs", "use crate::c::C;\npub struct E;\n"),
    ]);
    let graph = file_graph(dir.path());
    let edges: BTreeMap<String, BTreeSet<String>> = graph
        .iter()
        .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
        .collect();
    let found: Vec<Vec<String>> = circles(&edges)
        .into_iter()
        .map(|part| part.into_iter().collect())
        .collect();
    assert_eq!(
        found,
        [
            names(&["src/a.rs", "src/b.rs"]),
            names(&["src/c.rs", "src/d.rs", "src/e.rs"]),
        ]
    );
}
