//! What tool calls actually did, written down as it happens.
//!
//! A tool's text result is what the model reads; the journal is what the person (and the
//! ledger) can check: how each write or execution was approved and how long the person
//! took, and the effects themselves (files with their content hashes before and after, a
//! command's exit status and duration, a patch refused because its targets changed). The
//! agent drains the journal after every call, so each entry belongs to exactly one call.
//! Nothing here is ever inferred from the model's words: an entry exists only when the
//! effect happened.

use std::time::Duration;

use crate::project::FileMode;
use crate::quoting::quoted;

/// Who or what approved (or refused) a write or an execution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalSource {
    /// The person answered a question.
    Person,
    /// `--yes` on the command line.
    YesFlag,
    /// `auto_approve_patches` in the user's trusted config.
    TrustedConfig,
    /// A standing approval the person granted earlier in this session (`a`).
    Standing,
    /// Nobody could be asked (one-shot mode without `--yes`, or input not a terminal).
    Nobody,
}

impl ApprovalSource {
    /// A short name for displays and JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalSource::Person => "asked",
            ApprovalSource::YesFlag => "--yes",
            ApprovalSource::TrustedConfig => "auto_approve_patches",
            ApprovalSource::Standing => "standing approval",
            ApprovalSource::Nobody => "nobody to ask",
        }
    }
}

/// The answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ApprovalOutcome {
    /// Yes, this once.
    Yes,
    /// Yes, and a standing approval was granted for the rest of the session.
    YesForSession,
    /// No (including a bare Return, end of input, or Ctrl-C at the question).
    No,
    /// Nobody could answer, so it was refused.
    Unanswerable,
}

impl ApprovalOutcome {
    /// A short name for displays and JSON.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ApprovalOutcome::Yes => "yes",
            ApprovalOutcome::YesForSession => "yes, for the session",
            ApprovalOutcome::No => "no",
            ApprovalOutcome::Unanswerable => "refused (nobody to ask)",
        }
    }
}

/// One approval decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApprovalRecord {
    /// Who decided.
    pub(crate) source: ApprovalSource,
    /// What they decided.
    pub(crate) outcome: ApprovalOutcome,
    /// How long the person took (zero when nobody was asked).
    pub(crate) waited: Duration,
    /// The scope of a standing approval that was used or granted.
    pub(crate) scope: Option<String>,
    /// The reason the person gave for a no, if any.
    pub(crate) reason: Option<String>,
    /// The warnings the question carried (the repository chose the program), so the
    /// ledger shows what the person was told.
    pub(crate) warnings: Vec<String>,
}

/// One file a patch wrote, by content hash (git's blob id, so `git hash-object FILE`
/// checks it). `None` means the file did not exist (before) or was deleted (after).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChange {
    /// The path, relative to the project root.
    pub path: String,
    /// The content hash before the write.
    pub before: Option<BlobId>,
    /// The content hash after the write.
    pub after: Option<BlobId>,
    /// The file's git mode before the write (`None`: it did not exist), so a change of
    /// mode is on record even when the content did not change.
    pub mode_before: Option<FileMode>,
    /// The file's git mode after the write (`None`: it was deleted).
    pub mode_after: Option<FileMode>,
    /// Lines added, as the applied patch counts them.
    pub added: usize,
    /// Lines removed.
    pub removed: usize,
}

/// The files a command created, modified or deleted in the project, as seen by comparing
/// a stamp of the tree (within the walker's ignore rules) taken before it with one taken
/// after. Paths are relative to the root.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct TreeChanges {
    /// Files that did not exist before.
    pub created: Vec<String>,
    /// Files whose size, modification time, inode or mode changed.
    pub modified: Vec<String>,
    /// Files that no longer exist.
    pub deleted: Vec<String>,
    /// The tree was too large to stamp whole, so the lists may be incomplete.
    pub untracked: bool,
    /// Why the lists may not be the whole story (the limit, unreadable entries,
    /// directories not looked in), in words.
    pub caveats: Vec<String>,
}

impl TreeChanges {
    /// Nothing was seen to change (and the whole tree was seen).
    pub fn is_empty(&self) -> bool {
        self.created.is_empty() && self.modified.is_empty() && self.deleted.is_empty()
    }

    /// `api/gen.go (new), b.go; deleted: old.go`, at most `max` names in all, then
    /// `and N more`; `None` when nothing changed and the whole tree was seen.
    pub(crate) fn brief(&self, max: usize) -> Option<String> {
        if self.is_empty() && self.caveats.is_empty() {
            return None;
        }
        let written = self
            .created
            .iter()
            .map(|p| format!("{} (new)", quoted(p)))
            .chain(self.modified.iter().map(|p| quoted(p).into_owned()));
        let deleted = self
            .deleted
            .iter()
            .map(|p| format!("{} (deleted)", quoted(p)));
        let all: Vec<String> = written.chain(deleted).collect();
        let mut text = all.iter().take(max).cloned().collect::<Vec<_>>().join(", ");
        if all.len() > max {
            text.push_str(&format!(" and {} more", all.len() - max));
        }
        for caveat in &self.caveats {
            if !text.is_empty() {
                text.push_str("; ");
            }
            text.push_str(caveat);
        }
        Some(text)
    }
}

/// How a command ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// It exited with this status.
    Code(i32),
    /// A signal killed it.
    Signal(i32),
    /// It ran past its timeout and was killed.
    TimedOut(Duration),
    /// The person pressed Ctrl-C and it was killed.
    Interrupted,
    /// The operating system reported neither a code nor a signal.
    Unknown,
}

impl Exit {
    /// It exited 0.
    pub(crate) fn succeeded(self) -> bool {
        self == Exit::Code(0)
    }

    /// The exit code, when it exited.
    pub(crate) fn code(self) -> Option<i32> {
        match self {
            Exit::Code(code) => Some(code),
            _ => None,
        }
    }

    /// The short form for outcome and evidence lines: `exit 1`, `killed by signal 9`.
    pub(crate) fn short(self) -> String {
        match self {
            Exit::Code(code) => format!("exit {code}"),
            other => other.to_string(),
        }
    }
}

/// The status line the model reads and the ledger keeps: `exit status 1`, `killed by
/// signal 9`, `timed out after 120 s; killed`.
impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(code) => write!(f, "exit status {code}"),
            Exit::Signal(signal) => write!(f, "killed by signal {signal}"),
            Exit::TimedOut(after) if after.subsec_nanos() == 0 => {
                write!(f, "timed out after {} s; killed", after.as_secs())
            }
            Exit::TimedOut(after) => {
                let seconds = (after.as_secs_f64() * 1000.0).round() / 1000.0;
                write!(f, "timed out after {seconds} s; killed")
            }
            Exit::Interrupted => f.write_str("interrupted by the user (Ctrl-C); killed"),
            Exit::Unknown => f.write_str("exit status unknown"),
        }
    }
}

/// Something that happened to the world (or was stopped from happening).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Effect {
    /// A patch was written: every file, all or nothing.
    Wrote {
        /// The files.
        files: Vec<FileChange>,
    },
    /// A command ran to an exit status (or was killed).
    Ran {
        /// The program (absolute path) and its arguments.
        argv: Vec<String>,
        /// How it ended.
        exit: Exit,
        /// Wall-clock time.
        duration: Duration,
        /// What the sandbox let it reach; `None` when it ran unconfined
        /// (`command_sandbox: "off"`).
        sandbox: Option<crate::sandbox::Summary>,
        /// What it changed in the project, from a stamp of the tree before and after.
        changed: TreeChanges,
    },
    /// A patch was not written because a target changed after the model read it, or
    /// while the question was open.
    Conflict {
        /// The files that changed.
        files: Vec<String>,
    },
}

/// Everything recorded since the journal was last drained.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Journal {
    /// Approval decisions, in order.
    pub approvals: Vec<ApprovalRecord>,
    /// Effects, in order.
    pub effects: Vec<Effect>,
}

/// A file's content as metron records it: git's blob id of its bytes, so evidence can be
/// checked with `git hash-object`. Typed, so a path or a message can never stand in for
/// one; in JSON it is the hex string.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct BlobId(String);

impl BlobId {
    /// The hex id (or the fail-closed marker, see [`content_hash`]).
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The first ten characters, as `/ledger` shows it.
    pub(crate) fn short(&self) -> &str {
        self.0.get(..10).unwrap_or(&self.0)
    }
}

impl std::fmt::Display for BlobId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The content hash metron records for a file: git's blob id of its bytes.
///
/// Hashing bytes in memory does not fail in practice, but if libgit2 ever reports an
/// error the answer fails closed: a marker unique to this call (`unhashed:N`), which
/// equals no blob id and no other marker. A precondition that compares it with anything
/// is not met, so two files that could not be hashed are never taken for the same content.
pub fn content_hash(bytes: &[u8]) -> BlobId {
    static UNHASHED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    BlobId(
        git2::Oid::hash_object(git2::ObjectType::Blob, bytes)
            .map(|oid| oid.to_string())
            .unwrap_or_else(|_| {
                let serial = UNHASHED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                format!("unhashed:{serial}")
            }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_commands_changes_are_named_with_new_and_deleted_marked_then_clipped() {
        let changes = TreeChanges {
            created: vec!["b.go".to_owned()],
            modified: vec!["api/gen.go".to_owned()],
            deleted: vec!["old.go".to_owned()],
            untracked: false,
            caveats: Vec::new(),
        };
        assert_eq!(
            changes.brief(10).as_deref(),
            Some("b.go (new), api/gen.go, old.go (deleted)")
        );
        assert_eq!(changes.brief(1).as_deref(), Some("b.go (new) and 2 more"));
        assert_eq!(TreeChanges::default().brief(10), None);
        let caveat = TreeChanges {
            caveats: vec!["2 entries could not be read".to_owned()],
            ..TreeChanges::default()
        };
        assert_eq!(
            caveat.brief(10).as_deref(),
            Some("2 entries could not be read")
        );
    }

    #[test]
    fn content_hash_is_gits_blob_id() {
        // `printf 'hello\n' | git hash-object --stdin`
        assert_eq!(
            content_hash(b"hello\n").as_str(),
            "ce013625030ba8dba906f756967f9e9ca394464a"
        );
    }
}
