//! git's own configuration: the keys in a repository's git config that make an allowed
//! `git status` or `git diff` run a program the repository chose, and how to reset them
//! for the run.
//!
//! A repository carries `.git/config` (a checkout handed over as a tarball, a directory
//! shared with someone else), and git reads it before anything else: `core.fsmonitor`
//! runs on every `git status`, `diff.external` on every `git diff`. So for a `git`
//! command the scan reads the config files of every git directory git may use there
//! (found by [`super::places`]: `.git`, the directory a `.git` file names, its
//! `commondir`, submodules, a root that is itself a git directory). These may lie
//! outside the project boundary (a worktree's git directory usually lies elsewhere), so
//! they are read here with `std::fs`, capped, regular files only, and no value from them
//! is ever quoted: the warning names the file, the line and the key.
//!
//! The config is parsed as git parses it (a char-level reader, not a line scan), so no
//! spelling slips through: section and key names are case-insensitive, `[section
//! "subsection"]` keeps the subsection's case and `[section.subsection]` lowercases it, a
//! key may follow the header on the same line, values continue over a backslash-newline
//! (CRLF read as LF, as git reads it), and `#`/`;` start a comment outside quotes. Where
//! this reader is more lenient than git (`[ core ]`, which git rejects) it can only add a
//! warning; a line it cannot read is reported (a warning of its own) and the reader
//! reads on from the next line, so no line can hide the keys after it.

use std::io::Read;
use std::path::Path;

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
    /// `tar.tgz.command`: this subsection only (listed before the `Any` rule it refines).
    Named(&'static str),
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
    rule("sendemail", Sub::No, "headercmd", Reset::WarnOnly),
    // `[sendemail "<identity>"]` holds the same keys for `--identity`.
    rule("sendemail", Sub::Any, "sendmailcmd", Reset::WarnOnly),
    rule("sendemail", Sub::Any, "smtpserver", Reset::WarnOnly),
    rule("sendemail", Sub::Any, "tocmd", Reset::WarnOnly),
    rule("sendemail", Sub::Any, "cccmd", Reset::WarnOnly),
    rule("sendemail", Sub::Any, "headercmd", Reset::WarnOnly),
    rule("hook", Sub::Any, "command", Reset::WarnOnly),
    // `git archive --format=tgz` pipes through these; git's own default for the two
    // built-in compressed formats is `gzip -cn`, a format the repository invents has none.
    rule("tar", Sub::Named("tgz"), "command", Reset::To("gzip -cn")),
    rule(
        "tar",
        Sub::Named("tar.gz"),
        "command",
        Reset::To("gzip -cn"),
    ),
    rule("tar", Sub::Any, "command", Reset::WarnOnly),
    rule("imap", Sub::No, "tunnel", Reset::WarnOnly),
    rule("interactive", Sub::No, "difffilter", Reset::WarnOnly),
    rule("gc", Sub::No, "recentobjectshook", Reset::WarnOnly),
    rule("instaweb", Sub::No, "httpd", Reset::WarnOnly),
    rule("instaweb", Sub::No, "browser", Reset::WarnOnly),
    rule("instaweb", Sub::No, "modulepath", Reset::WarnOnly),
    rule("guitool", Sub::Any, "cmd", Reset::WarnOnly),
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
                && match r.sub {
                    Sub::No => key.sub.is_none(),
                    Sub::Any => key.sub.is_some(),
                    Sub::Named(name) => key.sub.as_deref() == Some(name),
                }
                && (r.name == "*" || r.name == key.name)
        })
        .map(|r| r.reset)
}

/// One key assignment in a config file, with the line its name stands on and its value
/// as git reads it (`None` for a bare boolean key).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Entry {
    pub(super) line: usize,
    pub(super) key: GitKey,
    pub(super) value: Option<String>,
}

/// What a config file holds: its keys, and the lines this reader could not read.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct Parsed {
    pub(super) entries: Vec<Entry>,
    /// Lines git would reject (git then refuses to run) or that this reader reads
    /// differently from git. The reader skips to the next line and reads on: stopping
    /// there would hide every key after a line only this reader trips over, and the
    /// caller warns about these lines themselves.
    pub(super) bad_lines: Vec<usize>,
}

/// Every key assigned in `text`, parsed as git does (config.c's `git_parse_source`): a
/// carriage return before a newline is dropped, as git's `get_next_char` drops it, so
/// `\\` before CRLF continues a value as it does before LF.
pub(super) fn entries(text: &str) -> Parsed {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let text = text.replace("\r\n", "\n");
    let mut reader = Reader {
        chars: text.chars().peekable(),
        line: 1,
    };
    let mut parsed = Parsed::default();
    let mut section: Option<(String, Option<String>)> = None;
    loop {
        reader.skip_while(char::is_whitespace);
        let Some(c) = reader.next() else {
            return parsed;
        };
        let line = reader.line;
        match c {
            '#' | ';' => reader.skip_line(),
            '[' => match reader.header() {
                Some(header) => section = Some(header),
                None => {
                    // A header git rejects: what follows belongs to no section this
                    // reader knows, so nothing after it is attributed to the old one.
                    parsed.bad_lines.push(line);
                    section = None;
                    reader.skip_rest_of(line);
                }
            },
            c if c.is_ascii_alphabetic() => {
                let mut name = String::from(c.to_ascii_lowercase());
                while let Some(c) = reader
                    .chars
                    .next_if(|c| c.is_ascii_alphanumeric() || *c == '-')
                {
                    name.push(c.to_ascii_lowercase());
                }
                let Some(value) = reader.value() else {
                    parsed.bad_lines.push(line);
                    reader.skip_rest_of(line);
                    continue;
                };
                let Some((section, sub)) = &section else {
                    parsed.bad_lines.push(line);
                    continue;
                };
                parsed.entries.push(Entry {
                    line,
                    key: GitKey {
                        section: section.clone(),
                        sub: sub.clone(),
                        name,
                    },
                    value,
                });
            }
            _ => {
                parsed.bad_lines.push(line);
                reader.skip_rest_of(line);
            }
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

    /// Skips to the start of the line after `line`, unless the reader is already past it.
    fn skip_rest_of(&mut self, line: usize) {
        if self.line == line {
            self.skip_line();
        }
    }

    /// After a key's name: blanks, then the end of the line (a boolean: `Some(None)`), a
    /// comment, or `=` and a value, read as git's `parse_value` reads it: leading blanks
    /// dropped, trailing ones too, `#`/`;` outside quotes start a comment, `\\n`, `\\t`,
    /// `\\b`, `\\"` and `\\\\` are escapes and a backslash-newline continues the value.
    /// `None` when git would reject the line (an unknown escape, an open quote).
    fn value(&mut self) -> Option<Option<String>> {
        self.skip_blanks();
        match self.chars.peek() {
            None => return Some(None),
            Some('\n') => {
                self.next();
                return Some(None);
            }
            Some('#' | ';') => {
                self.skip_line();
                return Some(None);
            }
            Some('=') => {
                self.next();
            }
            Some(_) => return None,
        }
        let mut value = String::new();
        let mut quoted = false;
        let mut spaces = 0;
        loop {
            let c = match self.next() {
                None | Some('\n') => return (!quoted).then_some(Some(value)),
                Some(c) => c,
            };
            if matches!(c, ' ' | '\t' | '\r') && !quoted {
                if !value.is_empty() {
                    spaces += 1;
                }
                continue;
            }
            if !quoted && (c == '#' || c == ';') {
                self.skip_line();
                return Some(Some(value));
            }
            for _ in 0..std::mem::take(&mut spaces) {
                value.push(' ');
            }
            match c {
                '\\' => match self.next()? {
                    '\n' => {}
                    't' => value.push('\t'),
                    'b' => value.push('\u{8}'),
                    'n' => value.push('\n'),
                    c @ ('\\' | '"') => value.push(c),
                    _ => return None,
                },
                '"' => quoted = !quoted,
                c => value.push(c),
            }
        }
    }
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
        entries(text)
            .entries
            .iter()
            .map(|e| e.key.dotted())
            .collect()
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
        assert_eq!(entries("\n\n[core]\n\n fsmonitor = 1\n").entries[0].line, 5);
        // What git rejects is a bad line, and the reader reads on after it.
        let orphan = entries("fsmonitor = x\n");
        assert!(orphan.entries.is_empty());
        assert_eq!(orphan.bad_lines, [1]);
        let bad = entries("[a]\nx = 1\n!bad\n[core]\nfsmonitor = 1\n");
        assert_eq!(bad.bad_lines, [3]);
        assert_eq!(
            bad.entries
                .iter()
                .map(|e| e.key.dotted())
                .collect::<Vec<_>>(),
            ["a.x", "core.fsmonitor"]
        );
    }

    #[test]
    fn crlf_is_read_as_git_reads_it() {
        // git drops a CR before LF, so a backslash before CRLF continues the value: the
        // `!junk` line is part of `a.x`, and `core.fsmonitor` follows.
        let text = "[a]\r\n\tx = 1 \\\r\n!junk\r\n[core]\r\n\tfsmonitor = /p/pwn.sh\r\n";
        let parsed = entries(text);
        assert!(parsed.bad_lines.is_empty(), "{parsed:?}");
        assert_eq!(
            parsed
                .entries
                .iter()
                .map(|e| e.key.dotted())
                .collect::<Vec<_>>(),
            ["a.x", "core.fsmonitor"]
        );
        assert_eq!(parsed.entries[1].line, 5);
        assert_eq!(parsed.entries[1].value.as_deref(), Some("/p/pwn.sh"));
        // A CR alone is not a line end: a backslash before it is an escape git rejects.
        assert_eq!(entries("[a]\nx = 1 \\\r!junk\n").bad_lines, [2]);
    }

    #[test]
    fn values_are_read_as_git_reads_them() {
        let value = |text: &str| entries(text).entries.remove(0).value;
        assert_eq!(value("[s]\nk"), None);
        assert_eq!(value("[s]\nk =   a  b \t; c"), Some("a  b".to_owned()));
        assert_eq!(value("[s]\nk = \" a;# \" x"), Some(" a;#  x".to_owned()));
        assert_eq!(
            value("[s]\nk = a\\\n b\\tc\\\"\\\\"),
            Some("a b\tc\"\\".to_owned())
        );
        assert_eq!(entries("[s]\nk = \"open\n").bad_lines, [2]);
        assert_eq!(entries("[s]\nk = \\q\n").bad_lines, [2]);
    }

    /// Every key `git help config` (git 2.47) documents whose value is a command, a
    /// program, a script, a hook or a helper, or another config file to read.
    #[test]
    fn the_table_holds_every_program_key_git_documents() {
        let key = |dotted: &str| {
            let mut parts: Vec<&str> = dotted.split('.').collect();
            let name = parts.pop().unwrap_or_default().to_ascii_lowercase();
            let section = parts.remove(0).to_ascii_lowercase();
            let sub = (!parts.is_empty()).then(|| parts.join("."));
            GitKey { section, sub, name }
        };
        for dotted in [
            "core.fsmonitor",
            "core.hooksPath",
            "core.sshCommand",
            "core.gitProxy",
            "core.pager",
            "core.editor",
            "core.askPass",
            "core.alternateRefsCommand",
            "sequence.editor",
            "pager.log",
            "diff.external",
            "diff.d.command",
            "diff.d.textconv",
            "difftool.t.cmd",
            "difftool.t.path",
            "mergetool.t.cmd",
            "mergetool.t.path",
            "merge.d.driver",
            "filter.f.clean",
            "filter.f.smudge",
            "filter.f.process",
            "gpg.program",
            "gpg.ssh.program",
            "gpg.ssh.defaultKeyCommand",
            "credential.helper",
            "credential.https://x.helper",
            "alias.st",
            "include.path",
            "includeIf.gitdir:/x/.path",
            "remote.o.uploadpack",
            "remote.o.receivepack",
            "remote.o.vcs",
            "protocol.allow",
            "protocol.ext.allow",
            "submodule.s.update",
            "trailer.t.command",
            "trailer.t.cmd",
            "browser.b.cmd",
            "browser.b.path",
            "man.m.cmd",
            "man.m.path",
            "sendemail.sendmailCmd",
            "sendemail.smtpServer",
            "sendemail.toCmd",
            "sendemail.ccCmd",
            "sendemail.headerCmd",
            "sendemail.work.sendmailCmd",
            "sendemail.work.smtpServer",
            "sendemail.work.toCmd",
            "sendemail.work.ccCmd",
            "sendemail.work.headerCmd",
            "hook.h.command",
            "tar.tgz.command",
            "tar.tar.gz.command",
            "tar.tar.xz.command",
            "imap.tunnel",
            "interactive.diffFilter",
            "gc.recentObjectsHook",
            "instaweb.httpd",
            "instaweb.browser",
            "instaweb.modulePath",
            "guitool.g.cmd",
        ] {
            assert!(
                rule_for(&key(dotted)).is_some(),
                "{dotted} is not in the table"
            );
        }
        assert_eq!(
            rule_for(&key("tar.tgz.command")),
            Some(Reset::To("gzip -cn"))
        );
        assert_eq!(
            rule_for(&key("tar.tar.gz.command")),
            Some(Reset::To("gzip -cn"))
        );
        assert_eq!(rule_for(&key("tar.TGZ.command")), Some(Reset::WarnOnly));
    }

    #[test]
    fn the_rules_cover_drivers_aliases_and_includes() {
        let key = |text: &str| entries(text).entries.remove(0).key;
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
