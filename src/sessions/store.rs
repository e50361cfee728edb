//! The one place a session file is written, behind a trait so a test can fail a write.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::Path;

/// Readable and writable by the user alone: a session holds file contents and whatever
/// the person typed.
pub(crate) const PRIVATE_FILE: u32 = 0o600;

/// The mode of the directories metron creates for sessions.
pub(crate) const PRIVATE_DIR: u32 = 0o700;

/// Appends whole lines to session files.
pub(crate) trait SessionStore: Send + Sync + std::fmt::Debug {
    /// Appends `line` (one record, newline included) to the file at `path` with one
    /// write, creating the file (0600) and its directories (0700) when missing.
    fn append(&self, path: &Path, line: &[u8]) -> io::Result<()>;

    /// Creates the file at `path` (0600, its directories 0700) holding `line`, failing
    /// with `AlreadyExists` when there is one: a new session never adds to another's.
    fn create(&self, path: &Path, line: &[u8]) -> io::Result<()>;

    /// Removes the session file at `path` (`metron sessions prune`).
    fn remove(&self, path: &Path) -> io::Result<()>;
}

/// The real file system.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Files;

impl SessionStore for Files {
    fn append(&self, path: &Path, line: &[u8]) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(PRIVATE_DIR)
                .create(dir)?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create(true)
            .mode(PRIVATE_FILE)
            .open(path)?;
        // A file someone widened is made private again before more is added to it.
        if file.metadata()?.permissions().mode() & 0o777 != PRIVATE_FILE {
            file.set_permissions(std::fs::Permissions::from_mode(PRIVATE_FILE))?;
        }
        // One write call per record: with O_APPEND a crash leaves at most this line cut.
        file.write_all(line)?;
        file.flush()
    }

    fn create(&self, path: &Path, line: &[u8]) -> io::Result<()> {
        if let Some(dir) = path.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(PRIVATE_DIR)
                .create(dir)?;
        }
        let mut file = OpenOptions::new()
            .append(true)
            .create_new(true)
            .mode(PRIVATE_FILE)
            .open(path)?;
        file.write_all(line)?;
        file.flush()
    }

    fn remove(&self, path: &Path) -> io::Result<()> {
        std::fs::remove_file(path)
    }
}
