//! The tool surface: everything the model can do to the project, described in one registry.
//!
//! Each tool is one file with a [`ToolSpec`] (name, description, JSON schema, and what it
//! may touch) and a function. [`REGISTRY`] lists them; adding a tool is one entry there plus
//! its file. Tools receive a [`Toolbox`] (the project boundary plus the budgets) and return
//! the exact text the model will read.
//!
//! Errors come in three kinds ([`ToolError`]): bad arguments, refusals and failures the
//! model can correct (both go back to it as text), and faults of the environment.

pub mod apply_patch;
pub mod approval;
mod find_symbol;
pub mod journal;
mod list_files;
pub mod revisions;
mod run_command;
mod search_text;
pub mod symbols;
pub mod text;
mod view_slice;
pub mod walk;

use serde::de::DeserializeOwned;
use serde_json::Value;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::project::{BoundaryError, Project, ProjectPath};
use approval::{Approver, Decision, NobodyToAsk, Request};
use journal::{ApprovalOutcome, ApprovalRecord, ApprovalSource, Effect, Journal};

/// Locks a mutex, carrying on after a panic elsewhere (the data is append-only records).
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

pub use find_symbol::find_symbol;
pub use list_files::list_files;
pub use run_command::run_command;
pub use search_text::search_text;
pub use view_slice::view_slice;

/// Every tool name metron knows, including tools that may be withheld at run time.
/// `disabled_tools` is checked against this list.
pub const TOOL_NAMES: [&str; 6] = [
    "list_files",
    "find_symbol",
    "search_text",
    "view_slice",
    "apply_patch",
    "run_command",
];

/// What a tool may touch. Shown to the person, and used to decide what needs approval.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// Reads files beneath the project root.
    Read,
    /// Changes files beneath the project root.
    Write,
    /// Runs a program.
    Execute,
}

/// One tool, as the model and the person see it.
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: &'static str,
    /// One or two sentences for the model: what it answers and its limits.
    pub description: &'static str,
    /// The JSON schema of its arguments object, as compact JSON text. Sent with every
    /// request, so every byte here is paid for on every turn.
    pub parameters: &'static str,
    /// What it may touch.
    pub access: Access,
    /// Where it may act, in words (`run_command` adds the allowlisted prefixes at run
    /// time). Every tool's result is also sent to the model endpoint; see
    /// [`ToolSpec::capabilities`].
    pub scope: &'static str,
    /// Whether it can run in this session, or why not (then it is not offered to the
    /// model, and a call to it is refused with that reason).
    pub available: fn(&Toolbox) -> Result<(), String>,
    /// Runs it on already-parsed JSON arguments.
    pub run: fn(&Toolbox, Value) -> Result<String, ToolError>,
}

impl Access {
    /// The word shown to the person.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Execute => "execute",
        }
    }
}

impl ToolSpec {
    /// What this tool may do and where, as shown by `/config`: its access, its scope
    /// (with the allowlist for `run_command`), and the fact that its result leaves
    /// metron for the model endpoint.
    pub fn capabilities(&self, toolbox: &Toolbox) -> String {
        let mut scope = self.scope.to_owned();
        if self.access == Access::Execute && !toolbox.policy.allowed_commands.is_empty() {
            let prefixes: Vec<String> = toolbox
                .policy
                .allowed_commands
                .iter()
                .map(|p| format!("`{}`", p.split_whitespace().collect::<Vec<_>>().join(" ")))
                .collect();
            scope = format!("{scope}: {}", prefixes.join(", "));
        }
        let asks = match self.access {
            Access::Read => "",
            Access::Write | Access::Execute => ", asks first",
        };
        format!(
            "{}{asks}; {scope}; result sent to the model endpoint",
            self.access.as_str()
        )
    }
}

impl std::fmt::Debug for ToolSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolSpec")
            .field("name", &self.name)
            .field("access", &self.access)
            .finish()
    }
}

/// The tools this build implements, in the order they are advertised.
pub static REGISTRY: &[&ToolSpec] = &[
    &list_files::SPEC,
    &find_symbol::SPEC,
    &search_text::SPEC,
    &view_slice::SPEC,
    &apply_patch::SPEC,
    &run_command::SPEC,
];

/// Looks a tool up by name.
pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    REGISTRY.iter().copied().find(|spec| spec.name == name)
}

/// Why a tool produced no result.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ToolError {
    /// The arguments do not fit the schema (a usage error when a person typed them).
    #[error("{0}")]
    BadArguments(String),
    /// A refusal or failure the model can act on: outside the project, bad regex, no file.
    #[error("{0}")]
    Refused(String),
    /// The environment is broken (an unreadable disk, an unexpected I/O error).
    #[error("{0}")]
    Fault(String),
}

impl From<BoundaryError> for ToolError {
    fn from(error: BoundaryError) -> Self {
        if error.is_model_fixable() {
            ToolError::Refused(error.to_string())
        } else {
            ToolError::Fault(error.to_string())
        }
    }
}

/// The budgets the read tools enforce, taken from [`Config`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budgets {
    /// Widest span view_slice reads.
    pub max_slice_lines: usize,
    /// Longest line any tool prints before clipping it.
    pub max_line_chars: usize,
    /// Total search_text matches.
    pub search_max_matches: usize,
    /// search_text matches per file.
    pub search_max_per_file: usize,
    /// Entries list_files and find_symbol print.
    pub list_max_entries: usize,
}

impl Budgets {
    /// Reads the budgets out of the effective settings.
    pub fn from_config(config: &Config) -> Budgets {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Budgets {
            max_slice_lines: size(config.max_slice_lines),
            max_line_chars: size(config.max_line_chars),
            search_max_matches: size(config.search_max_matches),
            search_max_per_file: size(config.search_max_per_file),
            list_max_entries: size(config.list_max_entries),
        }
    }
}

impl Default for Budgets {
    fn default() -> Self {
        Budgets::from_config(&Config::default())
    }
}

/// What the write and execute tools may do without asking, and their limits, taken from
/// [`Config`]. Only trusted layers can widen these (see `config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Apply patches without asking.
    pub auto_approve_patches: bool,
    /// Argv prefixes run_command may execute; empty withdraws the tool.
    pub allowed_commands: Vec<String>,
    /// Wall clock one command gets.
    pub command_timeout: std::time::Duration,
    /// Combined output a command returns, head and tail kept.
    pub max_command_output_bytes: usize,
    /// Environment variables passed to commands beyond the safe set.
    pub command_env_passthrough: Vec<String>,
}

impl Policy {
    /// Reads the policy out of the effective settings.
    pub fn from_config(config: &Config) -> Policy {
        Policy {
            auto_approve_patches: config.auto_approve_patches,
            allowed_commands: config.allowed_commands.clone(),
            command_timeout: std::time::Duration::from_secs(config.command_timeout_seconds),
            max_command_output_bytes: usize::try_from(config.max_command_output_bytes)
                .unwrap_or(usize::MAX),
            command_env_passthrough: config.command_env_passthrough.clone(),
        }
    }
}

impl Default for Policy {
    fn default() -> Self {
        Policy::from_config(&Config::default())
    }
}

/// The availability check of tools that can always run.
pub(crate) fn always_available(_: &Toolbox) -> Result<(), String> {
    Ok(())
}

/// What every tool runs against: the project boundary, the budgets and policy, the
/// person who approves changes, and the symbol index (which lives as long as the session,
/// so repeated lookups are cheap).
#[derive(Debug)]
pub struct Toolbox {
    /// The project and its boundary.
    pub project: Project,
    /// The budgets.
    pub budgets: Budgets,
    /// What may happen without asking, and the limits on commands.
    pub policy: Policy,
    /// Who says yes or no to writes and executions.
    pub approver: Box<dyn Approver>,
    /// The in-process symbol index behind find_symbol.
    pub symbols: symbols::SymbolIndex,
    /// What calls did since the agent last drained it (see [`journal`]).
    journal: Mutex<Journal>,
    /// Standing approvals the person granted in this session.
    standing: Mutex<Standing>,
    /// The revision of each file the model has read: what its patches are held to (see
    /// [`revisions`]).
    revisions: Mutex<revisions::Revisions>,
    /// The person pressed Ctrl-C at a question of the current turn.
    cancelled: AtomicBool,
}

/// Standing approvals: the person answered `a` at a question.
#[derive(Debug, Default)]
struct Standing {
    /// Every file of every patch approved in this session.
    approved_files: BTreeSet<String>,
    /// `a` was answered at a patch question: patches touching only `approved_files` go
    /// ahead without asking.
    patches: bool,
    /// `allowed_commands` entries approved with `a`.
    command_prefixes: BTreeSet<String>,
}

impl Standing {
    /// The scope of the standing approval that covers `request`, if one does.
    fn covering(&self, request: &Request<'_>) -> Option<String> {
        match request {
            Request::Patch { files, .. } => (self.patches
                && !files.is_empty()
                && files.iter().all(|f| self.approved_files.contains(f)))
            .then(|| request.standing_scope()),
            Request::Command { prefix, .. } => self
                .command_prefixes
                .contains(*prefix)
                .then(|| request.standing_scope()),
        }
    }

    /// Records an approval, and a standing grant when the person answered `a`.
    fn approved(&mut self, request: &Request<'_>, for_session: bool) {
        match request {
            Request::Patch { files, .. } => {
                self.approved_files.extend(files.iter().cloned());
                self.patches |= for_session;
            }
            Request::Command { prefix, .. } => {
                if for_session {
                    self.command_prefixes.insert((*prefix).to_owned());
                }
            }
        }
    }

    fn scopes(&self) -> Vec<String> {
        let mut scopes = Vec::new();
        if self.patches {
            let files: Vec<_> = self.approved_files.iter().map(String::as_str).collect();
            scopes.push(format!(
                "patches that touch only files already approved in this session (now: {})",
                files.join(", ")
            ));
        }
        for prefix in &self.command_prefixes {
            scopes.push(format!("commands starting with `{prefix}`"));
        }
        scopes
    }
}

impl Toolbox {
    /// A toolbox over `project` with the given budgets, the default policy, and nobody to
    /// approve changes (so writes and executions fail closed until an approver is set).
    pub fn new(project: Project, budgets: Budgets) -> Toolbox {
        Toolbox {
            project,
            budgets,
            policy: Policy::default(),
            approver: Box::new(NobodyToAsk),
            symbols: symbols::SymbolIndex::new(),
            journal: Mutex::default(),
            standing: Mutex::default(),
            revisions: Mutex::default(),
            cancelled: AtomicBool::new(false),
        }
    }

    /// Records that the model was shown lines of `path` read from `bytes` (the whole
    /// file, as read), and how; a later patch to it is held to this revision.
    pub fn record_read(&self, path: &ProjectPath, bytes: &[u8], how: impl Into<String>) {
        let key = revisions::key_for(&self.project, path);
        lock(&self.revisions).record_bytes(&key, bytes, how);
    }

    /// The revisions the model has read, for apply_patch's precondition and for displays
    /// of what the model has seen. Hold the guard briefly: tools lock it too.
    pub fn revisions(&self) -> MutexGuard<'_, revisions::Revisions> {
        lock(&self.revisions)
    }

    /// Asks whether a write or an execution may go ahead: a standing approval of the
    /// session answers first, otherwise the approver. The decision, who made it and how
    /// long it took are journaled. `ApprovedForSession` comes back as `Approved` (the
    /// grant is kept here), and `Interrupted` as `Declined` (the turn is marked cancelled).
    pub fn ask(&self, request: &Request<'_>) -> Decision {
        let covered = lock(&self.standing).covering(request);
        if let Some(scope) = covered {
            lock(&self.standing).approved(request, false);
            self.journal_approval(ApprovalRecord {
                source: ApprovalSource::Standing,
                outcome: ApprovalOutcome::Yes,
                waited: Duration::ZERO,
                scope: Some(scope),
            });
            return Decision::Approved;
        }
        let started = Instant::now();
        let decision = self.approver.decide(request);
        let waited = started.elapsed();
        let (outcome, scope) = match &decision {
            Decision::Approved => (ApprovalOutcome::Yes, None),
            Decision::ApprovedForSession => (
                ApprovalOutcome::YesForSession,
                Some(request.standing_scope()),
            ),
            Decision::Declined | Decision::Interrupted => (ApprovalOutcome::No, None),
            Decision::Unanswerable(_) => (ApprovalOutcome::Unanswerable, None),
        };
        if matches!(decision, Decision::Approved | Decision::ApprovedForSession) {
            lock(&self.standing).approved(request, decision == Decision::ApprovedForSession);
        }
        self.journal_approval(ApprovalRecord {
            source: self.approver.source(),
            outcome,
            waited,
            scope,
        });
        match decision {
            Decision::ApprovedForSession => Decision::Approved,
            Decision::Interrupted => {
                self.cancelled.store(true, Ordering::SeqCst);
                Decision::Declined
            }
            other => other,
        }
    }

    /// A new turn starts: no question of it has been interrupted yet.
    pub fn start_turn(&self) {
        self.cancelled.store(false, Ordering::SeqCst);
    }

    /// The person pressed Ctrl-C at a question of this turn: the turn is being cancelled,
    /// so the calls left in the model's reply must not run (a standing approval would
    /// otherwise let one through without asking).
    pub fn turn_cancelled(&self) -> bool {
        self.cancelled.load(Ordering::SeqCst)
    }

    /// Journals an approval given by policy rather than by a question (for example
    /// `auto_approve_patches` from the user's trusted config).
    pub fn journal_approval(&self, record: ApprovalRecord) {
        lock(&self.journal).approvals.push(record);
    }

    /// Journals an effect (a write, a command run, a conflict).
    pub fn journal_effect(&self, effect: Effect) {
        lock(&self.journal).effects.push(effect);
    }

    /// Takes everything journaled since the last call.
    pub fn take_journal(&self) -> Journal {
        std::mem::take(&mut *lock(&self.journal))
    }

    /// The standing approvals granted in this session, in words (for `/ledger`).
    pub fn standing_approvals(&self) -> Vec<String> {
        lock(&self.standing).scopes()
    }

    /// Replaces the policy.
    pub fn with_policy(mut self, policy: Policy) -> Toolbox {
        self.policy = policy;
        self
    }

    /// Replaces the approver.
    pub fn with_approver(mut self, approver: Box<dyn Approver>) -> Toolbox {
        self.approver = approver;
        self
    }

    /// The tools that can run in this session, in advertising order, and those that
    /// cannot with the reason (for `/config` and `--doctor`).
    pub fn availability(&self) -> Vec<(&'static ToolSpec, Result<(), String>)> {
        REGISTRY
            .iter()
            .map(|&spec| (spec, (spec.available)(self)))
            .collect()
    }

    /// Runs the named tool on JSON arguments, exactly as a model's call would.
    pub fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        let spec = spec(name).ok_or_else(|| {
            ToolError::BadArguments(format!(
                "there is no tool `{name}`; the tools are {}",
                REGISTRY
                    .iter()
                    .map(|s| s.name)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        (spec.available)(self).map_err(ToolError::Refused)?;
        (spec.run)(self, args)
    }
}

/// Parses a tool's arguments object, turning serde's complaint into one readable line.
pub(crate) fn parse_args<T: DeserializeOwned>(tool: &str, args: Value) -> Result<T, ToolError> {
    let args = if args.is_null() {
        Value::Object(Default::default())
    } else {
        args
    };
    if !args.is_object() {
        return Err(ToolError::BadArguments(format!(
            "{tool}: arguments must be a JSON object, got {args}"
        )));
    }
    match T::deserialize(&args) {
        Ok(parsed) => Ok(parsed),
        Err(e) => match coerce_to_schema(tool, &args) {
            Some(fixed) => T::deserialize(&fixed).ok(),
            None => None,
        }
        .ok_or_else(|| ToolError::BadArguments(format!("{tool}: {e}"))),
    }
}

/// Arguments with values of the wrong JSON type converted where the meaning is plain:
/// `"10"` for an integer, `10` for a string. Small models do this often (Ollama does
/// not check arguments against the schema), and a refusal would cost a round trip for
/// nothing. `None` when nothing could be converted.
pub(crate) fn coerce_to_schema(tool: &str, args: &Value) -> Option<Value> {
    let schema: Value = serde_json::from_str(spec(tool)?.parameters).ok()?;
    let properties = schema.get("properties")?.as_object()?;
    let mut fixed = args.as_object()?.clone();
    let mut changed = false;
    for (name, value) in &mut fixed {
        let wanted = properties.get(name).and_then(|p| p.get("type"));
        let converted = match (wanted.and_then(Value::as_str), &*value) {
            (Some("integer"), Value::String(text)) => {
                text.trim().parse::<i64>().ok().map(Value::from)
            }
            (Some("string"), Value::Number(number)) => Some(Value::String(number.to_string())),
            _ => None,
        };
        if let Some(converted) = converted {
            *value = converted;
            changed = true;
        }
    }
    changed.then_some(Value::Object(fixed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn arguments_of_the_wrong_json_type_are_converted_when_the_meaning_is_plain() {
        #[derive(Debug, serde::Deserialize, PartialEq)]
        struct Slice {
            path: String,
            start: i64,
            end: i64,
        }
        let parsed: Slice = parse_args(
            "view_slice",
            serde_json::json!({"path": "a.go", "start": " 3", "end": "9"}),
        )
        .expect("converted");
        assert_eq!(
            parsed,
            Slice {
                path: "a.go".into(),
                start: 3,
                end: 9
            }
        );
        #[derive(Debug, serde::Deserialize)]
        struct Symbol {
            symbol: String,
        }
        let parsed: Symbol =
            parse_args("find_symbol", serde_json::json!({"symbol": 404})).expect("converted");
        assert_eq!(parsed.symbol, "404");
        // Not plain: the original complaint stands.
        for args in [
            serde_json::json!({"path": "a.go", "start": "three", "end": 9}),
            serde_json::json!({"path": "a.go", "start": 1.5, "end": 9}),
            serde_json::json!({"path": ["a.go"], "start": 1, "end": 9}),
        ] {
            let err = parse_args::<Slice>("view_slice", args.clone())
                .err()
                .map(|e| e.to_string())
                .unwrap_or_default();
            assert!(err.starts_with("view_slice: invalid type"), "{args}: {err}");
        }
    }

    /// Answers from a script and counts the questions.
    #[derive(Debug)]
    struct Scripted {
        answers: Mutex<Vec<Decision>>,
        asked: AtomicUsize,
    }

    impl Approver for Scripted {
        fn decide(&self, _request: &Request<'_>) -> Decision {
            self.asked.fetch_add(1, Ordering::SeqCst);
            lock(&self.answers).remove(0)
        }
    }

    fn toolbox(answers: Vec<Decision>) -> (Toolbox, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let project = Project::open(dir.path(), true).unwrap_or_else(|e| panic!("{e}"));
        let toolbox = Toolbox::new(project, Budgets::default()).with_approver(Box::new(Scripted {
            answers: Mutex::new(answers),
            asked: AtomicUsize::new(0),
        }));
        (toolbox, dir)
    }

    fn patch<'a>(files: &'a [String]) -> Request<'a> {
        Request::Patch {
            summary: "",
            diff: b"",
            files,
        }
    }

    #[test]
    fn a_standing_patch_approval_covers_only_files_already_approved() {
        let (toolbox, _dir) = toolbox(vec![
            Decision::Approved,
            Decision::ApprovedForSession,
            Decision::Declined,
        ]);
        let a = vec!["a.go".to_owned()];
        let b = vec!["b.go".to_owned()];
        let ab = vec!["a.go".to_owned(), "b.go".to_owned()];
        let c = vec!["a.go".to_owned(), "c.go".to_owned()];
        assert_eq!(toolbox.ask(&patch(&a)), Decision::Approved);
        assert_eq!(toolbox.ask(&patch(&b)), Decision::Approved); // `a`: standing from now on
        assert_eq!(toolbox.ask(&patch(&ab)), Decision::Approved); // not asked
        assert_eq!(toolbox.ask(&patch(&c)), Decision::Declined); // c.go is new: asked
        let journal = toolbox.take_journal();
        let sources: Vec<_> = journal
            .approvals
            .iter()
            .map(|r| (r.source, r.outcome))
            .collect();
        assert_eq!(
            sources,
            [
                (ApprovalSource::Person, ApprovalOutcome::Yes),
                (ApprovalSource::Person, ApprovalOutcome::YesForSession),
                (ApprovalSource::Standing, ApprovalOutcome::Yes),
                (ApprovalSource::Person, ApprovalOutcome::No),
            ]
        );
        assert_eq!(toolbox.standing_approvals().len(), 1);
    }

    #[test]
    fn a_standing_command_approval_covers_exactly_its_prefix() {
        let (toolbox, _dir) = toolbox(vec![Decision::ApprovedForSession, Decision::Declined]);
        let argv = vec!["/usr/bin/go".to_owned(), "test".to_owned()];
        let ask = |prefix: &str| {
            toolbox.ask(&Request::Command {
                argv: &argv,
                prefix,
            })
        };
        assert_eq!(ask("go test"), Decision::Approved);
        assert_eq!(ask("go test"), Decision::Approved); // standing
        assert_eq!(ask("go vet"), Decision::Declined); // another prefix: asked
        assert_eq!(
            toolbox.standing_approvals(),
            ["commands starting with `go test`"]
        );
    }
}
