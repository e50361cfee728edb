//! Criterion bench for apply_patch: a three-file patch, in process, beside `git apply`.
//!
//! One group, `apply_patch/three_files`, so the ratio can be read off one report:
//!
//! - `metron_in_process`: `Toolbox::call("apply_patch", ..)` with an approver that says
//!   yes: parse, path checks, repair, the in-memory libgit2 apply, the staleness check and
//!   three atomic writes (temp file, fsync, rename);
//! - `metron_prepare_only`: the same up to the question, without the writes;
//! - `git_apply_check_then_apply`: spawning `git apply --check PATCH` and then
//!   `git apply PATCH`, the two processes an agent without an in-process applier runs.
//!
//! The three files are copies of this crate's own sources, and the patch changes two
//! places in each. Between iterations the files are put back (not measured). The git
//! bench is skipped with a SKIP line when git is missing.
//!
//! ```sh
//! cargo bench --bench patch -- --warm-up-time 1 --measurement-time 5
//! ```

mod support;

use std::hint::black_box;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use criterion::BatchSize;
use metron::authority::approval::ApproveAll;
use metron::project::Project;
use metron::tools::{Budgets, Toolbox};
use serde_json::json;

/// The files the patch changes: (path in the project, source in this crate).
const FILES: [(&str, &str); 3] = [
    ("src/project.rs", "src/project/mod.rs"),
    ("src/cli.rs", "src/cli.rs"),
    ("src/tools/mod.rs", "src/tools/mod.rs"),
];

fn main() {
    let mut c = support::criterion(Duration::from_secs(5));

    let dir = tempfile::Builder::new()
        .prefix("metron-bench-patch-")
        .tempdir()
        .expect("temp dir");
    let root = dir.path().join("repo");
    std::fs::create_dir_all(&root).expect("create the repo dir");
    let git = support::git_init(&root);
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let originals: Vec<(String, Vec<u8>)> = FILES
        .iter()
        .map(|(path, source)| {
            let bytes = std::fs::read(manifest.join(source)).expect("read a source file");
            ((*path).to_owned(), bytes)
        })
        .collect();
    restore(&root, &originals);
    let diff: String = originals
        .iter()
        .map(|(path, bytes)| file_patch(path, &String::from_utf8_lossy(bytes)))
        .collect();
    let patch_file = dir.path().join("change.patch");
    std::fs::write(&patch_file, &diff).expect("write the patch");
    eprintln!(
        "patch: 3 files, {} lines, {} bytes",
        diff.lines().count(),
        diff.len()
    );

    // A session's toolbox holds the revisions its own writes made, so after `restore`
    // the same toolbox would rightly call the files stale: each run gets a fresh one.
    let fresh_toolbox = || {
        Toolbox::new(
            Project::open(&root, true).expect("open the project"),
            Budgets::default(),
        )
        .with_approver(Box::new(ApproveAll))
    };
    let toolbox = fresh_toolbox();
    let args = json!({ "diff": diff });
    // Once, to be sure the patch applies and see what the model reads.
    let text = toolbox
        .call("apply_patch", args.clone())
        .expect("the bench patch applies");
    eprintln!("{text}");

    let mut group = c.benchmark_group("apply_patch/three_files");
    group.bench_function("metron_in_process", |b| {
        b.iter_batched(
            || {
                restore(&root, &originals);
                fresh_toolbox()
            },
            |toolbox| {
                let text = toolbox
                    .call("apply_patch", black_box(args.clone()))
                    .expect("applies");
                black_box(text)
            },
            BatchSize::PerIteration,
        );
    });
    // The same without the writes: everything up to the question.
    restore(&root, &originals);
    group.bench_function("metron_prepare_only", |b| {
        b.iter(|| {
            let prepared = metron::testing::prepare_patch(toolbox.project(), black_box(&diff))
                .expect("prepares");
            black_box(prepared)
        });
    });
    if git {
        group.bench_function("git_apply_check_then_apply", |b| {
            b.iter_batched(
                || restore(&root, &originals),
                |()| {
                    for check in [true, false] {
                        let mut command = Command::new("git");
                        command.arg("apply");
                        if check {
                            command.arg("--check");
                        }
                        let status = command
                            .arg(&patch_file)
                            .current_dir(&root)
                            .stdin(Stdio::null())
                            .status()
                            .expect("run git apply");
                        assert!(status.success(), "git apply failed");
                    }
                },
                BatchSize::PerIteration,
            );
        });
    } else {
        eprintln!("SKIP git_apply_check_then_apply: git is not installed");
    }
    group.finish();
    c.final_summary();
}

/// Puts the files back as they were.
fn restore(root: &Path, files: &[(String, Vec<u8>)]) {
    for (path, bytes) in files {
        let target = root.join(path);
        std::fs::create_dir_all(target.parent().expect("a parent")).expect("mkdir");
        std::fs::write(target, bytes).expect("restore a file");
    }
}

/// A git-style patch changing two lines of `text`, a third and two thirds of the way
/// down, each with three lines of context.
fn file_patch(path: &str, text: &str) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = format!("diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n");
    // The first hunk adds one line, so the second starts one line later in the new file.
    for (delta, at) in [lines.len() / 3, 2 * lines.len() / 3]
        .into_iter()
        .enumerate()
    {
        let (start, end) = (at - 3, at + 4);
        out.push_str(&format!(
            "@@ -{},7 +{},8 @@\n",
            start + 1,
            start + 1 + delta
        ));
        for (i, line) in lines[start..end].iter().enumerate() {
            if start + i == at {
                out.push_str(&format!("-{line}\n+{line} // changed\n+// added\n"));
            } else {
                out.push_str(&format!(" {line}\n"));
            }
        }
    }
    out
}
