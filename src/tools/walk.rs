//! The one walk of the project tree that list_files, search_text and find_symbol share.
//!
//! It applies the same filters as ripgrep: hidden files are skipped, `.gitignore` applies
//! inside a git repository, `.ignore` and `.rgignore` always apply, as do
//! `.git/info/exclude` and the global git excludes file (which files exactly, and how
//! they are read, is [`rules`]' job). The protected places the project holds (`~/.ssh`
//! under a project above HOME) are never yielded. Symlinks are not followed, and the
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
//! The walker's own reading of ignore files is switched off: it read them by path,
//! following symlinks, whole, with no way to tell it otherwise (`.git/info/exclude ->
//! /dev/zero` took 7.8 GB). [`rules`] reads every rule file through the project handle
//! instead and the filter on the walker applies them: a symlink to a rule file inside the
//! project is followed, one that leads outside, a FIFO, a device or a file larger than
//! [`rules::MAX_RULE_BYTES`] is not read and its directory is not entered; the tools say
//! which directory they skipped and why ([`Skipped::notes`]). At the root, which cannot be
//! skipped, the tools refuse with the same reason ([`check_root`]).
//!
//! The walker lists directories by path itself, the one accepted exception to "only
//! `project/` touches files beneath the root": it never follows a symlink, and it only
//! yields names. Every file a tool reads from the walk is opened through the project
//! handle ([`Project::open_walked_file`] and friends), so a directory swapped for a
//! symlink between the listing and the open is caught there, and a file swapped for a
//! symlink, a FIFO or a device is refused at the open (`O_NOFOLLOW`, `O_NONBLOCK`, then
//! `fstat`) without blocking.

mod rules;

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use ignore::{DirEntry, Walk, WalkBuilder};

use super::ToolError;
use crate::project::{Project, ProjectPath};

/// Refuses to walk a project whose root holds a rule file that may not be read (see
/// [`rules`]): the walker would need its rules before anything could be skipped.
pub(crate) fn check_root(project: &Project) -> Result<(), ToolError> {
    root_rules(project, &Mutex::default()).map(|_| ())
}

/// The root's rules, or the refusal that names the rule file in the way.
fn root_rules(
    project: &Project,
    budget: &Mutex<rules::Budget>,
) -> Result<Arc<rules::DirRules>, ToolError> {
    match rules::load(project, Path::new(""), budget) {
        Ok(loaded) => Ok(Arc::new(loaded)),
        Err((shown, why)) => Err(ToolError::Refused(format!(
            "refused: {}; the walking tools cannot run until then (view_slice still reads files by name)",
            why.message(&shown)
        ))),
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
/// yielding anything named `.git`, nor entering a directory whose rule files may not be
/// read (recorded in the returned [`Skipped`]), nor yielding the protected places the
/// project holds ([`Project::is_protected_secret`]). Refused when the root has such a
/// rule file ([`check_root`]). `WalkBuilder::filter_entry` replaces any filter set before,
/// so a tool's own filter is passed in here rather than added to the builder, and cannot
/// drop these rules by accident.
pub(crate) fn builder(
    project: &Project,
    narrow: Option<Narrow>,
) -> Result<(WalkBuilder, Skipped), ToolError> {
    let budget = Arc::new(Mutex::new(rules::Budget::default()));
    let root_rules = root_rules(project, &budget)?;
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let global = rules::global(env("HOME").as_deref(), env("XDG_CONFIG_HOME").as_deref());
    let root = project.root().to_path_buf();
    let ancestors = rules::ancestors(&root);
    let skipped = Skipped::default();
    let record = skipped.clone();
    // The rules of every directory entered, by path relative to the root. A directory's
    // rules are loaded when the filter admits it, which is before any entry in it is
    // filtered, in a sorted walk and a parallel one alike. Inert rules (no rule file, no
    // `.git`) are not kept: they would change no verdict, and every entry below would
    // pay for asking them.
    let mut entered = HashMap::new();
    if !root_rules.is_inert() {
        entered.insert(PathBuf::new(), root_rules);
    }
    let entered: Mutex<HashMap<PathBuf, Arc<rules::DirRules>>> = Mutex::new(entered);
    // The filter outlives this call; it reads rule files through its own handle.
    let project = project
        .try_clone()
        .map_err(|e| ToolError::Fault(format!("cannot open the project root: {e}")))?;
    let mut builder = WalkBuilder::new(&root);
    builder
        .standard_filters(false)
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            if is_git_entry(entry) || !narrow.as_ref().is_none_or(|keep| keep(entry)) {
                return false;
            }
            let Ok(relative) = entry.path().strip_prefix(&root) else {
                return false;
            };
            if project.is_protected_secret(relative) {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let mut chain = ancestors.clone();
            chain.extend(
                chain_of(&entered, relative)
                    .into_iter()
                    .map(|(dir, rules)| (root.join(dir), rules)),
            );
            let verdict = rules::matched(&chain, global.as_deref(), entry.path(), relative, is_dir);
            if verdict.is_ignore() || verdict.is_none() && is_hidden(entry) {
                return false;
            }
            if !is_dir {
                return true;
            }
            // A directory whose name cannot be shown holds no file that can be (see
            // `Project::walked_path`); it is left out without a note, which would have to
            // show the name.
            if project.walked_path(relative).is_none() {
                return false;
            }
            match rules::load(&project, relative, &budget) {
                Ok(loaded) => {
                    if !loaded.is_inert() {
                        entered
                            .lock()
                            .unwrap_or_else(PoisonError::into_inner)
                            .insert(relative.to_path_buf(), Arc::new(loaded));
                    }
                    true
                }
                Err((shown, why)) => {
                    let dir = relative.to_string_lossy().into_owned();
                    record.push(dir, why.message(&shown));
                    false
                }
            }
        });
    Ok((builder, skipped))
}

/// The rules of the directories above `entry`, root first.
fn chain_of(
    entered: &Mutex<HashMap<PathBuf, Arc<rules::DirRules>>>,
    entry: &Path,
) -> Vec<(PathBuf, Arc<rules::DirRules>)> {
    let entered = entered.lock().unwrap_or_else(PoisonError::into_inner);
    let mut chain: Vec<_> = entry
        .ancestors()
        .skip(1)
        .filter_map(|dir| {
            entered
                .get(dir)
                .map(|rules| (dir.to_path_buf(), Arc::clone(rules)))
        })
        .collect();
    chain.reverse();
    chain
}

/// A name starting with a dot, skipped as ripgrep skips it unless a rule re-includes it.
fn is_hidden(entry: &DirEntry) -> bool {
    entry.file_name().as_encoded_bytes().first() == Some(&b'.')
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
