//! The shape of `src/`: its top-level modules (`src/foo.rs` and everything under `src/foo/`
//! are `foo`; `src/lib.rs` and `src/main.rs` are the root) must not depend on each other in
//! a cycle, so each can be read, tested and changed with only what is below it in mind.
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
