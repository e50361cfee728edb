//! PLACEHOLDER: the in-process tree-sitter symbol index is being written.

use crate::project::{Project, ProjectPath};
use crate::tools::ToolError;

/// One definition found in the project.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Definition {
    /// Path relative to the project root.
    pub path: String,
    /// 1-based line of the name.
    pub line: usize,
    /// The symbol's name.
    pub name: String,
    /// Universal Ctags kind name.
    pub kind: &'static str,
}

/// The answer to one lookup.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Lookup {
    /// Definitions, sorted by path then line, at most `limit` of them.
    pub definitions: Vec<Definition>,
    /// True when more definitions exist than were returned.
    pub truncated: bool,
}

/// The session's symbol index.
#[derive(Debug, Default)]
pub struct SymbolIndex {}

impl SymbolIndex {
    /// An empty index.
    pub fn new() -> SymbolIndex {
        SymbolIndex {}
    }

    /// Finds definitions named exactly `name`.
    pub fn lookup(
        &self,
        _project: &Project,
        _name: &str,
        _limit: usize,
    ) -> Result<Lookup, ToolError> {
        Err(ToolError::Fault("find_symbol is not built yet".to_owned()))
    }

    /// Drops everything cached (the REPL's `/tags`).
    pub fn clear(&self) {}

    /// Forgets one file, after metron itself changed it.
    pub fn invalidate(&self, _path: &ProjectPath) {}
}
