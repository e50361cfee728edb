//! The one walk of the project tree that list_files, search_text and find_symbol share.
//!
//! It applies the same filters as ripgrep: hidden files are skipped, `.gitignore` applies
//! inside a git repository, `.ignore` and `.rgignore` always apply, as do
//! `.git/info/exclude` and the global git excludes file. Symlinks are not followed, and the
//! walk is sorted by file name within each directory (ripgrep's `--sort path`), so output
//! is deterministic and a budgeted caller can stop as soon as it has enough.
//!
//! The walker lists directories by path itself, the one accepted exception to "only
//! `project/` touches files beneath the root": it never follows a symlink, and it only
//! yields names. Every file a tool reads from the walk is opened through the project
//! handle ([`Project::open_walked_file`] and friends), so a directory swapped for a
//! symlink between the listing and the open is caught there.

use std::path::Path;

use ignore::{Walk, WalkBuilder};

use crate::project::{Project, ProjectPath};

/// A sorted, filtered walk over the project, configured like ripgrep. Extra filters
/// (such as a glob) can be added to the builder before calling `build()`.
pub(crate) fn builder(project: &Project) -> WalkBuilder {
    let mut builder = WalkBuilder::new(project.root());
    builder
        .add_custom_ignore_filename(".rgignore")
        .follow_links(false)
        .sort_by_file_name(|a, b| a.cmp(b));
    builder
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
