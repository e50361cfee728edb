//! git's own configuration: the keys in a repository's git config that make an allowed
//! `git status` or `git diff` run a program the repository chose, and how to reset them
//! for the run.
//!
//! A repository carries `.git/config` (a checkout handed over as a tarball, a directory
//! shared with someone else), and git reads it before anything else: `core.fsmonitor`
//! runs on every `git status`, `diff.external` on every `git diff`. So for a `git`
//! command the scan reads the git directory's `config` (and `config.worktree`), and when
//! `.git` is a file (`gitdir: PATH`, a linked worktree or `--separate-git-dir`), the
//! config of the directory it names and of that directory's `commondir`. These lie
//! outside the project boundary (a worktree's git directory usually lies elsewhere), so
//! they are read here with `std::fs`, capped, regular files only, and no value from them is
//! ever quoted: the warning names the file, the line and the key.
//!
//! The config is parsed as git parses it (a char-level reader, not a line scan), so no
//! spelling slips through: section and key names are case-insensitive, `[section
//! "subsection"]` keeps the subsection's case and `[section.subsection]` lowercases it, a
//! key may follow the header on the same line, values continue over a backslash-newline,
//! and `#`/`;` start a comment outside quotes. Where this reader is more lenient than git
//! (`[ core ]`, which git rejects) it can only add a warning.

use std::io::Read;
use std::path::{Path, PathBuf};

/// A key in git's config, as git names it: section and key lowercased, the subsection
/// verbatim (`[a "B"]`) or lowercased (`[a.B]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct GitKey {
    pub(super) section: String,
    pub(super) sub: Option<String>,
    pub(super) name: String,
}

impl GitKey {
    /// `section.sub.name`, the spelling `git config` and `GIT_CONFIG_KEY_<n>` take.
    pub(super) fn dotted(&self) -> String {
        match &self.sub {
            Some(sub) => format!("{}.{sub}.{}", self.section, self.name),
            None => format!("{}.{}", self.section, self.name),
        }
    }
}

/// Which subsections a rule covers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Sub {
    /// `core.fsmonitor`: no subsection.
    No,
    /// `filter.<driver>.clean`: any subsection, and one is required.
    Any,
}

/// A key (or a family of keys) that runs or picks a program, and what resets it.
struct Rule {
    section: &'static str,
    sub: Sub,
    /// The key name, lowercase; `*` for any (`alias.*`).
    name: &'static str,
    /// What `GIT_CONFIG_KEY_<n>` sets it to for the run, when a value makes git run
    /// nothing of the repository's: the program git itself would use, `false`, or empty
    /// (an empty command makes git fail rather than run anything; an empty
    /// `credential.helper` clears the list). `None`: only the warning.
    reset: Reset,
}

/// What a rule does for the run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reset {
    /// The key is set to this value through git's environment for the run.
    To(&'static str),
    /// Nothing an environment setting can undo: the warning stands alone.
    WarnOnly,
    /// Already neutralised for every command (`GIT_PAGER=cat`).
    ByEnvironment,
}

const fn rule(section: &'static str, sub: Sub, name: &'static str, reset: Reset) -> Rule {
    Rule {
        section,
        sub,
        name,
        reset,
    }
}

/// Every key of git's configuration (as `git help config` documents it for git 2.47)
/// whose value is a command git runs, a program it executes, or another file it reads.
/// `uploadpack.packObjectsHook` is missing on purpose: git reads it only from protected
/// (system, global, command-line) config, never from a repository's.
const RULES: &[Rule] = &[
    rule("core", Sub::No, "fsmonitor", Reset::To("false")),
    rule("core", Sub::No, "hookspath", Reset::To("/dev/null")),
    rule("core", Sub::No, "sshcommand", Reset::To("ssh")),
    rule("core", Sub::No, "gitproxy", Reset::WarnOnly),
    rule("core", Sub::No, "pager", Reset::ByEnvironment),
    rule("core", Sub::No, "editor", Reset::To("false")),
    rule("core", Sub::No, "askpass", Reset::To("false")),
    rule("core", Sub::No, "alternaterefscommand", Reset::To("")),
    rule("sequence", Sub::No, "editor", Reset::To("false")),
    rule("pager", Sub::No, "*", Reset::ByEnvironment),
    rule("diff", Sub::No, "external", Reset::To("")),
    rule("diff", Sub::Any, "command", Reset::To("")),
    rule("diff", Sub::Any, "textconv", Reset::To("")),
    rule("difftool", Sub::Any, "cmd", Reset::WarnOnly),
    rule("difftool", Sub::Any, "path", Reset::WarnOnly),
    rule("mergetool", Sub::Any, "cmd", Reset::WarnOnly),
    rule("mergetool", Sub::Any, "path", Reset::WarnOnly),
    rule("merge", Sub::Any, "driver", Reset::To("")),
    rule("filter", Sub::Any, "clean", Reset::To("")),
    rule("filter", Sub::Any, "smudge", Reset::To("")),
    rule("filter", Sub::Any, "process", Reset::To("")),
    rule("gpg", Sub::No, "program", Reset::To("gpg")),
    rule("gpg", Sub::Any, "program", Reset::WarnOnly),
    rule("gpg", Sub::Any, "defaultkeycommand", Reset::WarnOnly),
    rule("credential", Sub::No, "helper", Reset::To("")),
    rule("credential", Sub::Any, "helper", Reset::To("")),
    rule("alias", Sub::No, "*", Reset::WarnOnly),
    rule("include", Sub::No, "path", Reset::WarnOnly),
    rule("includeif", Sub::Any, "path", Reset::WarnOnly),
    rule(
        "remote",
        Sub::Any,
        "uploadpack",
        Reset::To("git-upload-pack"),
    ),
    rule(
        "remote",
        Sub::Any,
        "receivepack",
        Reset::To("git-receive-pack"),
    ),
    rule("remote", Sub::Any, "vcs", Reset::WarnOnly),
    rule("protocol", Sub::No, "allow", Reset::WarnOnly),
    rule("protocol", Sub::Any, "allow", Reset::WarnOnly),
    rule("submodule", Sub::Any, "update", Reset::WarnOnly),
    rule("trailer", Sub::Any, "command", Reset::WarnOnly),
    rule("trailer", Sub::Any, "cmd", Reset::WarnOnly),
    rule("browser", Sub::Any, "cmd", Reset::WarnOnly),
    rule("browser", Sub::Any, "path", Reset::WarnOnly),
    rule("man", Sub::Any, "cmd", Reset::WarnOnly),
    rule("man", Sub::Any, "path", Reset::WarnOnly),
    rule("sendemail", Sub::No, "sendmailcmd", Reset::WarnOnly),
    rule("sendemail", Sub::No, "smtpserver", Reset::WarnOnly),
    rule("sendemail", Sub::No, "tocmd", Reset::WarnOnly),
    rule("sendemail", Sub::No, "cccmd", Reset::WarnOnly),
    rule("hook", Sub::Any, "command", Reset::WarnOnly),
    // Git LFS, started as a filter, reads these from the repository's git config (not
    // from `.lfsconfig`, where it takes only a list of safe keys).
    rule("lfs", Sub::Any, "path", Reset::WarnOnly),
    rule("lfs", Sub::Any, "clean", Reset::WarnOnly),
    rule("lfs", Sub::Any, "smudge", Reset::WarnOnly),
];

/// How `key` is handled, when it is one of [`RULES`]' keys.
pub(super) fn rule_for(key: &GitKey) -> Option<Reset> {
    RULES
        .iter()
        .find(|r| {
            r.section == key.section
                && (r.sub == Sub::Any) == key.sub.is_some()
                && (r.name == "*" || r.name == key.name)
        })
        .map(|r| r.reset)
}

/// One key assignment in a config file, with the line its name stands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) line: usize,
    pub(super) key: GitKey,
}

/// Every key assigned in `text`, parsed as git does. A line git would reject ends the
/// parse (git then refuses to run at all, so nothing after it matters).
pub(super) fn entries(text: &str) -> Vec<Entry> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut reader = Reader {
        chars: text.chars().peekable(),
        line: 1,
    };
    let mut found = Vec::new();
    let mut section: Option<(String, Option<String>)> = None;
    loop {
        reader.skip_while(char::is_whitespace);
        let Some(c) = reader.next() else {
            return found;
        };
        match c {
            '#' | ';' => reader.skip_line(),
            '[' => match reader.header() {
                Some(header) => section = Some(header),
                None => return found,
            },
            c if c.is_ascii_alphabetic() => {
                let line = reader.line;
                let mut name = String::from(c.to_ascii_lowercase());
                while let Some(c) = reader
                    .chars
                    .next_if(|c| c.is_ascii_alphanumeric() || *c == '-')
                {
                    name.push(c.to_ascii_lowercase());
                }
                if !reader.value() {
                    return found;
                }
                let Some((section, sub)) = &section else {
                    return found;
                };
                found.push(Entry {
                    line,
                    key: GitKey {
                        section: section.clone(),
                        sub: sub.clone(),
                        name,
                    },
                });
            }
            _ => return found,
        }
    }
}

/// A cursor over a config file that counts lines.
struct Reader<'a> {
    chars: std::iter::Peekable<std::str::Chars<'a>>,
    line: usize,
}

impl Reader<'_> {
    fn next(&mut self) -> Option<char> {
        let c = self.chars.next();
        if c == Some('\n') {
            self.line += 1;
        }
        c
    }

    fn skip_while(&mut self, keep: impl Fn(char) -> bool) {
        while self.chars.peek().is_some_and(|c| keep(*c)) {
            self.next();
        }
    }

    fn skip_line(&mut self) {
        while self.next().is_some_and(|c| c != '\n') {}
    }

    fn skip_blanks(&mut self) {
        self.skip_while(|c| c == ' ' || c == '\t' || c == '\r');
    }

    /// After `[`: the section (lowercased) and subsection, up to and including `]`.
    fn header(&mut self) -> Option<(String, Option<String>)> {
        self.skip_blanks();
        let mut name = String::new();
        while let Some(c) = self
            .chars
            .next_if(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '.')
        {
            name.push(c.to_ascii_lowercase());
        }
        self.skip_blanks();
        let mut sub = None;
        if self.chars.next_if_eq(&'"').is_some() {
            let mut text = String::new();
            loop {
                match self.next()? {
                    '"' => break,
                    '\n' => return None,
                    '\\' => text.push(self.next().filter(|c| *c != '\n')?),
                    c => text.push(c),
                }
            }
            sub = Some(text);
            self.skip_blanks();
        }
        if self.next()? != ']' || name.is_empty() {
            return None;
        }
        // The old form `[section.sub]`: everything after the first dot is the subsection.
        match (name.split_once('.'), sub) {
            (Some((section, old)), None) => Some((section.to_owned(), Some(old.to_owned()))),
            (Some((section, old)), Some(sub)) => {
                Some((section.to_owned(), Some(format!("{old}.{sub}"))))
            }
            (None, sub) => Some((name, sub)),
        }
    }

    /// After a key's name: blanks, then the end of the line (a boolean), a comment, or
    /// `=` and a value, which may continue over backslash-newlines. False when git would
    /// reject the line.
    fn value(&mut self) -> bool {
        self.skip_blanks();
        match self.chars.peek() {
            None => return true,
            Some('\n') => {
                self.next();
                return true;
            }
            Some('#' | ';') => {
                self.skip_line();
                return true;
            }
            Some('=') => {
                self.next();
            }
            Some(_) => return false,
        }
        let mut quoted = false;
        loop {
            match self.next() {
                None => return !quoted,
                Some('\n') => return !quoted,
                Some('"') => quoted = !quoted,
                Some('\\') => {
                    // An escape, or a backslash-newline that continues the value.
                    if self.next().is_none() {
                        return false;
                    }
                }
                Some('#' | ';') if !quoted => {
                    self.skip_line();
                    return true;
                }
                Some(_) => {}
            }
        }
    }
}

/// A config file git reads for a command run in the project root, and how to name it.
pub(super) struct ConfigPlace {
    pub(super) path: PathBuf,
    /// What the warning calls it (`.git/config`, or the path of a worktree's git
    /// directory's config).
    pub(super) shown: String,
}

/// The config files of the git directory the project root uses: `.git/config` and
/// `.git/config.worktree` when `.git` is a directory; when it is a file, those of the
/// directory its `gitdir:` line names and of that directory's `commondir`. An error
/// names a `.git` file that could not be read or followed (a warning of its own).
pub(super) fn config_places(root: &Path) -> Result<Vec<ConfigPlace>, String> {
    let dot_git = root.join(".git");
    let Ok(meta) = std::fs::metadata(&dot_git) else {
        return Ok(Vec::new());
    };
    let (git_dir, shown) = if meta.is_dir() {
        (dot_git, ".git".to_owned())
    } else {
        let bytes = read_outside(&dot_git, 4096)
            .map_err(|e| format!(".git is a file that metron could not read ({e})"))?
            .unwrap_or_default();
        let text = String::from_utf8_lossy(&bytes);
        let target = text
            .lines()
            .find_map(|l| l.trim_start().strip_prefix("gitdir:"))
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .ok_or_else(|| ".git is a file without a `gitdir:` line".to_owned())?;
        let dir = root.join(target);
        let shown = dir.display().to_string();
        (dir, shown)
    };
    let mut places = vec![
        ConfigPlace {
            path: git_dir.join("config"),
            shown: format!("{shown}/config"),
        },
        ConfigPlace {
            path: git_dir.join("config.worktree"),
            shown: format!("{shown}/config.worktree"),
        },
    ];
    let commondir = read_outside(&git_dir.join("commondir"), 4096)
        .ok()
        .flatten();
    if let Some(bytes) = commondir {
        let text = String::from_utf8_lossy(&bytes);
        let common = git_dir.join(text.trim());
        let shown = common.display().to_string();
        places.push(ConfigPlace {
            path: common.join("config"),
            shown: format!("{shown}/config"),
        });
    }
    Ok(places)
}

/// A file outside the project boundary (git's directory), at most `cap` bytes: `None`
/// when it does not exist, an error (in words) when it is not a regular file, cannot be
/// read or is larger. Opened non-blocking, so a FIFO does not hang the question.
pub(super) fn read_outside(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32)
        .open(path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot be read ({e})")),
    };
    let meta = file
        .metadata()
        .map_err(|e| format!("cannot be read ({e})"))?;
    if !meta.is_file() {
        return Err("is not a regular file".to_owned());
    }
    let mut bytes = Vec::new();
    file.take(cap + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot be read ({e})"))?;
    if bytes.len() as u64 > cap {
        return Err(format!("is larger than {cap} bytes"));
    }
    Ok(Some(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<String> {
        entries(text).iter().map(|e| e.key.dotted()).collect()
    }

    #[test]
    fn every_spelling_of_a_key_is_read_as_git_reads_it() {
        for text in [
            "[core]\n\tfsmonitor = ./x\n",
            "[core]fsmonitor=./x",
            "[CORE]\nFsMonitor = ./x\n",
            "[core] fsmonitor = ./x\n",
            "  [core]  \n  fsmonitor\t=\t./x ; comment\n",
            "[core]\n# fsmonitor = 1\nfsmonitor",
        ] {
            let keys = keys(text);
            assert!(
                keys.iter().any(|k| k == "core.fsmonitor"),
                "{text:?}: {keys:?}"
            );
        }
        assert_eq!(
            keys("[filter \"Ev\"]\nclean = x\n[filter.Ev]\nsmudge = y\n"),
            ["filter.Ev.clean", "filter.ev.smudge"]
        );
        assert_eq!(
            keys("[filter \"a\\\"b\"]\nprocess = x\n"),
            ["filter.a\"b.process"]
        );
        // A value continued over a backslash-newline is one value, not a new line.
        assert_eq!(
            keys("[a]\nx = 1 \\\n[core]\nfsmonitor = y\n"),
            ["a.x", "a.fsmonitor"]
        );
        // Quotes hide comment characters, and a header line may hold a key.
        assert_eq!(keys("[a]\nx = \"#;\" # c\ny\n"), ["a.x", "a.y"]);
        assert_eq!(entries("\n\n[core]\n\n fsmonitor = 1\n")[0].line, 5);
        // What git rejects ends the parse.
        assert!(keys("fsmonitor = x\n").is_empty());
        assert_eq!(keys("[a]\nx = 1\n!bad\n[core]\nfsmonitor = 1\n"), ["a.x"]);
    }

    #[test]
    fn the_rules_cover_drivers_aliases_and_includes() {
        let key = |text: &str| entries(text).remove(0).key;
        for (text, want) in [
            ("[core]\nfsmonitor = x", Some(Reset::To("false"))),
            ("[core]\nhooksPath = x", Some(Reset::To("/dev/null"))),
            ("[diff]\nexternal = x", Some(Reset::To(""))),
            ("[diff \"d\"]\ntextconv = x", Some(Reset::To(""))),
            ("[filter \"f\"]\nprocess = x", Some(Reset::To(""))),
            ("[alias]\nst = !sh", Some(Reset::WarnOnly)),
            ("[includeIf \"gitdir:/\"]\npath = x", Some(Reset::WarnOnly)),
            ("[pager]\nstatus = x", Some(Reset::ByEnvironment)),
            (
                "[lfs \"customtransfer.t\"]\npath = x",
                Some(Reset::WarnOnly),
            ),
            ("[lfs \"https://example.invalid/\"]\naccess = basic", None),
            ("[core]\nbare = false", None),
            ("[diff]\ncommand = x", None),
            ("[filter]\nclean = x", None),
            ("[remote \"origin\"]\nurl = x", None),
        ] {
            assert_eq!(rule_for(&key(text)), want, "{text}");
        }
    }
}
