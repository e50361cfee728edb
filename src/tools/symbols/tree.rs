//! The list of Go and Rust files, and proof that it is still current without walking
//! the tree again.
//!
//! Walking a tree the size of Go's standard library costs about 30 ms, more than the
//! whole budget of a repeated lookup. But the walk's result depends only on things whose
//! `stat` shows any change:
//!
//! - the listing of every directory it entered: adding, removing or renaming an entry
//!   changes the directory's modification time, and a permission change its ctime;
//! - the ignore rules: `.gitignore`, `.ignore` and `.rgignore` in those directories and
//!   in the root's ancestors, whether each has a `.git` (which decides whether
//!   `.gitignore` applies; only its presence is watched, since git commands touch the
//!   directory all the time), `.git/info/exclude`, git's global config files and the
//!   global excludes file.
//!
//! So a walk records a [`Snapshot`]: the stamp (or absence) of each of those paths. The
//! next lookup stats them (about a thousand `stat`s for Go's tree, 3 ms) and reuses the
//! list only if every stamp is unchanged. As with file contents, stamps taken within
//! [`RACY_WINDOW`](super::cache::RACY_WINDOW) of the walk are not trusted: a change in the same clock tick could
//! hide, so such a snapshot is never reused and the next lookup walks again. A linked
//! worktree or submodule (a `.git` *file*) keeps its exclude file elsewhere; trees with
//! one are always walked again rather than tracked.
//!
//! Everything beneath the root is looked at through the project boundary: the directories
//! are opened from the root down, each from its parent ([`Project::open_dir`]), and a
//! directory's stamp or a rule file's is one lookup of a name in an open directory. Only
//! the paths outside the root (the ancestors' files, git's global files) are `stat`ed by
//! path.

use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::cache::Stamp;
use super::lang::{HeaderVote, Lang};
use crate::project::{Project, ProjectDir, ProjectPath};
use crate::tools::walk;

/// Files whose content changes what the walk yields, checked in every directory walked
/// and in every ancestor of the root.
const IGNORE_FILES: [&str; 3] = [".gitignore", ".ignore", ".rgignore"];

/// What is remembered about one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Seen {
    /// Its stamp, or `None` when it did not exist.
    Stamp(Option<Stamp>),
    /// Only whether it existed: a `.git` directory's own stamp changes with every git
    /// command, but only its presence matters to the walk.
    Exists(bool),
}

impl Seen {
    /// What the same look sees in `metadata`.
    fn now(&self, metadata: io::Result<cap_std::fs::Metadata>) -> Seen {
        match self {
            Seen::Stamp(_) => Seen::Stamp(metadata.ok().map(|m| Stamp::of(&m))),
            Seen::Exists(_) => Seen::Exists(metadata.is_ok()),
        }
    }
}

/// A path outside the project (git's global files, the root's ancestors), looked at by
/// its absolute path without following a final symlink. Nothing beneath the root is
/// looked at this way.
fn outside_metadata(path: &Path) -> io::Result<cap_std::fs::Metadata> {
    std::fs::symlink_metadata(path).map(cap_std::fs::Metadata::from_just_metadata)
}

/// One directory beneath the root that the walk entered.
#[derive(Debug, Clone)]
struct WatchedDir {
    /// Relative to the root; empty for the root itself.
    path: PathBuf,
    /// The directory's own stamp.
    stamp: Option<Stamp>,
    /// The rule files and `.git` in it, by path relative to it, with what was seen.
    entries: Vec<(&'static str, Seen)>,
}

impl WatchedDir {
    fn unchanged(&self, dirs: &mut OpenDirs<'_>) -> bool {
        if dirs.stamp(&self.path) != self.stamp {
            return false;
        }
        if self.entries.is_empty() {
            return true;
        }
        match dirs.get(&self.path) {
            Ok(dir) => self
                .entries
                .iter()
                .all(|(name, seen)| seen.now(dir.symlink_metadata(name)) == *seen),
            Err(_) => false,
        }
    }
}

/// The directories from the root down to the last one looked at, each open through the
/// project boundary. Directories come in walk order (a parent before its children), so
/// the parent of the next one is on the stack, and opening it, or `stat`ing it, is one
/// lookup of a single name in an open directory (cheaper than a `stat` by path).
struct OpenDirs<'a> {
    project: &'a Project,
    open: Vec<(PathBuf, ProjectDir)>,
}

impl<'a> OpenDirs<'a> {
    fn new(project: &'a Project) -> OpenDirs<'a> {
        OpenDirs {
            project,
            open: Vec::new(),
        }
    }

    /// The open directory at `path` (relative to the root), opened from the nearest open
    /// ancestor when it is not open yet.
    fn get(&mut self, path: &Path) -> io::Result<&ProjectDir> {
        while self
            .open
            .last()
            .is_some_and(|(top, _)| !path.starts_with(top))
        {
            self.open.pop();
        }
        let opened = match self.open.last() {
            Some((top, _)) if top == path => None,
            Some((top, dir)) => Some(dir.open_dir(path.strip_prefix(top).unwrap_or(path))?),
            None => Some(self.project.open_dir(path)?),
        };
        if let Some(dir) = opened {
            self.open.push((path.to_path_buf(), dir));
        }
        match self.open.last() {
            Some((_, dir)) => Ok(dir),
            None => Err(io::ErrorKind::NotFound.into()),
        }
    }

    /// The stamp of the directory at `path`, looked up by name in its parent (the root's
    /// from its own handle), without following a symlink in its place; `None` when it is
    /// gone or cannot be examined.
    fn stamp(&mut self, path: &Path) -> Option<Stamp> {
        let metadata = match (path.parent(), path.file_name()) {
            (Some(parent), Some(name)) => self
                .get(parent)
                .and_then(|parent| parent.symlink_metadata(name)),
            _ => self.get(path).and_then(ProjectDir::metadata),
        };
        metadata.ok().map(|m| Stamp::of(&m))
    }
}

/// Paths whose stamps decide whether a walk's result still holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Paths outside the root (git's global files, the ignore files and `.git` of the
    /// root's ancestors), with what was seen of each.
    outside: Vec<(PathBuf, Seen)>,
    /// The directories beneath the root the walk entered, in walk order.
    dirs: Vec<WatchedDir>,
    /// False when some stamp was too recent to trust, or the tree has a `.git` file.
    reusable: bool,
}

impl Snapshot {
    /// True when the walk that took this snapshot would yield the same files now.
    pub(crate) fn unchanged(&self, project: &Project) -> bool {
        if !self.reusable {
            return false;
        }
        let outside_same = || {
            self.outside
                .iter()
                .all(|(path, seen)| seen.now(outside_metadata(path)) == *seen)
        };
        let same = |dirs: &[WatchedDir]| {
            let mut open = OpenDirs::new(project);
            dirs.iter().all(|dir| dir.unchanged(&mut open))
        };
        // A thousand `stat`s take about 2 ms; two threads halve that.
        if self.dirs.len() < 256 {
            return outside_same() && same(&self.dirs);
        }
        let (first, second) = self.dirs.split_at(self.dirs.len() / 2);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| same(second));
            let mine = outside_same() && same(first);
            other.join().unwrap_or(false) && mine
        })
    }

    /// Notes a stamp: one too recent to trust makes the snapshot single-use.
    fn note(&mut self, stamp: Option<Stamp>, started: SystemTime) -> Option<Stamp> {
        if stamp.is_some_and(|s| s.is_racy(started)) {
            self.reusable = false;
        }
        stamp
    }

    /// Records the stamp of a path outside the root.
    fn watch_outside(&mut self, path: PathBuf, started: SystemTime) {
        let stamp = outside_metadata(&path).ok().map(|m| Stamp::of(&m));
        let stamp = self.note(stamp, started);
        self.outside.push((path, Seen::Stamp(stamp)));
    }

    /// Records a `.git` entry outside the root: a directory's exclude file is watched, a
    /// file (linked worktree, submodule) points elsewhere and makes the snapshot
    /// single-use.
    fn watch_outside_git(&mut self, git: PathBuf, started: SystemTime) {
        match outside_metadata(&git) {
            Ok(metadata) if metadata.is_dir() => {
                self.watch_outside(git.join("info").join("exclude"), started);
                self.outside.push((git, Seen::Exists(true)));
            }
            Ok(_) => self.reusable = false,
            Err(_) => self.outside.push((git, Seen::Exists(false))),
        }
    }

    /// Records a directory beneath the root that the walk entered: its stamp, the rule
    /// files in it, and its `.git` (as for the ancestors). Absent rule files need no
    /// watching: creating one changes the directory's stamp.
    fn watch_dir(&mut self, dirs: &mut OpenDirs<'_>, path: PathBuf, started: SystemTime) {
        let stamp = dirs.stamp(&path);
        let stamp = self.note(stamp, started);
        let mut entries = Vec::new();
        // One the walk could not open either (no permission) has nothing to watch but
        // its stamp, which a change of permissions changes.
        if let Ok(dir) = dirs.get(&path) {
            let stamp_of = |name| dir.symlink_metadata(name).ok().map(|m| Stamp::of(&m));
            for name in IGNORE_FILES {
                if let Some(stamp) = stamp_of(name) {
                    entries.push((name, Seen::Stamp(self.note(Some(stamp), started))));
                }
            }
            match dir.symlink_metadata(".git") {
                Ok(metadata) if metadata.is_dir() => {
                    let exclude = self.note(stamp_of(".git/info/exclude"), started);
                    entries.push((".git/info/exclude", Seen::Stamp(exclude)));
                    entries.push((".git", Seen::Exists(true)));
                }
                Ok(_) => self.reusable = false,
                Err(_) => {}
            }
        }
        self.dirs.push(WatchedDir {
            path,
            stamp,
            entries,
        });
    }
}

/// Walks the project (with the shared walk, so the rules are list_files') and returns
/// its files in a supported language in walk order, with a snapshot to check the result
/// against.
pub(crate) fn walk(project: &Project) -> (Vec<(ProjectPath, Lang)>, Snapshot) {
    let started = SystemTime::now();
    let root = project.root();
    let mut files = Vec::new();
    let mut snapshot = Snapshot {
        reusable: true,
        ..Snapshot::default()
    };

    // Global rules, and the root's ancestors (the walk reads their ignore files too).
    for path in global_rule_files() {
        snapshot.watch_outside(path, started);
    }
    for ancestor in project.canonical_root().ancestors().skip(1) {
        for name in IGNORE_FILES {
            snapshot.watch_outside(ancestor.join(name), started);
        }
        snapshot.watch_outside_git(ancestor.join(".git"), started);
    }

    // The same entries `walk::files` yields, plus the directories it entered. The walk
    // itself reads directories by path (the `ignore` crate's walker); everything looked
    // at here goes through the project boundary.
    let mut dirs = OpenDirs::new(project);
    // A root with an unsafe ignore file is refused by find_symbol before it gets here
    // ([`walk::check_root`]); should it appear in between, nothing is walked and the
    // snapshot is never reused.
    let Ok((builder, skipped)) = walk::builder(project, None) else {
        snapshot.reusable = false;
        return (files, snapshot);
    };
    for entry in builder.build().filter_map(Result::ok) {
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        let relative = entry.path().strip_prefix(root).unwrap_or(Path::new(""));
        if file_type.is_dir() {
            snapshot.watch_dir(&mut dirs, relative.to_path_buf(), started);
        } else if file_type.is_file()
            && let Some(path) = project.walked_path(relative)
            && let Some(lang) = Lang::of_path(path.as_str())
        {
            files.push((path, lang));
        }
    }
    let mut vote = HeaderVote::default();
    for (path, lang) in &files {
        vote.see(path.as_str(), *lang);
    }
    if vote.header_lang().is_some() {
        for (path, lang) in &mut files {
            *lang = vote.lang_of(path.as_str(), *lang);
        }
    }
    // A skipped directory is not watched, so fixing its ignore file would go unnoticed.
    if !skipped.notes().is_empty() {
        snapshot.reusable = false;
    }
    (files, snapshot)
}

/// Git's global configuration files and the global excludes file they name, which the
/// walk consults for `.gitignore` semantics.
fn global_rule_files() -> Vec<PathBuf> {
    let mut paths = Vec::new();
    let env_path = |key: &str| {
        std::env::var_os(key)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env_path("HOME");
    let xdg = env_path("XDG_CONFIG_HOME").or_else(|| home.as_ref().map(|h| h.join(".config")));
    paths.extend(env_path("GIT_CONFIG_GLOBAL"));
    paths.push(env_path("GIT_CONFIG_SYSTEM").unwrap_or_else(|| PathBuf::from("/etc/gitconfig")));
    paths.extend(home.map(|h| h.join(".gitconfig")));
    if let Some(xdg) = xdg {
        paths.push(xdg.join("git").join("config"));
        paths.push(xdg.join("git").join("ignore"));
    }
    paths.extend(ignore::gitignore::gitconfig_excludes_path());
    paths
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn age(path: &Path) {
        let old = SystemTime::now() - Duration::from_secs(60);
        let times = std::fs::FileTimes::new().set_modified(old);
        if let Ok(file) = std::fs::File::open(path) {
            let _ = file.set_times(times);
        }
    }

    #[test]
    fn a_settled_tree_is_reused_until_something_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join("sub")).expect("mkdir");
        std::fs::write(root.join("sub/a.go"), "package a\n").expect("write");
        std::fs::write(root.join(".ignore"), "skip/\n").expect("write");
        for path in ["sub/a.go", ".ignore", "sub", ""] {
            age(&root.join(path));
        }
        let project = Project::open(root, false).expect("open");
        let (files, snapshot) = walk(&project);
        let names: Vec<&str> = files.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(names, ["sub/a.go"]);
        assert!(snapshot.unchanged(&project), "{snapshot:?}");

        // Editing a file's content does not change the list.
        std::fs::write(root.join("sub/a.go"), "package b\n").expect("write");
        assert!(snapshot.unchanged(&project));
        // Adding one does.
        std::fs::write(root.join("sub/b.go"), "package b\n").expect("write");
        assert!(!snapshot.unchanged(&project));
    }

    #[test]
    fn ignore_rule_edits_invalidate_the_list() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join(".ignore"), "x/\n").expect("write");
        std::fs::write(root.join("a.rs"), "fn a() {}\n").expect("write");
        for path in [".ignore", "a.rs", ""] {
            age(&root.join(path));
        }
        let project = Project::open(root, false).expect("open");
        let (_, snapshot) = walk(&project);
        assert!(snapshot.unchanged(&project), "{snapshot:?}");
        std::fs::write(root.join(".ignore"), "y/\n").expect("write");
        assert!(!snapshot.unchanged(&project));
    }

    #[test]
    fn git_commands_do_not_invalidate_but_exclude_rules_do() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::create_dir_all(root.join(".git/info")).expect("mkdir");
        std::fs::write(root.join(".git/info/exclude"), "").expect("write");
        std::fs::write(root.join("a.rs"), "fn a() {}\n").expect("write");
        for path in [".git/info/exclude", ".git/info", ".git", "a.rs", ""] {
            age(&root.join(path));
        }
        let project = Project::open(root, true).expect("open");
        let (_, snapshot) = walk(&project);
        assert!(snapshot.unchanged(&project), "{snapshot:?}");
        // What `git add` does inside .git: a lock file created and renamed.
        std::fs::write(root.join(".git/index.lock"), "x").expect("write");
        std::fs::rename(root.join(".git/index.lock"), root.join(".git/index")).expect("mv");
        assert!(snapshot.unchanged(&project));
        std::fs::write(root.join(".git/info/exclude"), "*.rs\n").expect("write");
        assert!(!snapshot.unchanged(&project));
    }

    #[test]
    fn a_worktree_git_file_is_never_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        std::fs::write(root.join(".git"), "gitdir: elsewhere\n").expect("write");
        for path in [".git", ""] {
            age(&root.join(path));
        }
        let project = Project::open(root, true).expect("open");
        let (_, snapshot) = walk(&project);
        assert!(!snapshot.unchanged(&project));
    }

    #[test]
    // Its expected text or files name both default languages.
    #[cfg(all(feature = "lang-go", feature = "lang-rust"))]
    fn file_list_matches_the_shared_walk() {
        // `walk` repeats `walk::files`' filter so it can see directories too; this keeps
        // the two from drifting apart.
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let files = [
            "a.go",
            "b.rs",
            "c.swift",
            ".hidden.go",
            ".hid/d.go",
            "ignored/e.go",
            "sub/f.go",
            "sub/ok.rs",
            "sub/bad\nname.go",
            "sub/esc\u{1b}[31m.rs",
        ];
        for rel in files {
            let path = root.join(rel);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent).expect("mkdir");
            }
            std::fs::write(&path, "x").expect("write");
        }
        std::fs::create_dir_all(root.join(".git")).expect("mkdir .git");
        std::fs::write(root.join(".gitignore"), "ignored/\n").expect("write");
        std::os::unix::fs::symlink(root.join("a.go"), root.join("link.go")).expect("symlink");

        let project = Project::open(root, true).expect("open");
        let expected: Vec<String> = walk::files(
            &project,
            walk::builder(&project, None).expect("walk").0.build(),
        )
        .filter(|p| Lang::of_path(p.as_str()).is_some())
        .map(|p| p.as_str().to_owned())
        .collect();
        let (found, _) = walk(&project);
        let found: Vec<String> = found.iter().map(|(p, _)| p.as_str().to_owned()).collect();
        assert_eq!(found, expected);
        assert_eq!(found, ["a.go", "b.rs", "sub/f.go", "sub/ok.rs"]);
    }

    #[test]
    fn a_fresh_tree_is_not_trusted() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("a.go"), "package a\n").expect("write");
        let project = Project::open(dir.path(), false).expect("open");
        let (_, snapshot) = walk(&project);
        // The root directory changed a moment ago: a same-tick change could hide.
        assert!(!snapshot.unchanged(&project));
    }
}
