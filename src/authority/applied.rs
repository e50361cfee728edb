//! The patches applied in this session, newest last, with each file's bytes before and
//! after: what `/diff` shows and what `/undo` reverts.
//!
//! Kept in memory only (the session's own writes; nothing is written to disk for it).
//! `/undo` reverts the newest patch not yet undone, and only if every file it touched still
//! holds what metron wrote, so it can never throw away the person's own edits.

use crate::project::ProjectPath;

/// A file's bytes and permission bits before metron's first write in the session, or
/// `None` when it did not exist.
pub(crate) type Original = Option<(Vec<u8>, u32)>;

/// One file of an applied patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppliedFile {
    /// The file.
    pub(crate) path: ProjectPath,
    /// Its bytes and mode before the patch, or `None` when the patch created it.
    pub(crate) before: Option<(Vec<u8>, u32)>,
    /// Its bytes after the patch, or `None` when the patch deleted it.
    pub(crate) after: Option<Vec<u8>>,
    /// The mode the patch wrote it with.
    pub(crate) mode: u32,
    /// Lines the patch added.
    pub(crate) added: usize,
    /// Lines the patch removed.
    pub(crate) removed: usize,
}

/// One applied patch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AppliedPatch {
    /// The ledger's number of the call that applied it (from 1), once the agent knows it.
    pub(crate) call: Option<usize>,
    /// Its files, in patch order.
    pub(crate) files: Vec<AppliedFile>,
}

/// The session's applied patches: a stack for `/undo`, and the first "before" of each file
/// for `/diff`.
#[derive(Debug, Default)]
pub(crate) struct AppliedPatches {
    /// Patches not undone, oldest first.
    live: Vec<AppliedPatch>,
    /// Each file metron has written in this session, with its bytes and permission bits
    /// before metron's first write (`None`: it did not exist), in order of first write.
    /// An undo does not remove a file from here: `/diff` then shows what is left of the
    /// session's changes (and the mode of a file it shows deleted).
    originals: Vec<(ProjectPath, Original)>,
}

impl AppliedPatches {
    /// Records a patch that was written.
    pub(crate) fn push(&mut self, patch: AppliedPatch) {
        for file in &patch.files {
            if !self.originals.iter().any(|(path, _)| *path == file.path) {
                self.originals
                    .push((file.path.clone(), file.before.clone()));
            }
        }
        self.live.push(patch);
    }

    /// Numbers the newest patch with its ledger call number.
    pub(crate) fn number_newest(&mut self, call: usize) {
        if let Some(newest) = self.live.last_mut()
            && newest.call.is_none()
        {
            newest.call = Some(call);
        }
    }

    /// The newest patch not yet undone.
    pub(crate) fn newest(&self) -> Option<&AppliedPatch> {
        self.live.last()
    }

    /// Forgets the newest patch (it was undone).
    pub(crate) fn pop(&mut self) -> Option<AppliedPatch> {
        self.live.pop()
    }

    /// Every file written in this session with its content and permission bits before the
    /// first write.
    pub(crate) fn originals(&self) -> &[(ProjectPath, Original)] {
        &self.originals
    }
}
