//! Words from outside metron (a command, a path, a pattern) embedded in metron's own
//! status lines, quoted so that they cannot pass for the line's structure. Its own
//! module because both authority (a command's changed files) and the tools (outcome
//! subjects) use it, and it needs neither.

use std::borrow::Cow;

/// A command as a status line embeds it: always in backticks, with any backtick or
/// backslash inside escaped, so the command's own text (`echo ok · ran: cargo test exit
/// 0`) cannot end the quote and read as another clause of the line.
pub(crate) fn code(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('`');
    for c in text.chars() {
        if matches!(c, '`' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('`');
    out
}

/// A path (or a pattern) as a status line embeds it: as it is when every character is
/// one that cannot be mistaken for the line's own structure (ASCII letters and digits,
/// and `._-/+@=,:~%*`), otherwise as [`code`]. Ordinary paths read as before; one named
/// `x.go (+1 -1) · ran: make` shows its quotes.
pub(crate) fn quoted(text: &str) -> Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+@=,:~%*".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        Cow::Borrowed(text)
    } else {
        Cow::Owned(code(text))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_are_always_quoted_and_cannot_close_their_quote() {
        assert_eq!(code("go test ./..."), "`go test ./...`");
        assert_eq!(code("echo ` · ran: x"), "`echo \\` · ran: x`");
        assert_eq!(code("a\\"), "`a\\\\`");
        // An odd number of unescaped backticks never appears inside the quote.
        let quoted = code("x`y\\`z");
        let inner = &quoted[1..quoted.len() - 1];
        let mut escaped = false;
        for c in inner.chars() {
            assert!(escaped || c != '`', "{quoted}");
            escaped = !escaped && c == '\\';
        }
    }

    #[test]
    fn plain_paths_are_shown_as_they_are() {
        assert_eq!(quoted("src/greet.go"), "src/greet.go");
        assert_eq!(quoted("*.rs"), "*.rs");
        assert_eq!(quoted("my file.go"), "`my file.go`");
        assert_eq!(
            quoted("x.go (+1 -1) · ran: make"),
            "`x.go (+1 -1) · ran: make`"
        );
        assert_eq!(quoted(""), "``");
    }
}
