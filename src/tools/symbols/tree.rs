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

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use super::cache::Stamp;
use super::lang::Lang;
use crate::project::{Project, ProjectPath};
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
    fn now(&self, path: &Path) -> Seen {
        match self {
            Seen::Stamp(_) => Seen::Stamp(stamp_of(path)),
            Seen::Exists(_) => Seen::Exists(std::fs::symlink_metadata(path).is_ok()),
        }
    }
}

/// Paths whose stamps decide whether a walk's result still holds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Snapshot {
    /// Each path with what was seen of it.
    watched: Vec<(PathBuf, Seen)>,
    /// False when some stamp was too recent to trust, or the tree has a `.git` file.
    reusable: bool,
}

impl Snapshot {
    /// True when the walk that took this snapshot would yield the same files now.
    pub(crate) fn unchanged(&self) -> bool {
        let same = |watched: &[(PathBuf, Seen)]| {
            watched.iter().all(|(path, seen)| seen.now(path) == *seen)
        };
        if !self.reusable {
            return false;
        }
        // A thousand `stat`s take about 2 ms; two threads halve that.
        if self.watched.len() < 512 {
            return same(&self.watched);
        }
        let (first, second) = self.watched.split_at(self.watched.len() / 2);
        std::thread::scope(|scope| {
            let other = scope.spawn(|| same(second));
            let mine = same(first);
            other.join().unwrap_or(false) && mine
        })
    }

    /// Records a path's stamp; a stamp too recent to trust makes the snapshot
    /// single-use.
    fn watch(&mut self, path: PathBuf, started: SystemTime) {
        let stamp = stamp_of(&path);
        if stamp.is_some_and(|s| s.is_racy(started)) {
            self.reusable = false;
        }
        self.watched.push((path, Seen::Stamp(stamp)));
    }

    /// Records a `.git` entry: a directory's exclude file is watched, a file (linked
    /// worktree, submodule) points elsewhere and makes the snapshot single-use.
    fn watch_git(&mut self, git: PathBuf, started: SystemTime) {
        match std::fs::symlink_metadata(&git) {
            Ok(metadata) if metadata.is_dir() => {
                self.watch(git.join("info").join("exclude"), started);
                self.watched.push((git, Seen::Exists(true)));
            }
            Ok(_) => self.reusable = false,
            Err(_) => self.watched.push((git, Seen::Exists(false))),
        }
    }
}

/// A file's stamp without following a final symlink; `None` when it does not exist
/// (or cannot be examined, which is treated the same way: any change shows).
fn stamp_of(path: &Path) -> Option<Stamp> {
    std::fs::symlink_metadata(path)
        .ok()
        .map(|metadata| Stamp::of(&metadata))
}

/// Walks the project (with the shared walk, so the rules are list_files') and returns
/// its Go and Rust files in walk order, with a snapshot to check the result against.
pub(crate) fn walk(project: &Project) -> (Vec<(ProjectPath, Lang)>, Snapshot) {
    let started = SystemTime::now();
    let root = project.root();
    let mut files = Vec::new();
    let mut snapshot = Snapshot {
        watched: Vec::new(),
        reusable: true,
    };

    // Global rules, and the root's ancestors (the walk reads their ignore files too).
    for path in global_rule_files() {
        snapshot.watch(path, started);
    }
    let canonical = root.canonicalize().unwrap_or_else(|_| root.to_path_buf());
    for ancestor in canonical.ancestors().skip(1) {
        for name in IGNORE_FILES {
            snapshot.watch(ancestor.join(name), started);
        }
        snapshot.watch_git(ancestor.join(".git"), started);
    }

    // The same entries `walk::files` yields, plus the directories it entered.
    for entry in walk::builder(project).build().filter_map(Result::ok) {
        let Some(file_type) = entry.file_type() else {
            continue;
        };
        if file_type.is_dir() {
            let dir = entry.path().to_path_buf();
            // Absent rule files need no watching: creating one changes the directory's
            // stamp, which is watched.
            for name in IGNORE_FILES {
                let rule = dir.join(name);
                if std::fs::symlink_metadata(&rule).is_ok() {
                    snapshot.watch(rule, started);
                }
            }
            let git = dir.join(".git");
            if std::fs::symlink_metadata(&git).is_ok() {
                snapshot.watch_git(git, started);
            }
            snapshot.watch(dir, started);
        } else if file_type.is_file() {
            let relative = entry.path().strip_prefix(root).unwrap_or(Path::new(""));
            if let Some(path) = project.walked_path(relative)
                && let Some(lang) = Lang::of_path(path.as_str())
            {
                files.push((path, lang));
            }
        }
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
        assert!(snapshot.unchanged(), "{snapshot:?}");

        // Editing a file's content does not change the list.
        std::fs::write(root.join("sub/a.go"), "package b\n").expect("write");
        assert!(snapshot.unchanged());
        // Adding one does.
        std::fs::write(root.join("sub/b.go"), "package b\n").expect("write");
        assert!(!snapshot.unchanged());
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
        assert!(snapshot.unchanged(), "{snapshot:?}");
        std::fs::write(root.join(".ignore"), "y/\n").expect("write");
        assert!(!snapshot.unchanged());
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
        assert!(snapshot.unchanged(), "{snapshot:?}");
        // What `git add` does inside .git: a lock file created and renamed.
        std::fs::write(root.join(".git/index.lock"), "x").expect("write");
        std::fs::rename(root.join(".git/index.lock"), root.join(".git/index")).expect("mv");
        assert!(snapshot.unchanged());
        std::fs::write(root.join(".git/info/exclude"), "*.rs\n").expect("write");
        assert!(!snapshot.unchanged());
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
        assert!(!snapshot.unchanged());
    }

    #[test]
    fn file_list_matches_the_shared_walk() {
        // `walk` repeats `walk::files`' filter so it can see directories too; this keeps
        // the two from drifting apart.
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let files = [
            "a.go",
            "b.rs",
            "c.py",
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
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a.go"), root.join("link.go")).expect("symlink");

        let project = Project::open(root, true).expect("open");
        let expected: Vec<String> = walk::files(&project, walk::builder(&project).build())
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
        assert!(!snapshot.unchanged());
    }
}
