//! The one place a session file is written, behind a trait so a test can fail a write.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::private_files::{self, PRIVATE_FILE};

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
        // A file someone widened is made private again before more is added to it.
        let mut file = private_files::open_append(path)?;
        // One write call per record: with O_APPEND a crash leaves at most this line cut.
        file.write_all(line)?;
        file.flush()
    }

    fn create(&self, path: &Path, line: &[u8]) -> io::Result<()> {
        private_files::create_parent(path)?;
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
