//! Writing a patch's post-images: all of them or none.
//!
//! Each file is replaced atomically (temporary file, fsync, rename; see
//! [`Project::write_atomic`]), but a patch touches several files, so the transaction is
//! ours: before the first write, every file is re-read and compared with the bytes the
//! patch was computed from (so an edit made while the person was reading the diff is never
//! overwritten with stale content); then files are written in order, and if any write
//! fails, the ones already written are put back and the files created are removed. Like
//! `git apply`, a directory left empty by a deletion or a rename is removed afterwards.

use crate::project::{BoundaryError, Project, ProjectPath};

/// One file's change.
#[derive(Debug, Clone)]
pub struct Change {
    /// The file.
    pub path: ProjectPath,
    /// Its bytes and mode when the patch was computed, or `None` if it did not exist.
    pub before: Option<(Vec<u8>, u32)>,
    /// Its bytes afterwards, or `None` to delete it.
    pub after: Option<Vec<u8>>,
    /// Mode for the written file.
    pub mode: u32,
}

/// Where files are written: the project, or a wrapper that injects failures in tests.
pub trait Store {
    /// The file's current bytes, or `None` if it does not exist.
    fn read(&self, path: &ProjectPath) -> Result<Option<Vec<u8>>, BoundaryError>;
    /// Replaces the file atomically.
    fn write(&self, path: &ProjectPath, bytes: &[u8], mode: u32) -> Result<(), BoundaryError>;
    /// Removes the file.
    fn remove(&self, path: &ProjectPath) -> Result<(), BoundaryError>;
    /// Removes an empty directory (best effort).
    fn remove_empty_dir(&self, path: &str);
    /// True when something exists at the path.
    fn exists(&self, path: &str) -> bool;
}

impl Store for Project {
    fn read(&self, path: &ProjectPath) -> Result<Option<Vec<u8>>, BoundaryError> {
        match Project::read(self, path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(BoundaryError::NotFound(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn write(&self, path: &ProjectPath, bytes: &[u8], mode: u32) -> Result<(), BoundaryError> {
        self.write_atomic(path, bytes, mode)
    }
    fn remove(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        self.remove_file(path)
    }
    fn remove_empty_dir(&self, path: &str) {
        Project::remove_empty_dir(self, path);
    }
    fn exists(&self, path: &str) -> bool {
        Project::exists(self, path)
    }
}

/// Why nothing (or nothing lasting) was written.
#[derive(Debug, thiserror::Error)]
pub enum CommitError {
    /// A file changed on disk after the patch was computed.
    #[error(
        "`{0}` changed on disk after the patch was prepared (while waiting for approval); nothing was written. Read it again and send a new patch"
    )]
    Stale(String),
    /// A write failed; the files already written were restored.
    #[error("writing `{path}` failed ({source}); every file was put back as it was")]
    RolledBack {
        /// The file whose write failed.
        path: String,
        /// Why.
        source: BoundaryError,
    },
    /// A write failed and restoring some file failed too: the tree is mixed.
    #[error("writing `{path}` failed ({source}), and restoring {} failed too; check these files by hand", unrestored.join(", "))]
    Partial {
        /// The file whose write failed.
        path: String,
        /// Why.
        source: BoundaryError,
        /// Files that could not be put back.
        unrestored: Vec<String>,
    },
}

/// Writes every change, or none of them.
pub fn commit(store: &impl Store, changes: &[Change]) -> Result<(), CommitError> {
    for change in changes {
        let now = store
            .read(&change.path)
            .map_err(|_| CommitError::Stale(change.path.to_string()))?;
        if now.as_deref() != change.before.as_ref().map(|(bytes, _)| bytes.as_slice()) {
            return Err(CommitError::Stale(change.path.to_string()));
        }
    }
    // Directories that do not exist yet: created by the writes, removed on rollback.
    let mut new_dirs: Vec<String> = Vec::new();
    for change in changes.iter().filter(|c| c.after.is_some()) {
        let mut dir = change.path.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if store.exists(parent) || new_dirs.iter().any(|d| d == parent) {
                break;
            }
            new_dirs.push(parent.to_owned());
            dir = parent;
        }
    }

    for (done, change) in changes.iter().enumerate() {
        let result = match &change.after {
            Some(bytes) => store.write(&change.path, bytes, change.mode),
            None => store.remove(&change.path),
        };
        if let Err(source) = result {
            let unrestored = roll_back(store, &changes[..done]);
            // Deepest first, so parents are empty by the time they are tried.
            new_dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
            for dir in &new_dirs {
                store.remove_empty_dir(dir);
            }
            let path = change.path.to_string();
            return Err(if unrestored.is_empty() {
                CommitError::RolledBack { path, source }
            } else {
                CommitError::Partial {
                    path,
                    source,
                    unrestored,
                }
            });
        }
    }
    remove_emptied_dirs(store, changes);
    Ok(())
}

/// Removes the directories that deleted (or renamed-away) files leave empty, deepest
/// first, so a parent emptied in turn goes too. Only directories that held a deleted file
/// are tried, and removing a directory that is not empty fails harmlessly.
fn remove_emptied_dirs(store: &impl Store, changes: &[Change]) {
    let mut dirs: Vec<&str> = Vec::new();
    for change in changes.iter().filter(|c| c.after.is_none()) {
        let mut dir = change.path.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            dirs.push(parent);
            dir = parent;
        }
    }
    // An ancestor is always shorter than its descendants.
    dirs.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    dirs.dedup();
    for dir in dirs {
        store.remove_empty_dir(dir);
    }
}

/// Puts back the changes already made, newest first; returns the paths it could not.
fn roll_back(store: &impl Store, done: &[Change]) -> Vec<String> {
    let mut failed = Vec::new();
    for change in done.iter().rev() {
        let restored = match &change.before {
            Some((bytes, mode)) => store.write(&change.path, bytes, *mode),
            None => store.remove(&change.path),
        };
        if restored.is_err() {
            failed.push(change.path.to_string());
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The project, with the n-th write (0-based) failing.
    struct FailingStore<'a> {
        project: &'a Project,
        fail_at: usize,
        writes: Cell<usize>,
    }

    impl Store for FailingStore<'_> {
        fn read(&self, path: &ProjectPath) -> Result<Option<Vec<u8>>, BoundaryError> {
            Store::read(self.project, path)
        }
        fn write(&self, path: &ProjectPath, bytes: &[u8], mode: u32) -> Result<(), BoundaryError> {
            let n = self.writes.get();
            self.writes.set(n + 1);
            if n == self.fail_at {
                return Err(BoundaryError::Io {
                    path: path.to_string(),
                    source: std::io::Error::other("disk full"),
                });
            }
            Store::write(self.project, path, bytes, mode)
        }
        fn remove(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
            Store::remove(self.project, path)
        }
        fn remove_empty_dir(&self, path: &str) {
            Store::remove_empty_dir(self.project, path);
        }
        fn exists(&self, path: &str) -> bool {
            Store::exists(self.project, path)
        }
    }

    fn setup() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.txt"), "a\n").expect("write");
        std::fs::write(dir.path().join("b.txt"), "b\n").expect("write");
        let project = Project::open(dir.path(), true).expect("open");
        (dir, project)
    }

    fn changes(p: &Project) -> Vec<Change> {
        let path = |s: &str| p.resolve(s).expect("path");
        vec![
            Change {
                path: path("a.txt"),
                before: Some((b"a\n".to_vec(), 0o644)),
                after: Some(b"A\n".to_vec()),
                mode: 0o644,
            },
            Change {
                path: path("b.txt"),
                before: Some((b"b\n".to_vec(), 0o644)),
                after: None,
                mode: 0o644,
            },
            Change {
                path: path("new/dir/c.txt"),
                before: None,
                after: Some(b"c\n".to_vec()),
                mode: 0o644,
            },
        ]
    }

    fn snapshot(dir: &std::path::Path) -> Vec<String> {
        let mut out = Vec::new();
        for entry in walk(dir) {
            let rel = entry
                .strip_prefix(dir)
                .unwrap_or(&entry)
                .display()
                .to_string();
            let body = std::fs::read_to_string(&entry).unwrap_or_else(|_| "<dir>".into());
            out.push(format!("{rel}={body}"));
        }
        out.sort();
        out
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            out.push(entry.path());
            if entry.path().is_dir() {
                out.extend(walk(&entry.path()));
            }
        }
        out
    }

    #[test]
    fn all_changes_land() {
        let (dir, p) = setup();
        commit(&p, &changes(&p)).expect("commit");
        assert_eq!(
            snapshot(dir.path()),
            vec![
                "a.txt=A\n",
                "new/dir/c.txt=c\n",
                "new/dir=<dir>",
                "new=<dir>",
            ]
        );
    }

    #[test]
    fn a_failure_at_any_write_leaves_everything_as_it_was() {
        for fail_at in 0..2 {
            let (dir, p) = setup();
            let before = snapshot(dir.path());
            let store = FailingStore {
                project: &p,
                fail_at,
                writes: Cell::new(0),
            };
            let err = commit(&store, &changes(&p)).expect_err("fails");
            assert!(matches!(err, CommitError::RolledBack { .. }), "{err}");
            assert_eq!(snapshot(dir.path()), before, "fail_at {fail_at}");
        }
    }

    #[test]
    fn a_file_changed_since_the_patch_was_prepared_is_not_overwritten() {
        let (dir, p) = setup();
        std::fs::write(dir.path().join("b.txt"), "edited by hand\n").expect("write");
        let err = commit(&p, &changes(&p)).expect_err("stale");
        assert!(
            matches!(err, CommitError::Stale(ref path) if path == "b.txt"),
            "{err}"
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt"))
                .ok()
                .as_deref(),
            Some("a\n")
        );
        assert_eq!(
            std::fs::read_to_string(dir.path().join("b.txt"))
                .ok()
                .as_deref(),
            Some("edited by hand\n")
        );
    }
}
