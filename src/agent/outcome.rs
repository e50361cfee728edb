//! What really happened, for the person: one line per tool call, and one line of evidence
//! per turn that used a tool with effects.
//!
//! Every word comes from the tool's own result, from what authority journaled (the files
//! written, the command's exit status, the answer to the question) or from policy; none
//! from the model's text, which can claim anything ("Done: all tests pass."). A patch that
//! was not written always says `not applied`, and a command always says how it ended.

use std::fmt::Write;

use serde::Serialize;
use serde_json::Value;

use super::ledger::{CallOutcome, Entry};
use crate::authority::journal::{ApprovalOutcome, Effect, FileChange, Journal, TreeChanges};
use crate::authority::policy::Rule;
use crate::tools::{self, Access, count, text::one_line};

/// Lines of a command's output shown under its outcome line.
const TAIL_LINES: usize = 5;

/// One tool call's outcome: `find_symbol Greet → 1 definition (greet.go:4)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct OutcomeLine {
    /// The whole line.
    pub(crate) text: String,
    /// Whether it reports a failure (shown so that it stands out): a refusal, an error, a
    /// patch not applied, a command that did not exit 0.
    pub(crate) failed: bool,
    /// The last lines of a command's output.
    pub(crate) tail: Vec<String>,
    /// Why a tool with effects had none (`declined`), for the turn's evidence.
    pub(crate) not_done: Option<String>,
}

/// Describes one call from its tool's result and its journal. `rule` is policy's rule
/// (a refused rule means the tool never ran).
pub(crate) fn describe(
    tool: &str,
    arguments: &Value,
    rule: &Rule,
    outcome: CallOutcome,
    result: &str,
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
    } else if let Some(done) = effects(&journal.effects, result, &mut line) {
        done
    } else if access == Access::Read {
        match (outcome, spec.and_then(|spec| spec.summarize)) {
            (CallOutcome::Ok, Some(summarize)) => summarize(result),
            (CallOutcome::Ok, None) => "done".to_owned(),
            (other, _) => {
                line.failed = true;
                format!("{}: {}", other.as_str(), first_sentence(result))
            }
        }
    } else {
        line.failed = true;
        let last = journal.approvals.last();
        let why = match last.map(|a| (a.outcome, a.reason.as_deref())) {
            Some((ApprovalOutcome::No, None)) => "declined".to_owned(),
            Some((ApprovalOutcome::No, Some(reason))) => {
                format!("declined: {}", one_line(reason, 80))
            }
            Some((ApprovalOutcome::Unanswerable, _)) => {
                "nobody was asked to approve it (rerun with --yes to allow it)".to_owned()
            }
            _ => first_sentence(result),
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

/// What the journaled effects say happened, or `None` when there were none.
fn effects(effects: &[Effect], result: &str, line: &mut OutcomeLine) -> Option<String> {
    let mut parts = Vec::new();
    for effect in effects {
        match effect {
            Effect::Wrote { files } => parts.push(format!("wrote {}", files_text(files))),
            Effect::Ran {
                status,
                duration,
                changed,
                ..
            } => {
                let status = short_status(status);
                line.failed |= status != "exit 0";
                line.tail = output_tail(result);
                parts.push(format!("{status} after {:.1} s", duration.as_secs_f64()));
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

/// The sandbox a command ran under, in `effect` events and `turn_end.commands`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SandboxEvent {
    /// `on` or `off` (`command_sandbox`).
    pub mode: &'static str,
    /// The network was allowed (`command_network`).
    pub network: bool,
    /// `.git` was writable, hooks and config excepted (`command_git_writes`).
    pub git_writes: bool,
    /// Places beyond the project and the temp dir it could write.
    pub extra_writable: Vec<String>,
    /// The line the question showed.
    pub summary: String,
}

impl SandboxEvent {
    /// The event for a run under `summary`, or an unconfined one.
    pub(crate) fn of(summary: Option<&crate::sandbox::Summary>) -> SandboxEvent {
        match summary {
            Some(summary) => SandboxEvent {
                mode: "on",
                network: summary.network,
                git_writes: summary.git_writes,
                extra_writable: summary.extra_writable.clone(),
                summary: summary.to_string(),
            },
            None => SandboxEvent {
                mode: "off",
                network: true,
                git_writes: true,
                extra_writable: Vec::new(),
                summary: crate::sandbox::OFF_NOTICE.to_owned(),
            },
        }
    }
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
            (None, _) => write!(text, "{} (new, +{})", file.path, file.added),
            (_, None) => write!(text, "{} (deleted)", file.path),
            _ => write!(text, "{} (+{} -{})", file.path, file.added, file.removed),
        };
    }
    text
}

/// `exit status 1` → `exit 1`; other statuses (`killed by signal 9`, `timed out after
/// 120 s; killed`) as they are.
fn short_status(status: &str) -> String {
    match status.strip_prefix("exit status ") {
        Some(code) => format!("exit {code}"),
        None => status.to_owned(),
    }
}

/// The last lines of a command's output (run_command's result is `$ CMD`, the status, then
/// the output).
fn output_tail(result: &str) -> Vec<String> {
    let output: Vec<&str> = result
        .lines()
        .skip(2)
        .filter(|line| !line.trim().is_empty())
        .collect();
    output[output.len().saturating_sub(TAIL_LINES)..]
        .iter()
        .map(|line| one_line(line, 200))
        .collect()
}

/// The first sentence of a tool's message, without the reassurance that nothing changed
/// (the outcome line says it).
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or("").trim();
    let line = line.strip_prefix("Not applied: ").unwrap_or(line);
    let sentence = line
        .find(". ")
        .map_or(line, |end| &line[..end])
        .trim_end_matches('.');
    one_line(sentence, 120)
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

/// A file a turn changed (`turn_end.files_changed`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileDelta {
    /// The path, relative to the project root.
    pub path: String,
    /// Lines added.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// A patch that was not applied (`turn_end.patches_not_applied`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NotDone {
    /// The call.
    pub call_id: String,
    /// Why, as the outcome line says it.
    pub reason: String,
}

/// A command the model asked for (`turn_end.commands`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CommandRun {
    /// The call.
    pub call_id: String,
    /// The command as the model typed it.
    pub command: String,
    /// Whether it ran.
    pub ran: bool,
    /// `exit 0`, `killed by signal 9`, or why it did not run.
    pub status: String,
    /// The exit code, when it exited.
    pub exit_code: Option<i32>,
    /// The sandbox it ran under, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxEvent>,
    /// What it changed in the project, when it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub changed: Option<TreeChanges>,
}

impl Evidence {
    /// The evidence of the entries of one turn.
    pub(crate) fn of<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Evidence {
        let mut evidence = Evidence::default();
        for entry in entries {
            let access = tools::spec(&entry.tool).map_or(Access::Read, |spec| spec.access);
            for effect in &entry.effects {
                match effect {
                    Effect::Wrote { files } => {
                        for file in files {
                            evidence.add_file(file);
                        }
                    }
                    Effect::Ran {
                        status,
                        sandbox,
                        changed,
                        ..
                    } => {
                        let status = short_status(status);
                        evidence.commands.push(CommandRun {
                            call_id: entry.call_id.clone(),
                            command: tools::plain_arg(&entry.arguments, "command"),
                            ran: true,
                            exit_code: status
                                .strip_prefix("exit ")
                                .and_then(|code| code.parse().ok()),
                            status,
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
/// `changed: greet.go (+1 -1) · not applied: 1 patch · ran: go test ./... exit 1`.
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
            .map(|f| format!("{} (+{} -{})", f.path, f.added, f.removed))
            .collect();
        parts.push(format!("changed: {}", files.join(", ")));
    }
    if !patches_not_applied.is_empty() {
        parts.push(format!(
            "not applied: {}",
            count(patches_not_applied.len(), "patch", "patches")
        ));
    }
    for command in commands {
        let verb = if command.ran { "ran" } else { "asked to run" };
        parts.push(format!("{verb}: {} {}", command.command, command.status));
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::authority::journal::{ApprovalRecord, ApprovalSource};

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

    fn describe_ok(tool: &str, args: Value, result: &str, journal: &Journal) -> OutcomeLine {
        describe(
            tool,
            &args,
            &Rule::Offered,
            CallOutcome::Ok,
            result,
            journal,
        )
    }

    #[test]
    fn read_tools_say_what_they_found() {
        let none = Journal::default();
        let line = describe_ok(
            "find_symbol",
            json!({"symbol": "Greet"}),
            "Greet [func] -> greet.go:4\n",
            &none,
        );
        assert_eq!(line.text, "find_symbol Greet → 1 definition (greet.go:4)");
        assert!(!line.failed);
        let line = describe_ok(
            "view_slice",
            json!({"path": "greet.go", "start": 1, "end": 6}),
            "    1 | package greet\n    2 | \n",
            &none,
        );
        assert_eq!(line.text, "view_slice greet.go 1-6 → 2 lines");
        let line = describe_ok(
            "search_text",
            json!({"pattern": "func Greet"}),
            "greet.go:4:func Greet() {}\ngreet.go:9:func Greet2() {}\n",
            &none,
        );
        assert_eq!(
            line.text,
            "search_text \"func Greet\" → 2 matches in 1 file"
        );
        let listing: String = (0..60).map(|n| format!("f{n}.go\n")).collect::<String>()
            + "[truncated to 60 entries; narrow with a glob]\n";
        let line = describe_ok("list_files", json!({}), &listing, &none);
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
            "refused",
            &Journal::default(),
        );
        assert_eq!(
            repeated.text,
            "apply_patch → not applied: refused: identical call number 3 in one turn"
        );
    }

    #[test]
    fn a_write_and_a_command_say_what_was_done() {
        let wrote = Journal {
            approvals: vec![approval(ApprovalOutcome::Yes)],
            effects: vec![Effect::Wrote {
                files: vec![FileChange {
                    path: "greet.go".to_owned(),
                    before: Some("a".to_owned()),
                    after: Some("b".to_owned()),
                    mode_before: None,
                    mode_after: None,
                    added: 1,
                    removed: 1,
                }],
            }],
        };
        let line = describe_ok("apply_patch", json!({}), "ok", &wrote);
        assert_eq!(line.text, "apply_patch → wrote greet.go (+1 -1)");
        assert!(!line.failed);
        let ran = Journal {
            approvals: vec![approval(ApprovalOutcome::Yes)],
            effects: vec![Effect::Ran {
                argv: vec!["go".into(), "test".into()],
                status: "exit status 1".to_owned(),
                duration: Duration::from_millis(3200),
                sandbox: None,
                changed: TreeChanges::default(),
            }],
        };
        let output = "$ go test ./...\nexit status 1\n".to_owned()
            + &(1..=8).map(|n| format!("line {n}\n")).collect::<String>();
        let line = describe_ok(
            "run_command",
            json!({"command": "go test ./..."}),
            &output,
            &ran,
        );
        assert_eq!(line.text, "run_command go test ./... → exit 1 after 3.2 s");
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
        let ran = Journal {
            approvals: vec![approval(ApprovalOutcome::Yes)],
            effects: vec![Effect::Ran {
                argv: vec!["/usr/bin/go".into(), "generate".into()],
                status: "exit status 0".to_owned(),
                duration: Duration::from_millis(1200),
                sandbox: None,
                changed: changed.clone(),
            }],
        };
        let result = "$ go generate ./...\nexit status 0\n(no output)\n";
        let args = json!({"command": "go generate ./..."});
        let line = describe_ok("run_command", args, result, &ran);
        assert_eq!(
            line.text,
            "run_command go generate ./... → exit 0 after 1.2 s; wrote: api/gen.go (new), a.go, b.go and 2 more"
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
            Some("ran: go generate ./... exit 0 · wrote: api/gen.go (new), a.go, b.go and 2 more")
        );
    }
}
