//! Computing every post-image in memory with libgit2, before a byte is written.
//!
//! libgit2 has no public "apply a patch to a buffer", but it can apply a diff to a tree.
//! So the current bytes of every file the patch touches (read by us, through the project
//! boundary) become blobs in a throwaway repository whose object database lives in RAM, the
//! patch is applied to that tree, and the resulting blobs are the post-images. Nothing
//! touches the disk, the real repository, or its index; libgit2 never opens a path of the
//! work tree, so it cannot follow a symlink out of it.
//!
//! `Repository::apply(.., WorkDir)` is deliberately not used: it writes files in place
//! without rollback, takes `.git/index.lock`, and follows symlinked directories.

use std::path::Path;

use git2::{Diff, Index, IndexEntry, IndexTime, Odb, Repository};

/// A file as it is now, handed to libgit2.
pub(crate) struct PreImage<'a> {
    /// Path relative to the project root.
    pub(crate) path: &'a str,
    /// Its current bytes.
    pub(crate) bytes: &'a [u8],
}

/// A file as the patch leaves it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PostImage {
    /// Path relative to the project root.
    pub(crate) path: String,
    /// Its new bytes, or `None` when the patch deletes it.
    pub(crate) bytes: Option<Vec<u8>>,
}

/// Applies a canonical git patch to the given pre-images, entirely in memory. The error is
/// libgit2's message, for the model.
pub(crate) fn apply(
    patch: &[u8],
    pre_images: &[PreImage<'_>],
) -> Result<Vec<PostImage>, git2::Error> {
    let odb = Odb::new()?;
    odb.add_new_mempack_backend(1000)?;
    let repo = Repository::from_odb(odb)?;

    let mut index = Index::new()?;
    for pre in pre_images {
        let id = repo.blob(pre.bytes)?;
        index.add(&IndexEntry {
            ctime: IndexTime::new(0, 0),
            mtime: IndexTime::new(0, 0),
            dev: 0,
            ino: 0,
            mode: 0o100644,
            uid: 0,
            gid: 0,
            file_size: u32::try_from(pre.bytes.len()).unwrap_or(u32::MAX),
            id,
            flags: u16::try_from(pre.path.len()).unwrap_or(0xfff).min(0xfff),
            flags_extended: 0,
            path: pre.path.as_bytes().to_vec(),
        })?;
    }
    let tree = repo.find_tree(index.write_tree_to(&repo)?)?;
    let diff = Diff::from_buffer(patch)?;
    let post = repo.apply_to_tree(&tree, &diff, None)?;

    let mut images = Vec::new();
    for delta in diff.deltas() {
        let old = delta.old_file().path().and_then(Path::to_str);
        let new = delta.new_file().path().and_then(Path::to_str);
        if let (Some(old), Some(new)) = (old, new)
            && old != new
        {
            images.push(PostImage {
                path: old.to_owned(),
                bytes: None,
            });
        }
        let Some(path) = new.or(old) else { continue };
        let bytes = match post.get_path(Path::new(path), 0) {
            Some(entry) => Some(repo.find_blob(entry.id)?.content().to_vec()),
            None => None,
        };
        images.push(PostImage {
            path: path.to_owned(),
            bytes,
        });
    }
    Ok(images)
}
