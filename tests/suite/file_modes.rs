//! `apply_patch` and what a patch does besides content: file modes, sizes and permission
//! bits, through `Toolbox::call` (the model's path) and the real binary.
//!
//! - Only git's two regular-file modes (100644, 100755) are applied; any other mode line
//!   (100711, 100600, 100777, a symlink's 120000, a submodule's 160000), in a new file, a
//!   mode change, an `old mode` or a deletion, is refused before anyone is asked.
//! - Every mode change, and every created executable, is named at the approval question
//!   and in the result the model reads, and recorded in the ledger's effect.
//! - A target larger than `max_patch_file_bytes` is refused from its size, unread, and no
//!   patch may produce a file larger than that.
//! - Created files get what `touch` would (the umask applies); `100755` adds the x bits
//!   the umask allows; existing files keep their bits.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};

use metron::authority::approval::{Approver, Decision, Request};
use metron::tools::{Budgets, CommandLimits, ToolError, Toolbox};
use serde_json::json;

use super::common::*;
use super::fake_ollama::{FakeOllama, answer, call};

const SCRIPT: &str = "#!/bin/sh\necho hi\n";

/// A git project holding `greet.sh` with the given permission bits.
fn script_project(bits: u32) -> TestProject {
    let p = TestProject::git();
    p.file("greet.sh", SCRIPT);
    set_bits(&p.path("greet.sh"), bits);
    p
}

fn set_bits(path: &Path, bits: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(bits)).expect("chmod");
}

fn bits(path: &Path) -> u32 {
    std::fs::metadata(path).expect("stat").permissions().mode() & 0o7777
}

/// An approver that says yes and keeps what each question showed (summary, then diff).
#[derive(Debug, Clone, Default)]
struct Shown(Arc<Mutex<Vec<String>>>);

impl Shown {
    fn questions(&self) -> Vec<String> {
        self.0.lock().expect("lock").clone()
    }
}

impl Approver for Shown {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if let Request::Patch { summary, diff, .. } = request {
            self.0
                .lock()
                .expect("lock")
                .push(format!("{summary}\n{}", String::from_utf8_lossy(diff)));
        }
        Decision::Approved
    }
}

fn apply_with(
    p: &TestProject,
    policy: CommandLimits,
    shown: &Shown,
    diff: &str,
) -> Result<String, ToolError> {
    Toolbox::new(p.project(), Budgets::default())
        .with_limits(policy)
        .with_approver(Box::new(shown.clone()))
        .call("apply_patch", json!({ "diff": diff }))
}

#[track_caller]
fn refused(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn only_gits_two_regular_file_modes_are_applied_in_every_form() {
    let bad = [
        "100711", "100600", "100777", "100664", "100700", "100444", "120000", "160000", "644",
        "755", "040000", "banana",
    ];
    for mode in bad {
        let forms = [
            format!(
                "diff --git a/new.sh b/new.sh\nnew file mode {mode}\n--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1 @@\n+echo new\n"
            ),
            format!("diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode {mode}\n"),
            format!("diff --git a/greet.sh b/greet.sh\nnew mode {mode}\n"),
            format!(
                "diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode {mode}\n--- a/greet.sh\n+++ b/greet.sh\n@@ -2 +2 @@\n-echo hi\n+echo hello\n"
            ),
            format!("diff --git a/greet.sh b/greet.sh\nold mode {mode}\nnew mode 100755\n"),
            format!(
                "diff --git a/greet.sh b/greet.sh\ndeleted file mode {mode}\n--- a/greet.sh\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-#!/bin/sh\n-echo hi\n"
            ),
        ];
        for diff in forms {
            let p = script_project(0o644);
            let shown = Shown::default();
            let text = refused(apply_with(&p, CommandLimits::default(), &shown, &diff));
            for needle in [
                &format!("mode {mode}`"),
                "only 100644 (a regular file) and 100755 (an executable) are applied",
                "resend without the mode line or with one of those",
                "Nothing was changed.",
            ] {
                assert!(
                    text.contains(needle),
                    "{needle:?} missing for\n{diff}\n{text}"
                );
            }
            if mode == "120000" {
                assert!(text.contains("a symlink"), "{text}");
            }
            if mode == "160000" {
                assert!(text.contains("a submodule"), "{text}");
            }
            assert!(shown.questions().is_empty(), "asked about\n{diff}");
            assert_eq!(
                std::fs::read_to_string(p.path("greet.sh")).ok().as_deref(),
                Some(SCRIPT)
            );
            assert_eq!(bits(&p.path("greet.sh")), 0o644, "{diff}");
            assert!(!p.path("new.sh").exists(), "{diff}");
        }
    }
}

#[test]
fn a_mode_change_alone_is_shown_applied_and_reversed() {
    let p = script_project(0o644);
    for header in [
        "diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode 100755\n",
        "diff --git a/greet.sh b/greet.sh\nold mode 100755\nnew mode 100644\n",
        // Without `old mode`, as models often write it.
        "diff --git a/greet.sh b/greet.sh\nnew mode 100755\n",
        "diff --git a/greet.sh b/greet.sh\nnew mode 100644\n",
    ] {
        let executable = header.ends_with("100755\n");
        let (from, to, what) = if executable {
            ("100644", "100755", "becomes executable")
        } else {
            ("100755", "100644", "no longer executable")
        };
        let note = format!("M greet.sh (+0 -0), mode {from} -> {to} ({what})");
        let shown = Shown::default();
        let result = apply_with(&p, CommandLimits::default(), &shown, header).expect("applied");
        // The model reads it, and the person saw it at the question.
        assert!(result.contains(&note), "{result}");
        let questions = shown.questions();
        assert_eq!(questions.len(), 1);
        assert!(questions[0].contains(&note), "{}", questions[0]);
        assert!(
            questions[0].contains(&format!("old mode {from}\nnew mode {to}\n")),
            "{}",
            questions[0]
        );
        assert_eq!(
            std::fs::read_to_string(p.path("greet.sh")).ok().as_deref(),
            Some(SCRIPT)
        );
        let now = bits(&p.path("greet.sh"));
        // Read and write bits are the file's own; x is set for its owner at least (the
        // umask of this test process decides group and others) or cleared for all.
        assert_eq!(now & 0o666, 0o644, "{now:o}");
        if executable {
            assert_eq!(now & 0o100, 0o100, "{now:o}");
        } else {
            assert_eq!(now & 0o111, 0, "{now:o}");
        }
    }
}

#[test]
fn a_stated_mode_must_be_true_of_the_file_and_change_something() {
    let p = script_project(0o755);
    let shown = Shown::default();
    let text = refused(apply_with(
        &p,
        CommandLimits::default(),
        &shown,
        "diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode 100755\n",
    ));
    assert!(
        text.contains("says `old mode 100644` but `greet.sh` is 100755 on disk"),
        "{text}"
    );
    let text = refused(apply_with(
        &p,
        CommandLimits::default(),
        &shown,
        "diff --git a/greet.sh b/greet.sh\nnew mode 100755\n",
    ));
    assert!(text.contains("already has mode 100755"), "{text}");
    assert!(shown.questions().is_empty());
    assert_eq!(bits(&p.path("greet.sh")), 0o755);
}

#[test]
fn a_new_executable_is_named_at_the_question() {
    let p = TestProject::git();
    let shown = Shown::default();
    let diff = "diff --git a/run.sh b/run.sh\nnew file mode 100755\n--- /dev/null\n+++ b/run.sh\n@@ -0,0 +1,2 @@\n+#!/bin/sh\n+echo run\n";
    let result = apply_with(&p, CommandLimits::default(), &shown, diff).expect("applied");
    let note = "A run.sh (+2), mode 100755 (executable)";
    assert!(result.contains(note), "{result}");
    assert!(
        shown.questions()[0].contains(note),
        "{:?}",
        shown.questions()
    );
    assert!(shown.questions()[0].contains("new file mode 100755\n"));
    assert_eq!(bits(&p.path("run.sh")) & 0o100, 0o100);
    // A plain new file says nothing about its mode.
    let diff = "--- /dev/null\n+++ b/notes.txt\n@@ -0,0 +1 @@\n+note\n";
    let result = apply_with(&p, CommandLimits::default(), &shown, diff).expect("applied");
    assert!(
        result.contains("A notes.txt (+1)\n") || result.ends_with("A notes.txt (+1)"),
        "{result}"
    );
    assert_eq!(bits(&p.path("notes.txt")) & 0o111, 0);
}

/// Runs `metron --yes tool apply_patch -` with the patch on stdin, under `umask`.
fn metron_under_umask(dir: &Path, umask: u32, diff: &str) -> std::process::Output {
    use std::io::Write;
    let home = tempfile::tempdir().expect("temp HOME");
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!(
            "umask {umask:03o} && exec \"$0\" --yes tool apply_patch -"
        ))
        .arg(env!("CARGO_BIN_EXE_metron"))
        .current_dir(dir)
        .env("HOME", home.path())
        .env("METRON_CONFIG_DIR", home.path())
        .env_remove("METRON_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn metron through sh");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = json!({ "diff": diff }).to_string();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(input.as_bytes());
    });
    let output = child.wait_with_output().expect("wait for metron");
    let _ = writer.join();
    output
}

#[test]
fn created_files_honour_the_umask_and_existing_files_keep_their_bits() {
    let created = |mode: &str| {
        format!(
            "diff --git a/made b/made\nnew file mode {mode}\n--- /dev/null\n+++ b/made\n@@ -0,0 +1 @@\n+x\n"
        )
    };
    for (umask, mode, expected) in [
        (0o022, "100644", 0o644),
        (0o022, "100755", 0o755),
        (0o027, "100644", 0o640),
        (0o027, "100755", 0o750),
        (0o077, "100644", 0o600),
        (0o077, "100755", 0o700),
        (0o002, "100755", 0o775),
        (0o000, "100644", 0o666),
    ] {
        let p = TestProject::git();
        let output = metron_under_umask(p.root(), umask, &created(mode));
        assert!(output.status.success(), "{output:?}");
        assert_eq!(
            bits(&p.path("made")),
            expected,
            "umask {umask:03o}, {mode}: {output:?}"
        );
    }
    // In a new directory too.
    let p = TestProject::git();
    let diff = "--- /dev/null\n+++ b/sub/dir/made\n@@ -0,0 +1 @@\n+x\n";
    let output = metron_under_umask(p.root(), 0o077, diff);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(bits(&p.path("sub/dir/made")), 0o600);

    // An existing file keeps its bits, whatever the umask; `new mode 100755` adds only the
    // x bits the umask allows, as `chmod +x` does, and `100644` clears them all.
    let p = script_project(0o604);
    let edit = "--- a/greet.sh\n+++ b/greet.sh\n@@ -2 +2 @@\n-echo hi\n+echo hello\n";
    let output = metron_under_umask(p.root(), 0o022, edit);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(bits(&p.path("greet.sh")), 0o604);
    let p = script_project(0o644);
    let output = metron_under_umask(
        p.root(),
        0o027,
        "diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode 100755\n",
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(bits(&p.path("greet.sh")), 0o754);
    let output = metron_under_umask(
        p.root(),
        0o000,
        "diff --git a/greet.sh b/greet.sh\nold mode 100755\nnew mode 100644\n",
    );
    assert!(output.status.success(), "{output:?}");
    assert_eq!(bits(&p.path("greet.sh")), 0o644);
}

#[test]
fn a_target_over_the_size_cap_is_refused_before_it_is_read() {
    let p = TestProject::git();
    p.file("huge.log", "");
    // 64 GiB, sparse: read whole, this would exhaust memory (or take minutes).
    std::fs::OpenOptions::new()
        .write(true)
        .open(p.path("huge.log"))
        .and_then(|file| file.set_len(1 << 36))
        .expect("make a sparse file");
    let diff = "--- a/huge.log\n+++ b/huge.log\n@@ -1 +1 @@\n-x\n+y\n";
    let project = p.project();
    let result = within(
        PATIENCE,
        move || {
            Toolbox::new(project, Budgets::default())
                .with_approver(Box::new(Shown::default()))
                .call("apply_patch", json!({ "diff": diff }))
        },
        || {},
    )
    .expect("refused at once, not read");
    let text = refused(result);
    assert!(
        text.contains("`huge.log` is larger than 16777216 bytes, apply_patch's limit per file (`max_patch_file_bytes`), so it was not read"),
        "{text}"
    );
    // A rename and a deletion read the file too, and are refused the same way.
    for diff in [
        "diff --git a/huge.log b/big.log\nsimilarity index 100%\nrename from huge.log\nrename to big.log\n",
        "diff --git a/huge.log b/huge.log\ndeleted file mode 100644\n--- a/huge.log\n+++ /dev/null\n",
    ] {
        let text = refused(apply_with(
            &p,
            CommandLimits::default(),
            &Shown::default(),
            diff,
        ));
        assert!(text.contains("max_patch_file_bytes"), "{text}");
    }
}

#[test]
fn the_size_cap_holds_for_targets_and_results_at_its_edge() {
    let p = TestProject::git();
    let line = "0123456789abcde\n"; // 16 bytes
    p.file("at_cap.txt", line.repeat(4))
        .file("over_cap.txt", format!("{}x", line.repeat(4)));
    let policy = || CommandLimits {
        max_patch_file_bytes: 64,
        ..CommandLimits::default()
    };
    let shown = Shown::default();
    // 64 bytes: read and patched.
    let edit = |name: &str| {
        format!("--- a/{name}\n+++ b/{name}\n@@ -1 +1 @@\n-0123456789abcde\n+0123456789ABCDE\n")
    };
    apply_with(&p, policy(), &shown, &edit("at_cap.txt")).expect("a file at the cap is patched");
    // 65 bytes: refused, unchanged.
    let text = refused(apply_with(&p, policy(), &shown, &edit("over_cap.txt")));
    assert!(
        text.contains("`over_cap.txt` is larger than 64 bytes"),
        "{text}"
    );
    // A result over the cap: an edit that grows a file, and a new file.
    let grow =
        "--- a/at_cap.txt\n+++ b/at_cap.txt\n@@ -1 +1,2 @@\n 0123456789ABCDE\n+one line too many\n";
    let text = refused(apply_with(&p, policy(), &shown, grow));
    assert!(
        text.contains(
            "would make `at_cap.txt` 82 bytes, more than apply_patch's limit of 64 bytes"
        ),
        "{text}"
    );
    let create = format!(
        "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1,5 @@\n{}",
        "+0123456789abcde\n".repeat(5)
    );
    let text = refused(apply_with(&p, policy(), &shown, &create));
    assert!(text.contains("would make `new.txt` 80 bytes"), "{text}");
    assert!(!p.path("new.txt").exists());
    assert_eq!(
        shown.questions().len(),
        1,
        "only the patch within the cap was asked about"
    );
    assert_eq!(
        std::fs::read_to_string(p.path("over_cap.txt")).ok(),
        Some(format!("{}x", line.repeat(4)))
    );
}

#[test]
fn the_size_cap_is_read_from_the_config() {
    let p = TestProject::git();
    p.file("a.txt", "alpha\nbeta\n");
    let (_dir, config) = user_config(r#"{"max_patch_file_bytes": 8}"#);
    let diff = "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-alpha\n+ALPHA\n";
    let run = metron(p.root())
        .args(["--yes", "tool", "apply_patch", "-"])
        .env("METRON_CONFIG", &config)
        .stdin(json!({ "diff": diff }).to_string())
        .run();
    assert_ne!(run.code, 0, "{run:?}");
    let said = format!("{}{}", run.stdout, run.stderr);
    assert!(said.contains("larger than 8 bytes"), "{run:?}");
    assert!(said.contains("max_patch_file_bytes"), "{run:?}");
    assert_eq!(
        std::fs::read_to_string(p.path("a.txt")).ok().as_deref(),
        Some("alpha\nbeta\n")
    );
    // Zero is no limit anyone means.
    let (_dir, config) = user_config(r#"{"max_patch_file_bytes": 0}"#);
    let run = metron(p.root())
        .args(["--yes", "tool", "apply_patch", "-"])
        .env("METRON_CONFIG", &config)
        .stdin(json!({ "diff": diff }).to_string())
        .run();
    assert_ne!(run.code, 0, "{run:?}");
    assert!(run.stderr.contains("max_patch_file_bytes"), "{run:?}");
}

#[test]
fn the_ledger_records_modes_before_and_after() {
    let p = script_project(0o644);
    let diff = "diff --git a/greet.sh b/greet.sh\nold mode 100644\nnew mode 100755\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 300, 10),
        answer("greet.sh is executable now.", 400, 5),
    ]);
    let (run, events) = json_events(
        metron(p.root())
            .args(["-p", "make greet.sh executable", "--json", "--yes"])
            .env("OLLAMA_HOST", fake.base_url())
            .run(),
    );
    assert_eq!(run.code, 0, "{run:?}");
    let effect = events_of_type(&events, "effect")[0];
    assert_eq!(effect["kind"], "wrote", "{effect}");
    let file = &effect["files"][0];
    assert_eq!(file["path"], "greet.sh", "{effect}");
    assert_eq!(file["mode_before"], "100644", "{effect}");
    assert_eq!(file["mode_after"], "100755", "{effect}");
    // The content did not change: the same blob before and after.
    assert_eq!(file["before"], file["after"], "{effect}");
    assert_eq!(bits(&p.path("greet.sh")) & 0o100, 0o100);
}
