//! The action ledger: what each tool call was, what policy and the person decided, what
//! actually happened, and what the model was told.
//!
//! Every call moves through the same stages: proposed (tool and arguments), policy
//! (offered or not, allowed or refused and by which rule), approval (asked: yes or no;
//! auto by trusted config; `--yes`; a standing approval), execution (the effects from the
//! tools' journal: files written with their hashes, a command's status, a conflict) and
//! what was reported back. An effect is listed only when the journal recorded it, so a
//! request is never shown as done.
//!
//! The same stages are emitted as [`Event`]s while they happen (`--json` prints them as
//! JSON Lines) and kept in the [`Ledger`] for `/ledger` and `/context`.

use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::history::{History, REDACTED_SLICE};
use super::record::{CallOutcome, CommandRun, Entry, FileDelta, NotDone, SandboxEvent};
use crate::authority::journal::{ApprovalRecord, BlobId, Effect, FileChange, TreeChanges};
use crate::authority::policy::Rule;
use crate::ollama::wire::Role;
use crate::project::FileMode;
use crate::tools::text::{joined_lines, one_line};

/// How a turn ended, as CI reads it (`turn_end.status`, and `-p`'s exit status).
///
/// Three values, so that a script needs one check: `ok` is the only one that means the
/// model answered and every patch it proposed landed. Why a turn failed is in
/// [`Stop`] (the `error` text, and `/ledger`'s heading), not in more status words.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnStatus {
    /// The model answered, and every patch it proposed in the turn landed or was
    /// replaced by one that landed (see [`super::landing`]).
    #[default]
    Ok,
    /// The model answered, but a patch it proposed had still not landed when the turn
    /// ended (declined, refused, stale, not matching), whatever the answer claims.
    Incomplete,
    /// No answer: the model failed, ran out of round trips, answered nothing, or the
    /// person pressed Ctrl-C.
    Error,
}

impl TurnStatus {
    /// The word shown in `/ledger` and `--json`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            TurnStatus::Ok => "ok",
            TurnStatus::Incomplete => "incomplete",
            TurnStatus::Error => "error",
        }
    }
}

/// Why a turn stopped, before its patches are weighed. Kept apart from [`TurnStatus`] so
/// the status stays three words for scripts while `/ledger` still says what went wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A reply without tool calls, with text.
    Answered,
    /// A reply without tool calls and without text (Ollama drops a tool call it cannot
    /// parse): nothing a script could take for an answer.
    EmptyAnswer,
    /// The model was unreachable, failed mid-stream, or went silent.
    ModelFailed,
    /// `max_turns` round trips without an answer.
    MaxTurns,
    /// Ctrl-C.
    Interrupted,
}

impl Stop {
    /// The turn's status, given whether every proposed patch landed.
    pub(crate) fn status(self, patches_landed: bool) -> TurnStatus {
        match (self, patches_landed) {
            (Stop::Answered, true) => TurnStatus::Ok,
            (Stop::Answered, false) => TurnStatus::Incomplete,
            _ => TurnStatus::Error,
        }
    }

    /// `/ledger`'s heading for a turn that stopped this way with `status`.
    fn heading(self, status: TurnStatus) -> &'static str {
        match self {
            Stop::Answered => status.as_str(),
            Stop::EmptyAnswer => "error: empty answer",
            Stop::ModelFailed => "error: the model failed",
            Stop::MaxTurns => "error: max turns",
            Stop::Interrupted => "error: interrupted",
        }
    }
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The version of the `--json` event stream, carried by its first event
/// (`session_start.schema_version`), so a reader can refuse a stream it would misread.
///
/// Raise it when a change could make a reader of the documented stream go wrong: an event
/// or field removed or renamed, a field's type or meaning changed, a field that was always
/// there made optional, or a value added to or removed from a field whose values the docs
/// list (such as `turn_end.status`). Adding an event type or a field does not raise it:
/// readers ignore what they do not know. docs/usage.md ("JSON events") states the rule
/// and the version, and a test holds the docs to what the binary emits.
pub(crate) const EVENT_SCHEMA_VERSION: u32 = 1;

/// One event, as printed by `--json`: one JSON object per line, `type` first.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// The session started (emitted by the front end, which knows the config layers).
    SessionStart {
        /// [`EVENT_SCHEMA_VERSION`]; first after `type`, so a reader sees it before
        /// anything it might misread.
        schema_version: u32,
        /// The model.
        model: String,
        /// The context window every request of the session asks for: the configured
        /// `num_ctx`, or the model's trained length when that is smaller.
        num_ctx: u64,
        /// The chat endpoint.
        endpoint: String,
        /// The protocol the endpoint speaks: `ollama` or `openai` (Chat Completions).
        server_kind: &'static str,
        /// Whether the code stays on this machine: the endpoint is here and the model is
        /// not a cloud model the server passes on to another host.
        endpoint_local: bool,
        /// The host a cloud model runs at (the server's `remote_host`), when it is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        model_remote_host: Option<String>,
        /// The model the user's own config chose, when the project's config replaced it.
        #[serde(skip_serializing_if = "Option::is_none")]
        model_replaced: Option<String>,
        /// The highest config file read, if any (the project's when both were read); kept
        /// for readers of the one-file event, `config_files` names them all.
        config_file: Option<String>,
        /// Every config file read, lowest layer first: the user's, then the project's.
        config_files: Vec<String>,
        /// Every setting not at its default, with the layer it came from.
        config_sources: serde_json::Map<String, Value>,
        /// The tools offered to the model.
        tools_offered: Vec<String>,
        /// The tools withheld, with the reason.
        tools_withdrawn: Vec<WithdrawnTool>,
        /// The instruction files sent after the system prompt on every request, in order
        /// (empty when there are none, or they are off).
        instructions: Vec<InstructionSent>,
    },
    /// The person's line started a turn.
    TurnStart {
        /// The turn number in this session, from 1.
        turn: u32,
        /// The line.
        prompt: String,
    },
    /// One model round trip finished.
    ModelReply {
        /// The turn.
        turn: u32,
        /// The round trip within the turn, from 1.
        round: usize,
        /// Ollama's `prompt_eval_count`.
        prompt_tokens: u64,
        /// Ollama's `prompt_eval_cached_count` (of `prompt_tokens`, those served from
        /// its cache), omitted when the server does not report it.
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_cached_tokens: Option<u64>,
        /// Ollama's `eval_count`.
        generated_tokens: u64,
        /// Tool calls the reply asked for.
        tool_calls: usize,
        /// Milliseconds to the first token.
        first_token_ms: Option<u64>,
        /// Milliseconds for the whole reply.
        duration_ms: u64,
        /// Why generation stopped.
        done_reason: Option<String>,
        /// Of `tool_calls`, how many the model wrote as reply text (`<tool_call>` blocks
        /// or bare JSON) and metron recovered. Omitted when none.
        #[serde(skip_serializing_if = "is_zero")]
        calls_from_text: usize,
        /// The server sent no token counts, so the zeros above mean "unknown". Omitted
        /// when it did.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        tokens_unreported: bool,
        /// Present when Ollama probably cut the prompt to fit `num_ctx`.
        #[serde(skip_serializing_if = "Option::is_none")]
        prompt_truncated: Option<super::PromptCut>,
    },
    /// The server refused the prompt as longer than the context window, and metron
    /// trimmed its own history (docs/models.md, "When the conversation no longer fits")
    /// before asking once more.
    HistoryTrimmed {
        /// The turn.
        turn: u32,
        /// The round trip within the turn that was refused, from 1 (it is sent again).
        round: usize,
        /// The server's refusal.
        refusal: String,
        /// Earlier tool results replaced by a note that they were dropped.
        results_dropped: usize,
        /// Whole earlier messages dropped.
        messages_dropped: usize,
        /// Bytes of message text no longer sent.
        bytes_freed: usize,
    },
    /// The model asked for a tool.
    ToolProposed {
        /// The turn.
        turn: u32,
        /// The call's id.
        call_id: String,
        /// The tool's name, as the model wrote it.
        tool: String,
        /// The arguments, as the model wrote them.
        arguments: Value,
    },
    /// Policy decided whether the call may run.
    Decision {
        /// The call's id.
        call_id: String,
        /// True when the tool runs (it may still ask the person, or refuse by itself).
        allowed: bool,
        /// The rule that decided.
        #[serde(serialize_with = "as_text")]
        rule: Rule,
    },
    /// A write or an execution was approved or refused.
    Approval {
        /// The call's id.
        call_id: String,
        /// Who decided: `asked`, `--yes`, `auto_approve_patches`, `standing approval`,
        /// `nobody to ask`.
        by: String,
        /// `yes`, `yes, for the session`, `no`, `refused (nobody to ask)`.
        answer: String,
        /// Milliseconds the person took.
        waited_ms: u64,
        /// The scope of a standing approval used or granted.
        scope: Option<String>,
        /// The reason the person gave for a no (omitted when none).
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
        /// What the question warned about: the repository chose the program (omitted when
        /// none). Kept here so a `--json` consumer sees the same warnings `/ledger` shows.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        warnings: Vec<String>,
    },
    /// Something happened (or was stopped): only ever from the tools' journal.
    Effect {
        /// The call's id.
        call_id: String,
        /// `wrote`, `ran` or `conflict`.
        kind: &'static str,
        /// Files written (with hashes), or the files in conflict.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        files: Vec<FileHashes>,
        /// The command that ran.
        #[serde(skip_serializing_if = "Option::is_none")]
        argv: Option<Vec<String>>,
        /// Its exit status.
        #[serde(skip_serializing_if = "Option::is_none")]
        status: Option<String>,
        /// Its duration.
        #[serde(skip_serializing_if = "Option::is_none")]
        duration_ms: Option<u64>,
        /// The sandbox it ran under.
        #[serde(skip_serializing_if = "Option::is_none")]
        sandbox: Option<SandboxEvent>,
        /// What it changed in the project.
        #[serde(skip_serializing_if = "Option::is_none")]
        changed: Option<TreeChanges>,
    },
    /// What went back to the model.
    ToolResult {
        /// The call's id.
        call_id: String,
        /// The tool.
        tool: String,
        /// `ok`, `refused`, `error` or `fault`.
        outcome: CallOutcome,
        /// Bytes of text the model received.
        bytes: usize,
        /// The person's outcome line (`apply_patch → not applied: declined`), from the
        /// tool's result and the journal, never from the model.
        summary: String,
        /// True when the line reports a failure: a refusal, an error, a patch not applied,
        /// a command that did not exit 0.
        failed: bool,
        /// The last lines of a command's output.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        output_tail: Vec<String>,
    },
    /// The turn ended.
    TurnEnd {
        /// The turn.
        turn: u32,
        /// `ok`, `incomplete` or `error`.
        status: TurnStatus,
        /// The answer, when there is one (`ok` and `incomplete`).
        #[serde(skip_serializing_if = "Option::is_none")]
        answer: Option<String>,
        /// The error, when there is one.
        #[serde(skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Prompt tokens of the last round trip.
        prompt_tokens: u64,
        /// Tokens generated over the turn.
        generated_tokens: u64,
        /// Tool calls made.
        tool_calls: usize,
        /// Model round trips.
        round_trips: usize,
        /// Where the time went.
        latency: Latency,
        /// Files this turn wrote, with lines added and removed (from the journal).
        files_changed: Vec<FileDelta>,
        /// Patches this turn did not apply, with the reason.
        patches_not_applied: Vec<NotDone>,
        /// Commands this turn asked for: whether each ran, and its exit status.
        commands: Vec<CommandRun>,
    },
}

/// A withheld tool in [`Event::SessionStart`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WithdrawnTool {
    /// The tool.
    pub name: String,
    /// Why.
    pub reason: String,
}

/// An instruction file sent after the system prompt, in [`Event::SessionStart`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InstructionSent {
    /// The file: the user's by its full path, a project's relative to the root.
    pub path: String,
    /// The bytes of it sent.
    pub bytes: usize,
    /// True when `instructions_max_bytes` cut it.
    pub cut: bool,
}

/// A file in an [`Event::Effect`]: content hashes are git blob ids (`null` = absent).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct FileHashes {
    /// The path.
    pub path: String,
    /// Hash before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub before: Option<BlobId>,
    /// Hash after.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub after: Option<BlobId>,
    /// Git mode before (`"100644"` or `"100755"`), for a file that existed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_before: Option<FileMode>,
    /// Git mode after, for a file that still exists.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode_after: Option<FileMode>,
}

/// Where a turn's time went, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Latency {
    /// Waiting for first tokens (prompt evaluation, model load), summed over round trips.
    pub first_token_ms: u64,
    /// Generating, after the first token, summed over round trips.
    pub generation_ms: u64,
    /// Running tools, not counting the person's approval time.
    pub tools_ms: u64,
    /// Waiting for the person to answer approval questions.
    pub approval_ms: u64,
}

/// Serialises a value by its `Display` text (the policy rule is a sentence in `--json`).
fn as_text<T: std::fmt::Display, S: serde::Serializer>(
    value: &T,
    serializer: S,
) -> Result<S::Ok, S::Error> {
    serializer.collect_str(value)
}

/// Milliseconds, saturating.
pub(crate) fn ms(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// A turn's line, for the ledger's headings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TurnRecord {
    /// The turn number.
    pub(crate) turn: u32,
    /// The person's line.
    pub(crate) prompt: String,
    /// How it ended, once it has.
    pub(crate) status: Option<(Stop, TurnStatus)>,
}

/// The session's ledger.
#[derive(Debug, Default, Clone)]
pub struct Ledger {
    turns: Vec<TurnRecord>,
    entries: Vec<Entry>,
    by_person: Vec<PersonEffect>,
    /// What metron did to the conversation during a turn (a trim), by turn.
    notes: Vec<(u32, String)>,
}

/// An effect the person made through metron between turns (`/undo`).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PersonEffect {
    /// The turn it followed.
    after_turn: u32,
    /// What they did, in words (`/undo of call 3`).
    what: String,
    /// The effect, as the journal words it.
    effect: Effect,
}

impl Ledger {
    /// Starts a turn and returns its number.
    pub(crate) fn start_turn(&mut self, prompt: &str) -> u32 {
        let turn = u32::try_from(self.turns.len() + 1).unwrap_or(u32::MAX);
        self.turns.push(TurnRecord {
            turn,
            prompt: prompt.to_owned(),
            status: None,
        });
        turn
    }

    /// Records how the current turn ended.
    pub(crate) fn end_turn(&mut self, stop: Stop, status: TurnStatus) {
        if let Some(turn) = self.turns.last_mut() {
            turn.status.get_or_insert((stop, status));
        }
    }

    /// Records an effect the person made with a command (`/undo`), after the last turn.
    pub(crate) fn record_by_person(&mut self, what: String, effect: Effect) {
        let after_turn = self.turns.last().map_or(0, |t| t.turn);
        self.by_person.push(PersonEffect {
            after_turn,
            what,
            effect,
        });
    }

    /// Records what metron did to the conversation during `turn` (history trimmed to
    /// fit the context window), shown under the turn in `/ledger`.
    pub(crate) fn record_note(&mut self, turn: u32, note: String) {
        self.notes.push((turn, note));
    }

    /// Adds a call that went through every stage.
    pub(crate) fn record(&mut self, entry: Entry) {
        self.entries.push(entry);
    }

    /// Every call so far.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// The ledger as the person reads it (`/ledger`).
    pub(crate) fn render(&self, standing: &[String]) -> String {
        let mut text = String::new();
        if self.turns.is_empty() {
            text.push_str("nothing yet: no turn has run in this session\n");
        }
        // Calls are numbered across the session, so `/show N` names one.
        let mut number = 0;
        for turn in &self.turns {
            let _ = writeln!(
                text,
                "turn {}: {} [{}]",
                turn.turn,
                one_line(&turn.prompt, 80),
                turn.status
                    .map_or("running", |(stop, status)| stop.heading(status))
            );
            for (_, note) in self.notes.iter().filter(|(t, _)| *t == turn.turn) {
                let _ = writeln!(text, "  metron: {note}");
            }
            for entry in self.entries.iter().filter(|e| e.turn == turn.turn) {
                number += 1;
                render_entry(&mut text, number, entry);
            }
            for done in self.by_person.iter().filter(|d| d.after_turn == turn.turn) {
                let _ = writeln!(
                    text,
                    "  by you: {}: {}",
                    done.what,
                    describe_effect(&done.effect)
                );
            }
        }
        if standing.is_empty() {
            text.push_str("standing approvals: none\n");
        } else {
            for scope in standing {
                let _ = writeln!(text, "standing approval: {scope}");
            }
        }
        text
    }

    /// Call `number` (from 1, as `/ledger` numbers them) with the full text the model
    /// read (`/show N`), or why there is none.
    pub(crate) fn show(&self, number: usize) -> Result<String, String> {
        let count = self.entries.len();
        let Some(entry) = number.checked_sub(1).and_then(|i| self.entries.get(i)) else {
            return Err(match count {
                0 => "no tool call yet in this session".to_owned(),
                _ => format!("there is no call {number}; /ledger numbers the calls 1 to {count}"),
            });
        };
        let mut text = format!(
            "call {number} (turn {}): {}\n",
            entry.turn, entry.summary.text
        );
        let _ = writeln!(
            text,
            "--- what the model read ({} bytes) ---",
            entry.reported_bytes
        );
        text.push_str(&entry.result);
        if !entry.result.ends_with('\n') {
            text.push('\n');
        }
        text.push_str("--- end ---\n");
        Ok(text)
    }

    /// The context manifest (`/context`): what the model has been shown in this session,
    /// and whether each piece is still carried in history, purged, or dropped.
    pub(crate) fn context(&self, history: &History) -> String {
        let mut text = String::new();
        let mut shown = 0;
        for entry in &self.entries {
            if entry.outcome != CallOutcome::Ok || entry.policy.rule != Rule::Offered {
                continue;
            }
            let what = match crate::tools::spec(&entry.tool) {
                Some(spec) => (spec.shown)(&entry.arguments),
                None => one_line(&entry.tool, 80),
            };
            let state = carried_state(history, &entry.call_id);
            let _ = writeln!(
                text,
                "turn {}: {what} ({} bytes, {state})",
                entry.turn, entry.reported_bytes
            );
            shown += 1;
        }
        if shown == 0 {
            text.push_str("the model has been shown nothing from the project yet\n");
        }
        let messages = history.len().saturating_sub(1);
        let _ = writeln!(
            text,
            "history: {messages} messages, {} bytes carried on every request; {} earlier messages dropped",
            history.carried_bytes(),
            history.dropped()
        );
        text
    }
}

/// Whether a call's result is still in history, was purged, or was trimmed away.
fn carried_state(history: &History, call_id: &str) -> &'static str {
    let message = history
        .messages()
        .iter()
        .find(|m| m.role == Role::Tool && m.tool_call_id.as_deref() == Some(call_id));
    match message {
        Some(m) if m.content == REDACTED_SLICE => "purged after its turn",
        Some(m) if m.content == super::history::overflow::DROPPED_RESULT => {
            "dropped to fit the context window"
        }
        Some(_) => "still carried",
        None => "dropped from history",
    }
}

fn render_entry(text: &mut String, n: usize, entry: &Entry) {
    let spec = crate::tools::spec(&entry.tool);
    let arguments = match spec.and_then(|spec| spec.ledger_arguments) {
        Some(describe) => describe(&entry.arguments),
        None => one_line(&entry.arguments.to_string(), 80),
    };
    // The tool name is the model's text: kept to one line, so it cannot forge rows (the
    // front end escapes what remains).
    let _ = writeln!(text, "  {n}. {} {arguments}", one_line(&entry.tool, 80));
    let policy = if entry.policy.allowed {
        "allowed".to_owned()
    } else {
        format!("refused by policy: {}", entry.policy.rule)
    };
    let _ = writeln!(text, "     policy: {policy}");
    for approval in &entry.approvals {
        let mut line = format!(
            "     approval: {} -> {}",
            approval.source.as_str(),
            approval.outcome.as_str()
        );
        if !approval.waited.is_zero() {
            let _ = write!(line, " after {:.1} s", approval.waited.as_secs_f64());
        }
        if let Some(scope) = &approval.scope {
            let _ = write!(line, " ({scope})");
        }
        if let Some(reason) = &approval.reason {
            // The person's reason, whole: the model read all of it.
            let _ = write!(line, ": \"{}\"", joined_lines(reason));
        }
        let _ = writeln!(text, "{line}");
        for warning in &approval.warnings {
            let _ = writeln!(text, "     warning: {}", joined_lines(warning));
        }
    }
    for effect in &entry.effects {
        let _ = writeln!(text, "     effect: {}", describe_effect(effect));
    }
    let has_effects = spec.is_some_and(|spec| spec.access != crate::tools::Access::Read);
    if entry.effects.is_empty() && has_effects {
        text.push_str("     effect: none (nothing was written or run)\n");
    }
    let _ = writeln!(text, "     outcome: {}", entry.summary.text);
    let _ = writeln!(
        text,
        "     reported ({}, {} bytes): {}",
        entry.outcome.as_str(),
        entry.reported_bytes,
        one_line(&entry.reported, 90)
    );
}

/// One effect in words.
pub(crate) fn describe_effect(effect: &Effect) -> String {
    match effect {
        Effect::Wrote { files } => {
            let files: Vec<String> = files.iter().map(describe_file).collect();
            format!("wrote {}", files.join(", "))
        }
        Effect::Ran {
            argv,
            exit,
            duration,
            sandbox,
            changed,
        } => {
            let sandbox = sandbox
                .as_ref()
                .map_or_else(|| "unconfined".to_owned(), |s| format!("sandbox: {s}"));
            let changed = changed
                .brief(usize::MAX)
                .map_or_else(String::new, |files| format!("; changed {files}"));
            format!(
                "ran `{}`: {exit} in {:.1} s ({sandbox}){changed}",
                argv.join(" "),
                duration.as_secs_f64()
            )
        }
        Effect::Conflict { files } => {
            format!("conflict, nothing written: {} changed", files.join(", "))
        }
    }
}

fn describe_file(file: &FileChange) -> String {
    let short = |hash: &Option<BlobId>| hash.as_ref().map_or("absent", BlobId::short).to_owned();
    format!(
        "{} {} -> {}{}",
        file.path,
        short(&file.before),
        short(&file.after),
        describe_modes(file.mode_before, file.mode_after)
    )
}

/// The mode part of a file in `/ledger`: every change, and a created executable; nothing
/// for a mode that stays (or a new 100644), to keep the usual line short.
fn describe_modes(before: Option<FileMode>, after: Option<FileMode>) -> String {
    match (before, after) {
        (Some(before), Some(after)) if before != after => format!(", mode {before} -> {after}"),
        (None, Some(FileMode::Executable)) => ", mode 100755".to_owned(),
        _ => String::new(),
    }
}

/// The effect as a JSON event.
pub(crate) fn effect_event(call_id: &str, effect: &Effect) -> Event {
    let hashes = |files: &[FileChange]| {
        files
            .iter()
            .map(|f| FileHashes {
                path: f.path.clone(),
                before: f.before.clone(),
                after: f.after.clone(),
                mode_before: f.mode_before,
                mode_after: f.mode_after,
            })
            .collect()
    };
    match effect {
        Effect::Wrote { files } => Event::Effect {
            call_id: call_id.to_owned(),
            kind: "wrote",
            files: hashes(files),
            argv: None,
            status: None,
            duration_ms: None,
            sandbox: None,
            changed: None,
        },
        Effect::Ran {
            argv,
            exit,
            duration,
            sandbox,
            changed,
        } => Event::Effect {
            call_id: call_id.to_owned(),
            kind: "ran",
            files: Vec::new(),
            argv: Some(argv.clone()),
            status: Some(exit.to_string()),
            duration_ms: Some(ms(*duration)),
            sandbox: Some(SandboxEvent::of(sandbox.as_ref())),
            changed: Some(changed.clone()),
        },
        Effect::Conflict { files } => Event::Effect {
            call_id: call_id.to_owned(),
            kind: "conflict",
            files: files
                .iter()
                .map(|path| FileHashes {
                    path: path.clone(),
                    before: None,
                    after: None,
                    mode_before: None,
                    mode_after: None,
                })
                .collect(),
            argv: None,
            status: None,
            duration_ms: None,
            sandbox: None,
            changed: None,
        },
    }
}

/// The approval as a JSON event.
pub(crate) fn approval_event(call_id: &str, approval: &ApprovalRecord) -> Event {
    Event::Approval {
        call_id: call_id.to_owned(),
        by: approval.source.as_str().to_owned(),
        answer: approval.outcome.as_str().to_owned(),
        waited_ms: ms(approval.waited),
        scope: approval.scope.clone(),
        reason: approval.reason.clone(),
        warnings: approval.warnings.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_answer_with_every_patch_landed_is_ok() {
        assert_eq!(Stop::Answered.status(true), TurnStatus::Ok);
        assert_eq!(Stop::Answered.status(false), TurnStatus::Incomplete);
        for stop in [
            Stop::EmptyAnswer,
            Stop::ModelFailed,
            Stop::MaxTurns,
            Stop::Interrupted,
        ] {
            assert_eq!(stop.status(true), TurnStatus::Error, "{stop:?}");
            assert_eq!(stop.status(false), TurnStatus::Error, "{stop:?}");
        }
        assert_eq!(Stop::Answered.heading(TurnStatus::Incomplete), "incomplete");
        assert_eq!(
            Stop::MaxTurns.heading(TurnStatus::Error),
            "error: max turns"
        );
    }

    fn wrote(mode_before: Option<FileMode>, mode_after: Option<FileMode>) -> Effect {
        Effect::Wrote {
            files: vec![FileChange {
                path: "greet.sh".to_owned(),
                before: mode_before.map(|_| crate::authority::journal::content_hash(b"a")),
                after: mode_after.map(|_| crate::authority::journal::content_hash(b"a")),
                mode_before,
                mode_after,
                added: 0,
                removed: 0,
            }],
        }
    }

    #[test]
    fn ledger_lines_name_every_mode_change_and_a_new_executable() {
        use FileMode::{Executable, Regular};
        // `2e65efe2a1` is the short blob id of the fixture's content, `a`.
        let line = |before, after| describe_effect(&wrote(before, after));
        assert_eq!(
            line(Some(Regular), Some(Executable)),
            "wrote greet.sh 2e65efe2a1 -> 2e65efe2a1, mode 100644 -> 100755"
        );
        assert_eq!(
            line(Some(Executable), Some(Regular)),
            "wrote greet.sh 2e65efe2a1 -> 2e65efe2a1, mode 100755 -> 100644"
        );
        assert_eq!(
            line(None, Some(Executable)),
            "wrote greet.sh absent -> 2e65efe2a1, mode 100755"
        );
        assert_eq!(
            line(Some(Regular), Some(Regular)),
            "wrote greet.sh 2e65efe2a1 -> 2e65efe2a1"
        );
        assert_eq!(
            line(None, Some(Regular)),
            "wrote greet.sh absent -> 2e65efe2a1"
        );
        assert_eq!(
            line(Some(Executable), None),
            "wrote greet.sh 2e65efe2a1 -> absent"
        );
        let Event::Effect { files, .. } =
            effect_event("c1", &wrote(Some(Regular), Some(Executable)))
        else {
            panic!("an effect event");
        };
        let json = serde_json::to_value(&files[0]).unwrap_or_default();
        assert_eq!(json["mode_before"], "100644");
        assert_eq!(json["mode_after"], "100755");
    }
}
