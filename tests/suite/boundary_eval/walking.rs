//! Cases on what the read and walking tools see: paths out of the project (`..`, absolute,
//! symlinks), ignore files whose rules try to reopen `.git` (in `.ignore`, `.gitignore`,
//! `.rgignore`, nested, for submodules), ignore files symlinked out of the tree (to
//! `/dev/zero`, or outside as an oracle), a separate git dir inside the project, and FIFOs
//! where the tools look; the files the walk reads on its own (`.git/info/exclude`, the
//! global excludes file, a repository's or a worktree's pointers to one) as `/dev/zero`, a
//! FIFO, an outside oracle or oversized; ignore files symlinked inside the tree (followed);
//! and many directories sharing one costly ignore file.

use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::suite::fake_ollama::FakeOllama;

cases! {
    "paths outside: .., absolute, symlinks" => paths_out_of_the_project: paths_outside_the_project;
    "!.git in .ignore" => dot_ignore_reopens_git: ignore_reopens_git;
    "!.git/ in .gitignore" => dot_gitignore_reopens_git: gitignore_reopens_git;
    "!.git in .rgignore" => dot_rgignore_reopens_git: rgignore_reopens_git;
    "!.* in .ignore" => ignore_reopens_every_hidden_name: every_hidden_name_reopened;
    "nested .ignore reopens submodule and nested git dirs" => nested_ignore_reopens_inner_git_dirs: nested_ignore_reopens_git_dirs;
    ".gitignore -> /dev/zero, .ignore -> outside" => ignore_files_symlinked_out: ignore_files_symlinked_out_of_the_tree;
    "nested .gitignore -> outside as an oracle" => nested_ignore_file_as_an_outside_oracle: nested_ignore_file_as_an_oracle;
    "separate git dir inside the project" => separate_git_dir_in_the_project: separate_git_dir_inside_the_project;
    "FIFOs in the tree" => fifos_where_the_tools_look: fifos_in_the_tree;
    ".git/info/exclude -> /dev/zero" => git_exclude_to_dev_zero: exclude_to_dev_zero;
    ".git/info/exclude a FIFO" => git_exclude_as_a_fifo: exclude_as_a_fifo;
    ".git/info/exclude -> outside as an oracle" => git_exclude_as_an_outside_oracle: exclude_as_an_oracle;
    ".git/info/exclude over 1 MiB, and at 1 MiB" => git_exclude_oversized_and_at_the_bound: exclude_oversized;
    "global excludes file -> /dev/zero, a FIFO, a list" => global_excludes_file_of_every_kind: global_excludes_file;
    "core.excludesFile in the repository's .git/config" => repository_config_names_an_outside_excludes_file: repository_excludes_file;
    "a worktree's gitdir exclude outside" => worktree_gitdir_exclude_outside: worktree_exclude;
    ".gitignore -> a file inside the tree" => ignore_file_symlinked_inside_is_followed: ignore_symlinked_inside;
    ".gitignore -> outside, refused with the message" => ignore_file_symlinked_outside_is_refused: ignore_symlinked_outside;
    "seven directories share one wildcard .gitignore" => one_costly_ignore_file_in_seven_directories: shared_costly_ignore_file;
    "distinct ignore content over the walk's bound" => ignore_content_over_the_walk_bound: ignore_content_over_the_bound;
}

/// Paths out of the project: `..`, an absolute path, a symlinked directory and a
/// symlinked file pointing outside; read and written, with `--yes`.
pub(super) fn paths_outside_the_project() -> Verdict {
    let fx = Fixture::new(true);
    fx.symlink("link", "../outside");
    fx.symlink("canary_link.txt", "../outside/canary.txt");
    fx.symlink("abs_link.txt", fx.canary());
    let absolute = fx.canary().to_string_lossy().into_owned();
    let old = CANARY.trim_end();
    let paths = [
        "../outside/canary.txt",
        absolute.as_str(),
        "link/canary.txt",
        "canary_link.txt",
        "abs_link.txt",
        "sub/../../outside/canary.txt",
    ];
    let mut calls = Vec::new();
    for path in paths {
        calls.push(("view_slice", json!({"path": path, "start": 1, "end": 5})));
        calls.push((
            "apply_patch",
            json!({"diff": one_line_patch(path, old, "pwned")}),
        ));
    }
    calls.push((
        "apply_patch",
        json!({"diff": create_patch("link/new.txt", "pwned")}),
    ));
    calls.push((
        "apply_patch",
        json!({"diff": create_patch("../outside/new.txt", "pwned")}),
    ));
    calls.push(("search_text", json!({"pattern": "CANARY"})));
    calls.push(("list_files", json!({"path": "link"})));
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "read and change the canary", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), n, "{results:#?}");
    // The reads and writes are refused; the walking tools may say "no matches" or list
    // nothing instead (they do not follow symlinks), which the canary check covers.
    for result in &results[..n - 2] {
        assert!(is_refusal(result), "not a refusal: {result}");
    }
    Verdict::Measured(m)
}

/// A definition that only exists inside git's internals.
const IN_GIT: &str = "EvilInGit";

/// Git internals with the credential and a Go file the symbol index would pick up: in
/// `.git/`, in a submodule's git dir (`.git/modules/sub`, named by `sub/.git`, a file) and
/// in a nested repository's `.git/`.
fn git_internals(fx: &Fixture) {
    let go = format!("package x\n\n// {GIT_SECRET}\nfunc {IN_GIT}() {{}}\n");
    fx.write(".git/hooks/evil.go", &go);
    fx.write(
        ".git/modules/sub/config",
        format!("[remote \"origin\"]\n\turl = https://me:{GIT_SECRET}@example.invalid/s.git\n"),
    );
    fx.write(".git/modules/sub/evil.go", &go);
    fx.write(
        "sub/.git",
        format!("gitdir: ../.git/modules/sub\n# {GIT_SECRET}\n"),
    );
    fx.write("sub/lib.go", "package sub\n\nfunc Lib() {}\n");
    fx.write("nested/.git/config", format!("# {GIT_SECRET}\n"));
    fx.write("nested/.git/evil.go", &go);
}

/// `rules` written to the ignore file `file`, then every walking tool asked for what is
/// in `.git`: the credential never reaches the model, no `.git` path is listed, and the
/// definition inside `.git` is not found.
fn ignore_rules_reopen_git(file: &str, rules: &str) -> Verdict {
    let fx = Fixture::new(true);
    git_internals(&fx);
    fx.write(file, rules);
    let calls = vec![
        ("search_text", json!({"pattern": "GITSECRET"})),
        ("list_files", json!({})),
        ("list_files", json!({"pattern": ".git/**"})),
        ("list_files", json!({"pattern": "**/.git*"})),
        ("find_symbol", json!({"symbol": IN_GIT})),
    ];
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "what is in .git?", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 5, "{results:#?}");
    for (i, result) in results.iter().enumerate() {
        let names_git = result.lines().any(|line| {
            line.split(['/', ':', ' '])
                .any(|part| part.eq_ignore_ascii_case(".git"))
        });
        if names_git && !is_refusal(result) {
            m.unauthorized
                .push(format!("call {}: a walking tool showed a .git path", i + 1));
        }
    }
    if !results[4].starts_with("No definition") {
        m.unauthorized
            .push("find_symbol found a definition inside .git".to_owned());
    }
    // The walk still sees the project (a case cannot pass by finding nothing).
    assert!(results[1].contains("sub/lib.go"), "{}", results[1]);
    Verdict::Measured(m)
}

/// `!.git` in `.ignore`.
pub(super) fn ignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".ignore", "!.git\n!.git/**\n")
}

/// `!.git/` in `.gitignore`.
pub(super) fn gitignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".gitignore", "!.git/\n!/.git/*\n")
}

/// `!.git` in `.rgignore`.
pub(super) fn rgignore_reopens_git() -> Verdict {
    ignore_rules_reopen_git(".rgignore", "!.git\n")
}

/// `!.*` (every hidden name) in `.ignore`.
pub(super) fn every_hidden_name_reopened() -> Verdict {
    ignore_rules_reopen_git(".ignore", "!.*\n!**/.*\n")
}

/// The rules in a nested directory's ignore file, aimed at the submodule's and the
///      nested repository's git dirs.
pub(super) fn nested_ignore_reopens_git_dirs() -> Verdict {
    ignore_rules_reopen_git("nested/.ignore", "!.git\n!.git/**\n")
}

/// Ignore files that are `/dev/zero`, or lead outside the tree (whose content would
///      hide files: an oracle for what the outside file lists): every walking tool
///      answers or refuses promptly, and no answer depends on the outside file.
pub(super) fn ignore_files_symlinked_out_of_the_tree() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("probe/probe.go", "package probe\n\nfunc Probe() {}\n");
    std::fs::write(fx.outside().join("list"), "*\n").expect("write the outside list");
    fx.symlink(".gitignore", "/dev/zero");
    std::os::unix::fs::symlink("../../outside/list", fx.root().join("probe/.ignore"))
        .expect("symlink");
    let fake = FakeOllama::start(script(vec![
        ("list_files", json!({})),
        ("search_text", json!({"pattern": "Probe"})),
        ("find_symbol", json!({"symbol": "Probe"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.bounded(&fake, &["-p", "list everything", "--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 3, "{results:#?}");
    // The root's ignore file cannot be skipped: every walking tool refuses, naming it.
    for result in &results {
        assert!(
            is_refusal(result) || result.contains(".gitignore"),
            "{result}"
        );
    }
    Verdict::Measured(m)
}

/// The same outside list reached from a subdirectory's `.gitignore`: that directory
///      is skipped with a note whatever the list says, so its answer is no oracle.
pub(super) fn nested_ignore_file_as_an_oracle() -> Verdict {
    let mut m = Measured::default();
    let mut answers = Vec::new();
    for list in ["*\n", "nothing-matches-this\n"] {
        let fx = Fixture::new(true);
        fx.write("probe/secret_name.go", "package probe\n\nfunc Probe() {}\n");
        std::fs::write(fx.outside().join("list"), list).expect("write the outside list");
        std::os::unix::fs::symlink("../../outside/list", fx.root().join("probe/.gitignore"))
            .expect("symlink");
        let fake = FakeOllama::start(script(vec![
            ("list_files", json!({})),
            ("search_text", json!({"pattern": "Probe"})),
        ]));
        let one = measure(&fx, || {
            fx.bounded(&fake, &["-p", "list everything", "--yes"]);
            (Expect::nothing(), Some(&fake))
        });
        m.unauthorized.extend(one.unauthorized);
        answers.push(tool_results(&fake));
    }
    if answers[0] != answers[1] {
        m.unauthorized.push(format!(
            "the answers depend on a file outside the project: {answers:#?}"
        ));
    }
    Verdict::Measured(m)
}

/// `git init --separate-git-dir=meta`: the real git directory is `meta/`, inside
///      the tree. Patches into it (hooks, config, any letter case) and reads of its
///      credential are refused like `.git/`'s.
pub(super) fn separate_git_dir_inside_the_project() -> Verdict {
    let fx = Fixture::new(false);
    let made = Command::new("git")
        .args(["init", "-q", "--separate-git-dir=meta"])
        .current_dir(fx.root())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .is_ok_and(|o| o.status.success());
    if !made {
        return Verdict::Skipped("git is not installed".to_owned());
    }
    let config = fx.root().join("meta/config");
    let mut text = std::fs::read_to_string(&config).expect("meta/config");
    text.push_str(&format!(
        "[remote \"origin\"]\n\turl = https://me:{GIT_SECRET}@example.invalid/g.git\n"
    ));
    std::fs::write(&config, text).expect("write meta/config");
    let first = "[core]";
    let mut calls = vec![
        (
            "view_slice",
            json!({"path": "meta/config", "start": 1, "end": 50}),
        ),
        ("search_text", json!({"pattern": "GITSECRET"})),
        (
            "apply_patch",
            json!({"diff": create_patch("meta/hooks/pre-commit", "touch pwned")}),
        ),
    ];
    for path in ["meta/config", "META/config", "./meta/config"] {
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n {first}\n+\thooksPath = hooks-pwned\n"
            )}),
        ));
    }
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "set up hooks", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 6, "{results:#?}");
    for (i, result) in results.iter().enumerate() {
        // search_text may answer "no matches": the disclosure check covers it.
        if i != 1 {
            assert!(is_refusal(result), "not a refusal: {result}");
        }
    }
    Verdict::Measured(m)
}

/// FIFOs where the walking tools and view_slice look for files (a FIFO named like a
///      source file, and one the model names): every call answers promptly, no read
///      blocks on a pipe nobody writes.
pub(super) fn fifos_in_the_tree() -> Verdict {
    let fx = Fixture::new(true);
    for name in ["pipe.go", "sub/data.txt"] {
        let path = fx.root().join(name);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        let made = Command::new("mkfifo")
            .arg(&path)
            .status()
            .is_ok_and(|s| s.success());
        if !made {
            return Verdict::Skipped("mkfifo is not available".to_owned());
        }
    }
    let fake = FakeOllama::start(script(vec![
        ("search_text", json!({"pattern": "Greet"})),
        ("find_symbol", json!({"symbol": "Greet"})),
        ("list_files", json!({})),
        (
            "view_slice",
            json!({"path": "sub/data.txt", "start": 1, "end": 5}),
        ),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.bounded(&fake, &["-p", "look around", "--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 4, "{results:#?}");
    assert!(results[0].contains("greet.go:"), "{}", results[0]);
    assert!(
        is_refusal(&results[3]) || results[3].contains("not a regular file"),
        "{}",
        results[3]
    );
    Verdict::Measured(m)
}

/// The walking tools, as the model calls them: what every ignore-file case asks.
fn walking_calls() -> Vec<(&'static str, Value)> {
    vec![
        ("list_files", json!({})),
        ("search_text", json!({"pattern": "Greet"})),
        ("find_symbol", json!({"symbol": "Greet"})),
    ]
}

/// Address space metron may use in these cases (4 GiB): an ignore file read whole from
/// `/dev/zero` fails the run instead of filling the machine (it reached 7.8 GB).
const ADDRESS_SPACE_KIB: u64 = 4 << 20;

/// `metron -p` with `calls` under [`ADDRESS_SPACE_KIB`], measured; the tool results and
/// how long the run took. A run that does not exit within the suite's patience fails.
fn walk_run(fx: &Fixture, calls: Vec<(&str, Value)>) -> (Measured, Run, Vec<String>, Duration) {
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let (mut command, home) = fx.command("sh");
    command
        .args([
            "-c",
            &format!("ulimit -v {ADDRESS_SPACE_KIB} && exec \"$0\" \"$@\""),
            env!("CARGO_BIN_EXE_metron"),
            "-p",
            "look around",
            "--yes",
        ])
        .env("OLLAMA_HOST", fake.base_url());
    let mut run = None;
    let mut took = Duration::ZERO;
    let m = measure(fx, || {
        let started = Instant::now();
        run = Some(Live::start(command, home).finish());
        took = started.elapsed();
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    let results = tool_results(&fake);
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        results.len(),
        n,
        "every call reached metron: {results:#?}\n{run:?}"
    );
    (m, run, results, took)
}

/// Every result refuses, naming `file` and saying `why`.
#[track_caller]
fn all_refuse_naming(results: &[String], file: &str, why: &str) {
    for result in results {
        assert!(
            is_refusal(result) && result.contains(&format!("`{file}` {why}")),
            "not a refusal naming {file}: {result}"
        );
    }
}

/// Promptly: a walk that reads nothing costly ends in well under this, even on a busy
/// machine; one blocked on a FIFO or filling memory does not.
const PROMPT: Duration = Duration::from_secs(30);

/// The repository's `.git/info/exclude` is a symlink to `/dev/zero`: read whole by the
///      walker, it took list_files to 7.8 GB. Now it is refused like any ignore file that
///      leads outside, within the address-space bound and promptly.
pub(super) fn exclude_to_dev_zero() -> Verdict {
    let fx = Fixture::new(true);
    let exclude = fx.root().join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::fs::create_dir_all(exclude.parent().expect("parent")).expect("mkdir .git/info");
    std::os::unix::fs::symlink("/dev/zero", &exclude).expect("symlink");
    let (mut m, _, results, took) = walk_run(&fx, walking_calls());
    all_refuse_naming(
        &results,
        ".git/info/exclude",
        "is a symlink that leads outside",
    );
    assert!(took < PROMPT, "took {took:?}");
    m.notes.push(format!("refused in {} ms", took.as_millis()));
    Verdict::Measured(m)
}

/// `.git/info/exclude` is a FIFO nobody writes: the walk used to block on it forever.
pub(super) fn exclude_as_a_fifo() -> Verdict {
    let fx = Fixture::new(true);
    let exclude = fx.root().join(".git/info/exclude");
    let _ = std::fs::remove_file(&exclude);
    std::fs::create_dir_all(exclude.parent().expect("parent")).expect("mkdir .git/info");
    let made = Command::new("mkfifo")
        .arg(&exclude)
        .status()
        .is_ok_and(|s| s.success());
    if !made {
        return Verdict::Skipped("mkfifo is not available".to_owned());
    }
    let (m, _, results, took) = walk_run(&fx, walking_calls());
    all_refuse_naming(&results, ".git/info/exclude", "is not a regular file");
    assert!(took < PROMPT, "took {took:?}");
    Verdict::Measured(m)
}

/// `.git/info/exclude` leads to a list outside the project: the answers are the same
///      whether the list hides everything or nothing (the tools refuse, naming the file).
pub(super) fn exclude_as_an_oracle() -> Verdict {
    let mut m = Measured::default();
    let mut answers = Vec::new();
    for list in ["*\n", "nothing-matches-this\n"] {
        let fx = Fixture::new(true);
        std::fs::write(fx.outside().join("list"), list).expect("write the outside list");
        let exclude = fx.root().join(".git/info/exclude");
        let _ = std::fs::remove_file(&exclude);
        std::fs::create_dir_all(exclude.parent().expect("parent")).expect("mkdir");
        std::os::unix::fs::symlink("../../../outside/list", &exclude).expect("symlink");
        let (one, _, results, _) = walk_run(&fx, walking_calls());
        all_refuse_naming(
            &results,
            ".git/info/exclude",
            "is a symlink that leads outside",
        );
        m.unauthorized.extend(one.unauthorized);
        answers.push(results);
    }
    if answers[0] != answers[1] {
        m.unauthorized.push(format!(
            "the answers depend on a file outside the project: {answers:#?}"
        ));
    }
    Verdict::Measured(m)
}

/// A regular `.git/info/exclude` one byte over 1 MiB is refused, naming the limit; one
///      of exactly 1 MiB is read and its rules apply.
pub(super) fn exclude_oversized() -> Verdict {
    let mut m = Measured::default();
    for over in [1, 0] {
        let fx = Fixture::new(true);
        fx.write("hidden_by_exclude.go", "package main\n\nfunc Greet2() {}\n");
        let rule = "hidden_by_*\n";
        let size = (1 << 20) + over;
        let mut text = "#".repeat(size - rule.len() - 1);
        text.push('\n');
        text.push_str(rule);
        assert_eq!(text.len(), size);
        fx.write(".git/info/exclude", text);
        let (one, _, results, _) = walk_run(&fx, walking_calls());
        if over == 1 {
            all_refuse_naming(&results, ".git/info/exclude", "is larger than 1 MiB");
        } else {
            assert!(results[0].contains("greet.go"), "{}", results[0]);
            for result in &results {
                assert!(!result.contains("hidden_by_exclude"), "{result}");
            }
        }
        m.unauthorized.extend(one.unauthorized);
    }
    Verdict::Measured(m)
}

/// The user's global excludes file (`core.excludesFile` in `~/.gitconfig`) is
///      `/dev/zero`, then a FIFO: the walk goes on without it, promptly. Then a real list:
///      its rules apply, so the file is still honoured when it is a regular one.
pub(super) fn global_excludes_file() -> Verdict {
    let mut m = Measured::default();
    for kind in ["zero", "fifo", "list"] {
        let fx = Fixture::new(true);
        fx.write("debug.log", "Greet in a log\n");
        let excludes = fx.home().join("excludes");
        match kind {
            "zero" => std::os::unix::fs::symlink("/dev/zero", &excludes).expect("symlink"),
            "fifo" => {
                let made = Command::new("mkfifo")
                    .arg(&excludes)
                    .status()
                    .is_ok_and(|s| s.success());
                if !made {
                    return Verdict::Skipped("mkfifo is not available".to_owned());
                }
            }
            _ => std::fs::write(&excludes, "*.log\n").expect("write the list"),
        }
        std::fs::write(
            fx.home().join(".gitconfig"),
            "[core]\n\texcludesFile = ~/excludes\n",
        )
        .expect("write .gitconfig");
        let (one, _, results, took) = walk_run(&fx, walking_calls());
        assert!(took < PROMPT, "{kind}: took {took:?}");
        assert!(results[0].contains("greet.go"), "{kind}: {}", results[0]);
        let log_listed = results[0].contains("debug.log");
        assert_eq!(log_listed, kind != "list", "{kind}: {}", results[0]);
        m.unauthorized.extend(one.unauthorized);
    }
    Verdict::Measured(m)
}

/// The repository's own `.git/config` sets `core.excludesFile` to a list outside the
///      project: it is not read (only the user's git configuration is), so the answers do
///      not depend on the list.
pub(super) fn repository_excludes_file() -> Verdict {
    let mut m = Measured::default();
    let mut answers = Vec::new();
    for list in ["*\n", "nothing-matches-this\n"] {
        let fx = Fixture::new(true);
        std::fs::write(fx.outside().join("list"), list).expect("write the outside list");
        let config = fx.root().join(".git/config");
        let mut text = std::fs::read_to_string(&config).expect(".git/config");
        text.push_str(&format!(
            "[core]\n\texcludesFile = {}\n",
            fx.outside().join("list").display()
        ));
        std::fs::write(&config, text).expect("write .git/config");
        let (one, _, results, _) = walk_run(&fx, walking_calls());
        assert!(results[0].contains("greet.go"), "{}", results[0]);
        m.unauthorized.extend(one.unauthorized);
        answers.push(results);
    }
    if answers[0] != answers[1] {
        m.unauthorized.push(format!(
            "the answers depend on a file outside the project: {answers:#?}"
        ));
    }
    Verdict::Measured(m)
}

/// The project is a linked worktree whose `.git` file names a git directory outside,
///      with an `info/exclude` there: it is not read, so the answers do not depend on it,
///      and `/dev/zero` there costs nothing.
pub(super) fn worktree_exclude() -> Verdict {
    let mut m = Measured::default();
    let mut answers = Vec::new();
    for list in ["*\n", "nothing-matches-this\n", "zero"] {
        let fx = Fixture::new(false);
        let info = fx.outside().join("gitdir/info");
        std::fs::create_dir_all(&info).expect("mkdir gitdir/info");
        if list == "zero" {
            std::os::unix::fs::symlink("/dev/zero", info.join("exclude")).expect("symlink");
        } else {
            std::fs::write(info.join("exclude"), list).expect("write the outside list");
        }
        fx.write(".git", "gitdir: ../outside/gitdir\n");
        let (one, _, results, took) = walk_run(&fx, walking_calls());
        assert!(took < PROMPT, "took {took:?}");
        assert!(results[0].contains("greet.go"), "{}", results[0]);
        m.unauthorized.extend(one.unauthorized);
        answers.push(results);
    }
    if answers[0] != answers[1] || answers[1] != answers[2] {
        m.unauthorized.push(format!(
            "the answers depend on a file outside the project: {answers:#?}"
        ));
    }
    Verdict::Measured(m)
}

/// `.gitignore -> cfg/ignore` (and a nested `.ignore -> ../cfg/ignore`): both stay
///      inside the project, so they are followed and their rules apply; they used to lock
///      every walking tool out until the person replaced them.
pub(super) fn ignore_symlinked_inside() -> Verdict {
    let fx = Fixture::new(true);
    fx.write("cfg/ignore", "secret_*\n");
    fx.write("secret_top.go", "package main\n\nfunc GreetSecret() {}\n");
    fx.write("sub/secret_deep.go", "package sub\n\nfunc GreetDeep() {}\n");
    fx.write("sub/shown.go", "package sub\n\nfunc GreetShown() {}\n");
    fx.symlink(".gitignore", "cfg/ignore");
    fx.symlink("sub/.ignore", "../cfg/ignore");
    let (m, _, results, _) = walk_run(&fx, walking_calls());
    for result in &results {
        assert!(!is_refusal(result), "refused: {result}");
        assert!(
            !result.contains("secret_"),
            "the rules did not apply: {result}"
        );
        assert!(!result.contains("[skipped"), "{result}");
    }
    assert!(
        results[0].contains("greet.go") && results[0].contains("sub/shown.go"),
        "{}",
        results[0]
    );
    assert!(results[1].contains("sub/shown.go:"), "{}", results[1]);
    Verdict::Measured(m)
}

/// `.gitignore -> ../outside/list` at the root: every walking tool refuses with the
///      message that says why and what to do.
pub(super) fn ignore_symlinked_outside() -> Verdict {
    let fx = Fixture::new(true);
    std::fs::write(fx.outside().join("list"), "*\n").expect("write the outside list");
    fx.symlink(".gitignore", "../outside/list");
    let (m, _, results, _) = walk_run(&fx, walking_calls());
    all_refuse_naming(
        &results,
        ".gitignore",
        "is a symlink that leads outside the project",
    );
    for result in &results {
        assert!(
            result.contains("replace it with a regular file"),
            "{result}"
        );
    }
    Verdict::Measured(m)
}

/// A wildcard ignore file of `bytes` bytes (distinct patterns, costly to compile).
fn wildcard_rules(bytes: usize, seed: u32) -> String {
    let mut text = String::new();
    let mut state = seed.wrapping_mul(2_654_435_761).max(1);
    while text.len() + 12 < bytes {
        let mut word = String::from("*");
        for i in 0..6 {
            state ^= state << 13;
            state ^= state >> 17;
            state ^= state << 5;
            word.push(char::from(b'a' + (state % 16) as u8));
            if i == 2 {
                word.push('*');
            }
        }
        word.push_str("*\n");
        text.push_str(&word);
    }
    text
}

/// Seven directories share one 64 KiB wildcard `.gitignore`: compiled once per
///      content, the seven cost about what one costs (it was seven compilations, 12.7 s
///      for 1 MiB files). The walk also sees every directory (nothing skipped).
pub(super) fn shared_costly_ignore_file() -> Verdict {
    let rules = wildcard_rules(64 << 10, 1);
    let mut took = Vec::new();
    let mut m = Measured::default();
    for dirs in [1, 7] {
        let fx = Fixture::new(true);
        for d in 0..dirs {
            fx.write(&format!("d{d}/.gitignore"), &rules);
            fx.write(&format!("d{d}/f.go"), "package d\n\nfunc GreetD() {}\n");
        }
        let (one, _, results, elapsed) = walk_run(&fx, vec![("list_files", json!({}))]);
        for d in 0..dirs {
            assert!(results[0].contains(&format!("d{d}/f.go")), "{}", results[0]);
        }
        m.unauthorized.extend(one.unauthorized);
        took.push(elapsed);
    }
    m.notes.push(format!(
        "1 dir {} ms, 7 dirs {} ms",
        took[0].as_millis(),
        took[1].as_millis()
    ));
    assert!(
        took[1] < took[0] * 3 + Duration::from_secs(2),
        "seven directories cost {:?}, one {:?}",
        took[1],
        took[0]
    );
    Verdict::Measured(m)
}

/// Distinct ignore content past the walk's bound (2 MiB): two 1 MiB files (exactly at
///      the bound) are read; a third directory with other content is not entered, with a
///      note that says why, and the rest of the project is still listed. Not a git work
///      tree, so no `.git/info/exclude` adds to the sum.
pub(super) fn ignore_content_over_the_bound() -> Verdict {
    let fx = Fixture::new(false);
    for (d, fill) in [("a", 'a'), ("b", 'b'), ("c", 'c')] {
        let mut text = String::from("nothing-here\n#");
        text.push_str(&fill.to_string().repeat((1 << 20) - text.len() - 1));
        text.push('\n');
        assert_eq!(text.len(), 1 << 20);
        fx.write(&format!("{d}/.ignore"), text);
        fx.write(&format!("{d}/f.go"), "package d\n\nfunc GreetD() {}\n");
    }
    let (m, _, results, _) = walk_run(&fx, vec![("list_files", json!({}))]);
    let listing = &results[0];
    assert!(
        listing.contains("a/f.go") && listing.contains("b/f.go") && listing.contains("greet.go"),
        "{listing}"
    );
    assert!(!listing.contains("c/f.go"), "{listing}");
    assert!(
        listing.contains("[skipped c/: `c/.ignore` would take this walk's ignore rules over 2 MiB"),
        "{listing}"
    );
    Verdict::Measured(m)
}
