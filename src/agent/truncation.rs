//! Noticing that Ollama silently cut a prompt to fit `num_ctx`.
//!
//! When a prompt is longer than the context window, Ollama (by default) answers 200 all
//! the same: it drops the oldest messages, and depending on the version keeps only about
//! half the window or the head and tail of the prompt. What goes first is often the
//! system prompt and the tool definitions, so the model "forgets" its tools while the
//! reply looks normal. The only trace on the client's side is `prompt_eval_count`.
//!
//! metron compares it with its own estimate of what it sent. The estimate counts five
//! bytes per token, fewer tokens than any real tokenizer gives for code or English, so a
//! suspicion is raised only when the evidence is strong: the estimate alone is over
//! `num_ctx` (the prompt cannot have fit), or the server reports the tell-tale count of a
//! half-window cut while the estimate is well above it. Prompt caching, which can lower
//! `prompt_eval_count` on later requests, is unlikely to land on that exact count. Five
//! bytes per token is low for code and prose, not for every text: long runs of one
//! repeated character can pack more bytes into a token.

use serde::Serialize;

/// Bytes per token for a deliberately low estimate of a prompt's tokens.
const BYTES_PER_TOKEN: u64 = 5;

/// How close to `num_ctx / 2` a count must be to look like a half-window cut (newer
/// servers report `num_ctx / 2` plus the few tokens they always keep).
const HALF_WINDOW_SLACK: u64 = 16;

/// Why metron believes a prompt was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PromptCut {
    /// metron's low estimate of the prompt it sent, in tokens.
    pub estimated_tokens: u64,
    /// What Ollama says it evaluated (`prompt_eval_count`; 0 when omitted).
    pub evaluated_tokens: u64,
    /// The context window asked for.
    pub num_ctx: u64,
}

/// A [`PromptCut`] when a request of `sent_bytes` (message text plus tool definitions)
/// that Ollama reports as `evaluated` tokens was probably cut to fit `num_ctx`.
pub(crate) fn suspect(sent_bytes: usize, evaluated: u64, num_ctx: u64) -> Option<PromptCut> {
    if num_ctx == 0 {
        return None;
    }
    let estimated = u64::try_from(sent_bytes).unwrap_or(u64::MAX) / BYTES_PER_TOKEN;
    let cannot_fit = estimated > num_ctx;
    let half = num_ctx / 2;
    let half_window_cut = evaluated.abs_diff(half) <= HALF_WINDOW_SLACK
        && estimated.saturating_mul(2) > evaluated.saturating_mul(3);
    (cannot_fit || half_window_cut).then_some(PromptCut {
        estimated_tokens: estimated,
        evaluated_tokens: evaluated,
        num_ctx,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prompt_over_the_window_is_suspect_whatever_the_server_says() {
        for evaluated in [0, 2048, 1026, 4000] {
            let cut = suspect(20_000, evaluated, 2048).expect("suspect");
            assert_eq!(cut.estimated_tokens, 4000);
            assert_eq!(cut.evaluated_tokens, evaluated);
        }
    }

    #[test]
    fn a_half_window_count_is_suspect_only_when_more_was_sent() {
        // 9,000 bytes is at least 1,800 tokens; 1,026 evaluated is the half-window cut.
        assert!(suspect(9_000, 1026, 2048).is_some());
        assert!(suspect(9_000, 1024 - 16, 2048).is_some());
        assert!(suspect(9_000, 1024 + 17, 2048).is_none());
        // A small prompt that happens to evaluate to that count is fine.
        assert!(suspect(4_000, 1026, 2048).is_none());
    }

    #[test]
    fn ordinary_and_cached_counts_are_fine() {
        assert!(suspect(9_000, 2400, 8192).is_none());
        // Caching lowered the count, but it is nowhere near half the window.
        assert!(suspect(30_000, 120, 8192).is_none());
        assert!(suspect(10_240, 0, 2048).is_none());
        assert!(suspect(usize::MAX, 0, 0).is_none());
    }
}
