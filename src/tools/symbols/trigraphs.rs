//! C's other spellings of punctuation, read as the punctuation before parsing.
//!
//! C lets `??=`, `??(`, `??<` … (trigraphs, C11 5.2.1.1) and `%:`, `<:`, `<%` …
//! (digraphs, C11 6.4.6) stand for `#`, `[`, `{` and the rest. A compiler replaces
//! trigraphs in translation phase 1, before it sees any token, and reads digraphs as the
//! tokens they spell. tree-sitter-c has no tokens for either, so a file that writes
//! `??=define A 1` or `struct s <% int x; %>;` misparses as a whole and loses every
//! definition in it (two of ctags' C unit tests are such files, 9% of the C tags).
//!
//! [`respelled`] writes a copy in which each of them is its punctuation padded with
//! spaces to the same length, so every byte offset, line and column stays where it was
//! and no byte of an identifier changes: a definition found in the copy has the name,
//! line and scope it has in the file as written, and the extractor reads names from
//! the original bytes anyway. The copy is made only for a file that holds one of the
//! spellings, found by one `memchr` scan; any other file is parsed as it is.
//!
//! What it cannot do: it replaces a trigraph wherever it is, as phase 1 does, inside
//! strings and comments too. That is what a compiler in ISO mode (`-std=c11`) does, but
//! not GCC's default GNU mode, which ignores trigraphs: code written for that mode with
//! `"??/"` or `'??'` in a literal turns it into an escaped quote and the rest of the
//! line parses differently. Digraphs are only punctuation and cannot end a literal or
//! comment, so replacing them inside one changes nothing around it.
//!
//! Only C files are read this way (a `.h` file too when the project reads its headers
//! as C; see [`super::lang::HeaderVote`]). C++17 removed trigraphs, and C++11 reads `<::`
//! as `<` then `::` unless a `:` or `>` follows (`std::vector<::ns::T>`), so a byte
//! rewrite would break real C++ to serve a spelling no C++ corpus measured uses.

use memchr::memchr3_iter;

/// The trigraph whose third character is `third`, as the character it stands for.
fn trigraph(third: u8) -> Option<u8> {
    Some(match third {
        b'=' => b'#',
        b'(' => b'[',
        b')' => b']',
        b'<' => b'{',
        b'>' => b'}',
        b'/' => b'\\',
        b'\'' => b'^',
        b'!' => b'|',
        b'-' => b'~',
        _ => return None,
    })
}

/// The digraph made of `first` and `second`, as the character it stands for (`%:%:`,
/// `##`, is two of `%:`).
fn digraph(first: u8, second: u8) -> Option<u8> {
    Some(match (first, second) {
        (b'<', b':') => b'[',
        (b':', b'>') => b']',
        (b'<', b'%') => b'{',
        (b'%', b'>') => b'}',
        (b'%', b':') => b'#',
        _ => return None,
    })
}

/// Whether `source` may hold a trigraph or a digraph: every one has a `?`, `%` or `:`,
/// so one `memchr3` pass looks at the bytes around those only.
fn has_any(source: &[u8]) -> bool {
    memchr3_iter(b'?', b'%', b':', source).any(|at| {
        let before = at.checked_sub(1).and_then(|i| source.get(i)).copied();
        let after = source.get(at + 1).copied();
        match source[at] {
            b'?' => {
                after == Some(b'?')
                    && source
                        .get(at + 2)
                        .copied()
                        .is_some_and(|third| trigraph(third).is_some())
            }
            first => {
                before.is_some_and(|b| digraph(b, first).is_some())
                    || after.is_some_and(|a| digraph(first, a).is_some())
            }
        }
    })
}

/// `source` with every trigraph and digraph replaced by its punctuation padded with
/// spaces to the same length, or `None` when it has none.
///
/// Trigraphs go first, as in phase 1, so `??<:` is `{` then `:`, not a `<:`. The
/// punctuation comes first and the spaces after, except `\` (from `??/`), which comes
/// last: it must stay next to what follows it, a newline it continues or the letter of
/// an escape (`"??/n"` is `"\n"`). Digraphs are then replaced left to right, as the
/// tokenizer meets them (`<:>` is `[` then `>`), `%:%:` as `##`.
pub(crate) fn respelled(source: &[u8]) -> Option<Vec<u8>> {
    if !has_any(source) {
        return None;
    }
    let mut out = source.to_vec();
    let mut at = 0;
    while let Some(found) = memchr::memmem::find(out.get(at..).unwrap_or_default(), b"??") {
        let start = at + found;
        match out.get(start + 2).copied().and_then(trigraph) {
            Some(b'\\') => {
                out[start..start + 3].copy_from_slice(b"  \\");
                at = start + 3;
            }
            Some(punctuation) => {
                out[start..start + 3].copy_from_slice(&[punctuation, b' ', b' ']);
                at = start + 3;
            }
            // `???=` is `?` then `??=`: look again one byte on.
            None => at = start + 1,
        }
    }
    let mut at = 0;
    while at + 1 < out.len() {
        match digraph(out[at], out[at + 1]) {
            Some(punctuation) => {
                out[at] = punctuation;
                out[at + 1] = b' ';
                if punctuation == b'#' && out.get(at + 2..at + 4) == Some(b"%:") {
                    // `%:%:` is the one token `##`, not two `#`.
                    out[at + 1] = b'#';
                    out[at + 2] = b' ';
                    out[at + 3] = b' ';
                    at += 4;
                } else {
                    at += 2;
                }
            }
            None => at += 1,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn respell(source: &str) -> Option<String> {
        respelled(source.as_bytes()).map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    #[test]
    fn trigraphs_are_their_punctuation_at_the_same_offsets() {
        assert_eq!(
            respell("??=define A ??< 1 ??>\n").as_deref(),
            Some("#  define A {   1 }  \n")
        );
        assert_eq!(
            respell("int m??(3??);\n").as_deref(),
            Some("int m[  3]  ;\n")
        );
        assert_eq!(
            respell("a ??! b ??' ??-c").as_deref(),
            Some("a |   b ^   ~  c")
        );
    }

    #[test]
    fn a_trigraph_backslash_stays_next_to_what_it_continues() {
        assert_eq!(
            respell("#define D 4 ???/\nmore\n").as_deref(),
            Some("#define D 4 ?  \\\nmore\n")
        );
        assert_eq!(respell("\"a??/n\"").as_deref(), Some("\"a  \\n\""));
    }

    #[test]
    fn question_marks_that_are_no_trigraph_stay() {
        assert_eq!(respell("x ? y : z; /* ??? */"), None);
        assert_eq!(respell("?????=").as_deref(), Some("???#  "));
    }

    #[test]
    fn digraphs_are_their_punctuation_at_the_same_offsets() {
        assert_eq!(
            respell("%:define S(x) %:x %:%: y\nstruct s <% int a<:2:>; %>;\n").as_deref(),
            Some("# define S(x) # x ##   y\nstruct s {  int a[ 2] ; } ;\n")
        );
        assert_eq!(respell("<:>").as_deref(), Some("[ >"));
    }

    #[test]
    fn trigraphs_come_before_digraphs() {
        assert_eq!(respell("??<:").as_deref(), Some("{  :"));
    }

    #[test]
    fn files_without_either_are_not_copied() {
        assert_eq!(
            respell("int a = b < c ? d % e : f;\n#include <stdio.h>\n"),
            None
        );
        assert_eq!(respell(""), None);
        assert_eq!(respell("?"), None);
        assert_eq!(respell("??"), None);
    }

    proptest! {
        /// Over any bytes, mostly the ones that make up the spellings: the copy has the
        /// same length, and every byte that is not punctuation of a spelling (letters,
        /// digits, `_`, newlines, non-ASCII) is unchanged, so names, lines and columns
        /// are too. A file with no spelling is not copied at all.
        #[test]
        fn offsets_and_identifiers_are_unchanged(
            source in proptest::collection::vec(
                prop_oneof![
                    4 => proptest::sample::select(b"?=()<>/'!-%:#\\ ".to_vec()),
                    1 => any::<u8>(),
                ],
                0..64,
            )
        ) {
            let out = respelled(&source);
            prop_assert_eq!(out.is_some(), has_any(&source));
            if let Some(out) = out {
                prop_assert_eq!(out.len(), source.len());
                for (before, after) in source.iter().zip(&out) {
                    if before.is_ascii_alphanumeric() || *before == b'_' || *before == b'\n' || !before.is_ascii() {
                        prop_assert_eq!(before, after);
                    }
                }
                prop_assert_eq!(respelled(&out), None, "a respelled copy has nothing left");
            }
        }
    }
}
