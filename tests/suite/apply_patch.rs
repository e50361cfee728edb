//! `apply_patch`: a corpus of patch cases stored as folders, symlink cases built in code,
//! a differential check against git on real and synthetic history, a forced write failure
//! in a real process, edits made while the question is open, approval and the CLI.
//!
//! The corpus lives in `tests/patches/NNN_name/`: `input/` is the tree before, `patch.diff`
//! the model's patch, and either `expected/` (the whole tree after: every file's bytes and
//! executable bit, nothing extra, nothing missing; a missing folder is an empty tree) or
//! `refusal.txt` (substrings the refusal must contain, one per line; the tree must then be
//! unchanged). Each case runs in `base/repo`, a fresh git work tree, beside
//! `base/outside.txt`, which no case may change; `.git` itself must come through every
//! case byte for byte.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use metron::project::Project;
use metron::tools::approval::{ApproveAll, Approver, Decision, Request};
use metron::tools::{Budgets, Policy, ToolError, Toolbox};
use serde_json::json;

use super::common::*;

/// What is at one path of a tree.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Entry {
    /// A regular file: its bytes, and whether it is executable.
    File(Vec<u8>, bool),
    /// A symlink and its target.
    Link(PathBuf),
    /// A directory with nothing in it (others are implied by their files).
    EmptyDir,
}

/// Every path beneath `root` (relative, `/`-separated), skipping `.git` at the top when
/// `skip_git` is set.
fn snapshot(root: &Path, skip_git: bool) -> BTreeMap<String, Entry> {
    fn walk(root: &Path, dir: &Path, skip_git: bool, out: &mut BTreeMap<String, Entry>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let mut empty = true;
        for entry in entries {
            let entry = entry.expect("read a directory entry");
            empty = false;
            let path = entry.path();
            let rel = path
                .strip_prefix(root)
                .expect("beneath the root")
                .to_string_lossy()
                .into_owned();
            if skip_git && rel == ".git" {
                continue;
            }
            let meta = std::fs::symlink_metadata(&path).expect("stat");
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(&path).expect("read link");
                out.insert(rel, Entry::Link(target));
            } else if meta.is_dir() {
                walk(root, &path, skip_git, out);
            } else {
                use std::os::unix::fs::PermissionsExt;
                let bytes = std::fs::read(&path).expect("read file");
                out.insert(rel, Entry::File(bytes, meta.permissions().mode() & 0o111 != 0));
            }
        }
        if empty && dir != root {
            let rel = dir
                .strip_prefix(root)
                .expect("beneath the root")
                .to_string_lossy()
                .into_owned();
            out.insert(rel, Entry::EmptyDir);
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, skip_git, &mut out);
    out
}

/// Where two trees differ, one line per path; `None` when they are equal.
fn tree_diff(actual: &BTreeMap<String, Entry>, expected: &BTreeMap<String, Entry>) -> Option<String> {
    if actual == expected {
        return None;
    }
    let mut report = String::new();
    for (path, want) in expected {
        match actual.get(path) {
            None => report.push_str(&format!("  missing: {path}\n")),
            Some(got) if got != want => report.push_str(&format!(
                "  differs: {path}\n    expected {}\n    actual   {}\n",
                show_entry(want),
                show_entry(got)
            )),
            Some(_) => {}
        }
    }
    for (path, got) in actual.iter().filter(|(p, _)| !expected.contains_key(*p)) {
        report.push_str(&format!("  extra:   {path} = {}\n", show_entry(got)));
    }
    Some(report)
}

/// Asserts two trees are equal, naming every path that differs.
#[track_caller]
fn assert_trees_eq(actual: &BTreeMap<String, Entry>, expected: &BTreeMap<String, Entry>, what: &str) {
    if let Some(report) = tree_diff(actual, expected) {
        panic!("{what}: trees differ\n{report}");
    }
}

fn show_entry(entry: &Entry) -> String {
    match entry {
        Entry::File(bytes, exec) => format!(
            "{}{:?}",
            if *exec { "(exec) " } else { "" },
            String::from_utf8_lossy(bytes)
        ),
        Entry::Link(target) => format!("symlink -> {}", target.display()),
        Entry::EmptyDir => "empty directory".to_owned(),
    }
}

/// Copies a directory tree, keeping permission bits.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the destination");
    let Ok(entries) = std::fs::read_dir(from) else {
        return;
    };
    for entry in entries {
        let entry = entry.expect("read a directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy a file");
        }
    }
}

/// A toolbox over `root` (a git work tree) that approves everything.
fn approving_toolbox(root: &Path) -> Toolbox {
    Toolbox::new(
        Project::open(root, true).expect("open the project"),
        Budgets::default(),
    )
    .with_approver(Box::new(ApproveAll))
}

/// Applies `diff` in `root` through `Toolbox::call`, approving it.
fn apply(root: &Path, diff: &str) -> Result<String, ToolError> {
    approving_toolbox(root).call("apply_patch", json!({ "diff": diff }))
}

/// The text of a refusal; panics on success or any other kind of error.
#[track_caller]
fn refusal(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// `base/repo` (a git work tree) beside `base/outside.txt`.
struct Sandbox {
    base: tempfile::TempDir,
}

const OUTSIDE: &str = "outside the project\n";

impl Sandbox {
    fn new() -> Sandbox {
        let base = tempfile::Builder::new()
            .prefix("metron-patch-")
            .tempdir()
            .expect("create a temp dir");
        std::fs::write(base.path().join("outside.txt"), OUTSIDE).expect("write outside.txt");
        std::fs::create_dir_all(base.path().join("outdir")).expect("create outdir");
        std::fs::write(base.path().join("outdir/secret.txt"), OUTSIDE).expect("write secret");
        let repo = base.path().join("repo");
        std::fs::create_dir_all(&repo).expect("create repo");
        git_init(&repo);
        Sandbox { base }
    }

    fn base(&self) -> &Path {
        self.base.path()
    }

    fn repo(&self) -> PathBuf {
        self.base.path().join("repo")
    }

    /// What is outside the repo, as it must stay.
    fn outside_tree() -> BTreeMap<String, Entry> {
        let mut tree = BTreeMap::new();
        tree.insert(
            "outdir/secret.txt".to_owned(),
            Entry::File(OUTSIDE.into(), false),
        );
        tree.insert("outside.txt".to_owned(), Entry::File(OUTSIDE.into(), false));
        tree
    }

    /// Asserts nothing outside the repo changed.
    #[track_caller]
    fn assert_outside_untouched(&self) {
        let outside = snapshot(self.base(), false)
            .into_iter()
            .filter(|(path, _)| !path.starts_with("repo"))
            .collect::<BTreeMap<_, _>>();
        assert_trees_eq(&outside, &Sandbox::outside_tree(), "outside the project");
    }
}

/// The corpus folder.
fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/patches")
}

/// Runs one corpus case; returns a description of the failure, if any.
fn run_case(case: &Path) -> Result<(), String> {
    let name = case
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let fail = |what: String| Err(format!("{name}: {what}"));
    let sandbox = Sandbox::new();
    let repo = sandbox.repo();
    copy_tree(&case.join("input"), &repo);
    let before = snapshot(&repo, true);
    let git_before = snapshot(&repo.join(".git"), false);
    let diff = std::fs::read_to_string(case.join("patch.diff"))
        .map_err(|e| format!("{name}: cannot read patch.diff: {e}"))?;
    let result = apply(&repo, &diff);
    let after = snapshot(&repo, true);
    let refusal_file = case.join("refusal.txt");
    if refusal_file.exists() {
        let wanted = std::fs::read_to_string(&refusal_file).expect("read refusal.txt");
        let text = match &result {
            Err(ToolError::Refused(text)) => text,
            other => return fail(format!("expected a refusal, got {other:?}")),
        };
        let needles = wanted.lines().filter(|l| !l.trim().is_empty());
        for needle in needles.chain(["Nothing was changed."]) {
            if !text.contains(needle) {
                return fail(format!("the refusal lacks {needle:?}:\n{text}"));
            }
        }
        if let Some(report) = tree_diff(&after, &before) {
            return fail(format!("the tree changed although the patch was refused:\n{report}"));
        }
    } else {
        match &result {
            Ok(text) if text.starts_with("Applied:\n") => {}
            other => return fail(format!("expected success, got {other:?}")),
        }
        let expected = snapshot(&case.join("expected"), false);
        if let Some(report) = tree_diff(&after, &expected) {
            return fail(format!("the tree after the patch is wrong:\n{report}"));
        }
    }
    if let Some(report) = tree_diff(&snapshot(&repo.join(".git"), false), &git_before) {
        return fail(format!(".git changed:\n{report}"));
    }
    let outside = snapshot(sandbox.base(), false)
        .into_iter()
        .filter(|(path, _)| !path.starts_with("repo"))
        .collect::<BTreeMap<_, _>>();
    if let Some(report) = tree_diff(&outside, &Sandbox::outside_tree()) {
        return fail(format!("something outside the project changed:\n{report}"));
    }
    Ok(())
}

#[test]
fn corpus() {
    let mut cases: Vec<PathBuf> = std::fs::read_dir(corpus_dir())
        .expect("read tests/patches")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(cases.len() >= 50, "only {} cases", cases.len());
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|case| run_case(case).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

/// A corpus case given as a folder name, for running one case while working on it:
/// `METRON_PATCH_CASE=012_crlf cargo test corpus_one`.
#[test]
fn corpus_one() {
    let Ok(name) = std::env::var("METRON_PATCH_CASE") else {
        return;
    };
    if let Err(failure) = run_case(&corpus_dir().join(name)) {
        panic!("{failure}");
    }
}
