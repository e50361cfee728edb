//! The keys a TOML line assigns or opens, read the way TOML reads them.
//!
//! A line scan that looked for the text `alias.` missed `alias . fmt = "run"`,
//! `"alias".fmt = "run"` and `'alias'.fmt = "run"`, which cargo reads as the same key. So a
//! key here is parsed: dotted segments split outside quotes, whitespace around each dot
//! dropped, bare segments, basic strings (escapes decoded) and literal strings unquoted. A
//! key is looked for where TOML can start one: at the start of the line (a table header
//! `[a.b]`, `[[a.b]]`, or `a.b = ...`) and after every `{` or `,` outside strings (inline
//! tables, and erring towards warning, the items of an array). Text that only *looks* like
//! a key inside a string is skipped, but a line inside a multi-line string is read as if it
//! were not in one: that can only add a warning.

/// One segment of a key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Segment {
    /// The key segment as TOML reads it, unquoted and unescaped.
    Name(String),
    /// A basic string with an escape that is not valid TOML; what a parser makes of it
    /// is not known, so the caller warns.
    Unreadable,
}

/// A key found on a line: its segments, and whether it names a table (`[x]`, `[[x]]`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Key {
    pub(super) segments: Vec<Segment>,
    pub(super) header: bool,
}

/// Every key `line` assigns or opens, in order.
pub(super) fn keys(line: &str) -> Vec<Key> {
    let trimmed = line.trim_start_matches([' ', '\t']);
    if let Some(header) = trimmed.strip_prefix('[') {
        let header = header.strip_prefix('[').unwrap_or(header);
        return dotted(header, ']')
            .map(|(segments, _)| Key {
                segments,
                header: true,
            })
            .into_iter()
            .collect();
    }
    let mut found = Vec::new();
    for start in key_starts(line) {
        if let Some((segments, _)) = dotted(&line[start..], '=') {
            found.push(Key {
                segments,
                header: false,
            });
        }
    }
    found
}

/// Byte offsets where a key may start: the line's start, and after each `{` or `,` that is
/// not inside a string or a comment.
fn key_starts(line: &str) -> Vec<usize> {
    let mut starts = vec![0];
    let mut chars = line.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '#' => break,
            '{' | ',' => starts.push(i + 1),
            '"' | '\'' => {
                // Skip the string; an unclosed one (a multi-line string) ends the line.
                let Some(end) = string_end(&line[i..], c) else {
                    break;
                };
                while chars.peek().is_some_and(|(j, _)| *j < i + end) {
                    chars.next();
                }
            }
            _ => {}
        }
    }
    starts
}

/// The length of the string that opens `text` (quoted by `quote`), closing quote
/// included, or `None` when it does not close on this line. A tripled quote opens a
/// multi-line string, which is treated as not closing.
fn string_end(text: &str, quote: char) -> Option<usize> {
    let tripled: String = std::iter::repeat_n(quote, 3).collect();
    if text.starts_with(&tripled) {
        let rest = &text[3..];
        return rest.find(&tripled).map(|at| at + 6);
    }
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote == '"' => escaped = true,
            _ if c == quote => return Some(i + c.len_utf8()),
            _ => {}
        }
    }
    None
}

/// A dotted key at the start of `text` (leading whitespace allowed) that is followed by
/// `end` (`=` for an assignment, `]` for a header): its segments and the rest after `end`.
fn dotted(text: &str, end: char) -> Option<(Vec<Segment>, &str)> {
    let mut rest = text.trim_start_matches([' ', '\t']);
    let mut segments = Vec::new();
    loop {
        let (segment, after) = segment(rest)?;
        segments.push(segment);
        rest = after.trim_start_matches([' ', '\t']);
        if let Some(after_dot) = rest.strip_prefix('.') {
            rest = after_dot.trim_start_matches([' ', '\t']);
            continue;
        }
        return rest.strip_prefix(end).map(|after| (segments, after));
    }
}

/// One key segment at the start of `text`, and what follows it.
fn segment(text: &str) -> Option<(Segment, &str)> {
    if let Some(body) = text.strip_prefix('\'') {
        let close = body.find('\'')?;
        return Some((Segment::Name(body[..close].to_owned()), &body[close + 1..]));
    }
    if text.starts_with('"') {
        let len = string_end(text, '"')?;
        if text.starts_with("\"\"\"") {
            return None;
        }
        return Some((unescape(&text[1..len - 1]), &text[len..]));
    }
    let len = text
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
        .unwrap_or(text.len());
    (len > 0).then(|| (Segment::Name(text[..len].to_owned()), &text[len..]))
}

/// The content of a basic string with its escapes decoded (TOML 1.0's, and 1.1's `\e`
/// and `\xHH`).
fn unescape(body: &str) -> Segment {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next() {
            Some('b') => Some('\u{8}'),
            Some('t') => Some('\t'),
            Some('n') => Some('\n'),
            Some('f') => Some('\u{c}'),
            Some('r') => Some('\r'),
            Some('e') => Some('\u{1b}'),
            Some('"') => Some('"'),
            Some('\\') => Some('\\'),
            Some('x') => hex(&mut chars, 2),
            Some('u') => hex(&mut chars, 4),
            Some('U') => hex(&mut chars, 8),
            _ => None,
        };
        match decoded {
            Some(c) => out.push(c),
            None => return Segment::Unreadable,
        }
    }
    Segment::Name(out)
}

/// The character spelled by the next `digits` hex digits, if they are there and valid.
fn hex(chars: &mut std::str::Chars<'_>, digits: usize) -> Option<char> {
    let text: String = chars.by_ref().take(digits).collect();
    if text.len() != digits || !text.chars().all(|c| c.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(&text, 16).ok().and_then(char::from_u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(line: &str) -> Vec<Vec<String>> {
        keys(line)
            .into_iter()
            .map(|k| {
                k.segments
                    .into_iter()
                    .map(|s| match s {
                        Segment::Name(n) => n,
                        Segment::Unreadable => "?".to_owned(),
                    })
                    .collect()
            })
            .collect()
    }

    #[test]
    fn keys_are_split_outside_quotes_and_unquoted() {
        let alias_fmt = vec![vec!["alias".to_owned(), "fmt".to_owned()]];
        for line in [
            "alias.fmt = \"run\"",
            "alias . fmt = \"run\"",
            "\t alias\t.\tfmt=\"run\"",
            "\"alias\".fmt = \"run\"",
            "'alias'.fmt = \"run\"",
            "'alias'.'fmt' = 'run'",
            "\"ali\\u0061s\".\"fmt\" = \"run\"",
            "\"ali\\x61s\".fmt = \"run\"",
        ] {
            assert_eq!(names(line), alias_fmt, "{line}");
        }
        assert_eq!(names("[ alias ]"), vec![vec!["alias".to_owned()]]);
        assert_eq!(names("[ \"alias\" ]"), vec![vec!["alias".to_owned()]]);
        assert_eq!(names("[['alias']]"), vec![vec!["alias".to_owned()]]);
        assert_eq!(
            names("target = { x = { runner = \"r\" } }"),
            vec![
                vec!["target".to_owned()],
                vec!["x".to_owned()],
                vec!["runner".to_owned()]
            ]
        );
        // Keys inside strings are text, not keys.
        assert_eq!(names("x = \"{ runner = 1 }\""), vec![vec!["x".to_owned()]]);
        assert_eq!(names("\"a.b\" = 1"), vec![vec!["a.b".to_owned()]]);
        assert_eq!(names("\"runn\\q\" = 1"), vec![vec!["?".to_owned()]]);
        assert!(names("# alias.fmt = 1").is_empty());
        assert!(names("\"\"\"alias.fmt = 1").is_empty());
    }
}
