//! Which files in the project a command created, modified or deleted: a cheap stamp of
//! the tree taken before the command runs and again after it, compared.
//!
//! The model asked for `go generate ./...` or `make fmt`; the exit status and the output
//! say whether it worked, not what it touched. The stamp is the evidence for that, and it
//! has to be cheap, because every approved command pays for two: it records metadata
//! only (size, modification time, inode, mode and type, from one `lstat` per file) and
//! never reads a file's content.
//!
//! The stamp walks with the walking tools' own walker (`tools::walk::builder`), so it
//! reports the files the model could list: hidden files are skipped, `.gitignore` applies inside a git
//! repository, `.ignore` and `.rgignore` always apply, every entry named `.git` (in any
//! letter case) is dropped before any ignore rule is consulted, and symlinks are recorded
//! as links, never followed. A build's `target/` or `node_modules/` churn is therefore not
//! reported, nor is an edit to a hidden file such as `.gitignore` itself. The walker does
//! not enter a directory whose `.gitignore`, `.ignore`, `.rgignore` or `.git` is a
//! symlink, not a regular file, or over 1 MiB (at the root that means no stamp at all);
//! those are named in the caveats. The code here only takes metadata (`lstat`, which
//! never follows a symlink or opens a file).
//!
//! What is recorded, per regular file and per symlink:
//!
//! - Directories are not recorded. A directory created empty is not worth reporting, and
//!   one with files in it shows up through them.
//! - FIFOs, sockets and devices are not recorded: no tool reads them.
//! - A path is compared exactly, as bytes; it is shown UTF-8 lossy (U+FFFD for a name
//!   that is not UTF-8) and `/`-separated.
//!
//! A file counts as modified when any of size, modification time (seconds and
//! nanoseconds), inode, mode or type differs, so a file replaced by a rename (a new inode)
//! counts even when its size and time match. The blind spot: a file rewritten in place
//! with the same size within one tick of the file system's clock (the kernel stamps times
//! from a coarse clock, and some file systems keep whole seconds only), or whose time was
//! set back afterwards (`touch -r`, `cp -p`, `tar x`), looks unchanged; telling those
//! apart would mean hashing every file twice per command. A command that changes the
//! ignore rules (appends `gen/` to `.gitignore`) makes the files they now hide look
//! deleted, since the second walk no longer sees them.
//!
//! The stamp is best-effort evidence, never a reason to fail the command: an entry that
//! cannot be read is counted, and left out of the comparison in both stamps rather than
//! reported as created or deleted. A walk stops after [`DEFAULT_LIMIT`] files (or the
//! caller's limit) and says so; the comparison then covers only the files before the
//! point where either walk stopped, so what it lists is true but incomplete.

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::ffi::OsStr;
use std::fs::{FileType, Metadata};
use std::ops::ControlFlow;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use ignore::DirEntry;

use crate::project::Project;
use crate::tools::walk;

/// The most files a stamp records before it stops. Every approved command waits for two
/// walks and holds two stamps, both growing with the tree, so the limit bounds what a huge
/// monorepo costs per command, where the evidence is not worth seconds of waiting; it sits
/// well above the source tree of an ordinary project, whose evidence stays complete.
pub(crate) const DEFAULT_LIMIT: usize = 100_000;

/// A regular file or a symlink: the other types are not recorded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    File,
    Symlink,
}

impl Kind {
    fn of(file_type: FileType) -> Option<Kind> {
        if file_type.is_file() {
            Some(Kind::File)
        } else if file_type.is_symlink() {
            Some(Kind::Symlink)
        } else {
            None
        }
    }
}

/// What is compared for one file: anything here that differs makes it modified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Meta {
    kind: Kind,
    size: u64,
    mtime_secs: i64,
    mtime_nanos: i64,
    inode: u64,
    mode: u32,
}

impl Meta {
    /// `None` when the entry is no longer a file or symlink (replaced between the listing
    /// and the stat).
    fn of(metadata: &Metadata) -> Option<Meta> {
        Some(Meta {
            kind: Kind::of(metadata.file_type())?,
            size: metadata.size(),
            mtime_secs: metadata.mtime(),
            mtime_nanos: metadata.mtime_nsec(),
            inode: metadata.ino(),
            mode: metadata.mode(),
        })
    }
}

/// The files of the project tree at one moment, by path relative to the root.
///
/// Paths are kept as [`PathBuf`]s, whose order (component by component) is the walk's
/// order (sorted by file name within each directory): the files arrive sorted, so they are
/// kept in a `Vec` and two stamps are compared in one merging pass, and "before the point
/// where the walk stopped" is a plain comparison.
#[derive(Debug, Clone, Default)]
pub(crate) struct Stamp {
    /// Sorted by path.
    files: Vec<(PathBuf, Meta)>,
    /// The limit the stamp was taken with, for the note when it stopped.
    limit: usize,
    /// The first file not recorded because the limit was reached: files from it on (in
    /// walk order) are unknown.
    cut: Option<PathBuf>,
    /// Entries the walk or the stat could not read.
    unreadable: usize,
    /// Paths not compared: unreadable entries and directories not entered (the root is
    /// the empty path), with everything beneath them.
    blind: BTreeSet<PathBuf>,
    /// Why each directory not entered was left alone, as shown to the model.
    not_entered: Vec<String>,
}

/// Stamps the project's tree, recording at most `limit` files (and symlinks), with the
/// walk the read tools use (`tools::walk::builder`: ripgrep's filters, `.git` never
/// entered, no directory with an unsafe ignore file entered). Never fails: what cannot be
/// read is counted and left out of the comparison.
pub(crate) fn take(project: &Project, limit: usize) -> Stamp {
    let mut stamp = Stamp {
        limit,
        ..Stamp::default()
    };
    let (builder, skipped) = match walk::builder(project, None) {
        Ok(walk) => walk,
        Err(refused) => {
            stamp.not_entered(PathBuf::new(), &refused.to_string());
            return stamp;
        }
    };
    let root = project.root();
    for item in builder.build() {
        match item {
            Ok(entry) => {
                if stamp.record(root, &entry).is_break() {
                    break;
                }
            }
            Err(err) => stamp.walk_error(root, &err),
        }
    }
    for (dir, why) in skipped.dirs() {
        stamp.not_entered(PathBuf::from(dir), &why);
    }
    // Already sorted unless the walk's order and `Path`'s ever disagree; the merge in
    // `changes_since` relies on it, so it is checked rather than assumed.
    if !stamp.files.is_sorted_by(|a, b| a.0 <= b.0) {
        stamp.files.sort_by(|a, b| a.0.cmp(&b.0));
    }
    stamp
}

impl Stamp {
    /// What changed from `before` (taken earlier, over the same root) to this stamp. A
    /// path either stamp could not see (unreadable, in a directory not entered, or past
    /// where either walk stopped) is left out rather than guessed at.
    pub(crate) fn changes_since(&self, before: &Stamp) -> Changes {
        let covered = |path: &Path| self.covers(path) && before.covers(path);
        let mut changes = Changes {
            untracked: self.cut.is_some() || before.cut.is_some(),
            limit: self.limit.min(before.limit),
            unreadable: self.unreadable.max(before.unreadable),
            not_entered: merged_notes(&before.not_entered, &self.not_entered),
            ..Changes::default()
        };
        changes.tally(
            before.files.iter().filter(|(path, _)| covered(path)),
            self.files.iter().filter(|(path, _)| covered(path)),
        );
        changes
    }

    /// Whether this stamp saw `path`'s place in the tree: before the cut, and not beneath
    /// an unreadable entry or a directory not entered.
    fn covers(&self, path: &Path) -> bool {
        self.cut.as_ref().is_none_or(|cut| path < cut.as_path())
            && (self.blind.is_empty() || !path.ancestors().any(|up| self.blind.contains(up)))
    }

    /// Records a walked entry, or stops the walk when the limit is reached.
    fn record(&mut self, root: &Path, entry: &DirEntry) -> ControlFlow<()> {
        if entry.file_type().and_then(Kind::of).is_none() {
            return ControlFlow::Continue(());
        }
        let path = relative(root, entry.path());
        if self.files.len() >= self.limit {
            self.cut = Some(path);
            return ControlFlow::Break(());
        }
        match entry.metadata() {
            Ok(metadata) => {
                if let Some(meta) = Meta::of(&metadata) {
                    self.files.push((path, meta));
                }
            }
            Err(_) => self.unreadable(Some(path)),
        }
        ControlFlow::Continue(())
    }

    /// Counts an entry the walk could not read (a directory it could not list). Errors
    /// about ignore files (a malformed glob, an unreadable `.gitignore` above the root)
    /// hide no entry, and the walk goes on as ripgrep's does, so they are not counted.
    fn walk_error(&mut self, root: &Path, err: &ignore::Error) {
        if is_entry_error(err) {
            self.unreadable(error_path(err).map(|path| relative(root, path)));
        }
    }

    fn unreadable(&mut self, path: Option<PathBuf>) {
        self.unreadable += 1;
        self.blind.extend(path);
    }

    fn not_entered(&mut self, dir: PathBuf, why: &str) {
        let shown = match shown(&dir) {
            dir if dir.is_empty() => "./".to_owned(),
            dir => format!("{dir}/"),
        };
        self.not_entered.push(format!("{shown} ({why})"));
        self.blind.insert(dir);
    }
}

/// What a command did to the project's files, from two [`Stamp`]s. Paths are relative to
/// the root, `/`-separated, in walk order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Changes {
    pub(crate) created: Vec<String>,
    pub(crate) modified: Vec<String>,
    pub(crate) deleted: Vec<String>,
    /// Either stamp reached its limit: the lists are true but cover only the files before
    /// the point where a walk stopped.
    pub(crate) untracked: bool,
    /// The smaller of the two stamps' limits, for the note when `untracked`.
    pub(crate) limit: usize,
    /// Entries one stamp could not read (the larger count of the two: mostly the same
    /// entries twice), left out of the lists.
    pub(crate) unreadable: usize,
    /// Directories not entered because of an unsafe ignore file, each with the reason.
    pub(crate) not_entered: Vec<String>,
}

impl Changes {
    /// Adds the differences between two lists of files sorted by path, in one merging
    /// pass: a path only `before` has was deleted, one only `after` has was created.
    fn tally<'a>(
        &mut self,
        before: impl Iterator<Item = &'a (PathBuf, Meta)>,
        after: impl Iterator<Item = &'a (PathBuf, Meta)>,
    ) {
        let (mut before, mut after) = (before.peekable(), after.peekable());
        loop {
            let order = match (before.peek(), after.peek()) {
                (None, None) => return,
                (Some(_), None) => Ordering::Less,
                (None, Some(_)) => Ordering::Greater,
                (Some((was, _)), Some((is, _))) => was.cmp(is),
            };
            let was = before.next_if(|_| order.is_le());
            let is = after.next_if(|_| order.is_ge());
            match (was, is) {
                (Some((path, _)), None) => self.deleted.push(shown(path)),
                (None, Some((path, _))) => self.created.push(shown(path)),
                (Some((path, was)), Some((_, is))) if was != is => {
                    self.modified.push(shown(path));
                }
                _ => {}
            }
        }
    }

    /// True when there is nothing to say at all: no file changed, and no caveat (a limit
    /// reached, unreadable entries, directories not entered) weakens that claim. A caller
    /// that prints nothing for an empty result therefore never hides a caveat.
    #[cfg(test)]
    fn is_empty(&self) -> bool {
        self.created.is_empty()
            && self.modified.is_empty()
            && self.deleted.is_empty()
            && !self.untracked
            && self.unreadable == 0
            && self.not_entered.is_empty()
    }

    /// Why the lists may not be the whole story, naming at most `max` directories.
    pub(crate) fn caveats(&self, max: usize) -> Vec<String> {
        let mut caveats = Vec::new();
        if self.untracked {
            let limit = self.limit;
            caveats.push(format!(
                "more than {limit} files in the project: changes past the first {limit} were not tracked"
            ));
        }
        match self.unreadable {
            0 => {}
            1 => caveats.push("1 entry could not be read".to_owned()),
            n => caveats.push(format!("{n} entries could not be read")),
        }
        if !self.not_entered.is_empty() {
            let dirs = clip(&self.not_entered, max, "directories");
            caveats.push(format!("not looked in: {dirs}"));
        }
        caveats
    }
}

/// `names` joined with commas, at most `max` of them, then `and N more`; just a count of
/// `noun` when `max` is zero.
fn clip(names: &[String], max: usize, noun: &str) -> String {
    let shown = names.len().min(max);
    let rest = names.len() - shown;
    if shown == 0 {
        return format!("{rest} {noun}");
    }
    let list = names[..shown].join(", ");
    if rest == 0 {
        list
    } else {
        format!("{list} and {rest} more")
    }
}

/// The notes of both stamps, each once, in order.
fn merged_notes(before: &[String], after: &[String]) -> Vec<String> {
    let unique: BTreeSet<&String> = before.iter().chain(after).collect();
    unique.into_iter().cloned().collect()
}

/// `path` as the model sees it: UTF-8 lossy, `/`-separated (the separator on Unix).
fn shown(path: &Path) -> String {
    path.to_string_lossy().into_owned()
}

/// `path` relative to `root`; the walk only yields paths beneath it, spelled as `root`
/// joined with names. Cut as bytes: `Path::strip_prefix` parses both paths' components,
/// which showed in the time of a stamp.
fn relative(root: &Path, path: &Path) -> PathBuf {
    let bytes = path.as_os_str().as_bytes();
    let rest = bytes
        .strip_prefix(root.as_os_str().as_bytes())
        .map_or(bytes, |rest| rest.strip_prefix(b"/").unwrap_or(rest));
    PathBuf::from(OsStr::from_bytes(rest))
}

/// True for an error about an entry of the walk itself, which the walker always tags with
/// its depth; an error about an ignore file has no depth.
fn is_entry_error(err: &ignore::Error) -> bool {
    match err {
        ignore::Error::WithDepth { .. } | ignore::Error::Loop { .. } => true,
        ignore::Error::WithPath { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            is_entry_error(err)
        }
        _ => false,
    }
}

/// The path an error from the walk is about, if it names one.
fn error_path(err: &ignore::Error) -> Option<&Path> {
    match err {
        ignore::Error::WithPath { path, .. } => Some(path),
        ignore::Error::WithDepth { err, .. } | ignore::Error::WithLineNumber { err, .. } => {
            error_path(err)
        }
        ignore::Error::Loop { child, .. } => Some(child),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;
    use std::time::{Duration, SystemTime};

    use tempfile::TempDir;

    use super::*;

    /// A temporary project with a `.git` directory, so `.gitignore` applies.
    fn project() -> TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        fs::create_dir(dir.path().join(".git")).expect("mkdir .git");
        dir
    }

    fn write(root: &Path, relative: &str, content: &str) {
        let path = root.join(relative);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent).expect("mkdir -p");
        }
        fs::write(path, content).expect("write");
    }

    /// The changes made by `command` to the tree under `root`.
    fn changes(root: &Path, command: impl FnOnce(&Path)) -> Changes {
        let before = stamp(root, DEFAULT_LIMIT);
        command(root);
        stamp(root, DEFAULT_LIMIT).changes_since(&before)
    }

    /// A stamp of the project at `root`, a git work tree.
    fn stamp(root: &Path, limit: usize) -> Stamp {
        take(&Project::open(root, true).expect("open the project"), limit)
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn set_mtime(path: &Path, time: SystemTime) {
        let file = fs::File::options().write(true).open(path).expect("open");
        file.set_modified(time).expect("set mtime");
    }

    #[test]
    fn an_unchanged_tree_has_no_changes() {
        let dir = project();
        write(dir.path(), "a.go", "package a");
        let changes = changes(dir.path(), |_| {});
        assert!(changes.is_empty(), "{changes:?}");
        assert!(changes.caveats(10).is_empty());
    }

    #[test]
    fn a_created_file_is_reported() {
        let dir = project();
        let changes = changes(dir.path(), |root| write(root, "api/gen.go", "package api"));
        assert_eq!(changes.created, names(&["api/gen.go"]));
        assert!(changes.modified.is_empty() && changes.deleted.is_empty());
    }

    #[test]
    fn a_modified_file_is_reported() {
        let dir = project();
        write(dir.path(), "a.go", "package a");
        let changes = changes(dir.path(), |root| write(root, "a.go", "package a // more"));
        assert_eq!(changes.modified, names(&["a.go"]));
        assert!(changes.created.is_empty() && changes.deleted.is_empty());
    }

    #[test]
    fn a_deleted_file_is_reported() {
        let dir = project();
        write(dir.path(), "old.go", "package old");
        let changes = changes(dir.path(), |root| {
            fs::remove_file(root.join("old.go")).expect("rm");
        });
        assert_eq!(changes.deleted, names(&["old.go"]));
        assert!(changes.created.is_empty() && changes.modified.is_empty());
    }

    #[test]
    fn changes_across_directories_land_in_the_right_lists() {
        let dir = project();
        for name in ["a.go", "b/x.go", "b/z.go", "c.go"] {
            write(dir.path(), name, "package p");
        }
        let changes = changes(dir.path(), |root| {
            write(root, "a.go", "package changed");
            fs::remove_file(root.join("b/x.go")).expect("rm");
            write(root, "b/y.go", "package b");
            fs::remove_file(root.join("c.go")).expect("rm");
            write(root, "b-c.go", "package p");
            write(root, "d/e.go", "package d");
        });
        assert_eq!(changes.created, names(&["b/y.go", "b-c.go", "d/e.go"]));
        assert_eq!(changes.modified, names(&["a.go"]));
        assert_eq!(changes.deleted, names(&["b/x.go", "c.go"]));
    }

    #[test]
    fn a_same_size_rewrite_with_a_new_mtime_is_modified() {
        let dir = project();
        let path = dir.path().join("a.go");
        write(dir.path(), "a.go", "aaaa");
        set_mtime(
            &path,
            SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000),
        );
        let changes = changes(dir.path(), |_| {
            fs::write(&path, "bbbb").expect("rewrite");
            set_mtime(
                &path,
                SystemTime::UNIX_EPOCH + Duration::from_secs(2_000_000),
            );
        });
        assert_eq!(changes.modified, names(&["a.go"]));
    }

    #[test]
    fn a_file_replaced_by_rename_is_modified_by_its_new_inode() {
        let dir = project();
        let path = dir.path().join("a.go");
        let time = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        write(dir.path(), "a.go", "aaaa");
        set_mtime(&path, time);
        let changes = changes(dir.path(), |root| {
            // Same size, same time, same mode: only the inode tells.
            let temporary = root.join("a.go.tmp");
            fs::write(&temporary, "bbbb").expect("write");
            set_mtime(&temporary, time);
            fs::rename(&temporary, &path).expect("rename");
        });
        assert_eq!(changes.modified, names(&["a.go"]));
        assert!(changes.created.is_empty() && changes.deleted.is_empty());
    }

    #[test]
    fn a_mode_change_is_modified() {
        use std::os::unix::fs::PermissionsExt;
        let dir = project();
        write(dir.path(), "run.sh", "echo");
        let changes = changes(dir.path(), |root| {
            fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755))
                .expect("chmod");
        });
        assert_eq!(changes.modified, names(&["run.sh"]));
    }

    #[test]
    fn gitignored_files_are_not_reported() {
        let dir = project();
        write(dir.path(), ".gitignore", "target/\n*.log\n");
        write(dir.path(), "target/debug/old", "x");
        let changes = changes(dir.path(), |root| {
            write(root, "target/debug/app", "binary");
            write(root, "target/debug/old", "changed");
            write(root, "build.log", "log");
            write(root, "src/lib.rs", "");
        });
        assert_eq!(changes.created, names(&["src/lib.rs"]));
        assert!(changes.modified.is_empty(), "{changes:?}");
    }

    #[test]
    fn git_internals_are_not_reported_even_when_hidden_files_are_reincluded() {
        let dir = project();
        // `!.*` re-includes hidden files, so only the `.git` filter keeps git's out.
        write(dir.path(), ".ignore", "!.*\n");
        write(dir.path(), ".git/config", "[core]");
        let changes = changes(dir.path(), |root| {
            write(root, ".git/config", "[core]\n\tbare = false");
            write(root, ".git/objects/ab/cdef", "blob");
            write(root, "sub/.GIT/HEAD", "ref: refs/heads/main");
            write(root, ".env", "KEY=1");
        });
        assert_eq!(changes.created, names(&[".env"]), "{changes:?}");
        assert!(changes.modified.is_empty(), "{changes:?}");
    }

    #[test]
    fn hidden_files_are_not_reported() {
        let dir = project();
        let changes = changes(dir.path(), |root| {
            write(root, ".env", "KEY=1");
            write(root, ".cache/go-build/x", "x");
            write(root, "pkg/.hidden", "x");
        });
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn an_empty_directory_is_not_a_change() {
        let dir = project();
        let changes = changes(dir.path(), |root| {
            fs::create_dir(root.join("empty")).expect("mkdir");
        });
        assert!(changes.is_empty(), "{changes:?}");
    }

    #[test]
    fn a_symlink_is_recorded_as_a_link_and_not_followed() {
        let dir = project();
        let outside = tempfile::tempdir().expect("tempdir");
        write(outside.path(), "secret/key.pem", "key");
        let changes = changes(dir.path(), |root| {
            symlink(outside.path().join("secret"), root.join("link")).expect("symlink");
        });
        assert_eq!(changes.created, names(&["link"]));
    }

    #[test]
    fn a_retargeted_symlink_is_modified() {
        let dir = project();
        symlink("aaaa", dir.path().join("link")).expect("symlink");
        let changes = changes(dir.path(), |root| {
            // Made beside it, then renamed over it: a removed link's inode could be
            // reused within the same clock tick, which would be the blind spot.
            symlink("bbbb", root.join("link.tmp")).expect("symlink");
            fs::rename(root.join("link.tmp"), root.join("link")).expect("rename");
        });
        assert_eq!(changes.modified, names(&["link"]));
    }

    #[test]
    fn a_tree_over_the_limit_is_untracked() {
        let dir = project();
        for i in 0..4 {
            write(dir.path(), &format!("f{i}"), "x");
        }
        let stamp = stamp(dir.path(), 3);
        let changes = stamp.changes_since(&stamp);
        assert!(changes.untracked);
        assert!(!changes.is_empty());
        assert_eq!(
            changes.caveats(10),
            ["more than 3 files in the project: changes past the first 3 were not tracked"]
        );
    }

    #[test]
    fn a_tree_at_the_limit_is_tracked() {
        let dir = project();
        for i in 0..3 {
            write(dir.path(), &format!("f{i}"), "x");
        }
        let stamp = stamp(dir.path(), 3);
        assert!(!stamp.changes_since(&stamp).untracked);
    }

    #[test]
    fn past_the_limit_nothing_is_guessed() {
        let dir = project();
        for name in ["a", "b/x", "b/y", "c", "d"] {
            write(dir.path(), name, "x");
        }
        let before = stamp(dir.path(), 2);
        write(dir.path(), "a", "changed");
        fs::remove_file(dir.path().join("d")).expect("rm");
        let after = stamp(dir.path(), 3);
        let changes = after.changes_since(&before);
        // `before` stopped at `b/y`: `a` is compared, the rest is unknown, so neither
        // `c` (seen only after) is created nor `d` deleted.
        assert_eq!(changes.modified, names(&["a"]));
        assert!(changes.created.is_empty() && changes.deleted.is_empty());
        assert!(changes.untracked);
    }

    #[test]
    fn the_caveats_are_named() {
        let changes = Changes {
            untracked: true,
            limit: 5,
            unreadable: 2,
            not_entered: names(&["vendor/ (its `.gitignore` is a symlink)"]),
            ..Changes::default()
        };
        assert_eq!(
            changes.caveats(10).join("; "),
            "more than 5 files in the project: changes past the first 5 were not tracked; 2 entries could not be read; not looked in: vendor/ (its `.gitignore` is a symlink)"
        );
    }

    #[test]
    fn a_malformed_ignore_file_above_the_root_is_not_an_unreadable_entry() {
        let outer = project();
        write(outer.path(), ".gitignore", "[z-a]\n");
        write(outer.path(), "inner/a.go", "package a");
        let stamp = stamp(&outer.path().join("inner"), DEFAULT_LIMIT);
        let changes = stamp.changes_since(&stamp);
        assert_eq!(changes.unreadable, 0, "{changes:?}");
    }

    #[test]
    fn a_directory_with_a_symlinked_ignore_file_is_not_entered_or_compared() {
        let dir = project();
        let outside = tempfile::NamedTempFile::new().expect("tempfile");
        write(dir.path(), "vendor/a.go", "package a");
        let changes = changes(dir.path(), |root| {
            symlink(outside.path(), root.join("vendor/.gitignore")).expect("symlink");
            fs::remove_file(root.join("vendor/a.go")).expect("rm");
            write(root, "b.go", "package b");
        });
        // vendor/ is unknown after, so `a.go` is not claimed deleted.
        assert_eq!(changes.created, names(&["b.go"]));
        assert!(changes.deleted.is_empty(), "{changes:?}");
        assert_eq!(changes.not_entered.len(), 1, "{changes:?}");
        assert!(
            changes.not_entered[0].starts_with(
                "vendor/ (`vendor/.gitignore` is a symlink that leads outside the project;"
            ),
            "{changes:?}"
        );
    }

    #[test]
    fn a_root_with_an_unsafe_ignore_file_is_not_walked() {
        let dir = project();
        let outside = tempfile::NamedTempFile::new().expect("tempfile");
        write(dir.path(), "a.go", "package a");
        symlink(outside.path(), dir.path().join(".ignore")).expect("symlink");
        let changes = changes(dir.path(), |root| write(root, "b.go", "package b"));
        assert!(changes.created.is_empty());
        let caveats = changes.caveats(10);
        assert_eq!(caveats.len(), 1, "{caveats:?}");
        assert!(
            caveats[0].starts_with(
                "not looked in: ./ (refused: `.ignore` is a symlink that leads outside the project;"
            ),
            "{caveats:?}"
        );
    }
}
