//! What a tool call produced: the text the model reads, and a typed account of what
//! happened.
//!
//! The person's outcome line, the turn's evidence, the ledger and the JSON events are all
//! rendered from the account, never from the text: text is for the model, and counting its
//! lines once made `list_files *.rs` report `1 file` for "No files match". The account of
//! an effect (files written, a command's exit) is handed to the [`Toolbox`], which
//! journals it; a tool cannot write evidence of its own.
//!
//! [`Toolbox`]: super::Toolbox

use std::time::Duration;

use crate::authority::applied::AppliedPatch;
use crate::authority::journal::{Effect, Exit, FileChange, TreeChanges};

/// A call's result: the model's text and the account of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolResult {
    /// What the model reads.
    pub(crate) text: String,
    /// What happened, typed.
    pub(crate) account: Account,
}

impl ToolResult {
    pub(crate) fn new(text: String, account: Account) -> ToolResult {
        ToolResult { text, account }
    }
}

/// What one call did, for everything the person and CI read about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Account {
    /// list_files: the paths listed, and whether the budget cut the listing.
    Listed {
        files: usize,
        truncated: bool,
        /// A glob narrowed the listing (an empty one then reads "no files match").
        glob: bool,
    },
    /// find_symbol: the definitions shown, where the first is, and whether the budget cut
    /// them.
    Definitions {
        found: usize,
        /// `greet.go:4`.
        first: Option<String>,
        truncated: bool,
    },
    /// search_text: the matching lines shown, in how many files, and what was cut.
    Matches {
        matches: usize,
        files: usize,
        /// The total budget cut the search.
        truncated: bool,
        /// The pattern was not a valid regex and was searched as plain text.
        literal: bool,
    },
    /// view_slice: the numbered lines shown.
    Slice { lines: usize },
    /// apply_patch wrote every file of a patch.
    Wrote {
        files: Vec<FileChange>,
        /// The contents before and after, for `/diff` and `/undo`.
        applied: AppliedPatch,
    },
    /// run_command ran a command to its end.
    Ran(CommandRecord),
}

/// A command that ran: how it ended, and what it reached and changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CommandRecord {
    /// The program (absolute path) and its arguments.
    pub(crate) argv: Vec<String>,
    pub(crate) exit: Exit,
    pub(crate) duration: Duration,
    /// What the sandbox let it reach; `None` when it ran unconfined.
    pub(crate) sandbox: Option<crate::sandbox::Summary>,
    /// What it changed in the project.
    pub(crate) changed: TreeChanges,
    /// The last lines of its output, for the person's outcome line.
    pub(crate) tail: Vec<String>,
}

impl Account {
    /// The effect to journal, for an account of one.
    pub(crate) fn effect(&self) -> Option<Effect> {
        match self {
            Account::Wrote { files, .. } => Some(Effect::Wrote {
                files: files.clone(),
            }),
            Account::Ran(run) => Some(Effect::Ran {
                argv: run.argv.clone(),
                exit: run.exit,
                duration: run.duration,
                sandbox: run.sandbox.clone(),
                changed: run.changed.clone(),
            }),
            _ => None,
        }
    }

    /// What a read call found, in a few words (`1 definition (greet.go:4)`, `no files
    /// match`); `None` for an effect, which the journal describes.
    pub(crate) fn summary(&self) -> Option<String> {
        Some(match *self {
            Account::Listed {
                files: 0,
                glob: true,
                ..
            } => "no files match".to_owned(),
            Account::Listed { files: 0, .. } => "no files".to_owned(),
            Account::Listed {
                files, truncated, ..
            } => with_cut(count(files, "file", "files"), truncated),
            Account::Definitions { found: 0, .. } => "no definition".to_owned(),
            Account::Definitions {
                found,
                ref first,
                truncated,
            } => {
                let more = if found > 1 { ", …" } else { "" };
                let cut = if truncated { ", truncated" } else { "" };
                format!(
                    "{} ({}{more}){cut}",
                    count(found, "definition", "definitions"),
                    first.as_deref().unwrap_or("?")
                )
            }
            Account::Matches {
                matches,
                files,
                truncated,
                literal,
            } => {
                let literal = if literal { " (as plain text)" } else { "" };
                if matches == 0 {
                    return Some(format!("no matches{literal}"));
                }
                format!(
                    "{} in {}{}{literal}",
                    count(matches, "match", "matches"),
                    count(files, "file", "files"),
                    if truncated { " (truncated)" } else { "" }
                )
            }
            Account::Slice { lines } => count(lines, "line", "lines"),
            Account::Wrote { .. } | Account::Ran(_) => return None,
        })
    }
}

fn with_cut(text: String, truncated: bool) -> String {
    if truncated {
        format!("{text} (truncated)")
    } else {
        text
    }
}

/// `1 file`, `2 files`: a count with its noun in the right number.
pub(crate) fn count(n: usize, one: &str, many: &str) -> String {
    if n == 1 {
        format!("1 {one}")
    } else {
        format!("{n} {many}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(files: usize, truncated: bool, glob: bool) -> Option<String> {
        Account::Listed {
            files,
            truncated,
            glob,
        }
        .summary()
    }

    #[test]
    fn an_empty_result_reads_as_empty() {
        assert_eq!(listed(0, false, true).as_deref(), Some("no files match"));
        assert_eq!(listed(0, false, false).as_deref(), Some("no files"));
        assert_eq!(listed(1, false, true).as_deref(), Some("1 file"));
        assert_eq!(
            listed(60, true, false).as_deref(),
            Some("60 files (truncated)")
        );
        let none = Account::Definitions {
            found: 0,
            first: None,
            truncated: false,
        };
        assert_eq!(none.summary().as_deref(), Some("no definition"));
    }

    #[test]
    fn matches_name_files_and_cuts() {
        let matches = Account::Matches {
            matches: 5,
            files: 2,
            truncated: false,
            literal: true,
        };
        assert_eq!(
            matches.summary().as_deref(),
            Some("5 matches in 2 files (as plain text)")
        );
    }
}
