//! Reading a session back, and listing a project's sessions.
//!
//! A reader never loses the rest of a file to one bad line: a line cut by a crash, or one
//! that does not parse, or one over the line bound, is skipped and counted, and the
//! resume says how many.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::format::{FORMAT_VERSION, Limits, Record};
use crate::ollama::wire::{Message, Role};

/// A session as its file describes it.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Saved {
    /// Its id.
    pub(crate) id: String,
    /// When it started (Unix seconds; 0 when the `start` record was lost).
    pub(crate) started: u64,
    /// The model it last used.
    pub(crate) model: String,
    /// History as the next request would send it.
    pub(crate) messages: Vec<Message>,
    /// Messages trimmed from the front so far.
    pub(crate) dropped: usize,
    /// Requests the person made (user messages saved).
    pub(crate) turns: usize,
    /// The first request, for the list.
    pub(crate) first_request: Option<String>,
    /// Lines skipped: cut by a crash, unreadable, or over the line bound.
    pub(crate) skipped: usize,
    /// Bytes read (the whole file unless it passed the file bound).
    pub(crate) bytes: u64,
    /// What the session's calls claimed about the files.
    pub(crate) facts: Vec<crate::agent::stale::Fact>,
    /// The bytes read end inside a line (a crash cut it): an append must start a new one.
    pub(crate) torn_tail: bool,
}

/// Reads the session file at `path`, at most `limits.file` bytes of it. Errors (the file
/// cannot be opened, or says a format version this metron does not know) end with what
/// to do.
pub(crate) fn read(path: &Path, limits: Limits) -> Result<Saved, String> {
    let file = std::fs::File::open(path)
        .map_err(|e| format!("cannot read the session {}: {e}; check its permissions, or list the sessions with `metron --resume`", path.display()))?;
    let mut bytes = Vec::new();
    file.take(limits.file)
        .read_to_end(&mut bytes)
        .map_err(|e| {
            format!(
                "cannot read the session {}: {e}; check the file, or start a new session",
                path.display()
            )
        })?;
    let mut saved = Saved {
        id: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        bytes: bytes.len() as u64,
        ..Saved::default()
    };
    let mut lines = bytes.split(|&b| b == b'\n').peekable();
    while let Some(line) = lines.next() {
        // The piece after the last newline: empty for a file that ends cleanly, a line
        // cut short by a crash otherwise.
        if lines.peek().is_none() {
            if !line.is_empty() {
                saved.skipped += 1;
                saved.torn_tail = true;
            }
            break;
        }
        if line.len() + 1 > limits.line {
            saved.skipped += 1;
            continue;
        }
        let Ok(record) = serde_json::from_slice::<Record>(line) else {
            saved.skipped += 1;
            continue;
        };
        apply(&mut saved, record, path)?;
    }
    Ok(saved)
}

fn apply(saved: &mut Saved, record: Record, path: &Path) -> Result<(), String> {
    match record {
        Record::Start {
            version,
            started,
            model,
            ..
        } => {
            if version != FORMAT_VERSION {
                return Err(format!(
                    "the session {} is in format version {version}, and this metron reads version {FORMAT_VERSION}; resume it with the metron that wrote it, or start a new session",
                    path.display()
                ));
            }
            saved.started = started;
            saved.model = model;
        }
        Record::Message { message } => {
            if message.role == Role::User {
                saved.turns += 1;
                if saved.first_request.is_none() {
                    saved.first_request = Some(message.content.clone());
                }
            }
            saved.messages.push(message);
        }
        Record::History { messages, dropped } => {
            saved.messages = messages;
            saved.dropped = dropped;
        }
        Record::Model { model } => saved.model = model,
        Record::Fact { fact } => saved.facts.push(fact),
    }
    Ok(())
}

/// One line of the `--resume` list.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Listed {
    /// The session as far as its summary was read.
    pub(crate) saved: Saved,
    /// When it was last written (Unix seconds).
    pub(crate) modified: u64,
    /// Its file.
    pub(crate) path: PathBuf,
    /// Only the first [`SUMMARY_BYTES`] were read: the counts are at least what is shown.
    pub(crate) partial: bool,
}

/// The most sessions the list shows: more than a person scrolls through; the rest are
/// counted.
pub(crate) const LIST_LIMIT: usize = 50;

/// The most bytes read of each file to list it: the start and the first requests are near
/// the top, and listing must not read gigabytes.
pub(crate) const SUMMARY_BYTES: u64 = 256 * 1024;

/// This project's sessions in `dir`, last written first (newest id first on a tie), and
/// how many more there were beyond `limit`. A missing directory is an empty list; a file
/// that cannot be read is left out of it.
pub(crate) fn list(dir: &Path, limit: usize) -> (Vec<Listed>, usize) {
    let found = files(dir);
    let more = found.len().saturating_sub(limit);
    let listed = found
        .into_iter()
        .take(limit)
        .filter_map(|file| summary(&file))
        .collect();
    (listed, more)
}

/// A session file found in a directory, not read yet.
pub(crate) struct SessionFile {
    /// When it was last written (Unix nanoseconds).
    modified: u128,
    size: u64,
    pub(crate) path: PathBuf,
}

impl SessionFile {
    /// When it was last written, in Unix seconds.
    pub(crate) fn modified_secs(&self) -> u64 {
        u64::try_from(self.modified / 1_000_000_000).unwrap_or(u64::MAX)
    }
}

/// The first [`SUMMARY_BYTES`] of `file`, read for a list or a prune line: `None` when
/// it cannot be read.
pub(crate) fn summary(file: &SessionFile) -> Option<Listed> {
    let limits = Limits {
        file: SUMMARY_BYTES,
        ..Limits::default()
    };
    let saved = read(&file.path, limits).ok()?;
    Some(Listed {
        saved,
        modified: file.modified_secs(),
        path: file.path.clone(),
        partial: file.size > SUMMARY_BYTES,
    })
}

/// The session files in `dir`, newest first, without reading them.
pub(crate) fn files(dir: &Path) -> Vec<SessionFile> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    // Only files metron named (`ID.jsonl`, an id of digits and dashes) are sessions:
    // anything else in the directory is never listed, resumed, appended to or pruned.
    // Sorted by the full-precision time of the last write, so a session written later in
    // the same second is still the newer one.
    let mut found: Vec<SessionFile> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == super::place::EXTENSION))
        .filter(|p| {
            p.file_stem()
                .and_then(|stem| stem.to_str())
                .is_some_and(super::place::valid_id)
        })
        .filter_map(|p| {
            let metadata = std::fs::symlink_metadata(&p).ok()?;
            if !metadata.is_file() {
                return None;
            }
            let nanos = metadata
                .modified()
                .ok()?
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            Some(SessionFile {
                modified: nanos,
                size: metadata.len(),
                path: p,
            })
        })
        .collect();
    found.sort_by(|a, b| {
        b.modified
            .cmp(&a.modified)
            .then_with(|| b.path.cmp(&a.path))
    });
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sessions::format::Record;

    fn line(record: &Record) -> Vec<u8> {
        record.line().expect("encodes")
    }

    fn start() -> Record {
        Record::Start {
            version: FORMAT_VERSION,
            id: "1".into(),
            started: 5,
            root: "/p".into(),
            model: "m".into(),
            num_ctx: 8192,
        }
    }

    fn message(role: Role, text: &str) -> Record {
        Record::Message {
            message: Message::new(role, text),
        }
    }

    #[test]
    fn a_line_cut_by_a_crash_is_skipped_and_the_rest_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("1.jsonl");
        let mut bytes = line(&start());
        bytes.extend(line(&message(Role::System, "s")));
        bytes.extend(line(&message(Role::User, "first")));
        bytes.extend(b"{\"kind\":\"message\",\"mess\n");
        bytes.extend(line(&message(Role::Assistant, "answer")));
        let cut = line(&message(Role::User, "second"));
        bytes.extend(&cut[..cut.len() / 2]);
        std::fs::write(&path, bytes).expect("written");
        let saved = read(&path, Limits::default()).expect("readable");
        assert_eq!(saved.skipped, 2);
        assert_eq!(saved.turns, 1);
        assert_eq!(saved.messages.len(), 3);
        assert_eq!(saved.first_request.as_deref(), Some("first"));
        assert_eq!(saved.model, "m");
    }

    #[test]
    fn a_snapshot_replaces_what_came_before() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("1.jsonl");
        let mut bytes = line(&start());
        bytes.extend(line(&message(Role::User, "a")));
        bytes.extend(line(&Record::History {
            messages: vec![Message::new(Role::System, "s2")],
            dropped: 3,
        }));
        bytes.extend(line(&message(Role::User, "b")));
        bytes.extend(line(&Record::Model { model: "n".into() }));
        std::fs::write(&path, bytes).expect("written");
        let saved = read(&path, Limits::default()).expect("readable");
        let texts: Vec<&str> = saved.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["s2", "b"]);
        assert_eq!((saved.dropped, saved.model.as_str()), (3, "n"));
    }

    #[test]
    fn lines_over_the_bound_are_skipped_and_the_file_read_to_its_bound() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("1.jsonl");
        let first = line(&start());
        let long = line(&message(Role::User, &"x".repeat(100)));
        let short = line(&message(Role::User, "y"));
        let mut bytes = first.clone();
        bytes.extend(&long);
        bytes.extend(&short);
        std::fs::write(&path, &bytes).expect("written");
        let limits = Limits {
            line: first.len().max(short.len()),
            file: u64::MAX,
        };
        assert!(long.len() > limits.line);
        let saved = read(&path, limits).expect("readable");
        assert_eq!((saved.skipped, saved.turns), (1, 1));
        // A file bound that ends inside the third line: that line counts as cut.
        let limits = Limits {
            line: usize::MAX,
            file: (first.len() + long.len() + 1) as u64,
        };
        let saved = read(&path, limits).expect("readable");
        assert_eq!(
            (saved.skipped, saved.turns, saved.bytes),
            (1, 1, limits.file)
        );
    }

    #[test]
    fn another_format_version_is_refused_by_name() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("1.jsonl");
        let mut bytes = Vec::new();
        bytes.extend(
            br#"{"kind":"start","version":99,"id":"1","started":1,"root":"/","model":"m","num_ctx":1}"#,
        );
        bytes.push(b'\n');
        std::fs::write(&path, bytes).expect("written");
        let error = read(&path, Limits::default()).expect_err("refused");
        assert!(error.contains("format version 99"), "{error}");
    }
}
