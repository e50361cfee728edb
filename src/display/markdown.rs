//! The model's Markdown, rendered for a terminal as it streams: headings in bold without
//! their `#`, emphasis as bold and italic, code in colour, bullets as `•`, block quotes
//! behind a bar, links as `text (url)`, and fenced code kept verbatim between two dim
//! rules.
//!
//! Only a terminal that takes colour gets this ([`super::Display`] decides): a pipe, a
//! CI log, `NO_COLOR` and `--json` get the model's bytes, because there the Markdown is
//! the most faithful form of the answer and may be fed to another tool.
//!
//! **Streaming.** The renderer works line by line: a line is rendered when its newline
//! arrives, so the answer appears as the model writes it, a line at a time, and a line's
//! kind (heading, item, quote, fence) is known from its start. The incomplete tail is held
//! until its newline or the end of the reply ([`Markdown::finish`]). Models write whole
//! paragraphs as one line, so the hold is bounded: once the tail passes [`HELD_MAX`]
//! bytes, its part up to the last space within the bound is rendered as rows of its own
//! and the rest continues under it, as a wrapped row would (inside a fence, the part is
//! shown with no break added, so code stays copyable). The cut depends only on the text,
//! never on how it was split into deltas, so every split renders the same.
//!
//! **What is not rendered.** Inline spans (`**bold**`, `` `code` ``, links) are matched
//! within one line: a span whose closing mark is on a later line, or past a [`HELD_MAX`]
//! cut, is shown with its marks as written, since waiting for a close that may never come
//! would hold the answer back. Setext headings (`Title` over `===`) cannot be recognised
//! before their underline arrives, so the title is plain and the underline a rule.
//! Tables are shown as written, unwrapped, so their columns stay aligned. HTML is text.
//!
//! **Safety.** Every piece of the model's text goes through [`terminal_safe`] before it is
//! placed, so an escape or a control character in any construct (inside code, a link's
//! URL, a heading) is shown, never obeyed; the only escape sequences in the output are the
//! styles chosen here ([`Look::sgr`]), and each row ends with a reset, so no style leaks
//! into metron's own lines.

mod inline;

use super::terminal_safe;
use super::wrap::{text_columns, wrap};
use inline::inline;

/// The most bytes of an unfinished line held back before part of it is shown: about six
/// rows of an 80-column terminal, a second or two of a local model's output.
pub(crate) const HELD_MAX: usize = 512;

/// Rows narrower than this, once a prefix (bullet, quote bar) is taken off, are left to
/// the terminal to wrap: text that does not fit anyway is better shown than squeezed.
const ROOM_MIN: usize = 8;

/// A streaming renderer for one reply.
#[derive(Debug)]
pub(crate) struct Markdown {
    /// The text of the current line received so far.
    held: String,
    /// The columns to wrap prose at (`None`: not wrapped).
    width: Option<usize>,
    /// Inside a fenced code block, opened by this fence.
    fence: Option<Fence>,
    /// The current line was cut at [`HELD_MAX`] and continues with this prefix and look.
    continued: Option<Lead>,
    /// Inside a fence, part of the current code line has already been shown.
    code_mid_line: bool,
}

/// An opening fence: its character, its length, its indent (removed from the code
/// lines, as CommonMark does), and the block quotes it is inside (their markers are
/// taken off each code line, and a line without them ends the code with the quote).
#[derive(Debug, Clone, Copy)]
struct Fence {
    mark: u8,
    len: usize,
    indent: usize,
    quotes: usize,
}

/// How a line's text is placed: what comes before its first row and before each
/// continuation row, and the look of the text itself.
#[derive(Debug, Clone, Default)]
struct Lead {
    first: Vec<Cell>,
    rest: Vec<Cell>,
    look: Look,
}

/// One character and the look it is shown with.
type Cell = (char, Look);

/// A set of terminal styles.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Look(u8);

impl Look {
    const PLAIN: Look = Look(0);
    const BOLD: Look = Look(1);
    const DIM: Look = Look(1 << 1);
    const ITALIC: Look = Look(1 << 2);
    const UNDERLINE: Look = Look(1 << 3);
    const CODE: Look = Look(1 << 4);
    const STRIKE: Look = Look(1 << 5);

    fn with(self, other: Look) -> Look {
        Look(self.0 | other.0)
    }

    fn has(self, other: Look) -> bool {
        self.0 & other.0 == other.0
    }

    /// The SGR sequence that turns this look on (after a reset). Code is cyan rather than
    /// dim: dim text is hard to read on some palettes, and code is what is read closely.
    fn sgr(self) -> String {
        let codes: Vec<&str> = [
            (Look::BOLD, "1"),
            (Look::DIM, "2"),
            (Look::ITALIC, "3"),
            (Look::UNDERLINE, "4"),
            (Look::STRIKE, "9"),
            (Look::CODE, "36"),
        ]
        .iter()
        .filter(|(look, _)| self.has(*look))
        .map(|(_, code)| *code)
        .collect();
        format!("\x1b[{}m", codes.join(";"))
    }
}

/// The reset that ends every styled run.
const RESET: &str = "\x1b[0m";

impl Markdown {
    /// A renderer wrapping prose at `width` columns (a terminal's), or not at all.
    pub(crate) fn new(width: Option<usize>) -> Markdown {
        Markdown {
            held: String::new(),
            width,
            fence: None,
            continued: None,
            code_mid_line: false,
        }
    }

    /// Takes the next piece of the reply and returns what can be shown of it now: every
    /// line it completes, and any part of the tail past [`HELD_MAX`]. Linear in the text
    /// however it is split: the held text is consumed from a moving start, not drained
    /// line by line.
    pub(crate) fn push(&mut self, text: &str) -> String {
        let mut out = String::new();
        let mut held = std::mem::take(&mut self.held);
        held.push_str(text);
        let mut start = 0;
        loop {
            let rest = &held[start..];
            // Only the first `HELD_MAX + 1` bytes are searched: past them the tail is cut
            // anyway, and searching the whole remainder after each cut would make one long
            // line quadratic.
            let window = &rest.as_bytes()[..rest.len().min(HELD_MAX + 1)];
            let line_end = memchr::memchr(b'\n', window);
            if line_end.unwrap_or(rest.len()) > HELD_MAX {
                start += self.cut(rest, &mut out);
                continue;
            }
            let Some(end) = line_end else { break };
            self.line(&rest[..end], &mut out);
            out.push('\n');
            start += end + 1;
        }
        held.drain(..start);
        self.held = held;
        out
    }

    /// The end of the reply: renders the held tail (without a newline) and forgets the
    /// reply's state, so a fence the model never closed ends with it.
    pub(crate) fn finish(&mut self) -> String {
        let mut out = String::new();
        let tail = std::mem::take(&mut self.held);
        if !tail.is_empty() {
            self.line(&tail, &mut out);
        }
        self.fence = None;
        self.continued = None;
        self.code_mid_line = false;
        out
    }

    /// Shows the first part of a held line longer than [`HELD_MAX`] (see the module's
    /// doc): in code, up to the bound as it is; in prose, up to the last space within
    /// the bound (the space dropped, as at a wrap), then a new row.
    ///
    /// `rest` is the held text from the line's start; returns how much of it was shown.
    fn cut(&mut self, rest: &str, out: &mut String) -> usize {
        let bound = floor_char_boundary(rest, HELD_MAX);
        if let Some(fence) = self.fence {
            let part = &rest[..bound];
            let code = if self.code_mid_line {
                Some((Vec::new(), part))
            } else {
                unquoted(part, fence.quotes).map(|(bars, body)| (bars, unindented(body, fence)))
            };
            if let Some((bars, part)) = code {
                self.code(&bars, part, out);
                self.code_mid_line = true;
                return bound;
            }
            // The quote the code was in has ended, and the code with it, as in `line`:
            // the line is prose, cut as prose.
            self.fence = None;
        }
        let space = rest[..bound].rfind(' ').filter(|&at| at > 0);
        let (part, skip) = match space {
            Some(at) => (at, 1),
            None => (bound, 0),
        };
        let head = &rest[..part];
        let (lead, body) = match self.continued.take() {
            Some(lead) => (lead, head),
            // A fence or a rule is never this long: the part is text.
            None => match self.classify(head) {
                (lead, body, Kind::Text | Kind::Table) => (lead, body),
                _ => (Lead::default(), head),
            },
        };
        let next = Lead {
            first: lead.rest.clone(),
            rest: lead.rest.clone(),
            look: lead.look,
        };
        self.place(&lead, body, out);
        out.push('\n');
        self.continued = Some(next);
        part + skip
    }

    /// One line of the reply, without its newline.
    fn line(&mut self, line: &str, out: &mut String) {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if let Some(fence) = self.fence {
            if self.code_mid_line {
                self.code_mid_line = false;
                self.code(&[], line, out);
                return;
            }
            match unquoted(line, fence.quotes) {
                Some((mut bars, body)) if closes(body, fence) => {
                    self.fence = None;
                    bars.extend(rule(None, self.width));
                    paint(&bars, out);
                    return;
                }
                Some((bars, body)) => {
                    self.code(&bars, unindented(body, fence), out);
                    return;
                }
                // The quote the code was in has ended, and the code with it; the line
                // is read as any other.
                None => self.fence = None,
            }
        }
        if let Some(lead) = self.continued.take() {
            self.place(&lead, line, out);
            return;
        }
        let (lead, body, kind) = self.classify(line);
        match kind {
            Kind::Fence(fence, info) => {
                self.fence = Some(fence);
                let mut cells = lead.first;
                cells.extend(rule(Some(info), self.width));
                paint(&cells, out);
            }
            Kind::Rule => paint(&rule(None, self.width), out),
            Kind::Table => {
                let mut cells = lead.first;
                inline(body, lead.look, 0, &mut cells);
                paint(&cells, out);
            }
            Kind::Text => self.place(&lead, body, out),
        }
    }

    /// What kind of line `line` is (outside a fence), how it is placed, and its text.
    fn classify<'l>(&self, line: &'l str) -> (Lead, &'l str, Kind) {
        let mut lead = Lead::default();
        if let Some((fence, info)) = opening_fence(line) {
            return (lead, "", Kind::Fence(fence, info.to_owned()));
        }
        if is_rule(line) {
            return (lead, "", Kind::Rule);
        }
        let mut rest = line;
        let mut quotes = 0;
        // Block quotes, nested or not, each as a dim bar.
        while let Some((bar, after)) = quote_marker(rest) {
            lead.first.extend_from_slice(&bar);
            lead.rest.extend(bar);
            rest = after;
            quotes += 1;
        }
        if quotes > 0
            && let Some((fence, info)) = opening_fence(rest)
        {
            let fence = Fence { quotes, ..fence };
            return (lead, "", Kind::Fence(fence, info.to_owned()));
        }
        let body = rest.trim_start_matches(' ');
        let indent = rest.len() - body.len();
        for cells in [&mut lead.first, &mut lead.rest] {
            cells.extend(std::iter::repeat_n((' ', Look::PLAIN), indent));
        }
        if let Some((level, text)) = heading(body) {
            lead.look = if level == 1 {
                Look::BOLD.with(Look::UNDERLINE)
            } else {
                Look::BOLD
            };
            return (lead, text, Kind::Text);
        }
        if let Some((marker, text)) = list_item(body) {
            let shown = match marker {
                Marker::Bullet => "\u{2022}",
                Marker::Number(number) => number,
            };
            lead.first.extend(shown.chars().map(|c| (c, Look::PLAIN)));
            lead.first.push((' ', Look::PLAIN));
            let columns = text_columns(shown) + 1;
            lead.rest
                .extend(std::iter::repeat_n((' ', Look::PLAIN), columns));
            return (lead, text, Kind::Text);
        }
        if body.starts_with('|') {
            return (lead, body, Kind::Table);
        }
        (lead, body, Kind::Text)
    }

    /// `body` rendered after `lead`, wrapped to the width with continuation rows behind
    /// the lead's `rest` (a list item's text continues under its text, a quote's behind
    /// its bar).
    fn place(&self, lead: &Lead, body: &str, out: &mut String) {
        let mut cells = Vec::with_capacity(body.len());
        inline(body, lead.look, 0, &mut cells);
        let lead_columns: usize = lead.first.iter().map(|&(c, _)| cell_columns(c)).sum();
        let mut shown = lead.first.clone();
        match self.width {
            Some(width) if width.saturating_sub(lead_columns) >= ROOM_MIN => {
                let plain: String = cells.iter().map(|&(c, _)| c).collect();
                let wrapped = wrap(&plain, width - lead_columns, 0);
                align(&wrapped, &cells, &lead.rest, &mut shown);
            }
            _ => shown.extend(cells),
        }
        paint(&shown, out);
    }

    /// A code line, in code's look behind the bars of its quotes, never wrapped.
    fn code(&self, bars: &[Cell], text: &str, out: &mut String) {
        let mut cells = Vec::with_capacity(bars.len() + text.len());
        cells.extend_from_slice(bars);
        push_text(text, Look::CODE, &mut cells);
        paint(&cells, out);
    }
}

/// One block-quote marker at the start of `line` (`>`, after any spaces, and one space
/// after it taken with it): the bar it is shown as, and the rest of the line.
fn quote_marker(line: &str) -> Option<(Vec<Cell>, &str)> {
    let trimmed = line.trim_start_matches(' ');
    let after = trimmed.strip_prefix('>')?;
    let spaces = line.len() - trimmed.len();
    let mut bar: Vec<Cell> = std::iter::repeat_n((' ', Look::PLAIN), spaces).collect();
    bar.extend([('\u{2502}', Look::DIM), (' ', Look::PLAIN)]);
    Some((bar, after.strip_prefix(' ').unwrap_or(after)))
}

/// `line` without the markers of `quotes` block quotes, and their bars; `None` when it
/// has fewer, so the quotes (and a fence inside them) have ended.
fn unquoted(line: &str, quotes: usize) -> Option<(Vec<Cell>, &str)> {
    let mut bars = Vec::new();
    let mut rest = line;
    for _ in 0..quotes {
        let (bar, after) = quote_marker(rest)?;
        bars.extend(bar);
        rest = after;
    }
    Some((bars, rest))
}

/// A code line without the indent of its fence (at most).
fn unindented(line: &str, fence: Fence) -> &str {
    let spaces = line.len() - line.trim_start_matches(' ').len();
    &line[spaces.min(fence.indent)..]
}

/// The largest char boundary of `text` at or before `at`.
fn floor_char_boundary(text: &str, at: usize) -> usize {
    let mut at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// Appends `text`, made safe for a terminal, in `look`.
fn push_text(text: &str, look: Look, cells: &mut Vec<Cell>) {
    cells.extend(terminal_safe(text).chars().map(|c| (c, look)));
}

/// Writes `cells` as text with the escapes of their looks; every styled run ends with a
/// reset before a newline and at the end, so no style outlives its row.
fn paint(cells: &[Cell], out: &mut String) {
    let mut current = Look::PLAIN;
    for &(c, look) in cells {
        if c == '\n' {
            if current != Look::PLAIN {
                out.push_str(RESET);
                current = Look::PLAIN;
            }
            out.push('\n');
            continue;
        }
        if look != current {
            if current != Look::PLAIN {
                out.push_str(RESET);
            }
            if look != Look::PLAIN {
                out.push_str(&look.sgr());
            }
            current = look;
        }
        out.push(c);
    }
    if current != Look::PLAIN {
        out.push_str(RESET);
    }
}

/// What a line outside a fence is.
#[derive(Debug)]
enum Kind {
    /// Prose: a paragraph, a heading, an item, a quote.
    Text,
    /// A table row, shown as written (unwrapped), with its inline spans rendered.
    Table,
    /// A thematic break (`---`) or a setext underline.
    Rule,
    /// An opening fence, and its info string (the language).
    Fence(Fence, String),
}

/// A list item's marker.
#[derive(Debug)]
enum Marker<'l> {
    /// `-`, `*` or `+`: shown as `•`.
    Bullet,
    /// `1.` or `1)`: shown as written.
    Number(&'l str),
}

/// The columns a dim rule takes: wide enough to read as a rule, narrow enough for any
/// terminal.
const RULE_COLUMNS: usize = 32;

/// A dim rule, with the fence's info string (the language) in it when there is one, no
/// wider than the terminal.
fn rule(info: Option<String>, width: Option<usize>) -> Vec<Cell> {
    let columns = width.map_or(RULE_COLUMNS, |width| width.min(RULE_COLUMNS));
    let mut cells = Vec::with_capacity(columns);
    let info = info.unwrap_or_default();
    if !info.is_empty() {
        push_text(&format!("\u{2500}\u{2500} {info} "), Look::DIM, &mut cells);
    }
    let used = cells.iter().map(|&(c, _)| cell_columns(c)).sum::<usize>();
    let dashes = columns.saturating_sub(used).max(2);
    cells.extend(std::iter::repeat_n(('\u{2500}', Look::DIM), dashes));
    cells
}

/// The opening fence on `line`, if it is one: three or more backticks or tildes (a
/// backtick fence's info string has no backtick, else it is inline code), and the info
/// string. Any indent is taken: models indent fences under list items.
fn opening_fence(line: &str) -> Option<(Fence, &str)> {
    let body = line.trim_start_matches(' ');
    let indent = line.len() - body.len();
    let mark = *body.as_bytes().first()?;
    if mark != b'`' && mark != b'~' {
        return None;
    }
    let len = body.len() - body.trim_start_matches(char::from(mark)).len();
    let info = body[len..].trim();
    if len < 3 || (mark == b'`' && info.contains('`')) {
        return None;
    }
    Some((
        Fence {
            mark,
            len,
            indent,
            quotes: 0,
        },
        info,
    ))
}

/// Whether `line` closes `fence`: at least as many of the same mark, and nothing else.
fn closes(line: &str, fence: Fence) -> bool {
    let body = line.trim();
    let len = body.len() - body.trim_start_matches(char::from(fence.mark)).len();
    len >= fence.len && len == body.len()
}

/// A thematic break (three or more of one of `-`, `*`, `_`, spaces between allowed) or a
/// setext underline (`===`, which comes too late to make its title a heading).
fn is_rule(line: &str) -> bool {
    let body = line.trim();
    let Some(mark) = body.chars().next() else {
        return false;
    };
    matches!(mark, '-' | '*' | '_' | '=')
        && body.chars().all(|c| c == mark || c == ' ')
        && body.chars().filter(|&c| c == mark).count() >= 3
        && (mark != '=' || !body.contains(' '))
}

/// An ATX heading: its level and its text, without the `#` marks (closing ones too).
fn heading(body: &str) -> Option<(usize, &str)> {
    let level = body.len() - body.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let rest = &body[level..];
    if !rest.is_empty() && !rest.starts_with(' ') {
        return None;
    }
    let text = rest.trim();
    let closed = text.trim_end_matches('#');
    let text = if closed.is_empty() || closed.ends_with(' ') {
        closed.trim_end()
    } else {
        text
    };
    Some((level, text))
}

/// A list item: its marker and its text.
fn list_item(body: &str) -> Option<(Marker<'_>, &str)> {
    let bytes = body.as_bytes();
    let (marker, after) = match bytes.first()? {
        b'-' | b'*' | b'+' => (Marker::Bullet, 1),
        b'0'..=b'9' => {
            let digits = bytes.iter().take_while(|b| b.is_ascii_digit()).count();
            if digits > 9 || !matches!(bytes.get(digits), Some(b'.' | b')')) {
                return None;
            }
            (Marker::Number(&body[..=digits]), digits + 1)
        }
        _ => return None,
    };
    let rest = &body[after..];
    if !rest.starts_with(' ') {
        return None;
    }
    Some((marker, rest.trim_start_matches(' ')))
}

/// The columns a cell's character takes.
fn cell_columns(c: char) -> usize {
    text_columns(c.encode_utf8(&mut [0; 4]))
}

/// `wrapped` (the plain text of `cells`, wrapped) as cells again: each character takes
/// the look of the cell it came from. [`wrap`] only drops spaces at a break and inserts
/// a newline and an indent, so the two are walked side by side; after each break, `rest`
/// (the lead of a continuation row) is placed.
fn align(wrapped: &str, cells: &[Cell], rest: &[Cell], shown: &mut Vec<Cell>) {
    let mut k = 0;
    let mut after_break = false;
    for c in wrapped.chars() {
        if c == '\n' {
            while cells.get(k).is_some_and(|&(d, _)| d == ' ') {
                k += 1;
            }
            shown.push(('\n', Look::PLAIN));
            shown.extend_from_slice(rest);
            after_break = true;
            continue;
        }
        if after_break && c == ' ' && cells.get(k).is_none_or(|&(d, _)| d != ' ') {
            shown.push((' ', Look::PLAIN));
            continue;
        }
        after_break = false;
        match cells.get(k) {
            Some(&(d, look)) if d == c => {
                shown.push((c, look));
                k += 1;
            }
            _ => shown.push((c, Look::PLAIN)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::inline::NESTING_MAX;
    use super::*;
    use proptest::prelude::*;

    /// A whole reply, rendered at `width`.
    fn render(text: &str, width: Option<usize>) -> String {
        let mut markdown = Markdown::new(width);
        let mut out = markdown.push(text);
        out.push_str(&markdown.finish());
        out
    }

    /// What the terminal shows of `out`: the styles chosen here removed. An escape that
    /// is not one of them is left in, for the tests to find.
    fn visible(out: &str) -> String {
        let mut shown = out.to_owned();
        for bits in 0..64u8 {
            shown = shown.replace(&Look(bits).sgr(), "");
        }
        shown.replace(RESET, "")
    }

    /// The SGR of `look`, for asserting on styled text.
    fn styled(look: Look, text: &str) -> String {
        format!("{}{text}{RESET}", look.sgr())
    }

    #[test]
    fn a_heading_loses_its_marks_and_is_bold() {
        let out = render("# Title\n## Section ##\n###### six\n#hashtag\n", None);
        assert_eq!(visible(&out), "Title\nSection\nsix\n#hashtag\n", "{out:?}");
        assert!(out.contains(&styled(Look::BOLD.with(Look::UNDERLINE), "Title")));
        assert!(out.contains(&styled(Look::BOLD, "Section")));
    }

    #[test]
    fn emphasis_and_code_spans_are_styled_without_their_marks() {
        let out = render(
            "a **bold** b *it* c _it_ d ***both*** e `code` f ~~gone~~ g ``a`b``",
            None,
        );
        assert_eq!(visible(&out), "a bold b it c it d both e code f gone g a`b");
        assert!(out.contains(&styled(Look::BOLD, "bold")), "{out:?}");
        assert!(out.contains(&styled(Look::ITALIC, "it")), "{out:?}");
        assert!(out.contains(&styled(Look::BOLD.with(Look::ITALIC), "both")));
        assert!(out.contains(&styled(Look::CODE, "code")), "{out:?}");
        assert!(out.contains(&styled(Look::STRIKE, "gone")), "{out:?}");
        // Nested: code inside bold keeps both.
        let out = render("**see `x`**", None);
        assert!(
            out.contains(&styled(Look::BOLD.with(Look::CODE), "x")),
            "{out:?}"
        );
        // Marks inside a code span are code.
        assert_eq!(visible(&render("`**not bold**`", None)), "**not bold**");
    }

    #[test]
    fn marks_that_are_not_emphasis_stay_as_written() {
        for text in [
            "snake_case_name and __init__x",
            "2 * 3 * 4",
            "a ** b",
            "unclosed **bold",
            "unclosed `code",
            "a_b_c",
            "\\*not italic\\*",
            "[not a link] (x)",
            "<not a link>",
            "!bang",
        ] {
            let out = render(text, None);
            assert!(!out.contains('\x1b'), "{text:?} was styled: {out:?}");
        }
        assert_eq!(visible(&render("\\*not italic\\*", None)), "*not italic*");
        assert_eq!(visible(&render("snake_case_name", None)), "snake_case_name");
    }

    #[test]
    fn list_items_get_bullets_and_keep_numbers_and_indent() {
        let out = render(
            "- one\n* two\n+ three\n  - nested\n1. first\n12) twelfth\n- [ ] task\n",
            None,
        );
        assert_eq!(
            visible(&out),
            "\u{2022} one\n\u{2022} two\n\u{2022} three\n  \u{2022} nested\n1. first\n12) twelfth\n\u{2022} [ ] task\n"
        );
        // A star that starts emphasis is not a bullet.
        assert_eq!(visible(&render("*it* here", None)), "it here");
    }

    #[test]
    fn a_long_item_continues_under_its_text_and_every_row_fits() {
        let item = "- the first item has words enough to need three rows at this width, **bold words** included in it";
        let out = render(item, Some(30));
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert!(rows.len() >= 3, "{rows:?}");
        assert!(rows[0].starts_with("\u{2022} the"), "{rows:?}");
        for row in &rows {
            assert!(text_columns(row) <= 30, "{row:?}");
        }
        for row in &rows[1..] {
            assert!(row.starts_with("  ") && !row.starts_with("   "), "{row:?}");
        }
        let words: Vec<&str> = item[2..].split_whitespace().collect();
        let shown = visible(&out).replace('\u{2022}', "");
        let shown: Vec<&str> = shown.split_whitespace().collect();
        assert_eq!(
            shown,
            words
                .iter()
                .map(|w| w.trim_matches('*'))
                .filter(|w| !w.is_empty())
                .collect::<Vec<_>>()
        );
        // Bold across a break: each row's run is closed on its row.
        for row in out.lines() {
            if row.contains('\x1b') {
                assert!(row.ends_with(RESET), "{row:?}");
            }
        }
        // A numbered item continues under its text too.
        let out = render("10. numbered item text that wraps around", Some(20));
        for row in visible(&out).lines().skip(1) {
            assert!(
                row.starts_with("    ") && !row.starts_with("     "),
                "{row:?}"
            );
        }
    }

    #[test]
    fn a_block_quote_is_behind_a_bar_on_every_row() {
        let out = render("> quoted **text**\n> > nested\n", None);
        assert_eq!(
            visible(&out),
            "\u{2502} quoted text\n\u{2502} \u{2502} nested\n"
        );
        let out = render(
            "> a quote long enough to be wrapped on a narrow terminal",
            Some(20),
        );
        for row in visible(&out).lines() {
            assert!(row.starts_with("\u{2502} "), "{row:?}");
            assert!(text_columns(row) <= 20, "{row:?}");
        }
    }

    #[test]
    fn fenced_code_is_verbatim_between_rules_and_never_wrapped() {
        let code = "    let x = **not_bold** + `tick`; // a long line of code that is wider than the terminal";
        let text = format!("```rust\n{code}\n\tindented\n```\nafter *it*\n");
        let out = render(&text, Some(40));
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert!(
            rows[0].contains("rust") && rows[0].starts_with('\u{2500}'),
            "{rows:?}"
        );
        assert_eq!(rows[1], code);
        assert_eq!(rows[2], "\tindented");
        assert!(rows[3].chars().all(|c| c == '\u{2500}'), "{rows:?}");
        assert_eq!(rows[4], "after it");
        assert!(out.contains(&styled(Look::CODE, code)), "{out:?}");
        // Tildes, a longer fence, and an indented fence (its indent removed from the code).
        let out = render("~~~~\n```\n~~~\n~~~~\n", None);
        assert_eq!(visible(&out).lines().nth(1), Some("```"));
        assert_eq!(visible(&out).lines().nth(2), Some("~~~"));
        let out = render("  ```\n  code\n    more\n  ```\n", None);
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert_eq!(rows[1..3], ["code", "  more"]);
        // Three backticks with a backtick after them are inline code, not a fence.
        assert_eq!(visible(&render("```a``` b", None)), "a b");
    }

    #[test]
    fn fenced_code_in_a_block_quote_is_verbatim_behind_its_bar() {
        let text = "> ```python\n> from pkg import __init__\n> x = a*b*c\n> # comment\n> ```\n> after *it*\n";
        let out = render(text, Some(60));
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert!(
            rows[0].starts_with("\u{2502} \u{2500}") && rows[0].contains("python"),
            "{rows:?}"
        );
        assert_eq!(
            rows[1..4],
            [
                "\u{2502} from pkg import __init__",
                "\u{2502} x = a*b*c",
                "\u{2502} # comment"
            ]
        );
        assert!(rows[4].starts_with("\u{2502} \u{2500}"), "{rows:?}");
        assert_eq!(rows[5], "\u{2502} after it");
        assert!(out.contains(&styled(Look::CODE, "x = a*b*c")), "{out:?}");
        // A quote that ends ends its code too: the next line is prose again, however long.
        let out = render("> ```\n> code\n**bold**\n", None);
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert_eq!(rows[1..], ["\u{2502} code", "bold"]);
        let long = format!("**bold** {}\n", "word ".repeat(200));
        let out = render(&format!("> ```\n> code\n{long}"), None);
        let rows: Vec<String> = visible(&out).lines().map(str::to_owned).collect();
        assert!(rows[2].starts_with("bold word"), "{rows:?}");
        // Every split of the stream renders the same.
        let whole = render(text, Some(60));
        for at in 1..text.len() {
            if !text.is_char_boundary(at) {
                continue;
            }
            let mut markdown = Markdown::new(Some(60));
            let mut split = markdown.push(&text[..at]);
            split.push_str(&markdown.push(&text[at..]));
            split.push_str(&markdown.finish());
            assert_eq!(split, whole, "split at {at}");
        }
    }

    #[test]
    fn a_fence_never_closed_ends_with_the_reply() {
        let mut markdown = Markdown::new(None);
        let out = markdown.push("```\n# not a heading\n**kept**");
        let tail = markdown.finish();
        assert_eq!(visible(&out).lines().nth(1), Some("# not a heading"));
        assert_eq!(visible(&tail), "**kept**");
        // The next reply starts outside any fence.
        let out = markdown.push("# Heading\n");
        assert_eq!(visible(&out), "Heading\n");
    }

    #[test]
    fn links_show_their_text_and_their_url() {
        assert_eq!(
            visible(&render(
                "see [the docs](https://example.com/a_(b)) now",
                None
            )),
            "see the docs (https://example.com/a_(b)) now"
        );
        assert_eq!(
            visible(&render("[x](https://e.com \"title\")", None)),
            "x (https://e.com)"
        );
        assert_eq!(
            visible(&render("[https://e.com](https://e.com)", None)),
            "https://e.com"
        );
        assert_eq!(
            visible(&render("<https://e.com/x>", None)),
            "https://e.com/x"
        );
        assert_eq!(
            visible(&render("![a cat](cat.png)", None)),
            "a cat (cat.png)"
        );
        assert_eq!(visible(&render("[**b**](u)", None)), "b (u)");
    }

    #[test]
    fn spans_nest_to_the_bound_and_deeper_marks_are_shown() {
        fn nested(n: usize) -> String {
            if n == 0 {
                "x".to_owned()
            } else {
                format!("[{}](u)", nested(n - 1))
            }
        }
        let shown = visible(&render(&nested(NESTING_MAX), None));
        assert!(!shown.contains('['), "{shown}");
        let shown = visible(&render(&nested(NESTING_MAX + 1), None));
        assert!(shown.contains("[x](u)"), "{shown}");
        // A line full of openers with no closers renders, as written.
        let openers = "*a _b ~~c [e ".repeat(HELD_MAX / 13 + 1);
        let line = &openers[..HELD_MAX];
        assert_eq!(visible(&render(line, None)), line.trim_end());
    }

    #[test]
    fn rules_are_dim_and_tables_are_kept_as_written() {
        for text in ["---", "***", "_ _ _", "====="] {
            let out = render(text, None);
            assert!(
                visible(&out).chars().all(|c| c == '\u{2500}'),
                "{text}: {out:?}"
            );
        }
        let table = "| a | **b** |\n|---|---|\n| 1 | 2 |\n";
        let out = render(table, Some(8));
        assert_eq!(visible(&render("---", Some(10))), "\u{2500}".repeat(10));
        assert_eq!(visible(&out), "| a | b |\n|---|---|\n| 1 | 2 |\n");
    }

    /// Each construct with an escape (CSI as ESC `[` and as one C1 character), a
    /// bidirectional override and metron's status mark inside it.
    #[test]
    fn escapes_in_the_model_text_are_shown_in_every_construct() {
        let evil = "\x1b[2J\u{9b}31m\u{202e}\u{25aa}";
        for template in [
            "X",
            "# X",
            "**X**",
            "*X*",
            "`X`",
            "~~X~~",
            "- X",
            "1. X",
            "> X",
            "[X](X)",
            "<https://X>",
            "![X](X)",
            "| X |",
            "```X\nX\n```",
            "```\nX",
        ] {
            let text = template.replace('X', evil);
            for width in [None, Some(12)] {
                let out = render(&text, width);
                let shown = visible(&out);
                assert!(
                    !shown
                        .chars()
                        .any(|c| c != '\n' && c != '\t' && super::super::needs_escape(c)),
                    "{template}: {out:?}"
                );
                // Shown as text (on one row when nothing is wrapped).
                if width.is_none() {
                    for escape in ["\\u{1b}[2J", "\\u{9b}31m", "\\u{202e}", "\\u{25aa}"] {
                        assert!(shown.contains(escape), "{template}: {shown:?}");
                    }
                }
            }
        }
    }

    /// A reply with every construct, a line longer than the bound (prose and code) and
    /// characters of several widths and byte lengths.
    fn sample() -> String {
        let long = "word ".repeat(HELD_MAX / 4);
        let code = "x".repeat(HELD_MAX * 2 + 7);
        format!(
            "# Plan\n\nSome **bold** and *it* with `code`, \u{65e5}\u{672c} and \u{1f980}.\n- item [link](https://e.com)\n  1. nested\n> quote\n\n```go\n{code}\n\tfmt.Println(\"**\")\n```\n{long}**end**\n---\n| t | u |\ntail without newline"
        )
    }

    #[test]
    fn every_split_of_the_reply_renders_the_same() {
        let text = sample();
        for width in [None, Some(40)] {
            let whole = render(&text, width);
            for (at, _) in text.char_indices() {
                let mut markdown = Markdown::new(width);
                let mut out = markdown.push(&text[..at]);
                out.push_str(&markdown.push(&text[at..]));
                out.push_str(&markdown.finish());
                assert_eq!(out, whole, "split at {at}");
            }
            // One character at a time, as a slow model streams.
            let mut markdown = Markdown::new(width);
            let mut out = String::new();
            for c in text.chars() {
                out.push_str(&markdown.push(c.encode_utf8(&mut [0; 4])));
                assert!(
                    markdown.held.len() <= HELD_MAX + 4,
                    "{}",
                    markdown.held.len()
                );
            }
            out.push_str(&markdown.finish());
            assert_eq!(out, whole);
        }
    }

    proptest! {
        #[test]
        fn any_chunking_renders_as_one_chunk(cuts in proptest::collection::vec(0usize..2000, 0..12)) {
            let text = sample();
            let whole = render(&text, Some(60));
            let mut at: Vec<usize> = cuts
                .into_iter()
                .map(|cut| floor_char_boundary(&text, cut * text.len() / 2000))
                .collect();
            at.sort_unstable();
            let mut markdown = Markdown::new(Some(60));
            let mut out = String::new();
            let mut from = 0;
            for cut in at.into_iter().chain([text.len()]) {
                out.push_str(&markdown.push(&text[from..cut]));
                from = cut;
            }
            out.push_str(&markdown.finish());
            prop_assert_eq!(out, whole);
        }
    }

    #[test]
    fn a_long_line_is_shown_before_its_end_and_the_hold_is_bounded() {
        let mut markdown = Markdown::new(Some(80));
        let line = "- ".to_owned() + &"longish words ".repeat(HELD_MAX / 7);
        let out = markdown.push(&line);
        assert!(!out.is_empty(), "nothing shown of {} bytes", line.len());
        assert!(markdown.held.len() <= HELD_MAX);
        // Shown as the item's rows: the bullet once, continuation rows under its text.
        let rest = markdown.finish();
        let shown = visible(&(out + &rest));
        assert_eq!(shown.matches('\u{2022}').count(), 1, "{shown}");
        for row in shown.lines().skip(1) {
            assert!(row.starts_with("  "), "{row:?}");
        }
        // Exactly at the bound, nothing is shown before the newline.
        let mut markdown = Markdown::new(None);
        assert_eq!(markdown.push(&"a".repeat(HELD_MAX)), "");
        assert_ne!(markdown.push("a"), "");
    }

    #[test]
    fn a_long_code_line_is_shown_in_parts_with_no_break_added() {
        let code = "y".repeat(HELD_MAX * 3);
        let mut markdown = Markdown::new(Some(40));
        let mut out = markdown.push(&format!("```\n{code}"));
        assert!(visible(&out).contains(&"y".repeat(HELD_MAX)));
        out.push_str(&markdown.push("\n```\n"));
        let shown = visible(&out);
        assert_eq!(shown.lines().nth(1), Some(code.as_str()));
    }
}
