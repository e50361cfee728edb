//! `list_files`, `search_text` and `view_slice` against their specification.
//!
//! - every budget edge (N-1, N, N+1 entries, matches and lines; the per-file cap against
//!   the total cap; a line of exactly `max_line_chars`);
//! - ripgrep's walk rules (ignore files inside and outside git, hidden files, symlinks,
//!   path order) and its binary-file rule;
//! - early stopping, observed directly: a directory later in the walk holds a FIFO named
//!   `.ignore`, which the walker would block on if it ever entered that directory;
//! - memory: view_slice's peak heap is bounded whatever the size of the file or line;
//! - property tests: no output exceeds its budget, and budgeted output is always a prefix
//!   of the unbudgeted output;
//! - differential tests against the real `rg` on generated trees, this crate's own tree and
//!   a sample of the cargo registry (skipped with a SKIP line when `rg` is missing).

use std::path::{Path, PathBuf};
use std::time::Duration;

use metron::project::Project;
use metron::testing::{CLIP_MARKER, clip_line};
use metron::tools::{Budgets, ToolError};

use super::common::*;

/// The read tools as the model calls them: through the registry ([`Toolbox::call`]), on
/// the same tree opened afresh (a git work tree when it has `.git`).
fn call(
    project: &Project,
    budgets: &Budgets,
    tool: &str,
    args: serde_json::Value,
) -> Result<String, ToolError> {
    let root = project.root();
    let project = Project::open(root, root.join(".git").exists()).expect("open project");
    metron::tools::Toolbox::new(project, *budgets).call(tool, args)
}

/// list_files as the model calls it, without the note on what a cut listing left out
/// (`[not listed: ...]`): the listing itself is what most tests compare (with rg, with
/// itself unbudgeted). The note has its own tests: [`a_cut_listing_says_where_the_rest_is`]
/// and the budget property.
fn list_files(
    project: &Project,
    budgets: &Budgets,
    pattern: Option<&str>,
) -> Result<String, ToolError> {
    list_files_with_note(project, budgets, pattern).map(|text| {
        text.split_inclusive('\n')
            .filter(|line| !line.starts_with("[not listed: "))
            .collect()
    })
}

/// list_files as the model calls it, whole.
fn list_files_with_note(
    project: &Project,
    budgets: &Budgets,
    pattern: Option<&str>,
) -> Result<String, ToolError> {
    match pattern {
        Some(pattern) => call(
            project,
            budgets,
            "list_files",
            serde_json::json!({ "pattern": pattern }),
        ),
        None => call(project, budgets, "list_files", serde_json::json!({})),
    }
}

fn search_text(project: &Project, budgets: &Budgets, pattern: &str) -> Result<String, ToolError> {
    call(
        project,
        budgets,
        "search_text",
        serde_json::json!({ "pattern": pattern }),
    )
}

fn view_slice(
    project: &Project,
    budgets: &Budgets,
    path: &str,
    start: i64,
    end: i64,
) -> Result<String, ToolError> {
    call(
        project,
        budgets,
        "view_slice",
        serde_json::json!({"path": path, "start": start, "end": end}),
    )
}

// ---------------------------------------------------------------------------------------
// Helpers

fn list_budget(limit: usize) -> Budgets {
    Budgets {
        list_max_entries: limit,
        ..huge_budgets()
    }
}

fn search_budget(per_file: usize, total: usize, max_line_chars: usize) -> Budgets {
    Budgets {
        search_max_per_file: per_file,
        search_max_matches: total,
        max_line_chars,
        ..huge_budgets()
    }
}

fn slice_budget(max_slice_lines: usize, max_line_chars: usize) -> Budgets {
    Budgets {
        max_slice_lines,
        max_line_chars,
        ..huge_budgets()
    }
}

#[track_caller]
fn list(p: &TestProject, limit: usize, glob: Option<&str>) -> String {
    list_files(&p.project(), &list_budget(limit), glob).expect("list_files succeeds")
}

#[track_caller]
fn search(p: &TestProject, per_file: usize, total: usize, pattern: &str) -> String {
    search_text(&p.project(), &search_budget(per_file, total, 500), pattern)
        .expect("search_text succeeds")
}

#[track_caller]
fn view(p: &TestProject, budgets: &Budgets, path: &str, start: i64, end: i64) -> String {
    view_slice(&p.project(), budgets, path, start, end).expect("view_slice succeeds")
}

#[track_caller]
fn refused(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

fn list_trunc(n: usize) -> String {
    format!("[truncated to {n} entries; narrow with a glob]")
}

fn search_trunc(n: usize) -> String {
    format!("[truncated to {n} matches; narrow the pattern]")
}

/// The note after a file's last shown match when the per-file cap left `more` out.
fn capped(path: &str, more: u64) -> String {
    format!("[+{more} more in {path}]")
}

/// True for a per-file cap note (a named file, or the closing count of the rest).
fn is_capped_note(line: &str) -> bool {
    line.starts_with("[+") && line.contains(" more in ")
}

/// The lines of a search's output without its per-file cap notes: what rg prints.
fn without_capped_notes(lines: Vec<String>) -> Vec<String> {
    lines.into_iter().filter(|l| !is_capped_note(l)).collect()
}

/// `lines` joined with a newline after each, the shape every tool's output has.
fn text(lines: &[&str]) -> String {
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// A project with `n` files `f00.txt`.. each holding one line `match`.
fn numbered_files(n: usize) -> TestProject {
    let p = TestProject::new();
    for i in 0..n {
        p.file(&format!("f{i:02}.txt"), "match\n");
    }
    p
}

// ---------------------------------------------------------------------------------------
// list_files

#[test]
fn list_budget_edges() {
    let p = numbered_files(5);
    let all = ["f00.txt", "f01.txt", "f02.txt", "f03.txt", "f04.txt"];
    // N+1 entries for a budget of N: truncated, and says so.
    assert_text_eq(
        &list(&p, 4, None),
        &text(&[&all[..4], &[list_trunc(4).as_str()]].concat()),
    );
    // Exactly N: no truncation line.
    assert_text_eq(&list(&p, 5, None), &text(&all));
    // N-1 entries for a budget of N.
    assert_text_eq(&list(&p, 6, None), &text(&all));
    assert_text_eq(&list(&p, 1, None), &text(&["f00.txt", &list_trunc(1)]));
}

#[test]
fn list_is_sorted_by_path_component_not_by_string() {
    let p = TestProject::new();
    for name in [
        "b.txt",
        "a/z.txt",
        "a.txt",
        "a-b/x",
        "A.txt",
        "_u",
        "a/b/c.txt",
        "é.txt",
    ] {
        p.file(name, "x\n");
    }
    // Within each directory by file name, bytewise: `a/` sorts before `a-b` and `a.txt`,
    // although the string "a/b/c.txt" sorts after "a.txt".
    assert_text_eq(
        &list(&p, 100, None),
        &text(&[
            "A.txt",
            "_u",
            "a/b/c.txt",
            "a/z.txt",
            "a-b/x",
            "a.txt",
            "b.txt",
            "é.txt",
        ]),
    );
}

/// A tree exercising every ignore rule ripgrep applies by default.
fn ignore_rules_tree(p: &TestProject) {
    p.file(".gitignore", "*.log\nbuild/\n/root-only.txt\n!keep.log\n")
        .file(".ignore", "secret*\n")
        .file(".rgignore", "*.tmp\n")
        .file("a.log", "x\n")
        .file("keep.log", "x\n")
        .file("build/out.txt", "x\n")
        .file("root-only.txt", "x\n")
        .file("sub/root-only.txt", "x\n")
        .file("secret.env", "x\n")
        .file("scratch.tmp", "x\n")
        .file(".env", "x\n")
        .file(".hidden/x.txt", "x\n")
        .file("sub/.gitignore", "*.gen\n")
        .file("sub/code.gen", "x\n")
        .file("sub/code.rs", "x\n")
        .file("main.rs", "x\n");
}

#[test]
fn list_applies_ignore_files_and_hidden_rule_in_a_git_repo() {
    let p = TestProject::git();
    ignore_rules_tree(&p);
    p.file(".git/info/exclude", "excluded.txt\n")
        .file("excluded.txt", "x\n");
    assert_text_eq(
        &list(&p, 100, None),
        &text(&["keep.log", "main.rs", "sub/code.rs", "sub/root-only.txt"]),
    );
}

#[test]
fn list_outside_git_ignores_gitignore_but_not_ignore_or_rgignore() {
    let p = TestProject::new();
    ignore_rules_tree(&p);
    assert_text_eq(
        &list(&p, 100, None),
        &text(&[
            "a.log",
            "build/out.txt",
            "keep.log",
            "main.rs",
            "root-only.txt",
            "sub/code.gen",
            "sub/code.rs",
            "sub/root-only.txt",
        ]),
    );
}

#[test]
fn list_globs_have_rg_semantics() {
    let p = TestProject::new();
    for name in [
        "Cargo.toml",
        "src/main.rs",
        "src/a/mod.rs",
        "src/a/x.c",
        "inc/x.h",
        "docs/Cargo.toml",
        "top.rs",
    ] {
        p.file(name, "x\n");
    }
    let cases: &[(&str, &[&str])] = &[
        // No slash: matches the file name at any depth.
        ("*.rs", &["src/a/mod.rs", "src/main.rs", "top.rs"]),
        ("Cargo.toml", &["Cargo.toml", "docs/Cargo.toml"]),
        // A slash anchors the glob at the root; ** crosses directories, * does not.
        ("src/**/*.rs", &["src/a/mod.rs", "src/main.rs"]),
        ("src/*.rs", &["src/main.rs"]),
        ("*.{c,h}", &["inc/x.h", "src/a/x.c"]),
        // `!` excludes and keeps everything else.
        (
            "!*.rs",
            &["Cargo.toml", "docs/Cargo.toml", "inc/x.h", "src/a/x.c"],
        ),
        // Surrounding blanks are not part of the glob.
        ("  *.h ", &["inc/x.h"]),
    ];
    for (glob, expected) in cases {
        assert_text_eq(&list(&p, 100, Some(glob)), &text(expected));
    }
    // A glob that matches nothing says so, naming it; so does an empty project.
    assert_text_eq(&list(&p, 100, Some("*.zig")), "No files match `*.zig`.");
    assert_text_eq(&list(&TestProject::new(), 100, None), "No files found.");
    // An empty glob means no glob.
    assert_eq!(list(&p, 100, Some("")), list(&p, 100, None));
}

#[test]
fn list_glob_only_narrows_never_reveals_ignored_or_hidden_files() {
    // ripgrep's `-g` overrides ignore rules (`rg --files -g '*'` lists .git/ internals,
    // `.env` and gitignored files); list_files applies the glob on top of them.
    let p = TestProject::git();
    ignore_rules_tree(&p);
    let unglobbed = list(&p, 100, None);
    for glob in [
        "*",
        "**",
        "**/*",
        "*.log",
        ".env",
        ".hidden/*",
        "build/**",
        "*.tmp",
        "secret*",
    ] {
        let out = list(&p, 100, Some(glob));
        for line in lines(&out).iter().filter(|l| !l.starts_with("No files")) {
            assert!(
                unglobbed.lines().any(|u| u == line),
                "glob {glob} revealed {line}:\n{out}"
            );
        }
    }
    assert_text_eq(&list(&p, 100, Some("*")), &unglobbed);
    assert_text_eq(&list(&p, 100, Some("*.log")), "keep.log\n");
    assert_text_eq(&list(&p, 100, Some(".env")), "No files match `.env`.");
    // A negated directory glob prunes the directory, as in rg.
    assert_text_eq(
        &list(&p, 100, Some("!sub")),
        &text(&["keep.log", "main.rs"]),
    );
}

#[test]
fn list_glob_budget_edges() {
    let p = numbered_files(4);
    p.file("other.rs", "x\n");
    assert_text_eq(
        &list(&p, 3, Some("*.txt")),
        &text(&["f00.txt", "f01.txt", "f02.txt", &list_trunc(3)]),
    );
    assert_text_eq(
        &list(&p, 4, Some("*.txt")),
        &text(&["f00.txt", "f01.txt", "f02.txt", "f03.txt"]),
    );
}

#[test]
fn list_bad_glob_is_a_readable_refusal() {
    let p = numbered_files(1);
    let msg = refused(list_files(&p.project(), &list_budget(10), Some("src/[a")));
    assert!(msg.starts_with("bad glob `src/[a`: "), "{msg}");
}

#[test]
fn list_does_not_follow_or_list_symlinks() {
    let p = TestProject::new();
    p.file("real/a.txt", "x\n")
        .symlink("link.txt", "real/a.txt")
        .symlink("linkdir", "real");
    // Like `rg --files` without -L: symlinks, to files or directories, are not listed.
    assert_text_eq(&list(&p, 100, None), &text(&["real/a.txt"]));
}

#[test]
fn names_that_cannot_be_one_line_of_text_are_not_shown() {
    // A file name with a newline would forge lines in the output (here a fake match and
    // a fake entry) and overrun the line budget; escape sequences would reach a terminal;
    // a name that is not UTF-8 cannot be named back by the model. The walk skips them all.
    let p = TestProject::new();
    p.file("a\nfake.txt:1:needle", "needle\n")
        .file(
            "dir\n[truncated to 1 entries; narrow with a glob]/x.txt",
            "needle\n",
        )
        .file("c\u{1b}[31mred.txt", "needle\n")
        .file("tab\tname.txt", "needle\n")
        .file("ok.txt", "needle\n");
    let bad = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"latin1-\xe9.txt");
    std::fs::write(p.root().join(bad), "needle\n").expect("write a non-UTF-8 name");
    assert_text_eq(&list(&p, 100, None), "ok.txt\n");
    assert_text_eq(&list(&p, 1, None), "ok.txt\n");
    assert_text_eq(&search(&p, 2, 100, "needle"), "ok.txt:1:needle\n");
}

/// Makes `zz/` a directory whose reaching shows: its `.ignore` is a FIFO, so a walk that
/// reaches it skips it with a `[skipped zz/: ...]` note in the result (the walker would
/// block opening the FIFO; metron looks before it enters). The early-stop tests compare
/// their whole output, so a walk that went as far as zz/ fails them by that note; a
/// deadline still guards against a walk that blocks there.
fn trap_directory(p: &TestProject) -> PathBuf {
    p.fifo("zz/.ignore");
    p.file("zz/late.txt", "match\n");
    p.path("zz/.ignore")
}

/// Runs `f` with a deadline; if it blocks on the trap FIFO, releases it and fails.
#[track_caller]
fn must_not_enter_trap<T: Send + 'static>(
    trap: &Path,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let trap_for_release = trap.to_path_buf();
    match within(Duration::from_secs(5), f, move || {
        release_fifo(&trap_for_release)
    }) {
        Some(value) => value,
        None => panic!("the walk entered zz/ although the budget was already exceeded"),
    }
}

#[test]
fn trap_directory_really_shows_in_a_full_walk() {
    // The control for the early-stop tests below: without a budget, the walk does reach
    // zz/, and says it skipped it (without blocking on the FIFO).
    let p = numbered_files(3);
    let trap = trap_directory(&p);
    let project = p.project();
    let out = must_not_enter_trap(&trap, move || {
        list_files(&project, &list_budget(1000), None).expect("list")
    });
    assert!(
        out.contains("[skipped zz/: `zz/.ignore` is not a regular file;"),
        "{out}"
    );
}

/// A cut listing walks on to count what it left out (it no longer stops at the budget),
/// yet a FIFO ignore file on the way is skipped, not blocked on, and named.
#[test]
fn a_cut_listing_says_where_the_rest_is() {
    let p = numbered_files(3);
    let trap = trap_directory(&p);
    p.file("docs/a.md", "").file("docs/b.md", "");
    for i in 0..5 {
        p.file(&format!("src/deep/testdata/t{i}.yml"), "");
    }
    let project = p.project();
    let out = must_not_enter_trap(&trap, move || {
        list_files_with_note(&project, &list_budget(2), None).expect("list")
    });
    assert_text_eq(
        &out,
        &text(&[
            "docs/a.md",
            "docs/b.md",
            &list_trunc(2),
            "[not listed: src/deep/testdata/ (5 more), the top level (3 more)]",
            "[skipped zz/: `zz/.ignore` is not a regular file; metron reads ignore files only as regular files of at most 1 MiB inside the project (a symlink to one inside is fine), so that a repository cannot make it read outside the project or exhaust memory; replace it with a regular file]",
        ]),
    );
    let project = p.project();
    let out = list_files_with_note(&project, &list_budget(1), Some("*.txt")).expect("list");
    assert!(
        out.starts_with(&text(&[
            "f00.txt",
            &list_trunc(1),
            "[not listed: the top level (2 more)]"
        ])),
        "{out}"
    );
}

// ---------------------------------------------------------------------------------------
// search_text

#[test]
fn search_total_budget_edges() {
    let p = numbered_files(5);
    let all: Vec<String> = (0..5).map(|i| format!("f{i:02}.txt:1:match")).collect();
    let all: Vec<&str> = all.iter().map(String::as_str).collect();
    assert_text_eq(
        &search(&p, 2, 4, "match"),
        &text(&[&all[..4], &[search_trunc(4).as_str()]].concat()),
    );
    assert_text_eq(&search(&p, 2, 5, "match"), &text(&all));
    assert_text_eq(&search(&p, 2, 6, "match"), &text(&all));
    assert_text_eq(
        &search(&p, 2, 1, "match"),
        &text(&["f00.txt:1:match", &search_trunc(1)]),
    );
}

#[test]
fn search_per_file_cap_against_total_cap() {
    let p = TestProject::new();
    p.file("a.txt", "hit 1\nhit 2\nhit 3\n")
        .file("b.txt", "hit 1\nmiss\nhit 3\nhit 4\n")
        .file("c.txt", "hit 1\n");
    let a = ["a.txt:1:hit 1", "a.txt:2:hit 2", "a.txt:3:hit 3"];
    let b = ["b.txt:1:hit 1", "b.txt:3:hit 3", "b.txt:4:hit 4"];
    let c = "c.txt:1:hit 1";
    let (more_a, more_b) = (capped("a.txt", 1), capped("b.txt", 1));
    // Per-file cap N-1, N, N+1 against a file with N=3 matches, total out of the way.
    // What the cap leaves out is said after the file's lines.
    assert_text_eq(
        &search(&p, 2, 100, "hit"),
        &text(&[a[0], a[1], &more_a, b[0], b[1], &more_b, c]),
    );
    assert_text_eq(
        &search(&p, 3, 100, "hit"),
        &text(&[a[0], a[1], a[2], b[0], b[1], b[2], c]),
    );
    assert_text_eq(
        &search(&p, 4, 100, "hit"),
        &text(&[a[0], a[1], a[2], b[0], b[1], b[2], c]),
    );
    // The total cap cuts across files, and the truncation line appears only when a match
    // the per-file cap allowed was left out. A file the total cut gets no per-file note
    // (the truncation line covers it); one it did not cut is counted to its end.
    assert_text_eq(
        &search(&p, 2, 3, "hit"),
        &text(&[a[0], a[1], &more_a, b[0], &search_trunc(3)]),
    );
    assert_text_eq(
        &search(&p, 2, 4, "hit"),
        &text(&[a[0], a[1], &more_a, b[0], b[1], &more_b, &search_trunc(4)]),
    );
    assert_text_eq(
        &search(&p, 2, 5, "hit"),
        &text(&[a[0], a[1], &more_a, b[0], b[1], &more_b, c]),
    );
    assert_text_eq(
        &search(&p, 3, 5, "hit"),
        &text(&[a[0], a[1], a[2], b[0], b[1], &search_trunc(5)]),
    );
    // Matches hidden only by the per-file cap are not a truncation of the total: with
    // per-file 2 and total 2 on a.txt alone, the per-file note says what is left.
    let one = TestProject::new();
    one.file("a.txt", "hit 1\nhit 2\nhit 3\n");
    assert_text_eq(&search(&one, 2, 2, "hit"), &text(&[a[0], a[1], &more_a]));
    assert_text_eq(
        &search(&one, 1, 1, "hit"),
        &text(&[a[0], &capped("a.txt", 2)]),
    );
    // Counted by the same search to the end of the file, however many there are.
    let many = TestProject::new();
    many.file("m.txt", "hit\n".repeat(10_000));
    assert_text_eq(
        &search(&many, 2, 10, "hit"),
        &text(&["m.txt:1:hit", "m.txt:2:hit", &capped("m.txt", 9_998)]),
    );
}

#[test]
fn search_miss_and_bad_regex() {
    let p = numbered_files(2);
    assert_text_eq(&search(&p, 2, 10, "absent"), "No matches found.");
    assert_text_eq(
        &search(&TestProject::new(), 2, 10, "x"),
        "No matches found.",
    );
    // A pattern that is not a valid regex is searched as plain text, with a note.
    let p = TestProject::new();
    p.file(
        "a.go",
        "func Greet(name string) {}
Greet (x)
",
    )
    .file(
        "b.txt",
        "a[0] = 1
",
    );
    let budget = search_budget(2, 10, 500);
    assert_text_eq(
        &search_text(&p.project(), &budget, "Greet(").expect("searched"),
        "[`Greet(` is not a valid regex (unclosed group); searched for it as plain text]\na.go:1:func Greet(name string) {}\n",
    );
    let found = search_text(&p.project(), &budget, "a[0").expect("searched");
    assert!(found.ends_with("b.txt:1:a[0] = 1\n"), "{found}");
    let missed = search_text(&p.project(), &budget, "(absent").expect("searched");
    assert!(
        missed.starts_with("[`(absent` is not a valid regex")
            && missed.ends_with("No matches found."),
        "{missed}"
    );
    // A pattern that can only match across lines is refused, readably.
    let msg = refused(search_text(
        &p.project(),
        &search_budget(2, 10, 500),
        "a\\nb",
    ));
    assert!(msg.starts_with("bad regex `a\\nb`: "), "{msg}");
}

#[test]
fn search_output_shape_order_and_prefix() {
    let p = TestProject::new();
    p.file("z.txt", "needle z\n")
        .file("a/b.txt", "x\nneedle ab\n")
        .file("a.txt", "needle a\n")
        .file("crlf.txt", "one\r\nneedle crlf\r\n")
        .file("lossy.txt", b"needle \xff\xfe end\n")
        .file("nonl.txt", "needle at eof");
    assert_text_eq(
        &search(&p, 2, 100, "needle"),
        &text(&[
            "a/b.txt:2:needle ab",
            "a.txt:1:needle a",
            "crlf.txt:2:needle crlf",
            "lossy.txt:1:needle \u{fffd}\u{fffd} end",
            "nonl.txt:1:needle at eof",
            "z.txt:1:needle z",
        ]),
    );
}

#[test]
fn search_clips_lines_at_exactly_max_chars() {
    let p = TestProject::new();
    p.file("a.txt", "k2345\nk23456\nkéééé\nkééééé\nk2345\r\n");
    let out = search_text(&p.project(), &search_budget(10, 10, 5), "k").expect("search");
    assert_text_eq(
        &out,
        &text(&[
            "a.txt:1:k2345",
            &format!("a.txt:2:k2345{CLIP_MARKER}"),
            "a.txt:3:kéééé",
            &format!("a.txt:4:kéééé{CLIP_MARKER}"),
            "a.txt:5:k2345",
        ]),
    );
}

#[test]
fn search_skips_binary_ignored_hidden_and_symlinked_files() {
    let p = TestProject::git();
    ignore_rules_tree(&p);
    p.file("bin.dat", b"x\0needle\n")
        .file("text.txt", "needle\n")
        .symlink("link.txt", "text.txt");
    for name in [
        "a.log",
        "build/out.txt",
        "root-only.txt",
        "secret.env",
        "scratch.tmp",
        ".env",
        ".hidden/x.txt",
        "sub/code.gen",
    ] {
        p.file(name, "needle\n");
    }
    assert_text_eq(&search(&p, 2, 100, "needle"), &text(&["text.txt:1:needle"]));
}

#[test]
fn search_stops_walking_once_the_total_budget_is_exceeded() {
    let p = numbered_files(3);
    let trap = trap_directory(&p);
    let project = p.project();
    let out = must_not_enter_trap(&trap, move || {
        search_text(&project, &search_budget(2, 2, 500), "match").expect("search")
    });
    assert_text_eq(
        &out,
        &text(&["f00.txt:1:match", "f01.txt:1:match", &search_trunc(2)]),
    );
}

/// A tree big enough for search_text's parallel phase: `quiet` files without a match,
/// then `loud` files with two matches each, then `tail` quiet files, in walk order.
fn long_tree(quiet: usize, loud: usize, tail: usize) -> TestProject {
    let p = TestProject::new();
    for i in 0..quiet {
        p.file(&format!("a/{:02}/q{i:04}.txt", i % 7), "nothing here\n");
    }
    for i in 0..loud {
        p.file(
            &format!("b/{:02}/l{i:04}.txt", i % 5),
            format!("x\nneedle {i} one\ny\nneedle {i} two\nneedle {i} three\n"),
        );
    }
    for i in 0..tail {
        p.file(&format!("c/t{i:04}.txt"), "nothing\n");
    }
    p
}

#[test]
fn search_parallel_phase_is_deterministic_and_in_walk_order() {
    let p = long_tree(150, 120, 100);
    let project = p.project();
    // The unbudgeted answer, in walk order, built from the tree itself.
    let mut paths: Vec<String> = (0..120)
        .map(|i| format!("b/{:02}/l{i:04}.txt", i % 5))
        .collect();
    paths.sort();
    for (per_file, total) in [
        (2, 1),
        (2, 10),
        (1, 77),
        (2, 239),
        (2, 240),
        (2, 241),
        (3, 500),
    ] {
        // The matches in walk order; then, as the output gives them, those within the
        // total with a note after each of the first three files the per-file cap cut,
        // and one line counting the other cut files shown.
        let mut matches = Vec::new();
        for path in &paths {
            let i: usize = path[6..10].parse().expect("index");
            let all = [
                format!("{path}:2:needle {i} one"),
                format!("{path}:4:needle {i} two"),
                format!("{path}:5:needle {i} three"),
            ];
            matches.extend(all.into_iter().take(per_file).map(|m| (path.clone(), m)));
        }
        let full = matches.len();
        let mut expected = Vec::new();
        let (mut named, mut rest) = (0, 0);
        for (n, (path, line)) in matches.iter().enumerate().take(total) {
            expected.push(line.clone());
            let last_of_file = matches.get(n + 1).is_none_or(|(next, _)| next != path);
            if per_file < 3 && last_of_file {
                if named < 3 {
                    named += 1;
                    expected.push(capped(path, 3 - per_file as u64));
                } else {
                    rest += 1;
                }
            }
        }
        if rest > 0 {
            expected.push(format!(
                "[+{} more in {rest} other {} past the cap of {per_file} per file; narrow the pattern or view_slice a file]",
                rest * (3 - per_file),
                if rest == 1 { "file" } else { "files" }
            ));
        }
        if full > total {
            expected.push(search_trunc(total));
        }
        let budgets = search_budget(per_file, total, 500);
        for _ in 0..3 {
            let out = search_text(&project, &budgets, "needle").expect("search");
            assert_lines_eq(
                &lines(&out),
                &expected,
                &format!("per file {per_file}, total {total}"),
            );
        }
    }
}

#[test]
fn search_walk_runs_a_bounded_distance_past_the_cut() {
    // The budget runs out in the parallel phase (after 150 quiet files); the walk may run
    // ahead of the searchers, but only so far: a trap 700 files later is never reached.
    let p = long_tree(150, 40, 700);
    let trap = trap_directory(&p);
    let project = p.project();
    let out = must_not_enter_trap(&trap, move || {
        search_text(&project, &search_budget(2, 10, 500), "needle").expect("search")
    });
    // Ten matches, three per-file notes, the count of the other capped files, and the
    // truncation line.
    assert_eq!(lines(&out).len(), 15, "{out}");
    assert!(out.ends_with(&format!("{}\n", search_trunc(10))), "{out}");
}

// ---------------------------------------------------------------------------------------
// view_slice

#[test]
fn view_numbering_format() {
    let p = TestProject::new();
    let body: String = (1..=100_000).map(|i| format!("line {i}\n")).collect();
    p.file("big.txt", body);
    let b = slice_budget(10, 100);
    assert_text_eq(
        &view(&p, &b, "big.txt", 1, 2),
        "    1 | line 1\n    2 | line 2\n",
    );
    assert_text_eq(
        &view(&p, &b, "big.txt", 99_999, 100_000),
        "99999 | line 99999\n100000 | line 100000\n",
    );
    // A path may be written with `./` and redundant separators.
    assert_text_eq(&view(&p, &b, "./big.txt", 3, 3), "    3 | line 3\n");
}

#[test]
fn view_span_edges() {
    let p = TestProject::new();
    let body: String = (1..=20).map(|i| format!("{i}\n")).collect();
    p.file("a.txt", body);
    let b = slice_budget(5, 100);
    assert_eq!(view(&p, &b, "a.txt", 1, 4).lines().count(), 4);
    assert_text_eq(
        &view(&p, &b, "a.txt", 3, 7),
        "    3 | 3\n    4 | 4\n    5 | 5\n    6 | 6\n    7 | 7\n",
    );
    assert_text_eq(&view(&p, &b, "a.txt", 2, 2), "    2 | 2\n");
    let project = p.project();
    let msg = refused(view_slice(&project, &b, "a.txt", 1, 6));
    assert_text_eq(
        &msg,
        "lines 1-6 is 6 lines; view_slice reads at most 5 lines per call, so ask for a narrower range",
    );
    assert_text_eq(
        &refused(view_slice(&project, &b, "a.txt", 3, 2)),
        "end (2) is before start (3); ask for start <= end",
    );
    for start in [0, -1, i64::MIN] {
        let msg = refused(view_slice(&project, &b, "a.txt", start, 3));
        assert!(msg.starts_with("start must be 1 or more"), "{msg}");
    }
    // Extremes do not overflow.
    assert!(refused(view_slice(&project, &b, "a.txt", 1, i64::MAX)).contains("narrower"));
    // Wider than the budget on a file that ends within it: answered, not refused.
    p.file("small.txt", "1\n2\n3\n");
    assert_text_eq(
        &view(&p, &b, "small.txt", 1, 500),
        "    1 | 1\n    2 | 2\n    3 | 3\n",
    );
    assert_text_eq(
        &view(&p, &b, "a.txt", 17, 500),
        "   17 | 17\n   18 | 18\n   19 | 19\n   20 | 20\n",
    );
    assert!(refused(view_slice(&project, &b, "a.txt", 15, 500)).contains("narrower"));
    assert!(
        refused(view_slice(&project, &b, "a.txt", i64::MAX, i64::MAX)).contains("has 20 lines")
    );
}

#[test]
fn view_end_past_eof_is_clamped_and_start_past_eof_reports_the_count() {
    let p = TestProject::new();
    p.file("three.txt", "a\nb\nc\n")
        .file("nonl.txt", "a\nb")
        .file("one.txt", "only\n")
        .file("blank_last.txt", "a\n\n")
        .file("empty.txt", "");
    let b = slice_budget(10, 100);
    let project = p.project();
    assert_text_eq(&view(&p, &b, "three.txt", 2, 10), "    2 | b\n    3 | c\n");
    assert_text_eq(&view(&p, &b, "three.txt", 3, 3), "    3 | c\n");
    assert_text_eq(
        &refused(view_slice(&project, &b, "three.txt", 4, 4)),
        "`three.txt` has 3 lines; start 4 is past the end of the file",
    );
    assert_text_eq(&view(&p, &b, "nonl.txt", 1, 5), "    1 | a\n    2 | b\n");
    assert!(refused(view_slice(&project, &b, "nonl.txt", 3, 3)).contains("has 2 lines"));
    assert_text_eq(
        &refused(view_slice(&project, &b, "one.txt", 2, 3)),
        "`one.txt` has 1 line; start 2 is past the end of the file",
    );
    assert_text_eq(
        &view(&p, &b, "blank_last.txt", 1, 9),
        "    1 | a\n    2 | \n",
    );
    assert_text_eq(
        &refused(view_slice(&project, &b, "empty.txt", 1, 1)),
        "`empty.txt` has 0 lines; start 1 is past the end of the file",
    );
}

#[test]
fn view_clips_lines_at_exactly_max_chars() {
    let p = TestProject::new();
    p.file(
        "a.txt",
        "12345\n123456\néééé5\néééé56\n12345\r\n1234\r\r\n\n",
    );
    let b = slice_budget(10, 5);
    assert_text_eq(
        &view(&p, &b, "a.txt", 1, 7),
        &text(&[
            "    1 | 12345",
            &format!("    2 | 12345{CLIP_MARKER}"),
            "    3 | éééé5",
            &format!("    4 | éééé5{CLIP_MARKER}"),
            // The line terminator's `\r` is not content; a second one is.
            "    5 | 12345",
            "    6 | 1234\r",
            "    7 | ",
        ]),
    );
}

#[test]
fn view_refuses_binary_and_shows_invalid_utf8_lossily() {
    let p = TestProject::new();
    let mut late_nul = "text\n".repeat(4000).into_bytes();
    late_nul.extend_from_slice(b"after\0nul\nlast\n");
    p.file("early.bin", b"\x7fELF\0\0\x01")
        .file("late.bin", &late_nul)
        .file("latin1.txt", b"caf\xe9\n\xff\xfe\n");
    let b = slice_budget(10, 100);
    let project = p.project();
    assert_text_eq(
        &refused(view_slice(&project, &b, "early.bin", 1, 1)),
        "`early.bin` is a binary file; view_slice shows text only",
    );
    // A NUL beyond the sniffed head is caught on the line that holds it...
    assert!(refused(view_slice(&project, &b, "late.bin", 4000, 4001)).contains("binary"));
    // ...and lines before it are still text.
    assert_text_eq(
        &view(&p, &b, "late.bin", 3999, 4000),
        " 3999 | text\n 4000 | text\n",
    );
    assert_text_eq(
        &view(&p, &b, "latin1.txt", 1, 2),
        "    1 | caf\u{fffd}\n    2 | \u{fffd}\u{fffd}\n",
    );
}

#[test]
fn view_memory_does_not_depend_on_file_or_line_size() {
    let p = TestProject::new();
    // One 32 MiB line, and a 2 million line file.
    let mut huge_line = vec![b'x'; 32 << 20];
    huge_line.extend_from_slice(b"\nsecond\n");
    p.file("one_line.txt", &huge_line);
    drop(huge_line);
    let many: String = "a short line\n".repeat(2_000_000);
    p.file("many.txt", &many);
    drop(many);

    let project = p.project();
    let b = slice_budget(120, 500);
    let (out, peak) = alloc_meter::peak_during(|| view_slice(&project, &b, "one_line.txt", 1, 2));
    let out = out.expect("view");
    assert_eq!(out.lines().count(), 2, "{out:.200}");
    assert!(out.contains(CLIP_MARKER));
    assert!(
        peak < 512 << 10,
        "viewing a 32 MiB line took {peak} bytes of heap"
    );

    let (out, peak) =
        alloc_meter::peak_during(|| view_slice(&project, &b, "many.txt", 1_999_990, 2_000_005));
    assert_eq!(out.expect("view").lines().count(), 11);
    assert!(
        peak < 512 << 10,
        "viewing the end of 2M lines took {peak} bytes"
    );

    // The meter works: reading the whole file would have shown up.
    let (_, whole) = alloc_meter::peak_during(|| std::fs::read(p.path("one_line.txt")));
    assert!(whole > 32 << 20, "alloc meter saw only {whole} bytes");
}

#[test]
fn view_names_missing_files_and_directories() {
    let p = TestProject::new();
    p.file("dir/a.txt", "x\n");
    let b = slice_budget(10, 100);
    let project = p.project();
    assert_text_eq(
        &refused(view_slice(&project, &b, "nope.txt", 1, 1)),
        "`nope.txt` does not exist; use list_files to see what is there",
    );
    assert_text_eq(
        &refused(view_slice(&project, &b, "dir", 1, 1)),
        "`dir` is not a regular file",
    );
    assert_text_eq(
        &refused(view_slice(&project, &b, "dir/a.txt/x", 1, 1)),
        "`dir/a.txt/x` is not a regular file",
    );
}

// ---------------------------------------------------------------------------------------
// Property tests: budgets hold for any input, and budgeted output is a prefix of the
// unbudgeted output (so stopping early never changes what is shown).

mod props {
    use proptest::prelude::*;

    use super::*;

    fn config() -> ProptestConfig {
        ProptestConfig {
            cases: 40,
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// One file: directory, name (sometimes hidden), and lines of content.
    fn entry() -> impl Strategy<Value = (usize, String, Vec<String>)> {
        (
            0usize..4,
            "\\.?[abc]{1,2}(\\.rs|\\.txt|\\.log)?",
            prop::collection::vec(
                prop_oneof![
                    "(foo|bar|baz| |x){0,6}",
                    "x{100,300}",
                    "(é|foo ){1,40}",
                    Just("foo\r".to_owned()),
                ],
                0..12,
            ),
        )
    }

    const DIRS: [&str; 4] = ["", "a/", "a/b/", "c/"];

    /// Builds a random tree; returns it with the number of files written.
    fn build(entries: &[(usize, String, Vec<String>)], git: bool, ignore: &str) -> TestProject {
        let p = if git {
            TestProject::git()
        } else {
            TestProject::new()
        };
        p.file(".gitignore", ignore);
        for (dir, name, body) in entries {
            let path = p.path(&format!("{}{name}", DIRS[*dir]));
            // Names can collide with directories ("a" the file vs "a/" the directory);
            // the second one simply loses.
            if path.exists() || path.parent().is_some_and(|d| d.is_file()) {
                continue;
            }
            if let Some(parent) = path.parent()
                && std::fs::create_dir_all(parent).is_err()
            {
                continue;
            }
            let _ = std::fs::write(&path, body.join("\n"));
        }
        p
    }

    fn ignore_text() -> impl Strategy<Value = String> {
        prop::collection::vec(
            prop::sample::select(vec!["*.log", "a/", "*.txt", "!b.txt", "/c", "b*"]),
            0..3,
        )
        .prop_map(|v| v.join("\n"))
    }

    proptest! {
        #![proptest_config(config())]

        #[test]
        fn list_files_stays_within_budget(
            entries in prop::collection::vec(entry(), 0..16),
            git in any::<bool>(),
            ignore in ignore_text(),
            limit in 1usize..12,
            glob in prop::sample::select(vec!["", "*.rs", "!*.log", "a/**", "*.{rs,txt}"]),
        ) {
            let p = build(&entries, git, &ignore);
            let glob = (!glob.is_empty()).then_some(glob);
            let full = list(&p, usize::MAX / 4, glob);
            let got = list(&p, limit, glob);
            let full_lines = lines(&full);
            // The note on a cut listing accounts for every file left out.
            let noted = list_files_with_note(&p.project(), &list_budget(limit), glob).expect("list");
            let left_out: usize = noted
                .lines()
                .filter_map(|line| line.strip_prefix("[not listed: "))
                .flat_map(|note| note.split(", "))
                .filter_map(|place| {
                    let n = place.rsplit_once(" (").map_or(place, |(_, n)| n);
                    n.split(' ').next().and_then(|n| n.parse::<usize>().ok())
                })
                .sum();
            let files = if full.starts_with("No files") {
                0
            } else {
                full_lines.iter().filter(|l| !l.starts_with('[')).count()
            };
            prop_assert_eq!(left_out, files.saturating_sub(limit));
            let got_lines = lines(&got);
            prop_assert!(got_lines.len() <= limit + 1);
            if full.starts_with("No files") {
                prop_assert_eq!(&got, &full);
            } else if full_lines.len() > limit {
                prop_assert_eq!(&got_lines[..limit], &full_lines[..limit]);
                prop_assert_eq!(&got_lines[limit], &list_trunc(limit));
            } else {
                prop_assert_eq!(&got, &full);
            }
            if rg_available() {
                // What rg lists with the glob, among what it lists without one.
                let all = rg_lines(p.root(), &["--files", "--sort", "path", "."]);
                let rg = match glob {
                    None => all,
                    Some(glob) => rg_lines(p.root(), &["--files", "--sort", "path", "-g", glob, "."])
                        .into_iter()
                        .filter(|f| all.contains(f))
                        .collect(),
                };
                let ours = if full.starts_with("No files") { Vec::new() } else { full_lines };
                prop_assert_eq!(ours, rg);
            }
        }

        #[test]
        fn search_text_stays_within_budget(
            entries in prop::collection::vec(entry(), 0..16),
            git in any::<bool>(),
            ignore in ignore_text(),
            per_file in 1usize..4,
            total in 1usize..10,
            max_chars in 1usize..40,
            pattern in prop::sample::select(vec!["foo", "ba[rz]", "^x", "é", "(?i)FOO", "o\\s*$", "q"]),
        ) {
            let p = build(&entries, git, &ignore);
            let project = p.project();
            let budgets = search_budget(per_file, total, max_chars);
            let got = search_text(&project, &budgets, pattern).expect("search");
            let full = search_text(&project, &search_budget(per_file, usize::MAX / 4, max_chars), pattern)
                .expect("search");
            // The per-file notes are bounded on their own; the matches are compared
            // without them.
            let notes = lines(&got).iter().filter(|l| is_capped_note(l)).count();
            prop_assert!(notes <= 4, "{} per-file notes: {}", notes, got);
            let got_lines = without_capped_notes(lines(&got));
            let full_lines = without_capped_notes(lines(&full));
            prop_assert!(got_lines.len() <= total + 1);
            if full == "No matches found." {
                prop_assert_eq!(&got, &full);
            } else if full_lines.len() > total {
                prop_assert_eq!(&got_lines[..total], &full_lines[..total]);
                prop_assert_eq!(&got_lines[total], &search_trunc(total));
            } else {
                prop_assert_eq!(&got, &full);
            }
            // Every match line fits: `path:line:` + max_chars + the marker; and no file
            // has more than per_file matches.
            let mut per: std::collections::BTreeMap<&str, usize> = Default::default();
            let match_lines = if full == "No matches found." { &[][..] } else { &full_lines[..] };
            for line in match_lines.iter().filter(|l| !l.starts_with('[')) {
                let mut parts = line.splitn(3, ':');
                let (path, number, body) = (
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                    parts.next().unwrap_or_default(),
                );
                prop_assert!(number.parse::<u64>().is_ok(), "{}", line);
                prop_assert!(
                    body.chars().count() <= max_chars + CLIP_MARKER.len(),
                    "{} is longer than {} + marker", line, max_chars
                );
                *per.entry(path).or_default() += 1;
            }
            prop_assert!(per.values().all(|&n| n <= per_file), "{:?}", per);
        }

        #[test]
        fn view_slice_stays_within_budget_and_shows_the_right_lines(
            body in prop::collection::vec(
                prop_oneof![
                    "[a-z ]{0,12}".prop_map(String::into_bytes),
                    "x{20,200}".prop_map(String::into_bytes),
                    "(é|ab){0,30}\r?".prop_map(String::into_bytes),
                    prop::collection::vec(1u8..=255, 0..40),
                ],
                0..40,
            ),
            trailing_newline in any::<bool>(),
            max_lines in 1usize..30,
            max_chars in 1usize..50,
            start in -2i64..50,
            len in -3i64..40,
        ) {
            let mut bytes = body.join(&b'\n');
            if trailing_newline && !body.is_empty() {
                bytes.push(b'\n');
            }
            let p = TestProject::new();
            p.file("f.txt", &bytes);
            let end = start.saturating_add(len);
            let budgets = slice_budget(max_lines, max_chars);
            let result = view_slice(&p.project(), &budgets, "f.txt", start, end);

            // The oracle: split on \n; a final \n does not start another line.
            let file_lines: Vec<&[u8]> = if bytes.is_empty() {
                Vec::new()
            } else {
                let trimmed = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
                trimmed.split(|&b| b == b'\n').collect()
            };
            let count = file_lines.len() as i64;
            // A range wider than the budget is answered when the file ends within it.
            let span_ok = start >= 1
                && end >= start
                && ((end - start + 1) as usize <= max_lines
                    || end.min(count) - start < max_lines as i64);
            if !span_ok || start > count {
                prop_assert!(matches!(result, Err(ToolError::Refused(_))), "{:?}", result);
                if span_ok {
                    let msg = format!("has {count} line");
                    prop_assert!(
                        matches!(&result, Err(ToolError::Refused(m)) if m.contains(&msg)),
                        "{:?}", result
                    );
                }
            } else {
                let out = result.expect("in range");
                let out_lines: Vec<&str> = out.lines().collect();
                let last = end.min(count);
                prop_assert_eq!(out_lines.len() as i64, last - start + 1);
                prop_assert!(out_lines.len() <= max_lines);
                for (i, line) in out_lines.iter().enumerate() {
                    let number = start + i as i64;
                    let raw = file_lines[(number - 1) as usize];
                    let prefix = format!("{number:5} | ");
                    prop_assert!(line.starts_with(&prefix), "{}", line);
                    let shown = &line[prefix.len()..];
                    prop_assert!(shown.chars().count() <= max_chars + CLIP_MARKER.len());
                    prop_assert_eq!(shown, clip_line(raw, max_chars));
                    // Independently of clip_line: a short line is shown whole.
                    let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
                    let lossy = String::from_utf8_lossy(raw);
                    if lossy.chars().count() <= max_chars {
                        prop_assert_eq!(shown, lossy.as_ref());
                    } else {
                        prop_assert!(shown.ends_with(CLIP_MARKER));
                        let kept = &shown[..shown.len() - CLIP_MARKER.len()];
                        prop_assert_eq!(kept.chars().count(), max_chars);
                    }
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Differential tests against the real ripgrep.

mod differential {
    use super::*;

    const GLOBS: [Option<&str>; 6] = [
        None,
        Some("*.rs"),
        Some("*.{c,h}"),
        Some("!*.rs"),
        Some("Cargo.toml"),
        Some("src/**/*.rs"),
    ];

    const PATTERNS: [&str; 5] = ["fn main", "unsafe", "TODO|FIXME", "(?i)license", "impl<T>"];

    /// What one comparison covered.
    #[derive(Debug, Default)]
    struct Compared {
        listings: usize,
        files: usize,
        searches: usize,
        lines: usize,
        /// Files `rg --files -g GLOB` lists although `rg --files` ignores them (a glob
        /// overrides ignore rules in rg; it only narrows in list_files).
        rg_glob_widened: usize,
    }

    impl Compared {
        fn add(&mut self, other: &Compared) {
            self.listings += other.listings;
            self.files += other.files;
            self.searches += other.searches;
            self.lines += other.lines;
            self.rg_glob_widened += other.rg_glob_widened;
        }
    }

    /// A tool's output as rg would print it: no lines for "nothing found", and no
    /// per-file cap notes (rg's `--max-count` says nothing).
    fn tool_lines(output: &str) -> Vec<String> {
        if output.starts_with("No files") || output == "No matches found." {
            Vec::new()
        } else {
            without_capped_notes(lines(output))
        }
    }

    /// The budgeted output metron must give when `full` (rg's answer) is cut to `n`.
    fn expected_prefix(full: &[String], n: usize, trunc: String) -> Vec<String> {
        let mut out: Vec<String> = full.iter().take(n).cloned().collect();
        if full.len() > n {
            out.push(trunc);
        }
        out
    }

    /// Compares list_files and search_text on `dir` with rg, including early-stopped
    /// outputs against the first N lines of rg's sorted output.
    fn compare(dir: &Path, globs: &[Option<&str>], patterns: &[&str]) -> Compared {
        let project = Project::open(dir, dir.join(".git").exists()).expect("open project");
        let mut done = Compared::default();
        let rg_all = rg_lines(dir, &["--files", "--sort", "path", "."]);
        let listed: std::collections::HashSet<&String> = rg_all.iter().collect();
        for glob in globs {
            let mut args = vec!["--files", "--sort", "path"];
            if let Some(glob) = glob {
                args.extend(["-g", glob]);
            }
            args.push(".");
            let rg_glob = rg_lines(dir, &args);
            let rg: Vec<String> = rg_glob
                .iter()
                .filter(|f| listed.contains(f))
                .cloned()
                .collect();
            done.rg_glob_widened += rg_glob.len() - rg.len();
            let ours = tool_lines(
                &list_files(&project, &list_budget(usize::MAX / 4), *glob).expect("list"),
            );
            assert_lines_eq(
                &ours,
                &rg,
                &format!("list_files({glob:?}) vs rg {args:?} in {}", dir.display()),
            );
            done.listings += 1;
            done.files += rg.len();
            for n in [1, 7, rg.len().saturating_sub(1), rg.len(), rg.len() + 1] {
                if n == 0 {
                    continue;
                }
                let ours = tool_lines(&list_files(&project, &list_budget(n), *glob).expect("list"));
                assert_lines_eq(
                    &ours,
                    &expected_prefix(&rg, n, list_trunc(n)),
                    &format!("list_files({glob:?}) with budget {n} in {}", dir.display()),
                );
            }
        }
        for pattern in patterns {
            let rg = rg_lines(
                dir,
                &["-n", "--sort", "path", "--max-count=2", "-e", pattern, "."],
            );
            let big = search_budget(2, usize::MAX / 4, usize::MAX / 4);
            let ours = tool_lines(&search_text(&project, &big, pattern).expect("search"));
            assert_lines_eq(
                &ours,
                &rg,
                &format!("search_text({pattern:?}) vs rg in {}", dir.display()),
            );
            done.searches += 1;
            done.lines += rg.len();
            for n in [1, 10, rg.len()] {
                if n == 0 {
                    continue;
                }
                let budgets = search_budget(2, n, usize::MAX / 4);
                let ours = tool_lines(&search_text(&project, &budgets, pattern).expect("search"));
                assert_lines_eq(
                    &ours,
                    &expected_prefix(&rg, n, search_trunc(n)),
                    &format!(
                        "search_text({pattern:?}) with total {n} in {}",
                        dir.display()
                    ),
                );
            }
        }
        done
    }

    /// A generated tree with every rule rg applies by default, plus binary files, CRLF,
    /// UTF-16 with a BOM, awkward names and a nested repository.
    fn generated_tree(p: &TestProject) {
        ignore_rules_tree(p);
        let mut late_binary = "fn main() {}\n".repeat(10_000).into_bytes();
        late_binary.extend_from_slice(b"\0unsafe\n");
        let mut utf16 = vec![0xff, 0xfe];
        for unit in "fn main() { unsafe {} }\n".encode_utf16() {
            utf16.extend_from_slice(&unit.to_le_bytes());
        }
        p.file("Cargo.toml", "[package]\nlicense = \"MIT\"\n")
            .file(
                "src/main.rs",
                "fn main() {\n    unsafe { x() }\n}\n// TODO: x\n",
            )
            .file(
                "src/lib.rs",
                "impl<T> Foo for T {}\n// FIXME\n// License: MIT\n",
            )
            .file(
                "src/deep/er/mod.rs",
                "pub fn main() {}\nunsafe fn a() {}\nunsafe fn b() {}\nunsafe fn c() {}\n",
            )
            .file("src/c/x.c", "int main() { /* TODO */ }\n")
            .file("src/c/x.h", "// LICENSE\n")
            .file("crlf.rs", "fn main() {\r\n  unsafe {}\r\n}\r\n")
            .file("early.bin", b"\0\x01fn main unsafe\n")
            .file("late.bin", late_binary)
            .file("utf16.txt", utf16)
            .file("latin1.txt", b"licen\xe7e LICENSE caf\xe9\n")
            .file("with space.rs", "fn main() {}\n")
            .file("a-b.rs", "// todo TODO\n")
            .file("a/b.rs", "fn main() {} // TODO FIXME\n")
            .file("A.rs", "impl<T> A<T> {}\n")
            .file("é/ü.rs", "fn main() { \"ünïcode\" }\n")
            .file("long.rs", format!("fn main() {{ {} }}\n", "x".repeat(5000)))
            .file("nested/.gitignore", "ignored_in_nested.rs\n")
            .file("nested/ignored_in_nested.rs", "fn main() {}\n")
            .file("nested/kept.rs", "fn main() {}\n")
            .symlink("link.rs", "src/main.rs")
            .symlink("linkdir", "src");
    }

    /// The globs the brief asks for, plus ones that would widen the listing in rg.
    const MORE_GLOBS: [Option<&str>; 10] = [
        None,
        Some("*.rs"),
        Some("*.{c,h}"),
        Some("!*.rs"),
        Some("Cargo.toml"),
        Some("src/**/*.rs"),
        Some("*"),
        Some("*.log"),
        Some("!src"),
        Some("**/*.txt"),
    ];

    const MORE_PATTERNS: [&str; 11] = [
        "fn main",
        "unsafe",
        "TODO|FIXME",
        "(?i)license",
        "impl<T>",
        "^$",
        "",
        "\\bmain\\b",
        "x{3}",
        "[^\\x00-\\x7f]",
        "\\p{L}+code",
    ];

    #[test]
    fn generated_git_tree_matches_rg() {
        if !rg_available() {
            return skip(
                "generated_git_tree_matches_rg",
                "rg (ripgrep) is not installed",
            );
        }
        let p = TestProject::git();
        generated_tree(&p);
        p.file(".git/info/exclude", "excluded.rs\n")
            .file("excluded.rs", "fn main() {}\n");
        // A nested repository: its own .gitignore applies inside it.
        git_init(&p.path("nested"));
        let done = compare(p.root(), &MORE_GLOBS, &MORE_PATTERNS);
        assert!(done.files > 10 && done.lines > 10, "{done:?}");
        eprintln!("generated git tree: {done:?}");
    }

    #[test]
    fn generated_plain_tree_matches_rg() {
        if !rg_available() {
            return skip(
                "generated_plain_tree_matches_rg",
                "rg (ripgrep) is not installed",
            );
        }
        let p = TestProject::new();
        generated_tree(&p);
        let done = compare(p.root(), &MORE_GLOBS, &MORE_PATTERNS);
        assert!(done.files > 10 && done.lines > 10, "{done:?}");
        eprintln!("generated plain tree: {done:?}");
    }

    /// Ignore files in directories above the root apply, as in rg: a project in a
    /// subdirectory of a git repository and of a directory holding `.ignore`.
    #[test]
    fn ignore_files_above_the_root_match_rg() {
        if !rg_available() {
            return skip(
                "ignore_files_above_the_root_match_rg",
                "rg (ripgrep) is not installed",
            );
        }
        for git in [false, true] {
            let outer = if git {
                TestProject::git()
            } else {
                TestProject::new()
            };
            outer
                .file(".ignore", "*.secret\n")
                .file(".gitignore", "*.gen\nproj/out/\n")
                .file("proj/a.rs", "fn main() {}\n")
                .file("proj/b.secret", "fn main() {}\n")
                .file("proj/c.gen", "fn main() {}\n")
                .file("proj/out/d.rs", "fn main() {}\n")
                .file("proj/.ignore", "!b.secret\n");
            let done = compare(&outer.path("proj"), &MORE_GLOBS, &PATTERNS);
            eprintln!("parent ignore files (git: {git}): {done:?}");
        }
    }

    /// The tree of this crate. Another process may be editing it while the test runs, so a
    /// mismatch is retried: only a difference that persists is a failure.
    #[test]
    fn this_crate_matches_rg() {
        if !rg_available() {
            return skip("this_crate_matches_rg", "rg (ripgrep) is not installed");
        }
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut last_panic = None;
        for _attempt in 0..3 {
            match std::panic::catch_unwind(|| compare(dir, &GLOBS, &PATTERNS)) {
                Ok(done) => {
                    eprintln!("this crate: {done:?}");
                    return;
                }
                Err(panic) => {
                    last_panic = Some(panic);
                    std::thread::sleep(Duration::from_millis(500));
                }
            }
        }
        if let Some(panic) = last_panic {
            std::panic::resume_unwind(panic);
        }
    }

    /// The cargo registry's unpacked sources, if any: real crates with real ignore files,
    /// licences, binary test fixtures and odd names. A spread-out sample keeps it fast.
    #[test]
    fn cargo_registry_sample_matches_rg() {
        if !rg_available() {
            return skip(
                "cargo_registry_sample_matches_rg",
                "rg (ripgrep) is not installed",
            );
        }
        let Some(crates) = registry_crates() else {
            return skip(
                "cargo_registry_sample_matches_rg",
                "no unpacked registry sources under $CARGO_HOME or $HOME/.cargo",
            );
        };
        let step = (crates.len() / 14).max(1);
        let mut total = Compared::default();
        let mut sampled = 0;
        for dir in crates.iter().step_by(step) {
            // Bounded: a debug build searches a few MB/s, so very large crates (generated
            // bindings) are left out; the rest still cover ignore files, fixtures and
            // licences.
            if tree_bytes(dir) > 3 << 20 {
                continue;
            }
            let done = compare(dir, &GLOBS, &PATTERNS);
            total.add(&done);
            sampled += 1;
            if total.files > 6000 {
                break;
            }
        }
        eprintln!(
            "cargo registry: {sampled} crates of {}: {total:?}",
            crates.len()
        );
    }

    /// The bytes of regular files beneath `dir`, symlinks not followed.
    fn tree_bytes(dir: &Path) -> u64 {
        let mut total = 0;
        let mut stack = vec![dir.to_path_buf()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                match entry.file_type() {
                    Ok(t) if t.is_dir() => stack.push(entry.path()),
                    Ok(t) if t.is_file() => {
                        total += entry.metadata().map(|m| m.len()).unwrap_or(0);
                    }
                    _ => {}
                }
            }
        }
        total
    }

    /// The unpacked crate directories of the cargo registry, sorted.
    fn registry_crates() -> Option<Vec<PathBuf>> {
        let cargo_home = std::env::var_os("CARGO_HOME")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cargo")))?;
        let mut crates = Vec::new();
        for index in std::fs::read_dir(cargo_home.join("registry").join("src")).ok()? {
            let Ok(index) = index else { continue };
            for krate in std::fs::read_dir(index.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if krate.path().is_dir() {
                    crates.push(krate.path());
                }
            }
        }
        crates.sort();
        (!crates.is_empty()).then_some(crates)
    }
}
