//! Assembling a reply from Ollama's NDJSON stream.
//!
//! Kept apart from the HTTP code so it can be tested and benchmarked on bytes. The rules
//! follow what every Ollama version sends: lines may be split across network reads; text,
//! reasoning and tool calls accumulate from every line *including* the final `done` line
//! (some servers attach all tool calls there); calls are appended in arrival order, never
//! merged by `index` (which older servers omit and buggy ones repeat); a line with an
//! `error` key, or with neither `message` nor `done`, is an error; and a stream that ends
//! without `done` is incomplete.

use std::collections::HashSet;
use std::time::Duration;

use super::OllamaError;
use super::error::quoted_start;
use super::wire::{Chunk, FunctionCall, ToolCall, normalize_arguments};

/// A complete model reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// The reply text.
    pub content: String,
    /// The model's reasoning, when it sent any.
    pub thinking: String,
    /// The tools it asked for, in order, each with an id.
    pub tool_calls: Vec<ToolCall>,
    /// Prompt tokens evaluated (`prompt_eval_count`), 0 when the server omitted it.
    pub prompt_tokens: u64,
    /// Tokens generated (`eval_count`), 0 when the server omitted it.
    pub generated_tokens: u64,
    /// The server sent no token counts at all (an OpenAI-compatible server without a
    /// `usage` chunk), so the zeros above mean "unknown", not "empty".
    pub usage_missing: bool,
    /// Of `prompt_tokens`, those served from Ollama's prompt cache
    /// (`prompt_eval_cached_count`), when the server says (recent versions).
    pub cached_tokens: Option<u64>,
    /// Why generation stopped (`stop`, `length`), when the server said.
    pub done_reason: Option<String>,
    /// From sending the request to the first text, reasoning or tool call.
    pub first_token: Option<Duration>,
    /// From sending the request to the end of the reply.
    pub elapsed: Duration,
}

/// A piece of the reply as it arrives, for printing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delta<'a> {
    /// Reply text.
    Content(&'a str),
    /// Reasoning text.
    Thinking(&'a str),
    /// The first tool call arrived (so the model is no longer silent).
    ToolCalls,
}

/// Turns NDJSON bytes into a [`Reply`].
#[derive(Debug)]
pub(crate) struct StreamParser {
    buffer: Vec<u8>,
    reply: Reply,
    done: bool,
    seen_ids: HashSet<String>,
    id_prefix: String,
    /// Leading bytes of `buffer` already searched for a newline (none there).
    scanned: usize,
    max_line: usize,
    max_reply: usize,
    reply_bytes: usize,
}

/// The longest NDJSON line accepted. A tool call carrying a whole file is one line, so
/// this is far above anything real (Ollama's own Go client allows 8 MB), yet it stops a
/// server that never sends a newline from growing the buffer without end.
pub(crate) const MAX_LINE_BYTES: usize = 64 << 20;

/// The most tool calls one reply may ask for. Models ask for a handful at a time; a
/// server that sends thousands (or one empty piece after another) is broken, and each
/// call would be run, answered and kept in history.
pub(crate) const MAX_CALLS_PER_REPLY: usize = 128;

/// The error for a reply past [`MAX_CALLS_PER_REPLY`].
pub(crate) fn too_many_calls() -> OllamaError {
    OllamaError::Protocol(format!(
        "the reply asked for more than {MAX_CALLS_PER_REPLY} tool calls, which no model needs in one step, so metron stopped reading; try again, and check the server's log if it happens again"
    ))
}

impl StreamParser {
    /// A parser for one reply. `id_prefix` makes the ids it invents for calls without one
    /// unique within the session.
    pub(crate) fn new(id_prefix: String) -> StreamParser {
        StreamParser {
            buffer: Vec::new(),
            reply: Reply::default(),
            done: false,
            seen_ids: HashSet::new(),
            id_prefix,
            scanned: 0,
            max_line: MAX_LINE_BYTES,
            max_reply: usize::MAX,
            reply_bytes: 0,
        }
    }

    /// Caps one NDJSON line at `max_line` bytes and the reply's text, reasoning and call
    /// arguments together at `max_reply` bytes; past either the stream is a protocol error
    /// instead of memory growing for as long as a broken server keeps sending.
    pub(crate) fn with_limits(mut self, max_line: usize, max_reply: usize) -> StreamParser {
        self.max_line = max_line;
        self.max_reply = max_reply;
        self
    }

    /// Feeds bytes as they arrive; `on_delta` sees each piece of text. Returns true when
    /// the `done` line has been read (anything after it is ignored).
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, OllamaError> {
        if self.done {
            return Ok(true);
        }
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        // Only the bytes that arrived since the last search can hold a newline: searching
        // the whole pending line again on every read is quadratic in its length.
        let mut from = self.scanned;
        while let Some(offset) = memchr::memchr(b'\n', &self.buffer[from..]) {
            let end = from + offset;
            let line = std::mem::take(&mut self.buffer);
            let result = self.line(&line[start..end], on_delta);
            self.buffer = line;
            result?;
            start = end + 1;
            from = start;
            if self.done {
                break;
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if !self.done && self.buffer.len() > self.max_line {
            return Err(self.line_too_long());
        }
        Ok(self.done)
    }

    /// Ends the stream: a last line without a newline is still read, and a stream without
    /// `done` is an error.
    pub(crate) fn finish(
        mut self,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Reply, OllamaError> {
        if !self.done && !self.buffer.is_empty() {
            let rest = std::mem::take(&mut self.buffer);
            self.line(&rest, on_delta)?;
        }
        if self.done {
            Ok(self.reply)
        } else {
            Err(OllamaError::Truncated)
        }
    }

    /// Marks when the first token arrived, measured by the caller.
    pub(crate) fn note_first_token(&mut self, at: Duration) {
        self.reply.first_token.get_or_insert(at);
    }

    /// How much the reply holds so far (bytes of text, reasoning and calls, plus the
    /// calls): it grows with every chunk that adds something and with nothing else, so
    /// the watchdog restarts on progress, never on a blank line or an empty chunk.
    pub(crate) fn progress(&self) -> usize {
        self.reply_bytes.saturating_add(self.reply.tool_calls.len())
    }

    /// True once any text, reasoning or call has arrived.
    pub(crate) fn has_output(&self) -> bool {
        !self.reply.content.is_empty()
            || !self.reply.thinking.is_empty()
            || !self.reply.tool_calls.is_empty()
    }

    fn line_too_long(&self) -> OllamaError {
        OllamaError::Protocol(format!(
            "a single line of the reply passed {} bytes without a newline, which is not Ollama's NDJSON, so metron stopped reading",
            self.max_line
        ))
    }

    fn line(
        &mut self,
        line: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), OllamaError> {
        if line.len() > self.max_line {
            return Err(self.line_too_long());
        }
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let chunk: Chunk = serde_json::from_slice(line).map_err(|e| {
            OllamaError::Protocol(format!(
                "{e} in line {}",
                quoted_start(&String::from_utf8_lossy(line), 200)
            ))
        })?;
        if let Some(error) = &chunk.error {
            let text = error
                .as_str()
                .map_or_else(|| error.to_string(), str::to_owned);
            return Err(OllamaError::MidStream(text));
        }
        if chunk.message.is_none() && chunk.done.is_none() {
            // A mis-keyed error (`{"error parsing tool call": ...}`) or something else
            // that is not a chat chunk: report the whole line.
            return Err(OllamaError::MidStream(quoted_start(
                &String::from_utf8_lossy(line),
                300,
            )));
        }
        if let Some(message) = chunk.message {
            if let Some(thinking) = message.thinking.as_deref().filter(|t| !t.is_empty()) {
                self.reply_bytes = self.reply_bytes.saturating_add(thinking.len());
                self.reply.thinking.push_str(thinking);
                on_delta(Delta::Thinking(thinking));
            }
            if !message.content.is_empty() {
                self.reply_bytes = self.reply_bytes.saturating_add(message.content.len());
                self.reply.content.push_str(&message.content);
                on_delta(Delta::Content(&message.content));
            }
            let calls = message.tool_calls.unwrap_or_default();
            if !calls.is_empty() && self.reply.tool_calls.is_empty() {
                on_delta(Delta::ToolCalls);
            }
            for call in calls {
                if self.reply.tool_calls.len() >= MAX_CALLS_PER_REPLY {
                    return Err(too_many_calls());
                }
                self.reply_bytes = self
                    .reply_bytes
                    .saturating_add(call.function.name.len())
                    .saturating_add(call.function.arguments.to_string().len());
                let index = self.reply.tool_calls.len();
                let id = match call.id.filter(|id| !id.is_empty()) {
                    Some(id) if !self.seen_ids.contains(&id) => id,
                    // Made up, and never one the server already used in this reply.
                    _ => (index..)
                        .map(|n| format!("{}_{n}", self.id_prefix))
                        .find(|id| !self.seen_ids.contains(id))
                        .unwrap_or_default(),
                };
                self.seen_ids.insert(id.clone());
                self.reply.tool_calls.push(ToolCall {
                    id,
                    function: FunctionCall {
                        index,
                        name: call.function.name,
                        arguments: normalize_arguments(call.function.arguments),
                    },
                });
            }
        }
        if self.reply_bytes > self.max_reply {
            return Err(OllamaError::Protocol(format!(
                "the reply passed {} bytes, far more than `max_output_tokens` (sent as num_predict) allows, so the server is ignoring that limit and metron stopped reading",
                self.max_reply
            )));
        }
        if chunk.done == Some(true) {
            self.done = true;
            self.reply.done_reason = chunk.done_reason;
            self.reply.prompt_tokens = chunk.prompt_eval_count.unwrap_or(0);
            self.reply.generated_tokens = chunk.eval_count.unwrap_or(0);
            self.reply.cached_tokens = chunk.prompt_eval_cached_count;
            // Ollama leaves out `prompt_eval_count` alone when the whole prompt came from
            // its cache; only both missing means it counted nothing.
            self.reply.usage_missing =
                chunk.prompt_eval_count.is_none() && chunk.eval_count.is_none();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(bytes: &[&[u8]]) -> (Result<Reply, OllamaError>, String) {
        let mut printed = String::new();
        let mut on = |d: Delta<'_>| {
            if let Delta::Content(t) = d {
                printed.push_str(t);
            }
        };
        let mut parser = StreamParser::new("call_m1".into());
        for part in bytes {
            if let Err(e) = parser.feed(part, &mut on) {
                return (Err(e), printed);
            }
        }
        let result = parser.finish(&mut on);
        (result, printed)
    }

    #[test]
    fn calls_stop_at_the_bound() {
        let line = |n: usize| {
            let calls: Vec<_> = (0..n)
                .map(|_| json!({"function": {"name": "list_files", "arguments": {}}}))
                .collect();
            format!(
                "{}\n",
                json!({"message": {"tool_calls": calls}, "done": true})
            )
        };
        let at = line(MAX_CALLS_PER_REPLY);
        let reply = parse(&[at.as_bytes()]).0.expect("at the bound");
        assert_eq!(reply.tool_calls.len(), MAX_CALLS_PER_REPLY);
        let past = line(MAX_CALLS_PER_REPLY + 1);
        let error = parse(&[past.as_bytes()]).0.expect_err("past the bound");
        assert!(error.to_string().contains("tool calls"), "{error}");
    }

    #[test]
    fn only_text_reasoning_or_a_call_is_progress() {
        let mut parser = StreamParser::new("call_m1".into());
        let mut on = |_: Delta<'_>| {};
        let empty = b"{\"message\":{\"role\":\"assistant\",\"content\":\"\"},\"done\":false}\n";
        for nothing in [&b"\n"[..], b"\r\n", b"  \n", empty, b"{\"message\":{\"con"] {
            parser.feed(nothing, &mut on).expect("fed");
            assert_eq!(parser.progress(), 0, "{}", String::from_utf8_lossy(nothing));
        }
        parser.feed(b"tent\":\"a\"}}\n", &mut on).expect("fed");
        assert_eq!(parser.progress(), 1);
        parser
            .feed(b"{\"message\":{\"thinking\":\"hm\"}}\n", &mut on)
            .expect("fed");
        assert_eq!(parser.progress(), 3);
        let before = parser.progress();
        parser
            .feed(
                b"{\"message\":{\"tool_calls\":[{\"function\":{\"name\":\"\",\"arguments\":{}}}]}}\n",
                &mut on,
            )
            .expect("fed");
        assert!(parser.progress() > before);
    }

    #[test]
    fn lines_split_across_reads_are_reassembled() {
        let (reply, printed) = parse(&[
            b"{\"message\":{\"role\":\"assistant\",\"content\":\"Hel",
            b"lo\"},\"done\":false}\n{\"message\":{\"content\":\" world\"},\"done\":false}\n",
            b"{\"message\":{\"content\":\"\"},\"done\":true,\"prompt_eval_count\":12,\"eval_count\":3}\n",
        ]);
        let reply = reply.unwrap_or_default();
        assert_eq!(printed, "Hello world");
        assert_eq!(reply.content, "Hello world");
        assert_eq!((reply.prompt_tokens, reply.generated_tokens), (12, 3));
    }

    #[test]
    fn tool_calls_on_the_done_line_with_string_arguments_and_no_ids() {
        let (reply, _) = parse(&[
            b"{\"message\":{\"content\":\"\",\"tool_calls\":[{\"function\":{\"name\":\"a\",\"arguments\":\"{\\\"x\\\":1}\"}}]},\"done\":false}\n",
            b"{\"message\":{\"content\":\"\",\"tool_calls\":[{\"id\":\"k\",\"function\":{\"index\":0,\"name\":\"b\",\"arguments\":{}}},{\"id\":\"k\",\"function\":{\"index\":0,\"name\":\"c\"}}]},\"done\":true}",
        ]);
        let reply = reply.unwrap_or_default();
        let calls: Vec<_> = reply
            .tool_calls
            .iter()
            .map(|c| {
                (
                    c.id.as_str(),
                    c.function.name.as_str(),
                    c.function.arguments.clone(),
                )
            })
            .collect();
        assert_eq!(
            calls,
            vec![
                ("call_m1_0", "a", json!({"x": 1})),
                ("k", "b", json!({})),
                ("call_m1_2", "c", json!({})),
            ]
        );
    }

    #[test]
    fn a_huge_line_arriving_in_small_reads_is_scanned_once() {
        // A tool call holding a whole file is one line; it arrives in many small reads.
        // Rescanning the pending bytes on every read made this quadratic (minutes at
        // 8 MiB in a debug build); scanning only the new bytes keeps it linear.
        let content = "x".repeat(8 << 20);
        let line = format!("{{\"message\":{{\"content\":\"{content}\"}},\"done\":true}}\n");
        let mut parser = StreamParser::new("call_m1".into());
        let started = std::time::Instant::now();
        for piece in line.as_bytes().chunks(1024) {
            parser.feed(piece, &mut |_| {}).expect("feed");
        }
        let reply = parser.finish(&mut |_| {}).expect("reply");
        assert_eq!(reply.content.len(), content.len());
        let took = started.elapsed();
        // Linear is well under a second; the quadratic version took minutes.
        assert!(took < std::time::Duration::from_secs(30), "{took:?}");
    }

    #[test]
    fn a_line_that_never_ends_is_a_protocol_error_not_unbounded_memory() {
        let mut parser = StreamParser::new("call_m1".into()).with_limits(1024, usize::MAX);
        let mut result = Ok(false);
        for _ in 0..100 {
            result = parser.feed(&[b'x'; 100], &mut |_| {});
            if result.is_err() {
                break;
            }
        }
        let error = result.expect_err("a line over the cap");
        assert!(matches!(error, OllamaError::Protocol(_)), "{error:?}");
        assert!(error.to_string().contains("without a newline"), "{error}");
        assert!(parser.buffer.len() <= 1024 + 100, "{}", parser.buffer.len());
    }

    #[test]
    fn a_reply_far_longer_than_allowed_is_cut_off_with_an_error() {
        let mut parser = StreamParser::new("call_m1".into()).with_limits(1 << 20, 1000);
        let line = b"{\"message\":{\"content\":\"0123456789\"},\"done\":false}\n";
        let mut result = Ok(false);
        for _ in 0..200 {
            result = parser.feed(line, &mut |_| {});
            if result.is_err() {
                break;
            }
        }
        let error = result.expect_err("a reply over the cap");
        assert!(matches!(error, OllamaError::Protocol(_)), "{error:?}");
        assert!(error.to_string().contains("num_predict"), "{error}");
    }

    #[test]
    fn crlf_lines_split_utf8_and_bytes_after_done_are_handled() {
        // "é" split across two reads, CRLF line ends, trailing garbage after `done`.
        let (reply, printed) = parse(&[
            b"{\"message\":{\"content\":\"caf\xc3",
            b"\xa9\"},\"done\":false}\r\n{\"message\":null,\"done\":true}\r\n",
            b"{\"error\":\"ignored\"}\n<html>",
        ]);
        assert_eq!(reply.expect("reply").content, "caf\u{e9}");
        assert_eq!(printed, "caf\u{e9}");
        let (r, _) = parse(&[b"{\"message\":{\"content\":\"\xff\"},\"done\":true}\n"]);
        assert!(matches!(r, Err(OllamaError::Protocol(_))), "{r:?}");
    }

    #[test]
    fn a_made_up_id_never_repeats_one_the_server_sent() {
        let (reply, _) = parse(&[
            b"{\"message\":{\"content\":\"\",\"tool_calls\":[{\"id\":\"call_m1_1\",\"function\":{\"name\":\"a\"}},{\"function\":{\"name\":\"b\"}}]},\"done\":true}\n",
        ]);
        let ids: Vec<_> = reply
            .expect("reply")
            .tool_calls
            .into_iter()
            .map(|c| c.id)
            .collect();
        assert_eq!(ids.len(), 2);
        assert_ne!(ids[0], ids[1], "{ids:?}");
    }

    #[test]
    fn errors_mid_stream_and_missing_done_are_errors() {
        let (r, printed) = parse(&[
            b"{\"message\":{\"content\":\"par\"},\"done\":false}\n{\"error\":\"an error was encountered while running the model: unexpected EOF\"}\n",
        ]);
        assert!(matches!(r, Err(OllamaError::MidStream(ref m)) if m.contains("unexpected EOF")));
        assert_eq!(printed, "par");
        let (r, _) = parse(&[b"{\"error parsing tool call\":\"invalid character\"}\n"]);
        assert!(matches!(r, Err(OllamaError::MidStream(ref m)) if m.contains("invalid character")));
        let (r, _) = parse(&[b"{\"message\":{\"content\":\"a\"},\"done\":false}\n"]);
        assert!(matches!(r, Err(OllamaError::Truncated)), "{r:?}");
        let (r, _) = parse(&[b"<html>\n"]);
        assert!(matches!(r, Err(OllamaError::Protocol(_))), "{r:?}");
    }
}
