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
//! [`Replacements`]: an added line's U+FFFDs take the bytes of a line the same change
//! removes, or the patch is refused. Nothing here allocates per comparison: placing a hunk
//! compares its lines at every position of the file.

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

/// The bytes an added line's U+FFFDs stand for, taken from the lines the same change
/// removes (a change: the `-` and `+` lines between two context lines).
///
/// The rule never invents a byte: an added line with `n` U+FFFDs takes, in order, the
/// bytes behind the `n` U+FFFDs of a removed line with exactly `n` of them, when every
/// such removed line in the change has the same bytes behind them. So `-caf\xe9` with
/// `+caf\u{fffd} au lait` writes `caf\xe9 au lait`. Anything else (no removed line with
/// that many, or two that disagree) cannot be told from the view and is refused.
pub(crate) struct Replacements<'a> {
    removed: Vec<Vec<&'a [u8]>>,
}

/// Why an added line's U+FFFDs cannot be written back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unmapped {
    /// No removed line of the change has as many U+FFFDs.
    NoSuchLine,
    /// Removed lines with as many U+FFFDs have different bytes behind them.
    Disagree,
}

impl<'a> Replacements<'a> {
    /// The rule for one change, from the file bytes of the lines it removes.
    pub(crate) fn new(removed: impl IntoIterator<Item = &'a [u8]>) -> Replacements<'a> {
        Replacements {
            removed: removed
                .into_iter()
                .map(hidden)
                .filter(|h| !h.is_empty())
                .collect(),
        }
    }

    /// The bytes to write for an added line `text` that holds at least one U+FFFD.
    pub(crate) fn added(&self, text: &[u8]) -> Result<Vec<u8>, Unmapped> {
        let wanted = count(text);
        let mut same = self.removed.iter().filter(|h| h.len() == wanted);
        let first = same.next().ok_or(Unmapped::NoSuchLine)?;
        if same.any(|other| other != first) {
            return Err(Unmapped::Disagree);
        }
        Ok(restored(text, first))
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
    fn an_added_line_takes_the_bytes_of_a_removed_line_with_as_many() {
        let rule = Replacements::new([&b"caf\xe9"[..], b"plain", b"\xe8 and \xe0"]);
        assert_eq!(
            rule.added("caf\u{fffd} au lait".as_bytes()),
            Ok(b"caf\xe9 au lait".to_vec())
        );
        assert_eq!(
            rule.added("\u{fffd}\u{fffd}".as_bytes()),
            Ok(b"\xe8\xe0".to_vec())
        );
        assert_eq!(
            rule.added("\u{fffd}\u{fffd}\u{fffd}".as_bytes()),
            Err(Unmapped::NoSuchLine)
        );
        let rule = Replacements::new([&b"caf\xe9"[..], b"cr\xe8me"]);
        assert_eq!(rule.added("x\u{fffd}".as_bytes()), Err(Unmapped::Disagree));
        let rule = Replacements::new([&b"caf\xe9"[..], b"f\xe9e"]);
        assert_eq!(rule.added("\u{fffd}".as_bytes()), Ok(b"\xe9".to_vec()));
    }
}
