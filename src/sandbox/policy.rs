//! What one approved command may touch, worked out before it runs, and the one line that
//! says so at the question.
//!
//! The policy is data: the Linux enforcement (`sandbox::linux`) and the macOS profile
//! (`sandbox::seatbelt`) are both generated from it, so the two platforms cannot drift,
//! and the question, the banner and the ledger describe the same value that is enforced.

use std::fmt;
use std::path::{Path, PathBuf};

pub use crate::config::SandboxMode;

/// The sandbox keys of the user's own config, as read (paths not yet expanded).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SandboxSettings {
    /// `command_sandbox`.
    pub mode: SandboxMode,
    /// `command_writable_paths`: more places commands may write (`~/.cache/go-build`).
    pub writable_paths: Vec<String>,
    /// `command_protected_paths`: more places commands may neither read nor write.
    pub protected_paths: Vec<String>,
    /// `command_network`: allowlist prefixes whose commands may use the network.
    pub network: Vec<String>,
    /// `command_git_writes`: allowlist prefixes whose commands may write `.git`
    /// (`git add`, `git commit`); hooks and `.git/config` stay read-only even then.
    pub git_writes: Vec<String>,
}

/// Places every command is denied, relative to HOME: credentials and metron's own
/// configuration. The user adds to these with `command_protected_paths`.
pub(crate) const DEFAULT_PROTECTED: &[&str] = &[
    ".ssh",
    ".gnupg",
    ".aws",
    ".azure",
    ".config/gcloud",
    ".config/gh",
    ".kube",
    ".docker/config.json",
    ".netrc",
    ".npmrc",
    ".pypirc",
    ".git-credentials",
    ".cargo/credentials",
    ".cargo/credentials.toml",
    ".config/containers/auth.json",
    ".pgpass",
    ".vault-token",
    ".metron",
];

/// The protected places, as absolute paths: [`DEFAULT_PROTECTED`] under each of `homes`
/// (`project::user_homes`: HOME and the password database's home, so `env -u HOME`
/// protects `~/.npmrc` all the same), the user's metron configuration (`metron_config`)
/// and `command_protected_paths` (a `~` one under each home). The one list both the
/// sandbox (commands may not read them) and the read tools (which refuse the ones inside
/// the project, see `Project::protect_secret`) use, so the two cannot drift.
pub(crate) fn protected_places(
    settings: &SandboxSettings,
    homes: &[PathBuf],
    metron_config: &[PathBuf],
) -> Vec<PathBuf> {
    let mut protected: Vec<PathBuf> = homes
        .iter()
        .flat_map(|home| DEFAULT_PROTECTED.iter().map(move |p| home.join(p)))
        .collect();
    protected.extend(metron_config.iter().cloned());
    for raw in &settings.protected_paths {
        if homes.is_empty() {
            protected.extend(expand_home(raw, None));
        }
        for home in homes {
            protected.extend(expand_home(raw, Some(home)));
        }
    }
    protected
}

/// Terminals, protected wherever HOME is: a command reading the person's terminal
/// (`/dev/pts/N`) would race their shell for what they type, passwords included.
pub(crate) const PROTECTED_DEVICES: &[&str] = &["/dev/pts", "/dev/ptmx", "/dev/console"];

/// Device files any program may open for writing.
pub(crate) const DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Where things are, for [`Policy::for_command`].
#[derive(Debug, Clone)]
pub(crate) struct Places<'a> {
    /// The project root, real.
    pub(crate) root: &'a Path,
    /// Git's internals inside the project (`Project::git_internals`).
    pub(crate) git_internals: Vec<PathBuf>,
    /// metron's own configuration inside the project.
    pub(crate) metron_files: Vec<PathBuf>,
    /// The session's temp dir.
    pub(crate) temp: &'a Path,
    /// HOME, for `~` and the default protected set.
    pub(crate) home: Option<PathBuf>,
    /// The user's metron directory and config file, wherever they are.
    pub(crate) metron_config: Vec<PathBuf>,
}

/// What one command may touch. Every path is absolute; the ones that exist are
/// canonical (symlinks resolved), so a rule lands on the real file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Policy {
    /// The project root: writable, except `read_only`.
    pub(crate) root: PathBuf,
    /// Inside the root but never writable: `.git` (or, for a command allowed to write
    /// it, its hooks and config), and metron's own configuration in the tree.
    pub(crate) read_only: Vec<PathBuf>,
    /// The session's private temporary directory (TMPDIR, TMP and TEMP).
    pub(crate) temp: PathBuf,
    /// More writable places, from `command_writable_paths`.
    pub(crate) writable: Vec<PathBuf>,
    /// Neither readable nor writable, wherever they are.
    pub(crate) protected: Vec<PathBuf>,
    /// The command may use the network (its allowlist entry is in `command_network`).
    pub(crate) network: bool,
    /// The command may write `.git` except hooks and config (`command_git_writes`).
    pub(crate) git_writes: bool,
}

impl Policy {
    /// The policy for a command whose words are `words` (program name first, as typed),
    /// in `places`.
    pub(crate) fn for_command(
        settings: &SandboxSettings,
        words: &[&str],
        places: &Places<'_>,
    ) -> Policy {
        let network = covered(words, &settings.network);
        let git_writes = covered(words, &settings.git_writes);
        let mut read_only = Vec::new();
        for git in &places.git_internals {
            if git_writes && git.is_dir() {
                read_only.push(git.join("hooks"));
                read_only.push(git.join("config"));
            } else {
                read_only.push(git.clone());
            }
        }
        read_only.extend(places.metron_files.iter().cloned());
        // HOME as metron was started with, and the password database's home: the same
        // homes the read tools protect (`frontend::startup`). A `~` grant means HOME.
        let homes = crate::project::user_homes(places.home.as_deref());
        let home = homes.first().map(PathBuf::as_path);
        let expand = |raw: &String| expand_home(raw, home);
        let mut protected = protected_places(settings, &homes, &places.metron_config);
        protected.extend(PROTECTED_DEVICES.iter().map(PathBuf::from));
        let writable = settings.writable_paths.iter().filter_map(expand);
        Policy {
            root: places.root.to_path_buf(),
            read_only: dedup(read_only.into_iter().map(real)),
            temp: real(places.temp.to_path_buf()),
            writable: dedup(writable.map(real)),
            protected: dedup(protected.into_iter().map(real)),
            network,
            git_writes,
        }
    }

    /// The smallest policy: `scratch` writable and itself read-only (so the probe tries a
    /// read-only mount), nothing protected, no network. The probe confines a child with it
    /// to learn whether this kernel can confine at all.
    #[cfg(any(target_os = "linux", test))]
    pub(crate) fn probe(scratch: &Path) -> Policy {
        Policy {
            root: scratch.to_path_buf(),
            read_only: vec![scratch.to_path_buf()],
            temp: scratch.to_path_buf(),
            writable: Vec::new(),
            protected: Vec::new(),
            network: false,
            git_writes: false,
        }
    }

    /// The one line the question shows: what the command may write, and the network.
    /// `no_new_top_level`: read-only places are carved out of the grants (no mount
    /// namespaces here), so new entries at the top of the project cannot be made.
    pub(crate) fn summary(&self, no_new_top_level: bool) -> Summary {
        Summary {
            no_new_top_level,
            git_writes: self.git_writes,
            network: self.network,
            extra_writable: self
                .writable
                .iter()
                .map(|p| p.display().to_string())
                .collect(),
        }
    }
}

/// What a confined command may do, in words: shown at the question and recorded in the
/// ledger and `turn_end` with the command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// New entries at the top of the project could not be made (no mount namespaces).
    pub no_new_top_level: bool,
    /// `.git` was writable (hooks and config excepted).
    pub git_writes: bool,
    /// The network was allowed.
    pub network: bool,
    /// Places beyond the project and the temp dir that were writable.
    pub extra_writable: Vec<String>,
}

impl fmt::Display for Summary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match (self.git_writes, self.no_new_top_level) {
            (false, false) => "writes the project (not .git)",
            (true, false) => "writes the project (and .git, not its hooks or config)",
            (false, true) => "writes the project (not .git; no new top-level entries)",
            (true, true) => {
                "writes the project (and .git, not its hooks or config; no new top-level entries)"
            }
        })?;
        if self.extra_writable.is_empty() {
            f.write_str(" and a temp dir")?;
        } else {
            write!(f, ", a temp dir and {}", self.extra_writable.join(", "))?;
        }
        if self.network {
            f.write_str("; network: allowed by your config")
        } else {
            f.write_str("; no network")
        }
    }
}

/// True when some entry's words are a prefix of `words`, whole words compared.
pub(crate) fn covered(words: &[&str], entries: &[String]) -> bool {
    entries.iter().any(|entry| {
        let prefix: Vec<&str> = entry.split_whitespace().collect();
        !prefix.is_empty() && words.starts_with(&prefix)
    })
}

/// `~` or `~/x` against `home`; an absolute path as it is. `None` for a relative path (a
/// grant must name one place, not one that moves with the working directory) or `~`
/// without a HOME.
pub(crate) fn expand_home(raw: &str, home: Option<&Path>) -> Option<PathBuf> {
    let raw = raw.trim();
    if raw == "~" {
        return home.map(Path::to_path_buf);
    }
    if let Some(rest) = raw.strip_prefix("~/") {
        return home.map(|home| home.join(rest));
    }
    Path::new(raw).is_absolute().then(|| PathBuf::from(raw))
}

/// The real path when it exists; otherwise the real path of its nearest existing
/// ancestor with the rest appended, so a rule about a place that does not exist yet
/// still lands where it would be created.
pub(crate) fn real(path: PathBuf) -> PathBuf {
    if let Ok(real) = path.canonicalize() {
        return real;
    }
    let mut missing = Vec::new();
    let mut at = path.as_path();
    while let Some(parent) = at.parent() {
        if let Some(name) = at.file_name() {
            missing.push(name.to_owned());
        }
        if let Ok(real) = parent.canonicalize() {
            return missing.iter().rev().fold(real, |acc, name| acc.join(name));
        }
        at = parent;
    }
    path
}

fn dedup(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for path in paths {
        if !out.contains(&path) {
            out.push(path);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn places<'a>(root: &'a Path, temp: &'a Path, home: &Path) -> Places<'a> {
        Places {
            root,
            git_internals: vec![root.join(".git")],
            metron_files: vec![root.join(".metron.json")],
            temp,
            home: Some(home.to_path_buf()),
            metron_config: vec![PathBuf::from("/elsewhere/metron/config.json")],
        }
    }

    fn settings() -> SandboxSettings {
        SandboxSettings {
            network: vec!["npm install".to_owned()],
            git_writes: vec!["git commit".to_owned()],
            writable_paths: vec!["~/.cache/go-build".to_owned(), "relative/dir".to_owned()],
            protected_paths: vec!["~/secrets".to_owned()],
            ..SandboxSettings::default()
        }
    }

    #[test]
    fn the_default_policy_protects_credentials_and_keeps_git_read_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (root, home) = (dir.path().join("proj"), dir.path().join("home"));
        std::fs::create_dir_all(root.join(".git/hooks")).expect("mkdir");
        let root = root.canonicalize().expect("real root");
        let home = real(home);
        let policy =
            Policy::for_command(&settings(), &["npm", "test"], &places(&root, &root, &home));
        assert!(!policy.network && !policy.git_writes);
        assert_eq!(
            policy.read_only,
            [root.join(".git"), root.join(".metron.json")]
        );
        for protected in [".ssh", ".aws", ".metron", ".docker/config.json", "secrets"] {
            assert!(
                policy.protected.contains(&home.join(protected)),
                "{protected} is not protected: {:?}",
                policy.protected
            );
        }
        assert!(
            policy
                .protected
                .contains(&PathBuf::from("/elsewhere/metron/config.json"))
        );
        // A relative grant names no one place, so it is dropped.
        assert_eq!(policy.writable, [home.join(".cache/go-build")]);
    }

    #[test]
    fn network_and_git_writes_follow_whole_word_prefixes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().canonicalize().expect("real root");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        let place = places(&root, &root, &root);
        let npm = Policy::for_command(&settings(), &["npm", "install", "x"], &place);
        assert!(npm.network);
        let npx = Policy::for_command(&settings(), &["npm", "installer"], &place);
        assert!(!npx.network, "prefixes match whole words");
        let commit = Policy::for_command(&settings(), &["git", "commit", "-m", "x"], &place);
        assert!(commit.git_writes);
        assert_eq!(
            commit.read_only[..2],
            [root.join(".git/hooks"), root.join(".git/config")]
        );
    }

    #[test]
    fn the_question_line_says_what_the_command_may_reach() {
        let mut summary = Summary {
            no_new_top_level: false,
            git_writes: false,
            network: false,
            extra_writable: Vec::new(),
        };
        assert_eq!(
            summary.to_string(),
            "writes the project (not .git) and a temp dir; no network"
        );
        summary.network = true;
        summary.git_writes = true;
        summary.extra_writable = vec!["/home/me/.cache/go-build".to_owned()];
        assert_eq!(
            summary.to_string(),
            "writes the project (and .git, not its hooks or config), a temp dir and /home/me/.cache/go-build; network: allowed by your config"
        );
        summary.no_new_top_level = true;
        summary.git_writes = false;
        summary.network = false;
        summary.extra_writable.clear();
        assert_eq!(
            summary.to_string(),
            "writes the project (not .git; no new top-level entries) and a temp dir; no network"
        );
    }

    #[test]
    fn every_home_keeps_its_credentials_protected() {
        let mut settings = settings();
        settings.protected_paths = vec!["~/.secrets".to_owned()];
        let homes = [PathBuf::from("/tmp/other"), PathBuf::from("/home/me")];
        let protected = protected_places(&settings, &homes, &[]);
        for home in &homes {
            assert!(protected.contains(&home.join(".npmrc")), "{protected:?}");
            assert!(protected.contains(&home.join(".ssh")), "{protected:?}");
            assert!(protected.contains(&home.join(".secrets")), "{protected:?}");
        }
        assert!(protected_places(&settings, &[], &[]).is_empty());
    }

    #[test]
    fn home_is_expanded_and_relative_grants_are_refused() {
        let home = Path::new("/home/me");
        assert_eq!(expand_home("~", Some(home)), Some(home.to_path_buf()));
        assert_eq!(
            expand_home(" ~/.cache ", Some(home)),
            Some(home.join(".cache"))
        );
        assert_eq!(expand_home("~/.cache", None), None);
        assert_eq!(expand_home("/opt/x", None), Some(PathBuf::from("/opt/x")));
        assert_eq!(expand_home("build", Some(home)), None);
        assert_eq!(expand_home("~other/x", Some(home)), None);
    }

    #[test]
    fn a_missing_place_resolves_through_its_nearest_real_ancestor() {
        let dir = tempfile::tempdir().expect("temp dir");
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(dir.path(), &link).expect("symlink");
        let real_dir = dir.path().canonicalize().expect("real");
        assert_eq!(real(link.join("a/b")), real_dir.join("a/b"));
    }
}
