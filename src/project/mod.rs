//! The project and its boundary: the only code that opens, reads or `stat`s files
//! beneath the root.
//!
//! The root is the enclosing git work tree (found from any subdirectory), else the working
//! directory. Every path a tool names is checked here twice:
//!
//! 1. lexically, so a refusal can say exactly which rule the path broke (absolute, climbs
//!    out with `..`, names something under `.git/`);
//! 2. by the kernel, at open time: files are opened through a [`cap_std::fs::Dir`] on the
//!    root, which resolves every component beneath it (`openat2` with `RESOLVE_BENEATH` on
//!    Linux, a component-by-component `O_NOFOLLOW` walk elsewhere). A symlink that leads
//!    outside, or one swapped in after step 1, fails the open itself; there is no window
//!    between a check and the use.
//!
//! The root is never the user's home directory (HOME or the password database's, see
//! [`user_homes`]) or `/` ([`Project::too_wide`]; the front ends refuse to start there), and the places the sandbox keeps from commands (`~/.ssh`,
//! ...) are refused to the read tools when the root holds them
//! ([`Project::protect_secret`]).
//!
//! Refusals are [`BoundaryError`]s whose text is written for the model: it names the path
//! and the rule, so the model can correct itself.
//!
//! Metadata goes through the same handle ([`Project::symlink_metadata`], and
//! [`Project::open_dir`] for the symbol index, which looks names up in open directories).
//! The `.git` rule of view_slice is decided while opening, on the directories the file is
//! opened through ([`Project::open_resolved`]), not on a path resolved beforehand.
//!
//! Exceptions, each outside what the model can name:
//!
//! - directory *listing* is done by the `ignore` crate's walker (`tools/walk.rs`), which
//!   reads directories by path without following symlinks; every file it yields is opened
//!   here again, and everything else the walking tools look at goes through this module;
//! - the root itself is found and canonicalised by path at open ([`Project::discover`],
//!   [`Project::canonical_root`]);
//! - metron's own configuration (`.metron.json` at the root) is read by `config` before
//!   the project is opened;
//! - run_command resolves the entries of PATH by path to refuse programs that live inside
//!   the project.

mod home;
pub(crate) mod temp_files;

pub(crate) use home::user_homes;

use std::io;
use std::path::{Component, Path, PathBuf};

use cap_std::ambient_authority;
use cap_std::fs::Dir;

/// A path beneath the project root, normalised (no `.`, no `..`, no leading `/`) and
/// known not to climb out lexically. Only [`Project::resolve`] makes one.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ProjectPath(String);

impl ProjectPath {
    /// The path relative to the root, with `/` separators, as the model should see it.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// True when the path names `.git` or something inside it, in any letter case (macOS
    /// and Windows file systems fold case, so `.GIT/config` is the same file).
    pub(crate) fn is_in_git_dir(&self) -> bool {
        self.0
            .split('/')
            .any(|part| part.eq_ignore_ascii_case(".git"))
    }

    fn as_path(&self) -> &Path {
        Path::new(&self.0)
    }
}

impl AsRef<str> for ProjectPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for ProjectPath {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The two kinds of regular file git records, and the only modes apply_patch writes.
///
/// Git stores a regular file as 100644 or 100755 and nothing else; a patch naming any other
/// mode (100711, 100600, a symlink's 120000, a submodule's 160000) is asking for something
/// the approval question could not show faithfully, so it is refused before this type is
/// ever made (see `apply_patch::parse`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileMode {
    /// 100644: not executable.
    Regular,
    /// 100755: executable.
    Executable,
}

impl FileMode {
    /// The mode for git's octal number, or `None` for any other number.
    pub(crate) fn from_git(mode: u32) -> Option<FileMode> {
        match mode {
            0o100644 => Some(FileMode::Regular),
            0o100755 => Some(FileMode::Executable),
            _ => None,
        }
    }

    /// Git's octal number for the mode.
    pub(crate) fn git(self) -> u32 {
        match self {
            FileMode::Regular => 0o100644,
            FileMode::Executable => 0o100755,
        }
    }

    /// How git would record a file with these permission bits: executable when any x bit
    /// is set (metron has always read it this way; git itself looks at the owner's bit).
    pub(crate) fn of_bits(bits: u32) -> FileMode {
        if bits & 0o111 == 0 {
            FileMode::Regular
        } else {
            FileMode::Executable
        }
    }

    /// The bits a new file is created with before the kernel applies the umask, as
    /// `touch` (0o666) or a compiler writing a program (0o777) does.
    fn creation_bits(self) -> u32 {
        match self {
            FileMode::Regular => 0o666,
            FileMode::Executable => 0o777,
        }
    }
}

impl std::fmt::Display for FileMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:o}", self.git())
    }
}

/// In JSON a mode is git's octal number as text (`"100755"`): the decimal value of
/// 0o100755 would read as a different number.
impl serde::Serialize for FileMode {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

/// The permission bits a written file gets.
///
/// New files are created with the mode `touch` would give them, by the kernel, which
/// applies the umask (and a directory's default ACL) at the moment of creation: metron
/// never reads the umask, so there is nothing to race with another thread that changes it
/// (the classic `umask()` set-and-restore is process-wide and not thread-safe).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteMode {
    /// Exactly these bits: an existing file keeps its own, and a file put back by a
    /// rollback or an undo gets the bits it had.
    Exact(u32),
    /// A new file: 0o666 (100644) or 0o777 (100755), less the umask.
    Create(FileMode),
    /// An existing file whose mode the patch changes: its bits with the x bits cleared
    /// (100644), or with the x bits the umask allows added (100755), as `chmod +x` does.
    Switch {
        /// The file's permission bits before the write.
        bits: u32,
        /// The mode it gets.
        to: FileMode,
    },
}

impl WriteMode {
    /// The git mode the written file will have.
    pub(crate) fn file_mode(self) -> FileMode {
        match self {
            WriteMode::Exact(bits) => FileMode::of_bits(bits),
            WriteMode::Create(mode) | WriteMode::Switch { to: mode, .. } => mode,
        }
    }

    /// The bits the temporary file is created with; the kernel takes the umask off.
    fn creation_bits(self) -> u32 {
        match self {
            // Owner-only until the exact bits are set: never readable by others meanwhile.
            WriteMode::Exact(_) => 0o600,
            WriteMode::Create(mode) => mode.creation_bits(),
            // 0o777 less the umask says which x bits the umask allows.
            WriteMode::Switch { .. } => 0o777,
        }
    }

    /// The bits to set once the file exists (`created` is what the kernel gave it), or
    /// `None` when the kernel's are right.
    fn final_bits(self, created: u32) -> Option<u32> {
        match self {
            WriteMode::Exact(bits) => Some(bits),
            WriteMode::Create(_) => None,
            WriteMode::Switch {
                bits,
                to: FileMode::Regular,
            } => Some(bits & !0o111),
            WriteMode::Switch {
                bits,
                to: FileMode::Executable,
            } => Some(bits | (created & 0o111)),
        }
    }
}

/// Why a path was refused or could not be opened. The text is addressed to the model.
#[derive(Debug, thiserror::Error)]
pub enum BoundaryError {
    /// The path was empty.
    #[error("refused: the path is empty; give a path relative to the project root")]
    Empty,
    /// An absolute path.
    #[error("refused: `{0}` is an absolute path; give a path relative to the project root")]
    Absolute(String),
    /// `..` that climbs above the root.
    #[error(
        "refused: `{0}` climbs out of the project root with `..`; only files inside the project can be used"
    )]
    ClimbsOut(String),
    /// A symlink (or a swapped-in symlink) that leads outside the root.
    #[error(
        "refused: `{0}` resolves outside the project root through a symlink; only files inside the project can be used"
    )]
    SymlinkEscape(String),
    /// Something under `.git/`: git's internals (config with credentials in remote URLs,
    /// hooks that git executes) are neither shown to the model nor written.
    #[error(
        "refused: `{0}` is inside .git/; metron's tools do not read or write git's internal files"
    )]
    GitDir(String),
    /// Something under the git directory that the root's `.git` *file* points to
    /// (`git init --separate-git-dir=meta` writes `gitdir: .../meta`) when that lies inside
    /// the project: the same internals (hooks git runs) under another name.
    #[error(
        "refused: `{path}` is inside `{git_dir}`, the git directory that `.git` points to; metron's tools do not read or write git's internal files"
    )]
    SeparateGitDir {
        /// The path that was asked for.
        path: String,
        /// The git directory, relative to the root.
        git_dir: String,
    },
    /// The trusted config file in use, or the user's metron directory (where a trusted
    /// config file would be looked for), when it lies inside the project: a patch there
    /// could grant metron authority, so only the person edits it.
    #[error(
        "refused: `{0}` is metron's trusted configuration for this session; a patch may not change what metron is allowed to do, so ask the person to edit it themselves"
    )]
    ActiveConfig(String),
    /// A credential store or metron's own configuration (`~/.ssh`, `~/.aws`, ...) that
    /// lies inside the project because the project holds the user's home: the sandbox
    /// denies commands these, so the read tools refuse them too.
    #[error(
        "refused: `{0}` is a protected place (credentials or metron's configuration); metron's tools do not read it. If the person needs it, they can look at it themselves"
    )]
    Protected(String),
    /// A path that passes through a symlink, refused for writes.
    #[error(
        "refused: `{path}` goes through the symlink `{link}`; apply_patch only writes real paths inside the project"
    )]
    ThroughSymlink {
        /// The path as given.
        path: String,
        /// The component that is a symlink.
        link: String,
    },
    /// The directory a file was staged in is no longer the one at its path (moved, or
    /// replaced by another directory) when the file is about to be renamed into place.
    #[error(
        "refused: the directory of `{0}` was moved or replaced while the patch was being written; read the files again and send a new patch"
    )]
    DirectoryReplaced(String),
    /// No such file.
    #[error("`{0}` does not exist; use list_files to see what is there")]
    NotFound(String),
    /// A directory (or other non-file) where a file was needed.
    #[error("`{0}` is not a regular file")]
    NotAFile(String),
    /// A file larger than the caller reads (a configuration file metron reads whole), so
    /// a file the repository made huge, or one that never ends, cannot exhaust memory.
    #[error(
        "refused: `{path}` is larger than {limit} bytes; shorten it to at most {limit} bytes or remove it"
    )]
    TooLarge {
        /// The path as given.
        path: String,
        /// The most bytes read.
        limit: u64,
    },
    /// The path cannot name a readable file at all: a symlink loop, a name too long for the
    /// file system, a NUL byte. The model chose the path, so the model can fix it.
    #[error(
        "refused: `{path}` cannot be opened ({reason}); name a regular file inside the project"
    )]
    Unusable {
        /// The path as the model gave it.
        path: String,
        /// What the operating system said.
        reason: String,
    },
    /// Any other I/O failure, with the path.
    #[error("cannot open `{path}`: {source}")]
    Io {
        /// The path as the model gave it.
        path: String,
        /// The underlying error.
        source: io::Error,
    },
}

impl BoundaryError {
    /// True for refusals and missing files (things the model can fix), false for faults
    /// of the environment such as an unreadable disk.
    pub(crate) fn is_model_fixable(&self) -> bool {
        !matches!(self, BoundaryError::Io { .. })
    }
}

/// Most symlinks [`Project::open_resolved`] follows for one path (Linux's own limit).
const MAX_SYMLINKS: usize = 40;

/// A file opened by [`Project::open_resolved`].
#[derive(Debug)]
pub(crate) struct Resolved {
    /// The open file (opened non-blocking; a regular file ignores that).
    pub(crate) file: std::fs::File,
    /// Its real path beneath the root: the names it was opened through, with every symlink
    /// on the way followed.
    pub(crate) real: ProjectPath,
    /// True when it is one of git's internal files: it, or a directory it was opened
    /// through, is named `.git` (in any letter case) or is the project's `.git` directory.
    pub(crate) in_git_dir: bool,
}

/// A root metron will not take as a project ([`Project::too_wide`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WideRoot {
    /// `/`.
    FileSystem,
    /// The user's home directory.
    Home,
}

impl WideRoot {
    /// The refusal, with what to do instead.
    pub(crate) fn message(self, root: &Path) -> String {
        let what = match self {
            WideRoot::FileSystem => "the root of the file system",
            WideRoot::Home => "your home directory",
        };
        format!(
            "refused to use {} as the project: it is {what}, and everything in it (SSH keys, credentials) would be in the model's reach; cd into the project's own directory (a git work tree, or a directory holding only the project) and run metron there",
            root.display()
        )
    }
}

/// The project: its root on disk, and a capability to open things beneath it.
#[derive(Debug)]
pub struct Project {
    root: PathBuf,
    /// `root` with every symlink resolved, computed once at open.
    canonical_root: PathBuf,
    dir: Dir,
    is_git: bool,
    /// Device and inode of the root's `.git` directory, when it is one, taken at open.
    git_dir: Option<(u64, u64)>,
    /// The git directory the root's `.git` file points to (`gitdir: ...`), when that lies
    /// inside the root: its path relative to the root, and its device and inode, taken at
    /// open. Protected like `.git/` itself, since git runs the hooks it holds.
    separate_git_dir: Option<(String, (u64, u64))>,
    /// Trusted configuration inside the root (relative to it): the config file in use,
    /// and the user's metron directory, whether or not a config file exists there yet.
    /// Writing either would let a patch grant itself authority (`allowed_commands`), so
    /// every write refuses them and anything beneath them.
    protected_config: Vec<String>,
    /// Credentials and metron's own configuration inside the root (relative to it): the
    /// places the sandbox denies commands (`sandbox::protected_places`) that lie beneath
    /// the root, when it holds the user's home (`/home` as a project). The read tools
    /// refuse them and the walk leaves them out, so reading is no way around the sandbox.
    protected_secrets: Vec<String>,
}

impl Project {
    /// Finds the project that contains `start`: the nearest ancestor holding `.git`
    /// (a directory, or the file a linked worktree has), else `start` itself.
    pub fn discover(start: &Path) -> io::Result<Project> {
        let start = std::path::absolute(start)?;
        let git_root = start.ancestors().find(|dir| dir.join(".git").exists());
        match git_root {
            Some(root) => Project::open(root, true),
            None => Project::open(&start, false),
        }
    }

    /// Opens a project at exactly `root`; `is_git` says whether it is a git work tree.
    pub fn open(root: &Path, is_git: bool) -> io::Result<Project> {
        let dir = Dir::open_ambient_dir(root, ambient_authority())?;
        let canonical_root = root.canonicalize()?;
        let git_dir = dir
            .symlink_metadata(".git")
            .ok()
            .filter(cap_std::fs::Metadata::is_dir)
            .map(|meta| {
                use cap_std::fs::MetadataExt;
                (meta.dev(), meta.ino())
            });
        let separate_git_dir = separate_git_dir(&dir, root, &canonical_root);
        Ok(Project {
            root: root.to_path_buf(),
            canonical_root,
            dir,
            is_git,
            git_dir,
            separate_git_dir,
            protected_config: Vec::new(),
            protected_secrets: Vec::new(),
        })
    }

    /// A second handle on the same project (the root directory's descriptor duplicated),
    /// for a walk's filter, which outlives the call that set it up.
    pub(crate) fn try_clone(&self) -> io::Result<Project> {
        Ok(Project {
            root: self.root.clone(),
            canonical_root: self.canonical_root.clone(),
            dir: self.dir.try_clone()?,
            is_git: self.is_git,
            git_dir: self.git_dir,
            separate_git_dir: self.separate_git_dir.clone(),
            protected_config: self.protected_config.clone(),
            protected_secrets: self.protected_secrets.clone(),
        })
    }

    /// Why this root is too wide to be a project, if it is: the file system's root, or
    /// one of `homes` (the user's home directories, [`user_homes`]: HOME and the password
    /// database's), compared as real paths. Either holds the user's keys and credentials
    /// (`~/.ssh`), which the read tools would then reach; a home that is a git work tree
    /// (a dotfiles repository) is refused all the same.
    pub(crate) fn too_wide(&self, homes: &[PathBuf]) -> Option<WideRoot> {
        if self.canonical_root.parent().is_none() {
            return Some(WideRoot::FileSystem);
        }
        homes
            .iter()
            .filter_map(|home| home.canonicalize().ok())
            .any(|home| home == self.canonical_root)
            .then_some(WideRoot::Home)
    }

    /// Marks a protected place (an absolute path the sandbox denies commands) for the read
    /// tools, when it lies beneath the root; one elsewhere is out of their reach anyway.
    /// Both the path as given and its real path (symlinks resolved) are compared with the
    /// root as given and the real root, so a symlinked HOME or root changes nothing.
    pub(crate) fn protect_secret(&mut self, place: &Path) {
        let real = place.canonicalize().ok();
        for place in std::iter::once(place).chain(real.as_deref()) {
            for root in [&self.root, &self.canonical_root] {
                if let Ok(inside) = place.strip_prefix(root)
                    && let Some(inside) = inside.to_str()
                    && !inside.is_empty()
                    && !self.protected_secrets.iter().any(|p| p == inside)
                {
                    self.protected_secrets.push(inside.to_owned());
                }
            }
        }
    }

    /// True when `relative` (a path beneath the root) is a protected place or lies beneath
    /// one (see [`Project::protect_secret`]); compared in any letter case, as macOS folds
    /// case.
    pub(crate) fn is_protected_secret(&self, relative: &Path) -> bool {
        let Some(text) = relative.to_str() else {
            return false;
        };
        let text = text.strip_prefix("./").unwrap_or(text);
        self.protected_secrets
            .iter()
            .any(|secret| is_under(text, secret))
    }

    /// Refuses a read of a protected place ([`Project::protect_secret`]).
    pub(crate) fn refuse_secret(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        if self.is_protected_secret(path.as_path()) {
            return Err(BoundaryError::Protected(path.to_string()));
        }
        Ok(())
    }

    /// Marks `relative` (a path beneath the root, see `config::inside_project`) as
    /// trusted configuration, which writes then refuse, with everything beneath it.
    pub(crate) fn protect_config(&mut self, relative: String) {
        self.protected_config.push(relative);
    }

    /// The write rules on a path, before any disk access: not git's internals
    /// ([`Project::refuse_git_internals`]) and not the trusted config file in use.
    pub(crate) fn refuse_protected(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        self.refuse_git_internals(path)?;
        let covers = |protected: &String| {
            let path = path.as_str();
            // Case-folded, as the `.git` rule is: macOS folds case.
            path.eq_ignore_ascii_case(protected)
                || path.len() > protected.len()
                    && path.is_char_boundary(protected.len())
                    && path[..protected.len()].eq_ignore_ascii_case(protected)
                    && path[protected.len()..].starts_with('/')
        };
        if self.protected_config.iter().any(covers) {
            return Err(BoundaryError::ActiveConfig(path.to_string()));
        }
        Ok(())
    }

    /// Refuses a path inside git's internals: anything under a directory named `.git` (in
    /// any letter case), or under the git directory the root's `.git` file points to. The
    /// check is on the normalised path; writes also refuse symlinks on the way, and
    /// view_slice checks the directories it opened through ([`Project::open_resolved`]).
    pub(crate) fn refuse_git_internals(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        if path.is_in_git_dir() {
            return Err(BoundaryError::GitDir(path.to_string()));
        }
        if let Some((git_dir, _)) = &self.separate_git_dir
            && is_under(path.as_str(), git_dir)
        {
            return Err(BoundaryError::SeparateGitDir {
                path: path.to_string(),
                git_dir: git_dir.clone(),
            });
        }
        Ok(())
    }

    /// Git's internals in the project, as real paths: the root's `.git` (directory or
    /// file) and the git directory it points to when that lies inside the root. A
    /// sandboxed command may not write them (see `sandbox`).
    pub(crate) fn git_internals(&self) -> Vec<PathBuf> {
        let mut places = Vec::new();
        if self.dir.symlink_metadata(".git").is_ok() {
            places.push(self.canonical_root.join(".git"));
        }
        if let Some((relative, _)) = &self.separate_git_dir {
            places.push(self.canonical_root.join(relative));
        }
        places
    }

    /// metron's own configuration inside the project (see [`Project::protect_config`]),
    /// as paths under the real root.
    pub(crate) fn protected_config_paths(&self) -> Vec<PathBuf> {
        self.protected_config
            .iter()
            .map(|relative| self.canonical_root.join(relative))
            .collect()
    }

    /// The root directory on disk, as it was given.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root with every symlink resolved, as it was when the project was opened: for
    /// comparisons with other real paths (PATH entries, the root's ancestors). Computed
    /// once, so every caller sees the same answer.
    pub(crate) fn canonical_root(&self) -> &Path {
        &self.canonical_root
    }

    /// Whether the root is a git work tree (apply_patch is offered only then).
    pub(crate) fn is_git(&self) -> bool {
        self.is_git
    }

    /// Checks a model-supplied path lexically and normalises it. It does not touch the
    /// disk: the kernel-side check happens when the path is opened.
    pub fn resolve(&self, raw: &str) -> Result<ProjectPath, BoundaryError> {
        let trimmed = raw.trim();
        if trimmed.is_empty() {
            return Err(BoundaryError::Empty);
        }
        let path = Path::new(trimmed);
        if path.is_absolute() || trimmed.starts_with('~') {
            return Err(BoundaryError::Absolute(trimmed.to_owned()));
        }
        let mut parts: Vec<&str> = Vec::new();
        for component in path.components() {
            match component {
                Component::Normal(part) => match part.to_str() {
                    Some(part) => parts.push(part),
                    None => return Err(BoundaryError::NotFound(trimmed.to_owned())),
                },
                Component::CurDir => {}
                Component::ParentDir => {
                    if parts.pop().is_none() {
                        return Err(BoundaryError::ClimbsOut(trimmed.to_owned()));
                    }
                }
                Component::RootDir | Component::Prefix(_) => {
                    return Err(BoundaryError::Absolute(trimmed.to_owned()));
                }
            }
        }
        if parts.is_empty() {
            return Err(BoundaryError::NotAFile(trimmed.to_owned()));
        }
        Ok(ProjectPath(parts.join("/")))
    }

    /// Wraps a path that came from walking the tree (already relative and normalised).
    /// Opening it still goes through the kernel-side check.
    ///
    /// `None` for a path that cannot be shown as one line of text: one that is not UTF-8,
    /// or that holds a control character. Tools print one path per line, so a file named
    /// `a\nfake.rs:1:text` would otherwise forge output lines (and overrun the line
    /// budget), and escape sequences in a name would reach the terminal.
    pub(crate) fn walked_path(&self, relative: &Path) -> Option<ProjectPath> {
        let text = relative.to_str()?;
        let text = text.strip_prefix("./").unwrap_or(text);
        // The walk does not know the separate git directory (it is not hidden), so its
        // files are left out here: listing and search never show git's internals.
        let in_git_dir = self
            .separate_git_dir
            .as_ref()
            .is_some_and(|(git_dir, _)| is_under(text, git_dir));
        (!text.is_empty() && !text.chars().any(char::is_control) && !in_git_dir)
            .then(|| ProjectPath(text.to_owned()))
    }

    /// Opens a file the model named, for reading, beneath the root.
    ///
    /// The type is looked at before opening as well as checked after: a named device is
    /// never opened at all (opening some has effects of its own), and a FIFO could not
    /// block the open anyway (see [`Project::open_regular`]). The look resolves beneath the
    /// root like the open does; the check after the open is the one that cannot be raced.
    /// It costs three system calls, so paths that come from walking the tree, whose type
    /// the walk has just seen, use [`Project::open_walked_file`].
    pub(crate) fn open_named_file(
        &self,
        path: &ProjectPath,
    ) -> Result<std::fs::File, BoundaryError> {
        let metadata = self
            .dir
            .metadata(path.as_path())
            .map_err(|e| classify(path.as_str(), e))?;
        if !metadata.is_file() {
            return Err(BoundaryError::NotAFile(path.to_string()));
        }
        self.open_file(path)
    }

    /// Opens a regular file for reading, beneath the root, for a path whose type was just
    /// looked at. A symlink beneath the root is followed (the model may name one); anything
    /// that is not a regular file once open is refused. See [`Project::open_regular`] for
    /// why a FIFO swapped in cannot block the open.
    pub(crate) fn open_file(&self, path: &ProjectPath) -> Result<std::fs::File, BoundaryError> {
        self.open_regular(path, Follow::BeneathRoot)
            .map(|opened| opened.file)
    }

    /// Opens a file the walk has just listed as a regular file, for the walking tools
    /// (search_text, the symbol index), and returns the `fstat` of the open handle with
    /// it, so a caller that stamps what it reads needs no second `fstat`. The last
    /// component is opened with `O_NOFOLLOW`: the walk never yields a symlink, so one
    /// found here was swapped in after the listing. A FIFO or device swapped in is
    /// refused with [`BoundaryError::NotAFile`] without blocking (see
    /// [`Project::open_regular`]); search_text names such a file in a note.
    pub(crate) fn open_walked_file(&self, path: &ProjectPath) -> Result<OpenedFile, BoundaryError> {
        self.open_regular(path, Follow::Never)
    }

    /// The one place a file beneath the root is opened for reading by path: with
    /// `O_NONBLOCK` and `O_CLOEXEC` (plus `O_NOFOLLOW` when `follow` says so), then
    /// `fstat` on the open handle, refusing anything but a regular file.
    ///
    /// Why `O_NONBLOCK`: opening a FIFO for reading blocks until some other process opens
    /// it for writing, which would hang a tool (and the session) on a pipe that was
    /// swapped in between a listing, or a `stat`, and the open. With the flag the open
    /// returns at once and the `fstat`, which cannot be raced because it looks at what
    /// was opened, refuses it; a device is refused the same way before a byte is read.
    /// The flag is left set on the regular files returned: reads of a regular file
    /// ignore it (they never return `EAGAIN`), so clearing it would cost a system call
    /// per file for nothing.
    fn open_regular(
        &self,
        path: &ProjectPath,
        follow: Follow,
    ) -> Result<OpenedFile, BoundaryError> {
        use cap_std::fs::{OpenOptions, OpenOptionsExt};
        use rustix::fs::OFlags;

        let fail = |e: io::Error| classify(path.as_str(), e);
        let mut flags = OFlags::NONBLOCK | OFlags::CLOEXEC;
        if follow == Follow::Never {
            flags |= OFlags::NOFOLLOW;
        }
        let file = self
            .dir
            .open_with(
                path.as_path(),
                OpenOptions::new()
                    .read(true)
                    .custom_flags(flags.bits() as i32),
            )
            .map_err(fail)?
            .into_std();
        let metadata = file.metadata().map_err(fail)?;
        if !metadata.is_file() {
            return Err(BoundaryError::NotAFile(path.to_string()));
        }
        Ok(OpenedFile { file, metadata })
    }

    /// Reads a whole file beneath the root. For the symbol index and patches, which need
    /// the bytes; view_slice streams instead.
    pub fn read(&self, path: &ProjectPath) -> Result<Vec<u8>, BoundaryError> {
        use std::io::Read;
        let mut file = self.open_named_file(path)?;
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)
            .map_err(|source| BoundaryError::Io {
                path: path.to_string(),
                source,
            })?;
        Ok(bytes)
    }

    /// Reads a whole regular file beneath the root, refusing one larger than `limit`
    /// bytes: for files metron reads whole on its own account (the project's
    /// `.metron.json`), which a cloned repository controls. A symlink leading outside the
    /// root (`-> /dev/zero`) fails the open, a device or FIFO is refused before it is
    /// opened, and at most `limit + 1` bytes are ever read, so even a file that grows
    /// while being read cannot exhaust memory.
    pub(crate) fn read_capped(
        &self,
        path: &ProjectPath,
        limit: u64,
    ) -> Result<Vec<u8>, BoundaryError> {
        self.read_capped_with_mode(path, limit)
            .map(|(bytes, _)| bytes)
    }

    /// [`Project::read_capped`], with the file's permission bits, taken from the file that
    /// was opened (so bytes and mode are of the same file): for apply_patch, whose targets
    /// are capped by `max_patch_file_bytes`. The size is checked on the open file before a
    /// byte is read.
    pub(crate) fn read_capped_with_mode(
        &self,
        path: &ProjectPath,
        limit: u64,
    ) -> Result<(Vec<u8>, u32), BoundaryError> {
        use std::io::Read;
        use std::os::unix::fs::PermissionsExt;
        let too_large = || BoundaryError::TooLarge {
            path: path.to_string(),
            limit,
        };
        let file = self.open_named_file(path)?;
        let metadata = file.metadata().map_err(|e| classify(path.as_str(), e))?;
        if metadata.len() > limit {
            return Err(too_large());
        }
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| BoundaryError::Io {
                path: path.to_string(),
                source,
            })?;
        if bytes.len() as u64 > limit {
            return Err(too_large());
        }
        Ok((bytes, metadata.permissions().mode() & 0o7777))
    }

    /// Reads at most `limit + 1` bytes from the start of a regular file beneath the root:
    /// for the project's instruction files (AGENTS.md), which metron reads on its own
    /// account and cuts to a cap rather than refusing when they are long. The open is the
    /// one [`Project::open_named_file`] makes: a symlink is followed only beneath the root
    /// (`-> /dev/zero` or `-> ~/.ssh/...` fails the open), a directory, FIFO or device is
    /// refused before a byte is read, and the extra byte says whether more followed.
    pub(crate) fn read_prefix(
        &self,
        path: &ProjectPath,
        limit: u64,
    ) -> Result<Vec<u8>, BoundaryError> {
        use std::io::Read;
        self.refuse_secret(path)?;
        let file = self.open_named_file(path)?;
        let mut bytes = Vec::new();
        file.take(limit.saturating_add(1))
            .read_to_end(&mut bytes)
            .map_err(|source| BoundaryError::Io {
                path: path.to_string(),
                source,
            })?;
        Ok(bytes)
    }

    /// Opens a file the model named, for reading, by following its path one component at
    /// a time through directory handles, and says where the file really is and whether it
    /// is one of git's internal files. For view_slice, which must not show `.git/` even
    /// through a symlink in the tree (`g -> .git` makes `g/config` git's config).
    ///
    /// The answer is about the file that was opened, not about a path looked at before:
    /// each directory on the way is opened (without following a symlink in its place)
    /// relative to the one before, starting from the root handle, and the next name is
    /// looked up in that open directory. A symlink met on the way is read through the
    /// directory holding it and its target is followed the same way, with `..` going back
    /// to the directory handle it came from, so nothing ever resolves above the root and
    /// an absolute target is refused. The file itself is opened in the last directory with
    /// `O_NOFOLLOW` (a symlink swapped in fails the open) and `O_NONBLOCK` (a FIFO swapped
    /// in does not block; a regular file ignores the flag). So the `.git` verdict is
    /// taken over exactly the directories the file was opened through: it is `.git/` when
    /// one of them, or the file, is named `.git` in any letter case, or when one of them is
    /// the project's own `.git` directory by device and inode.
    ///
    /// What stays out of reach: a directory already opened on the way being renamed into
    /// `.git/` before the file is opened, and a hard link to a file in `.git/` (the same
    /// file under a second name outside it). Neither can be made by metron's tools.
    pub(crate) fn open_resolved(&self, path: &ProjectPath) -> Result<Resolved, BoundaryError> {
        use cap_std::fs::{MetadataExt, OpenOptions, OpenOptionsExt};
        use rustix::fs::OFlags;

        let fail = |e: io::Error| classify(path.as_str(), e);
        let flags = |extra: OFlags| (OFlags::NOFOLLOW | OFlags::CLOEXEC | extra).bits() as i32;
        let is_git_name = |name: &str| name.eq_ignore_ascii_case(".git");

        let mut pending: std::collections::VecDeque<String> =
            path.as_str().split('/').map(str::to_owned).collect();
        // The directories entered below the root, each held open, with its name.
        let mut entered: Vec<(Dir, String)> = Vec::new();
        let mut in_git_dir = false;
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            match name.as_str() {
                "" | "." => continue,
                ".." => {
                    if entered.pop().is_none() {
                        return Err(BoundaryError::SymlinkEscape(path.to_string()));
                    }
                    continue;
                }
                _ => {}
            }
            let dir = entered.last().map_or(&self.dir, |(dir, _)| dir);
            let seen = dir.symlink_metadata(&name).map_err(fail)?;
            if seen.is_symlink() {
                links += 1;
                if links > MAX_SYMLINKS {
                    return Err(fail(io::Error::from_raw_os_error(
                        rustix::io::Errno::LOOP.raw_os_error(),
                    )));
                }
                // An absolute target is an error of cap-std's (an escape).
                let target = dir.read_link(&name).map_err(fail)?;
                let Some(target) = target.to_str() else {
                    return Err(BoundaryError::NotFound(path.to_string()));
                };
                for part in target.split('/').rev() {
                    pending.push_front(part.to_owned());
                }
                continue;
            }
            let last = pending.iter().all(|part| part.is_empty() || part == ".");
            if seen.is_dir() {
                if last {
                    return Err(BoundaryError::NotAFile(path.to_string()));
                }
                let opened = dir
                    .open_with(
                        &name,
                        OpenOptions::new()
                            .read(true)
                            .custom_flags(flags(OFlags::DIRECTORY)),
                    )
                    .map_err(fail)?;
                let opened = Dir::from_std_file(opened.into_std());
                let meta = opened.dir_metadata().map_err(fail)?;
                let id = Some((meta.dev(), meta.ino()));
                in_git_dir |= is_git_name(&name)
                    || self.git_dir == id
                    || self.separate_git_dir.as_ref().map(|(_, at)| *at) == id;
                entered.push((opened, name));
                continue;
            }
            if !last || !seen.is_file() {
                return Err(BoundaryError::NotAFile(path.to_string()));
            }
            let file = dir
                .open_with(
                    &name,
                    OpenOptions::new()
                        .read(true)
                        .custom_flags(flags(OFlags::NONBLOCK)),
                )
                .map_err(fail)?;
            if !file.metadata().map_err(fail)?.is_file() {
                return Err(BoundaryError::NotAFile(path.to_string()));
            }
            in_git_dir |= is_git_name(&name);
            let real = entered
                .iter()
                .map(|(_, name)| name.as_str())
                .chain([name.as_str()])
                .collect::<Vec<_>>()
                .join("/");
            return Ok(Resolved {
                file: file.into_std(),
                real: ProjectPath(real),
                in_git_dir,
            });
        }
        // The path led back to the root, or to a directory.
        Err(BoundaryError::NotAFile(path.to_string()))
    }

    /// Opens a directory beneath the root (`""` is the root itself) to look at the
    /// entries in it; a symlink on the way is followed beneath the root, as for file
    /// opens. For callers that `stat` many files of one directory (the symbol index).
    pub(crate) fn open_dir(&self, path: impl AsRef<Path>) -> io::Result<ProjectDir> {
        let path = path.as_ref();
        let dir = if path.as_os_str().is_empty() {
            self.dir.try_clone()?
        } else {
            self.dir.open_dir(path)?
        };
        Ok(ProjectDir { dir })
    }

    /// Metadata of a path beneath the root, without following a final symlink.
    pub(crate) fn symlink_metadata(
        &self,
        path: &ProjectPath,
    ) -> Result<cap_std::fs::Metadata, BoundaryError> {
        self.dir
            .symlink_metadata(path.as_path())
            .map_err(|e| classify(path.as_str(), e))
    }
}

/// `path` is `dir` or lies beneath it (both normalised, relative to the root), comparing
/// names in any letter case as [`ProjectPath::is_in_git_dir`] does.
fn is_under(path: &str, dir: &str) -> bool {
    let mut parts = path.split('/');
    dir.split('/').all(|want| {
        parts
            .next()
            .is_some_and(|part| part.eq_ignore_ascii_case(want))
    })
}

/// The git directory the root's `.git` file names (`gitdir: PATH`, relative to the root
/// or absolute), when `.git` is a regular file and that directory lies inside the root:
/// its path relative to the root and its device and inode. `None` otherwise (no such
/// file, an unreadable one, or a git directory outside the project, which the boundary
/// keeps out of reach anyway).
fn separate_git_dir(dir: &Dir, root: &Path, canonical_root: &Path) -> Option<(String, (u64, u64))> {
    use std::os::unix::fs::MetadataExt;
    let meta = dir.symlink_metadata(".git").ok()?;
    if !meta.is_file() || meta.len() > 4096 {
        return None;
    }
    let text = dir.read_to_string(".git").ok()?;
    let target = text
        .lines()
        .find_map(|line| line.strip_prefix("gitdir:"))?
        .trim();
    if target.is_empty() {
        return None;
    }
    let real = root.join(target).canonicalize().ok()?;
    let relative = real.strip_prefix(canonical_root).ok()?;
    let relative = relative.to_str()?;
    if relative.is_empty() {
        return None;
    }
    let meta = std::fs::metadata(&real)
        .ok()
        .filter(std::fs::Metadata::is_dir)?;
    Some((relative.to_owned(), (meta.dev(), meta.ino())))
}

/// Writing beneath the root. Every write refuses `.git/`, goes through the same
/// `RESOLVE_BENEATH` handle as reads, and replaces a file atomically.
impl Project {
    /// Refuses paths that pass through a symlink (in any component, including the last),
    /// so a write can never land somewhere other than the path the person was shown.
    /// A missing component ends the check: nothing beyond it exists yet. So does one that
    /// is a regular file (`x/y` where `x` is a file): nothing can be beneath it.
    pub(crate) fn check_no_symlinks(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        let mut prefix = PathBuf::new();
        for part in path.as_str().split('/') {
            prefix.push(part);
            match self.dir.symlink_metadata(&prefix) {
                Ok(meta) if meta.file_type().is_symlink() => {
                    return Err(BoundaryError::ThroughSymlink {
                        path: path.to_string(),
                        link: prefix.to_string_lossy().into_owned(),
                    });
                }
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                    ) =>
                {
                    return Ok(());
                }
                Err(e) => return Err(classify(path.as_str(), e)),
            }
        }
        Ok(())
    }

    /// The permission bits of a file, or `None` when it does not exist.
    pub(crate) fn file_mode(&self, path: &ProjectPath) -> Result<Option<u32>, BoundaryError> {
        use cap_std::fs::PermissionsExt;
        match self.dir.symlink_metadata(path.as_path()) {
            Ok(meta) => Ok(Some(meta.permissions().mode() & 0o7777)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(classify(path.as_str(), e)),
        }
    }

    /// Replaces (or creates) a file atomically: the bytes go to a temporary file in the
    /// same directory, which is flushed to disk and then renamed over the target, so a
    /// reader sees the old content or the new, never a mix. Missing parent directories are
    /// created. `mode` says which permission bits the file gets.
    #[cfg(test)]
    pub(crate) fn write_atomic(
        &self,
        path: &ProjectPath,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<(), BoundaryError> {
        self.install(self.stage(path, bytes, mode)?)
    }

    /// The first half of [`Project::write_atomic`]: writes the bytes to a temporary file
    /// beside the target and flushes it to disk, creating missing parent directories.
    /// Nothing is visible at the target until [`Staged::install`]; dropping the
    /// [`Staged`] removes the temporary file. Several files can be staged at once (from
    /// several threads), so their flushes overlap.
    ///
    /// The temporary file is created with the bits of `mode` less the umask (the kernel
    /// applies it), then given its exact bits when `mode` says so (see [`WriteMode`]).
    pub(crate) fn stage(
        &self,
        path: &ProjectPath,
        bytes: &[u8],
        mode: WriteMode,
    ) -> Result<Staged, BoundaryError> {
        use cap_std::fs::OpenOptionsExt;
        use std::io::Write;
        use std::os::unix::fs::PermissionsExt;
        self.refuse_protected(path)?;
        // Before any directory is created or opened by path (both follow symlinks
        // beneath the root); checked again just before the rename, in `install`.
        self.check_no_symlinks(path)?;
        let io_error = |source: io::Error| classify(path.as_str(), source);
        let (parent, name) = match path.as_str().rsplit_once('/') {
            Some((parent, name)) => (Some(parent), name),
            None => (None, path.as_str()),
        };
        let dir = match parent {
            Some(parent) => {
                self.dir.create_dir_all(parent).map_err(io_error)?;
                self.dir.open_dir(parent).map_err(io_error)?
            }
            None => self.dir.try_clone().map_err(io_error)?,
        };
        temp_files::sweep(&dir);
        // A fresh name cannot normally exist; if one does (a leftover under a serial this
        // process reused by chance), the next serial is tried.
        let mut attempts = 0;
        let (file, temp) = loop {
            let temp = temp_files::fresh_name(name);
            match dir.open_with(
                &temp,
                cap_std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode.creation_bits()),
            ) {
                Ok(file) => break (file, temp),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempts < 8 => {
                    attempts += 1;
                }
                Err(e) => return Err(io_error(e)),
            }
        };
        // From here on, dropping `staged` removes the temporary file.
        let staged = Staged {
            dir,
            temp,
            name: name.to_owned(),
            path: path.clone(),
            installed: false,
        };
        let mut file = file.into_std();
        // The final bits are set before a byte is written: a 0600 file made executable is
        // created 0777 less the umask (often 0755), which would let others read the copy
        // while it is written.
        file.metadata()
            .and_then(|meta| match mode.final_bits(meta.permissions().mode()) {
                Some(bits) => file.set_permissions(std::fs::Permissions::from_mode(bits)),
                None => Ok(()),
            })
            .and_then(|()| file.write_all(bytes))
            // fdatasync: the bytes (and the size needed to read them back) reach the disk
            // before the rename can; it skips flushing timestamps, which costs a second
            // journal write on ext4 and buys nothing here.
            .and_then(|()| file.sync_data())
            .map_err(io_error)?;
        Ok(staged)
    }

    /// Renames a staged file into place, after the write rules are checked once more at
    /// the last moment: no component of the path (the file's name included) may have
    /// become a symlink since the patch was prepared, and the directory the file was
    /// staged in must still be the one at its path (not moved away, not replaced). The
    /// person approved a write to that path; a symlink or a directory swapped in while the
    /// question was open must not redirect it. On a refusal nothing is renamed and the
    /// staged file is removed. What remains is the instant between these checks and the
    /// rename itself (see SECURITY.md).
    pub(crate) fn install(&self, staged: Staged) -> Result<(), BoundaryError> {
        use cap_std::fs::MetadataExt;
        self.check_no_symlinks(&staged.path)?;
        let held = staged
            .dir
            .dir_metadata()
            .map_err(|e| classify(staged.path.as_str(), e))?;
        let now = match staged.path.as_str().rsplit_once('/') {
            Some((parent, _)) => self.dir.symlink_metadata(parent),
            None => self.dir.dir_metadata(),
        };
        let same = now.is_ok_and(|now| (now.dev(), now.ino()) == (held.dev(), held.ino()));
        if !same {
            return Err(BoundaryError::DirectoryReplaced(staged.path.to_string()));
        }
        staged.rename_into_place()
    }

    /// Removes a file, refusing a path that now goes through a symlink (the removal would
    /// otherwise follow a symlinked directory beneath the root).
    pub(crate) fn remove_file(&self, path: &ProjectPath) -> Result<(), BoundaryError> {
        self.refuse_protected(path)?;
        self.check_no_symlinks(path)?;
        self.dir
            .remove_file(path.as_path())
            .map_err(|e| classify(path.as_str(), e))
    }

    /// Removes a directory if it is empty; used to undo directories a failed write made.
    pub(crate) fn remove_empty_dir(&self, path: &str) -> bool {
        !path.is_empty() && self.dir.remove_dir(path).is_ok()
    }

    /// True when something (file, directory or link) exists at `path`.
    pub(crate) fn exists(&self, path: &str) -> bool {
        self.dir.symlink_metadata(path).is_ok()
    }
}

/// A directory beneath the root, opened through the project handle by
/// [`Project::open_dir`], that only answers questions about metadata.
///
/// `stat` of a path of several components costs cap-std three system calls (an `openat2`
/// that resolves it beneath the root, an `fstat`, a `close`); a name looked up in an open
/// directory costs one `fstatat`. The symbol index stats thousands of files on every
/// lookup, directory by directory, so it keeps one of these per directory it is in.
#[derive(Debug)]
pub(crate) struct ProjectDir {
    dir: Dir,
}

impl ProjectDir {
    /// The directory's own metadata (`fstat` of the open handle).
    pub(crate) fn metadata(&self) -> io::Result<cap_std::fs::Metadata> {
        self.dir.dir_metadata()
    }

    /// Metadata of `name`, a path relative to this directory resolved beneath it, without
    /// following a final symlink. A single name costs one `fstatat`.
    pub(crate) fn symlink_metadata(
        &self,
        name: impl AsRef<Path>,
    ) -> io::Result<cap_std::fs::Metadata> {
        self.dir.symlink_metadata(name)
    }

    /// Opens a directory beneath this one (a single name is one lookup in it), for
    /// callers that go down a tree one directory at a time.
    pub(crate) fn open_dir(&self, name: impl AsRef<Path>) -> io::Result<ProjectDir> {
        self.dir.open_dir(name).map(|dir| ProjectDir { dir })
    }
}

/// A file written to a temporary name beside its target and flushed, waiting to be
/// renamed into place. Dropped without [`Staged::install`], it removes the temporary file.
#[derive(Debug)]
pub(crate) struct Staged {
    dir: Dir,
    temp: String,
    name: String,
    path: ProjectPath,
    installed: bool,
}

impl Staged {
    /// The path (relative to the root) the file will replace.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &str {
        self.path.as_str()
    }

    /// Renames the temporary file over the target: the new content appears at once. Only
    /// [`Project::install`] calls it, after its last-moment checks.
    fn rename_into_place(mut self) -> Result<(), BoundaryError> {
        self.dir
            .rename(&self.temp, &self.dir, &self.name)
            .map_err(|e| classify(self.path.as_str(), e))?;
        self.installed = true;
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if !self.installed {
            let _ = self.dir.remove_file(&self.temp);
        }
    }
}

/// Whether opening a file for reading may follow a symlink in its last component.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Follow {
    /// Follow it, beneath the root: the model may name a symlink inside the project.
    BeneathRoot,
    /// Refuse it (`O_NOFOLLOW`): the walk never yields a symlink, so one met at the open
    /// was swapped in after the listing.
    Never,
}

/// A regular file opened for reading beneath the root, with the `fstat` of the open
/// handle (the one look at its type and size that cannot be raced).
#[derive(Debug)]
pub(crate) struct OpenedFile {
    /// The open file, positioned at its start.
    pub(crate) file: std::fs::File,
    /// Its metadata, taken from the open handle.
    pub(crate) metadata: std::fs::Metadata,
}

/// Maps an open error to the rule it broke. cap-std reports an escape as PermissionDenied
/// with no OS error code; a real EACCES carries one.
fn classify(path: &str, error: io::Error) -> BoundaryError {
    match error.kind() {
        io::ErrorKind::PermissionDenied if error.raw_os_error().is_none() => {
            BoundaryError::SymlinkEscape(path.to_owned())
        }
        io::ErrorKind::NotFound => BoundaryError::NotFound(path.to_owned()),
        io::ErrorKind::IsADirectory | io::ErrorKind::NotADirectory => {
            BoundaryError::NotAFile(path.to_owned())
        }
        // EINVAL (a NUL byte), ENAMETOOLONG, ELOOP: faults of the path, not the machine.
        // `FilesystemLoop` is not a stable `ErrorKind` yet, so ELOOP is matched by its code.
        kind if matches!(
            kind,
            io::ErrorKind::InvalidInput | io::ErrorKind::InvalidFilename
        ) || error.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) =>
        {
            BoundaryError::Unusable {
                path: path.to_owned(),
                reason: error.to_string(),
            }
        }
        _ => BoundaryError::Io {
            path: path.to_owned(),
            source: error,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().expect("tempdir");
        let project = Project::open(dir.path(), false).expect("open");
        (dir, project)
    }

    #[test]
    fn home_and_the_file_system_root_are_too_wide_to_be_a_project() {
        let (dir, p) = project();
        assert_eq!(p.too_wide(&[dir.path().into()]), Some(WideRoot::Home));
        assert_eq!(p.too_wide(&[dir.path().join(".")]), Some(WideRoot::Home));
        assert_eq!(p.too_wide(&[dir.path().join("elsewhere")]), None);
        assert_eq!(p.too_wide(&[]), None);
        // HOME elsewhere, the password database's home here: refused all the same.
        let homes = [dir.path().join("elsewhere"), dir.path().into()];
        assert_eq!(p.too_wide(&homes), Some(WideRoot::Home));
        let top = Project::open(Path::new("/"), false).expect("open /");
        assert_eq!(top.too_wide(&[]), Some(WideRoot::FileSystem));
        assert!(
            WideRoot::Home
                .message(dir.path())
                .contains("cd into the project's own directory")
        );
    }

    #[test]
    fn protected_places_beneath_the_root_are_refused_in_any_case() {
        let (dir, mut p) = project();
        p.protect_secret(&dir.path().join("me/.ssh"));
        p.protect_secret(Path::new("/elsewhere/.aws"));
        for inside in [
            "me/.ssh",
            "me/.ssh/id_ed25519",
            "me/.SSH/id_rsa",
            "./me/.ssh/x",
        ] {
            assert!(p.is_protected_secret(Path::new(inside)), "{inside}");
        }
        for outside in ["me/.sshx/id", "me", "other/.ssh/id", ".aws/credentials"] {
            assert!(!p.is_protected_secret(Path::new(outside)), "{outside}");
        }
        let path = p.resolve("me/.ssh/id_ed25519").expect("resolves");
        assert!(matches!(
            p.refuse_secret(&path),
            Err(BoundaryError::Protected(_))
        ));
    }

    #[test]
    fn git_dir_is_recognised_in_any_case_and_the_refusal_names_it() {
        let (_dir, p) = project();
        for raw in [
            ".git/config",
            "sub/.GIT/hooks/pre-commit",
            ".Git",
            "./.git/../.git/HEAD",
        ] {
            let path = p.resolve(raw).expect("resolves lexically");
            assert!(path.is_in_git_dir(), "{raw} should be inside .git");
            assert_eq!(
                BoundaryError::GitDir(path.to_string()).to_string(),
                format!(
                    "refused: `{path}` is inside .git/; metron's tools do not read or write git's internal files"
                )
            );
        }
        for raw in [
            ".github/workflows/ci.yml",
            "a.git/x",
            ".gitignore",
            "x/.gitkeep",
        ] {
            let path = p.resolve(raw).expect("resolves");
            assert!(!path.is_in_git_dir(), "{raw} is not inside .git");
        }
    }

    #[test]
    fn lexical_rules_name_the_path() {
        let (_dir, p) = project();
        assert_eq!(
            p.resolve("a/./b/../c.go").map(|p| p.0).ok(),
            Some("a/c.go".to_owned())
        );
        assert!(matches!(
            p.resolve("/etc/passwd"),
            Err(BoundaryError::Absolute(_))
        ));
        assert!(matches!(p.resolve("~/x"), Err(BoundaryError::Absolute(_))));
        assert!(matches!(
            p.resolve("a/../../x"),
            Err(BoundaryError::ClimbsOut(_))
        ));
        assert!(matches!(p.resolve(""), Err(BoundaryError::Empty)));
        let msg = p
            .resolve("../secret")
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(
            msg.contains("../secret") && msg.contains("climbs out"),
            "{msg}"
        );
    }

    #[test]
    fn a_file_whose_name_is_near_the_length_limit_can_be_written() {
        let (dir, p) = project();
        let name = "n".repeat(250);
        std::fs::write(dir.path().join(&name), "old\n").expect("write");
        let path = p.resolve(&name).expect("path");
        p.write_atomic(&path, b"new\n", WriteMode::Exact(0o644))
            .expect("written");
        assert_eq!(
            std::fs::read(dir.path().join(&name)).ok(),
            Some(b"new\n".to_vec())
        );
    }

    #[test]
    fn read_capped_refuses_devices_escapes_and_oversized_files() {
        let (dir, p) = project();
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).expect("symlink");
        std::fs::write(dir.path().join("big"), vec![b' '; 11]).expect("write");
        std::fs::write(dir.path().join("ok"), b"0123456789").expect("write");
        let read = |name: &str| p.read_capped(&p.resolve(name).expect("path"), 10);
        assert!(matches!(read("zero"), Err(BoundaryError::SymlinkEscape(_))));
        assert!(matches!(
            read("big"),
            Err(BoundaryError::TooLarge { limit: 10, .. })
        ));
        assert_eq!(read("ok").ok(), Some(b"0123456789".to_vec()));
    }

    /// A FIFO at a path the walk listed as a regular file (swapped in since) is refused
    /// at once, not waited on; so is a symlink, and a regular file still opens. The open
    /// runs on another thread so a regression fails the test instead of hanging it.
    #[test]
    fn a_walked_path_that_became_a_fifo_or_symlink_is_refused_without_blocking() {
        let (dir, p) = project();
        std::fs::write(dir.path().join("a.txt"), b"text\n").expect("write");
        let status = std::process::Command::new("mkfifo")
            .arg(dir.path().join("pipe.txt"))
            .status()
            .expect("run mkfifo");
        assert!(status.success(), "mkfifo");
        std::os::unix::fs::symlink("a.txt", dir.path().join("link.txt")).expect("symlink");

        let fifo = dir.path().join("pipe.txt");
        let (tx, rx) = std::sync::mpsc::channel();
        let opener = std::thread::spawn(move || {
            let open = |name: &str| {
                p.open_walked_file(&p.resolve(name).expect("path"))
                    .map(|opened| opened.metadata.len())
            };
            let _ = tx.send((open("pipe.txt"), open("link.txt"), open("a.txt")));
        });
        let outcome = rx.recv_timeout(std::time::Duration::from_secs(5));
        if outcome.is_err() {
            // Release the blocked open so the thread can be joined, then fail.
            let _ = std::fs::OpenOptions::new().write(true).open(&fifo);
        }
        let _ = opener.join();
        let (pipe, link, file) = outcome.expect("opening a FIFO must not block");
        assert!(matches!(pipe, Err(BoundaryError::NotAFile(_))), "{pipe:?}");
        assert!(link.is_err(), "a symlink is not followed: {link:?}");
        assert_eq!(file.ok(), Some(5));
    }

    #[test]
    fn write_modes_set_exact_bits_or_leave_the_umask_to_the_kernel() {
        use FileMode::{Executable, Regular};
        assert_eq!(WriteMode::Exact(0o640).final_bits(0o600), Some(0o640));
        assert_eq!(WriteMode::Create(Executable).final_bits(0o750), None);
        assert_eq!(WriteMode::Create(Executable).creation_bits(), 0o777);
        assert_eq!(WriteMode::Create(Regular).creation_bits(), 0o666);
        // `chmod +x` under umask 027 (the temporary file came out 0o750).
        let on = WriteMode::Switch {
            bits: 0o644,
            to: Executable,
        };
        assert_eq!(on.final_bits(0o750), Some(0o754));
        let off = WriteMode::Switch {
            bits: 0o755,
            to: Regular,
        };
        assert_eq!(off.final_bits(0o777), Some(0o644));
        assert_eq!(FileMode::from_git(0o100711), None);
        assert_eq!(FileMode::Executable.to_string(), "100755");
    }

    #[test]
    fn a_write_refuses_a_path_through_a_symlink_before_creating_anything() {
        let (dir, p) = project();
        std::fs::create_dir(dir.path().join("real")).expect("mkdir");
        std::os::unix::fs::symlink("real", dir.path().join("link")).expect("symlink");
        let path = p.resolve("link/new/x.txt").expect("path");
        let err = p
            .stage(&path, b"x\n", WriteMode::Create(FileMode::Regular))
            .expect_err("refused");
        assert!(matches!(err, BoundaryError::ThroughSymlink { .. }), "{err}");
        assert!(!dir.path().join("real/new").exists());
        std::fs::write(dir.path().join("real/old.txt"), "old\n").expect("write");
        let path = p.resolve("link/old.txt").expect("path");
        assert!(matches!(
            p.remove_file(&path),
            Err(BoundaryError::ThroughSymlink { .. })
        ));
        assert!(dir.path().join("real/old.txt").exists());
    }

    #[test]
    fn git_dir_in_any_case() {
        let (_dir, p) = project();
        for raw in [".git/config", "sub/.GIT/hooks/x", ".Git"] {
            assert!(
                p.resolve(raw).map(|p| p.is_in_git_dir()).unwrap_or(false),
                "{raw}"
            );
        }
        assert!(
            !p.resolve(".github/x")
                .map(|p| p.is_in_git_dir())
                .unwrap_or(true)
        );
    }
}
