//! The one walk of the project tree that list_files, search_text and find_symbol share.
//!
//! It applies the same filters as ripgrep: hidden files are skipped, `.gitignore` applies
//! inside a git repository, `.ignore` and `.rgignore` always apply, as do
//! `.git/info/exclude` and the global git excludes file. Symlinks are not followed, and the
//! walk is sorted by file name within each directory (ripgrep's `--sort path`), so output
//! is deterministic and a budgeted caller can stop as soon as it has enough.
//!
//! Git's internals are never walked, whatever the ignore rules say: every entry named
//! `.git` (in any letter case; a directory, a worktree's or submodule's `.git` file, a
//! nested repository's, or a symlink so named) is dropped by a filter on the walker
//! itself, before any ignore rule is consulted. An ignore file can re-include hidden
//! files (`!.*`, `!.git`), so the hidden-file rule alone does not keep `.git/config`
//! (credentials in remote URLs) away from the model; this filter does.
//!
//! The walker reads ignore files (and a worktree's `.git` file) by path, following
//! symlinks, whole, with no way to tell it otherwise. So before it enters a directory, the
//! directory's `.gitignore`, `.ignore`, `.rgignore` and `.git` are looked at through the
//! project handle, and a directory holding one that is a symlink, not a regular file (a
//! FIFO, a device) or larger than [`MAX_RULE_BYTES`] is not entered: the tools say which
//! directory they skipped and why ([`Skipped::notes`]). At the root, which cannot be
//! skipped, the tools refuse with the same reason ([`check_root`]). Otherwise
//! `.gitignore -> /dev/zero` aborted every walking tool on an allocation failure, and
//! `.gitignore -> ../outside/list` let the repository test which outside names exist.
//!
//! The walker lists directories by path itself, the one accepted exception to "only
//! `project/` touches files beneath the root": it never follows a symlink, and it only
//! yields names. Every file a tool reads from the walk is opened through the project
//! handle ([`Project::open_walked_file`] and friends), so a directory swapped for a
//! symlink between the listing and the open is caught there, and a file swapped for a
//! symlink, a FIFO or a device is refused at the open (`O_NOFOLLOW`, `O_NONBLOCK`, then
//! `fstat`) without blocking.

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use ignore::{DirEntry, Walk, WalkBuilder};

use super::ToolError;
use crate::project::{Project, ProjectDir, ProjectPath};

/// The largest ignore file (or `.git` file) the walker may read. Real ones are a few
/// kilobytes; the bound keeps a huge or endless one from exhausting memory.
const MAX_RULE_BYTES: u64 = 1 << 20;

/// The files in a directory that the walker reads when it enters it.
const RULE_FILES: [&str; 4] = [".gitignore", ".ignore", ".rgignore", ".git"];

/// Why the directory `dir` may not be entered, if it holds a rule file the walker must not
/// read: `None` when every one present is safe. A `.git` directory is fine (its internals
/// are never walked; only `info/exclude` is read from it).
fn unsafe_rule_file(dir: &ProjectDir) -> Option<(&'static str, &'static str)> {
    RULE_FILES.into_iter().find_map(|name| {
        let metadata = dir.symlink_metadata(name).ok()?;
        let file_type = metadata.file_type();
        let why = if file_type.is_symlink() {
            "is a symlink"
        } else if name == ".git" && file_type.is_dir() {
            return None;
        } else if !file_type.is_file() {
            "is not a regular file"
        } else if metadata.len() > MAX_RULE_BYTES {
            "is larger than 1 MiB"
        } else {
            return None;
        };
        Some((name, why))
    })
}

/// What a walking tool says about a rule file it would not read, with the next step.
fn rule_file_message(dir: &str, name: &str, why: &str) -> String {
    let shown = if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    };
    format!(
        "`{shown}` {why}; metron does not read ignore files that are symlinks, not regular files, or over 1 MiB, so that a repository cannot make it read outside the project or exhaust memory; replace it with a regular file"
    )
}

/// Refuses to walk a project whose root holds an unsafe rule file (see the module
/// documentation): the walker would read it before anything could be skipped.
pub(crate) fn check_root(project: &Project) -> Result<(), ToolError> {
    let root = project
        .open_dir("")
        .map_err(|e| ToolError::Fault(format!("cannot open the project root: {e}")))?;
    match unsafe_rule_file(&root) {
        Some((name, why)) => Err(ToolError::Refused(format!(
            "refused: {}; the walking tools cannot run until then (view_slice still reads files by name)",
            rule_file_message("", name, why)
        ))),
        None => Ok(()),
    }
}

/// Directories a walk did not enter because of an unsafe rule file, shared with the
/// walker's filter, which records them as it meets them.
#[derive(Debug, Clone, Default)]
pub(crate) struct Skipped(Arc<Mutex<Vec<(String, String)>>>);

impl Skipped {
    /// One note line per skipped directory, in walk order, for the tool's result.
    pub(crate) fn notes(&self) -> String {
        self.dirs()
            .iter()
            .map(|(dir, why)| format!("[skipped {dir}/: {why}]\n"))
            .collect()
    }

    /// Each skipped directory (relative to the root) with the reason, in walk order.
    pub(crate) fn dirs(&self) -> Vec<(String, String)> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn push(&self, dir: String, why: String) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((dir, why));
    }
}

/// A filter a tool adds to the walk (list_files' glob): `false` leaves an entry out, and a
/// directory it leaves out is not entered. It can only narrow: the `.git` rule applies
/// first, whatever it says.
pub(crate) type Narrow = Box<dyn Fn(&DirEntry) -> bool + Send + Sync + 'static>;

/// A sorted, filtered walk over the project, configured like ripgrep, never entering or
/// yielding anything named `.git`, nor entering a directory with an unsafe rule file
/// (recorded in the returned [`Skipped`]). Refused when the root has one
/// ([`check_root`]). `WalkBuilder::filter_entry` replaces any filter set before, so a
/// tool's own filter is passed in here rather than added to the builder, and cannot drop
/// these rules by accident.
pub(crate) fn builder(
    project: &Project,
    narrow: Option<Narrow>,
) -> Result<(WalkBuilder, Skipped), ToolError> {
    check_root(project)?;
    let root_dir = project
        .open_dir("")
        .map_err(|e| ToolError::Fault(format!("cannot open the project root: {e}")))?;
    let root = project.root().to_path_buf();
    let skipped = Skipped::default();
    let record = skipped.clone();
    let mut builder = WalkBuilder::new(project.root());
    builder
        .add_custom_ignore_filename(".rgignore")
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if is_git_entry(entry) || !narrow.as_ref().is_none_or(|keep| keep(entry)) {
                return false;
            }
            if !entry.file_type().is_some_and(|t| t.is_dir()) {
                return true;
            }
            let relative = entry.path().strip_prefix(&root).unwrap_or(Path::new(""));
            // One the boundary cannot open the walker cannot list either.
            let Ok(dir) = root_dir.open_dir(relative) else {
                return true;
            };
            match unsafe_rule_file(&dir) {
                Some((name, why)) => {
                    let shown = relative.to_string_lossy();
                    let message = rule_file_message(&shown, name, why);
                    record.push(shown.into_owned(), message);
                    false
                }
                None => true,
            }
        });
    Ok((builder, skipped))
}

/// True for an entry named `.git` in any letter case (macOS folds case, so `.GIT` is the
/// same directory there). Decided on the name alone, so it holds for a directory, a
/// worktree's `.git` file and a symlink alike, and no ignore file can undo it.
fn is_git_entry(entry: &DirEntry) -> bool {
    entry.depth() > 0
        && entry
            .file_name()
            .to_str()
            .is_some_and(|name| name.eq_ignore_ascii_case(".git"))
}

/// Iterates the regular files of a walk as project-relative paths, in walk order.
/// Errors inside the walk (an unreadable directory) are skipped, as ripgrep skips them
/// after a message; symlinks and other non-files are skipped as ripgrep skips them.
pub(crate) fn files<'a>(
    project: &'a Project,
    walk: Walk,
) -> impl Iterator<Item = ProjectPath> + 'a {
    let root = project.root().to_path_buf();
    walk.filter_map(Result::ok)
        .filter(|entry| entry.file_type().is_some_and(|t| t.is_file()))
        .filter_map(move |entry| {
            let relative = entry.path().strip_prefix(&root).unwrap_or(Path::new(""));
            project.walked_path(relative)
        })
}
