//! Which git config files a command in the project root makes git read, found the way
//! git finds them (setup.c): `.git` as a directory, or as a file whose `gitdir: ` names
//! the directory; the project root itself when it is a git directory (a bare-looking
//! root with `core.worktree`); each git directory's `commondir`; and the git
//! directories of submodules, which `git status` and `git diff` recurse into, each of
//! which reads its own config.
//!
//! Pointer files are read byte for byte as git reads them: `gitdir: ` exactly, then the
//! path to the end of the file minus trailing CR/LF characters (a trailing space, or a
//! newline inside the path, is part of git's path); `commondir` likewise. A `.git` file
//! that git would not follow is reported, not skipped: git refuses to run there, and a
//! warning costs nothing.
//!
//! Everything here is bounded: at most [`MAX_GIT_DIRS`] git directories,
//! [`MAX_MODULE_DIRS`] directories visited under `modules/`, [`MAX_GITMODULES_PATHS`]
//! paths per `.gitmodules` and [`MAX_SUBMODULE_DEPTH`] levels of checked-out
//! submodules; going over any of them is itself reported.

use std::collections::HashSet;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::MAX_CONFIG_BYTES;
use super::git::{entries, read_outside};

/// The most git directories whose config is read for one command (the project's, its
/// worktree's common directory, every submodule's).
pub(super) const MAX_GIT_DIRS: usize = 256;

/// The most directories visited under a git directory's `modules/` (a submodule's name
/// may hold slashes, so its git directory may lie several levels down).
pub(super) const MAX_MODULE_DIRS: usize = 4096;

/// The most `submodule.<name>.path` entries followed in one `.gitmodules`.
pub(super) const MAX_GITMODULES_PATHS: usize = 256;

/// The most levels of checked-out submodules (a submodule's own `.gitmodules`) followed.
pub(super) const MAX_SUBMODULE_DEPTH: usize = 8;

/// The largest `.git` file or `commondir` read; git writes a single path.
const MAX_POINTER_BYTES: u64 = 4096;

/// A config file git reads for a command run in the project root, and how to name it.
pub(super) struct ConfigPlace {
    pub(super) path: PathBuf,
    /// What the warning calls it (`.git/config`, `.git/modules/lib/config`, or the path
    /// of a worktree's git directory's config).
    pub(super) shown: String,
}

/// The config files found, and what could not be followed (each a warning of its own).
#[derive(Default)]
pub(super) struct Places {
    pub(super) files: Vec<ConfigPlace>,
    pub(super) problems: Vec<String>,
}

/// The config files git may read for a command in `root`.
pub(super) fn config_places(root: &Path) -> Places {
    let mut scan = Scan::default();
    scan.worktree(root, "", 0);
    // git looks for `.git` first and uses the directory itself only without one; both
    // are read here, which can only add a warning.
    if is_git_dir(root) {
        scan.git_dir(root, "the project root (itself a git directory)");
    }
    if scan.dirs_over {
        scan.places.problems.push(format!(
            "more than {MAX_GIT_DIRS} git directories (submodules), so metron did not check the config of the rest"
        ));
    }
    scan.places
}

/// git's `is_git_directory`: `HEAD` in the directory, `objects/` and `refs/` in its
/// common directory (a linked worktree's git directory has only `HEAD` and a
/// `commondir`). `HEAD`'s content is not checked (git also wants a valid ref there),
/// which errs towards reading the config.
pub(super) fn is_git_dir(dir: &Path) -> bool {
    let common = match read_outside(&dir.join("commondir"), MAX_POINTER_BYTES) {
        Ok(Some(bytes)) => dir.join(OsStr::from_bytes(trim_line_ends(&bytes))),
        _ => dir.to_path_buf(),
    };
    std::fs::symlink_metadata(dir.join("HEAD")).is_ok()
        && common.join("objects").is_dir()
        && common.join("refs").is_dir()
}

/// The git directory a `.git` file names, read as git's `read_gitfile_gently` reads it;
/// an error (in words) when git would not follow it.
pub(super) fn read_gitfile(file: &Path) -> Result<PathBuf, String> {
    let bytes = read_outside(file, MAX_POINTER_BYTES)?.unwrap_or_default();
    let rest = bytes
        .strip_prefix(b"gitdir: ")
        .ok_or("is a file that does not start with `gitdir: `")?;
    let target = trim_line_ends(rest);
    if target.is_empty() {
        return Err("is a file whose `gitdir: ` names no directory".to_owned());
    }
    let target = Path::new(OsStr::from_bytes(target));
    let dir = match file.parent() {
        Some(parent) if target.is_relative() => parent.join(target),
        _ => target.to_path_buf(),
    };
    if !is_git_dir(&dir) {
        return Err("names a directory that is not a git directory".to_owned());
    }
    Ok(dir)
}

/// `bytes` without the CR and LF characters at its end (and only those), as git trims a
/// `.git` file and `commondir`.
fn trim_line_ends(mut bytes: &[u8]) -> &[u8] {
    while let [rest @ .., b'\n' | b'\r'] = bytes {
        bytes = rest;
    }
    bytes
}

/// `base/name` for a warning, `name` alone when `base` is empty.
fn joined(base: &str, name: &str) -> String {
    if base.is_empty() {
        name.to_owned()
    } else {
        format!("{base}/{name}")
    }
}

#[derive(Default)]
struct Scan {
    places: Places,
    /// Git directories already read (as found, and canonical when that resolves).
    seen: HashSet<PathBuf>,
    dirs_over: bool,
    module_dirs: usize,
}

impl Scan {
    /// A work tree at `dir` (shown as `shown`, empty for the project root): its `.git`,
    /// and the work trees of the submodules its `.gitmodules` lists.
    fn worktree(&mut self, dir: &Path, shown: &str, depth: usize) {
        let dot_git = dir.join(".git");
        let shown_git = joined(shown, ".git");
        match std::fs::metadata(&dot_git) {
            Ok(meta) if meta.is_dir() => self.git_dir(&dot_git, &shown_git),
            Ok(_) => match read_gitfile(&dot_git) {
                Ok(target) => self.git_dir(&target, &target.display().to_string()),
                Err(e) => self.places.problems.push(format!(
                    "{shown_git} {e}, so metron did not check the git config it names"
                )),
            },
            Err(_) => {}
        }
        let gitmodules = dir.join(".gitmodules");
        let shown_modules = joined(shown, ".gitmodules");
        let bytes = match read_outside(&gitmodules, MAX_CONFIG_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return,
            Err(e) => {
                self.places.problems.push(format!(
                    "{shown_modules} {e}, so metron did not check the submodules it lists"
                ));
                return;
            }
        };
        if depth >= MAX_SUBMODULE_DEPTH {
            self.places.problems.push(format!(
                "{shown_modules} lists submodules nested more than {MAX_SUBMODULE_DEPTH} deep, so metron did not check their git config"
            ));
            return;
        }
        let text = String::from_utf8_lossy(&bytes);
        let paths: Vec<String> = entries(&text)
            .entries
            .into_iter()
            .filter(|e| e.key.section == "submodule" && e.key.sub.is_some())
            .filter(|e| e.key.name == "path")
            .filter_map(|e| e.value)
            .filter(|v| !v.is_empty())
            .collect();
        if paths.len() > MAX_GITMODULES_PATHS {
            self.places.problems.push(format!(
                "{shown_modules} lists more than {MAX_GITMODULES_PATHS} submodule paths, so metron did not check the git config of the rest"
            ));
        }
        for path in paths.iter().take(MAX_GITMODULES_PATHS) {
            self.worktree(&dir.join(path), &joined(shown, path), depth + 1);
        }
    }

    /// A git directory: its `config` and `config.worktree`, its common directory's
    /// `config`, and the git directories of the submodules under the common `modules/`.
    fn git_dir(&mut self, dir: &Path, shown: &str) {
        let key = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        if self.seen.contains(&key) {
            return;
        }
        if self.seen.len() >= MAX_GIT_DIRS {
            self.dirs_over = true;
            return;
        }
        self.seen.insert(key);
        for name in ["config", "config.worktree"] {
            self.places.files.push(ConfigPlace {
                path: dir.join(name),
                shown: joined(shown, name),
            });
        }
        let (common, shown_common) = match read_outside(&dir.join("commondir"), MAX_POINTER_BYTES) {
            Ok(None) => (dir.to_path_buf(), shown.to_owned()),
            Ok(Some(bytes)) => {
                let rel = Path::new(OsStr::from_bytes(trim_line_ends(&bytes)));
                // `join` keeps an absolute path as it is, as git does.
                let common = dir.join(rel);
                let shown = Path::new(shown).join(rel).display().to_string();
                self.places.files.push(ConfigPlace {
                    path: common.join("config"),
                    shown: joined(&shown, "config"),
                });
                (common, shown)
            }
            Err(e) => {
                self.places.problems.push(format!(
                    "{} {e}, so metron did not check the common git config",
                    joined(shown, "commondir")
                ));
                (dir.to_path_buf(), shown.to_owned())
            }
        };
        self.modules(&common.join("modules"), &joined(&shown_common, "modules"));
    }

    /// Every submodule git directory under `modules` (a directory with a `config`; one
    /// without is part of a name with slashes, and is looked into).
    fn modules(&mut self, modules: &Path, shown: &str) {
        let mut stack = vec![(modules.to_path_buf(), shown.to_owned())];
        while let Some((dir, shown)) = stack.pop() {
            let Ok(children) = std::fs::read_dir(&dir) else {
                continue;
            };
            for child in children.flatten() {
                let path = child.path();
                if !path.is_dir() {
                    continue;
                }
                if self.module_dirs >= MAX_MODULE_DIRS {
                    self.places.problems.push(format!(
                        "{shown} holds more than {MAX_MODULE_DIRS} directories, so metron did not check every submodule's git config"
                    ));
                    return;
                }
                self.module_dirs += 1;
                let name = child.file_name().to_string_lossy().into_owned();
                let shown_child = joined(&shown, &name);
                if path.join("config").exists() || is_git_dir(&path) {
                    self.git_dir(&path, &shown_child);
                } else {
                    stack.push((path, shown_child));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn git_dir_at(dir: &Path) {
        for sub in ["objects", "refs"] {
            std::fs::create_dir_all(dir.join(sub)).expect("mkdir");
        }
        std::fs::write(dir.join("HEAD"), "ref: refs/heads/main\n").expect("write");
    }

    fn shown(places: &Places) -> Vec<&str> {
        places.files.iter().map(|p| p.shown.as_str()).collect()
    }

    #[test]
    fn a_gitfile_is_read_byte_for_byte_as_git_reads_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let odd = dir.path().join("odd \ndir ");
        git_dir_at(&odd);
        let file = dir.path().join(".git");
        let mut bytes = b"gitdir: ".to_vec();
        bytes.extend_from_slice(odd.as_os_str().as_bytes());
        bytes.extend_from_slice(b"\r\n\n");
        std::fs::write(&file, &bytes).expect("write");
        assert_eq!(read_gitfile(&file), Ok(odd.clone()));
        // git wants `gitdir: ` exactly: no leading blank, no missing space.
        for text in [
            "  gitdir: odd",
            "gitdir:odd",
            "GITDIR: odd",
            "x\ngitdir: odd",
        ] {
            std::fs::write(&file, text).expect("write");
            assert!(read_gitfile(&file).is_err(), "{text:?}");
        }
        std::fs::write(&file, "gitdir: nowhere\n").expect("write");
        assert!(read_gitfile(&file).is_err_and(|e| e.contains("not a git directory")));
        assert_eq!(trim_line_ends(b"a \r\n\r"), b"a ");
    }

    #[test]
    fn submodules_and_a_root_git_dir_are_found_and_bounded() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        git_dir_at(&root.join(".git"));
        git_dir_at(&root.join(".git/modules/a"));
        git_dir_at(&root.join(".git/modules/a/modules/b"));
        std::fs::create_dir_all(root.join(".git/modules/x/y")).expect("mkdir");
        std::fs::write(root.join(".git/modules/x/y/config"), "").expect("write");
        std::fs::write(
            root.join(".gitmodules"),
            "[submodule \"c\"]\n\tpath = lib/c\n",
        )
        .expect("write");
        git_dir_at(&root.join("lib/c/.git"));
        let found = config_places(root);
        let names = shown(&found);
        for want in [
            ".git/config",
            ".git/modules/a/config",
            ".git/modules/a/modules/b/config",
            ".git/modules/x/y/config",
            "lib/c/.git/config",
        ] {
            assert!(names.contains(&want), "{want}: {names:?}");
        }
        assert!(found.problems.is_empty(), "{:?}", found.problems);
        // The root itself a git directory.
        let bare = tempfile::tempdir().expect("temp dir");
        git_dir_at(bare.path());
        assert!(
            shown(&config_places(bare.path()))
                .iter()
                .any(|s| s.starts_with("the project root (itself a git directory)/config"))
        );
        // Over the bound: reported.
        let many = tempfile::tempdir().expect("temp dir");
        git_dir_at(&many.path().join(".git"));
        for i in 0..MAX_GIT_DIRS {
            let m = many.path().join(format!(".git/modules/m{i}"));
            std::fs::create_dir_all(&m).expect("mkdir");
            std::fs::write(m.join("config"), "").expect("write");
        }
        let over = config_places(many.path());
        assert_eq!(over.files.len(), MAX_GIT_DIRS * 2);
        assert!(
            over.problems
                .iter()
                .any(|p| p.contains(&format!("more than {MAX_GIT_DIRS} git directories"))),
            "{:?}",
            over.problems
        );
    }

    #[test]
    fn a_commondir_keeps_a_trailing_space_as_git_does() {
        let dir = tempfile::tempdir().expect("temp dir");
        let common = dir.path().join("common ");
        git_dir_at(&common);
        let worktree = dir.path().join("wt");
        std::fs::create_dir_all(&worktree).expect("mkdir");
        std::fs::write(worktree.join("HEAD"), "ref: refs/heads/x\n").expect("write");
        std::fs::write(worktree.join("commondir"), "../common \r\n").expect("write");
        // Only HEAD here: objects/ and refs/ are the common directory's.
        assert!(is_git_dir(&worktree));
        let project = dir.path().join("proj");
        std::fs::create_dir_all(&project).expect("mkdir");
        let mut pointer = b"gitdir: ".to_vec();
        pointer.extend_from_slice(worktree.as_os_str().as_bytes());
        std::fs::write(project.join(".git"), pointer).expect("write");
        let found = config_places(&project);
        assert!(
            found
                .files
                .iter()
                .any(|p| p.path == worktree.join("../common ").join("config")),
            "{:?}",
            shown(&found)
        );
    }

    #[test]
    fn a_gitfile_git_would_not_follow_is_reported() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join(".git"), " gitdir: x\n").expect("write");
        let found = config_places(dir.path());
        assert!(found.files.is_empty());
        assert!(found.problems[0].contains("does not start with `gitdir: `"));
    }
}
