//! Assembling a reply from a Chat Completions answer: the SSE stream, or one JSON body
//! when not streaming.
//!
//! Kept apart from the HTTP code so it is tested and fuzzed on bytes. The rules follow
//! what the servers send: text and reasoning (`reasoning_content` on llama-server and
//! vLLM, `reasoning` elsewhere) accumulate from every chunk; a call arrives in pieces
//! merged by `index`, the id and name on the first piece only and the arguments string
//! spread over many (a piece that names a function again at the same index, with another
//! id or another name, is a new call, for servers that repeat index 0; a piece without a
//! name is always more of the latest call, for servers that send a new id with every
//! piece); `finish_reason` and the `usage` chunk may come in either
//! order; `data: [DONE]` ends the stream, and a stream that ends without it is complete
//! only if a `finish_reason` arrived. The bounds are the NDJSON parser's: one line (and
//! one event) at `max_line` bytes, the reply's text, reasoning and arguments together at
//! `max_reply`, and the calls at [`MAX_CALLS_PER_REPLY`].

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use super::sse::SseDecoder;
use super::wire::{CallPiece, ChoiceMessage, Chunk};
use crate::ollama::error::quoted_start;
use crate::ollama::stream::{MAX_CALLS_PER_REPLY, MAX_LINE_BYTES, too_many_calls};
use crate::ollama::wire::{FunctionCall, ToolCall, normalize_arguments};
use crate::ollama::{Delta, OllamaError, Reply};

/// A call being assembled from its pieces.
#[derive(Debug, Default)]
struct Pending {
    id: Option<String>,
    name: String,
    arguments: String,
}

/// Turns a Chat Completions answer into a [`Reply`].
#[derive(Debug)]
pub(crate) struct OpenAiParser {
    sse: SseDecoder,
    /// False for a `stream: false` request: the body is one JSON document.
    streaming: bool,
    /// The body of a non-streamed answer, read whole (bounded by `max_line`).
    body: Vec<u8>,
    reply: Reply,
    calls: Vec<Pending>,
    /// For each `index`, where in `calls` its latest call is: a piece finds the call it
    /// continues in constant time, however many calls the reply has.
    latest: HashMap<usize, usize>,
    /// `[DONE]` was read.
    done: bool,
    /// A `finish_reason` arrived.
    finished: bool,
    id_prefix: String,
    max_line: usize,
    max_reply: usize,
    reply_bytes: usize,
}

impl OpenAiParser {
    /// A parser for one reply; `id_prefix` makes the ids it invents unique in the session.
    pub(crate) fn new(id_prefix: String, streaming: bool) -> OpenAiParser {
        OpenAiParser {
            sse: SseDecoder::new(MAX_LINE_BYTES),
            streaming,
            body: Vec::new(),
            // Until a `usage` object arrives: servers may leave it out (see `chunk`).
            reply: Reply {
                usage_missing: true,
                ..Reply::default()
            },
            calls: Vec::new(),
            latest: HashMap::new(),
            done: false,
            finished: false,
            id_prefix,
            max_line: MAX_LINE_BYTES,
            max_reply: usize::MAX,
            reply_bytes: 0,
        }
    }

    /// Caps one line (or event, or a non-streamed body) at `max_line` bytes and the
    /// reply's text, reasoning and arguments together at `max_reply` bytes.
    pub(crate) fn with_limits(mut self, max_line: usize, max_reply: usize) -> OpenAiParser {
        self.sse = SseDecoder::new(max_line);
        self.max_line = max_line;
        self.max_reply = max_reply;
        self
    }

    /// Feeds bytes as they arrive. Returns true once `[DONE]` has been read.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, OllamaError> {
        if self.done {
            return Ok(true);
        }
        if !self.streaming {
            self.body.extend_from_slice(bytes);
            if self.body.len() > self.max_line {
                return Err(OllamaError::Protocol(format!(
                    "the answer passed {} bytes, which no Chat Completions server sends, so metron stopped reading",
                    self.max_line
                )));
            }
            return Ok(false);
        }
        let mut sse = std::mem::replace(&mut self.sse, SseDecoder::new(0));
        let result = sse.feed(bytes, &mut |data| self.event(data, on_delta));
        self.sse = sse;
        self.done = result?;
        Ok(self.done)
    }

    /// Ends the answer: the rest of the stream is read, and one that ended with neither
    /// `[DONE]` nor a `finish_reason` is incomplete.
    pub(crate) fn finish(
        mut self,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Reply, OllamaError> {
        if !self.streaming {
            let body = std::mem::take(&mut self.body);
            let chunk: Chunk =
                serde_json::from_slice(&body).map_err(|e| self.not_json(&body, &e))?;
            self.chunk(chunk, on_delta)?;
            self.finished = true;
        } else if !self.done {
            let mut sse = std::mem::replace(&mut self.sse, SseDecoder::new(0));
            self.done = sse.finish(&mut |data| self.event(data, on_delta))?;
        }
        if !self.done && !self.finished {
            return Err(OllamaError::Truncated);
        }
        self.reply.tool_calls = self.assembled_calls();
        Ok(self.reply)
    }

    /// Marks when the first token arrived, measured by the caller.
    pub(crate) fn note_first_token(&mut self, at: Duration) {
        self.reply.first_token.get_or_insert(at);
    }

    /// Grows with every piece that adds something (text, reasoning, arguments, a call) and
    /// with nothing else, so the watchdog restarts on progress only.
    pub(crate) fn progress(&self) -> usize {
        self.reply_bytes.saturating_add(self.calls.len())
    }

    /// True once any text, reasoning or call has arrived.
    pub(crate) fn has_output(&self) -> bool {
        !self.reply.content.is_empty() || !self.reply.thinking.is_empty() || !self.calls.is_empty()
    }

    fn not_json(&self, bytes: &[u8], e: &serde_json::Error) -> OllamaError {
        OllamaError::Protocol(format!(
            "{e} in {}",
            quoted_start(&String::from_utf8_lossy(bytes), 200)
        ))
    }

    /// One event's data; true for `[DONE]`.
    fn event(
        &mut self,
        data: &[u8],
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<bool, OllamaError> {
        let data = data.trim_ascii();
        if data == b"[DONE]" {
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_slice(data).map_err(|e| self.not_json(data, &e))?;
        self.chunk(chunk, on_delta)?;
        Ok(false)
    }

    fn chunk(
        &mut self,
        chunk: Chunk,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), OllamaError> {
        if let Some(error) = chunk.error {
            // vLLM's and SGLang's in-stream error: read as the SSE `error` event is, so a
            // prompt too long for the window is trimmed and retried either way.
            let body = serde_json::json!({ "error": error }).to_string();
            return Err(OllamaError::from_stream_error(&body));
        }
        for choice in chunk.choices {
            if let Some(message) = choice.delta.or(choice.message) {
                self.message(message, on_delta)?;
            }
            if let Some(reason) = choice.finish_reason.filter(|r| !r.is_empty()) {
                self.finished = true;
                self.reply.done_reason = Some(reason);
            }
        }
        if let Some(usage) = chunk.usage {
            // Missing counts stay 0, the same "not reported" as an Ollama reply without
            // them; the cached share stays `None` (unknown), never a claimed 0.
            self.reply.prompt_tokens = usage.prompt_tokens.unwrap_or(0);
            self.reply.generated_tokens = usage.completion_tokens.unwrap_or(0);
            self.reply.cached_tokens = usage.prompt_tokens_details.and_then(|d| d.cached_tokens);
            self.reply.usage_missing = false;
        }
        if self.reply_bytes > self.max_reply {
            return Err(OllamaError::Protocol(format!(
                "the reply passed {} bytes, far more than `max_output_tokens` (sent as max_tokens) allows, so the server is ignoring that limit and metron stopped reading",
                self.max_reply
            )));
        }
        Ok(())
    }

    fn message(
        &mut self,
        message: ChoiceMessage,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<(), OllamaError> {
        let reasoning = message.reasoning_content.or(message.reasoning);
        if let Some(thinking) = reasoning.as_deref().filter(|t| !t.is_empty()) {
            self.reply_bytes = self.reply_bytes.saturating_add(thinking.len());
            self.reply.thinking.push_str(thinking);
            on_delta(Delta::Thinking(thinking));
        }
        if let Some(content) = message.content.as_deref().filter(|t| !t.is_empty()) {
            self.reply_bytes = self.reply_bytes.saturating_add(content.len());
            self.reply.content.push_str(content);
            on_delta(Delta::Content(content));
        }
        for piece in message.tool_calls.unwrap_or_default() {
            if self.calls.is_empty() {
                on_delta(Delta::ToolCalls);
            }
            self.piece(piece)?;
        }
        Ok(())
    }

    /// Adds one piece of a call: to the latest call at its index, or as a new call.
    fn piece(&mut self, piece: CallPiece) -> Result<(), OllamaError> {
        let id = piece.id.filter(|id| !id.is_empty());
        let (name, arguments) = match piece.function {
            Some(function) => (function.name.filter(|n| !n.is_empty()), function.arguments),
            None => (None, None),
        };
        let continued = piece.index.and_then(|index| {
            let at = *self.latest.get(&index)?;
            let call = &self.calls[at];
            let new_header = match (&name, call.name.is_empty()) {
                (Some(name), false) => match (&id, &call.id) {
                    (Some(new), Some(old)) => new != old,
                    _ => *name != call.name,
                },
                _ => false,
            };
            (!new_header).then_some(at)
        });
        let at = match continued {
            Some(at) => at,
            None => {
                if self.calls.len() >= MAX_CALLS_PER_REPLY {
                    return Err(too_many_calls());
                }
                self.calls.push(Pending::default());
                let at = self.calls.len() - 1;
                if let Some(index) = piece.index {
                    self.latest.insert(index, at);
                }
                at
            }
        };
        let call = &mut self.calls[at];
        if call.id.is_none() {
            call.id = id;
        }
        if let Some(name) = name
            && call.name.is_empty()
        {
            self.reply_bytes = self.reply_bytes.saturating_add(name.len());
            call.name = name;
        }
        let added = match arguments {
            Some(serde_json::Value::String(text)) => text,
            Some(serde_json::Value::Null) | None => String::new(),
            // A whole object (a few servers send one): its JSON text.
            Some(value) if call.arguments.is_empty() => value.to_string(),
            Some(_) => String::new(),
        };
        self.reply_bytes = self.reply_bytes.saturating_add(added.len());
        call.arguments.push_str(&added);
        Ok(())
    }

    fn assembled_calls(&mut self) -> Vec<ToolCall> {
        let mut seen = HashSet::new();
        let mut calls = Vec::with_capacity(self.calls.len());
        for (index, pending) in std::mem::take(&mut self.calls).into_iter().enumerate() {
            let id = match pending.id {
                Some(id) if !seen.contains(&id) => id,
                _ => (index..)
                    .map(|n| format!("{}_{n}", self.id_prefix))
                    .find(|id| !seen.contains(id))
                    .unwrap_or_default(),
            };
            seen.insert(id.clone());
            let arguments = if pending.arguments.trim().is_empty() {
                serde_json::Value::Null
            } else {
                serde_json::Value::String(pending.arguments)
            };
            calls.push(ToolCall {
                id,
                function: FunctionCall {
                    index,
                    name: pending.name,
                    arguments: normalize_arguments(arguments),
                },
            });
        }
        calls
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(parts: &[&[u8]]) -> (Result<Reply, OllamaError>, String) {
        let mut printed = String::new();
        let mut on = |d: Delta<'_>| {
            if let Delta::Content(t) = d {
                printed.push_str(t);
            }
        };
        let mut parser = OpenAiParser::new("call_m1".into(), true);
        for part in parts {
            if let Err(e) = parser.feed(part, &mut on) {
                return (Err(e), printed);
            }
        }
        let result = parser.finish(&mut on);
        (result, printed)
    }

    fn event(value: serde_json::Value) -> String {
        format!("data: {value}\n\n")
    }

    #[test]
    fn text_usage_and_cached_tokens() {
        let stream = [
            event(json!({"choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"}}]})),
            event(json!({"choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]})),
            event(json!({"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]})),
            event(json!({"choices":[],"usage":{"prompt_tokens":120,"completion_tokens":2,"prompt_tokens_details":{"cached_tokens":100}}})),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let (reply, printed) = parse(&[stream.as_bytes()]);
        let reply = reply.expect("reply");
        assert_eq!(
            (printed.as_str(), reply.content.as_str()),
            ("Hello", "Hello")
        );
        assert_eq!((reply.prompt_tokens, reply.generated_tokens), (120, 2));
        assert!(!reply.usage_missing);
        assert_eq!(reply.cached_tokens, Some(100));
        assert_eq!(reply.done_reason.as_deref(), Some("stop"));
    }

    #[test]
    fn arguments_split_over_many_chunks_are_merged_by_index() {
        let mut stream = event(json!({"choices":[{"delta":{"tool_calls":[
            {"index":0,"id":"call_a","type":"function","function":{"name":"view_slice","arguments":""}}]}}]}));
        for piece in ["{\"pa", "th\":", "\"a.rs\"", "}"] {
            stream.push_str(&event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"function":{"arguments":piece}}]}}]})));
        }
        stream.push_str(&event(json!({"choices":[{"delta":{"tool_calls":[
            {"index":1,"id":"call_b","function":{"name":"list_files","arguments":"{}"}}]}}]})));
        stream.push_str(&event(
            json!({"choices":[{"delta":{},"finish_reason":"tool_calls"}]}),
        ));
        stream.push_str("data: [DONE]\n\n");
        let bytes = stream.as_bytes();
        for at in [1, 7, bytes.len() / 2, bytes.len() - 3] {
            let (reply, _) = parse(&[&bytes[..at], &bytes[at..]]);
            let reply = reply.expect("reply");
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
                    ("call_a", "view_slice", json!({"path": "a.rs"})),
                    ("call_b", "list_files", json!({})),
                ]
            );
            assert_eq!(reply.done_reason.as_deref(), Some("tool_calls"));
        }
    }

    #[test]
    fn whole_calls_repeating_index_zero_stay_apart_and_get_ids() {
        let stream = [
            event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"x","function":{"name":"a","arguments":"{\"n\":1}"}}]}}]})),
            event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"y","function":{"name":"b","arguments":{"n":2}}},
                {"function":{"name":"c"}}]},"finish_reason":"tool_calls"}]})),
        ]
        .concat();
        let (reply, _) = parse(&[stream.as_bytes()]);
        let calls: Vec<_> = reply
            .expect("a finish_reason without [DONE] is complete")
            .tool_calls
            .into_iter()
            .map(|c| (c.id, c.function.name, c.function.arguments))
            .collect();
        assert_eq!(
            calls,
            vec![
                ("x".into(), "a".into(), json!({"n": 1})),
                ("y".into(), "b".into(), json!({"n": 2})),
                ("call_m1_2".into(), "c".into(), json!({})),
            ]
        );
    }

    #[test]
    fn a_new_id_on_every_piece_is_still_one_call() {
        let stream = [
            event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"a1","function":{"name":"view_slice","arguments":""}}]}}]})),
            event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"a2","function":{"arguments":"{\"path\":"}}]}}]})),
            event(json!({"choices":[{"delta":{"tool_calls":[
                {"index":0,"id":"a3","function":{"arguments":"\"a.rs\"}"}}]}}]})),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let calls = parse(&[stream.as_bytes()]).0.expect("reply").tool_calls;
        assert_eq!(calls.len(), 1, "{calls:?}");
        assert_eq!(calls[0].id, "a1");
        assert_eq!(calls[0].function.name, "view_slice");
        assert_eq!(calls[0].function.arguments, json!({"path": "a.rs"}));
    }

    #[test]
    fn calls_stop_at_the_bound_even_when_every_piece_is_empty() {
        let at_bound: Vec<_> = (0..MAX_CALLS_PER_REPLY)
            .map(|i| json!({"index": i}))
            .collect();
        let stream = format!(
            "{}data: [DONE]\n\n",
            event(json!({"choices":[{"delta":{"tool_calls":at_bound}}]}))
        );
        let calls = parse(&[stream.as_bytes()])
            .0
            .expect("at the bound")
            .tool_calls;
        assert_eq!(calls.len(), MAX_CALLS_PER_REPLY);
        // One more, as one more empty piece in its own event.
        let past = format!(
            "{}{}data: [DONE]\n\n",
            event(json!({"choices":[{"delta":{"tool_calls":at_bound}}]})),
            event(json!({"choices":[{"delta":{"tool_calls":[{"index": MAX_CALLS_PER_REPLY}]}}]}))
        );
        let error = parse(&[past.as_bytes()]).0.expect_err("past the bound");
        assert!(
            error
                .to_string()
                .contains(&format!("more than {MAX_CALLS_PER_REPLY} tool calls")),
            "{error}"
        );
    }

    #[test]
    fn reasoning_length_and_missing_usage() {
        let stream = [
            event(json!({"choices":[{"delta":{"reasoning_content":"hm"}}]})),
            event(json!({"choices":[{"delta":{"reasoning":" ok","content":"a"},"finish_reason":"length"}]})),
            "data: [DONE]\n\n".to_owned(),
        ]
        .concat();
        let reply = parse(&[stream.as_bytes()]).0.expect("reply");
        assert_eq!(reply.thinking, "hm ok");
        assert_eq!(reply.done_reason.as_deref(), Some("length"));
        assert_eq!((reply.prompt_tokens, reply.generated_tokens), (0, 0));
        assert!(reply.usage_missing, "no usage chunk means unknown counts");
        assert_eq!(reply.cached_tokens, None);
    }

    #[test]
    fn errors_truncation_and_garbage() {
        let (r, printed) = parse(&[
            event(json!({"choices":[{"delta":{"content":"par"}}]})).as_bytes(),
            event(json!({"error":{"message":"boom","type":"server_error"}})).as_bytes(),
        ]);
        assert!(
            matches!(r, Err(OllamaError::MidStream(ref m)) if m == "boom"),
            "{r:?}"
        );
        assert_eq!(printed, "par");
        // The same error saying the prompt is too long is an overflow, trimmed for.
        let (r, _) = parse(&[event(json!({"error":{"message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","code":400}})).as_bytes()]);
        assert!(
            matches!(r, Err(OllamaError::ContextOverflow { .. })),
            "{r:?}"
        );
        let (r, _) = parse(&[event(json!({"choices":[{"delta":{"content":"a"}}]})).as_bytes()]);
        assert!(matches!(r, Err(OllamaError::Truncated)), "{r:?}");
        let (r, _) = parse(&[b"data: <html>\n\n"]);
        assert!(matches!(r, Err(OllamaError::Protocol(_))), "{r:?}");
    }

    #[test]
    fn a_reply_past_its_bound_is_cut_off() {
        let mut parser = OpenAiParser::new("c".into(), true).with_limits(1 << 20, 100);
        let line = event(json!({"choices":[{"delta":{"content":"0123456789"}}]}));
        for _ in 0..10 {
            let result = parser.feed(line.as_bytes(), &mut |_| {});
            assert!(result.is_ok(), "at the bound: {result:?}");
        }
        assert_eq!(parser.progress(), 100);
        let result = parser.feed(line.as_bytes(), &mut |_| {});
        let error = result.expect_err("past the bound");
        assert!(error.to_string().contains("max_tokens"), "{error}");
    }

    #[test]
    fn a_non_streamed_answer_is_one_json_body() {
        let body = json!({"choices":[{"message":{"content":"hi","tool_calls":[
            {"id":"k","type":"function","function":{"name":"a","arguments":"{}"}}]},
            "finish_reason":"tool_calls"}],"usage":{"prompt_tokens":5,"completion_tokens":1}})
        .to_string();
        let mut parser = OpenAiParser::new("c".into(), false);
        let (a, b) = body.as_bytes().split_at(9);
        parser.feed(a, &mut |_| {}).expect("fed");
        parser.feed(b, &mut |_| {}).expect("fed");
        let reply = parser.finish(&mut |_| {}).expect("reply");
        assert_eq!(reply.content, "hi");
        assert_eq!(reply.tool_calls.len(), 1);
        assert_eq!(reply.prompt_tokens, 5);
    }
}
