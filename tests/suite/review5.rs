//! Review of the authority-and-evidence work (issue 5): cases found missing by review.

use metron::tools::approval::ApproveAll;
use metron::tools::{Budgets, ToolError, Toolbox};
use serde_json::json;

use super::common::*;

fn lines(n: usize) -> String {
    (1..=n).map(|i| format!("line {i}\n")).collect()
}

fn top_patch(path: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1,3 +1,3 @@\n line 1\n-line 2\n+LINE 2\n line 3\n")
}

fn toolbox(p: &TestProject) -> Toolbox {
    p.toolbox(Budgets::default())
        .with_approver(Box::new(ApproveAll))
}

fn read(p: &TestProject, rel: &str) -> String {
    std::fs::read_to_string(p.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
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
