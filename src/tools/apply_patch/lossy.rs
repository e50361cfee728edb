//! Lines that are not UTF-8, as the model sees them and as they are written back.
//!
//! view_slice (and every tool that quotes file lines) shows a line through
//! `String::from_utf8_lossy`: each maximal invalid sequence becomes one U+FFFD, so `\xe9`
//! is one, `\xe9\xe9` two, and a truncated three-byte sequence `\xe2\x82` one. The model
//! copies that view into its patch, and has no way to write the bytes themselves (a tool
//! argument is JSON text). So a patch line that holds a U+FFFD is matched against the view
//! of the file line, never against its bytes, and the bytes behind each U+FFFD are what the
//! patch writes back. A literal U+FFFD in a UTF-8 line (EF BF BD) is valid UTF-8, so it is
//! matched byte for byte like any other character and stands for itself.
//!
//! The rule for added lines, which is what keeps encoding from changing silently, is in
//! [`Replacements`]: each U+FFFD of an added line takes the bytes behind the same U+FFFD
//! of the same word (its letters up to whitespace or punctuation) in a line the same
//! change removes, or the patch is refused. Nothing here allocates per comparison: placing a hunk
//! compares its lines at every position of the file.

use std::collections::HashMap;

/// What a U+FFFD is in UTF-8, both in a patch and as a literal in a file.
const REPLACEMENT: &[u8] = "\u{fffd}".as_bytes();

/// True when the lossy view of `file_line` is exactly `patch_line`.
pub(crate) fn view_eq(file_line: &[u8], patch_line: &[u8]) -> bool {
    let mut rest = patch_line;
    for chunk in file_line.utf8_chunks() {
        let Some(after) = rest.strip_prefix(chunk.valid().as_bytes()) else {
            return false;
        };
        rest = after;
        if !chunk.invalid().is_empty() {
            let Some(after) = rest.strip_prefix(REPLACEMENT) else {
                return false;
            };
            rest = after;
        }
    }
    rest.is_empty()
}

/// True when `text` holds a U+FFFD. Asked of a patch line at every place a hunk is
/// tried, so the search for its first byte (rare outside non-ASCII text) comes first.
pub(crate) fn has_replacement(text: &[u8]) -> bool {
    memchr::memchr(REPLACEMENT[0], text).is_some()
        && memchr::memmem::find(text, REPLACEMENT).is_some()
}

/// The bytes behind each U+FFFD of `line`'s lossy view, in order: an invalid sequence, or
/// EF BF BD for a literal U+FFFD (which is what it stands for).
pub(crate) fn hidden(line: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    for chunk in line.utf8_chunks() {
        out.extend(chunk.valid().matches('\u{fffd}').map(|_| REPLACEMENT));
        if !chunk.invalid().is_empty() {
            out.push(chunk.invalid());
        }
    }
    out
}

/// `text` with its U+FFFDs replaced, in order, by `bytes` (as many as it has).
pub(crate) fn restored(text: &[u8], bytes: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len() + bytes.len() * 3);
    let mut rest = text;
    for sequence in bytes {
        match memchr::memmem::find(rest, REPLACEMENT) {
            Some(at) => {
                out.extend_from_slice(&rest[..at]);
                out.extend_from_slice(sequence);
                rest = &rest[at + REPLACEMENT.len()..];
            }
            None => break,
        }
    }
    out.extend_from_slice(rest);
    out
}

/// How many U+FFFDs `text` holds.
pub(crate) fn count(text: &[u8]) -> usize {
    memchr::memmem::find_iter(text, REPLACEMENT).count()
}

/// Whether `c` belongs to a word: anything but ASCII whitespace and ASCII punctuation
/// (`_` excepted, as in identifiers). A byte that is not UTF-8 is never ASCII, so every
/// U+FFFD is inside a word, with the letters of the same word around it.
fn in_word(c: char) -> bool {
    !(c.is_ascii_whitespace() || (c.is_ascii_punctuation() && c != '_'))
}

/// The words of `view` that hold a U+FFFD, each with how many U+FFFDs of the line come
/// before it (so its own are the next `count(word)` of [`hidden`]).
fn words_with_replacement(view: &str) -> impl Iterator<Item = (&str, usize)> {
    let mut before = 0;
    view.split(|c: char| !in_word(c)).filter_map(move |word| {
        let n = count(word.as_bytes());
        let first = before;
        before += n;
        (n > 0).then_some((word, first))
    })
}

/// The bytes an added line's U+FFFDs stand for, taken from the lines the same change
/// removes (a change: the `-` and `+` lines between two context lines).
///
/// The rule never invents a byte, and never moves one from a word to another. A word is
/// a run of characters between whitespace or punctuation, as the view shows it, so every
/// U+FFFD is in one with the letters around it: `caf\u{fffd}`, `\u{fffd}\u{fffd}t\u{fffd}`.
///
/// - An added line whose words with a U+FFFD are, in order, those of a removed line takes
///   that line's bytes: the line was edited outside them. So `-puts("caf\xe9");` with
///   `+puts("caf\u{fffd} au lait");` writes `caf\xe9 au lait`.
/// - Otherwise each such word takes the bytes of the same word in a removed line, which
///   is how lines are merged or split.
///
/// Counting the U+FFFDs of a line is not evidence: `-caf\xe9` and `-na\xefve \xe0` with
/// `+na\u{fffd}ve` would put the é of `café` into `naïve`. When no removed line has the
/// words, or two have them with different bytes behind, the view cannot tell which bytes
/// were meant, and the patch is refused.
pub(crate) struct Replacements<'a> {
    /// Each removed line's words with a U+FFFD, joined by spaces (a word holds none), and
    /// what is behind each of the line's U+FFFDs in order.
    lines: HashMap<String, Vec<Behind<'a>>>,
    /// Each word with a U+FFFD of the removed lines, and what is behind each of its
    /// U+FFFDs in order. Both maps are built once per change, in time linear in the
    /// removed lines, and looked up once per added line and word.
    words: HashMap<String, Vec<Behind<'a>>>,
}

/// What is behind one U+FFFD, over every removed line (or word) with the same text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Behind<'a> {
    /// The same bytes in every one.
    Bytes(&'a [u8]),
    /// Different bytes in two of them.
    Differ,
}

/// Records `own` under `key`: the bytes the first time, [`Behind::Differ`] at each place
/// a later one disagrees.
fn record<'a>(map: &mut HashMap<String, Vec<Behind<'a>>>, key: &str, own: &[&'a [u8]]) {
    match map.get_mut(key) {
        None => {
            map.insert(
                key.to_owned(),
                own.iter().map(|b| Behind::Bytes(b)).collect(),
            );
        }
        Some(known) => {
            for (have, bytes) in known.iter_mut().zip(own) {
                if *have != Behind::Bytes(bytes) {
                    *have = Behind::Differ;
                }
            }
        }
    }
}

/// The bytes behind every U+FFFD of `behind`, or `None` if any differ.
fn agreed<'a>(behind: &[Behind<'a>]) -> Option<Vec<&'a [u8]>> {
    behind
        .iter()
        .map(|b| match b {
            Behind::Bytes(bytes) => Some(*bytes),
            Behind::Differ => None,
        })
        .collect()
}

/// The words of `view` that hold a U+FFFD, joined by spaces.
fn line_key(view: &str) -> String {
    let words: Vec<&str> = words_with_replacement(view).map(|(w, _)| w).collect();
    words.join(" ")
}

/// Why an added line's U+FFFDs cannot be written back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Unmapped {
    /// No removed line of the change has this word (as the view shows it).
    NoSuchWord(String),
    /// Removed lines have this word with different bytes behind its U+FFFDs.
    Disagree(String),
}

impl<'a> Replacements<'a> {
    /// The rule for one change, from the file bytes of the lines it removes.
    pub(crate) fn new(removed: impl IntoIterator<Item = &'a [u8]>) -> Replacements<'a> {
        let mut lines = HashMap::new();
        let mut words = HashMap::new();
        for line in removed {
            let hidden = hidden(line);
            if hidden.is_empty() {
                continue;
            }
            let view = String::from_utf8_lossy(line);
            record(&mut lines, &line_key(&view), &hidden);
            for (word, first) in words_with_replacement(&view) {
                if let Some(own) = hidden.get(first..first + count(word.as_bytes())) {
                    record(&mut words, word, own);
                }
            }
        }
        Replacements { lines, words }
    }

    /// The bytes to write for an added line `text` that holds at least one U+FFFD.
    pub(crate) fn added(&self, text: &str) -> Result<Vec<u8>, Unmapped> {
        if let Some(bytes) = self.lines.get(&line_key(text)).and_then(|b| agreed(b)) {
            return Ok(restored(text.as_bytes(), &bytes));
        }
        let mut bytes = Vec::new();
        for (word, _) in words_with_replacement(text) {
            let behind = self
                .words
                .get(word)
                .ok_or_else(|| Unmapped::NoSuchWord(word.to_owned()))?;
            bytes.extend(agreed(behind).ok_or_else(|| Unmapped::Disagree(word.to_owned()))?);
        }
        Ok(restored(text.as_bytes(), &bytes))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_is_from_utf8_lossy() {
        for line in [
            &b"caf\xe9"[..],
            b"\xe9\xe9",
            b"\xe2\x82x",
            b"\xf0\x9f\x98",
            b"ok \xef\xbf\xbd \xff",
            b"\x83\\ sjis",
            b"",
        ] {
            let view = String::from_utf8_lossy(line);
            assert!(view_eq(line, view.as_bytes()), "{line:?}");
            assert_eq!(hidden(line).len(), count(view.as_bytes()), "{line:?}");
            assert_eq!(restored(view.as_bytes(), &hidden(line)), line, "{line:?}");
        }
        assert!(!view_eq(b"caf\xe9", b"caf"));
        assert!(!view_eq(b"caf\xe9", "caf\u{fffd}x".as_bytes()));
        assert_eq!(hidden(b"\xe9\xe9"), [b"\xe9", b"\xe9"]);
        assert_eq!(hidden(b"\xe2\x82x"), [&b"\xe2\x82"[..]]);
    }

    #[test]
    fn an_added_line_takes_the_bytes_of_the_same_word_in_a_removed_line() {
        let rule = Replacements::new([&b"caf\xe9"[..], b"plain", b"\xe8 and \xe0"]);
        assert_eq!(
            rule.added("caf\u{fffd} au lait"),
            Ok(b"caf\xe9 au lait".to_vec())
        );
        // The words of a removed line, in order, with the line edited around them.
        assert_eq!(
            rule.added("\u{fffd} or \u{fffd};"),
            Ok(b"\xe8 or \xe0;".to_vec())
        );
        assert_eq!(
            rule.added("(caf\u{fffd}) \u{fffd}"),
            Err(Unmapped::Disagree("\u{fffd}".into()))
        );
        assert_eq!(
            rule.added("\u{fffd}\u{fffd}"),
            Err(Unmapped::NoSuchWord("\u{fffd}\u{fffd}".into()))
        );
        // Two removed lines with the word agree on its bytes; a line can merge words.
        let rule = Replacements::new([&b"caf\xe9 cr\xe8me"[..], b"au caf\xe9"]);
        assert_eq!(
            rule.added("cr\u{fffd}me, caf\u{fffd}"),
            Ok(b"cr\xe8me, caf\xe9".to_vec())
        );
        // The same view with different bytes (Latin-1 \xe9 and \xe8) is refused.
        let rule = Replacements::new([&b"caf\xe9"[..], b"caf\xe8"]);
        assert_eq!(
            rule.added("x caf\u{fffd}"),
            Err(Unmapped::Disagree("caf\u{fffd}".into()))
        );
        // Each U+FFFD of a word keeps its own bytes, in order.
        let rule = Replacements::new([&b"\xe9\xe8t\xe0"[..]]);
        assert_eq!(
            rule.added("\u{fffd}\u{fffd}t\u{fffd}!"),
            Ok(b"\xe9\xe8t\xe0!".to_vec())
        );
    }

    #[test]
    fn a_replacement_character_is_never_moved_into_another_word() {
        // The review's case: one removed line has one U+FFFD (café), the other two
        // (naïve, à). Counting per line would write café's \xe9 into naïve.
        let rule = Replacements::new([&b"caf\xe9"[..], b"na\xefve \xe0"]);
        assert_eq!(rule.added("na\u{fffd}ve"), Ok(b"na\xefve".to_vec()));
        // A word no removed line has takes nothing, even with a removed line of as many.
        let rule = Replacements::new([&b"un th\xe8"[..]]);
        assert_eq!(
            rule.added("un caf\u{fffd}"),
            Err(Unmapped::NoSuchWord("caf\u{fffd}".into()))
        );
    }

    #[test]
    fn a_line_that_is_one_long_word_is_mapped_in_linear_time() {
        // 200,000 U+FFFDs in one word, removed and added: one lookup, no quadratic walk.
        let line = vec![0xe9u8; 200_000];
        let view = String::from_utf8_lossy(&line).into_owned();
        let started = std::time::Instant::now();
        let rule = Replacements::new([&line[..]]);
        assert_eq!(rule.added(&view), Ok(line.clone()));
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    use proptest::prelude::*;

    /// A line's bytes: ASCII letters and separators, stray high bytes (Latin-1, halves of
    /// Shift-JIS characters, truncated UTF-8) and whole UTF-8 characters.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                6 => proptest::sample::select(b"ab_ \"(),".to_vec()).prop_map(|b| vec![b]),
                4 => proptest::sample::select(vec![0xe8u8, 0xe9, 0xef, 0x83, 0xff]).prop_map(|b| vec![b]),
                1 => Just("\u{e9}".as_bytes().to_vec()),
                1 => Just("\u{fffd}".as_bytes().to_vec()),
                1 => Just(b"\xe2\x82".to_vec()),
            ],
            0..10,
        )
        .prop_map(|parts| parts.concat())
    }

    /// The words of `bytes`, split at ASCII whitespace and punctuation but `_`.
    fn byte_words(bytes: &[u8]) -> Vec<&[u8]> {
        bytes
            .split(|b| b.is_ascii_whitespace() || (b.is_ascii_punctuation() && *b != b'_'))
            .collect()
    }

    proptest! {
        /// Whatever the lines, every word the rule writes that is not UTF-8 is, byte for
        /// byte, a word of a removed line (so its U+FFFDs' bytes come from a line whose
        /// text around them is the same), and the line written reads as the model wrote it.
        #[test]
        fn written_bytes_come_from_the_same_word_of_a_removed_line(
            removed in proptest::collection::vec(line(), 0..4),
            added in line(),
            from in any::<proptest::sample::Index>(),
            edit in 0..3u8,
        ) {
            // The added line: a removed line's view, edited, or a line of its own.
            let text = match removed.get(from.index(removed.len().max(1))) {
                Some(source) if edit > 0 => {
                    let view = String::from_utf8_lossy(source);
                    let other = String::from_utf8_lossy(&added);
                    if edit == 1 { format!("{other} {view}") } else { format!("{view}({other}") }
                }
                _ => String::from_utf8_lossy(&added).into_owned(),
            };
            let rule = Replacements::new(removed.iter().map(Vec::as_slice));
            if let Ok(written) = rule.added(&text) {
                prop_assert_eq!(String::from_utf8_lossy(&written), text.as_str());
                let known: Vec<&[u8]> = removed.iter().flat_map(|l| byte_words(l)).collect();
                for word in byte_words(&written) {
                    prop_assert!(
                        std::str::from_utf8(word).is_ok() || known.contains(&word),
                        "{:?} is in no removed line of {:?}", word, removed
                    );
                }
            }
        }

        /// A removed line's view with text added before it is written with that line's
        /// own bytes, unless a word of it hides different bytes elsewhere in the change.
        #[test]
        fn a_line_edited_outside_its_words_keeps_its_bytes(
            source in line(),
            others in proptest::collection::vec(line(), 0..3),
        ) {
            let text = format!("x {}", String::from_utf8_lossy(&source));
            let rule = Replacements::new(
                std::iter::once(source.as_slice()).chain(others.iter().map(Vec::as_slice)),
            );
            match rule.added(&text) {
                Ok(written) => prop_assert_eq!(written, [&b"x "[..], &source].concat()),
                Err(why) => prop_assert!(matches!(why, Unmapped::Disagree(_)), "{:?}", why),
            }
        }
    }
}
