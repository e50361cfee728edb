//! Files only the user may read, in directories only the user may enter: the input
//! history and the saved sessions hold whatever the person typed and every file the model
//! read, secrets included, so nobody else on the machine may read them.

use std::fs::{File, OpenOptions};
use std::io;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Readable and writable by the user alone.
pub(crate) const PRIVATE_FILE: u32 = 0o600;

/// The mode of a directory metron has to create itself.
pub(crate) const PRIVATE_DIR: u32 = 0o700;

/// Creates the directory holding `path` (and its parents) private when missing.
pub(crate) fn create_parent(path: &Path) -> io::Result<()> {
    match path.parent() {
        Some(dir) => std::fs::DirBuilder::new()
            .recursive(true)
            .mode(PRIVATE_DIR)
            .create(dir),
        None => Ok(()),
    }
}

/// Opens the file at `path` for appending, creating it (and its directory) private when
/// missing, and making an existing file private again if someone widened it.
pub(crate) fn open_append(path: &Path) -> io::Result<File> {
    create_parent(path)?;
    let file = OpenOptions::new()
        .append(true)
        .create(true)
        .mode(PRIVATE_FILE)
        .open(path)?;
    make_private(&file)?;
    Ok(file)
}

/// Takes away every permission but the owner's read and write, when another has any.
pub(crate) fn make_private(file: &File) -> io::Result<()> {
    let mode = file.metadata()?.permissions().mode();
    if mode & 0o077 != 0 {
        file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE))?;
    }
    Ok(())
}
