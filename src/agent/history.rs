//! The conversation carried between requests, and how it is kept small.
//!
//! After every completed turn: file slices bigger than `compact_threshold_bytes` are
//! replaced by a placeholder (the model saw them while it worked; it does not carry them
//! into the next turn), reasoning text is dropped, and the oldest exchanges are trimmed so
//! at most `max_history_messages` remain after the system prompt. Trimming only ever cuts
//! just before a user message, so an assistant's tool calls are never separated from
//! their results. The system message is never changed, so the server's prompt cache keeps
//! it for the whole session; the model is told of a trim by a note with the person's next
//! line (`Agent::turn`).

use std::collections::HashSet;

pub(crate) mod overflow;

use crate::ollama::wire::{Message, Role, ToolCall};

/// The placeholder a purged file slice is replaced with.
pub const REDACTED_SLICE: &str = "[File slice redacted after turn completion]";

/// A trim keeps `max_history_messages` less this fraction of it (a quarter): see
/// [`History::trim`].
const TRIM_SLACK: usize = 4;

/// The messages of a session. The first is always the system prompt.
#[derive(Debug, Clone)]
pub struct History {
    messages: Vec<Message>,
    system_prompt: String,
    dropped: usize,
    /// The sum of [`Message::carried_bytes`], kept up to date so asking it costs nothing
    /// on every round trip (serialising tool arguments to measure them does).
    carried: usize,
    /// Counts the changes that were not appends (a trim, a purge, a truncation, a
    /// reset), so the session file knows when appending messages no longer describes
    /// history and a whole snapshot must be saved instead.
    revision: u64,
}

/// What one compaction did, for `/history` and the ledger of later work.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Compaction {
    /// File slices replaced by the placeholder.
    pub slices_redacted: usize,
    /// Bytes those slices (and dropped reasoning) held.
    pub bytes_freed: usize,
    /// Messages trimmed from the front.
    pub messages_dropped: usize,
}

impl History {
    /// A history holding only `system_prompt`.
    pub(crate) fn new(system_prompt: &str) -> History {
        let mut history = History {
            messages: vec![Message::new(Role::System, system_prompt)],
            system_prompt: system_prompt.to_owned(),
            dropped: 0,
            carried: 0,
            revision: 0,
        };
        history.recount();
        history
    }

    /// A history read back from a saved session: `messages` as they were last sent,
    /// `dropped` the messages already trimmed.
    ///
    /// The system message is never taken from the file: it is rebuilt from this run's
    /// `system_prompt` (metron's rules and the instructions as they are now). When nothing changed these are the bytes
    /// that were sent before, so the prefix is the same; when AGENTS.md changed or
    /// `--no-instructions` is given, the request says what the banner says; and a session
    /// file, which anything that can write the user's files can edit, can never replace
    /// metron's rules.
    pub(crate) fn restored(system_prompt: &str, messages: Vec<Message>, dropped: usize) -> History {
        let mut history = History::new(system_prompt);
        history
            .messages
            .extend(messages.into_iter().filter(|m| m.role != Role::System));
        history.dropped = dropped;
        history.recount();
        history
    }

    /// See the field: changes that were not appends.
    pub(crate) fn revision(&self) -> u64 {
        self.revision
    }

    /// Every message, system prompt first: exactly what the next request carries.
    pub fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The number of messages, system prompt included.
    pub(crate) fn len(&self) -> usize {
        self.messages.len()
    }

    /// Appends a message.
    pub fn push(&mut self, message: Message) {
        self.carried += message.carried_bytes();
        self.messages.push(message);
    }

    /// Adds metron's `note` to the end of the last message when that is the person's line
    /// or a tool result, and as a message of the person's only when it is neither (it
    /// never is when a request is about to go). The note is for the model, not a turn of
    /// the person's: a message of its own would put two of the person's in a row after
    /// their line, or one of the person's between a tool result and the model's reply,
    /// and chat templates that check the roles alternate (Gemma 3's, Mistral's under
    /// llama-server's `--jinja`) refuse either. The last message is the newest, so the
    /// prefix the server already evaluated stays as it was.
    pub(crate) fn add_note(&mut self, note: &str) {
        match self.messages.last_mut() {
            Some(last) if matches!(last.role, Role::User | Role::Tool) => {
                let old = last.carried_bytes();
                last.content = format!("{}\n\n{note}", last.content);
                self.carried = self.carried - old + last.carried_bytes();
                // The last message changed after it was saved: not an append.
                self.revision += 1;
            }
            _ => self.push(Message::new(Role::User, note)),
        }
    }

    /// Drops every message from `len` on (used to undo a turn that failed before any
    /// tool ran). The system prompt is never removed.
    pub(crate) fn truncate(&mut self, len: usize) {
        if len.max(1) < self.messages.len() {
            self.revision += 1;
        }
        self.messages.truncate(len.max(1));
        self.recount();
    }

    /// Clears the conversation, keeping the system prompt.
    pub(crate) fn reset(&mut self) {
        self.revision += 1;
        self.messages.truncate(1);
        self.dropped = 0;
        self.messages[0].content.clone_from(&self.system_prompt);
        self.recount();
    }

    /// Renames any of `calls` whose id an earlier message already carries. Ids only have
    /// to be unique within a reply on the wire, but a server that restarts its numbering
    /// (or a look-alike that always sends `call_0`) would leave two calls with one id in
    /// history, and servers that match a result to its call by id would pair them wrongly.
    pub(crate) fn make_ids_unique(&self, calls: &mut [ToolCall]) {
        let mut used: HashSet<String> = self
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.id.clone()))
            .collect();
        for call in calls {
            if !used.contains(&call.id) {
                used.insert(call.id.clone());
                continue;
            }
            let fresh = (1..)
                .map(|n| format!("{}_r{n}", call.id))
                .find(|id| !used.contains(id))
                .unwrap_or_default();
            used.insert(fresh.clone());
            call.id = fresh;
        }
    }

    /// Bytes of text carried on every request (the sum over all messages).
    pub fn carried_bytes(&self) -> usize {
        self.carried
    }

    /// Recomputes [`History::carried_bytes`] after messages were removed or changed.
    fn recount(&mut self) {
        self.carried = self.messages.iter().map(Message::carried_bytes).sum();
    }

    /// Messages trimmed from the front since the session (or the last reset) began.
    pub(crate) fn dropped(&self) -> usize {
        self.dropped
    }

    /// Purges big file slices and reasoning, then trims to `max_messages` after the system
    /// prompt. Runs once a turn is over.
    pub fn compact(&mut self, threshold_bytes: usize, max_messages: usize) -> Compaction {
        let mut report = Compaction::default();
        let mut changed = false;
        for message in &mut self.messages[1..] {
            if message.role == Role::Tool
                && message
                    .tool_name
                    .as_deref()
                    .and_then(crate::tools::spec)
                    .is_some_and(|spec| spec.purged_after_turn)
                && message.content.len() > threshold_bytes
                && message.content != REDACTED_SLICE
            {
                report.slices_redacted += 1;
                // A threshold below the placeholder's own size frees nothing (never
                // negative).
                report.bytes_freed += message.content.len().saturating_sub(REDACTED_SLICE.len());
                message.content = REDACTED_SLICE.to_owned();
            }
            if let Some(thinking) = message.thinking.take() {
                report.bytes_freed += thinking.len();
                changed = true;
            }
        }
        report.messages_dropped = self.trim(max_messages);
        if changed || report != Compaction::default() {
            self.revision += 1;
        }
        self.recount();
        report
    }

    /// Drops the oldest exchanges so at most `max_messages` follow the system prompt,
    /// cutting only before a user message. When even the latest exchange is longer than
    /// the limit it is kept whole: cutting inside it would leave the model tool results
    /// without the question that asked for them.
    ///
    /// Once over the limit it trims to three quarters of it ([`TRIM_SLACK`]), not just under
    /// it: every trim changes the start of the conversation, which costs the server's
    /// prompt cache everything after the system message, so a trim every few turns is
    /// cheaper than one every turn.
    fn trim(&mut self, max_messages: usize) -> usize {
        let len = self.messages.len();
        if len - 1 <= max_messages {
            return 0;
        }
        let keep = max_messages - max_messages / TRIM_SLACK;
        let earliest_allowed = len - keep;
        let mut user_starts = (1..len).filter(|&i| self.messages[i].role == Role::User);
        let cut = user_starts
            .clone()
            .find(|&i| i >= earliest_allowed)
            .or_else(|| user_starts.next_back());
        let Some(cut) = cut.filter(|&c| c > 1) else {
            return 0;
        };
        self.messages.drain(1..cut);
        self.dropped = self.dropped.saturating_add(cut - 1);
        cut - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ollama::wire::FunctionCall;

    fn call(id: &str, name: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            function: FunctionCall {
                index: 0,
                name: name.into(),
                arguments: serde_json::json!({}),
            },
        }
    }

    fn exchange(history: &mut History, n: usize, slice: &str) {
        history.push(Message::new(Role::User, format!("q{n}")));
        let c = call(&format!("c{n}"), "view_slice");
        history.push(Message {
            tool_calls: vec![c.clone()],
            thinking: Some("hmm".into()),
            ..Message::new(Role::Assistant, "")
        });
        history.push(Message::tool_result(&c, slice));
        history.push(Message::new(Role::Assistant, format!("a{n}")));
    }

    #[test]
    fn the_kept_byte_count_matches_a_recount_after_every_change() {
        let mut h = History::new("system");
        let recount =
            |h: &History| -> usize { h.messages().iter().map(Message::carried_bytes).sum() };
        assert_eq!(h.carried_bytes(), recount(&h));
        for n in 0..3 {
            exchange(&mut h, n, &"s".repeat(500));
        }
        assert_eq!(h.carried_bytes(), recount(&h));
        let done = h.compact(100, 4);
        assert!(
            done.slices_redacted > 0 && done.messages_dropped > 0,
            "{done:?}"
        );
        assert_eq!(h.carried_bytes(), recount(&h));
        h.truncate(2);
        assert_eq!(h.carried_bytes(), recount(&h));
        h.reset();
        assert_eq!(h.carried_bytes(), "system".len());
    }

    #[test]
    fn big_slices_are_redacted_small_ones_and_other_tools_kept() {
        let mut h = History::new("sys");
        exchange(&mut h, 1, &"    1 | x\n".repeat(100));
        exchange(&mut h, 2, "    1 | y");
        let s = call("s", "search_text");
        h.push(Message::tool_result(&s, "a.go:1: x | y ".repeat(100)));
        let report = h.compact(400, 60);
        assert_eq!(report.slices_redacted, 1);
        assert_eq!(h.messages()[3].content, REDACTED_SLICE);
        assert_eq!(h.messages()[7].content, "    1 | y");
        assert!(h.messages()[9].content.len() > 400);
        assert!(h.messages().iter().all(|m| m.thinking.is_none()));
    }

    #[test]
    fn trimming_cuts_before_a_user_message_and_keeps_the_system_message() {
        let mut h = History::new("sys");
        for n in 0..5 {
            exchange(&mut h, n, "x");
        }
        // 20 messages; keep at most 6: the cut lands on the user message of exchange 4
        // (the last 4 messages), because exchange 3 starts 8 from the end.
        let report = h.compact(400, 6);
        assert_eq!(report.messages_dropped, 16);
        assert_eq!(h.len(), 5);
        assert_eq!(h.messages()[1].content, "q4");
        assert_eq!(
            h.messages()[0].content,
            "sys",
            "the system message is untouched"
        );
        for (i, m) in h.messages().iter().enumerate() {
            if m.role == Role::Tool {
                assert!(!h.messages()[i - 1].tool_calls.is_empty());
            }
        }
    }

    #[test]
    fn a_threshold_below_the_placeholder_size_neither_panics_nor_recounts() {
        // A slice longer than the threshold but shorter than the placeholder: freeing it
        // must not underflow, and a placeholder left by an earlier compaction is not a
        // slice to redact (and count) again.
        let mut h = History::new("sys");
        exchange(&mut h, 1, "    1 | x");
        let first = h.compact(4, 60);
        assert_eq!(first.slices_redacted, 1);
        assert_eq!(first.bytes_freed, 3, "only the reasoning was freed");
        let again = h.compact(4, 60);
        assert_eq!(again, Compaction::default());
    }

    #[test]
    fn a_slice_exactly_at_the_threshold_is_kept() {
        let mut h = History::new("sys");
        let slice = "    1 | x\n".repeat(40);
        exchange(&mut h, 1, &slice);
        assert_eq!(h.compact(slice.len(), 60).slices_redacted, 0);
        assert_eq!(h.messages()[3].content, slice);
        assert_eq!(h.compact(slice.len() - 1, 60).slices_redacted, 1);
    }

    #[test]
    fn an_exchange_longer_than_the_limit_is_kept_whole() {
        let mut h = History::new("sys");
        exchange(&mut h, 0, "x");
        exchange(&mut h, 1, "x");
        h.compact(400, 2);
        assert_eq!(h.len(), 5);
        assert_eq!(h.messages()[1].content, "q1");
        h.reset();
        assert_eq!(h.len(), 1);
        assert_eq!(h.messages()[0].content, "sys");
    }

    #[test]
    fn a_note_goes_at_the_end_of_the_last_message_so_roles_still_alternate() {
        let mut h = History::new("sys");
        h.push(Message::new(Role::User, "now"));
        let revision = h.revision();
        h.add_note("(note 1)");
        assert_eq!(h.len(), 2, "no message of its own");
        assert_eq!(h.messages()[1].content, "now\n\n(note 1)");
        assert!(h.revision() > revision, "a change, not an append");
        let c = call("c", "search_text");
        h.push(Message {
            tool_calls: vec![c.clone()],
            ..Message::new(Role::Assistant, "")
        });
        h.push(Message::tool_result(&c, "found"));
        h.add_note("(note 2)");
        assert_eq!(h.len(), 4);
        assert_eq!(h.messages()[3].role, Role::Tool);
        assert_eq!(h.messages()[3].content, "found\n\n(note 2)");
        // After the model's own message (never the case before a request) it is the
        // person's turn anyway.
        h.push(Message::new(Role::Assistant, "done"));
        h.add_note("(note 3)");
        assert_eq!(h.len(), 6);
        assert_eq!(h.messages()[5].role, Role::User);
        assert_eq!(h.messages()[0].content, "sys");
        let recount: usize = h.messages().iter().map(Message::carried_bytes).sum();
        assert_eq!(h.carried_bytes(), recount);
    }
}
