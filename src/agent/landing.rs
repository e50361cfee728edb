//! Whether the patches a turn proposed landed: the rule behind `turn_end.status`
//! (`ok` or `incomplete`) and `-p`'s exit status 3.
//!
//! Models often get a patch wrong and then right: a hunk that does not match, then a
//! corrected one. Counting the first as a failure would make a turn that did what was
//! asked exit 3, so a patch that did not land is *replaced* when a later call of the same
//! turn landed every file it named:
//!
//! - "landed" means the journal recorded a write for that call (an `apply_patch` that
//!   wrote), never that the model said so;
//! - the files a patch names are the paths in its diff, normalised the way the project
//!   boundary resolves them (`./a/../greet.go` is `greet.go`), both sides of a rename; a
//!   path out of the project (`../x`) never lands, so such a patch is never replaced;
//! - several later patches may land them between them (one file each);
//! - a patch whose diff cannot be read names no file, so any later patch that landed
//!   replaces it (the usual retry after a malformed diff);
//! - only later calls count: a patch that landed before the failed one does not replace
//!   it, since the failed one was meant to change what that one wrote.
//!
//! Everything here is decided from the ledger's entries, never from the model's words.

use std::collections::BTreeSet;

use super::record::{Entry, NotDone};
use crate::authority::journal::Effect;
use crate::tools::{self, Access};

/// Sets `replaced_by` on every patch of `not_applied` that a later patch of the same turn
/// replaced. `entries` are the turn's calls in order.
pub(crate) fn mark_replaced(entries: &[&Entry], not_applied: &mut [NotDone]) {
    for failed in not_applied.iter_mut() {
        let Some(at) = entries.iter().position(|e| e.call_id == failed.call_id) else {
            continue;
        };
        let named = named_files(entries[at]);
        failed.replaced_by = replaced_by(named.as_ref(), &entries[at + 1..]);
    }
}

/// Whether every patch the turn proposed landed or was replaced.
pub(crate) fn all_landed(not_applied: &[NotDone]) -> bool {
    not_applied.iter().all(|n| n.replaced_by.is_some())
}

/// The first call of `later` by which every file of `named` had been written (any call
/// that wrote, when `named` is unknown).
fn replaced_by(named: Option<&BTreeSet<String>>, later: &[&Entry]) -> Option<String> {
    let mut written = BTreeSet::new();
    for entry in later {
        let wrote = written_files(entry);
        if wrote.is_empty() {
            continue;
        }
        written.extend(wrote);
        if named.is_none_or(|named| named.is_subset(&written)) {
            return Some(entry.call_id.clone());
        }
    }
    None
}

/// The files a write call's journal says it wrote.
fn written_files(entry: &Entry) -> Vec<String> {
    let writes = tools::spec(&entry.tool).is_some_and(|spec| spec.access == Access::Write);
    if !writes {
        return Vec::new();
    }
    entry
        .effects
        .iter()
        .flat_map(|effect| match effect {
            Effect::Wrote { files } => files.iter().map(|f| f.path.clone()).collect(),
            _ => Vec::new(),
        })
        .collect()
}

/// The files a proposed patch names, or `None` when its diff cannot be read or names no
/// file.
fn named_files(entry: &Entry) -> Option<BTreeSet<String>> {
    let diff = entry.arguments.get("diff")?.as_str()?;
    let files: BTreeSet<String> = tools::apply_patch::named_paths(diff)?.into_iter().collect();
    (!files.is_empty()).then_some(files)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::agent::record::{CallOutcome, OutcomeLine, PolicyDecision};
    use crate::authority::journal::{FileChange, content_hash};
    use crate::authority::policy::Rule;

    fn diff_of(paths: &[&str]) -> String {
        paths
            .iter()
            .map(|p| format!("--- a/{p}\n+++ b/{p}\n@@ -1 +1 @@\n-a\n+b\n"))
            .collect()
    }

    /// An apply_patch call `id` with a diff of `named` that wrote `wrote`.
    fn patch(id: &str, named: &[&str], wrote: &[&str]) -> Entry {
        let effects = if wrote.is_empty() {
            Vec::new()
        } else {
            vec![Effect::Wrote {
                files: wrote
                    .iter()
                    .map(|path| FileChange {
                        path: (*path).to_owned(),
                        before: Some(content_hash(b"a")),
                        after: Some(content_hash(b"b")),
                        mode_before: None,
                        mode_after: None,
                        added: 1,
                        removed: 1,
                    })
                    .collect(),
            }]
        };
        Entry {
            turn: 1,
            call_id: id.to_owned(),
            tool: "apply_patch".to_owned(),
            arguments: json!({"diff": diff_of(named)}),
            policy: PolicyDecision {
                allowed: true,
                rule: Rule::Offered,
            },
            approvals: Vec::new(),
            effects,
            outcome: CallOutcome::Ok,
            reported: String::new(),
            result: String::new(),
            summary: OutcomeLine::default(),
            reported_bytes: 0,
        }
    }

    fn not_done(id: &str) -> NotDone {
        NotDone {
            call_id: id.to_owned(),
            reason: "declined".to_owned(),
            replaced_by: None,
        }
    }

    /// `replaced_by` of each failed call in `failed`, for the turn `entries`.
    fn replacements(entries: &[Entry], failed: &[&str]) -> Vec<Option<String>> {
        let entries: Vec<&Entry> = entries.iter().collect();
        let mut not_applied: Vec<NotDone> = failed.iter().map(|id| not_done(id)).collect();
        mark_replaced(&entries, &mut not_applied);
        not_applied.into_iter().map(|n| n.replaced_by).collect()
    }

    #[test]
    fn a_later_patch_that_lands_the_same_file_replaces_a_failed_one() {
        let turn = [
            patch("c1", &["greet.go"], &[]),
            patch("c2", &["greet.go"], &["greet.go"]),
        ];
        assert_eq!(replacements(&turn, &["c1"]), [Some("c2".to_owned())]);
    }

    #[test]
    fn a_later_patch_of_another_file_does_not_replace_a_failed_one() {
        let turn = [
            patch("c1", &["greet.go"], &[]),
            patch("c2", &["other.go"], &["other.go"]),
        ];
        assert_eq!(replacements(&turn, &["c1"]), [None]);
    }

    #[test]
    fn an_earlier_patch_never_replaces_a_later_failure() {
        let turn = [
            patch("c1", &["greet.go"], &["greet.go"]),
            patch("c2", &["greet.go"], &[]),
        ];
        assert_eq!(replacements(&turn, &["c2"]), [None]);
    }

    #[test]
    fn every_file_of_a_failed_patch_must_land_though_several_patches_may_share_the_work() {
        let failed = patch("c1", &["a.go", "b.go"], &[]);
        let only_a = [failed.clone(), patch("c2", &["a.go"], &["a.go"])];
        assert_eq!(replacements(&only_a, &["c1"]), [None]);
        let a_then_b = [
            failed,
            patch("c2", &["a.go"], &["a.go"]),
            patch("c3", &["b.go"], &["b.go"]),
        ];
        assert_eq!(replacements(&a_then_b, &["c1"]), [Some("c3".to_owned())]);
    }

    #[test]
    fn a_patch_that_cannot_be_read_is_replaced_by_any_later_patch_that_lands() {
        let mut garbled = patch("c1", &[], &[]);
        garbled.arguments = json!({"diff": "make it say hola"});
        let turn = [garbled.clone(), patch("c2", &["greet.go"], &["greet.go"])];
        assert_eq!(replacements(&turn, &["c1"]), [Some("c2".to_owned())]);
        // And by nothing when nothing lands after it.
        assert_eq!(replacements(&[garbled], &["c1"]), [None]);
    }

    #[test]
    fn paths_are_compared_as_the_boundary_resolves_them() {
        let mut dotted = patch("c1", &[], &[]);
        dotted.arguments = json!({"diff": diff_of(&["./src/../greet.go"])});
        let turn = [dotted, patch("c2", &["greet.go"], &["greet.go"])];
        assert_eq!(replacements(&turn, &["c1"]), [Some("c2".to_owned())]);
    }

    #[test]
    fn a_patch_outside_the_project_is_never_replaced() {
        let mut outside = patch("c1", &[], &[]);
        outside.arguments = json!({"diff": diff_of(&["../outside.txt"])});
        let turn = [outside, patch("c2", &["greet.go"], &["greet.go"])];
        assert_eq!(replacements(&turn, &["c1"]), [None]);
    }

    #[test]
    fn a_command_that_wrote_the_file_is_not_a_patch_that_landed() {
        let mut command = patch("c2", &[], &["greet.go"]);
        command.tool = "run_command".to_owned();
        let turn = [patch("c1", &["greet.go"], &[]), command];
        assert_eq!(replacements(&turn, &["c1"]), [None]);
    }

    #[test]
    fn all_landed_only_when_every_failure_was_replaced() {
        let mut failures = vec![not_done("c1"), not_done("c2")];
        assert!(!all_landed(&failures));
        failures[0].replaced_by = Some("c3".to_owned());
        assert!(!all_landed(&failures));
        failures[1].replaced_by = Some("c3".to_owned());
        assert!(all_landed(&failures));
        assert!(all_landed(&[]));
    }
}
