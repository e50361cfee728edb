//! Trimming history after the server refused a prompt as longer than the context window.
//!
//! The policy (docs/models.md, "When the conversation no longer fits"):
//!
//! - the system message (metron's rules, the instructions) is never touched, byte for
//!   byte, so the server's prompt cache keeps it; the tool definitions are not in history;
//! - the current request, the person's line of this turn, is kept, and so are the calls
//!   and results of this turn's latest round;
//! - first the oldest earlier tool results are replaced by [`DROPPED_RESULT`] (the call
//!   and its result stay paired, which servers that match them by id require), then the
//!   oldest whole exchanges are dropped, cutting only before a user message so a call is
//!   never separated from its result; only then are this turn's own earlier results
//!   stubbed, and last of all the results of its latest round (one result too big for
//!   the window would otherwise fail every retry).
//!
//! It stops as soon as the bytes it was asked to free are freed, so the kept prefix is as
//! long as it can be.

use crate::ollama::wire::{Message, Role};

use super::History;

/// What a tool result is replaced with when the conversation no longer fits.
pub(crate) const DROPPED_RESULT: &str = "[Tool result dropped: the conversation no longer fit the context window; call the tool again if you need it]";

/// What one trim did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Trim {
    /// Tool results replaced by [`DROPPED_RESULT`] (before the turn and within it).
    pub(crate) results_dropped: usize,
    /// Whole messages dropped from the front (after the system message).
    pub(crate) messages_dropped: usize,
    /// Bytes of message text no longer carried.
    pub(crate) bytes_freed: usize,
}

impl History {
    /// Frees at least `want` bytes if it can, by the policy above, keeping the system
    /// message and every message from `turn_start` (the person's line of this turn) on,
    /// except this turn's earlier tool results. Returns what it did; `None` when nothing
    /// could be freed (a retry would send the same prompt).
    pub(crate) fn trim_to_fit(&mut self, turn_start: usize, want: usize) -> Option<Trim> {
        let before = self.carried;
        let turn_start = turn_start.clamp(1, self.messages.len());
        let mut trim = Trim::default();
        // 1. The oldest earlier tool results.
        trim.results_dropped += self.stub_results(1..turn_start, before, want);
        // 2. The oldest whole exchanges, cut before a user message.
        if before - self.carried < want {
            trim.messages_dropped = self.drop_exchanges(turn_start, before, want);
        }
        // 3. This turn's own results, all but the latest round's.
        if before - self.carried < want {
            let start = turn_start - trim.messages_dropped;
            let latest_round = self
                .messages
                .iter()
                .rposition(|m| m.role == Role::Assistant && !m.tool_calls.is_empty())
                .unwrap_or(self.messages.len());
            let latest_round = latest_round.max(start);
            trim.results_dropped += self.stub_results(start..latest_round, before, want);
            // 4. Only when nothing else is left: the latest round's own results (a single
            //    result too big for the window), so the model can still answer or ask
            //    for less.
            if before - self.carried < want {
                let end = self.messages.len();
                trim.results_dropped += self.stub_results(latest_round..end, before, want);
            }
        }
        trim.bytes_freed = before - self.carried;
        if trim == Trim::default() || trim.bytes_freed == 0 {
            return None;
        }
        self.revision += 1;
        Some(trim)
    }

    /// Replaces tool results in `range`, oldest first, until `want` bytes are freed since
    /// `before`; returns how many.
    fn stub_results(&mut self, range: std::ops::Range<usize>, before: usize, want: usize) -> usize {
        let mut stubbed = 0;
        for i in range {
            if before - self.carried >= want {
                break;
            }
            let message = &mut self.messages[i];
            if message.role != Role::Tool || message.content.len() <= DROPPED_RESULT.len() {
                continue;
            }
            let old = message.carried_bytes();
            message.content = DROPPED_RESULT.to_owned();
            self.carried = self.carried - old + message.carried_bytes();
            stubbed += 1;
        }
        stubbed
    }

    /// Drops the oldest exchanges before `turn_start`, cutting at the first user message
    /// after which `want` bytes are freed since `before` (at most up to `turn_start`);
    /// returns how many messages went.
    fn drop_exchanges(&mut self, turn_start: usize, before: usize, want: usize) -> usize {
        let mut freed = before - self.carried;
        let mut cut = None;
        for i in 2..=turn_start {
            freed += self.messages[i - 1].carried_bytes();
            let at_user = i == turn_start || self.messages[i].role == Role::User;
            if at_user {
                cut = Some(i);
                if freed >= want {
                    break;
                }
            }
        }
        let Some(cut) = cut else {
            return 0;
        };
        let gone: usize = self.messages[1..cut]
            .iter()
            .map(Message::carried_bytes)
            .sum();
        self.messages.drain(1..cut);
        self.carried -= gone;
        self.dropped = self.dropped.saturating_add(cut - 1);
        cut - 1
    }
}

/// How many bytes to free after the server refused a prompt of `sent` bytes with
/// `message`, when `droppable` bytes could go at most. When the refusal is one of the
/// phrasings [`sizes`] knows, the share of the prompt over the window plus a tenth for the
/// estimate's error; otherwise half of what can go. Never more than `droppable`: the
/// numbers come from the server's text, and freeing more than there is means nothing.
pub(crate) fn bytes_to_free(message: &str, sent: usize, droppable: usize) -> usize {
    let Some((asked, window)) = sizes(message) else {
        return droppable.div_ceil(2);
    };
    // The tokens of the messages alone, when the refusal separates the completion's share
    // (what `max_tokens` reserved) from them: the bytes sent are the messages' bytes.
    let prompt = match completion_share(message) {
        Some(completion) if completion < asked => asked - completion,
        _ => asked,
    };
    // In u128: `sent` and the counts all fit in 64 bits, so their product cannot overflow
    // whatever the server wrote.
    let sent = sent as u128;
    let over = sent * u128::from(asked - window) / u128::from(prompt);
    let want = over.saturating_add(sent / 10);
    usize::try_from(want).unwrap_or(usize::MAX).min(droppable)
}

/// Whether the refusal says the reply's reserved share alone (`max_tokens`, from
/// `max_output_tokens`) fills the window: then no trim can help, and dropping history
/// would only lose it on every retry.
pub(crate) fn output_fills_window(message: &str) -> bool {
    let window = sizes(message).map(|(_, window)| window);
    matches!((completion_share(message), window), (Some(completion), Some(window)) if completion >= window)
}

/// The tokens the request reserved for the reply, when the refusal says: the
/// OpenAI-compatible servers' `(800 in the messages, 4096 in the completion)`, or current
/// vLLM's `'max_tokens' ... is too large: 4096`.
fn completion_share(message: &str) -> Option<u64> {
    let text = message.to_ascii_lowercase();
    if let Some((_, completion, _)) = reply_too_large(&text) {
        return Some(completion);
    }
    let before = &text[..text.find(" in the completion")?];
    // The digits right before the marker, found by bytes: whatever precedes them (a
    // full-width comma, a no-break space) is never cut inside.
    let digits = before.bytes().rev().take_while(u8::is_ascii_digit).count();
    before[before.len() - digits..].parse().ok()
}

/// Current vLLM's refusal of a reply share too large for what the prompt leaves:
/// `'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum
/// context length is 4096 tokens and your request has 800 input tokens (...)`, as the
/// prompt's tokens, the reply's and the window (`text` in lower case).
fn reply_too_large(text: &str) -> Option<(u64, u64, u64)> {
    let completion = number_after(text, "is too large: ")?;
    let window = number_after(text, "maximum context length is ")?;
    let prompt = number_after(text, "your request has ")?;
    Some((prompt, completion, window))
}

/// The prompt's size and the window's, in tokens, from a refusal in one of the phrasings
/// servers are known to use; `None` for anything else, and when the numbers do not
/// describe an overflow (the prompt no bigger than the window, a window of 0). Only
/// known phrasings are read: picking numbers out of any text misreads refusals that
/// carry more than two (OpenAI's also gives the completion's share).
///
/// - llama-server: `request (9000 tokens) exceeds the available context size (4096 tokens)`
/// - OpenAI-compatible servers (vLLM, llama-cpp-python): `This model's maximum context
///   length is 4096 tokens. However, you requested 5000 tokens (4900 in the messages, 100
///   in the completion). ...`
/// - LM Studio: `Trying to keep the first 5000 tokens when context the overflows. However,
///   the model is loaded with context length of only 4096 tokens, ...`
///
/// Ollama's own refusal (`the input length exceeds the context length`) gives no sizes.
fn sizes(message: &str) -> Option<(u64, u64)> {
    let text = message.to_ascii_lowercase();
    let phrasings = [
        ("request (", "available context size ("),
        ("you requested ", "maximum context length is "),
        ("keep the first ", "context length of only "),
    ];
    let (asked, window) = match reply_too_large(&text) {
        Some((prompt, completion, window)) => (prompt.saturating_add(completion), window),
        None => phrasings.iter().find_map(|(asked, window)| {
            Some((number_after(&text, asked)?, number_after(&text, window)?))
        })?,
    };
    (window > 0 && asked > window).then_some((asked, window))
}

/// The whole number right after the first `marker` in `text`; `None` when there is none
/// or it does not fit in 64 bits.
fn number_after(text: &str, marker: &str) -> Option<u64> {
    let rest = &text[text.find(marker)? + marker.len()..];
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ollama::wire::{FunctionCall, ToolCall};

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            function: FunctionCall {
                index: 0,
                name: "search_text".into(),
                arguments: serde_json::json!({}),
            },
        }
    }

    /// A user line, a call, its result of `size` bytes, the answer.
    fn exchange(h: &mut History, n: usize, size: usize) {
        h.push(Message::new(Role::User, format!("q{n}")));
        let c = call(&format!("c{n}"));
        h.push(Message {
            tool_calls: vec![c.clone()],
            ..Message::new(Role::Assistant, "")
        });
        h.push(Message::tool_result(&c, "r".repeat(size)));
        h.push(Message::new(Role::Assistant, format!("a{n}")));
    }

    fn recount(h: &History) -> usize {
        h.messages().iter().map(Message::carried_bytes).sum()
    }

    fn paired(h: &History) {
        for (i, m) in h.messages().iter().enumerate() {
            if m.role == Role::Tool {
                let call = &h.messages()[..i]
                    .iter()
                    .rev()
                    .find(|m| m.role != Role::Tool)
                    .expect("a message before");
                assert!(!call.tool_calls.is_empty(), "result {i} without its call");
            }
        }
    }

    #[test]
    fn the_oldest_results_go_first_and_the_system_message_stays() {
        let mut h = History::new("sys");
        for n in 0..3 {
            exchange(&mut h, n, 1000);
        }
        let start = h.len();
        h.push(Message::new(Role::User, "now"));
        let trim = h.trim_to_fit(start, 500).expect("trimmed");
        assert_eq!(trim.results_dropped, 1);
        assert_eq!(trim.messages_dropped, 0);
        assert_eq!(h.messages()[0].content, "sys");
        assert_eq!(h.messages()[3].content, DROPPED_RESULT);
        assert_eq!(h.messages()[7].content.len(), 1000, "the next one is kept");
        assert_eq!(h.carried_bytes(), recount(&h));
        assert_eq!(h.messages().last().map(|m| m.content.as_str()), Some("now"));
        paired(&h);
    }

    #[test]
    fn whole_exchanges_go_next_cut_before_a_user_message() {
        let mut h = History::new("sys");
        for n in 0..4 {
            exchange(&mut h, n, 1000);
        }
        let start = h.len();
        h.push(Message::new(Role::User, "now"));
        let trim = h.trim_to_fit(start, 4200).expect("trimmed");
        assert_eq!(trim.results_dropped, 4);
        assert!(
            trim.messages_dropped > 0 && trim.messages_dropped.is_multiple_of(4),
            "{trim:?}"
        );
        assert_eq!(h.messages()[1].role, Role::User);
        assert_eq!(h.dropped(), trim.messages_dropped);
        assert_eq!(h.messages()[0].content, "sys");
        assert_eq!(h.carried_bytes(), recount(&h));
        paired(&h);
    }

    #[test]
    fn this_turns_latest_round_is_kept_and_earlier_rounds_stubbed_last() {
        let mut h = History::new("sys");
        let start = h.len();
        h.push(Message::new(Role::User, "now"));
        for n in 0..3 {
            let c = call(&format!("t{n}"));
            h.push(Message {
                tool_calls: vec![c.clone()],
                ..Message::new(Role::Assistant, "")
            });
            h.push(Message::tool_result(&c, "x".repeat(2000)));
        }
        let trim = h.trim_to_fit(start, 3000).expect("trimmed");
        assert_eq!(trim.results_dropped, 2);
        assert_eq!(h.messages()[1].content, "now");
        assert_eq!(
            h.messages()[7].content.len(),
            2000,
            "the latest result stays"
        );
        assert_eq!(h.carried_bytes(), recount(&h));
        paired(&h);
        // With nothing else left, the latest result goes too.
        let last = h.trim_to_fit(start, usize::MAX).expect("trimmed");
        assert_eq!(last.results_dropped, 1);
        assert_eq!(h.messages()[7].content, DROPPED_RESULT);
    }

    #[test]
    fn nothing_to_free_is_none() {
        let mut h = History::new("sys");
        h.push(Message::new(Role::User, "now"));
        assert_eq!(h.trim_to_fit(1, 100), None);
        assert_eq!(h.len(), 2);
    }

    #[test]
    fn the_share_to_free_comes_from_the_servers_numbers_or_is_half() {
        let llama = "request (9000 tokens) exceeds the available context size (4096 tokens)";
        // 9000 bytes sent, 4904/9000 of it over, plus a tenth.
        assert_eq!(bytes_to_free(llama, 9000, 100_000), 4904 + 900);
        // Never more than can go.
        assert_eq!(bytes_to_free(llama, 9000, 100), 100);
        let ollama = "the input length exceeds the context length";
        assert_eq!(bytes_to_free(ollama, 9000, 3001), 1501);
        // Numbers in an unknown phrasing are not guessed at.
        let unknown = "context length 4096 exceeded by a prompt of 8192";
        assert_eq!(bytes_to_free(unknown, 8192, 3001), 1501);
        assert_eq!(
            bytes_to_free("", usize::MAX, usize::MAX),
            usize::MAX / 2 + 1
        );
        assert!(
            bytes_to_free(llama, usize::MAX, usize::MAX) > 0,
            "no overflow in the estimate"
        );
    }

    #[test]
    fn a_reply_share_that_fills_the_window_is_not_trimmed_for() {
        let vllm = "This model's maximum context length is 4096 tokens. However, you requested 4896 tokens (800 in the messages, 4096 in the completion). Please reduce the length of the messages or completion.";
        assert!(output_fills_window(vllm));
        assert_eq!(completion_share(vllm), Some(4096));
        // No completion share, or one smaller than the window: trimming can help.
        for other in [
            "request (9000 tokens) exceeds the available context size (4096 tokens)",
            "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4000 in the messages, 1000 in the completion).",
            "the input length exceeds the context length",
            " in the completion",
            "",
        ] {
            assert!(!output_fills_window(other), "{other}");
        }
        // Current vLLM says it another way.
        let vllm_now = "'max_tokens' or 'max_completion_tokens' is too large: 4096. This model's maximum context length is 4096 tokens and your request has 800 input tokens (4096 > 4096 - 800).";
        assert!(output_fills_window(vllm_now));
        assert_eq!(sizes(vllm_now), Some((4896, 4096)));
        let vllm_room = "'max_tokens' or 'max_completion_tokens' is too large: 1000. This model's maximum context length is 4096 tokens and your request has 3500 input tokens (1000 > 4096 - 3500).";
        assert!(!output_fills_window(vllm_room));
        // 404 of the prompt's 3500 tokens over: that share of 7000 bytes, plus a tenth.
        assert_eq!(bytes_to_free(vllm_room, 7000, 7000), 808 + 700);
        // Whatever comes before the number, it is read without cutting a character.
        for neighbour in ["\u{ff0c}", "\u{a0}", "\u{2026}", "é"] {
            let text = format!(
                "maximum context length is 4096 tokens. However, you requested 4896 tokens (800 in the messages{neighbour}4096 in the completion)"
            );
            assert!(output_fills_window(&text), "{text}");
            let text = format!("{neighbour} in the completion");
            assert!(!output_fills_window(&text), "{text}");
        }
    }

    #[test]
    fn each_known_phrasing_gives_the_prompt_and_the_window() {
        let llama = "request (9000 tokens) exceeds the available context size (4096 tokens)";
        assert_eq!(sizes(llama), Some((9000, 4096)));
        let openai = "This model's maximum context length is 4096 tokens. However, you requested 5000 tokens (4900 in the messages, 100 in the completion). Please reduce the length of the messages or completion.";
        assert_eq!(sizes(openai), Some((5000, 4096)));
        // 904 of the messages' 4900 tokens over: that share of the 10000 bytes sent, plus
        // a tenth. Not nearly everything.
        assert_eq!(bytes_to_free(openai, 10_000, 10_000), 1844 + 1000);
        assert!(!output_fills_window(openai));
        let lm_studio = "Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or provide a shorter input";
        assert_eq!(sizes(lm_studio), Some((5000, 4096)));
        for none in [
            "the input length exceeds the context length",
            "request (4000 tokens) exceeds the available context size (4096 tokens)",
            "request (9000 tokens) exceeds the available context size (0 tokens)",
            "request (tokens) exceeds the available context size (4096 tokens)",
            "maximum context length is 4096 tokens",
            "",
        ] {
            assert_eq!(sizes(none), None, "{none}");
        }
    }

    #[test]
    fn a_huge_prompt_size_in_the_refusal_neither_panics_nor_wraps() {
        let huge =
            "request (1000000000000000000 tokens) exceeds the available context size (4096 tokens)";
        // Nearly all of it is over the window: everything that can go, no more.
        assert_eq!(bytes_to_free(huge, 123_457, 50_000), 50_000);
        assert_eq!(bytes_to_free(huge, usize::MAX, 7), 7);
        let beyond = "request (99999999999999999999999 tokens) exceeds the available context size (4096 tokens)";
        assert_eq!(sizes(beyond), None, "too big for 64 bits: not a size");
        assert_eq!(bytes_to_free(beyond, 9000, 3001), 1501);
    }
}
