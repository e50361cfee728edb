//! Revision preconditions at the write boundary: a patch is written only over the content
//! it was prepared against (the revision the model read, or the content when the patch
//! was proposed), checked when it is proposed and again at the moment of writing. A stale
//! patch writes nothing, even where its diff would still apply, and the model is told
//! which files changed and shown their current lines.

use std::path::PathBuf;
use std::sync::Mutex;

use metron::authority::approval::{ApproveAll, Approver, Decision, Request};
use metron::authority::journal::Effect;
use metron::tools::{Budgets, ToolError, Toolbox};
use serde_json::json;

use super::common::*;

/// Twelve numbered lines, so a change at the top and one at the bottom are far apart.
pub(super) fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

/// Changes `line 2` to `LINE 2`: a hunk near the top of a file made by [`lines`].
pub(super) fn top_patch(path: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n+LINE 2\n line 3\n")
}

pub(super) fn toolbox(p: &TestProject) -> Toolbox {
    p.toolbox(Budgets::default())
        .with_approver(Box::new(ApproveAll))
}

pub(super) fn read(p: &TestProject, rel: &str) -> String {
    std::fs::read_to_string(p.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

#[track_caller]
fn refusal(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// The files of every conflict journaled since the last drain.
fn conflicts(toolbox: &Toolbox) -> Vec<Vec<String>> {
    toolbox
        .authority()
        .take_journal()
        .effects
        .into_iter()
        .filter_map(|effect| match effect {
            Effect::Conflict { files } => Some(files),
            _ => None,
        })
        .collect()
}

fn wrote_anything(toolbox: &Toolbox) -> bool {
    toolbox
        .authority()
        .take_journal()
        .effects
        .iter()
        .any(|effect| matches!(effect, Effect::Wrote { .. }))
}

/// Counts the questions, and optionally edits a file while "the person" reads the diff.
#[derive(Debug, Default)]
struct Meanwhile {
    edit: Option<(PathBuf, String)>,
    asked: Mutex<usize>,
}

impl Approver for Meanwhile {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        *self.asked.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        if let Some((path, body)) = &self.edit {
            std::fs::write(path, body).unwrap_or_else(|e| panic!("edit {path:?}: {e}"));
        }
        Decision::Approved
    }
}

#[test]
fn a_file_changed_elsewhere_since_view_slice_is_not_patched() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    toolbox
        .call("view_slice", json!({"path": "a.txt", "start": 1, "end": 5}))
        .expect("view");
    // Someone else edits line 11, far from the hunk; the diff would still apply.
    let theirs = lines(12).replace("line 11\n", "line 11, edited by someone else\n");
    p.file("a.txt", &theirs);

    let text = refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    assert!(text.starts_with("Conflict: "), "{text}");
    assert!(
        text.contains(
            "`a.txt` changed on disk since you read it (you last saw it through view_slice 1-5)"
        ),
        "{text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    // The current lines where the patch applies, numbered like view_slice.
    assert!(
        text.contains(
            "Current lines of `a.txt` where your patch applies:\n    1 | line 1\n    2 | line 2\n"
        ),
        "{text}"
    );
    assert!(text.contains("Prepare a revised patch"), "{text}");
    assert_eq!(read(&p, "a.txt"), theirs, "the other person's edit is kept");
    assert_eq!(conflicts(&toolbox), [vec!["a.txt".to_owned()]]);
}

#[test]
fn a_file_changed_elsewhere_since_search_text_is_not_patched() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    let found = toolbox
        .call("search_text", json!({"pattern": "line 2$"}))
        .expect("search");
    assert!(found.contains("a.txt:2:line 2"), "{found}");
    let theirs = lines(12).replace("line 12\n", "line 12\nline 13, added by someone else\n");
    p.file("a.txt", &theirs);

    let text = refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    assert!(
        text.contains("`a.txt` changed on disk since you read it (you last saw it through search_text `line 2$`)"),
        "{text}"
    );
    assert_eq!(read(&p, "a.txt"), theirs);
    assert_eq!(conflicts(&toolbox), [vec!["a.txt".to_owned()]]);
}

#[test]
fn a_file_the_model_never_read_is_held_to_its_content_when_proposed() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    // Changed before the proposal: that is the content the patch is prepared against.
    p.file(
        "a.txt",
        lines(12).replace("line 11\n", "line 11 (edited)\n"),
    );
    let text = toolbox
        .call("apply_patch", json!({"diff": top_patch("a.txt")}))
        .expect("no false conflict");
    assert!(text.starts_with("Applied:"), "{text}");
    assert_eq!(
        read(&p, "a.txt"),
        lines(12)
            .replace("line 2\n", "LINE 2\n")
            .replace("line 11\n", "line 11 (edited)\n")
    );
    assert!(conflicts(&toolbox).is_empty());
}

#[test]
fn a_file_read_and_unchanged_is_patched() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    toolbox
        .call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 12}),
        )
        .expect("view");
    toolbox
        .call("apply_patch", json!({"diff": top_patch("a.txt")}))
        .expect("applied");
    assert_eq!(read(&p, "a.txt"), lines(12).replace("line 2\n", "LINE 2\n"));
}

#[test]
fn a_file_changed_while_the_question_is_open_is_not_overwritten() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let theirs = lines(12).replace("line 11\n", "line 11, typed while the question was open\n");
    let approver = Meanwhile {
        edit: Some((p.path("a.txt"), theirs.clone())),
        ..Meanwhile::default()
    };
    let toolbox = p
        .toolbox(Budgets::default())
        .with_approver(Box::new(approver));
    toolbox
        .call("view_slice", json!({"path": "a.txt", "start": 1, "end": 3}))
        .expect("view");
    let text = refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    assert!(
        text.contains("`a.txt` changed on disk while your patch waited for approval"),
        "{text}"
    );
    assert!(text.contains("nothing was written"), "{text}");
    assert!(text.contains("    2 | line 2\n"), "{text}");
    assert_eq!(read(&p, "a.txt"), theirs);
    assert_eq!(conflicts(&toolbox), [vec!["a.txt".to_owned()]]);

    // The conflict message showed the current lines: a patch against them is accepted.
    let toolbox = toolbox.with_approver(Box::new(ApproveAll));
    toolbox
        .call("apply_patch", json!({"diff": top_patch("a.txt")}))
        .expect("the revised patch applies");
    assert_eq!(read(&p, "a.txt"), theirs.replace("line 2\n", "LINE 2\n"));
}

#[test]
fn a_file_deleted_since_it_was_read_is_a_conflict() {
    let p = TestProject::git();
    p.file("a.txt", lines(12)).file("b.txt", "b\n");
    let toolbox = toolbox(&p);
    toolbox
        .call("view_slice", json!({"path": "a.txt", "start": 1, "end": 3}))
        .expect("view");
    std::fs::remove_file(p.path("a.txt")).expect("delete");
    let diff = format!(
        "{}--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-b\n+B\n",
        top_patch("a.txt")
    );
    let text = refusal(toolbox.call("apply_patch", json!({"diff": diff})));
    assert!(
        text.contains(
            "`a.txt` was deleted since you read it (you last saw it through view_slice 1-3)"
        ),
        "{text}"
    );
    assert!(!p.path("a.txt").exists());
    assert_eq!(read(&p, "b.txt"), "b\n");
    assert_eq!(conflicts(&toolbox), [vec!["a.txt".to_owned()]]);
}

#[test]
fn a_file_created_under_a_creating_patch_is_a_conflict() {
    let p = TestProject::git();
    let toolbox = toolbox(&p);
    p.file("new.txt", "written by someone else\n");
    let diff = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+mine\n";
    let text = refusal(toolbox.call("apply_patch", json!({"diff": diff})));
    assert!(text.contains("`new.txt` already exists"), "{text}");
    assert!(text.contains("    1 | written by someone else\n"), "{text}");
    assert!(text.contains("Nothing was changed."), "{text}");
    assert_eq!(read(&p, "new.txt"), "written by someone else\n");
    assert_eq!(conflicts(&toolbox), [vec!["new.txt".to_owned()]]);
}

#[test]
fn a_file_created_while_the_question_is_open_is_not_overwritten() {
    let p = TestProject::git();
    let approver = Meanwhile {
        edit: Some((p.path("new.txt"), "theirs\n".to_owned())),
        ..Meanwhile::default()
    };
    let toolbox = p
        .toolbox(Budgets::default())
        .with_approver(Box::new(approver));
    let diff = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+mine\n";
    let text = refusal(toolbox.call("apply_patch", json!({"diff": diff})));
    assert!(
        text.contains(
            "`new.txt` was created on disk while your patch, which creates it, waited for approval"
        ),
        "{text}"
    );
    assert_eq!(read(&p, "new.txt"), "theirs\n");
}

#[test]
fn metrons_own_write_is_the_new_revision() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    toolbox
        .call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 12}),
        )
        .expect("view");
    toolbox
        .call("apply_patch", json!({"diff": top_patch("a.txt")}))
        .expect("first patch");
    // A second patch, based on what the first one wrote: no re-read needed.
    let second =
        "--- a/a.txt\n+++ b/a.txt\n@@ -10,3 +10,3 @@\n line 10\n-line 11\n+LINE 11\n line 12\n";
    toolbox
        .call("apply_patch", json!({"diff": second}))
        .expect("second patch, against the written content");
    let ours = lines(12)
        .replace("line 2\n", "LINE 2\n")
        .replace("line 11\n", "LINE 11\n");
    assert_eq!(read(&p, "a.txt"), ours);
    assert!(conflicts(&toolbox).is_empty());

    // Someone rewrites the file to what the model viewed first; a patch based on that
    // old view fits it, but the model's revision is its own write: refused.
    p.file("a.txt", lines(12));
    let old_view =
        "--- a/a.txt\n+++ b/a.txt\n@@ -4,3 +4,3 @@\n line 4\n-line 5\n+LINE 5\n line 6\n";
    let text = refusal(toolbox.call("apply_patch", json!({"diff": old_view})));
    assert!(
        text.contains("`a.txt` changed on disk since you read it (you last saw it through your own apply_patch)"),
        "{text}"
    );
    assert_eq!(read(&p, "a.txt"), lines(12));
}

#[test]
fn a_patch_based_on_an_old_view_is_refused_after_metrons_own_write() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    toolbox
        .call(
            "view_slice",
            json!({"path": "a.txt", "start": 1, "end": 12}),
        )
        .expect("view");
    toolbox
        .call("apply_patch", json!({"diff": top_patch("a.txt")}))
        .expect("first patch");
    // The same patch again, as if the model forgot it had applied it: its context no
    // longer fits, and the file is the model's own revision, so this is an ordinary
    // refusal, not a conflict.
    let text = refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    assert!(!text.starts_with("Conflict"), "{text}");
    assert!(conflicts(&toolbox).is_empty());
    assert_eq!(read(&p, "a.txt"), lines(12).replace("line 2\n", "LINE 2\n"));
}

#[test]
fn one_stale_file_stops_a_multi_file_patch() {
    let p = TestProject::git();
    p.file("a.txt", lines(12))
        .file("b.txt", lines(12))
        .file("c.txt", lines(12));
    let toolbox = toolbox(&p);
    for path in ["a.txt", "b.txt"] {
        toolbox
            .call("view_slice", json!({"path": path, "start": 1, "end": 12}))
            .expect("view");
    }
    let theirs = lines(12).replace("line 9\n", "line 9, theirs\n");
    p.file("b.txt", &theirs);
    let diff = format!(
        "{}{}{}--- /dev/null\n+++ b/d.txt\n@@ -0,0 +1 @@\n+d\n",
        top_patch("a.txt"),
        top_patch("b.txt"),
        top_patch("c.txt")
    );
    let text = refusal(toolbox.call("apply_patch", json!({"diff": diff})));
    assert!(
        text.contains("`b.txt` changed on disk since you read it"),
        "{text}"
    );
    assert!(!text.contains("`a.txt` changed"), "{text}");
    assert_eq!(read(&p, "a.txt"), lines(12));
    assert_eq!(read(&p, "b.txt"), theirs);
    assert_eq!(read(&p, "c.txt"), lines(12));
    assert!(!p.path("d.txt").exists());
    let journal = toolbox.authority().take_journal();
    assert!(
        journal
            .effects
            .iter()
            .all(|e| !matches!(e, Effect::Wrote { .. })),
        "{journal:?}"
    );
    assert!(
        journal.effects.contains(&Effect::Conflict {
            files: vec!["b.txt".to_owned()]
        }),
        "{journal:?}"
    );
}

#[test]
fn every_file_changed_during_the_question_is_named() {
    let p = TestProject::git();
    p.file("a.txt", lines(12)).file("b.txt", lines(12));
    /// Edits both files while the question is open.
    #[derive(Debug)]
    struct EditsBoth(PathBuf, PathBuf);
    impl Approver for EditsBoth {
        fn decide(&self, _request: &Request<'_>) -> Decision {
            for path in [&self.0, &self.1] {
                std::fs::write(path, "theirs\n").unwrap_or_else(|e| panic!("edit: {e}"));
            }
            Decision::Approved
        }
    }
    let toolbox = p
        .toolbox(Budgets::default())
        .with_approver(Box::new(EditsBoth(p.path("a.txt"), p.path("b.txt"))));
    let diff = format!("{}{}", top_patch("a.txt"), top_patch("b.txt"));
    let text = refusal(toolbox.call("apply_patch", json!({"diff": diff})));
    assert!(text.contains("`a.txt` changed on disk while"), "{text}");
    assert!(text.contains("`b.txt` changed on disk while"), "{text}");
    assert!(text.contains("Current lines of `b.txt`"), "{text}");
    assert_eq!(read(&p, "a.txt"), "theirs\n");
    assert_eq!(read(&p, "b.txt"), "theirs\n");
    assert_eq!(
        conflicts(&toolbox),
        [vec!["a.txt".to_owned(), "b.txt".to_owned()]]
    );
}

#[test]
fn a_stale_patch_whose_context_no_longer_fits_is_reported_as_a_conflict() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = toolbox(&p);
    toolbox
        .call("view_slice", json!({"path": "a.txt", "start": 1, "end": 4}))
        .expect("view");
    // The other person changed the very lines the patch is about.
    let theirs = lines(12).replace("line 2\n", "line two\n");
    p.file("a.txt", &theirs);
    let text = refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    assert!(
        text.contains("`a.txt` changed on disk since you read it"),
        "{text}"
    );
    assert!(text.contains("    2 | line two\n"), "{text}");
    assert_eq!(read(&p, "a.txt"), theirs);
    assert!(!wrote_anything(&toolbox));
}

#[test]
fn a_proposal_time_conflict_asks_nobody() {
    let p = TestProject::git();
    p.file("a.txt", lines(12));
    let toolbox = p
        .toolbox(Budgets::default())
        .with_approver(Box::new(Meanwhile::default()));
    toolbox
        .call("view_slice", json!({"path": "a.txt", "start": 1, "end": 3}))
        .expect("view");
    p.file("a.txt", lines(13));
    refusal(toolbox.call("apply_patch", json!({"diff": top_patch("a.txt")})));
    let journal = toolbox.authority().take_journal();
    assert!(journal.approvals.is_empty(), "{journal:?}");
}

/// The model reads a file through a symlink in the tree and patches it under its real
/// name (apply_patch refuses to write through symlinks, so that is the only way): the
/// revision it read must still hold the patch.
#[test]
fn a_file_read_through_a_symlink_is_held_to_that_revision_under_its_real_name() {
    let p = TestProject::git();
    p.file("src/real.txt", lines(12));
    p.symlink("link.txt", "src/real.txt");
    let toolbox = toolbox(&p);
    toolbox
        .call(
            "view_slice",
            json!({"path": "link.txt", "start": 1, "end": 5}),
        )
        .expect("view through the link");
    let theirs = lines(12).replace("line 11\n", "line 11, edited by someone else\n");
    p.file("src/real.txt", &theirs);

    match toolbox.call("apply_patch", json!({"diff": top_patch("src/real.txt")})) {
        Err(ToolError::Refused(text)) => {
            assert!(text.starts_with("Conflict: "), "{text}");
            assert!(
                text.contains("`src/real.txt` changed on disk since you read it (you last saw it through view_slice 1-5 of `link.txt`)"),
                "{text}"
            );
        }
        other => panic!("expected a conflict, got {other:?}"),
    }
    assert_eq!(read(&p, "src/real.txt"), theirs, "the other edit is kept");
}
