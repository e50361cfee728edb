//! The session being saved: each change to history goes to its file as it happens.

use std::path::{Path, PathBuf};

use super::format::{FORMAT_VERSION, Limits, Record};
use super::read::Saved;
use super::store::SessionStore;
use crate::agent::{History, Saver};

/// How many ids a new session tries (`ID`, `ID-2`, … ) before it goes on unsaved.
const MAX_ID_TRIES: usize = 16;

/// The file one session is saved to, while saving still works.
#[derive(Debug)]
pub(crate) struct SessionLog {
    store: Box<dyn SessionStore>,
    path: PathBuf,
    limits: Limits,
    /// The `start` record, until the first message is saved with it (a session that
    /// never sends anything leaves no file behind).
    pending_start: Option<Record>,
    /// Bytes in the file so far.
    written: u64,
    /// History length and revision as last saved.
    saved_len: usize,
    saved_revision: u64,
    /// A write failed or a bound was reached: nothing more is saved (one warning said so).
    stopped: bool,
    /// The file ends in a line cut by a crash: the next record starts on a new line, or
    /// it would be glued to the cut one and lost with it.
    torn_tail: bool,
}

impl SessionLog {
    /// A new session `id` in `dir`, started now with `model`.
    pub(crate) fn create(
        store: Box<dyn SessionStore>,
        dir: &Path,
        id: &str,
        root: &Path,
        model: &str,
        num_ctx: u64,
    ) -> SessionLog {
        SessionLog {
            store,
            path: dir.join(format!("{id}.{}", super::place::EXTENSION)),
            limits: Limits::default(),
            pending_start: Some(Record::Start {
                version: FORMAT_VERSION,
                id: id.to_owned(),
                started: super::place::unix_now(),
                root: root.display().to_string(),
                model: model.to_owned(),
                num_ctx,
            }),
            written: 0,
            saved_len: 1,
            saved_revision: 0,
            stopped: false,
            torn_tail: false,
        }
    }

    /// A resumed session: appends to `path`, read back as `saved`, which describes
    /// `history` as restored.
    pub(crate) fn resume(
        store: Box<dyn SessionStore>,
        path: PathBuf,
        saved: &Saved,
        history: &History,
    ) -> SessionLog {
        SessionLog {
            store,
            path,
            limits: Limits::default(),
            pending_start: None,
            written: saved.bytes,
            saved_len: history.len(),
            saved_revision: history.revision(),
            stopped: false,
            torn_tail: saved.torn_tail,
        }
    }

    /// The same log with other bounds (tests reach them with small ones).
    #[cfg(test)]
    pub(crate) fn with_limits(mut self, limits: Limits) -> SessionLog {
        self.limits = limits;
        self
    }

    /// The file's path.
    #[cfg(test)]
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
}

impl Saver for SessionLog {
    /// Saves what changed in `history` since the last call: the new messages, or the
    /// whole history when it changed other than by appending. Returns the warning to show
    /// when saving stops here.
    fn sync(&mut self, history: &History) -> Option<String> {
        if self.stopped {
            return None;
        }
        let messages = history.messages();
        let records: Vec<Record> =
            if history.revision() != self.saved_revision || messages.len() < self.saved_len {
                vec![Record::History {
                    messages: messages.to_vec(),
                    dropped: history.dropped(),
                }]
            } else {
                messages[self.saved_len..]
                    .iter()
                    .map(|m| Record::Message { message: m.clone() })
                    .collect()
            };
        if records.is_empty() {
            return None;
        }
        for record in &records {
            if let Some(warning) = self.write(record) {
                return Some(warning);
            }
        }
        self.saved_len = messages.len();
        self.saved_revision = history.revision();
        None
    }

    /// Saves a switch of model (`/model NAME`), so a resume keeps the new one.
    fn model(&mut self, model: &str) -> Option<String> {
        if self.stopped || self.pending_start.is_some() {
            // Nothing saved yet: the `start` record will name the model.
            if let Some(Record::Start { model: saved, .. }) = &mut self.pending_start {
                model.clone_into(saved);
            }
            return None;
        }
        self.write(&Record::Model {
            model: model.to_owned(),
        })
    }

    /// Saves a claim about the project. Before the first message there is nothing to
    /// check it against later, so nothing is written.
    fn fact(&mut self, fact: &crate::agent::stale::Fact) -> Option<String> {
        if self.stopped || self.pending_start.is_some() {
            return None;
        }
        self.write(&Record::Fact { fact: fact.clone() })
    }
}

impl SessionLog {
    /// Writes one record (the pending `start` first); on a failure stops saving and
    /// returns the one warning.
    fn write(&mut self, record: &Record) -> Option<String> {
        if let Some(start) = self.pending_start.take()
            && let Some(warning) = self.create_file(start)
        {
            return Some(warning);
        }
        self.write_line(record)
    }

    /// Writes the `start` record into a new file. An id is the second and the process
    /// id, which two sessions can share (containers that each run metron as the same
    /// pid, in the same second): then the next free `ID-N` is taken, so no session is
    /// ever appended to another's file.
    fn create_file(&mut self, start: Record) -> Option<String> {
        let Record::Start {
            version,
            id,
            started,
            root,
            model,
            num_ctx,
        } = start
        else {
            return self.write_line(&start);
        };
        let dir = self
            .path
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        let mut why = String::new();
        for n in 1..=MAX_ID_TRIES {
            let candidate = if n == 1 {
                id.clone()
            } else {
                format!("{id}-{n}")
            };
            let record = Record::Start {
                version,
                id: candidate.clone(),
                started,
                root: root.clone(),
                model: model.clone(),
                num_ctx,
            };
            let line = match record.line() {
                Ok(line) => line,
                Err(e) => {
                    why = format!("cannot encode a record ({e})");
                    break;
                }
            };
            if line.len() > self.limits.line {
                why = format!(
                    "a record of {} bytes is over the {} bytes one line may hold",
                    line.len(),
                    self.limits.line
                );
                break;
            }
            if line.len() as u64 > self.limits.file {
                why = format!(
                    "the file has reached its bound of {} bytes",
                    self.limits.file
                );
                break;
            }
            let path = dir.join(format!("{candidate}.{}", super::place::EXTENSION));
            match self.store.create(&path, &line) {
                Ok(()) => {
                    self.path = path;
                    self.written = line.len() as u64;
                    return None;
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    why = format!("{MAX_ID_TRIES} session files named {id} already exist");
                }
                Err(e) => {
                    why = format!("cannot write it ({e})");
                    break;
                }
            }
        }
        self.stopped = true;
        Some(format!(
            "warning: this session is not saved in {}: {why}; it goes on unsaved. Free space or fix the directory's permissions, then start a new session",
            dir.display()
        ))
    }

    fn write_line(&mut self, record: &Record) -> Option<String> {
        let record = record.line().map(|line| {
            if self.torn_tail {
                [b"\n".as_slice(), &line].concat()
            } else {
                line
            }
        });
        let why = match record {
            Err(e) => format!("cannot encode a record ({e})"),
            Ok(line) if line.len() > self.limits.line => format!(
                "a record of {} bytes is over the {} bytes one line may hold",
                line.len(),
                self.limits.line
            ),
            Ok(line) if self.written + line.len() as u64 > self.limits.file => format!(
                "the file has reached its bound of {} bytes",
                self.limits.file
            ),
            Ok(line) => match self.store.append(&self.path, &line) {
                Ok(()) => {
                    self.torn_tail = false;
                    self.written += line.len() as u64;
                    return None;
                }
                Err(e) => format!("cannot write it ({e})"),
            },
        };
        self.stopped = true;
        Some(format!(
            "warning: this session is saved only up to here in {}: {why}; it goes on unsaved. Free space or fix the directory's permissions, then start a new session (the saved part still resumes with `metron -c`)",
            self.path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::ollama::wire::{Message, Role};
    use crate::sessions::read;

    /// The real files, failing every write after the first `allowed`.
    #[derive(Debug)]
    struct FailAfter {
        allowed: usize,
        calls: Arc<AtomicUsize>,
    }

    impl SessionStore for FailAfter {
        fn append(&self, path: &Path, line: &[u8]) -> std::io::Result<()> {
            if self.calls.fetch_add(1, Ordering::SeqCst) >= self.allowed {
                return Err(std::io::Error::other("disk full"));
            }
            super::super::store::Files.append(path, line)
        }

        fn create(&self, path: &Path, line: &[u8]) -> std::io::Result<()> {
            if self.calls.fetch_add(1, Ordering::SeqCst) >= self.allowed {
                return Err(std::io::Error::other("disk full"));
            }
            super::super::store::Files.create(path, line)
        }

        fn remove(&self, path: &Path) -> std::io::Result<()> {
            std::fs::remove_file(path)
        }
    }

    fn log(dir: &Path, store: Box<dyn SessionStore>) -> SessionLog {
        SessionLog::create(store, dir, "20261207-120000-1", dir, "m", 8192)
    }

    #[test]
    fn a_failed_write_warns_once_and_keeps_what_was_saved() {
        let dir = tempfile::tempdir().expect("temp dir");
        let calls = Arc::new(AtomicUsize::new(0));
        // The start record and the first message are written; the second fails.
        let store = FailAfter {
            allowed: 2,
            calls: Arc::clone(&calls),
        };
        let mut log = log(dir.path(), Box::new(store));
        let mut history = History::new("system");
        history.push(Message::new(Role::User, "first"));
        assert_eq!(log.sync(&history), None);
        history.push(Message::new(Role::Assistant, "answer"));
        let warning = log.sync(&history).expect("a warning");
        assert!(warning.contains("disk full"), "{warning}");
        history.push(Message::new(Role::User, "more"));
        assert_eq!(log.sync(&history), None, "one warning, not one per message");
        assert_eq!(
            calls.load(Ordering::SeqCst),
            3,
            "no write after the failure"
        );
        let saved = read::read(log.path(), Limits::default()).expect("readable");
        // The system prompt is metron's own and is not saved until a snapshot holds it.
        assert_eq!(saved.messages.len(), 1, "the first message");
    }

    #[test]
    fn two_sessions_with_one_id_get_two_files() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut history = History::new("system");
        history.push(Message::new(Role::User, "first"));
        let mut one = log(dir.path(), Box::new(super::super::store::Files));
        let mut two = log(dir.path(), Box::new(super::super::store::Files));
        assert_eq!(one.sync(&history), None);
        assert_eq!(two.sync(&history), None);
        assert_ne!(one.path(), two.path());
        assert!(
            two.path().ends_with("20261207-120000-1-2.jsonl"),
            "{:?}",
            two.path()
        );
        for path in [one.path(), two.path()] {
            let saved = read::read(path, Limits::default()).expect("readable");
            assert_eq!(saved.messages.len(), 1, "{path:?}");
            assert_eq!(saved.skipped, 0, "{path:?}");
        }
        assert!(crate::sessions::place::valid_id("20261207-120000-1-2"));
    }

    #[test]
    fn a_record_at_the_line_bound_is_written_and_one_past_it_is_not() {
        let mut history = History::new("s");
        history.push(Message::new(Role::User, "x"));
        let dir = tempfile::tempdir().expect("temp dir");
        let probe = log(dir.path(), Box::new(super::super::store::Files));
        let start = probe
            .pending_start
            .as_ref()
            .map(|s| s.line().map(|l| l.len()));
        let Some(Ok(start)) = start else {
            panic!("the start record encodes")
        };
        let message = Record::Message {
            message: Message::new(Role::User, "x"),
        }
        .line()
        .map(|l| l.len())
        .expect("encodes");
        let longest = start.max(message);
        let limits = |line| Limits {
            line,
            file: u64::MAX,
        };
        let mut at =
            log(dir.path(), Box::new(super::super::store::Files)).with_limits(limits(longest));
        assert_eq!(at.sync(&history), None);
        let dir = tempfile::tempdir().expect("temp dir");
        let mut past =
            log(dir.path(), Box::new(super::super::store::Files)).with_limits(limits(longest - 1));
        let warning = past.sync(&history).expect("over the bound");
        assert!(warning.contains("bytes one line may hold"), "{warning}");
    }

    #[test]
    fn the_file_stops_at_its_bound() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut history = History::new("s");
        history.push(Message::new(Role::User, "x"));
        let mut probe = log(dir.path(), Box::new(super::super::store::Files));
        assert_eq!(probe.sync(&history), None);
        let size = std::fs::metadata(probe.path()).expect("written").len();
        std::fs::remove_file(probe.path()).expect("removed");
        // Exactly the size of the start record and one message: fits.
        let mut exact = log(dir.path(), Box::new(super::super::store::Files)).with_limits(Limits {
            line: usize::MAX,
            file: size,
        });
        assert_eq!(exact.sync(&history), None);
        history.push(Message::new(Role::Assistant, "y"));
        let warning = exact.sync(&history).expect("past the bound");
        assert!(
            warning.contains(&format!("bound of {size} bytes")),
            "{warning}"
        );
        assert_eq!(std::fs::metadata(exact.path()).expect("file").len(), size);
    }
}
