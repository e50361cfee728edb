//! find_symbol and the tree-sitter symbol index behind it.
//!
//! - one fixture per language with every Universal Ctags kind, checked line by line;
//! - freshness: same-size edits within the same second, added and removed files;
//! - the budget: the truncation line appears exactly when there is one definition more
//!   than the cap, and the output never exceeds it;
//! - a differential against Universal Ctags on a real Go tree and a real Rust tree,
//!   printing per-kind recall (run with `--nocapture` to see the tables). The Go tree is
//!   `$METRON_GO_TREE`, else the Debian golang-src tree if installed; the Rust tree is
//!   this crate plus the first crates of the cargo registry. Missing trees or a missing
//!   (or non-Universal) ctags skip the test with a printed note.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::SystemTime;

use metron::project::Project;
use metron::testing::Definitions;
use metron::tools::symbols::SymbolIndex;
use metron::tools::{Budgets, ToolError, Toolbox};
use serde_json::json;

use super::common::{ctags_available, skip};

/// A temporary project with a toolbox over it.
struct Fixture {
    dir: tempfile::TempDir,
    toolbox: Toolbox,
}

impl Fixture {
    fn new(files: &[(&str, &str)]) -> Fixture {
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

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn find(&self, symbol: &str) -> Result<String, ToolError> {
        self.toolbox
            .call("find_symbol", json!({ "symbol": symbol }))
    }

    /// The output lines, or the error text.
    fn lines(&self, symbol: &str) -> Vec<String> {
        match self.find(symbol) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(e) => vec![format!("error: {e}")],
        }
    }
}

fn write(path: &Path, body: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, body).expect("write");
}

const GO_EVERY_KIND: &str = r#"// Package greet has one of every ctags Go kind.
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

const LIB_RS: &str = r#"//! One of every ctags Rust kind, plus what ctags misses.

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
        // An interface embedding another is not a definition (ctags agrees).
        (
            "Stringer",
            &["No definition of `Stringer` found in Go or Rust files."],
        ),
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
    // Declarations inside function bodies are not definitions (nor are they for ctags).
    for local in ["local", "lv", "localType", "z"] {
        assert_eq!(
            f.lines(local),
            [format!(
                "No definition of `{local}` found in Go or Rust files."
            )]
        );
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
        ("a/run.py", "def Run(): pass\n"),
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
        Ok("No definition of `Nowhere` found in Go or Rust files.\n".to_owned())
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
    let empty = Fixture::new(&[("main.py", "def main(): pass\n")]);
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
    assert_eq!(
        f.lines("Alpha"),
        ["No definition of `Alpha` found in Go or Rust files."]
    );
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
    let again = f
        .toolbox
        .symbols()
        .lookup_with_stats(f.toolbox.project(), "Beta", 10);
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
    assert_eq!(
        f.lines("Beta"),
        ["No definition of `Beta` found in Go or Rust files."]
    );
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

// ---------------------------------------------------------------------------------
// Differential against Universal Ctags.
// ---------------------------------------------------------------------------------

/// Every file under `root` (not following symlinks, skipping hidden entries) with the
/// given extension, relative to `root`, sorted.
fn source_files(root: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            source_files(&path, extension, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

/// A tag: name, file, line.
type Tag = (String, String, usize);

/// A ctags tag with its kind and scope (`struct:gin.Context`; empty without one).
struct CtagsTag {
    kind: String,
    tag: Tag,
    scope: String,
}

/// Runs Universal Ctags over `files` (absolute paths) and returns its tags.
fn ctags_tags(lang: &str, files: &[PathBuf]) -> Vec<CtagsTag> {
    let mut child = Command::new("ctags")
        .args([
            "--fields=+nKsZ",
            "--excmd=number",
            &format!("--languages={lang}"),
            "-L",
            "-",
            "-f",
            "-",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ctags");
    let list: String = files.iter().map(|p| format!("{}\n", p.display())).collect();
    let mut stdin = child.stdin.take().expect("ctags stdin");
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let output = child.wait_with_output().expect("run ctags");
    let _ = writer.join();
    let mut tags = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if line.starts_with("!_") {
            continue;
        }
        // name \t file \t 123;" \t kind \t line:123 ...
        let fields: Vec<&str> = line.split('\t').collect();
        let (Some(name), Some(file), Some(kind)) = (fields.first(), fields.get(1), fields.get(3))
        else {
            continue;
        };
        let Some(line_no) = fields
            .iter()
            .find_map(|f| f.strip_prefix("line:"))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let scope = fields
            .iter()
            .find_map(|f| f.strip_prefix("scope:"))
            .unwrap_or("");
        tags.push(CtagsTag {
            kind: (*kind).to_owned(),
            tag: ((*name).to_owned(), (*file).to_owned(), line_no),
            scope: scope.to_owned(),
        });
    }
    tags
}

/// The (kind, tag) pairs of ctags' tags, for [`recall`].
fn kinds_and_tags(tags: &[CtagsTag]) -> Vec<(String, Tag)> {
    tags.iter()
        .map(|t| (t.kind.clone(), t.tag.clone()))
        .collect()
}

/// How often our scope equals ctags' for the tags both found; prints a per-kind table
/// and the first disagreements, and returns (agreeing, compared). `normalize` turns
/// ctags' `kind:name` scope field into the scope path find_symbol shows.
fn scope_agreement(
    title: &str,
    ctags: &[CtagsTag],
    ours: &std::collections::HashMap<Tag, String>,
    normalize: impl Fn(&str) -> String,
) -> (usize, usize) {
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut differences = Vec::new();
    for theirs in ctags {
        let Some(scope) = ours.get(&theirs.tag) else {
            continue;
        };
        let expected = normalize(&theirs.scope);
        let row = by_kind.entry(theirs.kind.as_str()).or_default();
        row.1 += 1;
        if *scope == expected {
            row.0 += 1;
        } else {
            differences.push((theirs, expected, scope));
        }
    }
    let (agree, total) = by_kind
        .values()
        .fold((0, 0), |(a, t), row| (a + row.0, t + row.1));
    println!("\n{title}: scope agreement with ctags (tags both found)");
    for (kind, (a, t)) in &by_kind {
        let pct = 100.0 * *a as f64 / (*t).max(1) as f64;
        println!("{kind:<14} {t:>9} {a:>9} {pct:>8.2}%");
    }
    let pct = 100.0 * agree as f64 / total.max(1) as f64;
    println!("{:<14} {total:>9} {agree:>9} {pct:>8.2}%", "all");
    for (theirs, expected, scope) in differences.iter().take(
        std::env::var("METRON_SHOW_MISSES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(15),
    ) {
        let (name, file, line) = &theirs.tag;
        println!(
            "  scope: {name} [{}] {file}:{line}: ctags `{expected}`, ours `{scope}`",
            theirs.kind
        );
    }
    (agree, total)
}

/// ctags' Go scope as find_symbol shows it: without the kind and the package
/// (`struct:gin.Context` is `Context`; `package:gin` is top level).
fn go_scope(field: &str) -> String {
    match field.split_once(':') {
        Some(("package", _)) | None => String::new(),
        Some((_, path)) => path
            .split_once('.')
            .map_or(path, |(_, rest)| rest)
            .to_owned(),
    }
}

/// ctags' Rust scope as find_symbol shows it: without the kind
/// (`implementation:outer::S` is `outer::S`).
fn rust_scope(field: &str) -> String {
    field
        .split_once(':')
        .map_or("", |(_, path)| path)
        .to_owned()
}

/// Extracts every definition from `files` with the index's own extractor, on two
/// threads, with its scope.
fn our_tags(files: &[PathBuf]) -> std::collections::HashMap<Tag, String> {
    let halves: Vec<&[PathBuf]> = files.chunks(files.len().div_ceil(2).max(1)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = halves
            .into_iter()
            .map(|half| {
                scope.spawn(move || {
                    let mut extractor = Definitions::new();
                    let mut tags = std::collections::HashMap::new();
                    for path in half {
                        let Ok(bytes) = std::fs::read(path) else {
                            continue;
                        };
                        let shown = path.display().to_string();
                        let defs = extractor
                            .of_scoped(&shown, &bytes)
                            .expect("a Go or Rust file");
                        for def in defs {
                            tags.insert((def.name, shown.clone(), def.line), def.scope);
                        }
                    }
                    tags
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("extract thread"))
            .collect()
    })
}

/// Known ctags false positives, documented in the project's tree-sitter research notes:
/// ctags reads `&'static T` in any Rust type as a static item named `T` (kind
/// `variable`), and reads `%2` inside tracing-style macro calls as a macro named `2`.
/// Neither is a definition, so neither counts against recall.
fn is_ctags_false_positive(kind: &str, tag: &Tag, source_line: Option<&str>) -> bool {
    let (name, _, _) = tag;
    if !name.starts_with(|c: char| c == '_' || c.is_alphabetic()) {
        return true;
    }
    if kind == "variable" {
        // A real static has `static NAME` or `static mut NAME` not preceded by `'`.
        let line = source_line.unwrap_or("");
        let defines = line.match_indices("static ").any(|(at, _)| {
            let rest = &line[at + "static ".len()..];
            let rest = rest.strip_prefix("mut ").unwrap_or(rest);
            !line[..at].ends_with('\'')
                && rest.starts_with(name.as_str())
                && !rest[name.len()..].starts_with(|c: char| c == '_' || c.is_alphanumeric())
        });
        return !defines;
    }
    false
}

/// Per-kind recall of ctags' tags by ours; prints the table, returns (found, total).
fn recall(
    title: &str,
    ctags: &[(String, Tag)],
    ours: &HashSet<Tag>,
    exclude: impl Fn(&str, &Tag) -> bool,
) -> (usize, usize) {
    let mut by_kind: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut misses: Vec<(&str, &Tag)> = Vec::new();
    for (kind, tag) in ctags {
        let row = by_kind.entry(kind.as_str()).or_default();
        if exclude(kind, tag) {
            row.2 += 1;
            continue;
        }
        row.1 += 1;
        if ours.contains(tag) {
            row.0 += 1;
        } else {
            misses.push((kind, tag));
        }
    }
    let (found, total) = by_kind
        .values()
        .fold((0, 0), |(f, t), row| (f + row.0, t + row.1));
    println!("\n{title}: recall of ctags tags (same name, file, line)");
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>11}",
        "ctags kind", "ctags", "found", "recall", "excluded"
    );
    for (kind, (f, t, excluded)) in &by_kind {
        let pct = if *t == 0 {
            100.0
        } else {
            100.0 * *f as f64 / *t as f64
        };
        println!("{kind:<14} {t:>9} {f:>9} {pct:>8.2}% {excluded:>11}");
    }
    let pct = 100.0 * found as f64 / total.max(1) as f64;
    println!("{:<14} {total:>9} {found:>9} {pct:>8.2}%", "all");
    let excluded: usize = by_kind.values().map(|row| row.2).sum();
    if excluded > 0 {
        let all = total + excluded;
        let pct = 100.0 * found as f64 / all as f64;
        println!(
            "{:<14} {all:>9} {found:>9} {pct:>8.2}%   (counting the excluded as misses)",
            "all, raw"
        );
    }
    println!("tree-sitter definitions: {}", ours.len());
    for (kind, (name, file, line)) in misses.iter().take(
        std::env::var("METRON_SHOW_MISSES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(15),
    ) {
        println!("  miss: {name} [{kind}] {file}:{line}");
    }
    (found, total)
}

/// The Go tree to compare on: `$METRON_GO_TREE`, else an installed golang-src.
fn go_tree() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("METRON_GO_TREE") {
        return Some(PathBuf::from(dir));
    }
    let mut candidates: Vec<PathBuf> = std::fs::read_dir("/usr/share")
        .ok()?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with("go"))
        })
        .map(|p| p.join("src"))
        .filter(|p| p.join("fmt").is_dir())
        .collect();
    candidates.sort();
    candidates.pop()
}

#[test]
fn recall_against_ctags_on_a_go_tree() {
    let test = "recall_against_ctags_on_a_go_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let Some(root) = go_tree() else {
        return skip(test, "set METRON_GO_TREE or install golang-src");
    };
    let mut files = Vec::new();
    source_files(&root, "go", &mut files);
    if files.is_empty() {
        return skip(test, &format!("no .go files under {}", root.display()));
    }
    let tags = ctags_tags("Go", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let title = format!("Go, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, _| false);
    assert!(total > 0, "ctags found no Go tags");
    assert!(
        found * 100 >= total * 99,
        "Go recall {found}/{total} is under 99%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, go_scope);
    assert!(
        agree * 100 >= compared * 99,
        "Go scope agreement {agree}/{compared} is under 99%"
    );
}

/// This crate's sources plus the first crates of the cargo registry, for a Rust tree.
fn rust_files() -> Vec<PathBuf> {
    let mut files = Vec::new();
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    for dir in ["src", "tests", "benches"] {
        source_files(&manifest.join(dir), "rs", &mut files);
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")));
    let Some(registry) = cargo_home.map(|h| h.join("registry").join("src")) else {
        return files;
    };
    let mut crates: Vec<PathBuf> = std::fs::read_dir(&registry)
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .flat_map(|index| std::fs::read_dir(index.path()).into_iter().flatten())
        .filter_map(Result::ok)
        .map(|e| e.path())
        .collect();
    crates.sort_by_key(|p| p.file_name().map(|n| n.to_os_string()));
    for krate in crates.iter().take(40) {
        source_files(krate, "rs", &mut files);
    }
    files
}

#[test]
fn recall_against_ctags_on_a_rust_tree() {
    let test = "recall_against_ctags_on_a_rust_tree";
    if !ctags_available() {
        return skip(test, "needs Universal Ctags (`ctags --version` says so)");
    }
    let files = rust_files();
    let tags = ctags_tags("Rust", &files);
    let theirs = kinds_and_tags(&tags);
    let scopes = our_tags(&files);
    let ours: HashSet<Tag> = scopes.keys().cloned().collect();
    let mut lines_cache: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut source_line = |file: &str, line: usize| -> Option<String> {
        let lines = lines_cache.entry(file.to_owned()).or_insert_with(|| {
            std::fs::read(file)
                .map(|b| {
                    String::from_utf8_lossy(&b)
                        .lines()
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        });
        lines.get(line.checked_sub(1)?).cloned()
    };
    let excluded: HashSet<Tag> = theirs
        .iter()
        .filter(|(kind, tag)| {
            is_ctags_false_positive(kind, tag, source_line(&tag.1, tag.2).as_deref())
        })
        .map(|(_, tag)| tag.clone())
        .collect();
    let title = format!("Rust, {} files", files.len());
    let (found, total) = recall(&title, &theirs, &ours, |_, tag| excluded.contains(tag));
    assert!(total > 0, "ctags found no Rust tags");
    assert!(
        found * 100 >= total * 99,
        "Rust recall {found}/{total} is under 99%"
    );
    let (agree, compared) = scope_agreement(&title, &tags, &scopes, rust_scope);
    assert!(
        agree * 100 >= compared * 95,
        "Rust scope agreement {agree}/{compared} is under 95%"
    );
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
    let project = Project::open(dir.path(), false).expect("open");
    let index = SymbolIndex::new();
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
            let Ok(found) = index.lookup(&project, name, limit) else {
                panic!("lookup {name}");
            };
            let mut expected = Vec::new();
            let mut extractor = Definitions::new();
            for path in metron::testing::walk_files(&project) {
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

const GIN_GO: &str = "package gin\n\ntype Context struct {\n\tWriter int\n}\n\n\
func (c *Context) JSON(code int) {}\n\nfunc (e *Engine) JSON() {}\n\n\
type Greeter interface {\n\tGreet() string\n}\n\nfunc Top() {}\n";

const PARSE_RS: &str = "pub mod outer {\n    pub mod inner {\n        pub struct S { pub f: i32 }\n        \
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
    p.file("app.py", "def main():\n    pass\n");
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
    p.file("tools/x.py", "x = 1\n");
    p.file("tools/y.py", "y = 1\n");
    p.file("web/App.vue", "<template/>\n");
    p.file("notes.md", "# notes\n");
    p.file("data.json", "{}\n");
    let expected = "find_symbol: Go 2 files, Rust 1; no grammar for 2 .py files, 1 .vue file";

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
    let py = TestProject::git();
    py.file("app.py", "def main(): pass\n");
    let fake = FakeOllama::start(vec![]);
    let run = metron(py.root())
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
        run.stdout
            .lines()
            .any(|l| l.ends_with("find_symbol: no Go or Rust files; no grammar for 1 .py file")),
        "{run:?}"
    );
}
