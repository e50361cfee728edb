//! Which revision of each file the model has read: the precondition of its patches.
//!
//! Every read tool that shows the model lines of a file (view_slice, the matching lines of
//! search_text) records the content hash of the bytes those lines came from (git's blob id,
//! [`content_hash`]) and how it read them. apply_patch then holds a patch to those
//! revisions: a patch to a file the model has read was prepared against the revision it
//! read, so if the file has changed since (someone edited it, a command rewrote it, it was
//! deleted) nothing is written, even where the diff would still apply, and the model is
//! shown the current lines instead. A file the model has not read is held to its content
//! when the patch was proposed. After a write the written content becomes the revision:
//! the model knows what it wrote.
//!
//! A revision is a whole-file hash, so it is only recorded when the whole file was read
//! in one pass: a file larger than [`MAX_HASHED_BYTES`] is shown without being recorded,
//! and patches to it are held to their proposal-time content only.

use std::collections::HashMap;

use super::journal::{BlobId, content_hash};
use crate::project::ProjectPath;

/// Largest file whose revision a read records. Recording means holding the whole file in
/// memory while it is read (view_slice otherwise streams); a source file the model patches
/// is far smaller, and apply_patch reads whole files anyway.
pub(crate) const MAX_HASHED_BYTES: usize = 8 << 20;

/// One file as the model last read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Revision {
    /// The content hash of the bytes the model's lines came from ([`content_hash`]).
    pub(crate) hash: BlobId,
    /// Which read recorded it, in words the model recognises: `view_slice 10-40`,
    /// ``search_text `fn main` ``, `apply_patch` (its own write).
    pub(crate) how: String,
}

/// The revisions the model has read in this session, by path.
#[derive(Debug, Default)]
pub(crate) struct Revisions {
    read: HashMap<String, Revision>,
}

impl Revisions {
    /// Records that the model read `path` when its content was `bytes`, replacing any
    /// older revision (the model's latest read is what its next patch is based on).
    #[cfg(test)]
    pub(crate) fn record_bytes(
        &mut self,
        path: &ProjectPath,
        bytes: &[u8],
        how: impl Into<String>,
    ) {
        self.record(path, content_hash(bytes), how);
    }

    /// Records an already computed content hash (search_text hashes on its worker
    /// threads).
    pub(crate) fn record(&mut self, path: &ProjectPath, hash: BlobId, how: impl Into<String>) {
        self.read.insert(
            path.to_string(),
            Revision {
                hash,
                how: how.into(),
            },
        );
    }

    /// The revision the model last read of `path`, if it read it.
    pub(crate) fn get(&self, path: &str) -> Option<&Revision> {
        self.read.get(path)
    }

    /// Forgets `path` (it was deleted by the model's own patch, or the model was told it
    /// no longer exists): a later patch creating it is held to its absence then.
    pub(crate) fn forget(&mut self, path: &str) {
        self.read.remove(path);
    }

    /// Whether `current` (`None`: the file does not exist) is still the revision the
    /// model read. `None` when the model has not read `path`.
    pub(crate) fn is_current(&self, path: &str, current: Option<&[u8]>) -> Option<bool> {
        let revision = self.read.get(path)?;
        Some(current.is_some_and(|bytes| content_hash(bytes) == revision.hash))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::Project;

    #[test]
    fn the_latest_read_wins_and_a_deleted_file_is_stale() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let project = Project::open(dir.path(), false).unwrap_or_else(|e| panic!("{e}"));
        let path = project.resolve("a.txt").unwrap_or_else(|e| panic!("{e}"));
        let mut revisions = Revisions::default();
        assert_eq!(revisions.is_current("a.txt", Some(b"x\n")), None);
        revisions.record_bytes(&path, b"x\n", "view_slice 1-1");
        assert_eq!(revisions.is_current("a.txt", Some(b"x\n")), Some(true));
        assert_eq!(revisions.is_current("a.txt", Some(b"y\n")), Some(false));
        assert_eq!(revisions.is_current("a.txt", None), Some(false));
        revisions.record_bytes(&path, b"y\n", "search_text `y`");
        assert_eq!(revisions.is_current("a.txt", Some(b"y\n")), Some(true));
        assert_eq!(
            revisions.get("a.txt").map(|r| r.how.as_str()),
            Some("search_text `y`")
        );
        revisions.forget("a.txt");
        assert_eq!(revisions.is_current("a.txt", None), None);
    }
}
