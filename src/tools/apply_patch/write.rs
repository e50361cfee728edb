//! Writing a patch's post-images: all of them or none.
//!
//! Each file is replaced atomically (temporary file, fdatasync, rename; see
//! [`Project::write_atomic`]), but a patch touches several files, so the transaction is
//! ours, in three steps:
//!
//! 1. every file is re-read and compared with the bytes the patch was computed from, so an
//!    edit made while the person was reading the diff is never overwritten with stale
//!    content;
//! 2. every new content is written to a temporary file beside its target and flushed to
//!    disk, several at once so the flushes overlap. A failure here (a full disk, a file
//!    size limit) leaves nothing visible to undo: the temporary files are removed;
//! 3. the temporary files are renamed into place and deleted files removed, in patch
//!    order, each only after the symlink check is repeated on its path (see
//!    [`Project::install`]); if one of these fails or is refused, the ones already done
//!    are put back and the files created are removed.
//!
//! Like `git apply`, a directory left empty by a deletion or a rename is removed
//! afterwards.

use crate::project::{BoundaryError, FileMode, Project, ProjectPath, Staged, WriteMode};

/// Files staged at once, each on its own thread.
const STAGED_AT_ONCE: usize = 8;

/// One file's change.
#[derive(Debug, Clone)]
pub struct Change {
    /// The file.
    pub(crate) path: ProjectPath,
    /// Its bytes and mode when the patch was computed, or `None` if it did not exist.
    pub(crate) before: Option<(Vec<u8>, u32)>,
    /// Its bytes afterwards, or `None` to delete it.
    pub(crate) after: Option<Vec<u8>>,
    /// The permission bits the written file gets.
    pub(crate) mode: WriteMode,
}

impl Change {
    /// The file's git mode before the write (`None`: it did not exist).
    pub(crate) fn mode_before(&self) -> Option<FileMode> {
        self.before
            .as_ref()
            .map(|(_, bits)| FileMode::of_bits(*bits))
    }

    /// The file's git mode after the write (`None`: it is deleted).
    pub(crate) fn mode_after(&self) -> Option<FileMode> {
        self.after.as_ref().map(|_| self.mode.file_mode())
    }
}

/// Where files are written: the project, or a wrapper that injects failures in tests.
pub(crate) trait Store: Sync {
    /// The file's current bytes, or `None` if it does not exist. A file larger than
    /// `limit` bytes is an error ([`BoundaryError::TooLarge`]) and is never read whole.
    fn read(&self, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, BoundaryError>;
    /// Writes the bytes to a flushed temporary file beside the target; nothing is visible
    /// at the target yet (see [`Project::stage`]).
    fn stage(
        &self,
        path: &ProjectPath,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<Staged, BoundaryError>;
    /// Renames a staged file into place, after the last-moment symlink check (see
    /// [`Project::install`]).
    fn install(&self, staged: Staged) -> Result<(), BoundaryError>;
    /// Replaces the file atomically.
    fn write(
        &self,
        path: &ProjectPath,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<(), BoundaryError> {
        let staged = self.stage(path, bytes, mode)?;
        self.install(staged)
    }
    /// Removes the file.
    fn remove(&self, path: &ProjectPath) -> Result<(), BoundaryError>;
    /// Removes an empty directory (best effort).
    fn remove_empty_dir(&self, path: &str);
    /// True when something exists at the path.
    fn exists(&self, path: &str) -> bool;
}

impl Store for Project {
    fn read(&self, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, BoundaryError> {
        match Project::read_capped(self, path, limit) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(BoundaryError::NotFound(_)) => Ok(None),
            // `x/y` where `x` is a file (the patch replaces `x` with a directory).
            Err(BoundaryError::NotAFile(_)) if !Project::exists(self, path.as_str()) => Ok(None),
            Err(e) => Err(e),
        }
    }
    fn stage(
        &self,
        path: &ProjectPath,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<Staged, BoundaryError> {
        Project::stage(self, path, bytes, mode)
    }
    fn install(&self, staged: Staged) -> Result<(), BoundaryError> {
        Project::install(self, staged)
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
pub(crate) enum CommitError {
    /// Files changed on disk after the patch was computed (every one of them, in patch
    /// order), so nothing was written.
    #[error(
        "{} changed on disk after the patch was prepared (while waiting for approval); nothing was written. Read it again and send a new patch",
        .0.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
    )]
    Stale(Vec<String>),
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

/// Writes every change, or none of them. The write-time precondition comes first: every
/// target must still hold exactly `before` (for a file the model read, apply_patch has
/// already checked that `before` is the revision it read); if any does not, all the
/// changed ones are named and nothing is written.
pub(crate) fn commit(store: &impl Store, changes: &[Change]) -> Result<(), CommitError> {
    let stale: Vec<String> = changes
        .iter()
        .filter(|change| {
            // A file that cannot be read now cannot be shown to be unchanged, and one
            // longer than `before` (read no further than that) has changed.
            let limit = change
                .before
                .as_ref()
                .map_or(0, |(bytes, _)| bytes.len() as u64);
            store.read(&change.path, limit).map_or(true, |now| {
                now.as_deref() != change.before.as_ref().map(|(bytes, _)| bytes.as_slice())
            })
        })
        .map(|change| change.path.to_string())
        .collect();
    if !stale.is_empty() {
        return Err(CommitError::Stale(stale));
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

    // Deepest first, so parents are empty by the time they are tried.
    new_dirs.sort_by_key(|d| std::cmp::Reverse(d.len()));
    let remove_new_dirs = || {
        for dir in &new_dirs {
            store.remove_empty_dir(dir);
        }
    };

    // A file that becomes a directory (`x` deleted, `x/y` created) can only be staged
    // once the file is gone: such a patch is written one file at a time, in order.
    let replaces_a_file = changes.iter().any(|c| {
        changes.iter().any(|d| {
            d.after.is_none()
                && c.after.is_some()
                && c.path.as_str().starts_with(&format!("{}/", d.path))
        })
    });
    let mut staged = if replaces_a_file {
        changes.iter().map(|_| None).collect()
    } else {
        match stage_all(store, changes) {
            Ok(staged) => staged,
            Err((path, source)) => {
                remove_new_dirs();
                return Err(CommitError::RolledBack { path, source });
            }
        }
    };

    for (done, change) in changes.iter().enumerate() {
        let result = match (&change.after, staged[done].take()) {
            (Some(_), Some(file)) => store.install(file),
            (Some(bytes), None) => store.write(&change.path, bytes, change.mode),
            (None, _) => store.remove(&change.path),
        };
        if let Err(source) = result {
            // The files staged for later changes go (dropping them removes them).
            drop(staged);
            let unrestored = roll_back(store, &changes[..done]);
            remove_new_dirs();
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

/// Stages every change that writes a file, [`STAGED_AT_ONCE`] at a time on their own
/// threads, so the flushes to disk overlap. The result is index-aligned with `changes`
/// (`None` for deletions). On the first failure every staged file is dropped, which
/// removes it, and the failing path is returned.
fn stage_all(
    store: &impl Store,
    changes: &[Change],
) -> Result<Vec<Option<Staged>>, (String, BoundaryError)> {
    let stage = |change: &Change| -> Option<Result<Staged, BoundaryError>> {
        let bytes = change.after.as_ref()?;
        Some(store.stage(&change.path, bytes, change.mode))
    };
    let mut staged = Vec::with_capacity(changes.len());
    for chunk in changes.chunks(STAGED_AT_ONCE) {
        let writes = chunk.iter().filter(|c| c.after.is_some()).count();
        let results: Vec<Option<Result<Staged, BoundaryError>>> = if writes < 2 {
            chunk.iter().map(stage).collect()
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = chunk
                    .iter()
                    .map(|change| scope.spawn(move || stage(change)))
                    .collect();
                handles
                    .into_iter()
                    .map(|handle| {
                        handle.join().unwrap_or_else(|_| {
                            Some(Err(BoundaryError::Io {
                                path: String::new(),
                                source: std::io::Error::other("a writing thread panicked"),
                            }))
                        })
                    })
                    .collect()
            })
        };
        for (change, result) in chunk.iter().zip(results) {
            match result {
                None => staged.push(None),
                Some(Ok(file)) => staged.push(Some(file)),
                Some(Err(source)) => return Err((change.path.to_string(), source)),
            }
        }
    }
    Ok(staged)
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
            Some((bytes, mode)) => {
                // A deleted file whose path a later change turned into a directory
                // (`x` deleted, `x/y` created): that directory is empty again by now
                // (newest changes are undone first) and must go before `x` comes back.
                store.remove_empty_dir(change.path.as_str());
                store.write(&change.path, bytes, WriteMode::Exact(*mode))
            }
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

    /// Which step fails, for which path.
    #[derive(Clone, Copy, Debug)]
    enum Fail {
        Stage(&'static str),
        Install(&'static str),
        Remove(&'static str),
    }

    /// The project, with one step failing.
    struct FailingStore<'a> {
        project: &'a Project,
        fail: Fail,
    }

    fn injected(path: &ProjectPath) -> BoundaryError {
        BoundaryError::Io {
            path: path.to_string(),
            source: std::io::Error::other("disk full"),
        }
    }

    impl Store for FailingStore<'_> {
        fn read(&self, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, BoundaryError> {
            Store::read(self.project, path, limit)
        }
        fn stage(
            &self,
            path: &ProjectPath,
            bytes: &[u8],
            mode: WriteMode,
        ) -> Result<Staged, BoundaryError> {
            if matches!(self.fail, Fail::Stage(p) if p == path.as_str()) {
                return Err(injected(path));
            }
            Store::stage(self.project, path, bytes, mode)
        }
        fn install(&self, staged: Staged) -> Result<(), BoundaryError> {
            if matches!(self.fail, Fail::Install(p) if p == staged.path()) {
                let path = self.project.resolve(staged.path()).expect("path");
                return Err(injected(&path));
            }
            Store::install(self.project, staged)
        }
        fn remove(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
            if matches!(self.fail, Fail::Remove(p) if p == path.as_str()) {
                return Err(injected(path));
            }
            Store::remove(self.project, path)
        }
        fn remove_empty_dir(&self, path: &str) {
            Store::remove_empty_dir(self.project, path);
        }
        fn exists(&self, path: &str) -> bool {
            Store::exists(self.project, path)
        }
    }

    /// What a process running beside metron swaps in just before a rename.
    #[derive(Clone, Copy, Debug)]
    enum Swap {
        /// The target's directory becomes a symlink to the real one, moved aside.
        ParentSymlink,
        /// The target becomes a symlink to a file outside the project.
        TargetSymlink,
        /// The target's directory is moved away and an empty one put in its place.
        ParentReplaced,
    }

    /// The project, with `swap` done once, immediately before `at` is renamed into place:
    /// after the question and after staging, at the last moment the check can run.
    struct SwappingStore<'a> {
        project: &'a Project,
        root: &'a std::path::Path,
        outside: &'a std::path::Path,
        at: &'static str,
        swap: Swap,
        done: std::sync::atomic::AtomicBool,
    }

    impl SwappingStore<'_> {
        fn do_swap(&self) {
            let root = self.root;
            match self.swap {
                Swap::ParentSymlink => {
                    std::fs::rename(root.join("sub"), root.join("sub.real")).expect("move");
                    std::os::unix::fs::symlink("sub.real", root.join("sub")).expect("symlink");
                }
                Swap::TargetSymlink => {
                    std::fs::rename(root.join("sub/c.txt"), root.join("sub/c.real")).expect("move");
                    std::os::unix::fs::symlink(self.outside, root.join("sub/c.txt"))
                        .expect("symlink");
                }
                Swap::ParentReplaced => {
                    std::fs::rename(root.join("sub"), root.join("sub.old")).expect("move");
                    std::fs::create_dir(root.join("sub")).expect("mkdir");
                }
            }
        }
    }

    impl Store for SwappingStore<'_> {
        fn read(&self, path: &ProjectPath, limit: u64) -> Result<Option<Vec<u8>>, BoundaryError> {
            Store::read(self.project, path, limit)
        }
        fn stage(
            &self,
            path: &ProjectPath,
            bytes: &[u8],
            mode: WriteMode,
        ) -> Result<Staged, BoundaryError> {
            Store::stage(self.project, path, bytes, mode)
        }
        fn install(&self, staged: Staged) -> Result<(), BoundaryError> {
            let now = staged.path() == self.at
                && !self.done.swap(true, std::sync::atomic::Ordering::SeqCst);
            if now {
                self.do_swap();
            }
            Store::install(self.project, staged)
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

    #[test]
    fn a_symlink_or_directory_swapped_in_before_the_rename_stops_the_whole_patch() {
        for swap in [
            Swap::ParentSymlink,
            Swap::TargetSymlink,
            Swap::ParentReplaced,
        ] {
            let outside = tempfile::tempdir().expect("tempdir");
            let outside_file = outside.path().join("target.txt");
            std::fs::write(&outside_file, "outside\n").expect("write");
            let dir = tempfile::tempdir().expect("tempdir");
            let root = dir.path();
            std::fs::write(root.join("a.txt"), "a\n").expect("write");
            std::fs::create_dir(root.join("sub")).expect("mkdir");
            std::fs::write(root.join("sub/c.txt"), "c\n").expect("write");
            let p = Project::open(root, true).expect("open");
            let path = |s: &str| p.resolve(s).expect("path");
            let changes = vec![
                Change {
                    path: path("a.txt"),
                    before: Some((b"a\n".to_vec(), 0o644)),
                    after: Some(b"A\n".to_vec()),
                    mode: WriteMode::Exact(0o644),
                },
                Change {
                    path: path("sub/c.txt"),
                    before: Some((b"c\n".to_vec(), 0o644)),
                    after: Some(b"C\n".to_vec()),
                    mode: WriteMode::Exact(0o644),
                },
            ];
            let store = SwappingStore {
                project: &p,
                root,
                outside: &outside_file,
                at: "sub/c.txt",
                swap,
                done: std::sync::atomic::AtomicBool::new(false),
            };
            let err = commit(&store, &changes).expect_err("refused");
            let refused = match &err {
                CommitError::RolledBack { path, source } if path == "sub/c.txt" => source,
                other => panic!("{swap:?}: {other}"),
            };
            match swap {
                Swap::ParentSymlink | Swap::TargetSymlink => assert!(
                    matches!(refused, BoundaryError::ThroughSymlink { .. }),
                    "{swap:?}: {refused}"
                ),
                Swap::ParentReplaced => assert!(
                    matches!(refused, BoundaryError::DirectoryReplaced(_)),
                    "{swap:?}: {refused}"
                ),
            }
            // The file written before is put back, nothing was written through the swap,
            // and no staged file is left anywhere.
            let read = |rel: &str| std::fs::read_to_string(root.join(rel)).ok();
            assert_eq!(read("a.txt").as_deref(), Some("a\n"), "{swap:?}");
            assert_eq!(
                std::fs::read_to_string(&outside_file).ok().as_deref(),
                Some("outside\n")
            );
            let (moved, left) = match swap {
                // `walk` follows the symlink `sub`: its `c.txt` is `sub.real/c.txt`.
                Swap::ParentSymlink => (
                    "sub.real/c.txt",
                    vec!["a.txt", "sub", "sub.real", "sub.real/c.txt", "sub/c.txt"],
                ),
                Swap::TargetSymlink => (
                    "sub/c.real",
                    vec!["a.txt", "sub", "sub/c.real", "sub/c.txt"],
                ),
                Swap::ParentReplaced => (
                    "sub.old/c.txt",
                    vec!["a.txt", "sub", "sub.old", "sub.old/c.txt"],
                ),
            };
            assert_eq!(read(moved).as_deref(), Some("c\n"), "{swap:?}");
            let mut names: Vec<String> = walk(root)
                .iter()
                .filter_map(|p| p.strip_prefix(root).ok().map(|p| p.display().to_string()))
                .collect();
            names.sort();
            assert_eq!(names, left, "{swap:?}");
        }
    }

    #[test]
    fn a_file_replaced_by_a_directory_comes_back_when_the_new_file_fails() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("x"), "old x\n").expect("write");
        let p = Project::open(dir.path(), true).expect("open");
        let path = |s: &str| p.resolve(s).expect("path");
        let changes = vec![
            Change {
                path: path("x"),
                before: Some((b"old x\n".to_vec(), 0o644)),
                after: None,
                mode: WriteMode::Exact(0o644),
            },
            Change {
                path: path("x/y"),
                before: None,
                after: Some(b"y\n".to_vec()),
                mode: WriteMode::Exact(0o644),
            },
        ];
        let store = FailingStore {
            project: &p,
            fail: Fail::Install("x/y"),
        };
        let err = commit(&store, &changes).expect_err("fails");
        assert!(matches!(err, CommitError::RolledBack { .. }), "{err}");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("x"))
                .ok()
                .as_deref(),
            Some("old x\n")
        );
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
                mode: WriteMode::Exact(0o644),
            },
            Change {
                path: path("b.txt"),
                before: Some((b"b\n".to_vec(), 0o644)),
                after: None,
                mode: WriteMode::Exact(0o644),
            },
            Change {
                path: path("new/dir/c.txt"),
                before: None,
                after: Some(b"c\n".to_vec()),
                mode: WriteMode::Exact(0o644),
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
    fn a_failure_at_any_step_leaves_everything_as_it_was() {
        for fail in [
            Fail::Stage("a.txt"),
            Fail::Stage("new/dir/c.txt"),
            Fail::Remove("b.txt"),
            // By then a.txt is written and b.txt removed: both are put back.
            Fail::Install("new/dir/c.txt"),
        ] {
            let (dir, p) = setup();
            let before = snapshot(dir.path());
            let store = FailingStore { project: &p, fail };
            let err = commit(&store, &changes(&p)).expect_err("fails");
            assert!(matches!(err, CommitError::RolledBack { .. }), "{err}");
            // Nothing left behind either: no temporary file, no new directory.
            assert_eq!(snapshot(dir.path()), before, "{fail:?}");
        }
    }

    #[test]
    fn a_file_changed_since_the_patch_was_prepared_is_not_overwritten() {
        let (dir, p) = setup();
        std::fs::write(dir.path().join("b.txt"), "edited by hand\n").expect("write");
        let err = commit(&p, &changes(&p)).expect_err("stale");
        assert!(
            matches!(err, CommitError::Stale(ref paths) if paths == &["b.txt"]),
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
