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
//! The walker lists directories by path itself, the one accepted exception to "only
//! `project/` touches files beneath the root": it never follows a symlink, and it only
//! yields names. Every file a tool reads from the walk is opened through the project
//! handle ([`Project::open_walked_file`] and friends), so a directory swapped for a
//! symlink between the listing and the open is caught there.

use std::path::Path;

use ignore::{DirEntry, Walk, WalkBuilder};

use crate::project::{Project, ProjectPath};

/// A filter a tool adds to the walk (list_files' glob): `false` leaves an entry out, and a
/// directory it leaves out is not entered. It can only narrow: the `.git` rule applies
/// first, whatever it says.
pub(crate) type Narrow = Box<dyn Fn(&DirEntry) -> bool + Send + Sync + 'static>;

/// A sorted, filtered walk over the project, configured like ripgrep, never entering or
/// yielding anything named `.git`. `WalkBuilder::filter_entry` replaces any filter set
/// before, so a tool's own filter is passed in here rather than added to the builder, and
/// cannot drop the `.git` rule by accident.
pub(crate) fn builder(project: &Project, narrow: Option<Narrow>) -> WalkBuilder {
    let mut builder = WalkBuilder::new(project.root());
    builder
        .add_custom_ignore_filename(".rgignore")
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b))
        .filter_entry(move |entry| {
            !is_git_entry(entry) && narrow.as_ref().is_none_or(|keep| keep(entry))
        });
    builder
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
