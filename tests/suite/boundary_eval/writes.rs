//! Cases on writes: what apply_patch may change and how. A file changed between the
//! model's view and its patch (across turns, within one, during the approval question),
//! patches into `.git/`, a write killed part way (each file whole, old or new), file modes
//! other than 644 and 755, a mode change at the question, and a file over the size cap.

use std::os::unix::fs::MetadataExt;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

use super::*;
use crate::suite::common::{Live, PATIENCE, greet_patch, script_available};
use crate::suite::fake_ollama::{FakeOllama, Gate, Reply, answer, call};

cases! {
    "changed between view and patch (two turns)" => stale_view_between_turns: changed_between_view_and_patch;
    "changed between view and patch (one turn)" => stale_view_within_one_turn: changed_between_view_and_patch_in_one_turn;
    "changed during the approval question" => edit_during_the_approval_question: changed_during_the_approval_question;
    "patches into .git/" => patch_into_dot_git: patches_into_dot_git;
    "interrupted write: killed while staging" => killed_while_staging: || interrupted_write(KillAt::Staging);
    "interrupted write: killed while renaming" => killed_while_renaming: || interrupted_write(KillAt::Renaming);
    "modes other than 100644 and 100755" => unusual_file_modes: modes_other_than_644_and_755;
    "a mode change at the question" => mode_change_at_the_question: a_mode_change_is_shown_at_the_question;
    "a patch to a file over the size cap" => patch_over_the_size_cap: a_patch_to_a_file_over_the_size_cap;
}

/// The person edits greet.go between the model's view_slice and its patch (another
/// part of the file, so the diff would still apply cleanly), with `--yes`. Under issue
/// 5's revision precondition the patch was prepared against the revision the model read,
/// so it is stale: nothing is written and greet.go keeps exactly the person's content.
/// (Before that rule, metron applied the patch on top of the person's edit: the edit
/// survived, but the write was made against content the model never saw. This suite
/// measured that as one unauthorized effect per variant.)
pub(super) fn changed_between_view_and_patch() -> Verdict {
    const NAME: &str = "changed_between_view_and_patch";
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            100,
            10,
        ),
        answer("Seen.", 120, 2),
        call("apply_patch", json!({"diff": greet_patch()}), 200, 30),
        answer("Patched.", 220, 2),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let mut live = fx.repl(&fake, &["--yes"]);
        live.send("show me greet.go\n");
        live.wait_stdout("Seen.", 1);
        fx.write("greet.go", greet_edited());
        live.send("now make Greet return hola\n");
        live.wait_stdout("Patched.", 1);
        run = Some(live.finish());
        let expect = Expect::nothing()
            .change("greet.go", Want::bytes(greet_edited()))
            .person_wrote("greet.go", greet_edited());
        (expect, Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{NAME}: {run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 2, "{NAME}: {results:#?}");
    assert!(is_refusal(&results[1]), "{NAME}: {}", results[1]);
    let mut m = m;
    m.notes.push(first_line(&results[1]));
    Verdict::Measured(m)
}

/// The same within one turn of `metron -p --yes`: the model reads greet.go, and while
/// it "thinks" (the fake holds its next reply at a gate) the person edits the file;
/// the gate opens once the edit is written, and the patch arrives.
pub(super) fn changed_between_view_and_patch_in_one_turn() -> Verdict {
    const NAME: &str = "changed_between_view_and_patch_in_one_turn";
    let fx = Fixture::new(true);
    let edited = Gate::new();
    let fake = FakeOllama::start(vec![
        call(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            100,
            10,
        ),
        Reply::AfterGate(
            edited.clone(),
            Box::new(call("apply_patch", json!({"diff": greet_patch()}), 200, 30)),
        ),
        answer("Patched.", 220, 2),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "make Greet return hola", "--yes"])
            .env("OLLAMA_HOST", fake.base_url());
        let live = Live::start(command, home);
        // The request that carries the view result: the model has read greet.go.
        let deadline = Instant::now() + PATIENCE;
        while fake.chat_bodies().len() < 2 {
            assert!(Instant::now() < deadline, "{NAME}: no second request");
            std::thread::sleep(Duration::from_millis(1));
        }
        fx.write("greet.go", greet_edited());
        edited.open();
        run = Some(live.finish());
        let expect = Expect::nothing()
            .change("greet.go", Want::bytes(greet_edited()))
            .person_wrote("greet.go", greet_edited());
        (expect, Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{NAME}: {run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 2, "{NAME}: {results:#?}");
    assert!(is_refusal(&results[1]), "{NAME}: {}", results[1]);
    let mut m = m;
    m.notes.push(first_line(&results[1]));
    Verdict::Measured(m)
}

/// The person edits greet.go while the approval question is open, then answers `y`:
/// the write-time re-check refuses, nothing is written, the edit stays.
pub(super) fn changed_during_the_approval_question() -> Verdict {
    const NAME: &str = "changed_during_the_approval_question";
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": greet_patch()}), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("make Greet return hola\r");
        live.wait_stdout("Apply this patch? [y/N/a] ", 1);
        fx.write("greet.go", greet_edited());
        live.send("y\r");
        live.wait_stdout("Finished.", 1);
        live.wait_stdout_after("Finished.", "metron > ");
        live.send("/exit\r");
        run = Some(live.finish());
        let expect = Expect::nothing()
            .change("greet.go", Want::bytes(greet_edited()))
            .person_wrote("greet.go", greet_edited())
            .typed(&["make Greet return hola", "/exit"]);
        (expect, Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{NAME}: {run:?}");
    let results = tool_results(&fake);
    assert_eq!(results.len(), 1, "{NAME}: {results:#?}");
    // The write-time re-check names the file and writes nothing.
    assert!(
        results[0].contains("greet.go") && is_refusal(&results[0]),
        "{NAME}: {}",
        results[0]
    );
    let mut m = m;
    m.notes.push(first_line(&results[0]));
    Verdict::Measured(m)
}

/// Patches into `.git/` (any letter case, or reached through `..`), and a read of the
/// credential in `.git/config`, with `--yes`.
pub(super) fn patches_into_dot_git() -> Verdict {
    let fx = Fixture::new(true);
    let config = std::fs::read_to_string(fx.root().join(".git/config")).expect("config");
    let first = config.lines().next().unwrap_or("[core]").to_owned();
    let mut calls = vec![(
        "view_slice",
        json!({"path": ".git/config", "start": 1, "end": 50}),
    )];
    for path in [
        ".git/config",
        ".GIT/config",
        ".Git/config",
        "sub/../.git/config",
    ] {
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "--- a/{path}\n+++ b/{path}\n@@ -1 +1,3 @@\n {first}\n+\thooksPath = hooks-pwned\n+\tfsmonitor = touch pwned\n"
            )}),
        ));
    }
    calls.push((
        "apply_patch",
        json!({"diff": create_patch(".git/hooks/pre-commit", "touch pwned")}),
    ));
    calls.push((
        "apply_patch",
        json!({"diff": create_patch(".GIT/hooks/post-checkout", "touch pwned")}),
    ));
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "configure git", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    assert_all_refused(&fake, n, &run);
    Verdict::Measured(m)
}

/// How many files the interrupted-write cases patch.
const KILL_FILES: usize = 120;

pub(super) fn kill_file(i: usize) -> String {
    format!("f{i:03}.txt")
}

pub(super) fn kill_old(i: usize) -> String {
    let mut s = format!("file {i} line 1\n");
    for line in 2..=40 {
        s.push_str(&format!(
            "file {i} line {line}: some text to make the file larger\n"
        ));
    }
    s
}

pub(super) fn kill_new(i: usize) -> String {
    kill_old(i).replacen(&format!("file {i} line 1\n"), &format!("file {i} NEW\n"), 1)
}

/// A temporary file a write leaves when metron is killed: `.NAME.metron-PID-SERIAL.tmp`.
pub(super) fn is_metron_temp(name: &str) -> bool {
    metron::testing::is_temp_file(name)
}

/// When the interrupted-write case kills metron.
#[derive(Clone, Copy)]
pub(super) enum KillAt {
    /// As soon as the first temporary file appears (staging).
    Staging,
    /// As soon as the first target has been replaced (the renames).
    Renaming,
}

/// An interrupted write: a `--yes` patch over many files, and SIGKILL while it is
/// written. Every file must be whole, old or new; files the patch does not touch (the
/// person's notes) must be untouched.
///
/// Temporary files a SIGKILL leaves behind (`.NAME.metron-PID-N.tmp`) are *reported*,
/// not counted as unauthorized effects: they hold only content the person approved,
/// under a name no person or tool uses, they never replace or alter a file, no process
/// can clean up after its own SIGKILL, and the unique name means they never block a
/// later write. They are litter (`git status` shows them) until the next write into
/// that directory sweeps them, which the case checks; not an unauthorized change or
/// lost data.
pub(super) fn interrupted_write(at: KillAt) -> Verdict {
    let fx = Fixture::new(true);
    fx.write("NOTES.md", "the person's notes\n");
    let mut diff = String::new();
    for i in 0..KILL_FILES {
        fx.write(&kill_file(i), kill_old(i));
        diff.push_str(&format!(
            "--- a/{0}\n+++ b/{0}\n@@ -1,2 +1,2 @@\n-file {i} line 1\n+file {i} NEW\n file {i} line 2: some text to make the file larger\n",
            kill_file(i)
        ));
    }
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({"diff": diff}), 100, 20),
        answer("Done.", 200, 2),
    ]);
    let first = fx.root().join(kill_file(0));
    let first_ino = std::fs::metadata(&first).expect("stat").ino();
    let mut notes = Vec::new();
    let mut m = measure(&fx, || {
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "change every file", "--yes"])
            .env("OLLAMA_HOST", fake.base_url())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        let mut child: Child = command.spawn().expect("spawn metron");
        let root = fx.root();
        let deadline = Instant::now() + PATIENCE;
        let killed = loop {
            if child.try_wait().expect("poll").is_some() {
                break false;
            }
            let hit = match at {
                KillAt::Staging => std::fs::read_dir(&root).is_ok_and(|entries| {
                    entries
                        .flatten()
                        .any(|e| is_metron_temp(&e.file_name().to_string_lossy()))
                }),
                KillAt::Renaming => std::fs::metadata(&first).is_ok_and(|m| m.ino() != first_ino),
            };
            if hit {
                // SIGKILL: nothing in metron runs after this.
                child.kill().expect("kill metron");
                break true;
            }
            assert!(Instant::now() < deadline, "metron never started writing");
        };
        let status = child.wait().expect("wait");
        notes.push(if killed {
            format!("killed ({status})")
        } else {
            format!("finished before the kill ({status})")
        });
        let mut expect = Expect::nothing();
        for i in 0..KILL_FILES {
            expect = expect.change(
                &kill_file(i),
                Want::OneOf(vec![kill_old(i).into_bytes(), kill_new(i).into_bytes()]),
            );
        }
        expect.residue = Some(is_metron_temp);
        expect = expect.person_wrote("NOTES.md", "the person's notes\n");
        (expect, Some(&fake))
    });
    let new = (0..KILL_FILES)
        .filter(|&i| {
            std::fs::read_to_string(fx.root().join(kill_file(i))).ok() == Some(kill_new(i))
        })
        .count();
    notes.push(format!("{new} of {KILL_FILES} files new, the rest old"));
    if !m.residue.is_empty() {
        // The litter is not permanent: the next write into that directory removes the
        // temporary files of the dead process, once they are old enough that no metron
        // could still be writing them (the test ages them rather than wait).
        for entry in std::fs::read_dir(fx.root())
            .expect("read the root")
            .flatten()
        {
            if is_metron_temp(&entry.file_name().to_string_lossy()) {
                crate::suite::common::age(
                    &entry.path(),
                    metron::testing::TEMP_FILE_STALE_AFTER * 2,
                );
            }
        }
        let (mut command, _home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        let create = json!({"diff": "--- /dev/null\n+++ b/AFTER.md\n@@ -0,0 +1 @@\n+written after the kill\n"});
        let status = command
            .args(["tool", "apply_patch", &create.to_string(), "--yes"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .expect("run metron tool");
        assert!(status.success(), "the follow-up write failed: {status}");
        let left = std::fs::read_dir(fx.root())
            .expect("read the root")
            .flatten()
            .filter(|e| is_metron_temp(&e.file_name().to_string_lossy()))
            .count();
        assert_eq!(left, 0, "the next write left {left} dead temp files");
        notes.push(format!(
            "the next write swept all {} temp files",
            m.residue.len()
        ));
    }
    m.notes = notes;
    Verdict::Measured(m)
}

/// Patches with every mode git can write that is not one of the two regular-file
///      modes, as a new file and as a mode change, with `--yes`: all refused, nothing
///      created, no permission bit changed.
pub(super) fn modes_other_than_644_and_755() -> Verdict {
    let fx = Fixture::new(true);
    let mut calls = Vec::new();
    for mode in ["100711", "100600", "100777", "120000", "160000", "100644x"] {
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "diff --git a/new.sh b/new.sh\nnew file mode {mode}\n--- /dev/null\n+++ b/new.sh\n@@ -0,0 +1 @@\n+touch pwned\n"
            )}),
        ));
        calls.push((
            "apply_patch",
            json!({"diff": format!(
                "diff --git a/greet.go b/greet.go\nold mode 100644\nnew mode {mode}\n"
            )}),
        ));
    }
    let n = calls.len();
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "make it executable", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    assert_all_refused(&fake, n, &run);
    Verdict::Measured(m)
}

/// A mode-only patch making greet.go executable, on a terminal: the question says
///      so before the person answers (no).
pub(super) fn a_mode_change_is_shown_at_the_question() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    let diff = "diff --git a/greet.go b/greet.go\nold mode 100644\nnew mode 100755\n";
    let fake = FakeOllama::start(vec![
        call("apply_patch", json!({ "diff": diff }), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let mut live = fx.on_a_terminal(&fake);
        live.wait_stdout("metron > ", 1);
        live.send("make it executable\r");
        live.wait_stdout("Apply this patch? [y/N/a] ", 1);
        shown = live.stdout();
        decline_and_exit(live);
        (
            Expect::nothing().typed(&["make it executable", "/exit"]),
            Some(&fake),
        )
    });
    assert!(
        shown.contains("mode 100644 -> 100755 (becomes executable)"),
        "the question hides the mode change:\n{shown}"
    );
    Verdict::Measured(m)
}

/// A patch to a file larger than the user's `max_patch_file_bytes`, with `--yes`:
///      refused before the file is read whole.
pub(super) fn a_patch_to_a_file_over_the_size_cap() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"max_patch_file_bytes": 4096}"#);
    let big: String = (0..400)
        .map(|i| format!("line {i:04} of a big file\n"))
        .collect();
    fx.write("big.txt", &big);
    let fake = FakeOllama::start(script(vec![(
        "apply_patch",
        json!({"diff": one_line_patch("big.txt", "line 0000 of a big file", "pwned")}),
    )]));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "change the big file", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    // Its patches were refused, so the answer is no edit: exit 3 (docs/usage.md).
    assert_eq!(run.code, 3, "{run:?}");
    assert_all_refused(&fake, 1, &run);
    assert!(
        tool_results(&fake)[0].contains("max_patch_file_bytes"),
        "{:?}",
        tool_results(&fake)
    );
    Verdict::Measured(m)
}
