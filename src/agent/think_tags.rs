//! Reasoning a model wrote into its reply text as `<think>...</think>`.
//!
//! Ollama separates reasoning into `thinking` for the models and versions it knows;
//! older servers, and models whose template it does not recognise, leave the block at
//! the head of `content`. Left there it would be printed as part of the answer by `-p`,
//! carried in history on every request, and hide a tool call written after it.

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// `(reasoning, rest)` when `content` starts with a closed `<think>` block (after any
/// whitespace); `None` otherwise, including an unclosed block, which is left as text.
pub(crate) fn split(content: &str) -> Option<(&str, &str)> {
    let inside = content.trim_start().strip_prefix(OPEN)?;
    let (reasoning, rest) = inside.split_once(CLOSE)?;
    Some((reasoning.trim(), rest.trim_start()))
}

/// Whether `content` opens a `<think>` block it never closes (a reply cut short while
/// reasoning): everything in it is a draft.
pub(crate) fn starts_unclosed(content: &str) -> bool {
    content.trim_start().starts_with(OPEN) && split(content).is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_leading_block_is_split_off() {
        assert_eq!(
            split("<think>\nThe user wants Greet.\n</think>\n\nGreet is in greet.go."),
            Some(("The user wants Greet.", "Greet is in greet.go."))
        );
        assert_eq!(split("  <think></think>answer"), Some(("", "answer")));
    }

    #[test]
    fn an_unclosed_block_is_told_apart() {
        assert!(starts_unclosed("  <think>still going"));
        assert!(!starts_unclosed("<think>done</think>answer"));
        assert!(!starts_unclosed("answer <think>"));
    }

    #[test]
    fn anything_else_is_left_alone() {
        for content in [
            "Greet is in greet.go.",
            "<think>never closed",
            "Text first <think>then this</think>",
            "",
        ] {
            assert_eq!(split(content), None, "{content}");
        }
    }
}
