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
/// diff's place, and the other files are still shown.
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
        if now == original {
            continue;
        }
        let name = Path::new(path.as_str());
        let mut options = git2::DiffOptions::new();
        options.old_prefix("a/").new_prefix("b/");
        let patch = git2::Patch::from_buffers(
            original.as_deref().unwrap_or_default(),
            original.as_ref().map(|_| name),
            now.as_deref().unwrap_or_default(),
            now.as_ref().map(|_| name),
            Some(&mut options),
        )
        .and_then(|mut patch| patch.to_buf())
        .map_err(|e| format!("cannot diff `{path}`: {}", e.message()))?;
        out.extend_from_slice(&patch);
    }
    Ok(out)
}

/// A file's content now, for `/diff`: bounded like apply_patch's reads, so a file that
/// grew huge since metron wrote it is named instead of read.
fn read_for_diff(env: &ToolEnv, path: &ProjectPath) -> Result<Option<Vec<u8>>, String> {
    Store::read(&*env.project, path, env.limits.max_patch_file_bytes)
        .map_err(|e| format!("not diffed: {e}"))
}
