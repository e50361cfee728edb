//! The project boundary: every path is resolved beneath the root or refused, and a refusal
//! names the path and the rule it broke.
//!
//! Each test builds `base/proj` (the project) next to `base/outside.txt` and
//! `base/outdir/secret.txt` (things that must never be read), then tries every way out:
//! `..`, absolute paths, symlinks to files and directories (relative and absolute), and a
//! symlink swapped between an inside and an outside target while the tools run.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use metron::project::Project;
use metron::tools::{Budgets, ToolError, Toolbox};
use serde_json::{Value, json};

use super::common::*;

const SECRET: &str = "TOP SECRET";

/// A project at `base/proj`, with secrets beside it in `base/`.
struct Fixture {
    base: tempfile::TempDir,
}

impl Fixture {
    fn new() -> Fixture {
        let base = tempfile::Builder::new()
            .prefix("metron-boundary-")
            .tempdir()
            .expect("temp dir");
        let fixture = Fixture { base };
        for (rel, body) in [
            ("outside.txt", format!("{SECRET} file\n")),
            ("outdir/secret.txt", format!("{SECRET} dir\n")),
            ("proj/inside.txt", "inside\n".to_owned()),
            ("proj/sub/inside.txt", "sub inside\n".to_owned()),
        ] {
            let path = fixture.base.path().join(rel);
            std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
            std::fs::write(path, body).expect("write");
        }
        fixture
    }

    fn base(&self) -> &Path {
        self.base.path()
    }

    fn root(&self) -> PathBuf {
        self.base().join("proj")
    }

    fn symlink(&self, rel: &str, target: impl AsRef<Path>) {
        std::os::unix::fs::symlink(target, self.root().join(rel)).expect("symlink");
    }

    fn project(&self) -> Project {
        Project::open(&self.root(), false).expect("open project")
    }
}

fn budgets() -> Budgets {
    Budgets {
        max_slice_lines: 50,
        max_line_chars: 200,
        search_max_matches: 1000,
        search_max_per_file: 1000,
        list_max_entries: 1000,
    }
}

/// Calls a read tool the way the model does: through the registry, with the revision
/// bookkeeping and availability checks of a real call. Every project here is
/// `Fixture::project` (not a git work tree), opened afresh for the call.
fn call(project: &Project, tool: &str, args: Value) -> Result<String, ToolError> {
    let project = Project::open(project.root(), false).expect("open project");
    Toolbox::new(project, budgets()).call(tool, args)
}

fn view_slice(
    project: &Project,
    _: &Budgets,
    path: &str,
    start: i64,
    end: i64,
) -> Result<String, ToolError> {
    call(
        project,
        "view_slice",
        json!({"path": path, "start": start, "end": end}),
    )
}

fn search_text(project: &Project, _: &Budgets, pattern: &str) -> Result<String, ToolError> {
    call(project, "search_text", json!({ "pattern": pattern }))
}

fn list_files(project: &Project, _: &Budgets, pattern: Option<&str>) -> Result<String, ToolError> {
    match pattern {
        Some(pattern) => call(project, "list_files", json!({ "pattern": pattern })),
        None => call(project, "list_files", json!({})),
    }
}

fn view(project: &Project, path: &str) -> Result<String, ToolError> {
    view_slice(project, &budgets(), path, 1, 5)
}

#[track_caller]
fn assert_refused(result: Result<String, ToolError>, expected: &str) {
    match result {
        Err(ToolError::Refused(text)) => assert_text_eq(&text, expected),
        other => panic!("expected the refusal {expected:?}, got {other:?}"),
    }
}

fn climbs_out(path: &str) -> String {
    format!(
        "refused: `{path}` climbs out of the project root with `..`; only files inside the project can be used"
    )
}

fn absolute(path: &str) -> String {
    format!("refused: `{path}` is an absolute path; give a path relative to the project root")
}

fn escapes(path: &str) -> String {
    format!(
        "refused: `{path}` resolves outside the project root through a symlink; only files inside the project can be used"
    )
}

#[test]
fn dotdot_that_climbs_out_is_refused_and_named() {
    let f = Fixture::new();
    let p = f.project();
    for path in [
        "../outside.txt",
        "./../outside.txt",
        "sub/../../outside.txt",
        "sub/../sub/../../outdir/secret.txt",
        "..",
    ] {
        assert_refused(view(&p, path), &climbs_out(path));
    }
    // `..` that stays inside is fine.
    assert_eq!(
        view(&p, "sub/../inside.txt"),
        Ok("    1 | inside\n".to_owned())
    );
}

#[test]
fn absolute_paths_are_refused_even_inside_the_project() {
    let f = Fixture::new();
    let p = f.project();
    let inside = f.root().join("inside.txt");
    let inside = inside.to_str().expect("utf-8 temp path");
    for path in ["/etc/passwd", inside, "~/.ssh/id_rsa", "~"] {
        assert_refused(view(&p, path), &absolute(path));
    }
}

#[test]
fn empty_and_non_file_paths_are_refused() {
    let f = Fixture::new();
    let p = f.project();
    assert_refused(
        view(&p, ""),
        "refused: the path is empty; give a path relative to the project root",
    );
    assert_refused(
        view(&p, "   "),
        "refused: the path is empty; give a path relative to the project root",
    );
    assert_refused(view(&p, "."), "`.` is not a regular file");
    assert_refused(view(&p, "sub"), "`sub` is not a regular file");
}

#[test]
fn symlinks_to_outside_files_are_refused() {
    let f = Fixture::new();
    f.symlink("rel_file", "../outside.txt");
    f.symlink("abs_file", f.base().join("outside.txt"));
    f.symlink("chain", "rel_file");
    std::fs::create_dir_all(f.root().join("deep/er")).expect("mkdir");
    f.symlink("deep/er/up", "../../../outside.txt");
    let p = f.project();
    for path in ["rel_file", "abs_file", "chain", "deep/er/up"] {
        assert_refused(view(&p, path), &escapes(path));
    }
}

#[test]
fn symlinks_to_outside_directories_are_refused() {
    let f = Fixture::new();
    f.symlink("rel_dir", "../outdir");
    f.symlink("abs_dir", f.base().join("outdir"));
    // A link to the root's parent, even on a path that comes back in.
    f.symlink("up", "..");
    let p = f.project();
    for path in [
        "rel_dir/secret.txt",
        "abs_dir/secret.txt",
        "up/outside.txt",
        "up/proj/inside.txt",
    ] {
        assert_refused(view(&p, path), &escapes(path));
    }
}

#[test]
fn symlinks_that_stay_inside_are_followed() {
    let f = Fixture::new();
    f.symlink("link.txt", "inside.txt");
    f.symlink("subdir", "sub");
    f.symlink("sub/back", "../inside.txt");
    let p = f.project();
    assert_eq!(view(&p, "link.txt"), Ok("    1 | inside\n".to_owned()));
    assert_eq!(
        view(&p, "subdir/inside.txt"),
        Ok("    1 | sub inside\n".to_owned())
    );
    assert_eq!(view(&p, "sub/back"), Ok("    1 | inside\n".to_owned()));
    // An absolute symlink is refused even when it points inside: the kernel-side check
    // resolves beneath the root and cannot follow an absolute target. Documented in
    // SECURITY.md; the model can use the real path instead.
    f.symlink("abs_in", f.root().join("inside.txt"));
    assert_refused(view(&p, "abs_in"), &escapes("abs_in"));
}

#[test]
fn walking_tools_never_reach_outside_through_symlinks() {
    let f = Fixture::new();
    f.symlink("rel_file", "../outside.txt");
    f.symlink("abs_dir", f.base().join("outdir"));
    f.symlink("up", "..");
    let p = f.project();
    assert_text_eq(
        &list_files(&p, &budgets(), None).expect("list"),
        "inside.txt\nsub/inside.txt\n",
    );
    assert_text_eq(
        &search_text(&p, &budgets(), SECRET).expect("search"),
        "No matches found.",
    );
    // Globs cannot reach out either.
    for glob in ["../*", "/*", "*", "**/secret.txt", "up/**", "rel_file"] {
        let out = list_files(&p, &budgets(), Some(glob)).unwrap_or_else(|e| e.to_string());
        for line in out.lines() {
            assert!(
                ["inside.txt", "sub/inside.txt"].contains(&line)
                    || line.starts_with("No files match"),
                "{glob}: {out}"
            );
        }
    }
}

#[test]
fn view_slice_refuses_git_internals() {
    let p = TestProject::git();
    p.file("a.txt", "x\n");
    let project = p.project();
    for raw in [".git/config", ".git/HEAD", "sub/../.GIT/config"] {
        let err = view_slice(&project, &budgets(), raw, 1, 1).expect_err(raw);
        assert!(err.to_string().contains("inside .git/"), "{raw}: {err}");
    }
}

#[test]
fn view_slice_refuses_git_internals_through_an_inside_symlink() {
    let p = TestProject::git();
    p.file("a.txt", "x\n");
    for (link, target) in [("g", ".git"), ("cfg", ".git/config"), ("sub", ".")] {
        std::os::unix::fs::symlink(target, p.path(link)).expect("symlink");
    }
    let project = p.project();
    for raw in ["g/config", "cfg", "sub/.git/config", "sub/g/HEAD"] {
        let err = view_slice(&project, &budgets(), raw, 1, 1).expect_err(raw);
        assert!(err.to_string().contains("inside .git/"), "{raw}: {err}");
    }
    // A symlink that stays out of .git/ is still followed.
    assert!(view_slice(&project, &budgets(), "sub/a.txt", 1, 1).is_ok());
}

#[test]
fn walking_tools_never_show_git_internals() {
    let p = TestProject::git();
    p.file("a.txt", "needle\n")
        .file(".git/needle.txt", "needle\n")
        .file("sub/.git/x", "needle\n");
    let project = p.project();
    assert_text_eq(
        &list_files(&project, &budgets(), None).expect("list"),
        "a.txt\n",
    );
    assert_text_eq(
        &list_files(&project, &budgets(), Some("**/*")).expect("list"),
        "a.txt\n",
    );
    assert_text_eq(
        &search_text(&project, &budgets(), "needle").expect("search"),
        "a.txt:1:needle\n",
    );
}

/// Open failures caused by the path itself are the model's to fix, never environment
/// faults, and none of them hangs.
#[test]
fn unusable_paths_are_refusals_not_faults() {
    let f = Fixture::new();
    f.symlink("loop", "loop");
    f.symlink("ping", "pong");
    f.symlink("pong", "ping");
    let fifo = TestProject::new();
    fifo.fifo("pipe");
    fifo.file("ok.txt", "ok\n");
    let p = f.project();
    let long = "x".repeat(300);
    for path in ["loop", "ping/x", long.as_str(), "a\0b"] {
        match view(&p, path) {
            Err(ToolError::Refused(text)) => {
                assert!(
                    text.contains(path),
                    "the refusal should name `{path}`: {text}"
                )
            }
            other => panic!("{path:?}: expected a refusal, got {other:?}"),
        }
    }
    // A FIFO is not a file: the answer comes at once instead of waiting for a writer.
    let project = fifo.project();
    let pipe = fifo.path("pipe");
    let release = pipe.clone();
    let result = within(
        Duration::from_secs(5),
        move || view_slice(&project, &budgets(), "pipe", 1, 1),
        move || release_fifo(&release),
    );
    match result {
        Some(result) => assert_refused(result, "`pipe` is not a regular file"),
        None => panic!("view_slice blocked opening a FIFO"),
    }
    // The walking tools skip it.
    let project = fifo.project();
    assert_text_eq(
        &list_files(&project, &budgets(), None).expect("list"),
        "ok.txt\n",
    );
    assert_text_eq(
        &search_text(&project, &budgets(), "ok").expect("search"),
        "ok.txt:1:ok\n",
    );
}

/// What the race workers saw.
#[derive(Debug, Default)]
struct RaceCounts {
    calls: usize,
    inside: usize,
    refused: usize,
    outside: usize,
    other: Vec<String>,
}

/// Swaps `link` (in the project root) between two targets as fast as it can, atomically
/// (a new link renamed over the old one), until `stop` is set. Returns the swap count.
fn swapper(
    root: PathBuf,
    link: &'static str,
    targets: [PathBuf; 2],
    stop: Arc<AtomicBool>,
) -> usize {
    let tmp = root.join(format!("{link}.swap"));
    let dest = root.join(link);
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) {
        let target = &targets[swaps % 2];
        let _ = std::fs::remove_file(&tmp);
        if std::os::unix::fs::symlink(target, &tmp).is_ok() && std::fs::rename(&tmp, &dest).is_ok()
        {
            swaps += 1;
        }
        // Leave the other tests running in parallel on a small machine some CPU.
        std::thread::yield_now();
    }
    swaps
}

/// Calls `probe` until both link states have been seen often enough (and at least
/// `min_calls` times, at most 20 s), while a thread swaps the link.
fn race(
    f: &Fixture,
    link: &'static str,
    targets: [PathBuf; 2],
    min_calls: usize,
    mut probe: impl FnMut(&mut RaceCounts),
) -> (RaceCounts, usize) {
    std::os::unix::fs::symlink(&targets[0], f.root().join(link)).expect("initial link");
    let stop = Arc::new(AtomicBool::new(false));
    let worker = {
        let (root, stop) = (f.root(), Arc::clone(&stop));
        std::thread::spawn(move || swapper(root, link, targets, stop))
    };
    let mut counts = RaceCounts::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (counts.calls < min_calls || counts.inside < 100 || counts.refused < 100)
        && Instant::now() < deadline
    {
        probe(&mut counts);
        counts.calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = worker.join().expect("swapper thread");
    (counts, swaps)
}

#[track_caller]
fn assert_race_clean(what: &str, counts: &RaceCounts, swaps: usize) {
    eprintln!("race {what}: {swaps} swaps, {counts:?}");
    assert_eq!(
        counts.outside, 0,
        "{what}: read outside the project: {counts:?}"
    );
    assert!(
        counts.other.is_empty(),
        "{what}: unexpected results: {counts:?}"
    );
    // The test only proves something if both states of the link were exercised.
    assert!(
        counts.inside >= 100 && counts.refused >= 100,
        "{what}: the race did not exercise both targets: {counts:?}"
    );
}

fn classify_view(counts: &mut RaceCounts, result: Result<String, ToolError>, inside: &str) {
    match result {
        Ok(text) if text.contains(SECRET) => counts.outside += 1,
        Ok(text) if text == inside => counts.inside += 1,
        Err(ToolError::Refused(text)) if text.contains("resolves outside") => counts.refused += 1,
        // The link is briefly absent while it is swapped in some file systems; a
        // `does not exist` is a refusal too.
        Err(ToolError::Refused(text)) if text.contains("does not exist") => counts.refused += 1,
        other => counts.other.push(format!("{other:?}")),
    }
}

#[test]
fn swapped_directory_symlink_never_reads_outside() {
    let f = Fixture::new();
    let p = f.project();
    let targets = [PathBuf::from("sub"), PathBuf::from("../outdir")];
    // Both targets hold a file of the same name.
    std::fs::write(f.root().join("sub/secret.txt"), "inside\n").expect("write");
    let (counts, swaps) = race(&f, "race", targets, 3000, |counts| {
        classify_view(
            counts,
            view_slice(&p, &budgets(), "race/secret.txt", 1, 1),
            "    1 | inside\n",
        )
    });
    assert_race_clean(
        "view_slice through a swapped directory link",
        &counts,
        swaps,
    );
}

#[test]
fn swapped_file_symlink_never_reads_outside() {
    let f = Fixture::new();
    let p = f.project();
    let targets = [PathBuf::from("inside.txt"), f.base().join("outside.txt")];
    let (counts, swaps) = race(&f, "race.txt", targets, 3000, |counts| {
        classify_view(
            counts,
            view_slice(&p, &budgets(), "race.txt", 1, 1),
            "    1 | inside\n",
        )
    });
    assert_race_clean("view_slice through a swapped file link", &counts, swaps);
}

/// The `.git` rule is decided on the directories the file was opened through, so a link
/// swapped between an ordinary directory and `.git` never shows git's files, however the
/// swaps fall between looking at the path and opening it.
#[test]
fn symlink_swapped_into_git_dir_never_shows_git_internals() {
    let f = Fixture::new();
    std::fs::create_dir_all(f.root().join(".git")).expect("mkdir");
    std::fs::write(
        f.root().join(".git/config"),
        format!("{SECRET} git config\n"),
    )
    .expect("write");
    std::fs::write(f.root().join("sub/config"), "inside\n").expect("write");
    let p = f.project();
    let targets = [PathBuf::from("sub"), PathBuf::from(".git")];
    let (counts, swaps) = race(&f, "g", targets, 3000, |counts| {
        match view_slice(&p, &budgets(), "g/config", 1, 1) {
            Ok(text) if text.contains(SECRET) => counts.outside += 1,
            Ok(text) if text == "    1 | inside\n" => counts.inside += 1,
            Err(ToolError::Refused(text)) if text.contains("inside .git/") => counts.refused += 1,
            Err(ToolError::Refused(text)) if text.contains("does not exist") => counts.refused += 1,
            other => counts.other.push(format!("{other:?}")),
        }
    });
    assert_race_clean(
        "view_slice through a link swapped into .git",
        &counts,
        swaps,
    );
}

/// search_text walks first and opens later; a directory replaced by an outside symlink in
/// between must still not be read.
#[test]
fn directory_swapped_for_a_symlink_during_search_is_not_read() {
    let f = Fixture::new();
    let p = f.project();
    let store = f.base().join("store");
    std::fs::create_dir_all(&store).expect("mkdir");
    std::fs::write(store.join("secret.txt"), "secret inside\n").expect("write");
    std::fs::write(
        f.base().join("outdir/secret.txt"),
        format!("secret {SECRET}\n"),
    )
    .expect("write");
    let flip = f.root().join("flip");
    let stop = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (stop, swaps, flip, store) =
            (Arc::clone(&stop), Arc::clone(&swaps), flip.clone(), store);
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                // A real directory in place...
                if std::fs::rename(&store, &flip).is_ok() {
                    std::thread::yield_now();
                    let _ = std::fs::rename(&flip, &store);
                }
                // ...then a symlink to the outside.
                if std::os::unix::fs::symlink("../outdir", &flip).is_ok() {
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&flip);
                }
                swaps.fetch_add(1, Ordering::Relaxed);
            }
        })
    };
    let mut counts = RaceCounts::default();
    let deadline = Instant::now() + Duration::from_secs(20);
    while (counts.calls < 2000 || counts.inside < 50) && Instant::now() < deadline {
        match search_text(&p, &budgets(), "secret") {
            Ok(text) if text.contains(SECRET) => counts.outside += 1,
            Ok(text) if text.contains("flip/secret.txt:1:secret inside") => counts.inside += 1,
            Ok(_) => counts.refused += 1,
            Err(e) => counts.other.push(e.to_string()),
        }
        counts.calls += 1;
    }
    stop.store(true, Ordering::Relaxed);
    worker.join().expect("swapper");
    let swaps = swaps.load(Ordering::Relaxed);
    eprintln!("race search_text: {swaps} swaps, {counts:?}");
    assert_eq!(counts.outside, 0, "search_text read outside: {counts:?}");
    assert!(counts.other.is_empty(), "{counts:?}");
    assert!(
        counts.inside >= 50,
        "the race never showed the inside directory: {counts:?}"
    );
}

/// A work tree made by `git init --separate-git-dir=meta`: `.git` is a file naming the
/// real git directory, here `meta/` inside the project. `absolute` writes the path as git
/// does; otherwise relative to the root.
fn separate_git_dir_project(absolute: bool) -> TestProject {
    let p = TestProject::new();
    p.file("a.txt", "needle\n")
        .file("meta/HEAD", "ref: refs/heads/main\n")
        .file("meta/config", "[core]\n\tneedle = 1\n")
        .file("meta/hooks/pre-commit.sample", "#!/bin/sh\n# needle\n");
    let target = if absolute {
        p.path("meta").to_string_lossy().into_owned()
    } else {
        "meta".to_owned()
    };
    p.file(".git", format!("gitdir: {target}\n"));
    p
}

/// The git directory a `.git` file points to is git's internals like `.git/` itself: an
/// approved patch once wrote `meta/hooks/pre-commit` (a hook git then runs). Now
/// apply_patch refuses it, view_slice does not show it, and the walking tools skip it.
#[test]
fn the_git_dir_a_git_file_points_to_is_protected_like_dot_git() {
    use metron::authority::approval::ApproveAll;
    for absolute in [true, false] {
        let p = separate_git_dir_project(absolute);
        let toolbox = || {
            Toolbox::new(Project::open(p.root(), true).expect("open"), budgets())
                .with_approver(Box::new(ApproveAll))
        };
        let hook = "--- /dev/null\n+++ b/meta/hooks/pre-commit\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+touch pwned\n";
        let edit = "--- a/META/config\n+++ b/META/config\n@@ -1,2 +1,2 @@\n [core]\n-\tneedle = 1\n+\thooksPath = /tmp\n";
        for diff in [hook, edit] {
            let err = toolbox()
                .call("apply_patch", json!({ "diff": diff }))
                .expect_err(diff);
            assert!(
                err.to_string()
                    .contains("the git directory that `.git` points to"),
                "{err}"
            );
        }
        assert!(!p.path("meta/hooks/pre-commit").exists());
        assert_eq!(
            std::fs::read_to_string(p.path("meta/config")).expect("read"),
            "[core]\n\tneedle = 1\n"
        );
        // A patch elsewhere still applies.
        let ok = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-needle\n+needle!\n";
        toolbox()
            .call("apply_patch", json!({ "diff": ok }))
            .expect("a patch outside the git dir applies");

        let project = p.project();
        for raw in ["meta/config", "./meta/HEAD", "META/config"] {
            let err = view_slice(&project, &budgets(), raw, 1, 1).expect_err(raw);
            assert!(err.to_string().contains("`.git` points to"), "{raw}: {err}");
        }
        // Through a symlink too: decided on the directory opened, by device and inode.
        std::os::unix::fs::symlink("meta", p.path("m")).expect("symlink");
        let err = view_slice(&project, &budgets(), "m/config", 1, 1).expect_err("m/config");
        assert!(err.to_string().contains("git"), "{err}");
        std::fs::remove_file(p.path("m")).expect("rm symlink");

        let listed = list_files(&project, &budgets(), None).expect("list");
        assert!(!listed.contains("meta/"), "{listed}");
        let found = search_text(&project, &budgets(), "needle").expect("search");
        assert!(!found.contains("meta/"), "{found}");
    }
}
