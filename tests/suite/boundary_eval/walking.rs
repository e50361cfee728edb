//! Cases on what the read and walking tools see: paths out of the project (`..`, absolute,
//! symlinks), ignore files whose rules try to reopen `.git` (in `.ignore`, `.gitignore`,
//! `.rgignore`, nested, for submodules), ignore files symlinked out of the tree (to
//! `/dev/zero`, or outside as an oracle), a separate git dir inside the project, and FIFOs
//! where the tools look.

use std::process::Command;

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
    assert_eq!(run.code, 0, "{run:?}");
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
    assert_eq!(run.code, 0, "{run:?}");
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
