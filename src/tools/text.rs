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

/// `text` whole on one line: its lines, trimmed, joined with a space. For a reason
/// printed inside a line of metron's own (a declined patch's "why not"), which must
/// neither be cut nor start a line of its own.
pub(crate) fn joined_lines(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

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
    fn joined_lines_keep_every_word_on_one_line() {
        let long = "use the helper in strings.go ".repeat(10);
        assert_eq!(joined_lines(&long), long.trim_end());
        assert_eq!(joined_lines("  first\n\n second \r\n"), "first second");
        assert_eq!(joined_lines(""), "");
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
