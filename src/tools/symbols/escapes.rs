//! Names spelled with escapes: a JavaScript identifier may write any of its characters
//! as `\u00e9` or `\u{e9}`, and a quoted key (`'\u00e9_2': ...`) any character of its
//! text. The name is the decoded text, as ctags names it and as a reader asks for it
//! (`é_2`), not the spelling.
//!
//! The prefilter looks for a name's text in a file before parsing it; for a non-ASCII
//! name it also lets through files that hold a `\u` escape ([`super::prefilter`]), so a
//! name decoded here is one a lookup finds. An ASCII name spelled with escapes
//! (`\u0061bc`) is decoded too, but the prefilter, which looks for `abc`, does not reach
//! it: such spellings are obfuscation, not code anyone navigates.

use std::borrow::Cow;

/// `text` (an identifier's source) with its `\uXXXX` and `\u{X…}` escapes decoded;
/// borrowed when it has none, `None` when an escape is malformed.
pub(crate) fn identifier(text: &str) -> Option<Cow<'_, str>> {
    if !text.contains('\\') {
        return Some(Cow::Borrowed(text));
    }
    decode(text, false).map(Cow::Owned)
}

/// The value of a JavaScript string literal's source (`'a\'b'`, quotes included):
/// its escapes decoded. `None` when it is not quoted, when an escape is malformed or
/// one of the others (`\x41`, `\n`), or when a line continuation splits it (`"sec\`
/// then `ond"`): the prefilter, which reads the file's identifiers, could not find the
/// joined name, so it is not offered.
pub(crate) fn string_value(text: &str) -> Option<String> {
    let inner = text
        .strip_prefix('\'')
        .and_then(|t| t.strip_suffix('\''))
        .or_else(|| text.strip_prefix('"').and_then(|t| t.strip_suffix('"')))?;
    decode(inner, true)
}

/// Decodes the escapes of `text`: only `\u` ones in an identifier; those and an
/// escaped quote or backslash in a string (`in_string`).
fn decode(text: &str, in_string: bool) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    // A UTF-16 high surrogate waiting for its low half (`\uD800\uDF00`).
    let mut high: Option<u32> = None;
    while let Some(c) = chars.next() {
        if c != '\\' {
            if high.take().is_some() {
                return None;
            }
            out.push(c);
            continue;
        }
        let escape = chars.next()?;
        if escape == 'u' {
            let unit = if chars.peek() == Some(&'{') {
                chars.next();
                let mut value = 0u32;
                let mut digits = 0;
                loop {
                    let d = chars.next()?;
                    if d == '}' {
                        break;
                    }
                    value = value.checked_mul(16)?.checked_add(d.to_digit(16)?)?;
                    digits += 1;
                }
                if digits == 0 {
                    return None;
                }
                value
            } else {
                let mut value = 0u32;
                for _ in 0..4 {
                    value = value * 16 + chars.next()?.to_digit(16)?;
                }
                value
            };
            match (high.take(), unit) {
                (None, 0xD800..=0xDBFF) => high = Some(unit),
                (Some(h), 0xDC00..=0xDFFF) => {
                    out.push(char::from_u32(
                        0x10000 + ((h - 0xD800) << 10) + (unit - 0xDC00),
                    )?);
                }
                (None, _) => out.push(char::from_u32(unit)?),
                (Some(_), _) => return None,
            }
            continue;
        }
        if high.is_some() || !in_string {
            return None;
        }
        // A quote or a backslash stands for itself. Other escapes (`\x41`, `\n`) are
        // spellings of table data (lodash's `'\xc0': 'A'`), not of names anyone asks
        // for, and ctags does not decode them either: such a key is not a definition.
        match escape {
            '\\' | '\'' | '"' => out.push(escape),
            _ => return None,
        }
    }
    high.is_none().then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_decode_their_unicode_escapes() {
        assert_eq!(identifier("plain").as_deref(), Some("plain"));
        assert_eq!(identifier("\\u00E9_2").as_deref(), Some("é_2"));
        assert_eq!(identifier("\\u{e9}_4").as_deref(), Some("é_4"));
        assert_eq!(identifier("\\u{000000e9}_5").as_deref(), Some("é_5"));
        assert_eq!(identifier("\\u{65}\\u0301").as_deref(), Some("e\u{301}"));
        assert_eq!(identifier("\\u00"), None);
        assert_eq!(identifier("\\u{}"), None);
        assert_eq!(identifier("\\u{110000}"), None);
        assert_eq!(identifier("\\n"), None);
    }

    #[test]
    fn strings_decode_every_escape_and_surrogate_pairs() {
        assert_eq!(string_value("'\\uD800\\uDF00_2'").as_deref(), Some("𐌀_2"));
        assert_eq!(string_value("\"\\u{10300}_3\"").as_deref(), Some("𐌀_3"));
        assert_eq!(string_value("'\\\\key'").as_deref(), Some("\\key"));
        assert_eq!(string_value("'it\\'s'").as_deref(), Some("it's"));
        assert_eq!(string_value("'\\x41'"), None);
        assert_eq!(string_value("'\\n'"), None);
        assert_eq!(string_value("'\\uD800'"), None);
        assert_eq!(string_value("'\\uD800x'"), None);
        assert_eq!(string_value("'sec\\\nond'"), None);
        assert_eq!(string_value("`tpl`"), None);
    }
}
