//! find_symbol and the tree-sitter symbol index behind it.
//!
//! - one fixture per language with every Universal Ctags kind, checked line by line;
//! - freshness: same-size edits within the same second, added and removed files;
//! - the budget: the truncation line appears exactly when there is one definition more
//!   than the cap, and the output never exceeds it;
//! - scopes and qualified names through the model's path.
//!
//! The differentials against Universal Ctags on real trees are in `differential/`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use metron::project::Project;
use metron::testing::{Definitions, symbol_languages};
use metron::tools::symbols::SymbolIndex;
use metron::tools::{Budgets, ToolError, Toolbox};
use serde_json::json;

use super::differential::source_files;

/// A temporary project with a toolbox over it (also used by `symbol_langs/`).
pub(crate) struct Fixture {
    dir: tempfile::TempDir,
    toolbox: Toolbox,
}

impl Fixture {
    pub(crate) fn new(files: &[(&str, &str)]) -> Fixture {
        Fixture::with_budget(files, Budgets::default().list_max_entries)
    }

    fn with_budget(files: &[(&str, &str)], list_max_entries: usize) -> Fixture {
        let dir = tempfile::Builder::new()
            .prefix("metron-symbols-")
            .tempdir()
            .expect("tempdir");
        for (rel, body) in files {
            write(&dir.path().join(rel), body);
        }
        let project = Project::open(dir.path(), false).expect("open project");
        let budgets = Budgets {
            list_max_entries,
            ..Budgets::default()
        };
        Fixture {
            toolbox: Toolbox::new(project, budgets),
            dir,
        }
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    pub(crate) fn find(&self, symbol: &str) -> Result<String, ToolError> {
        self.toolbox
            .call("find_symbol", json!({ "symbol": symbol }))
    }

    /// The output lines, or the error text.
    pub(crate) fn lines(&self, symbol: &str) -> Vec<String> {
        match self.find(symbol) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(e) => vec![format!("error: {e}")],
        }
    }
}

/// find_symbol's answer for a name defined nowhere in a project whose supported files
/// are all in `languages` (as the answer names them: `Go`, `Go and Rust`).
pub(crate) fn not_found(name: &str, languages: &str) -> String {
    format!("No definition of `{name}` found in the project's {languages} files.")
}

pub(crate) fn write(path: &Path, body: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, body).expect("write");
}

pub(crate) const GO_EVERY_KIND: &str = r#"// Package greet has one of every ctags Go kind.
package greet

import (
	"fmt"
	str "strings"
)

const Version = "1.0"

const A, B = 1, 2

const (
	C1 = iota
	C2
	C3, C4 = 5, 6
)

var Counter int

var X, Y = 1, 2

var (
	V1 = 1
	V2, V3 string
)

type Speaker interface {
	fmt.Stringer
	Speak(loud bool) string
}

type ID = string

type Celsius float64

type Greeter struct {
	Name, Title string
	*Base
	fmt.Formatter
	List[int]
}

type List[V any] struct {
	items []V
}

type Base struct{}

func Greet(name string) string {
	const local = 1
	var lv = 2
	type localType struct{ z int }
	_ = str.ToUpper(name)
	return fmt.Sprint(local, lv)
}

func (g *Greeter) Speak(loud bool) string { return g.Name }

func (l List[V]) Len() int { return len(l.items) }
"#;

pub(crate) const LIB_RS: &str = r#"//! One of every ctags Rust kind, plus what ctags misses.

pub mod inner {
    pub fn nested() {}
}

mod decl;

pub const MAX: usize = 10;
static mut COUNTER: u32 = 0;

pub struct Point {
    pub x: i32,
    y: i32,
}

pub enum Shape {
    Circle { radius: f64 },
    Square(f64),
}

pub union Bits {
    int: u32,
    float: f32,
}

pub type Alias = Point;

pub trait Area {
    type Output;
    const SIDES: u32;
    fn area(&self) -> f64;
    fn describe(&self) -> String {
        String::new()
    }
}

impl Point {
    pub fn new(x: i32, y: i32) -> Self {
        Point { x, y }
    }
}

impl Area for Shape
where
    Shape: Sized,
{
    type Output = f64;
    const SIDES: u32 = 0;
    fn area(&self) -> f64 {
        fn helper() -> f64 { 1.0 }
        helper()
    }
}

impl std::fmt::Display for crate::Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result { Ok(()) }
}

impl<'a> Area for &'a Shape {}

macro_rules! square {
    ($x:expr) => { $x * $x };
}

extern "C" {
    fn c_func(x: i32) -> i32;
    static C_STATIC: i32;
}

pub fn r#match(r#type: u8) -> u8 { r#type }
"#;

#[test]
fn every_go_kind() {
    let f = Fixture::new(&[("greet.go", GO_EVERY_KIND)]);
    let cases: &[(&str, &[&str])] = &[
        ("greet", &["greet [package] -> greet.go:2"]),
        ("str", &["str [packageName] -> greet.go:6"]),
        ("Version", &["Version [const] -> greet.go:9"]),
        ("B", &["B [const] -> greet.go:11"]),
        ("C2", &["C2 [const] -> greet.go:15"]),
        ("C4", &["C4 [const] -> greet.go:16"]),
        ("Y", &["Y [var] -> greet.go:21"]),
        ("V3", &["V3 [var] -> greet.go:25"]),
        ("Speaker", &["Speaker [interface] -> greet.go:28"]),
        (
            "Speak",
            &[
                "Speak [methodSpec] Speaker -> greet.go:30",
                "Speak [func] Greeter -> greet.go:58",
            ],
        ),
        ("ID", &["ID [talias] -> greet.go:33"]),
        ("Celsius", &["Celsius [type] -> greet.go:35"]),
        ("Greeter", &["Greeter [struct] -> greet.go:37"]),
        ("Title", &["Title [member] Greeter -> greet.go:38"]),
        (
            "Base",
            &[
                "Base [anonMember] Greeter -> greet.go:39",
                "Base [struct] -> greet.go:48",
            ],
        ),
        (
            "Formatter",
            &["Formatter [anonMember] Greeter -> greet.go:40"],
        ),
        (
            "List",
            &[
                "List [anonMember] Greeter -> greet.go:41",
                "List [struct] -> greet.go:44",
            ],
        ),
        ("items", &["items [member] List -> greet.go:45"]),
        ("Greet", &["Greet [func] -> greet.go:50"]),
        ("Len", &["Len [func] List -> greet.go:60"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
    // An interface embedding another is not a definition (ctags agrees), and
    // declarations inside function bodies are not definitions (nor are they for ctags).
    for local in ["Stringer", "local", "lv", "localType", "z"] {
        assert_eq!(f.lines(local), [not_found(local, "Go")]);
    }
}

#[test]
fn every_rust_kind() {
    let f = Fixture::new(&[("src/lib.rs", LIB_RS)]);
    let cases: &[(&str, &[&str])] = &[
        ("inner", &["inner [module] -> src/lib.rs:3"]),
        ("nested", &["nested [function] inner -> src/lib.rs:4"]),
        ("decl", &["decl [module] -> src/lib.rs:7"]),
        ("MAX", &["MAX [constant] -> src/lib.rs:9"]),
        ("COUNTER", &["COUNTER [variable] -> src/lib.rs:10"]),
        (
            "Point",
            &[
                "Point [struct] -> src/lib.rs:12",
                "Point [implementation] -> src/lib.rs:38",
                "Point [implementation] -> src/lib.rs:56",
            ],
        ),
        ("y", &["y [field] Point -> src/lib.rs:14"]),
        (
            "Shape",
            &[
                "Shape [enum] -> src/lib.rs:17",
                "Shape [implementation] -> src/lib.rs:44",
                "Shape [implementation] -> src/lib.rs:60",
            ],
        ),
        ("Circle", &["Circle [enumerator] Shape -> src/lib.rs:18"]),
        ("radius", &["radius [field] Shape::Circle -> src/lib.rs:18"]),
        ("Square", &["Square [enumerator] Shape -> src/lib.rs:19"]),
        ("Bits", &["Bits [union] -> src/lib.rs:22"]),
        ("float", &["float [field] Bits -> src/lib.rs:24"]),
        ("Alias", &["Alias [typedef] -> src/lib.rs:27"]),
        ("Area", &["Area [interface] -> src/lib.rs:29"]),
        (
            "Output",
            &[
                "Output [typedef] Area -> src/lib.rs:30",
                "Output [typedef] Shape -> src/lib.rs:48",
            ],
        ),
        (
            "SIDES",
            &[
                "SIDES [constant] Area -> src/lib.rs:31",
                "SIDES [constant] Shape -> src/lib.rs:49",
            ],
        ),
        (
            "area",
            &[
                "area [method] Area -> src/lib.rs:32",
                "area [method] Shape -> src/lib.rs:50",
            ],
        ),
        ("describe", &["describe [method] Area -> src/lib.rs:33"]),
        ("new", &["new [method] Point -> src/lib.rs:39"]),
        (
            "helper",
            &["helper [function] Shape::area -> src/lib.rs:51"],
        ),
        ("fmt", &["fmt [method] Point -> src/lib.rs:57"]),
        ("square", &["square [macro] -> src/lib.rs:62"]),
        ("c_func", &["c_func [function] -> src/lib.rs:67"]),
        ("C_STATIC", &["C_STATIC [variable] -> src/lib.rs:68"]),
        ("match", &["match [function] -> src/lib.rs:71"]),
        ("r#match", &["match [function] -> src/lib.rs:71"]),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

#[test]
fn output_is_sorted_by_path_then_line_across_languages() {
    let f = Fixture::new(&[
        ("b.go", "package b\n\nfunc Run() {}\n"),
        ("a/z.rs", "fn x() {}\n\nfn Run() {}\n"),
        ("a/b.go", "package b\n\nvar Run = 1\n\nfunc init() {}\n"),
        ("a.go", "package a\n\ntype Run int\n"),
        ("a/notes.txt", "func Run() {}\n"),
        ("a/run.swift", "func Run() {}\n"),
    ]);
    assert_eq!(
        f.lines("Run"),
        [
            "Run [var] -> a/b.go:3",
            "Run [function] -> a/z.rs:3",
            "Run [type] -> a.go:3",
            "Run [func] -> b.go:3",
        ]
    );
}

#[test]
fn misses_and_bad_names_are_plain() {
    let f = Fixture::new(&[("a.go", "package a\n")]);
    assert_eq!(
        f.find("Nowhere"),
        Ok(format!("{}\n", not_found("Nowhere", "Go")))
    );
    assert!(matches!(f.find(""), Err(ToolError::BadArguments(_))));
    assert!(matches!(f.find("  \t"), Err(ToolError::BadArguments(_))));
    assert_eq!(
        f.find("io.Reader"),
        Ok("No definition of `Reader` found in scope `io`, nor anywhere else; search_text may find it.\n".to_owned())
    );
    assert!(matches!(f.find("a b"), Err(ToolError::Refused(_))));
    assert!(matches!(
        f.toolbox.call("find_symbol", json!({})),
        Err(ToolError::BadArguments(_))
    ));
    assert!(matches!(
        f.toolbox
            .call("find_symbol", json!({"symbol": "a", "extra": 1})),
        Err(ToolError::BadArguments(_))
    ));

    // With no file a grammar covers, the tool is withdrawn: a call is refused with why.
    let empty = Fixture::new(&[("main.swift", "func main() {}\n")]);
    let refused = empty.find("main");
    assert!(
        matches!(&refused, Err(ToolError::Refused(m)) if m.contains("no supported source files")),
        "{refused:?}"
    );
}

#[test]
fn ignored_and_hidden_files_are_skipped_like_list_files() {
    let f = Fixture::new(&[
        (".git/HEAD", "ref: refs/heads/main\n"),
        (".gitignore", "gen/\n"),
        ("keep.go", "package p\n\nfunc Target() {}\n"),
        ("gen/out.go", "package gen\n\nfunc Target() {}\n"),
        (".hidden/h.go", "package h\n\nfunc Target() {}\n"),
    ]);
    let project = Project::discover(f.dir.path()).expect("discover");
    let toolbox = Toolbox::new(project, Budgets::default());
    assert_eq!(
        toolbox.call("find_symbol", json!({"symbol": "Target"})),
        Ok("Target [func] -> keep.go:3\n".to_owned())
    );
}

/// Sets a file's modification time (to fake a coarse clock).
fn set_mtime(path: &Path, mtime: SystemTime) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open for set_modified");
    file.set_modified(mtime).expect("set_modified");
}

#[test]
fn edits_additions_and_removals_are_seen_at_once() {
    let f = Fixture::new(&[
        ("a.go", "package a\n\nfunc Alpha() {}\n"),
        ("b.go", "package a\n\nfunc Gamma() {}\n"),
    ]);
    let now = SystemTime::now();
    set_mtime(&f.path("a.go"), now);
    assert_eq!(f.lines("Alpha"), ["Alpha [func] -> a.go:3"]);

    // Same size, same mtime (a coarse clock would give exactly this).
    write(&f.path("a.go"), "package a\n\nfunc Omega() {}\n");
    set_mtime(&f.path("a.go"), now);
    assert_eq!(f.lines("Alpha"), [not_found("Alpha", "Go")]);
    assert_eq!(f.lines("Omega"), ["Omega [func] -> a.go:3"]);

    // A new file, in a new directory.
    write(&f.path("sub/c.go"), "package sub\n\nfunc Omega() {}\n");
    assert_eq!(
        f.lines("Omega"),
        ["Omega [func] -> a.go:3", "Omega [func] -> sub/c.go:3"]
    );

    // A removed file.
    std::fs::remove_file(f.path("a.go")).expect("remove");
    assert_eq!(f.lines("Omega"), ["Omega [func] -> sub/c.go:3"]);

    // A file that did not mention the name before, edited to define it.
    write(
        &f.path("b.go"),
        "package a\n\nfunc Gamma() {}\n\nfunc Omega() {}\n",
    );
    assert_eq!(
        f.lines("Omega"),
        ["Omega [func] -> b.go:5", "Omega [func] -> sub/c.go:3"]
    );

    // A file renamed away from Go.
    std::fs::rename(f.path("b.go"), f.path("b.go.txt")).expect("rename");
    assert_eq!(f.lines("Omega"), ["Omega [func] -> sub/c.go:3"]);
}

/// Sets every file's and directory's modification time a minute back, so nothing in
/// the tree is "racily clean" and the index trusts stamps (its fast path).
fn age_tree(dir: &Path) {
    let old = SystemTime::now() - std::time::Duration::from_secs(60);
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                age_tree(&path);
            } else {
                set_mtime(&path, old);
            }
        }
    }
    // A directory last, after its entries (changing an entry's times leaves it alone).
    if let Ok(handle) = std::fs::File::open(dir) {
        let _ = handle.set_times(std::fs::FileTimes::new().set_modified(old));
    }
}

#[test]
fn a_settled_tree_still_sees_every_change() {
    // Aged files and directories take the fast path: the file list is reused while no
    // directory or ignore file changed, and file stamps are trusted without hashing.
    let f = Fixture::new(&[
        ("a.go", "package a\n\nfunc Alpha() {}\n"),
        ("sub/b.go", "package sub\n\nfunc Beta() {}\n"),
        ("gen/c.go", "package gen\n\nfunc Beta() {}\n"),
        (".ignore", "nothing-yet/\n"),
    ]);
    age_tree(f.dir.path());
    assert_eq!(
        f.lines("Beta"),
        ["Beta [func] -> gen/c.go:3", "Beta [func] -> sub/b.go:3"]
    );
    let again = f.toolbox.symbols().lookup_with_stats("Beta", 10);
    let Ok((found, stats)) = again else {
        panic!("{again:?}");
    };
    assert_eq!(found.definitions.len(), 2);
    assert!(
        !stats.walked,
        "a settled tree is not walked again: {stats:?}"
    );
    assert_eq!((stats.reads, stats.parses), (0, 0), "{stats:?}");

    // A new file in a directory the index already knows.
    write(&f.path("sub/d.go"), "package sub\n\nfunc Beta() {}\n");
    assert_eq!(
        f.lines("Beta"),
        [
            "Beta [func] -> gen/c.go:3",
            "Beta [func] -> sub/b.go:3",
            "Beta [func] -> sub/d.go:3",
        ]
    );
    age_tree(f.dir.path());

    // An ignore rule edited in place (same directory, so only the rule file's stamp
    // changes).
    write(&f.path(".ignore"), "gen/\n");
    assert_eq!(
        f.lines("Beta"),
        ["Beta [func] -> sub/b.go:3", "Beta [func] -> sub/d.go:3"]
    );
    age_tree(f.dir.path());

    // A file edited to stop defining the name, and one removed.
    write(&f.path("sub/b.go"), "package sub\n\nfunc Gone() {}\n");
    std::fs::remove_file(f.path("sub/d.go")).expect("remove");
    assert_eq!(f.lines("Beta"), [not_found("Beta", "Go")]);
    assert_eq!(f.lines("Gone"), ["Gone [func] -> sub/b.go:3"]);
    age_tree(f.dir.path());

    // A new directory, deep down.
    write(&f.path("sub/x/y/e.go"), "package y\n\nfunc Gone() {}\n");
    assert_eq!(
        f.lines("Gone"),
        ["Gone [func] -> sub/b.go:3", "Gone [func] -> sub/x/y/e.go:3"]
    );
}

#[test]
fn truncation_line_appears_exactly_past_the_cap() {
    // `n` files, each defining `Dup` once; file names sort in numeric order.
    let files = |n: usize| -> Vec<(String, String)> {
        (0..n)
            .map(|i| {
                (
                    format!("d{i:03}.go"),
                    format!("package d\n\nfunc Dup() {{}}\n// filler {i}\n"),
                )
            })
            .collect()
    };
    let cap = 5;
    for (n, truncated) in [(cap - 1, false), (cap, false), (cap + 1, true), (300, true)] {
        let owned = files(n);
        let borrowed: Vec<(&str, &str)> = owned
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_str()))
            .collect();
        let f = Fixture::with_budget(&borrowed, cap);
        let lines = f.lines("Dup");
        let shown = n.min(cap);
        let expected: Vec<String> =
            (0..shown)
                .map(|i| format!("Dup [func] -> d{i:03}.go:3"))
                .chain(truncated.then(|| {
                    format!("[truncated to {cap} definitions; more exist in later paths]")
                }))
                .collect();
        assert_eq!(lines, expected, "{n} definitions, cap {cap}");
        // Asking again (now from the cache) gives the same answer.
        assert_eq!(
            f.lines("Dup"),
            expected,
            "{n} definitions, cap {cap}, again"
        );
    }
}

#[test]
fn early_stop_leaves_later_files_unparsed_yet_correct() {
    // 1000 files mention `Common`; every one defines it. With a cap of 3 the first chunk
    // settles the answer, and chunks are never handed out more than 8 (the look-ahead
    // window) past the finished prefix, so at most 8 × 32 files get parsed however the
    // threads are scheduled. A later lookup of a rare name still finds the last file.
    let owned: Vec<(String, String)> = (0..1000)
        .map(|i| {
            let rare = if i == 999 { "\nfunc Rare() {}\n" } else { "" };
            (
                format!("p{i:04}/x.go"),
                format!("package p\n\nfunc Common() {{}}\n{rare}"),
            )
        })
        .collect();
    let borrowed: Vec<(&str, &str)> = owned
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_str()))
        .collect();
    let f = Fixture::with_budget(&borrowed, 3);
    assert_eq!(f.lines("Common").len(), 4);
    let parsed = f.toolbox.symbols().parsed_files();
    assert!(
        (32..=256).contains(&parsed),
        "{parsed} files parsed for a capped answer"
    );
    assert_eq!(f.lines("Rare"), ["Rare [func] -> p0999/x.go:5"]);
}

#[test]
fn output_never_exceeds_the_cap() {
    let body: String = (0..50)
        .map(|i| format!("fn f{i}() {{}}\nmod m{i} {{ fn same() {{}} }}\n"))
        .collect();
    for cap in [0, 1, 7, 49, 50, 51] {
        let f = Fixture::with_budget(&[("lib.rs", &body)], cap);
        let lines = f.lines("same");
        let defs = lines.iter().filter(|l| l.contains(" -> ")).count();
        assert_eq!(defs, cap.min(50), "cap {cap}");
        assert_eq!(
            lines.last().is_some_and(|l| l.starts_with("[truncated")),
            cap < 50,
            "cap {cap}"
        );
    }
}

/// Copies the `.rs` files under `from` into `to`, keeping relative paths.
fn copy_sources(from: &Path, to: &Path) {
    let mut files = Vec::new();
    source_files(from, "rs", &mut files);
    for file in files {
        let Ok(relative) = file.strip_prefix(from) else {
            continue;
        };
        if let Ok(bytes) = std::fs::read(&file) {
            write(&to.join(relative), &String::from_utf8_lossy(&bytes));
        }
    }
}

#[test]
fn lookups_through_the_index_match_direct_extraction() {
    // The index (prefilter, caches, threads, early stop) must agree with a plain
    // extract-everything pass on real code: a copy of this crate's sources (a copy, so
    // edits made while the test runs cannot race it).
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().expect("tempdir");
    for sub in ["src", "tests", "benches"] {
        copy_sources(&manifest.join(sub), &dir.path().join(sub));
    }
    let index = SymbolIndex::new(Arc::new(Project::open(dir.path(), false).expect("open")));
    let project = index.project();
    for name in [
        "Project",
        "lookup",
        "SymbolIndex",
        "new",
        "KINDS",
        "run",
        "fmt",
    ] {
        for limit in [10_000, 3] {
            let Ok(found) = index.lookup(name, limit) else {
                panic!("lookup {name}");
            };
            let mut expected = Vec::new();
            let mut extractor = Definitions::new();
            for path in metron::testing::walk_files(project) {
                let bytes = project.read(&path).expect("read");
                let Some(defs) = extractor.of(path.as_str(), &bytes) else {
                    continue;
                };
                for (_, line, kind) in defs.into_iter().filter(|(n, _, _)| n == name) {
                    expected.push((path.as_str().to_owned(), line, kind));
                }
            }
            assert_eq!(found.truncated, expected.len() > limit, "{name} {limit}");
            expected.truncate(limit);
            let got: Vec<_> = found
                .definitions
                .iter()
                .map(|d| (d.path.clone(), d.line, d.kind))
                .collect();
            assert_eq!(got, expected, "{name} {limit}");
        }
    }
}

// ---------------------------------------------------------------------------------
// Scopes and qualified names, through the model's path.
// ---------------------------------------------------------------------------------

pub(crate) const GIN_GO: &str = "package gin\n\ntype Context struct {\n\tWriter int\n}\n\n\
func (c *Context) JSON(code int) {}\n\nfunc (e *Engine) JSON() {}\n\n\
type Greeter interface {\n\tGreet() string\n}\n\nfunc Top() {}\n";

pub(crate) const PARSE_RS: &str = "pub mod outer {\n    pub mod inner {\n        pub struct S { pub f: i32 }\n        \
impl S {\n            pub fn new() -> Self { S { f: 0 } }\n        }\n    }\n}\n\n\
pub struct Parser;\n\nimpl Parser {\n    pub fn new() -> Self { Parser }\n}\n\n\
pub trait Greeter {\n    fn greet(&self);\n}\n\nimpl Greeter for Parser {\n    fn greet(&self) {}\n}\n\n\
pub enum Token { Word(String), End }\n";

#[test]
fn every_answer_names_its_scope() {
    let f = Fixture::new(&[("context.go", GIN_GO), ("src/parse.rs", PARSE_RS)]);
    let cases: &[(&str, &[&str])] = &[
        (
            "JSON",
            &[
                "JSON [func] Context -> context.go:7",
                "JSON [func] Engine -> context.go:9",
            ],
        ),
        ("Writer", &["Writer [member] Context -> context.go:4"]),
        ("Greet", &["Greet [methodSpec] Greeter -> context.go:12"]),
        ("Top", &["Top [func] -> context.go:15"]),
        (
            "new",
            &[
                "new [method] outer::inner::S -> src/parse.rs:5",
                "new [method] Parser -> src/parse.rs:13",
            ],
        ),
        ("f", &["f [field] outer::inner::S -> src/parse.rs:3"]),
        ("inner", &["inner [module] outer -> src/parse.rs:2"]),
        (
            "greet",
            &[
                "greet [method] Greeter -> src/parse.rs:17",
                "greet [method] Parser -> src/parse.rs:21",
            ],
        ),
        ("Word", &["Word [enumerator] Token -> src/parse.rs:24"]),
        (
            "Parser",
            &[
                "Parser [struct] -> src/parse.rs:10",
                "Parser [implementation] -> src/parse.rs:12",
                "Parser [implementation] -> src/parse.rs:20",
            ],
        ),
    ];
    for (name, expected) in cases {
        assert_eq!(f.lines(name), *expected, "find_symbol({name})");
    }
}

#[test]
fn qualified_names_narrow_the_answer() {
    let f = Fixture::new(&[("context.go", GIN_GO), ("src/parse.rs", PARSE_RS)]);
    let context_json = ["JSON [func] Context -> context.go:7"];
    for query in [
        "Context.JSON",
        "Context::JSON",
        "(*Context).JSON",
        "gin.Context.JSON",
    ] {
        assert_eq!(f.lines(query), context_json, "{query}");
    }
    // The Go package is the scope of the file's top-level definitions.
    assert_eq!(f.lines("gin.Top"), ["Top [func] -> context.go:15"]);
    assert_eq!(
        f.lines("Greeter.Greet"),
        ["Greet [methodSpec] Greeter -> context.go:12"]
    );
    // Nested Rust scopes: any tail of the path narrows.
    let inner_new = ["new [method] outer::inner::S -> src/parse.rs:5"];
    for query in ["outer::inner::S::new", "inner::S::new", "S::new", "S.new"] {
        assert_eq!(f.lines(query), inner_new, "{query}");
    }
    assert_eq!(
        f.lines("Parser::new"),
        ["new [method] Parser -> src/parse.rs:13"]
    );
    assert_eq!(
        f.lines("Greeter::greet"),
        ["greet [method] Greeter -> src/parse.rs:17"]
    );
    assert_eq!(
        f.lines("Token::End"),
        ["End [enumerator] Token -> src/parse.rs:24"]
    );
    // A qualifier must match the end of the scope path, segment by segment.
    assert_eq!(
        f.lines("outer::S::new"),
        [
            "No definition of `new` found in scope `outer::S`; `new` alone has 2 definitions: ask for `new`."
        ]
    );
    assert_eq!(
        f.lines("Nope.JSON"),
        [
            "No definition of `JSON` found in scope `Nope`; `JSON` alone has 2 definitions: ask for `JSON`."
        ]
    );
    // An unqualified name is unchanged: every definition, whatever its scope.
    assert_eq!(f.lines("JSON").len(), 2);
}

// ---------------------------------------------------------------------------------
// Offered only when it can answer; the doctor and /config say which languages.
// ---------------------------------------------------------------------------------

use super::common::{TestProject, events_of_type, json_events, metron};
use super::fake_ollama::{FakeOllama, answer};

#[test]
fn find_symbol_is_not_offered_in_a_project_without_supported_files() {
    let p = TestProject::git();
    p.file("app.swift", "func main() {}\n");
    p.file("README.md", "# app\n");
    let fake = FakeOllama::start(vec![answer("ok", 10, 1)]);
    let run = metron(p.root())
        .args(["-p", "hello", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let (_, events) = json_events(run);
    let start = events_of_type(&events, "session_start")[0];
    let offered = start["tools_offered"].to_string();
    assert!(!offered.contains("find_symbol"), "{start}");
    let withdrawn = start["tools_withdrawn"]
        .as_array()
        .and_then(|all| all.iter().find(|t| t["name"] == "find_symbol"))
        .unwrap_or_else(|| panic!("find_symbol is not among the withdrawn: {start}"));
    assert!(
        withdrawn["reason"]
            .as_str()
            .is_some_and(|r| r.contains("no supported source files")),
        "{withdrawn}"
    );
    let bodies = fake.chat_bodies();
    assert!(!bodies.is_empty());
    for body in &bodies {
        let tools = body["tools"].to_string();
        assert!(tools.contains("list_files"), "{tools}");
        assert!(!tools.contains("find_symbol"), "{tools}");
    }

    // Once a Go file is there, a new session offers it again.
    p.file("main.go", "package main\n");
    let fake = FakeOllama::start(vec![answer("ok", 10, 1)]);
    let run = metron(p.root())
        .args(["-p", "hello", "--json"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    let (_, events) = json_events(run);
    let start = events_of_type(&events, "session_start")[0];
    assert!(
        start["tools_offered"].to_string().contains("find_symbol"),
        "{start}"
    );
    let tools = fake.chat_bodies()[0]["tools"].to_string();
    assert!(tools.contains("find_symbol"), "{tools}");
}

#[test]
fn doctor_and_config_name_the_languages_found_and_not_covered() {
    let p = TestProject::git();
    p.file("a.go", "package a\n");
    p.file("cmd/b.go", "package main\n");
    p.file("src/lib.rs", "fn f() {}\n");
    p.file("tools/x.swift", "let x = 1\n");
    p.file("tools/y.swift", "let y = 1\n");
    p.file("web/App.vue", "<template/>\n");
    p.file("notes.md", "# notes\n");
    p.file("data.json", "{}\n");
    let expected = "find_symbol: Go 2 files, Rust 1; no grammar for 2 .swift files, 1 .vue file";

    let fake = FakeOllama::start(vec![]);
    let run = metron(p.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("tools") && l.ends_with(expected)),
        "{run:?}"
    );

    let fake = FakeOllama::start(vec![]);
    let run = metron(p.root())
        .env("OLLAMA_HOST", fake.base_url())
        .stdin("/config\n")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(run.stdout.lines().any(|l| l == expected), "{run:?}");

    // Without any supported file the doctor says why the tool is withdrawn.
    let swift = TestProject::git();
    swift.file("app.swift", "func main() {}\n");
    let fake = FakeOllama::start(vec![]);
    let run = metron(swift.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", fake.base_url())
        .run();
    assert!(
        run.stdout
            .lines()
            .any(|l| l.contains("find_symbol withdrawn: no supported source files")),
        "{run:?}"
    );
    assert!(
        run.stdout.lines().any(|l| l.ends_with(&format!(
            "find_symbol: no {} files; no grammar for 1 .swift file",
            symbol_languages()
        ))),
        "{run:?}"
    );
}

// ---------------------------------------------------------------------------------------
// Pathological nesting (issue 25, M6): each shape that once took a minute or more and
// gigabytes, through `metron tool find_symbol`, with the process's time and peak RSS.
// ---------------------------------------------------------------------------------------

/// What one `metron tool find_symbol` run printed, how long it took, and its peak
/// resident set (sampled from /proc: see [`super::common::run_with_peak`]; 0 where there
/// is no /proc).
#[derive(Debug)]
struct Measured {
    stdout: String,
    code: i32,
    took: std::time::Duration,
    peak_mib: i64,
}

/// Runs `metron tool find_symbol {"symbol": symbol}` in `root` and measures it.
fn find_symbol_measured(root: &Path, symbol: &str) -> Measured {
    let (mut command, _home) = super::common::hermetic(env!("CARGO_BIN_EXE_metron"), root);
    command.args([
        "tool",
        "find_symbol",
        &json!({ "symbol": symbol }).to_string(),
    ]);
    let peak = super::common::run_with_peak_within(command, NESTED_TIME_LIMIT);
    let measured = Measured {
        stdout: peak.run.stdout,
        code: peak.run.code,
        took: peak.took,
        peak_mib: peak
            .rss_kib
            .map_or(0, |kib| i64::try_from(kib / 1024).unwrap_or(i64::MAX)),
    };
    eprintln!(
        "find_symbol {symbol}: {:.1} s, {} MiB",
        measured.took.as_secs_f64(),
        measured.peak_mib
    );
    measured
}

/// A project holding `deep` (a pathologically nested file) and `plain` (an ordinary
/// one), both defining `target`.
fn nested_project(deep: (&str, String), plain: (&str, &str)) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("metron-nested-")
        .tempdir()
        .expect("tempdir");
    write(&dir.path().join(deep.0), &deep.1);
    write(&dir.path().join(plain.0), plain.1);
    dir
}

/// `depth` copies of `open` around `inner`, closed by `close`.
fn nest(open: &str, inner: &str, close: &str, depth: usize) -> String {
    let mut text = String::with_capacity(depth * (open.len() + close.len()) + inner.len());
    for _ in 0..depth {
        text.push_str(open);
    }
    text.push_str(inner);
    for _ in 0..depth {
        text.push_str(close);
    }
    text
}

/// The time a pathological shape may take through the real binary: far above the few
/// seconds it takes now in a debug build (it took 22 s to over 300 s before the bounds),
/// and above the lookup's own budget of 20 s, which would cut it short and say so.
const NESTED_TIME_LIMIT: std::time::Duration = std::time::Duration::from_secs(60);

/// Peak RSS for the shapes of a few hundred KB (829 MB to 3.2 GB before the bounds).
const NESTED_SMALL_MIB: i64 = 256;

/// Peak RSS for the shapes of several MB: tree-sitter's own tree of a 4 MB file of
/// nesting is most of it.
const NESTED_LARGE_MIB: i64 = 768;

/// Checks that the run finished in time and memory, listed the ordinary file's
/// definition, and named the deep file as cut (or, on a machine too loaded to parse it
/// within the lookup's budget, said the lookup ran out): never a silent miss.
fn assert_bounded(m: &Measured, deep: &str, plain: &str, max_mib: i64) {
    assert_eq!(m.code, 0, "{m:?}");
    assert!(m.took < NESTED_TIME_LIMIT, "{m:?}");
    assert!(m.peak_mib < max_mib, "{m:?}");
    assert!(m.stdout.contains(&format!("-> {plain}:")), "{m:?}");
    let cut = format!("[{deep} is indexed only in part (definitions nested more than 256");
    let out_of_time = "[the lookup ran out of its 20 s budget";
    assert!(
        m.stdout.contains(&cut) || m.stdout.contains(out_of_time),
        "{m:?}"
    );
}

#[test]
fn forty_thousand_nested_rust_modules_are_bounded() {
    let deep = nest("mod a {\n", "fn target() {}\n", "}\n", 40_000);
    let dir = nested_project(("deep.rs", deep), ("plain.rs", "fn target() {}\n"));
    let m = find_symbol_measured(dir.path(), "target");
    assert_bounded(&m, "deep.rs", "plain.rs", NESTED_SMALL_MIB);
}

#[test]
fn twenty_thousand_nested_java_classes_are_bounded() {
    let mut deep = String::new();
    for i in 0..20_000 {
        deep.push_str(&format!("class C{i} {{\n"));
    }
    deep.push_str("void target() {}\n");
    deep.push_str(&"}\n".repeat(20_000));
    let dir = nested_project(
        ("Deep.java", deep),
        ("Plain.java", "class Plain {\n  void target() {}\n}\n"),
    );
    let m = find_symbol_measured(dir.path(), "target");
    assert_bounded(&m, "Deep.java", "Plain.java", NESTED_SMALL_MIB);
}

#[test]
fn nested_csharp_namespaces_of_280_kb_are_bounded() {
    // 14 bytes of `namespace N {\n` and 2 of `}\n` per level: 280 KB of nesting.
    let deep = nest("namespace N {\n", "class target {}\n", "}\n", 17_500);
    assert!(deep.len() >= 280_000, "{}", deep.len());
    let dir = nested_project(("Deep.cs", deep), ("Plain.cs", "class target {}\n"));
    let m = find_symbol_measured(dir.path(), "target");
    assert_bounded(&m, "Deep.cs", "Plain.cs", NESTED_SMALL_MIB);
}

#[test]
fn megabytes_of_nested_rust_modules_are_bounded() {
    let deep = nest("mod a {\n", "fn target() {}\n", "}\n", 400_000);
    assert!(deep.len() >= 4_000_000, "{}", deep.len());
    let dir = nested_project(("deep.rs", deep), ("plain.rs", "fn target() {}\n"));
    let m = find_symbol_measured(dir.path(), "target");
    assert_bounded(&m, "deep.rs", "plain.rs", NESTED_LARGE_MIB);
}

#[test]
fn megabytes_of_nested_cpp_namespaces_are_bounded() {
    let deep = nest(
        "namespace n {\n",
        "int target() { return 0; }\n",
        "}\n",
        250_000,
    );
    assert!(deep.len() >= 4_000_000, "{}", deep.len());
    let dir = nested_project(
        ("deep.cpp", deep),
        ("plain.cpp", "int target() { return 0; }\n"),
    );
    let m = find_symbol_measured(dir.path(), "target");
    assert_bounded(&m, "deep.cpp", "plain.cpp", NESTED_LARGE_MIB);
}

/// A source file one byte over the 8 MiB parse bound, defining the name: it is not
/// parsed, and the answer says so instead of "no definition" (the bound is not a silent
/// miss); one at exactly the bound is parsed and found.
#[test]
fn a_file_over_the_parse_bound_is_named_not_missed() {
    const BOUND: usize = 8 * 1024 * 1024;
    let sized = |bytes: usize| {
        let head = "package big\n\nfunc Target() {}\n";
        let mut text = String::with_capacity(bytes);
        text.push_str(head);
        while text.len() + 12 <= bytes {
            text.push_str("// padding\n");
        }
        text.push_str(&"/".repeat(bytes - text.len() - 1));
        text.push('\n');
        assert_eq!(text.len(), bytes);
        text
    };
    let dir = nested_project(("big.go", sized(BOUND + 1)), ("plain.go", "package big\n"));
    let m = find_symbol_measured(dir.path(), "Target");
    assert_eq!(m.code, 0, "{m:?}");
    assert!(
        m.stdout
            .contains("[big.go is indexed only in part (it is larger than 8 MiB"),
        "{m:?}"
    );
    write(&dir.path().join("big.go"), &sized(BOUND));
    let m = find_symbol_measured(dir.path(), "Target");
    assert!(m.stdout.contains("-> big.go:3"), "{m:?}");
    assert!(!m.stdout.contains("indexed only in part"), "{m:?}");
}
