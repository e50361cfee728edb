//! What really happened, for the person: one line per tool call, and one line of evidence
//! per turn that used a tool with effects.
//!
//! Every word comes from the tool's own result, from what authority journaled (the files
//! written, the command's exit status, the answer to the question) or from policy; none
//! from the model's text, which can claim anything ("Done: all tests pass."). A patch that
//! was not written always says `not applied`, and a command always says how it ended.

use std::fmt::Write;

use serde_json::Value;

use super::record::{
    CallOutcome, CommandRun, Entry, FileDelta, NotDone, OutcomeLine, SandboxEvent,
};
use crate::authority::journal::{ApprovalOutcome, Effect, FileChange, Journal};
use crate::authority::policy::Rule;
use crate::quoting::{code, quoted};
use crate::tools::text::joined_lines;
use crate::tools::{self, Access, Account, count};

/// Describes one call from its tool's account and its journal. `rule` is policy's rule
/// (a refused rule means the tool never ran); `account` is the typed result of a call
/// that returned one, and `text` what the model read (a refusal's first sentence is
/// quoted from it).
pub(crate) fn describe(
    tool: &str,
    arguments: &Value,
    rule: &Rule,
    outcome: CallOutcome,
    account: Option<&Account>,
    text: &str,
    journal: &Journal,
) -> OutcomeLine {
    let spec = tools::spec(tool);
    let subject = spec
        .map(|spec| (spec.subject)(arguments))
        .unwrap_or_default();
    let access = spec.map_or(Access::Read, |spec| spec.access);
    let mut line = OutcomeLine::default();
    let what = if !rule.allows() {
        line.failed = true;
        refused(access, &format!("refused: {rule}"), &mut line)
    } else if let Some(done) = effects(&journal.effects, account, &mut line) {
        done
    } else if access == Access::Read {
        match (outcome, account.and_then(Account::summary)) {
            (CallOutcome::Ok, Some(summary)) => summary,
            (CallOutcome::Ok, None) => "done".to_owned(),
            (other, _) => {
                line.failed = true;
                format!("{}: {}", other.as_str(), first_sentence(text))
            }
        }
    } else {
        line.failed = true;
        let last = journal.approvals.last();
        let why = match last.map(|a| (a.outcome, a.reason.as_deref())) {
            Some((ApprovalOutcome::No, None)) => "declined".to_owned(),
            Some((ApprovalOutcome::No, Some(reason))) => {
                format!("declined: {}", joined_lines(reason))
            }
            Some((ApprovalOutcome::Unanswerable, _)) => {
                "nobody was asked to approve it (rerun with --yes to allow it)".to_owned()
            }
            _ => first_sentence(text),
        };
        refused(access, &why, &mut line)
    };
    line.text = if subject.is_empty() {
        format!("{tool} → {what}")
    } else {
        format!("{tool} {subject} → {what}")
    };
    line
}

/// `not applied: WHY` for a write, `not run: WHY` for a command, `WHY` for a read.
fn refused(access: Access, why: &str, line: &mut OutcomeLine) -> String {
    let what = match access {
        Access::Read => return why.to_owned(),
        Access::Write => format!("not applied: {why}"),
        Access::Execute => format!("not run: {why}"),
    };
    line.not_done = Some(why.to_owned());
    what
}

/// What the journaled effects say happened, or `None` when there were none. A command's
/// output tail comes from its account.
fn effects(
    effects: &[Effect],
    account: Option<&Account>,
    line: &mut OutcomeLine,
) -> Option<String> {
    let mut parts = Vec::new();
    for effect in effects {
        match effect {
            Effect::Wrote { files } => parts.push(format!("wrote {}", files_text(files))),
            Effect::Ran {
                exit,
                duration,
                changed,
                ..
            } => {
                line.failed |= !exit.succeeded();
                if let Some(Account::Ran(run)) = account {
                    line.tail = run.tail.clone();
                }
                parts.push(format!(
                    "{} after {:.1} s",
                    exit.short(),
                    duration.as_secs_f64()
                ));
                if let Some(files) = changed.brief(CHANGED_NAMES) {
                    parts.push(format!("wrote: {files}"));
                }
            }
            Effect::Conflict { files } => {
                line.failed = true;
                let why = format!("{} changed on disk since it was read", files.join(", "));
                parts.push(format!("not applied: {why}"));
                line.not_done = Some(why);
            }
        }
    }
    (!parts.is_empty()).then(|| parts.join("; "))
}

/// Files a command changed, named on an outcome or evidence line before `and N more`.
const CHANGED_NAMES: usize = 3;

/// `greet.go (+1 -1)`, `new.go (new, +3)`, `old.go (deleted)`; past three files, `and N more`.
fn files_text(files: &[FileChange]) -> String {
    let mut text = String::new();
    for (n, file) in files.iter().enumerate() {
        if n == 3 {
            let _ = write!(text, " and {} more", files.len() - 3);
            break;
        }
        if n > 0 {
            text.push_str(", ");
        }
        let _ = match (&file.before, &file.after) {
            (None, _) => write!(text, "{} (new, +{})", quoted(&file.path), file.added),
            (_, None) => write!(text, "{} (deleted)", quoted(&file.path)),
            _ => write!(
                text,
                "{} (+{} -{})",
                quoted(&file.path),
                file.added,
                file.removed
            ),
        };
    }
    text
}

/// The first sentence of a tool's message, whole: it is the reason, and its remedy
/// (`allowed_project_programs`, a path inside the project) is usually at its end, so it is
/// never cut; the terminal wraps it and `--json` carries it as it is. Without what the
/// outcome line says already: the reassurance that nothing changed (`Not applied: `), and
/// the word `refused` (the line says `not applied`, `not run` or `refused` itself; keeping
/// the tool's word made `refused: refused: ...`).
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let line = ["Not applied: ", "Refused: ", "refused: "]
        .iter()
        .find_map(|said| line.strip_prefix(said))
        .unwrap_or(line);
    let sentence = line
        .find(". ")
        .map_or(line, |end| &line[..end])
        .trim_end_matches('.');
    sentence.to_owned()
}

/// What really changed in a turn, from its ledger entries: the `turn_end` event's fields
/// and the line the person reads.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Evidence {
    /// Files written, with line counts.
    pub(crate) files_changed: Vec<FileDelta>,
    /// Patches that were not applied, with the reason.
    pub(crate) patches_not_applied: Vec<NotDone>,
    /// Commands, run or not.
    pub(crate) commands: Vec<CommandRun>,
}

impl Evidence {
    /// The evidence of the entries of one turn.
    pub(crate) fn of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Evidence {
        let entries: Vec<&Entry> = entries.into_iter().collect();
        let mut evidence = Evidence::default();
        for &entry in &entries {
            let access = tools::spec(&entry.tool).map_or(Access::Read, |spec| spec.access);
            for effect in &entry.effects {
                match effect {
                    Effect::Wrote { files } => {
                        for file in files {
                            evidence.add_file(file);
                        }
                    }
                    Effect::Ran {
                        exit,
                        sandbox,
                        changed,
                        ..
                    } => {
                        evidence.commands.push(CommandRun {
                            call_id: entry.call_id.clone(),
                            command: tools::plain_arg(&entry.arguments, "command"),
                            ran: true,
                            exit_code: exit.code(),
                            status: exit.short(),
                            sandbox: Some(SandboxEvent::of(sandbox.as_ref())),
                            changed: Some(changed.clone()),
                        });
                    }
                    Effect::Conflict { .. } => {}
                }
            }
            let Some(why) = &entry.summary.not_done else {
                continue;
            };
            match access {
                Access::Read => {}
                Access::Write => evidence.patches_not_applied.push(NotDone {
                    call_id: entry.call_id.clone(),
                    reason: why.clone(),
                    replaced_by: None,
                }),
                Access::Execute => evidence.commands.push(CommandRun {
                    call_id: entry.call_id.clone(),
                    command: tools::plain_arg(&entry.arguments, "command"),
                    ran: false,
                    status: format!("not run: {why}"),
                    exit_code: None,
                    sandbox: None,
                    changed: None,
                }),
            }
        }
        super::landing::mark_replaced(&entries, &mut evidence.patches_not_applied);
        evidence
    }

    /// A file written again in the same turn counts once, with its lines summed.
    fn add_file(&mut self, file: &FileChange) {
        match self.files_changed.iter_mut().find(|f| f.path == file.path) {
            Some(known) => {
                known.added += file.added;
                known.removed += file.removed;
            }
            None => self.files_changed.push(FileDelta {
                path: file.path.clone(),
                added: file.added,
                removed: file.removed,
            }),
        }
    }
}

/// The turn's evidence in one line, or `None` when it used no tool with effects:
/// ``changed: greet.go (+1 -1) · not applied: 1 patch · ran: `go test ./...` exit 1``.
pub(crate) fn evidence_line(
    files_changed: &[FileDelta],
    patches_not_applied: &[NotDone],
    commands: &[CommandRun],
) -> Option<String> {
    if files_changed.is_empty() && patches_not_applied.is_empty() && commands.is_empty() {
        return None;
    }
    let mut parts = Vec::new();
    let commands_wrote = commands
        .iter()
        .any(|c| c.changed.as_ref().is_some_and(|c| !c.is_empty()));
    if files_changed.is_empty() {
        if !commands_wrote {
            parts.push("changed: nothing".to_owned());
        }
    } else {
        let files: Vec<String> = files_changed
            .iter()
            .map(|f| format!("{} (+{} -{})", quoted(&f.path), f.added, f.removed))
            .collect();
        parts.push(format!("changed: {}", files.join(", ")));
    }
    if !patches_not_applied.is_empty() {
        parts.push(not_applied_text(patches_not_applied));
    }
    for command in commands {
        let verb = if command.ran { "ran" } else { "asked to run" };
        parts.push(format!(
            "{verb}: {} {}",
            code(&command.command),
            command.status
        ));
        if let Some(files) = command
            .changed
            .as_ref()
            .and_then(|c| c.brief(CHANGED_NAMES))
        {
            parts.push(format!("wrote: {files}"));
        }
    }
    Some(parts.join(" · "))
}

/// `not applied: 2 patches`, saying how many of them a later patch replaced (see
/// [`super::landing`]), so the line agrees with `turn_end.status`.
fn not_applied_text(patches: &[NotDone]) -> String {
    let all = count(patches.len(), "patch", "patches");
    match patches.iter().filter(|p| p.replaced_by.is_some()).count() {
        0 => format!("not applied: {all}"),
        replaced if replaced == patches.len() => {
            format!("not applied: {all} (replaced by a later patch that applied)")
        }
        replaced => format!("not applied: {all} ({replaced} replaced by a later patch)"),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::authority::journal::{ApprovalRecord, ApprovalSource, Exit, TreeChanges};
    use crate::tools::account::CommandRecord;

    fn approval(outcome: ApprovalOutcome) -> ApprovalRecord {
        ApprovalRecord {
            source: ApprovalSource::Person,
            outcome,
            waited: Duration::ZERO,
            scope: None,
            reason: None,
            warnings: Vec::new(),
        }
    }

    /// The journal the Toolbox keeps for a call with `account`, approved by the person.
    fn journaled(account: &Account) -> Journal {
        Journal {
            approvals: vec![approval(ApprovalOutcome::Yes)],
            effects: account.effect().into_iter().collect(),
        }
    }

    fn describe_ok(tool: &str, args: Value, account: Account, journal: &Journal) -> OutcomeLine {
        describe(
            tool,
            &args,
            &Rule::Offered,
            CallOutcome::Ok,
            Some(&account),
            "",
            journal,
        )
    }

    #[test]
    fn the_evidence_line_says_how_many_failed_patches_were_replaced() {
        let patch = |id: &str, replaced_by: Option<&str>| NotDone {
            call_id: id.to_owned(),
            reason: "declined".to_owned(),
            replaced_by: replaced_by.map(str::to_owned),
        };
        let line = |patches: &[NotDone]| evidence_line(&[], patches, &[]).unwrap_or_default();
        assert_eq!(
            line(&[patch("c1", None)]),
            "changed: nothing · not applied: 1 patch"
        );
        assert_eq!(
            line(&[patch("c1", Some("c2"))]),
            "changed: nothing · not applied: 1 patch (replaced by a later patch that applied)"
        );
        assert_eq!(
            line(&[patch("c1", Some("c3")), patch("c2", None)]),
            "changed: nothing · not applied: 2 patches (1 replaced by a later patch)"
        );
    }

    #[test]
    fn read_tools_say_what_they_found() {
        let none = Journal::default();
        let line = describe_ok(
            "find_symbol",
            json!({"symbol": "Greet"}),
            Account::Definitions {
                found: 1,
                first: Some("greet.go:4".to_owned()),
                truncated: false,
            },
            &none,
        );
        assert_eq!(line.text, "find_symbol Greet → 1 definition (greet.go:4)");
        assert!(!line.failed);
        let line = describe_ok(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            Account::Slice { lines: 2 },
            &none,
        );
        assert_eq!(line.text, "view_slice greet.go 1-6 → 2 lines");
        let line = describe_ok(
            "search_text",
            json!({"pattern": "func Greet"}),
            Account::Matches {
                matches: 2,
                files: 1,
                truncated: false,
                literal: false,
            },
            &none,
        );
        assert_eq!(
            line.text,
            "search_text \"func Greet\" → 2 matches in 1 file"
        );
        let listing = Account::Listed {
            files: 60,
            truncated: true,
            glob: false,
        };
        let line = describe_ok("list_files", json!({}), listing, &none);
        assert_eq!(line.text, "list_files → 60 files (truncated)");
    }

    #[test]
    fn a_patch_that_was_not_written_says_not_applied() {
        let declined = Journal {
            approvals: vec![approval(ApprovalOutcome::No)],
            effects: vec![],
        };
        let line = describe(
            "apply_patch",
            &json!({"diff": "..."}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "The user declined this patch; nothing was changed.",
            &declined,
        );
        assert_eq!(line.text, "apply_patch → not applied: declined");
        assert!(line.failed);
        let stale = Journal {
            approvals: vec![],
            effects: vec![Effect::Conflict {
                files: vec!["greet.go".to_owned()],
            }],
        };
        let line = describe(
            "apply_patch",
            &json!({}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "Conflict: ...",
            &stale,
        );
        assert_eq!(
            line.text,
            "apply_patch → not applied: greet.go changed on disk since it was read"
        );
        let mismatch = describe(
            "apply_patch",
            &json!({}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "The hunk at patch line 3 does not apply: its old lines are not in `greet.go` as it is now.\nNothing was changed.",
            &Journal::default(),
        );
        assert_eq!(
            mismatch.text,
            "apply_patch → not applied: The hunk at patch line 3 does not apply: its old lines are not in `greet.go` as it is now"
        );
        let repeated = describe(
            "apply_patch",
            &json!({}),
            &Rule::Identical(3),
            CallOutcome::Refused,
            None,
            "refused",
            &Journal::default(),
        );
        assert_eq!(
            repeated.text,
            "apply_patch → not applied: refused: identical call number 3 in one turn"
        );
    }

    #[test]
    fn a_refusal_says_refused_once_and_whole() {
        let none = Journal::default();
        let read = describe(
            "view_slice",
            &json!({"path": ".git/config", "start": 1, "end": 5}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "refused: `.git/config` is inside .git/; metron's tools do not read or write git's internal files",
            &none,
        );
        assert_eq!(
            read.text,
            "view_slice .git/config 1-5 → refused: `.git/config` is inside .git/; metron's tools do not read or write git's internal files"
        );
        let tool = describe(
            "run_command",
            &json!({"command": "./build.sh"}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "Refused: `build.sh` is not executable; it cannot be run. Tell the user what you wanted to run.",
            &none,
        );
        assert_eq!(
            tool.text,
            "run_command `./build.sh` → not run: `build.sh` is not executable; it cannot be run"
        );
        // The reason is the whole first sentence, however long: its remedy is at the end.
        let path = describe(
            "run_command",
            &json!({"command": ".venv/bin/pytest"}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "`.venv/bin/pytest` is a path and is refused: run_command runs only programs found by name on PATH outside the project, or the project programs the user lists in `allowed_project_programs`, with their arguments. Allowed prefixes (whole words): none. Do not try variants; ask the user if you need it.",
            &none,
        );
        let why = "`.venv/bin/pytest` is a path and is refused: run_command runs only programs found by name on PATH outside the project, or the project programs the user lists in `allowed_project_programs`, with their arguments";
        assert_eq!(
            path.text,
            format!("run_command `.venv/bin/pytest` → not run: {why}")
        );
        assert_eq!(path.not_done.as_deref(), Some(why));
    }

    #[test]
    fn a_declined_patch_keeps_the_whole_reason() {
        let reason = "use the existing helper in strings.go instead of adding a new one, and keep the tests as they are";
        let declined = Journal {
            approvals: vec![ApprovalRecord {
                reason: Some(reason.to_owned()),
                ..approval(ApprovalOutcome::No)
            }],
            effects: vec![],
        };
        let line = describe(
            "apply_patch",
            &json!({}),
            &Rule::Offered,
            CallOutcome::Refused,
            None,
            "The user declined this patch.",
            &declined,
        );
        assert_eq!(
            line.text,
            format!("apply_patch → not applied: declined: {reason}")
        );
    }

    #[test]
    fn a_write_and_a_command_say_what_was_done() {
        let account = Account::Wrote {
            files: vec![FileChange {
                path: "greet.go".to_owned(),
                before: Some(crate::authority::journal::content_hash(b"a")),
                after: Some(crate::authority::journal::content_hash(b"b")),
                mode_before: None,
                mode_after: None,
                added: 1,
                removed: 1,
            }],
            applied: crate::authority::applied::AppliedPatch {
                call: None,
                files: Vec::new(),
            },
        };
        let wrote = journaled(&account);
        let line = describe_ok("apply_patch", json!({}), account, &wrote);
        assert_eq!(line.text, "apply_patch → wrote greet.go (+1 -1)");
        assert!(!line.failed);
        let account = Account::Ran(CommandRecord {
            argv: vec!["go".into(), "test".into()],
            exit: Exit::Code(1),
            duration: Duration::from_millis(3200),
            sandbox: None,
            changed: TreeChanges::default(),
            tail: (4..=8).map(|n| format!("line {n}")).collect(),
        });
        let ran = journaled(&account);
        let line = describe_ok(
            "run_command",
            json!({"command": "go test ./..."}),
            account,
            &ran,
        );
        assert_eq!(
            line.text,
            "run_command `go test ./...` → exit 1 after 3.2 s"
        );
        assert!(line.failed);
        assert_eq!(
            line.tail,
            ["line 4", "line 5", "line 6", "line 7", "line 8"]
        );
    }

    #[test]
    fn a_command_that_wrote_files_names_them_on_its_lines() {
        let changed = TreeChanges {
            created: vec!["api/gen.go".to_owned()],
            modified: vec!["a.go".to_owned(), "b.go".to_owned(), "c.go".to_owned()],
            deleted: vec!["old.go".to_owned()],
            untracked: false,
            caveats: Vec::new(),
        };
        let account = Account::Ran(CommandRecord {
            argv: vec!["/usr/bin/go".into(), "generate".into()],
            exit: Exit::Code(0),
            duration: Duration::from_millis(1200),
            sandbox: None,
            changed: changed.clone(),
            tail: Vec::new(),
        });
        let ran = journaled(&account);
        let args = json!({"command": "go generate ./..."});
        let line = describe_ok("run_command", args, account, &ran);
        assert_eq!(
            line.text,
            "run_command `go generate ./...` → exit 0 after 1.2 s; wrote: api/gen.go (new), a.go, b.go and 2 more"
        );
        let command = CommandRun {
            call_id: "c1".to_owned(),
            command: "go generate ./...".to_owned(),
            ran: true,
            status: "exit 0".to_owned(),
            exit_code: Some(0),
            sandbox: None,
            changed: Some(changed),
        };
        assert_eq!(
            evidence_line(&[], &[], &[command]).as_deref(),
            Some(
                "ran: `go generate ./...` exit 0 · wrote: api/gen.go (new), a.go, b.go and 2 more"
            )
        );
    }
}
