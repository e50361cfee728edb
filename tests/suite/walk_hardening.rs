//! The walking tools (list_files, search_text, find_symbol) against a hostile repository,
//! called as the model calls them, through [`Toolbox::call`]:
//!
//! - git's internals stay out of every walk whatever the ignore files say (`!.git` in
//!   `.ignore`, `!.git/` in `.gitignore`, `.rgignore`, `!.*`), including a worktree's
//!   `.git` file, a submodule's git directory under `.git/modules/` and its `.git` file,
//!   and a nested repository's `.git`;
//! - ignore files that are symlinks out, oversized, FIFOs or `/dev/zero`, in the tree and
//!   above the root, are not read, and a walk never blocks on one.

use std::path::Path;

use metron::project::Project;
use metron::tools::{ToolError, Toolbox};
use serde_json::json;

use super::common::*;

/// Marker text planted in every file under a `.git`; no tool result may contain it.
const CANARY: &str = "GITSECRET";

/// Writes `body` at `rel` beneath `root`, creating parent directories.
fn put(root: &Path, rel: &str, body: &str) {
    let path = root.join(rel);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(&path, body).expect("write");
}

/// The three walking tools, called through the registry on a fresh project at `root`.
fn walk_all(root: &Path) -> Vec<(&'static str, Result<String, ToolError>)> {
    let call = |tool: &str, args: serde_json::Value| {
        let project = Project::open(root, true).expect("open project");
        Toolbox::new(project, huge_budgets()).call(tool, args)
    };
    vec![
        ("list_files", call("list_files", json!({}))),
        (
            "list_files **",
            call("list_files", json!({"pattern": "**"})),
        ),
        (
            "search_text",
            call("search_text", json!({"pattern": CANARY})),
        ),
        (
            "search_text url",
            call("search_text", json!({"pattern": "url ="})),
        ),
        (
            "find_symbol",
            call("find_symbol", json!({"symbol": CANARY})),
        ),
    ]
}

/// A repository with git internals everywhere the review found them: the root's `.git`
/// directory (config with a credential, a Go file), a submodule's git directory under
/// `.git/modules/`, the submodule's `.git` file, a nested repository's `.git` directory,
/// and a `.GIT` spelled in another case.
fn hostile_repo() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    git_init(root);
    let config = format!("[remote \"origin\"]\n\turl = https://user:{CANARY}@example.com/r.git\n");
    put(root, ".git/config", &config);
    put(
        root,
        ".git/hooks/x.go",
        &format!("package x\nfunc {CANARY}() {{}}\n"),
    );
    put(root, ".git/modules/sub/config", &config);
    put(
        root,
        ".git/modules/sub/y.go",
        &format!("package y\nfunc {CANARY}() {{}}\n"),
    );
    put(
        root,
        "sub/.git",
        &format!("gitdir: ../.git/modules/sub\n# {CANARY}\n"),
    );
    put(root, "sub/lib.go", "package sub\nfunc Lib() {}\n");
    put(root, "nested/.git/config", &config);
    put(
        root,
        "nested/.git/z.go",
        &format!("package z\nfunc {CANARY}() {{}}\n"),
    );
    put(
        root,
        "nested/.GIT/w.go",
        &format!("package w\nfunc {CANARY}() {{}}\n"),
    );
    put(root, "main.go", "package main\nfunc main() {}\n");
    dir
}

/// Asserts that no tool shows anything of git's internals, and that the ordinary files
/// are still there (so the test cannot pass by the walk finding nothing).
fn assert_no_git_internals(root: &Path, variant: &str) {
    for (tool, result) in walk_all(root) {
        let text = match result {
            Ok(text) => text,
            Err(e) => panic!("{variant}: {tool} failed: {e}"),
        };
        // find_symbol's "not found" answer repeats the name asked for.
        let leaked = match tool {
            "find_symbol" => !text.starts_with("No definition"),
            _ => text.contains(CANARY),
        };
        assert!(!leaked, "{variant}: {tool} showed git internals:\n{text}");
        assert!(
            !text.lines().any(|line| line
                .split(['/', ':'])
                .any(|part| part.eq_ignore_ascii_case(".git"))),
            "{variant}: {tool} named a .git path:\n{text}"
        );
        if tool.starts_with("list_files") {
            assert!(
                text.contains("main.go") && text.contains("sub/lib.go"),
                "{variant}: {tool}:\n{text}"
            );
        }
    }
}

#[test]
fn ignore_files_cannot_reopen_git_internals_to_the_walking_tools() {
    for (file, rules) in [
        (".ignore", "!.git\n"),
        (".ignore", "!.git/\n!.GIT\n"),
        (".gitignore", "!.git/\n"),
        (".rgignore", "!.git\n"),
        (".ignore", "!.*\n"),
        (".gitignore", "!.*\n!.*/**\n"),
        (".rgignore", "!.*\n!**/.git/**\n"),
    ] {
        let repo = hostile_repo();
        let root = repo.path();
        put(root, file, rules);
        // The same rules again in the subdirectories, which the walker reads as well.
        put(root, &format!("sub/{file}"), rules);
        put(root, &format!("nested/{file}"), rules);
        assert_no_git_internals(root, &format!("{file} with {rules:?}"));
    }
}

#[test]
fn hidden_files_shown_still_leave_git_internals_out() {
    // `!.*` everywhere turns the hidden-file rule off for the whole tree: ordinary hidden
    // files come back, git's internals do not.
    let repo = hostile_repo();
    let root = repo.path();
    put(root, ".ignore", "!.*\n!**/.*\n");
    put(root, ".hidden.txt", "visible hidden\n");
    assert_no_git_internals(root, "hidden files on");
    let project = Project::open(root, true).expect("open project");
    let listed = Toolbox::new(project, huge_budgets())
        .call("list_files", json!({}))
        .expect("list_files");
    assert!(listed.contains(".hidden.txt"), "{listed}");
}

#[test]
fn search_text_skips_a_file_with_an_overlong_line_and_says_so() {
    // The searcher's line buffer is bounded (4 MiB): a file that is one 5 MiB line is
    // skipped with a note naming it, instead of being held whole (a 1 GB line used to
    // cost 1.27 GB), and the other files are still searched.
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let mut long = "x".repeat(5 << 20);
    long.push_str("needle\n");
    put(root, "huge.txt", &long);
    put(root, "small.txt", "a needle here\n");
    let project = Project::open(root, false).expect("open project");
    let text = Toolbox::new(project, huge_budgets())
        .call("search_text", json!({"pattern": "needle"}))
        .expect("search_text");
    assert!(text.contains("small.txt:1:a needle here"), "{text}");
    assert!(
        text.contains("[skipped huge.txt: it has a line longer than 4 MiB"),
        "{text}"
    );
    assert!(!text.contains("huge.txt:1:"), "{text}");
}

/// Runs `metron tool list_files` in `root`, which loads the configuration first.
fn list_with_config(root: &Path) -> Run {
    metron(root).args(["tool", "list_files"]).run()
}

#[test]
fn a_project_config_is_read_through_the_boundary_and_capped() {
    let base = tempfile::tempdir().expect("tempdir");
    let root = base.path().join("proj");
    put(&root, "a.txt", "a\n");
    // Valid settings outside the tree: a symlink must not bring them in.
    put(base.path(), "outside.json", "{\"list_max_entries\": 7}\n");
    std::os::unix::fs::symlink("../outside.json", root.join(".metron.json")).expect("symlink");
    let run = list_with_config(&root);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains(".metron.json") && run.stderr.contains("outside the project root"),
        "{run:?}"
    );

    // A regular file over 1 MiB (valid JSON, padded) is refused with the limit named.
    std::fs::remove_file(root.join(".metron.json")).expect("rm");
    let padded = format!("{{\"list_max_entries\": 7{}}}\n", " ".repeat(1 << 20));
    put(&root, ".metron.json", &padded);
    let run = list_with_config(&root);
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains(".metron.json") && run.stderr.contains("1048576 bytes"),
        "{run:?}"
    );

    // A symlink inside the tree to a small regular file is fine.
    std::fs::remove_file(root.join(".metron.json")).expect("rm");
    put(&root, "conf/metron.json", "{\"list_max_entries\": 7}\n");
    std::os::unix::fs::symlink("conf/metron.json", root.join(".metron.json")).expect("symlink");
    let run = list_with_config(&root);
    assert_eq!(run.code, 0, "{run:?}");
}

#[test]
fn ignore_files_that_are_symlinks_or_oversized_are_not_read() {
    let base = tempfile::tempdir().expect("tempdir");
    let root = base.path().join("proj");
    put(&root, "main.go", "package main\nfunc Main() {}\n");
    put(
        &root,
        "sub/secret_name.go",
        "package sub\nfunc Probe() {}\n",
    );
    put(&root, "big/b.go", "package big\nfunc Probe() {}\n");
    // Outside the tree: a list of names whose presence the repository wants to test.
    put(base.path(), "outside/list", "*\n");
    std::os::unix::fs::symlink("../../outside/list", root.join("sub/.gitignore")).expect("symlink");
    put(&root, "big/.ignore", &"#\n".repeat(600 << 10));
    let call = |tool: &str, args: serde_json::Value| {
        let project = Project::open(&root, false).expect("open project");
        Toolbox::new(project, huge_budgets()).call(tool, args)
    };
    for (tool, args) in [
        ("list_files", json!({})),
        ("search_text", json!({"pattern": "Probe"})),
    ] {
        let text = call(tool, args).expect(tool);
        assert!(
            text.contains(
                "[skipped sub/: `sub/.gitignore` is a symlink that leads outside the project;"
            ) && text.contains("[skipped big/: `big/.ignore` is larger than 1 MiB;"),
            "{tool}:\n{text}"
        );
        assert!(
            !text.contains("secret_name") && !text.contains("b.go"),
            "{tool}:\n{text}"
        );
    }
    let found = call("find_symbol", json!({"symbol": "Probe"})).expect("find_symbol");
    assert!(found.starts_with("No definition"), "{found}");

    // At the root nothing can be skipped: every walking tool refuses, naming the file.
    std::os::unix::fs::symlink("../outside/list", root.join(".ignore")).expect("symlink");
    for (tool, args) in [
        ("list_files", json!({})),
        ("search_text", json!({"pattern": "Probe"})),
        ("find_symbol", json!({"symbol": "Main"})),
    ] {
        match call(tool, args) {
            Err(ToolError::Refused(message)) => assert!(
                message.contains("`.ignore` is a symlink") && message.contains("replace it"),
                "{tool}: {message}"
            ),
            other => panic!("{tool} should refuse: {other:?}"),
        }
    }
}

/// A FIFO in the project, and a regular file that keeps being replaced by a FIFO (and
/// back) while search_text and find_symbol run through the real binary: every run ends
/// promptly. The walk never lists a FIFO; one swapped in after the listing is opened with
/// `O_NONBLOCK` and refused by the `fstat`, instead of blocking until someone writes to
/// it. Each run is killed after a time limit, so a regression fails rather than hangs.
#[test]
fn a_fifo_swapped_in_after_the_walk_cannot_block_search_or_the_symbol_index() {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Duration;

    let p = TestProject::git();
    let source = "package x\n\nfunc Needle() {}\n";
    p.file("a.go", source)
        .file("b.txt", "Needle\n")
        .fifo("pipe.go");
    // The swap's two states wait beside the project, on the same file system.
    let stage = tempfile::tempdir_in(p.root().parent().unwrap_or(p.root())).expect("stage dir");
    let (fifo, regular) = (stage.path().join("fifo"), stage.path().join("regular"));
    let status = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo");
    assert!(status.success(), "mkfifo");
    std::fs::write(&regular, source).expect("write");
    let swapped = p.path("swap.go");
    std::fs::copy(&regular, &swapped).expect("copy");

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let swapped = swapped.clone();
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                for spare in [&fifo, &regular] {
                    // `swap.go` becomes the spare and the spare becomes `swap.go`: the
                    // project's file is a FIFO half of the time.
                    let hold = spare.with_extension("hold");
                    let _ = std::fs::rename(&swapped, &hold);
                    let _ = std::fs::rename(spare, &swapped);
                    let _ = std::fs::rename(&hold, spare);
                }
            }
        })
    };

    let mut outcomes = Vec::new();
    for round in 0..6 {
        for (tool, args) in [
            ("search_text", r#"{"pattern":"Needle"}"#),
            ("find_symbol", r#"{"symbol":"Needle"}"#),
        ] {
            let run = metron(p.root())
                .args(["tool", tool, args])
                .run_within(Duration::from_secs(20));
            outcomes.push((round, tool, run));
        }
    }
    stop.store(true, Ordering::Relaxed);
    let _ = swapper.join();

    for (round, tool, run) in outcomes {
        let run = run.unwrap_or_else(|| panic!("{tool} (round {round}) blocked on a FIFO"));
        assert_eq!(run.code, 0, "{tool}: {run:?}");
        assert!(run.stdout.contains("a.go"), "{tool}: {run:?}");
        assert!(!run.stdout.contains("pipe.go"), "{tool}: {run:?}");
    }
}

/// The ignore files of the root's ancestors (the user's directories) still apply, as in
/// rg, but are read under the same checks: a FIFO there does not block the walk and
/// `/dev/zero` there is not read, while a regular one's rules apply.
#[test]
fn ignore_files_above_the_root_are_read_only_when_regular_and_small() {
    let base = tempfile::tempdir().expect("tempdir");
    let root = base.path().join("proj");
    put(&root, "main.go", "package main\nfunc Main() {}\n");
    put(&root, "drop.secret", "x\n");
    put(base.path(), ".ignore", "*.secret\n");
    std::os::unix::fs::symlink("/dev/zero", base.path().join(".gitignore")).expect("symlink");
    let fifo = base.path().join(".rgignore");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return skip(
            "ignore_files_above_the_root_are_read_only_when_regular_and_small",
            "mkfifo is not available",
        );
    }
    let listed = within(
        std::time::Duration::from_secs(60),
        move || {
            let project = Project::open(&root, false).expect("open project");
            Toolbox::new(project, huge_budgets()).call("list_files", json!({}))
        },
        || release_fifo(&fifo),
    )
    .expect("list_files did not block on the FIFO")
    .expect("list_files");
    assert_eq!(listed.trim_end(), "main.go", "{listed}");
}
