//! The tool surface: everything the model can do to the project, described in one registry.
//!
//! Each tool is one file with a [`ToolSpec`]: its name, description and JSON schema, what
//! it may touch, when it is available, how its call is carried out, and how the ledger and
//! history describe it. [`REGISTRY`] lists them; adding a tool is one entry there plus its
//! file (docs/development.md lists everything else a new tool may touch: nothing).
//!
//! A call runs through [`Toolbox::call`], the path every model call takes. Its arguments
//! are deserialised once into the tool's own typed struct, then:
//!
//! - a **read** tool ([`ReadTool`]) runs;
//! - a tool with **effects** ([`EffectTool`]) is two-phase: `plan` does no effect and
//!   returns the tool's own plan type (the canonical diff with its preconditions, or the
//!   resolved argv); [`Authority::authorize`] decides on the request the plan states;
//!   `execute` carries out only an approved plan.
//!
//! Every call returns a [`ToolResult`]: the text the model reads and a typed
//! [`Account`] of what happened, from which the person's lines and the evidence are
//! rendered. The Toolbox journals the effects an account reports; tools cannot.
//!
//! Errors come in four kinds ([`ToolError`]): bad arguments, refusals and failures the
//! model can correct (both go back to it as text), a patch stopped by a stale file, and
//! faults of the environment.

pub(crate) mod account;
pub(crate) mod apply_patch;
mod find_symbol;
pub(crate) mod list_files;
pub(crate) mod ordered;
pub(crate) mod run_command;
pub(crate) mod search_text;
pub mod symbols;
pub(crate) mod text;
pub(crate) mod view_slice;
pub(crate) mod walk;

use std::sync::{Arc, OnceLock};

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::authority::journal::Effect;
use crate::authority::revisions::Revision;
use crate::authority::{Approver, Authority, CancelToken, Request, Verdict};
use crate::config::Config;
use crate::project::{BoundaryError, Project, ProjectPath};
pub(crate) use account::{Account, ToolResult};

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

impl Access {
    /// The word shown to the person.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Execute => "execute",
        }
    }
}

/// A tool that only reads: one call, no effect.
pub(crate) trait ReadTool: Sync {
    /// Its arguments, as the schema describes them.
    type Args: DeserializeOwned;
    /// Answers one call.
    fn run(&self, context: &ToolContext<'_>, args: Self::Args) -> Result<ToolResult, ToolError>;
}

/// A tool with effects: planned without effect, decided by authority, then executed.
pub(crate) trait EffectTool: Sync {
    /// Its arguments, as the schema describes them.
    type Args: DeserializeOwned;
    /// Exactly what would happen, worked out before anything happens.
    type Plan: Planned;
    /// Checks the arguments and works out the plan; no effect.
    fn plan(&self, context: &ToolContext<'_>, args: Self::Args) -> Result<Self::Plan, ToolError>;
    /// Carries out an approved plan; its account names every effect.
    fn execute(&self, context: &ToolContext<'_>, plan: Self::Plan)
    -> Result<ToolResult, ToolError>;
}

/// A plan waiting for authority's verdict.
pub(crate) trait Planned {
    /// What the person (or the approver standing in) is asked about.
    fn request(&self) -> Request<'_>;
    /// What the model is told when the verdict is not a yes.
    fn refused(&self, verdict: Verdict) -> ToolError;
}

/// A registry entry's way of carrying out a call, whatever its argument and plan types.
pub(crate) trait Dispatch: Sync {
    /// Parses the arguments and runs the call (for an effect tool: plan, authority,
    /// execute).
    fn call(
        &self,
        tool: &str,
        context: &ToolContext<'_>,
        args: Value,
    ) -> Result<ToolResult, ToolError>;
}

/// A [`ReadTool`] as a registry entry.
pub(crate) struct Reads<T>(pub(crate) T);

/// An [`EffectTool`] as a registry entry.
pub(crate) struct Effects<T>(pub(crate) T);

impl<T: ReadTool> Dispatch for Reads<T> {
    fn call(
        &self,
        tool: &str,
        context: &ToolContext<'_>,
        args: Value,
    ) -> Result<ToolResult, ToolError> {
        self.0.run(context, parse_args(tool, args)?)
    }
}

impl<T: EffectTool> Dispatch for Effects<T> {
    fn call(
        &self,
        tool: &str,
        context: &ToolContext<'_>,
        args: Value,
    ) -> Result<ToolResult, ToolError> {
        let plan = self.0.plan(context, parse_args(tool, args)?)?;
        authorized(context, plan, |plan| self.0.execute(context, plan))
    }
}

/// Holds a plan up to authority and executes it only when approved.
fn authorized<P: Planned>(
    context: &ToolContext<'_>,
    plan: P,
    execute: impl FnOnce(P) -> Result<ToolResult, ToolError>,
) -> Result<ToolResult, ToolError> {
    match context.authority.authorize(&plan.request()) {
        Verdict::Approved => execute(plan),
        verdict => Err(plan.refused(verdict)),
    }
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
    pub(crate) available: fn(&ToolEnv) -> Result<(), String>,
    /// How a call is carried out.
    pub(crate) run: &'static dyn Dispatch,
    /// Its results are dropped from history once their turn ends (file slices: the model
    /// can read them again; carrying them costs every later request).
    pub(crate) purged_after_turn: bool,
    /// What a successful result showed the model, in words (`/context`).
    pub(crate) shown: fn(&Value) -> String,
    /// Its arguments in one line for `/ledger`; `None` prints the JSON.
    pub(crate) ledger_arguments: Option<fn(&Value) -> String>,
    /// The call's key argument in the person's outcome line (`Greet`, `greet.go 1-6`).
    pub(crate) subject: fn(&Value) -> String,
    /// The parsed schema (parsed once, on first use).
    pub(crate) schema: OnceLock<Value>,
}

impl ToolSpec {
    /// What this tool may do and where, as shown by `/config`: its access, its scope
    /// (with the allowlist for `run_command`), and the fact that its result leaves
    /// metron for the model endpoint.
    pub(crate) fn capabilities(&self, toolbox: &Toolbox) -> String {
        let mut scope = self.scope.to_owned();
        let limits = &toolbox.env.limits;
        if self.access == Access::Execute
            && !(limits.allowed_commands.is_empty() && limits.allowed_project_programs.is_empty())
        {
            let lists = crate::authority::admission::allowlists(
                &limits.allowed_commands,
                &limits.allowed_project_programs,
            );
            scope = format!("{scope}: {lists}");
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

    /// The argument schema as JSON.
    pub(crate) fn schema(&self) -> &Value {
        self.schema
            .get_or_init(|| serde_json::from_str(self.parameters).unwrap_or(Value::Null))
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

/// Every tool name, in advertising order (what `disabled_tools` may name).
pub(crate) fn names() -> Vec<&'static str> {
    REGISTRY.iter().map(|spec| spec.name).collect()
}

/// One string argument of a call, unquoted and cut to one short line (empty when missing),
/// for the person's outcome line.
pub(crate) fn plain_arg(arguments: &Value, key: &str) -> String {
    match arguments.get(key) {
        Some(Value::String(s)) => text::one_line(s, 60),
        Some(Value::Null) | None => String::new(),
        Some(other) => other.to_string(),
    }
}

/// One string argument of a call as the outcome line shows it: [`plain_arg`], quoted
/// where it holds anything but plain path characters ([`crate::quoting::quoted`]), so an argument
/// cannot imitate the rest of the line.
pub(crate) fn subject_arg(arguments: &Value, key: &str) -> String {
    let plain = plain_arg(arguments, key);
    if plain.is_empty() {
        return plain;
    }
    crate::quoting::quoted(&plain).into_owned()
}

pub(crate) use account::count;

/// One argument of a call, for the ledger's descriptions: strings quoted and cut to one
/// short line, anything else as JSON, `?` when missing.
pub(crate) fn arg(arguments: &Value, key: &str) -> String {
    match arguments.get(key) {
        Some(Value::String(s)) => format!("`{}`", text::one_line(s, 60)),
        Some(other) => other.to_string(),
        None => "?".to_owned(),
    }
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
    /// A patch was not written because files it touches changed since the model read
    /// them; the message shows their current lines. The Toolbox journals the conflict.
    #[error("{message}")]
    Conflict {
        /// What the model reads.
        message: String,
        /// The files that changed.
        files: Vec<String>,
    },
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

/// The limits of the write and execute tools, taken from [`Config`]: what run_command may
/// run and how long, and the largest file apply_patch handles. Only trusted layers can
/// widen these (see `config`). Whether a patch needs asking is authority's, not here.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLimits {
    /// Argv prefixes run_command may execute; empty withdraws the tool (unless
    /// `allowed_project_programs` has entries).
    pub allowed_commands: Vec<String>,
    /// Programs inside the project (with argument prefixes) run_command may execute by
    /// path, such as `.venv/bin/pytest`; from the user's own config only.
    pub allowed_project_programs: Vec<String>,
    /// Wall clock one command gets.
    pub command_timeout: std::time::Duration,
    /// Combined output a command returns, head and tail kept.
    pub max_command_output_bytes: usize,
    /// Environment variables passed to commands beyond the safe set.
    pub command_env_passthrough: Vec<String>,
    /// Largest file apply_patch reads or writes.
    pub max_patch_file_bytes: u64,
    /// What commands may reach while they run (the `command_sandbox` keys).
    pub sandbox: crate::sandbox::SandboxSettings,
}

impl CommandLimits {
    /// Reads the limits out of the effective settings.
    pub fn from_config(config: &Config) -> CommandLimits {
        CommandLimits {
            allowed_commands: config.allowed_commands.clone(),
            allowed_project_programs: config.allowed_project_programs.clone(),
            command_timeout: std::time::Duration::from_secs(config.command_timeout_seconds),
            max_command_output_bytes: usize::try_from(config.max_command_output_bytes)
                .unwrap_or(usize::MAX),
            command_env_passthrough: config.command_env_passthrough.clone(),
            max_patch_file_bytes: config.max_patch_file_bytes,
            sandbox: crate::sandbox::SandboxSettings {
                mode: config.command_sandbox,
                writable_paths: config.command_writable_paths.clone(),
                protected_paths: config.command_protected_paths.clone(),
                network: config.command_network.clone(),
                git_writes: config.command_git_writes.clone(),
            },
        }
    }
}

impl Default for CommandLimits {
    fn default() -> Self {
        CommandLimits::from_config(&Config::default())
    }
}

/// The availability check of tools that can always run.
pub(crate) fn always_available(_: &ToolEnv) -> Result<(), String> {
    Ok(())
}

/// What the tools work with, fixed for the session: the project boundary, the budgets,
/// the command limits, and the symbol index (whose cache lives as long as the session, so
/// repeated lookups are cheap; it is never stale).
#[derive(Debug)]
pub(crate) struct ToolEnv {
    /// The project and its boundary (shared with the symbol index, which belongs to it).
    pub(crate) project: Arc<Project>,
    /// The budgets.
    pub(crate) budgets: Budgets,
    /// The limits on commands and patches.
    pub(crate) limits: CommandLimits,
    /// The in-process symbol index behind find_symbol.
    pub(crate) symbols: symbols::SymbolIndex,
    /// The session's private temp dir for commands, removed when the session ends.
    pub(crate) command_temp: crate::sandbox::SessionTemp,
}

/// What one call sees: the environment, the session's revisions and journal (through
/// authority), and the person's Ctrl-C.
pub(crate) struct ToolContext<'a> {
    pub(crate) env: &'a ToolEnv,
    authority: &'a Authority,
}

impl ToolContext<'_> {
    /// What is running now, for the front end's elapsed-time line.
    pub(crate) fn activity(&self) -> &crate::authority::activity::Activity {
        self.authority.activity()
    }

    /// The session's Ctrl-C token (a running command polls it).
    pub(crate) fn cancel_token(&self) -> &CancelToken {
        self.authority.cancel_token()
    }

    /// Records an already computed revision under `key`.
    pub(crate) fn record_revision(
        &self,
        key: &ProjectPath,
        hash: crate::authority::journal::BlobId,
        how: impl Into<String>,
    ) {
        self.authority.record_revision(key, hash, how);
    }

    /// Forgets the revision of `path`.
    pub(crate) fn forget_revision(&self, path: &str) {
        self.authority.forget_revision(path);
    }

    /// The revision the model last read of `path`.
    pub(crate) fn revision(&self, path: &str) -> Option<Revision> {
        self.authority.revision(path)
    }

    /// Whether `current` is still what the model read of `path`.
    pub(crate) fn is_current(&self, path: &str, current: Option<&[u8]>) -> Option<bool> {
        self.authority.is_current(path, current)
    }
}

/// The tools of one session: the fixed environment plus the authority every call with an
/// effect answers to. [`Toolbox::call`] is the path a model's call takes.
#[derive(Debug)]
pub struct Toolbox {
    env: ToolEnv,
    authority: Authority,
}

impl Toolbox {
    /// A toolbox over `project` with the given budgets, the default limits, and nobody to
    /// approve changes (so writes and executions fail closed until an approver is set).
    pub fn new(project: Project, budgets: Budgets) -> Toolbox {
        let project = Arc::new(project);
        Toolbox {
            env: ToolEnv {
                symbols: symbols::SymbolIndex::new(Arc::clone(&project)),
                project,
                budgets,
                limits: CommandLimits::default(),
                command_temp: crate::sandbox::SessionTemp::default(),
            },
            authority: Authority::new(
                Box::new(crate::authority::approval::NobodyToAsk),
                false,
                CancelToken::new(),
            ),
        }
    }

    /// Replaces the limits (before the session starts).
    pub fn with_limits(mut self, limits: CommandLimits) -> Toolbox {
        self.env.limits = limits;
        self
    }

    /// Applies patches without asking (`auto_approve_patches` from a trusted config, in
    /// the front ends where it may apply; before the session starts).
    pub fn with_auto_approve_patches(mut self, auto: bool) -> Toolbox {
        self.authority = self.authority.rebuilt(None, Some(auto), None);
        self
    }

    /// Replaces the approver (before the session starts).
    pub fn with_approver(mut self, approver: Box<dyn Approver>) -> Toolbox {
        self.authority = self.authority.rebuilt(Some(approver), None, None);
        self
    }

    /// Uses `cancel` as the session's Ctrl-C (the front end raises it).
    pub(crate) fn with_cancel(mut self, cancel: CancelToken) -> Toolbox {
        self.authority = self.authority.rebuilt(None, None, Some(cancel));
        self
    }

    /// For a toolbox that only reports which tools are offered (the doctor): finding a
    /// supported source file starts no find_symbol query compile, which would take a
    /// core for up to a few hundred milliseconds for a lookup that never comes.
    pub(crate) fn for_availability_only(mut self) -> Toolbox {
        self.env.symbols =
            symbols::SymbolIndex::for_availability_only(Arc::clone(&self.env.project));
        self
    }

    /// The project and its boundary.
    pub fn project(&self) -> &Project {
        &self.env.project
    }

    /// The session's symbol index.
    pub fn symbols(&self) -> &symbols::SymbolIndex {
        &self.env.symbols
    }

    /// The session's authority (grants, revisions, journal, Ctrl-C).
    pub fn authority(&self) -> &Authority {
        &self.authority
    }

    /// The tools that can run in this session, in advertising order, and those that
    /// cannot with the reason (for `/config` and `--doctor`).
    pub fn availability(&self) -> Vec<(&'static ToolSpec, Result<(), String>)> {
        REGISTRY
            .iter()
            .map(|&spec| (spec, (spec.available)(&self.env)))
            .collect()
    }

    /// Runs the named tool on JSON arguments, exactly as a model's call would: a read
    /// tool runs; a tool with effects plans, authority decides, and only an approved plan
    /// is executed.
    pub(crate) fn run(&self, name: &str, args: Value) -> Result<ToolResult, ToolError> {
        let spec = spec(name).ok_or_else(|| {
            ToolError::BadArguments(format!(
                "there is no tool `{name}`; the tools are {}",
                names().join(", ")
            ))
        })?;
        (spec.available)(&self.env).map_err(ToolError::Refused)?;
        let result = spec.run.call(spec.name, &self.context(), args);
        self.journal(&result);
        result
    }

    /// [`Toolbox::run`] as the model reads it: the text, or the refusal (a conflict is
    /// a refusal to the model). For tests, benches and fuzzing outside the crate.
    pub fn call(&self, name: &str, args: Value) -> Result<String, ToolError> {
        match self.run(name, args) {
            Ok(result) => Ok(result.text),
            Err(ToolError::Conflict { message, .. }) => Err(ToolError::Refused(message)),
            Err(error) => Err(error),
        }
    }

    /// Journals what a call's result says happened: the effect of its account (and the
    /// applied patch behind `/diff` and `/undo`), or the conflict that stopped a patch.
    /// The only place evidence of a tool's effect is made.
    fn journal(&self, result: &Result<ToolResult, ToolError>) {
        match result {
            Ok(result) => {
                if let Some(effect) = result.account.effect() {
                    self.authority.journal_effect(effect);
                }
                if let Account::Wrote { applied, .. } = &result.account {
                    self.authority.record_applied(applied.clone());
                }
            }
            Err(ToolError::Conflict { files, .. }) => {
                self.authority.journal_effect(Effect::Conflict {
                    files: files.clone(),
                });
            }
            Err(_) => {}
        }
    }

    fn context(&self) -> ToolContext<'_> {
        ToolContext {
            env: &self.env,
            authority: &self.authority,
        }
    }

    /// `/undo`: reverts the newest patch applied in this session, if every file it touched
    /// still holds what metron wrote.
    pub(crate) fn undo(&self) -> Result<apply_patch::undo::Undone, String> {
        apply_patch::undo::undo_newest(&self.env, &self.authority)
    }

    /// `/diff`: this session's writes as one unified diff.
    pub(crate) fn session_diff(&self) -> Result<Vec<u8>, String> {
        apply_patch::undo::session_diff(&self.env, &self.authority)
    }

    /// run_command's whole path (plan, authority, execute) with `parent_env` standing for
    /// metron's own environment, so tests can control PATH and the variables passed on.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn run_command_with_env(
        &self,
        command: &str,
        parent_env: &[(std::ffi::OsString, std::ffi::OsString)],
    ) -> Result<ToolResult, ToolError> {
        let context = self.context();
        let plan = run_command::plan_command(&self.env, command, parent_env)?;
        let result = authorized(&context, plan, |plan| run_command::execute(&context, plan));
        self.journal(&result);
        result
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
    let properties = spec(tool)?.schema().get("properties")?.as_object()?;
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

    /// A value of the JSON type a schema property names.
    fn sample(property: &Value) -> Value {
        match property.get("type").and_then(Value::as_str) {
            Some("integer") => Value::from(1),
            Some("boolean") => Value::from(false),
            _ => Value::from("x"),
        }
    }

    /// Each hand-written schema agrees with the argument struct its tool parses: every
    /// property is accepted with its type, every required one is required, and nothing
    /// else is accepted. Checked through [`Toolbox::call`], the model's path.
    #[test]
    fn every_schema_agrees_with_its_argument_struct() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        // A source file, so find_symbol is offered.
        for name in ["a.go", "a.rs"] {
            std::fs::write(dir.path().join(name), "").unwrap_or_else(|e| panic!("{e}"));
        }
        let project = Project::open(dir.path(), true).unwrap_or_else(|e| panic!("{e}"));
        let toolbox = Toolbox::new(project, Budgets::default()).with_limits(CommandLimits {
            allowed_commands: vec!["metron-no-such-program".to_owned()],
            ..CommandLimits::default()
        });
        let is_bad_arguments = |name: &str, args: Value| {
            matches!(toolbox.call(name, args), Err(ToolError::BadArguments(_)))
        };
        for spec in REGISTRY {
            let schema = spec.schema();
            assert_eq!(
                schema.get("type"),
                Some(&Value::from("object")),
                "{}",
                spec.name
            );
            let properties = schema
                .get("properties")
                .and_then(Value::as_object)
                .unwrap_or_else(|| panic!("{}: no properties", spec.name));
            let required: Vec<&str> = schema
                .get("required")
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            for name in &required {
                assert!(properties.contains_key(*name), "{}: {name}", spec.name);
            }
            let full: serde_json::Map<String, Value> = properties
                .iter()
                .map(|(name, property)| (name.clone(), sample(property)))
                .collect();
            assert!(
                !is_bad_arguments(spec.name, Value::Object(full.clone())),
                "{}: the schema's own properties are refused",
                spec.name
            );
            for name in &required {
                let mut missing = full.clone();
                missing.remove(*name);
                assert!(
                    is_bad_arguments(spec.name, Value::Object(missing)),
                    "{}: `{name}` is required by the schema but not by the struct",
                    spec.name
                );
            }
            let mut extra = full.clone();
            extra.insert("metron_unknown".to_owned(), Value::from(1));
            assert!(
                is_bad_arguments(spec.name, Value::Object(extra)),
                "{}: an argument outside the schema is accepted",
                spec.name
            );
        }
    }

    #[test]
    fn names_come_from_the_registry() {
        assert_eq!(
            names(),
            [
                "list_files",
                "find_symbol",
                "search_text",
                "view_slice",
                "apply_patch",
                "run_command"
            ]
        );
    }
}
