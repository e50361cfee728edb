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
    // The rule chain of every directory entered, by path relative to the root: the
    // root's ancestors' rules, then those of each directory from the root down to it.
    // A directory's chain is built when the filter admits it, which is before any entry
    // in it is filtered, in a sorted walk and a parallel one alike; so each entry costs
    // one lookup (its parent's), not one per ancestor, and no path is built for it.
    // Inert rules (no rule file, no `.git`) are left out of the chains: they would
    // change no verdict, and every entry below would pay for asking them.
    let root_chain = Chain::root(ancestors, &root, root_rules);
    let entered: Mutex<HashMap<PathBuf, Chain>> =
        Mutex::new(HashMap::from([(PathBuf::new(), root_chain)]));
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
            let Some(relative) = beneath(entry.path(), &root) else {
                return false;
            };
            if project.is_protected_secret(relative) {
                return false;
            }
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let chain = chain_of(&entered, relative);
            let verdict = rules::matched(
                chain.links(),
                global.as_deref(),
                entry.path(),
                relative,
                is_dir,
            );
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
                    let own = chain.below(&root, relative, loaded);
                    entered
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(relative.to_path_buf(), own);
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

/// The rules that apply to the entries of one directory: the root's ancestors' and those
/// of every directory from the root down to it, outermost first, each with its path as
/// [`rules::matched`] wants it. Shared: a directory without rules of its own hands its
/// parent's chain down unchanged.
#[derive(Debug, Clone, Default)]
struct Chain(Arc<[(PathBuf, Arc<rules::DirRules>)]>);

impl Chain {
    /// The chain of the root's entries: its ancestors' rules, then its own.
    fn root(
        ancestors: Vec<(PathBuf, Arc<rules::DirRules>)>,
        root: &Path,
        own: Arc<rules::DirRules>,
    ) -> Chain {
        let mut links = ancestors;
        if !own.is_inert() {
            links.push((root.to_path_buf(), own));
        }
        Chain(links.into())
    }

    /// The chain of the entries of `dir` (relative to `root`), one of this chain's
    /// directory's subdirectories, whose own rules are `own`.
    fn below(&self, root: &Path, dir: &Path, own: rules::DirRules) -> Chain {
        if own.is_inert() {
            return self.clone();
        }
        let mut links = self.0.to_vec();
        links.push((root.join(dir), Arc::new(own)));
        Chain(links.into())
    }

    fn links(&self) -> &[(PathBuf, Arc<rules::DirRules>)] {
        &self.0
    }
}

/// The chain that applies to `entry` (relative to the root): its directory's. That
/// directory was entered, so its chain is there; if it ever were not, the nearest entered
/// directory above stands in, which leaves out no rule that was ever loaded.
fn chain_of(entered: &Mutex<HashMap<PathBuf, Chain>>, entry: &Path) -> Chain {
    let entered = entered.lock().unwrap_or_else(PoisonError::into_inner);
    entry
        .ancestors()
        .skip(1)
        .find_map(|dir| entered.get(dir))
        .cloned()
        .unwrap_or_default()
}

/// `path` relative to `dir`, as [`Path::strip_prefix`] gives it, found by comparing
/// bytes: the walk builds every entry's path by appending plain names to the root's, so
/// the root's bytes and a separator start it. `Path::strip_prefix` parses both paths into
/// components, which a profile of a listing put at the top of metron's own work when
/// done for every entry and every directory of its rule chain. A path that is not plain
/// (a redundant separator, a `.` component) is left to `Path::strip_prefix`.
pub(crate) fn beneath<'a>(path: &'a Path, dir: &Path) -> Option<&'a Path> {
    use std::os::unix::ffi::OsStrExt;
    let fast = path
        .as_os_str()
        .as_bytes()
        .strip_prefix(dir.as_os_str().as_bytes())
        .and_then(|rest| match rest {
            [] => Some(&[][..]),
            [b'/', rest @ ..] if !dir.as_os_str().is_empty() => Some(rest),
            _ => None,
        })
        .filter(|rest| is_plain(rest));
    match fast {
        Some(rest) => Some(Path::new(std::ffi::OsStr::from_bytes(rest))),
        None => path.strip_prefix(dir).ok(),
    }
}

/// No `.` component, no doubled or trailing separator: what `Path::strip_prefix` would
/// return unchanged.
fn is_plain(relative: &[u8]) -> bool {
    relative.is_empty()
        || relative
            .split(|&b| b == b'/')
            .all(|part| !part.is_empty() && part != b".")
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
            let relative = beneath(entry.path(), &root).unwrap_or(Path::new(""));
            project.walked_path(relative)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beneath_agrees_with_strip_prefix() {
        let cases = [
            ("/r/a/b.go", "/r"),
            ("/r", "/r"),
            ("/r/a", "/r/a"),
            ("/r/a/./b", "/r"),
            ("/r//a", "/r"),
            ("/r/a/", "/r"),
            ("/ra/b", "/r"),
            ("/r/a", "/r/"),
            ("/a", "/"),
            ("a/b", ""),
            ("", ""),
            ("/r/.hidden/x", "/r"),
            ("/r/..x/y", "/r"),
            ("/s/a", "/r"),
        ];
        for (path, dir) in cases {
            let (path, dir) = (Path::new(path), Path::new(dir));
            assert_eq!(
                beneath(path, dir).map(Path::as_os_str),
                path.strip_prefix(dir).ok().map(Path::as_os_str),
                "{path:?} beneath {dir:?}"
            );
        }
    }
}
