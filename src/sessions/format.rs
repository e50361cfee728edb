//! One line of a session file, and its bounds.
//!
//! Each record says its kind; the first says the format version, so a later metron can
//! read an older file or refuse a newer one by name instead of guessing.

use serde::{Deserialize, Serialize};

use crate::agent::stale::Fact;
use crate::ollama::wire::Message;

/// The format written by this version. A file whose `start` says another is refused.
pub(crate) const FORMAT_VERSION: u32 = 1;

/// The most bytes one record may take (its line, newline included): a history snapshot
/// at the largest context a local model offers (128k tokens, about 512 KiB of text)
/// several times over. A record over it is not written (the session stops saving, with
/// a warning); a line over it is skipped on read.
pub(crate) const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

/// The most bytes a session file may grow to: hundreds of compacted turns. When a record
/// would pass it, the session stops saving, with a warning; a reader reads this much and
/// no more.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024 * 1024;

/// The bounds a log and a reader work within ([`MAX_LINE_BYTES`], [`MAX_FILE_BYTES`]
/// outside tests, which shrink them to reach them).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Limits {
    /// See [`MAX_LINE_BYTES`].
    pub(crate) line: usize,
    /// See [`MAX_FILE_BYTES`].
    pub(crate) file: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            line: MAX_LINE_BYTES,
            file: MAX_FILE_BYTES,
        }
    }
}

/// One line of a session file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Record {
    /// What the session is; written with its first message.
    Start {
        /// [`FORMAT_VERSION`] when written.
        version: u32,
        /// The session's id (its file name).
        id: String,
        /// When it started, in Unix seconds.
        started: u64,
        /// The project root, as shown to the person.
        root: String,
        /// The model it started with.
        model: String,
        /// The context window, so a resume with another one can be noticed.
        num_ctx: u64,
    },
    /// A message appended to history.
    Message {
        /// The message as it is sent.
        message: Message,
    },
    /// History after a change that was not an append (compaction, an undone turn,
    /// `/reset`): the whole of it, as the next request sends it.
    History {
        /// Every message, system prompt first.
        messages: Vec<Message>,
        /// Messages trimmed from the front so far.
        dropped: usize,
    },
    /// A claim about the project from a call (a file written or read, a command that
    /// passed), for the staleness check of a resumed session.
    Fact {
        /// The claim.
        fact: Fact,
    },
    /// The model was switched (`/model NAME`).
    Model {
        /// The new model.
        model: String,
    },
}

impl Record {
    /// The record as one line, newline included.
    pub(crate) fn line(&self) -> Result<Vec<u8>, serde_json::Error> {
        let mut line = serde_json::to_vec(self)?;
        line.push(b'\n');
        Ok(line)
    }
}
