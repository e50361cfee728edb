//! What one call and one turn leave behind, as plain data: the records the ledger keeps
//! and the JSON events carry, which the outcome lines and the evidence are rendered into.
//! Kept apart from both, so that neither the ledger nor the outcome module needs the
//! other.

use serde::Serialize;
use serde_json::Value;

use crate::authority::journal::{ApprovalRecord, Effect, TreeChanges};
use crate::authority::policy::Rule;

/// How a call ended, as the model's result was classed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallOutcome {
    /// The tool produced its result.
    Ok,
    /// Policy, the person or the tool itself refused (the model can act on the text).
    Refused,
    /// The arguments did not fit the schema.
    Error,
    /// The environment failed.
    Fault,
}

impl CallOutcome {
    /// The word shown in `/ledger` and `--json`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::Refused => "refused",
            CallOutcome::Error => "error",
            CallOutcome::Fault => "fault",
        }
    }
}

/// What policy said about a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyDecision {
    /// True when the tool ran.
    pub allowed: bool,
    /// The rule.
    pub rule: Rule,
}

/// One tool call, through every stage.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The turn it belongs to.
    pub turn: u32,
    /// The call's id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// The arguments.
    pub arguments: Value,
    /// What policy decided.
    pub policy: PolicyDecision,
    /// Approval decisions (none for a read tool).
    pub approvals: Vec<ApprovalRecord>,
    /// What happened.
    pub effects: Vec<Effect>,
    /// `ok`, `refused`, `error` or `fault`.
    pub outcome: CallOutcome,
    /// The first line of what the model was told.
    pub reported: String,
    /// Everything the model was told (`/show N`).
    pub result: String,
    /// The person's outcome line.
    pub(crate) summary: OutcomeLine,
    /// Bytes the model was told.
    pub reported_bytes: usize,
}

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
    /// The later call of the same turn that landed every file this patch named, when one
    /// did (see `landing`): the patch was replaced, so it does not make the turn
    /// `incomplete`. Omitted when none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced_by: Option<String>,
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
