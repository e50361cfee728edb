//! `/undo` and `/diff`: the person's view of, and way back from, this session's writes.
//!
//! Undo writes through the same all-or-nothing [`commit`] as apply_patch, so it is just as
//! durable, and the same write-time precondition protects the person's own edits: every
//! file the patch touched must still hold exactly what metron wrote, or nothing is
//! written and the first file that changed is named.

use std::path::Path;

use super::write::{Change, CommitError, Store, commit};
use crate::authority::Authority;
use crate::authority::applied::AppliedPatch;
use crate::authority::journal::{FileChange, content_hash};
use crate::project::{BoundaryError, FileMode, ProjectPath, WriteMode};
use crate::tools::ToolEnv;

/// What an undo did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Undone {
    /// The patch that was reverted.
    pub(crate) patch: AppliedPatch,
    /// The files as written by the undo (hashes before and after it).
    pub(crate) files: Vec<FileChange>,
}

/// Reverts the newest applied patch not yet undone, or says why not.
pub(crate) fn undo_newest(env: &ToolEnv, authority: &Authority) -> Result<Undone, String> {
    let Some(patch) = authority.newest_applied() else {
        return Err("nothing to undo: no patch metron applied in this session is left".to_owned());
    };
    for file in &patch.files {
        // Read no further than what metron wrote: anything longer has changed.
        let limit = file.after.as_ref().map_or(0, |bytes| bytes.len() as u64);
        let now = match Store::read(&*env.project, &file.path, limit) {
            Err(BoundaryError::TooLarge { .. }) => None,
            other => Some(other.map_err(|e| format!("cannot undo: {e}; nothing was changed"))?),
        };
        if now.as_ref() != Some(&file.after) {
            return Err(format!(
                "cannot undo: `{}` changed since metron wrote it; nothing was changed (edit it by hand, or use git)",
                file.path
            ));
        }
    }
    let changes: Vec<Change> = patch
        .files
        .iter()
        .map(|file| Change {
            path: file.path.clone(),
            before: file.after.clone().map(|bytes| (bytes, file.mode)),
            after: file.before.as_ref().map(|(bytes, _)| bytes.clone()),
            mode: WriteMode::Exact(file.before.as_ref().map_or(file.mode, |(_, mode)| *mode)),
        })
        .collect();
    match commit(&*env.project, &changes) {
        Ok(()) => {}
        Err(CommitError::Stale(paths)) => {
            return Err(format!(
                "cannot undo: {} changed while undoing; nothing was changed",
                paths.join(", ")
            ));
        }
        Err(e) => return Err(format!("cannot undo: {e}")),
    }
    authority.pop_applied();
    for file in &patch.files {
        env.symbols.invalidate(&file.path);
        // The model's last view of the file is gone: it must read it again before a patch.
        authority.forget_revision(file.path.as_str());
    }
    let files = patch
        .files
        .iter()
        .map(|file| FileChange {
            path: file.path.to_string(),
            before: file.after.as_deref().map(content_hash),
            after: file.before.as_ref().map(|(bytes, _)| content_hash(bytes)),
            mode_before: file.after.as_ref().map(|_| FileMode::of_bits(file.mode)),
            mode_after: file
                .before
                .as_ref()
                .map(|(_, bits)| FileMode::of_bits(*bits)),
            added: file.removed,
            removed: file.added,
        })
        .collect();
    Ok(Undone { patch, files })
}

/// This session's writes as one unified diff: each file from its content before metron's
/// first write to its content now. Empty when nothing differs. A file that cannot be read
/// now (grown past the size cap, replaced by a directory) gets a one-line note in the
/// diff's place, and the other files are still shown. A created or deleted file gets git's
/// headers for one (see [`with_git_headers`]).
pub(crate) fn session_diff(env: &ToolEnv, authority: &Authority) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    for (path, original) in authority.originals() {
        let now = match read_for_diff(env, &path) {
            Ok(now) => now,
            Err(note) => {
                out.extend_from_slice(format!("# {path}: {note}\n").as_bytes());
                continue;
            }
        };
        let before = original.as_ref().map(|(bytes, _)| bytes.as_slice());
        if now.as_deref() == before {
            continue;
        }
        let name = Path::new(path.as_str());
        let mut options = git2::DiffOptions::new();
        options.old_prefix("a/").new_prefix("b/");
        let patch = git2::Patch::from_buffers(
            before.unwrap_or_default(),
            before.map(|_| name),
            now.as_deref().unwrap_or_default(),
            now.as_ref().map(|_| name),
            Some(&mut options),
        )
        .and_then(|mut patch| patch.to_buf())
        .map_err(|e| format!("cannot diff `{path}`: {}", e.message()))?;
        let existence = match (&original, &now) {
            (None, Some(_)) => {
                // The mode the file has now: 100755 when the patch made it executable.
                let bits = env.project.file_mode(&path).ok().flatten().unwrap_or(0o644);
                Existence::Created(FileMode::of_bits(bits))
            }
            (Some((_, bits)), None) => Existence::Deleted(FileMode::of_bits(*bits)),
            _ => Existence::Kept,
        };
        out.extend_from_slice(&with_git_headers(&patch, existence));
    }
    Ok(out)
}

/// Whether a file `/diff` shows existed before the session and exists now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Existence {
    /// It did not exist before metron's first write; it has this mode now.
    Created(FileMode),
    /// It existed, with this mode, and does not now.
    Deleted(FileMode),
    /// It existed before and does now.
    Kept,
}

/// libgit2's patch for one file, with git's headers when the file was created or deleted.
/// `Patch::from_buffers` names a missing side like an existing one (`--- a/n.txt` for a
/// new file), which tells the person the file existed; git writes `new file mode 100644`
/// and `--- /dev/null` (`deleted file mode` and `+++ /dev/null` for a deletion), and so
/// does `/diff`. Only the lines before the first hunk are looked at; libgit2 quotes a path
/// holding a newline, so a header line never starts inside a path.
fn with_git_headers(patch: &[u8], existence: Existence) -> Vec<u8> {
    let (created, mode) = match existence {
        Existence::Kept => return patch.to_vec(),
        Existence::Created(mode) => (true, mode),
        Existence::Deleted(mode) => (false, mode),
    };
    let word = if created { "new" } else { "deleted" };
    let mut out = Vec::with_capacity(patch.len() + 64);
    let mut in_header = true;
    for line in patch.split_inclusive(|&b| b == b'\n') {
        if in_header {
            if line.starts_with(b"@@") {
                in_header = false;
            } else if line.starts_with(b"diff --git ") {
                out.extend_from_slice(line);
                out.extend_from_slice(format!("{word} file mode {mode}\n").as_bytes());
                continue;
            } else if line.starts_with(b"index ")
                || line.starts_with(b"new file mode ")
                || line.starts_with(b"deleted file mode ")
            {
                // The index line names blob ids no repository holds; git's would differ.
                continue;
            } else if line.starts_with(b"--- ") && created {
                out.extend_from_slice(b"--- /dev/null\n");
                continue;
            } else if line.starts_with(b"+++ ") && !created {
                out.extend_from_slice(b"+++ /dev/null\n");
                continue;
            }
        }
        out.extend_from_slice(line);
    }
    out
}

/// A file's content now, for `/diff`: bounded like apply_patch's reads, so a file that
/// grew huge since metron wrote it is named instead of read.
fn read_for_diff(env: &ToolEnv, path: &ProjectPath) -> Result<Option<Vec<u8>>, String> {
    Store::read(&*env.project, path, env.limits.max_patch_file_bytes)
        .map_err(|e| format!("not diffed: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// libgit2's patch between two optional contents of `n.txt`, as `session_diff` makes it.
    fn patch(before: Option<&[u8]>, after: Option<&[u8]>) -> Vec<u8> {
        let name = Path::new("n.txt");
        let mut options = git2::DiffOptions::new();
        options.old_prefix("a/").new_prefix("b/");
        let patch = git2::Patch::from_buffers(
            before.unwrap_or_default(),
            before.map(|_| name),
            after.unwrap_or_default(),
            after.map(|_| name),
            Some(&mut options),
        )
        .and_then(|mut p| p.to_buf())
        .expect("diff");
        patch.to_vec()
    }

    fn text(bytes: Vec<u8>) -> String {
        String::from_utf8(bytes).expect("utf-8")
    }

    #[test]
    fn a_created_file_is_shown_from_dev_null_with_its_mode() {
        let raw = patch(None, Some(b"one\ntwo\n"));
        let shown = text(with_git_headers(
            &raw,
            Existence::Created(FileMode::Regular),
        ));
        assert_eq!(
            shown,
            "diff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n+one\n+two\n"
        );
        let shown = text(with_git_headers(
            &raw,
            Existence::Created(FileMode::Executable),
        ));
        assert!(
            shown.contains("\nnew file mode 100755\n--- /dev/null\n"),
            "{shown}"
        );
    }

    #[test]
    fn a_deleted_file_is_shown_to_dev_null_with_its_mode() {
        let raw = patch(Some(b"one\n"), None);
        let shown = text(with_git_headers(
            &raw,
            Existence::Deleted(FileMode::Executable),
        ));
        assert_eq!(
            shown,
            "diff --git a/n.txt b/n.txt\ndeleted file mode 100755\n--- a/n.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-one\n"
        );
    }

    #[test]
    fn a_kept_file_and_hunk_lines_that_look_like_headers_are_left_alone() {
        let raw = patch(Some(b"--- a\n+++ b\n"), Some(b"index x\n"));
        assert_eq!(with_git_headers(&raw, Existence::Kept), raw);
        let raw = patch(None, Some(b"--- a\ndiff --git x\nindex y\n"));
        let shown = text(with_git_headers(
            &raw,
            Existence::Created(FileMode::Regular),
        ));
        assert!(
            shown.ends_with("@@ -0,0 +1,3 @@\n+--- a\n+diff --git x\n+index y\n"),
            "{shown}"
        );
        assert_eq!(shown.matches("new file mode").count(), 1, "{shown}");
    }
}
