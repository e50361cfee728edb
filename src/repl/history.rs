//! The lines typed at the session prompt, kept between sessions.
//!
//! A shell offers yesterday's commands with the arrow keys; so does metron, from a file in
//! the user's metron directory (`input_history` beside `config.json`), so that moving the
//! config with `$METRON_CONFIG_DIR` moves the history too. Only lines typed at the prompt
//! on a terminal are kept: never the conversation, never an answer to an approval
//! question, never a line that starts with a space (the shell convention for "do not keep
//! this"), and nothing at all when `save_input_history` is off.
//!
//! rustyline is built without its own file history, so the file is read here once at the
//! start and each new entry is appended as it is typed: two sessions at once both keep
//! their lines. The file holds one entry per line, with `\` and line breaks escaped so a
//! pasted multi-line request stays one entry; it is created readable by the user alone,
//! and trimmed to the last [`MAX_ENTRIES`] when a session starts.
//!
//! Nothing here may stop a session: a file that cannot be read or written costs one
//! warning line naming it and saying what to do, and the session goes on without saving.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::frontend::error;
use crate::private_files::{self, PRIVATE_FILE, make_private};

/// The history file's name in the user's metron directory.
pub(crate) const FILE_NAME: &str = "input_history";

/// How many entries are kept (and offered): enough for weeks of prompts, small enough to
/// read at every start without being noticed.
pub(crate) const MAX_ENTRIES: usize = 1000;

/// Whether a failure happened reading the file or writing it, for the warning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// Reading the saved entries at the start.
    Read,
    /// Appending an entry, or trimming the file to [`MAX_ENTRIES`].
    Write,
}

/// The history file of one session, while saving to it still works.
#[derive(Debug)]
pub(crate) struct HistoryFile {
    path: PathBuf,
}

impl HistoryFile {
    /// Reads the history in the user's metron directory `dir`, trimming the file when it
    /// holds more than [`MAX_ENTRIES`]. Returns the file to append to, and the saved
    /// entries, oldest first. A missing file is an empty history; a file that cannot be
    /// read or trimmed is reported in one warning, and this session then saves nothing
    /// (so a broken file costs one line, not one per prompt).
    pub(crate) fn open(dir: &Path) -> (Option<HistoryFile>, Vec<String>) {
        let path = dir.join(FILE_NAME);
        let text = match std::fs::read(&path) {
            Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => String::new(),
            Err(e) => {
                warn(&path, Access::Read, &e);
                return (None, Vec::new());
            }
        };
        let (entries, trimmed) = parse(&text);
        if trimmed && let Err(e) = rewrite(&path, &entries) {
            warn(&path, Access::Write, &e);
            return (None, entries);
        }
        (Some(HistoryFile { path }), entries)
    }

    /// Appends one entry, and hands the file back while saving works. On a failure it
    /// warns and keeps the file: the session saves nothing more, so the warning is the
    /// only one.
    pub(crate) fn append(self, line: &str) -> Option<HistoryFile> {
        match append(&self.path, line) {
            Ok(()) => Some(self),
            Err(e) => {
                warn(&self.path, Access::Write, &e);
                None
            }
        }
    }
}

/// The one warning for a history file metron cannot use, with what to do about it.
fn warn(path: &Path, access: Access, e: &io::Error) {
    let verb = match access {
        Access::Read => "read",
        Access::Write => "write",
    };
    error(format!(
        "warning: cannot {verb} the input history {}: {e}; this session does not save what you type. Make the file (and its directory) yours and writable, or set \"save_input_history\": false in your ~/.metron/config.json",
        path.display()
    ));
}

/// The entries in the file's text, oldest first, at most [`MAX_ENTRIES`] of them, and
/// whether older ones were dropped (so the file should be trimmed). Blank lines, which
/// the editor never keeps, are skipped.
fn parse(text: &str) -> (Vec<String>, bool) {
    let mut entries: Vec<String> = text
        .lines()
        .map(unescape)
        .filter(|entry| !entry.trim().is_empty())
        .collect();
    let excess = entries.len().saturating_sub(MAX_ENTRIES);
    entries.drain(..excess);
    (entries, excess > 0)
}

/// Appends `line` to the file at `path`, creating it (and the directory) private when
/// missing, and making an existing file private again if someone widened it.
fn append(path: &Path, line: &str) -> io::Result<()> {
    let mut file = private_files::open_append(path)?;
    // One write per entry, so entries from two sessions at once do not interleave.
    file.write_all(format!("{}\n", escape(line)).as_bytes())
}

/// Replaces the file at `path` with `entries`: written to a private temporary file beside
/// it, then renamed over it, so a crash never leaves half a history.
fn rewrite(path: &Path, entries: &[String]) -> io::Result<()> {
    let temp = path.with_file_name(format!(".{FILE_NAME}.{}.tmp", std::process::id()));
    let written = (|| {
        let mut file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .mode(PRIVATE_FILE)
            .open(&temp)?;
        make_private(&file)?;
        let mut text = String::new();
        for entry in entries {
            text.push_str(&escape(entry));
            text.push('\n');
        }
        file.write_all(text.as_bytes())?;
        file.sync_all()?;
        std::fs::rename(&temp, path)
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// One entry as one line of the file: `\` becomes `\\`, a line feed `\n`, a carriage
/// return `\r`.
fn escape(entry: &str) -> String {
    let mut line = String::with_capacity(entry.len());
    for c in entry.chars() {
        match c {
            '\\' => line.push_str("\\\\"),
            '\n' => line.push_str("\\n"),
            '\r' => line.push_str("\\r"),
            c => line.push(c),
        }
    }
    line
}

/// The entry a line of the file stands for (the inverse of [`escape`]); a `\` before any
/// other character, or at the end, is kept as it is.
fn unescape(line: &str) -> String {
    let mut entry = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            entry.push(c);
            continue;
        }
        match chars.next() {
            Some('\\') => entry.push('\\'),
            Some('n') => entry.push('\n'),
            Some('r') => entry.push('\r'),
            Some(other) => {
                entry.push('\\');
                entry.push(other);
            }
            None => entry.push('\\'),
        }
    }
    entry
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn an_entry_survives_the_file_whatever_it_holds() {
        for entry in [
            "make Greet return hola",
            "two\nlines",
            "a \\n that was typed",
            "ends with \\",
            "crlf\r\n",
            "ünïcödé",
        ] {
            let line = escape(entry);
            assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            assert_eq!(unescape(&line), entry);
        }
        // A backslash before anything else (a file edited by hand) is kept.
        assert_eq!(unescape(r"C:\temp\x"), r"C:\temp\x");
    }

    #[test]
    fn parsing_keeps_the_newest_entries_and_says_when_it_dropped_some() {
        let (entries, trimmed) = parse("one\n\n   \ntwo\n");
        assert_eq!(entries, ["one", "two"]);
        assert!(!trimmed);
        let text: String = (0..MAX_ENTRIES + 5)
            .map(|i| format!("line {i}\n"))
            .collect();
        let (entries, trimmed) = parse(&text);
        assert!(trimmed);
        assert_eq!(entries.len(), MAX_ENTRIES);
        assert_eq!(entries[0], "line 5");
        assert_eq!(
            entries[MAX_ENTRIES - 1],
            format!("line {}", MAX_ENTRIES + 4)
        );
    }

    #[test]
    fn appending_creates_a_private_file_in_a_private_directory() {
        let home = tempfile::tempdir().expect("tempdir");
        let dir = home.path().join(".metron");
        let (file, entries) = HistoryFile::open(&dir);
        assert!(entries.is_empty());
        let file = file.expect("a missing file is an empty history");
        let file = file.append("first").expect("append");
        file.append("second\nline").expect("append");
        let path = dir.join(FILE_NAME);
        let mode = |p: &Path| std::fs::metadata(p).expect("stat").permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "first\nsecond\\nline\n"
        );
        // A file someone made readable by others is made private again.
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let (file, entries) = HistoryFile::open(&dir);
        assert_eq!(entries, ["first", "second\nline"]);
        file.expect("usable").append("third").expect("append");
        assert_eq!(mode(&path), 0o600);
    }

    #[test]
    fn opening_trims_the_file_to_the_newest_entries() {
        let home = tempfile::tempdir().expect("tempdir");
        let path = home.path().join(FILE_NAME);
        let text: String = (0..MAX_ENTRIES + 10)
            .map(|i| format!("line {i}\n"))
            .collect();
        std::fs::write(&path, text).expect("write");
        let (file, entries) = HistoryFile::open(home.path());
        assert!(file.is_some());
        assert_eq!(entries.len(), MAX_ENTRIES);
        let kept = std::fs::read_to_string(&path).expect("read");
        assert_eq!(kept.lines().count(), MAX_ENTRIES);
        assert!(kept.starts_with("line 10\n"), "{kept:.20}");
        let mode = std::fs::metadata(&path).expect("stat").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        // No temporary file is left beside it.
        let names: Vec<_> = std::fs::read_dir(home.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, [FILE_NAME]);
    }

    #[test]
    fn a_history_that_cannot_be_read_or_written_gives_up_without_failing() {
        let home = tempfile::tempdir().expect("tempdir");
        // A directory where the file should be: neither readable as text nor appendable.
        std::fs::create_dir(home.path().join(FILE_NAME)).expect("mkdir");
        let (file, entries) = HistoryFile::open(home.path());
        assert!(file.is_none());
        assert!(entries.is_empty());
        let blocked = HistoryFile {
            path: home.path().join(FILE_NAME),
        };
        assert!(blocked.append("x").is_none());
    }
}
