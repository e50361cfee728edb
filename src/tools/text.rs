//! Turning file bytes into the lines a tool prints: lossy UTF-8 and clipped long lines.
//!
//! Every tool that prints file content goes through [`clip_line`], so the per-line budget
//! and its marker are the same everywhere.

/// Appended to a line that was cut at `max_line_chars`, so the model knows it is not
/// seeing the whole line.
pub(crate) const CLIP_MARKER: &str = " [...clipped]";

/// Renders one line (without its line terminator) as text: invalid UTF-8 is replaced
/// with U+FFFD, a trailing `\r` is dropped, and anything past `max_chars` characters is cut
/// and marked with [`CLIP_MARKER`]. The result never exceeds
/// `max_chars + CLIP_MARKER.len()` characters.
pub(crate) fn clip_line(line: &[u8], max_chars: usize) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    // Four bytes per char at most: looking further cannot change the result.
    let window = &line[..line
        .len()
        .min(max_chars.saturating_mul(4).saturating_add(4))];
    let text = String::from_utf8_lossy(window);
    match text.char_indices().nth(max_chars) {
        Some((cut, _)) => format!("{}{CLIP_MARKER}", &text[..cut]),
        None if window.len() < line.len() => format!("{text}{CLIP_MARKER}"),
        None => text.into_owned(),
    }
}

/// The first line of `text`, at most `max` characters.
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    let mut out: String = line.chars().take(max).collect();
    if out.len() < line.len() || text.lines().nth(1).is_some() {
        out.push('…');
    }
    out
}

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
pub(crate) fn quoted(text: &str) -> std::borrow::Cow<'_, str> {
    let plain = |c: char| c.is_ascii_alphanumeric() || "._-/+@=,:~%*".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        std::borrow::Cow::Borrowed(text)
    } else {
        std::borrow::Cow::Owned(code(text))
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

    #[test]
    fn clipping_edges() {
        assert_eq!(clip_line(b"abc", 3), "abc");
        assert_eq!(clip_line(b"abcd", 3), format!("abc{CLIP_MARKER}"));
        assert_eq!(clip_line(b"abc\r", 3), "abc");
        assert_eq!(clip_line("ééé".as_bytes(), 2), format!("éé{CLIP_MARKER}"));
        assert_eq!(clip_line(b"a\xffb", 10), "a\u{fffd}b");
        assert_eq!(clip_line(b"", 1), "");
    }

    #[test]
    fn never_longer_than_budget_plus_marker() {
        let long = vec![b'x'; 10_000];
        for max in [1, 2, 7, 500] {
            assert_eq!(
                clip_line(&long, max).chars().count(),
                max + CLIP_MARKER.len()
            );
        }
    }
}
