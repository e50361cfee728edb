//! The spans inside one line of the model's Markdown: code spans, emphasis,
//! strikethrough, links, autolinks and backslash escapes, as styled cells for
//! [`super::Markdown`] to place. Spans are matched within the text given (one line, or
//! the part of one before a cut), so nothing here waits for more text.

use super::{Cell, Look, push_text};

/// The deepest nesting of inline spans rendered (`**a *b `c`***`); deeper marks are shown
/// as written. Bounds the recursion on a line a model could fill with openers.
pub(super) const NESTING_MAX: usize = 8;

/// The inline spans of `text` (one line, or part of one) as cells, on top of `look`:
/// code spans, emphasis, strikethrough, links, autolinks and backslash escapes. A mark
/// with no match on the line is shown as written.
pub(super) fn inline(text: &str, look: Look, depth: usize, cells: &mut Vec<Cell>) {
    let bytes = text.as_bytes();
    let mut i = 0;
    let mut plain = 0;
    while i < bytes.len() {
        let byte = bytes[i];
        if !matches!(byte, b'\\' | b'`' | b'*' | b'_' | b'~' | b'[' | b'!' | b'<') {
            i += 1;
            continue;
        }
        push_text(&text[plain..i], look, cells);
        i = match byte {
            b'\\' => escaped(text, i, look, cells),
            b'`' => code_span(text, i, look, cells),
            b'*' | b'_' | b'~' => emphasis(text, i, look, depth, cells),
            b'[' | b'!' => link(text, i, look, depth, cells),
            _ => autolink(text, i, look, cells),
        };
        plain = i;
    }
    push_text(&text[plain..], look, cells);
}

/// The length of the run of `byte` at `at`.
fn run(text: &str, at: usize, byte: u8) -> usize {
    text.as_bytes()[at..]
        .iter()
        .take_while(|&&b| b == byte)
        .count()
}

/// A backslash escape (`\*`): the punctuation shown as itself.
fn escaped(text: &str, at: usize, look: Look, cells: &mut Vec<Cell>) -> usize {
    match text.as_bytes().get(at + 1) {
        Some(b) if b.is_ascii_punctuation() => {
            push_text(&text[at + 1..at + 2], look, cells);
            at + 2
        }
        _ => {
            push_text("\\", look, cells);
            at + 1
        }
    }
}

/// A code span: a run of backticks, the code, and a run of as many.
fn code_span(text: &str, at: usize, look: Look, cells: &mut Vec<Cell>) -> usize {
    let n = run(text, at, b'`');
    let mut j = at + n;
    while j < text.len() {
        if text.as_bytes()[j] != b'`' {
            j += 1;
            continue;
        }
        let m = run(text, j, b'`');
        if m == n {
            let code = &text[at + n..j];
            let code = match code.strip_prefix(' ').and_then(|c| c.strip_suffix(' ')) {
                Some(inner) if !inner.trim().is_empty() => inner,
                _ => code,
            };
            push_text(code, look.with(Look::CODE), cells);
            return j + m;
        }
        j += m;
    }
    push_text(&text[at..at + n], look, cells);
    at + n
}

/// Emphasis: `*a*` or `_a_` italic, `**a**` or `__a__` bold, `***a***` both, `~~a~~`
/// struck. An opener is followed by a non-space, a closer preceded by one; `_` inside a
/// word (`snake_case`) is a letter, not a mark.
fn emphasis(text: &str, at: usize, look: Look, depth: usize, cells: &mut Vec<Cell>) -> usize {
    let mark = text.as_bytes()[at];
    let n = run(text, at, mark);
    let style = match (mark, n) {
        (b'~', 2) => Some(Look::STRIKE),
        (b'~', _) => None,
        (_, 1) => Some(Look::ITALIC),
        (_, 2) => Some(Look::BOLD),
        (_, 3) => Some(Look::BOLD.with(Look::ITALIC)),
        _ => None,
    };
    let word = |c: Option<char>| c.is_some_and(char::is_alphanumeric);
    let opens = text[at + n..]
        .chars()
        .next()
        .is_some_and(|c| !c.is_whitespace())
        && !(mark == b'_' && word(text[..at].chars().next_back()));
    if let (Some(style), true, true) = (style, opens, depth < NESTING_MAX) {
        let mut j = at + n;
        while j < text.len() {
            if text.as_bytes()[j] != mark {
                j += 1;
                continue;
            }
            let m = run(text, j, mark);
            let closes = m == n
                && j > at + n
                && text[..j]
                    .chars()
                    .next_back()
                    .is_some_and(|c| !c.is_whitespace())
                && !(mark == b'_' && word(text[j + m..].chars().next()));
            if closes {
                inline(&text[at + n..j], look.with(style), depth + 1, cells);
                return j + m;
            }
            j += m;
        }
    }
    push_text(&text[at..at + n], look, cells);
    at + n
}

/// A link `[text](url)` as `text (url)` (just the URL when the text is the URL), or an
/// image `![alt](url)` as `alt (url)`.
fn link(text: &str, at: usize, look: Look, depth: usize, cells: &mut Vec<Cell>) -> usize {
    let image = text.as_bytes()[at] == b'!';
    let open = if image { at + 1 } else { at };
    let parsed = if text.as_bytes().get(open) == Some(&b'[') && depth < NESTING_MAX {
        link_parts(text, open)
    } else {
        None
    };
    let Some((label, url, end)) = parsed else {
        push_text(&text[at..=at], look, cells);
        return at + 1;
    };
    if label != url {
        inline(label, look.with(Look::UNDERLINE), depth + 1, cells);
        push_text(" (", look, cells);
    }
    push_text(url, look.with(Look::DIM), cells);
    if label != url {
        push_text(")", look, cells);
    }
    end
}

/// The text, the URL and the end of the link whose `[` is at `open`, if it is one.
fn link_parts(text: &str, open: usize) -> Option<(&str, &str, usize)> {
    let bytes = text.as_bytes();
    let mut nesting = 0usize;
    let mut j = open;
    let close = loop {
        match bytes.get(j)? {
            b'\\' => j += 1,
            b'[' => nesting += 1,
            b']' => {
                nesting -= 1;
                if nesting == 0 {
                    break j;
                }
            }
            _ => {}
        }
        j += 1;
    };
    if bytes.get(close + 1) != Some(&b'(') {
        return None;
    }
    let start = close + 2;
    let mut parens = 0usize;
    let mut j = start;
    let url_end = loop {
        match bytes.get(j)? {
            b'(' => parens += 1,
            b')' if parens == 0 => break j,
            b')' => parens -= 1,
            b' ' | b'\t' => break j,
            _ => {}
        }
        j += 1;
    };
    // A title (`"..."`) after the URL is left out.
    let end = if bytes[url_end] == b')' {
        url_end
    } else {
        url_end + text[url_end..].find(')')?
    };
    let url = &text[start..url_end];
    let url = url
        .strip_prefix('<')
        .and_then(|u| u.strip_suffix('>'))
        .unwrap_or(url);
    Some((&text[open + 1..close], url, end + 1))
}

/// An autolink `<https://...>` shown as its URL.
fn autolink(text: &str, at: usize, look: Look, cells: &mut Vec<Cell>) -> usize {
    let rest = &text[at + 1..];
    let url = rest.find('>').map(|end| &rest[..end]).filter(|url| {
        ["http://", "https://", "mailto:"]
            .iter()
            .any(|scheme| url.starts_with(scheme))
            && !url.contains([' ', '<'])
    });
    match url {
        Some(url) => {
            push_text(url, look.with(Look::DIM), cells);
            at + url.len() + 2
        }
        None => {
            push_text("<", look, cells);
            at + 1
        }
    }
}
