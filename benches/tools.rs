//! Criterion benches for the model's read tools, in process and against the programs they
//! replace.
//!
//! Each tree gets four groups, and each group puts the in-process tool next to the
//! process it stands in for, so the ratio can be read off one report (the machine is
//! shared and noisy; ratios matter, not absolute times):
//!
//! - `search_text/<tree>`: a rare pattern (fewer matches than the budget, so the whole
//!   tree is searched) and a frequent one (the budget runs out early), each beside
//!   spawning `rg -n --max-count=2 PATTERN .`;
//! - `list_files/<tree>`: the default budget and no budget, beside spawning `rg --files`;
//! - `view_slice/<tree>`: the in-process call beside a whole `metron tool view_slice`
//!   process, start to exit (the release binary built by `cargo bench`);
//! - `find_symbol/<tree>`: through `Toolbox::call`, warm (the session's index is built)
//!   and cold (a fresh toolbox each time).
//!
//! Trees: `generated`, a few thousand Go and Rust files created once in a temp dir, and,
//! when `METRON_BENCH_TREE` names a directory, `real`, that tree. For the real tree the
//! patterns and symbol can be chosen with `METRON_BENCH_RARE` (default `xyzzy`, which
//! matches nothing, the worst case), `METRON_BENCH_FREQUENT` (default `return`) and
//! `METRON_BENCH_SYMBOL` (default `NewReader`).
//!
//! Every bench prints, once, how many bytes the tool (or the process) returned.
//! Spawning benches are skipped with a SKIP line when `rg` or the binary is missing.
//!
//! ```sh
//! METRON_BENCH_TREE=path/to/tree cargo bench --bench tools -- --warm-up-time 1 --measurement-time 3
//! ```

mod support;

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::{BatchSize, BenchmarkGroup, Criterion, measurement::WallTime};
use metron::project::Project;
use metron::tools::{Budgets, Toolbox};
use serde_json::json;

/// One tree to measure, and what to ask of it.
struct Tree {
    name: &'static str,
    root: PathBuf,
    rare: String,
    frequent: String,
    symbol: String,
    /// A file with at least `max_slice_lines + 50` lines, and the range to view.
    slice: (String, i64, i64),
}

fn main() {
    let mut c = support::criterion(Duration::from_secs(3));

    let generated = generate_tree();
    let trees = std::iter::once(Tree::new(
        "generated",
        generated.path().to_path_buf(),
        "RareNeedle",
        "return",
        "Handler9",
    ))
    .chain(real_tree());

    let rg = rg_available();
    if !rg {
        eprintln!("SKIP rg benches: rg (ripgrep) is not installed");
    }
    let binary = support::metron_binary();
    if binary.is_none() {
        eprintln!("SKIP metron process bench: no release metron binary next to this bench");
    }

    for tree in trees {
        eprintln!(
            "tree {}: {} (rare `{}`, frequent `{}`, symbol `{}`, slice {}:{}-{})",
            tree.name,
            tree.root.display(),
            tree.rare,
            tree.frequent,
            tree.symbol,
            tree.slice.0,
            tree.slice.1,
            tree.slice.2
        );
        bench_search(&mut c, &tree, rg);
        bench_list(&mut c, &tree, rg);
        bench_view(&mut c, &tree, binary.as_deref());
        bench_find_symbol(&mut c, &tree);
    }
    c.final_summary();
}

impl Tree {
    fn new(name: &'static str, root: PathBuf, rare: &str, frequent: &str, symbol: &str) -> Tree {
        let slice = pick_slice(&root);
        Tree {
            name,
            root,
            rare: rare.to_owned(),
            frequent: frequent.to_owned(),
            symbol: symbol.to_owned(),
            slice,
        }
    }

    fn project(&self) -> Project {
        Project::discover(&self.root).expect("open the bench tree as a project")
    }
}

/// The tree named by `METRON_BENCH_TREE`, if any.
fn real_tree() -> Option<Tree> {
    let root = PathBuf::from(std::env::var_os("METRON_BENCH_TREE")?);
    if !root.is_dir() {
        eprintln!(
            "SKIP real tree: METRON_BENCH_TREE={} is not a directory",
            root.display()
        );
        return None;
    }
    let var = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    Some(Tree::new(
        "real",
        root,
        &var("METRON_BENCH_RARE", "xyzzy"),
        &var("METRON_BENCH_FREQUENT", "return"),
        &var("METRON_BENCH_SYMBOL", "NewReader"),
    ))
}

/// The first listed file long enough for a full-width slice, and a range in its middle.
fn pick_slice(root: &Path) -> (String, i64, i64) {
    let project = Project::discover(root).expect("open tree");
    let budgets = Budgets {
        list_max_entries: 5000,
        ..Budgets::default()
    };
    let width = budgets.max_slice_lines as i64;
    let listing = Toolbox::new(Project::discover(root).expect("open tree"), budgets)
        .call("list_files", json!({}))
        .expect("list the tree");
    let candidates: Vec<&str> = listing.lines().filter(|l| !l.starts_with('[')).collect();
    for path in &candidates {
        let lines = std::fs::read(project.root().join(path))
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0) as i64;
        if lines >= width + 50 {
            return ((*path).to_owned(), 41, 40 + width);
        }
    }
    let first = candidates.first().copied().unwrap_or("none");
    (first.to_owned(), 1, width)
}

/// Prints the size of one answer, once per bench.
fn report_bytes(group: &str, id: &str, bytes: usize) {
    eprintln!("{group}/{id}: bytes returned: {bytes}");
}

fn group<'a>(c: &'a mut Criterion, tool: &str, tree: &Tree) -> BenchmarkGroup<'a, WallTime> {
    c.benchmark_group(format!("{tool}/{}", tree.name))
}

fn bench_search(c: &mut Criterion, tree: &Tree, rg: bool) {
    // Through the registry, as the model calls it.
    let toolbox = Toolbox::new(tree.project(), Budgets::default());
    let project = toolbox.project();
    let name = format!("search_text/{}", tree.name);
    let mut g = group(c, "search_text", tree);
    for (label, pattern) in [("rare", &tree.rare), ("frequent", &tree.frequent)] {
        let search = |pattern: &str| toolbox.call("search_text", json!({ "pattern": pattern }));
        let out = search(pattern).expect("search");
        let id = format!("in-process {label}");
        report_bytes(&name, &id, out.len());
        eprintln!(
            "{name}/{id}: {} lines{}",
            out.lines().count(),
            if out.contains("[truncated") {
                ", budget exhausted"
            } else {
                ""
            }
        );
        g.bench_function(&id, |b| b.iter(|| black_box(search(black_box(pattern)))));
        if rg {
            let args = ["-n", "--max-count=2", "-e", pattern, "."];
            let id = format!("rg spawn {label}");
            report_bytes(&name, &id, spawn(project.root(), "rg", &args).len());
            g.bench_function(&id, |b| {
                b.iter(|| black_box(spawn(project.root(), "rg", &args)))
            });
        }
    }
    g.finish();
}

fn bench_list(c: &mut Criterion, tree: &Tree, rg: bool) {
    let root = tree.project().root().to_path_buf();
    let name = format!("list_files/{}", tree.name);
    let mut g = group(c, "list_files", tree);
    let budgeted = Budgets::default();
    let unbudgeted = Budgets {
        list_max_entries: usize::MAX / 4,
        ..Budgets::default()
    };
    for (id, budgets) in [
        ("in-process budget 60", budgeted),
        ("in-process unbudgeted", unbudgeted),
    ] {
        // Through the registry, as the model calls it.
        let toolbox = Toolbox::new(tree.project(), budgets);
        let out = toolbox.call("list_files", json!({})).expect("list");
        report_bytes(&name, id, out.len());
        g.bench_function(id, |b| {
            b.iter(|| black_box(toolbox.call("list_files", json!({}))))
        });
    }
    if rg {
        let id = "rg --files spawn";
        report_bytes(&name, id, spawn(&root, "rg", &["--files"]).len());
        g.bench_function(id, |b| {
            b.iter(|| black_box(spawn(&root, "rg", &["--files"])))
        });
    }
    g.finish();
}

fn bench_view(c: &mut Criterion, tree: &Tree, binary: Option<&Path>) {
    // Through the registry, as the model calls it.
    let toolbox = Toolbox::new(tree.project(), Budgets::default());
    let project = toolbox.project();
    let (path, start, end) = &tree.slice;
    let name = format!("view_slice/{}", tree.name);
    let mut g = group(c, "view_slice", tree);
    let args = json!({"path": path, "start": start, "end": end});
    let out = toolbox.call("view_slice", args.clone()).expect("view");
    report_bytes(&name, "in-process", out.len());
    g.bench_function("in-process", |b| {
        b.iter(|| black_box(toolbox.call("view_slice", black_box(args.clone()))))
    });
    if let Some(binary) = binary {
        // A HOME with no config, so the user's own settings do not change the budgets.
        let home = tempfile::tempdir().expect("temp HOME");
        let args = json!({"path": path, "start": start, "end": end}).to_string();
        let run = || {
            let output = Command::new(binary)
                .args(["tool", "view_slice", &args])
                .current_dir(project.root())
                .env("HOME", home.path())
                .env("METRON_CONFIG_DIR", home.path())
                .env_remove("METRON_CONFIG")
                .stdin(Stdio::null())
                .output()
                .expect("run metron");
            assert!(output.status.success(), "metron tool view_slice failed");
            output.stdout
        };
        let id = "metron tool process";
        report_bytes(&name, id, run().len());
        g.bench_function(id, |b| b.iter(|| black_box(run())));
    }
    g.finish();
}

fn bench_find_symbol(c: &mut Criterion, tree: &Tree) {
    let name = format!("find_symbol/{}", tree.name);
    let args = json!({"symbol": tree.symbol});
    let toolbox = Toolbox::new(tree.project(), Budgets::default());
    // The tool may refuse (or not be built yet); what it returns is measured either way.
    let answer = |toolbox: &Toolbox| match toolbox.call("find_symbol", args.clone()) {
        Ok(text) => text,
        Err(error) => error.to_string(),
    };
    report_bytes(&name, "warm", answer(&toolbox).len());
    let mut g = group(c, "find_symbol", tree);
    g.bench_function("warm", |b| b.iter(|| black_box(answer(&toolbox))));
    g.sample_size(10);
    g.bench_function("cold", |b| {
        b.iter_batched(
            || Toolbox::new(tree.project(), Budgets::default()),
            |fresh| black_box(answer(&fresh)),
            BatchSize::PerIteration,
        )
    });
    g.finish();
}

/// Runs a program in `dir` and returns its stdout, as a caller of that program would.
fn spawn(dir: &Path, program: &str, args: &[&str]) -> Vec<u8> {
    Command::new(program)
        .args(args)
        .current_dir(dir)
        .env_remove("RIPGREP_CONFIG_PATH")
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map(|o| o.stdout)
        .unwrap_or_default()
}

fn rg_available() -> bool {
    Command::new("rg")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// A git project of about 3,000 Go and Rust files in 40 packages, plus an ignored
/// `target/` and a hidden directory the walk must skip. `RareNeedle` is in 3 files;
/// `return` is in every one.
fn generate_tree() -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("metron-bench-")
        .tempdir()
        .expect("temp dir");
    let root = dir.path();
    let write = |rel: String, body: String| {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(path, body).expect("write");
    };
    std::fs::create_dir_all(root.join(".git")).expect("mkdir .git");
    write(".gitignore".into(), "target/\n*.tmp\n".into());
    let mut n = 0;
    for pkg in 0..40 {
        for file in 0..75 {
            n += 1;
            let rare = if n % 1000 == 500 {
                "// RareNeedle marks this file\n"
            } else {
                ""
            };
            if file % 2 == 0 {
                let mut body = format!("package pkg{pkg}\n\nimport \"fmt\"\n\n{rare}");
                for f in 0..8 {
                    let id = n * 8 + f;
                    body.push_str(&format!(
                        "// Handler{id} handles request {id}; it returns an error when the input is bad.\nfunc Handler{id}(w Writer, r *Request) error {{\n\tif r == nil {{\n\t\treturn fmt.Errorf(\"nil request %d\", {id})\n\t}}\n\tw.Write([]byte(\"ok\"))\n\treturn nil\n}}\n\n"
                    ));
                }
                write(format!("pkg{pkg:02}/file{file:02}.go"), body);
            } else {
                let mut body = format!("//! Module {n}.\n\nuse std::io;\n\n{rare}");
                for f in 0..8 {
                    let id = n * 8 + f;
                    body.push_str(&format!(
                        "/// Handler{id} handles request {id}; it returns an error when the input is bad.\npub fn handler_{id}(input: &str) -> io::Result<usize> {{\n    if input.is_empty() {{\n        return Err(io::Error::other(\"empty\"));\n    }}\n    Ok(input.len() + {id})\n}}\n\n"
                    ));
                }
                write(format!("crate{pkg:02}/src/file{file:02}.rs"), body);
            }
        }
    }
    for i in 0..500 {
        write(
            format!("target/debug/build/out{i}.rs"),
            "fn main() { return; } // RareNeedle\n".into(),
        );
    }
    for i in 0..50 {
        write(
            format!(".cache/c{i}.go"),
            "package c // RareNeedle\n".into(),
        );
    }
    dir
}
