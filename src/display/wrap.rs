//! Breaking metron's messages into lines that fit the terminal, instead of cutting them.
//!
//! A reason is only useful whole: the remedy (`allowed_project_programs`, `--yes`, `ollama
//! pull`) usually comes last, exactly where a cut with `…` used to fall, and a terminal
//! left to wrap a long line itself breaks words in the middle. So every message metron
//! writes to a terminal goes through [`wrap`]: it breaks at spaces, measures in terminal
//! columns (a CJK character or an emoji takes two, a combining mark none), and indents
//! continuation lines, so they read as part of the line above and never start at the
//! first column, where metron's own marks are. Only a word wider than the room on a line
//! is broken, because nothing else would fit.
//!
//! Off a terminal (a pipe, a CI log) nothing is wrapped: each message stays on one line,
//! whole, for `grep`.

use std::borrow::Cow;
use std::io::IsTerminal;

use unicode_width::UnicodeWidthChar;

use super::Stream;

/// The columns a tab is counted as: the most a terminal moves for one. Counting the most
/// means a line may be wrapped a little early, never that it overflows.
const TAB_COLUMNS: usize = 8;

/// The hanging indent of metron's messages: continuation lines start two columns in, under
/// the text of a status line (after `▪ `).
pub(crate) const HANG: usize = 2;

/// The columns of a terminal that does not say its size (a bare pseudo-terminal): the
/// classic 80.
const DEFAULT_COLUMNS: usize = 80;

/// The columns `stream` has, when it is a terminal; `None` for a pipe or a file, where
/// nothing is wrapped.
pub(crate) fn columns(stream: Stream) -> Option<usize> {
    let size = match stream {
        Stream::Stdout => {
            let out = std::io::stdout();
            if !out.is_terminal() {
                return None;
            }
            rustix::termios::tcgetwinsize(&out)
        }
        Stream::Stderr => {
            let err = std::io::stderr();
            if !err.is_terminal() {
                return None;
            }
            rustix::termios::tcgetwinsize(&err)
        }
    };
    Some(
        size.ok()
            .map(|size| usize::from(size.ws_col))
            .filter(|&columns| columns > 0)
            .unwrap_or(DEFAULT_COLUMNS),
    )
}

/// `text` as it should be written to `stream`: wrapped to the terminal's width with
/// [`wrap`] when `stream` is a terminal, unchanged otherwise. `text` must already be
/// terminal-safe: the escapes are what the terminal shows, so they are what is measured.
pub(crate) fn wrapped_for(stream: Stream, text: &str, hang: usize) -> Cow<'_, str> {
    match columns(stream) {
        Some(width) => Cow::Owned(wrap(text, width, hang)),
        None => Cow::Borrowed(text),
    }
}

/// The columns `c` takes on a terminal.
fn char_columns(c: char) -> usize {
    match c {
        '\t' => TAB_COLUMNS,
        // What `terminal_safe` leaves of the controls is newline and tab; anything else
        // that reaches here counts one, like the escape it would be shown as starts.
        c => c.width().unwrap_or(1),
    }
}

/// The columns `text` takes on a terminal.
pub(crate) fn text_columns(text: &str) -> usize {
    text.chars().map(char_columns).sum()
}

/// `text` broken into lines of at most `width` terminal columns, at spaces.
///
/// Each line of `text` (split at `\n`) is wrapped on its own; one that fits is kept
/// exactly, spaces and all (a table's padding survives). Continuation lines are indented
/// by the line's own leading spaces plus `hang`, so an indented item continues under its
/// text. The spaces at a break are dropped. A word wider than the room left on a line is
/// the only thing broken, at the last character that fits. A trailing newline is kept.
///
/// When `width` leaves no room past the indent, continuation lines are not indented: text
/// that does not fit anyway is better shown than pushed off the screen.
pub(crate) fn wrap(text: &str, width: usize, hang: usize) -> String {
    let width = width.max(1);
    let mut out = String::with_capacity(text.len() + 16);
    for (n, line) in text.split('\n').enumerate() {
        if n > 0 {
            out.push('\n');
        }
        wrap_line(line, width, hang, &mut out);
    }
    out
}

/// One line of [`wrap`], appended to `out`.
fn wrap_line(line: &str, width: usize, hang: usize, out: &mut String) {
    if text_columns(line) <= width {
        out.push_str(line);
        return;
    }
    let body = line.trim_start_matches(' ');
    let lead = line.len() - body.len();
    let indent = lead + hang;
    // Room for at least a few columns of text on a continuation line, or no indent.
    let indent = if indent + 4 <= width { indent } else { 0 };
    let mut row = Row {
        out,
        used: 0,
        width,
        indent,
        empty: true,
    };
    row.push_str(&line[..lead], lead);
    for (gap, word) in words(body) {
        let columns = text_columns(word);
        if !row.empty && row.used + gap + columns <= width {
            row.push_str(&" ".repeat(gap), gap);
            row.push_str(word, columns);
            continue;
        }
        if !row.empty {
            row.break_line();
        }
        row.push_word(word, columns);
    }
}

/// The words of a line, each with the number of spaces before it (none before the first).
fn words(body: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = body;
    std::iter::from_fn(move || {
        let trimmed = rest.trim_start_matches(' ');
        let gap = rest.len() - trimmed.len();
        if trimmed.is_empty() {
            return None;
        }
        let end = trimmed.find(' ').unwrap_or(trimmed.len());
        let (word, after) = trimmed.split_at(end);
        rest = after;
        Some((gap, word))
    })
}

/// The line being filled.
struct Row<'o> {
    out: &'o mut String,
    /// Columns used on the current line.
    used: usize,
    width: usize,
    /// The indent of continuation lines.
    indent: usize,
    /// No word yet on the current line.
    empty: bool,
}

impl Row<'_> {
    fn push_str(&mut self, text: &str, columns: usize) {
        self.out.push_str(text);
        self.used += columns;
        if !text.trim_start_matches(' ').is_empty() {
            self.empty = false;
        }
    }

    /// Ends the current line and starts a continuation line.
    fn break_line(&mut self) {
        self.out.push('\n');
        self.out.push_str(&" ".repeat(self.indent));
        self.used = self.indent;
        self.empty = true;
    }

    /// Places a word at the start of a line, breaking it where it is wider than the room.
    fn push_word(&mut self, word: &str, columns: usize) {
        if self.used + columns <= self.width {
            self.push_str(word, columns);
            return;
        }
        for c in word.chars() {
            let columns = char_columns(c);
            // A character always goes on a line with nothing else, even when it alone is
            // wider than the terminal: otherwise it could never be placed.
            if !self.empty && self.used + columns > self.width {
                self.break_line();
            }
            self.push_str(c.encode_utf8(&mut [0; 4]), columns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every line of `text` within `width` columns.
    fn assert_fits(text: &str, width: usize) {
        for line in text.lines() {
            assert!(
                text_columns(line) <= width,
                "{} columns > {width}: {line:?}\n{text}",
                text_columns(line)
            );
        }
    }

    /// The words of `text` in order: a word split in two shows up as two.
    fn words_of(text: &str) -> Vec<&str> {
        text.split_whitespace().collect()
    }

    #[test]
    fn a_line_that_fits_is_kept_exactly() {
        assert_eq!(
            wrap("model  \"qwen3\"  (default)", 80, 2),
            "model  \"qwen3\"  (default)"
        );
        assert_eq!(wrap("", 80, 2), "");
        assert_eq!(wrap("a\nb\n", 80, 2), "a\nb\n");
    }

    #[test]
    fn a_line_is_broken_at_spaces_with_a_hanging_indent() {
        let text = "not run: `.venv/bin/pytest` is a path and is refused: run_command runs only programs found by name on PATH outside the project, or the project programs the user lists in `allowed_project_programs`, with their arguments";
        let wrapped = wrap(text, 40, 2);
        assert_fits(&wrapped, 40);
        assert_eq!(words_of(&wrapped), words_of(text));
        for line in wrapped.lines().skip(1) {
            assert!(
                line.starts_with("  ") && !line.starts_with("   "),
                "{line:?}"
            );
        }
        assert!(wrapped.contains("`allowed_project_programs`,"), "{wrapped}");
        assert_eq!(wrap("aaa bbb ccc ddd", 7, 2), "aaa bbb\n  ccc\n  ddd");
    }

    #[test]
    fn exactly_the_width_fits_and_one_more_column_wraps() {
        assert_eq!(wrap("abcd efgh", 9, 0), "abcd efgh");
        assert_eq!(wrap("abcd efghi", 9, 0), "abcd\nefghi");
        // The spaces at a break are dropped, not carried to either line.
        assert_eq!(wrap("abcd    efghi", 9, 0), "abcd\nefghi");
    }

    #[test]
    fn only_a_word_wider_than_the_line_is_broken() {
        let long = "x".repeat(25);
        let wrapped = wrap(&format!("see {long} now"), 10, 2);
        assert_eq!(wrapped, "see\n  xxxxxxxx\n  xxxxxxxx\n  xxxxxxxx\n  x now");
        assert_fits(&wrapped, 10);
    }

    #[test]
    fn wide_characters_take_two_columns() {
        // CJK: each character is two columns, so three fit in 6 and a fourth wraps.
        let wrapped = wrap("日本語 のパス です", 8, 0);
        assert_eq!(wrapped, "日本語\nのパス\nです");
        assert_fits(&wrapped, 8);
        // An emoji is two columns too; a word of them wider than the line is broken
        // between characters, never inside one.
        let wrapped = wrap("ok 🦀🦀🦀🦀🦀", 6, 0);
        assert_eq!(wrapped, "ok\n🦀🦀🦀\n🦀🦀");
        assert_fits(&wrapped, 6);
        // A combining mark takes no column.
        assert_eq!(wrap("e\u{301}e\u{301} ab", 5, 0), "e\u{301}e\u{301} ab");
        // One wide character where only one column is left goes to the next line.
        assert_eq!(wrap("abc日", 4, 0), "abc\n日");
    }

    #[test]
    fn an_indented_line_continues_under_its_text() {
        let text = "  run_command: runs `go test` by name on PATH, in a sandbox";
        let wrapped = wrap(text, 30, 2);
        assert_fits(&wrapped, 30);
        assert_eq!(words_of(&wrapped), words_of(text));
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(lines[0].starts_with("  run_command:"), "{wrapped}");
        for line in &lines[1..] {
            assert!(
                line.starts_with("    ") && !line.starts_with("     "),
                "{line:?}"
            );
        }
        // A column layout: the help text continues under its column.
        let help = format!(
            "{:<15}{}",
            "/config", "print the effective settings and which layer each came from"
        );
        let wrapped = wrap(&help, 50, 15);
        assert_fits(&wrapped, 50);
        for line in wrapped.lines().skip(1) {
            assert_eq!(line.len() - line.trim_start().len(), 15, "{line:?}");
        }
    }

    #[test]
    fn a_width_too_narrow_for_the_indent_still_shows_everything() {
        let wrapped = wrap("aa bb cc", 4, 10);
        assert_eq!(wrapped, "aa\nbb\ncc");
        // Even one column: every character is shown, one per line.
        assert_eq!(wrap("ab", 1, 2), "a\nb");
        assert_eq!(wrap("日", 1, 0), "日");
    }

    #[test]
    fn a_tab_counts_as_the_most_it_can_take() {
        assert_eq!(text_columns("a\tb"), 10);
        assert_fits(&wrap("a\tb c d e", 10, 0), 10);
    }
}
