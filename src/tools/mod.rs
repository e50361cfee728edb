//! The tool surface: everything the model can do to the project, described in one registry.
//!
//! Each tool is one file with a [`ToolSpec`] (name, description, JSON schema, and what it
//! may touch) and a function. [`REGISTRY`] lists them; adding a tool is one entry there plus
//! its file. Tools receive a [`Toolbox`] (the project boundary plus the budgets) and return
//! the exact text the model will read.
//!
//! Errors come in three kinds ([`ToolError`]): bad arguments, refusals and failures the
//! model can correct (both go back to it as text), and faults of the environment.

mod find_symbol;
mod list_files;
mod search_text;
pub mod symbols;
pub mod text;
mod view_slice;
pub mod walk;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::config::Config;
use crate::project::{BoundaryError, Project};

pub use find_symbol::find_symbol;
pub use list_files::list_files;
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

/// What every tool runs against: the project boundary, the budgets, and the symbol index
/// (which lives as long as the session, so repeated lookups are cheap).
#[derive(Debug)]
pub struct Toolbox {
    /// The project and its boundary.
    pub project: Project,
    /// The budgets.
    pub budgets: Budgets,
    /// The in-process symbol index behind find_symbol.
    pub symbols: symbols::SymbolIndex,
}

impl Toolbox {
    /// A toolbox over `project` with the given budgets.
    pub fn new(project: Project, budgets: Budgets) -> Toolbox {
        Toolbox {
            project,
            budgets,
            symbols: symbols::SymbolIndex::new(),
        }
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
