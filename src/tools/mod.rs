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
mod list_files;
mod run_command;
mod search_text;
pub mod symbols;
pub mod text;
mod view_slice;
pub mod walk;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Config;
use crate::project::{BoundaryError, Project};
use approval::{Approver, NobodyToAsk};

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
    /// Whether it can run in this session, or why not (then it is not offered to the
    /// model, and a call to it is refused with that reason).
    pub available: fn(&Toolbox) -> Result<(), String>,
    /// Runs it on already-parsed JSON arguments.
    pub run: fn(&Toolbox, Value) -> Result<String, ToolError>,
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
        }
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
    serde_json::from_value(args).map_err(|e| ToolError::BadArguments(format!("{tool}: {e}")))
}
