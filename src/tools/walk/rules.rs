//! The ignore rules of a walk, read by metron itself, through the project boundary.
//!
//! The `ignore` crate's walker reads `.gitignore`, `.ignore`, `.rgignore`,
//! `.git/info/exclude`, the global git excludes file and the ignore files of the root's
//! ancestors by path, following symlinks, whole. `.git/info/exclude -> /dev/zero` took
//! list_files to 7.8 GB, a FIFO there hung it, and a symlink out made it an oracle on the
//! outside file. So the walker's own reading is switched off ([`super::builder`]) and every
//! rule file is read here instead:
//!
//! - in the tree, through the project handle ([`Project::read_capped`]): a symlink that
//!   stays beneath the root is followed (a `.gitignore -> cfg/ignore` works), one that
//!   leaves it fails the open, a FIFO or device is refused before it is opened, and at most
//!   [`MAX_RULE_BYTES`] are read;
//! - `.git/info/exclude` only where `.git` is a real directory in the tree (a worktree's or
//!   submodule's `.git` file names a git directory elsewhere, which is not read);
//! - the user's global excludes file ([`global`]) by path, as it is the user's own, but
//!   under the same type and size checks;
//! - the ignore files of the root's ancestors ([`ancestors`]), as ripgrep reads them: they
//!   are the user's directories, where a cloned repository cannot put files, and they
//!   are read under the checks of [`read_outside`].
//!
//! Compiling a rule file costs CPU in proportion to its patterns (one 1 MiB file of
//! wildcards takes seconds), so identical content is compiled once per process and shared
//! ([`Compiled`]), and one walk reads at most [`MAX_WALK_RULE_BYTES`] of distinct rule
//! content: a directory whose rule files would go over is not entered, with a note.
//!
//! Matching follows ripgrep: in each directory from the entry's own up to the root, the
//! first rule that matches in `.rgignore`, then `.ignore`, then `.gitignore`, then
//! `.git/info/exclude` decides (a deeper file wins), the git files only inside a git
//! repository and not past a nested repository's root, the global file last; a hidden
//! name is skipped unless a rule re-includes it.

use std::collections::{HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use ignore::Match;
use ignore::gitignore::{Gitignore, GitignoreBuilder};

use crate::project::{BoundaryError, Project};

/// The largest ignore file a walk reads. Real ones are a few kilobytes; the bound keeps a
/// huge or endless one from exhausting memory.
pub(crate) const MAX_RULE_BYTES: u64 = 1 << 20;

/// The most distinct rule content (bytes) one walk compiles. A large repository's ignore
/// files add up to tens of kilobytes; past this a directory is not entered, so a tree of
/// many different huge ignore files cannot make every walk take minutes.
pub(crate) const MAX_WALK_RULE_BYTES: u64 = 2 << 20;

/// How much compiled rule content the process keeps for reuse across walks; past it the
/// cache starts over.
const MAX_CACHED_BYTES: usize = 8 << 20;

/// The rule files of one directory, in precedence order (first wins within a directory).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `.rgignore`, ripgrep's own.
    Rg,
    /// `.ignore`.
    Ignore,
    /// `.gitignore`, inside a git repository only.
    Git,
    /// `.git/info/exclude`, where `.git` is a directory.
    Exclude,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Rg, Kind::Ignore, Kind::Git, Kind::Exclude];

    fn file(self) -> &'static str {
        match self {
            Kind::Rg => ".rgignore",
            Kind::Ignore => ".ignore",
            Kind::Git => ".gitignore",
            Kind::Exclude => ".git/info/exclude",
        }
    }

    fn needs_git(self) -> bool {
        matches!(self, Kind::Git | Kind::Exclude)
    }
}

/// Why a rule file was not used; its directory is not entered (the root: the walk is
/// refused), since walking it without its rules would show what the rules hide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unsafe {
    /// A symlink that resolves outside the project.
    LeavesProject,
    /// A FIFO, a device, a directory.
    NotRegular,
    /// Over [`MAX_RULE_BYTES`].
    TooLarge,
    /// Would take the walk over [`MAX_WALK_RULE_BYTES`].
    OverBudget,
    /// Could not be read (the operating system's reason).
    Unreadable(String),
}

impl Unsafe {
    /// What a walking tool says about the rule file `shown`, with the next step.
    pub(crate) fn message(&self, shown: &str) -> String {
        let why = match self {
            Unsafe::LeavesProject => "is a symlink that leads outside the project".to_owned(),
            Unsafe::NotRegular => "is not a regular file".to_owned(),
            Unsafe::TooLarge => "is larger than 1 MiB".to_owned(),
            Unsafe::OverBudget => {
                return format!(
                    "`{shown}` would take this walk's ignore rules over 2 MiB of distinct content; metron bounds them so that ignore files cannot make every walk slow; merge or shorten the ignore files, or narrow the call to another directory"
                );
            }
            Unsafe::Unreadable(reason) => format!("cannot be read ({reason})"),
        };
        format!(
            "`{shown}` {why}; metron reads ignore files only as regular files of at most 1 MiB inside the project (a symlink to one inside is fine), so that a repository cannot make it read outside the project or exhaust memory; replace it with a regular file"
        )
    }
}

/// The compiled rules of one directory.
#[derive(Debug, Default)]
pub(crate) struct DirRules {
    /// One matcher per [`Kind`], in [`Kind::ALL`] order, `None` where the file is absent.
    matchers: [Option<Arc<Gitignore>>; 4],
    /// The directory holds `.git` (a directory or a file): a repository's root.
    has_git: bool,
}

impl DirRules {
    /// Whether these rules can change no verdict: no rule file, and not a repository's
    /// root. [`matched`] would pass over them, so the walk leaves them out of every
    /// entry's chain instead of paying, for every entry below them, the path work of
    /// asking them.
    pub(crate) fn is_inert(&self) -> bool {
        !self.has_git && self.matchers.iter().all(Option::is_none)
    }
}

/// The distinct rule content one walk has used, for [`MAX_WALK_RULE_BYTES`].
#[derive(Debug, Default)]
pub(crate) struct Budget {
    seen: HashSet<Arc<[u8]>>,
    spent: u64,
}

impl Budget {
    /// Counts `content` unless this walk has used the same content before; refuses it
    /// when it would go over the bound. Decided on the walk alone (not on what the process
    /// cache holds), so the same tree always gives the same answer.
    fn spend(&mut self, content: &Arc<[u8]>) -> Result<(), Unsafe> {
        if self.seen.contains(content) {
            return Ok(());
        }
        let cost = content.len() as u64;
        if self.spent + cost > MAX_WALK_RULE_BYTES {
            return Err(Unsafe::OverBudget);
        }
        self.spent += cost;
        self.seen.insert(Arc::clone(content));
        Ok(())
    }
}

/// Reads and compiles the rules of the directory `dir` (relative to the root, `""` for the
/// root). `Err` names the rule file that may not be used and why.
pub(crate) fn load(
    project: &Project,
    dir: &Path,
    budget: &Mutex<Budget>,
) -> Result<DirRules, (String, Unsafe)> {
    let opened = project.open_dir(dir).ok();
    let git = opened.as_ref().and_then(|d| {
        d.symlink_metadata(".git")
            .ok()
            .map(|meta| meta.file_type().is_dir())
    });
    let mut rules = DirRules {
        matchers: Default::default(),
        has_git: git.is_some(),
    };
    for (slot, kind) in rules.matchers.iter_mut().zip(Kind::ALL) {
        if kind == Kind::Exclude && git != Some(true) {
            continue;
        }
        // Most directories have none of the rule files. One lookup of the name in the
        // directory already open says so; the checked read through the project handle
        // resolves the whole path from the root again, one lookup per component, for
        // every kind in every directory (this probe took a listing of the Go tree to
        // 0.92x the CPU time). Anything but "no such name" (the file, a symlink, an
        // error) takes the checked read below, as before.
        if kind != Kind::Exclude
            && let Some(d) = &opened
            && d.symlink_metadata(kind.file())
                .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            continue;
        }
        let relative = dir.join(kind.file());
        let shown = relative.to_string_lossy().into_owned();
        // A name that cannot be shown is a directory whose files cannot be shown either.
        let Some(path) = project.walked_path(&relative) else {
            return Err((
                shown,
                Unsafe::Unreadable("its name is not plain text".into()),
            ));
        };
        let content: Arc<[u8]> = match project.read_capped(&path, MAX_RULE_BYTES) {
            Ok(bytes) => bytes.into(),
            Err(BoundaryError::NotFound(_)) => continue,
            Err(BoundaryError::SymlinkEscape(_)) => return Err((shown, Unsafe::LeavesProject)),
            Err(BoundaryError::NotAFile(_)) => return Err((shown, Unsafe::NotRegular)),
            Err(BoundaryError::TooLarge { .. }) => return Err((shown, Unsafe::TooLarge)),
            Err(other) => return Err((shown, Unsafe::Unreadable(other.to_string()))),
        };
        budget
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .spend(&content)
            .map_err(|why| (shown, why))?;
        *slot = Some(compiled(&content));
    }
    Ok(rules)
}

/// Compiled rule files by content, shared by every walk of the process.
#[derive(Debug, Default)]
struct Compiled {
    matchers: HashMap<Arc<[u8]>, Arc<Gitignore>>,
    bytes: usize,
}

/// The matcher for `content`, compiled once per process. Compiled relative to `.`, so one
/// matcher serves every directory holding the same file: it is asked about paths relative
/// to the directory the file is in.
fn compiled(content: &Arc<[u8]>) -> Arc<Gitignore> {
    static CACHE: OnceLock<Mutex<Compiled>> = OnceLock::new();
    let cache = CACHE.get_or_init(Mutex::default);
    if let Some(found) = cache
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .matchers
        .get(content)
    {
        return Arc::clone(found);
    }
    // Compiled without the lock: a parallel walk's other threads go on meanwhile.
    let matcher = Arc::new(compile(content));
    let mut cache = cache.lock().unwrap_or_else(PoisonError::into_inner);
    if cache.bytes + content.len() > MAX_CACHED_BYTES {
        *cache = Compiled::default();
    }
    cache.bytes += content.len();
    cache
        .matchers
        .insert(Arc::clone(content), Arc::clone(&matcher));
    matcher
}

/// Compiles gitignore-format rules; a line that is not a valid pattern is left out, as
/// ripgrep leaves it out.
fn compile(content: &[u8]) -> Gitignore {
    let text = String::from_utf8_lossy(content);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut builder = GitignoreBuilder::new(".");
    for line in text.lines() {
        let _ = builder.add_line(None, line);
    }
    builder.build().unwrap_or_else(|_| Gitignore::empty())
}

/// The user's global git excludes file, compiled: `core.excludesFile` from the user's git
/// configuration (`$XDG_CONFIG_HOME/git/config`, `~/.gitconfig`; the later one wins, as
/// git reads them), else `$XDG_CONFIG_HOME/git/ignore`. A repository's own `.git/config`
/// is not read: a cloned repository could point it anywhere. Each file is read under the
/// checks of [`read_outside`]; one that fails them is left out.
pub(crate) fn global(home: Option<&Path>, xdg: Option<&Path>) -> Option<Arc<Gitignore>> {
    let xdg = xdg
        .map(Path::to_path_buf)
        .or_else(|| home.map(|h| h.join(".config")))?;
    let mut excludes = None;
    let configs = [
        Some(xdg.join("git/config")),
        home.map(|h| h.join(".gitconfig")),
    ];
    for config in configs.into_iter().flatten() {
        if let Some(text) = read_outside(&config)
            && let Some(path) = excludes_file(&String::from_utf8_lossy(&text), home)
        {
            excludes = Some(path);
        }
    }
    let path = excludes.unwrap_or_else(|| xdg.join("git/ignore"));
    let content: Arc<[u8]> = read_outside(&path)?.into();
    Some(compiled(&content))
}

/// `core.excludesFile` from the text of a git config file, with `~/` expanded; the last
/// one set wins.
fn excludes_file(text: &str, home: Option<&Path>) -> Option<PathBuf> {
    let mut in_core = false;
    let mut found = None;
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with('[') {
            let section = line.trim_start_matches('[').split([']', ' ', '"']).next();
            in_core = section.is_some_and(|s| s.eq_ignore_ascii_case("core"));
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        if !in_core || !key.trim().eq_ignore_ascii_case("excludesfile") {
            continue;
        }
        let value = value.trim().trim_matches('"');
        found = match value.strip_prefix("~/") {
            Some(rest) => home.map(|h| h.join(rest)),
            None if value.is_empty() => None,
            None => Some(PathBuf::from(value)),
        };
    }
    found
}

/// Reads a file outside the project (the user's git configuration): opened non-blocking,
/// refused unless the open file is a regular file of at most [`MAX_RULE_BYTES`], and at
/// most that much read, so a FIFO or `/dev/zero` there costs nothing.
fn read_outside(path: &Path) -> Option<Vec<u8>> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags((rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC).bits() as i32)
        .open(path)
        .ok()?;
    let metadata = file.metadata().ok()?;
    if !metadata.is_file() || metadata.len() > MAX_RULE_BYTES {
        return None;
    }
    let mut bytes = Vec::new();
    file.take(MAX_RULE_BYTES + 1).read_to_end(&mut bytes).ok()?;
    (bytes.len() as u64 <= MAX_RULE_BYTES).then_some(bytes)
}

/// The rules of the root's ancestors, outermost first, each with its path: the user's
/// directories above the project, where a cloned repository cannot put files, read as
/// ripgrep reads them (`.rgignore`, `.ignore`, `.gitignore`) but under the checks of
/// [`read_outside`].
pub(crate) fn ancestors(root: &Path) -> Vec<(PathBuf, Arc<DirRules>)> {
    let mut chain: Vec<_> = root
        .ancestors()
        .skip(1)
        .map(|dir| {
            let mut rules = DirRules {
                has_git: dir.join(".git").symlink_metadata().is_ok(),
                ..DirRules::default()
            };
            for (slot, kind) in rules.matchers.iter_mut().zip(Kind::ALL) {
                if kind == Kind::Exclude {
                    continue;
                }
                if let Some(content) = read_outside(&dir.join(kind.file())) {
                    *slot = Some(compiled(&content.into()));
                }
            }
            (dir.to_path_buf(), Arc::new(rules))
        })
        .filter(|(_, rules)| !rules.is_inert())
        .collect();
    chain.reverse();
    chain
}

/// The verdict of the rules on `entry`, whose parent directories' rules are `chain`
/// (outermost first, the entry's own directory last; `entry` and each directory given
/// the same way, so the one strips off the other), and of the global excludes, which are
/// asked about `from_root`, the entry relative to the project root.
pub(crate) fn matched(
    chain: &[(PathBuf, Arc<DirRules>)],
    global: Option<&Gitignore>,
    entry: &Path,
    from_root: &Path,
    is_dir: bool,
) -> Match<()> {
    let in_git = chain.iter().any(|(_, rules)| rules.has_git);
    let mut found: [Match<()>; 4] = [Match::None, Match::None, Match::None, Match::None];
    let mut past_repository = false;
    for (dir, rules) in chain.iter().rev() {
        let relative = super::beneath(entry, dir).unwrap_or(entry);
        for (at, kind) in Kind::ALL.into_iter().enumerate() {
            if !found[at].is_none() || kind.needs_git() && (!in_git || past_repository) {
                continue;
            }
            if let Some(matcher) = &rules.matchers[at] {
                found[at] = plain(matcher.matched(relative, is_dir));
            }
        }
        past_repository |= rules.has_git;
    }
    if let Some(first) = found.into_iter().find(|m| !m.is_none()) {
        return first;
    }
    match global {
        Some(global) if in_git => plain(global.matched(from_root, is_dir)),
        _ => Match::None,
    }
}

fn plain<T>(m: Match<T>) -> Match<()> {
    match m {
        Match::None => Match::None,
        Match::Ignore(_) => Match::Ignore(()),
        Match::Whitelist(_) => Match::Whitelist(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the chain says of `path` (as seen from the root), with no global excludes.
    fn matched_at(chain: &[(PathBuf, Arc<DirRules>)], path: &str, is_dir: bool) -> Match<()> {
        matched(chain, None, Path::new(path), Path::new(path), is_dir)
    }

    fn rules(kind: Kind, text: &str, has_git: bool) -> Arc<DirRules> {
        let mut rules = DirRules {
            has_git,
            ..DirRules::default()
        };
        let at = Kind::ALL.iter().position(|k| *k == kind).expect("kind");
        rules.matchers[at] = Some(compiled(&Arc::from(text.as_bytes())));
        Arc::new(rules)
    }

    #[test]
    fn rules_are_inert_only_without_a_rule_file_and_without_git() {
        assert!(DirRules::default().is_inert());
        let repository = DirRules {
            has_git: true,
            ..DirRules::default()
        };
        assert!(!repository.is_inert());
        assert!(!rules(Kind::Ignore, "*.tmp\n", false).is_inert());
    }

    #[test]
    fn a_deeper_file_wins_and_rgignore_beats_gitignore() {
        let chain = vec![
            (PathBuf::new(), rules(Kind::Git, "*.log\n", true)),
            (PathBuf::from("a"), rules(Kind::Rg, "!keep.log\n", false)),
        ];
        assert!(matched_at(&chain, "a/keep.log", false).is_whitelist());
        assert!(matched_at(&chain, "a/x.log", false).is_ignore());
        assert!(matched_at(&chain, "a/x.rs", false).is_none());
    }

    #[test]
    fn one_compiled_file_serves_every_directory_holding_it() {
        let shared = rules(Kind::Ignore, "/top.txt\nbuild/\n", false);
        let chain = vec![
            (PathBuf::new(), Arc::clone(&shared)),
            (PathBuf::from("x/y"), shared),
        ];
        assert!(matched_at(&chain, "x/y/top.txt", false).is_ignore());
        assert!(matched_at(&chain, "x/y/build", true).is_ignore());
        assert!(matched_at(&chain, "x/y/z/top.txt", false).is_none());
    }

    #[test]
    fn gitignore_applies_only_in_a_repository_and_not_past_a_nested_one() {
        let outside = vec![(PathBuf::new(), rules(Kind::Git, "*.o\n", false))];
        assert!(matched_at(&outside, "a.o", false).is_none());
        let top = (PathBuf::new(), rules(Kind::Git, "*.o\n", true));
        let inner = DirRules {
            has_git: true,
            ..DirRules::default()
        };
        let nested = vec![top.clone(), (PathBuf::from("sub"), Arc::new(inner))];
        assert!(matched_at(&[top], "a.o", false).is_ignore());
        assert!(matched_at(&nested, "sub/a.o", false).is_none());
    }

    #[test]
    fn identical_content_is_compiled_once() {
        let content: Arc<[u8]> = Arc::from(&b"*.tmp-once\n"[..]);
        let first = compiled(&content);
        let again = compiled(&Arc::from(&b"*.tmp-once\n"[..]));
        assert!(Arc::ptr_eq(&first, &again));
    }

    #[test]
    fn the_walk_budget_counts_distinct_content_and_holds_at_the_bound() {
        let mut budget = Budget::default();
        let half: Arc<[u8]> = vec![b'a'; (MAX_WALK_RULE_BYTES / 2) as usize].into();
        let other: Arc<[u8]> = vec![b'b'; (MAX_WALK_RULE_BYTES / 2) as usize].into();
        budget.spend(&half).expect("half");
        budget.spend(&half).expect("the same content again is free");
        budget.spend(&other).expect("exactly at the bound");
        let one: Arc<[u8]> = Arc::from(&b"c"[..]);
        assert_eq!(budget.spend(&one), Err(Unsafe::OverBudget));
    }

    #[test]
    fn excludes_file_is_read_from_the_core_section_last_wins() {
        let home = Path::new("/h");
        let text = "[user]\n\texcludesfile = /no\n[core]\n\texcludesFile = ~/a\n[core]\n  excludesfile = \"/b\"\n";
        assert_eq!(excludes_file(text, Some(home)), Some(PathBuf::from("/b")));
        assert_eq!(
            excludes_file("[core]\nexcludesfile=~/x\n", Some(home)),
            Some(PathBuf::from("/h/x"))
        );
        assert_eq!(excludes_file("[user]\nexcludesfile=/x\n", Some(home)), None);
    }

    #[test]
    fn outside_files_are_read_only_when_regular_and_small() {
        let dir = tempfile::tempdir().expect("tempdir");
        let small = dir.path().join("small");
        std::fs::write(&small, "x\n").expect("write");
        assert_eq!(read_outside(&small).as_deref(), Some(&b"x\n"[..]));
        let big = dir.path().join("big");
        std::fs::write(&big, vec![b'x'; MAX_RULE_BYTES as usize + 1]).expect("write");
        assert_eq!(read_outside(&big), None);
        assert_eq!(read_outside(Path::new("/dev/zero")), None);
        assert_eq!(read_outside(dir.path()), None);
    }
}
