//! PHP 5's other open and close tags, read as `<?php` and `?>` before parsing.
//!
//! Until PHP 7.0, `<script language="php">` (also `language=php` or `'php'`, with any
//! whitespace inside, in any case) opened PHP code as `<?php` does, and `</script>`
//! closed it as `?>` does, whichever tag opened it. tree-sitter-php knows only `<?php`,
//! `<?=`, `<?` and `?>`, so it reads what such tags enclose as HTML text and finds no
//! definition in it (8 of ctags' 301 PHP unit tags).
//!
//! [`parseable`] writes a copy in which each such open tag is `<?php` and each such close
//! tag `?>`, padded with spaces to the tag's length, with the line ends inside a tag
//! kept: every byte offset and line stays where it was, and no byte outside the tags
//! changes, so a definition found in the copy has the name, line and scope it has in the
//! file as written. The copy is made only for a file that holds `<script` or `<SCRIPT`
//! (one `memmem` scan each) and then an open tag for PHP; any other file is parsed as it
//! is, so a first lookup pays nothing for a tag that PHP 7 removed.
//!
//! A close tag ends PHP code only where PHP 5's lexer saw one: in code, not inside a
//! string, a comment or a heredoc (`echo "</script>";` stays PHP). So the file is walked
//! as that lexer would, skipping those; a one-line comment ends at `?>` as in PHP. What
//! it does not do: a `<script` spelled in mixed case (`<Script`) is not looked for, and
//! a heredoc's closing marker is found at the start of a line after any indentation,
//! as PHP 7.3 reads it, not only in the first column as PHP 5 did.

use memchr::{memchr, memmem};

/// The source with PHP 5's `<script language="php">` and `</script>` tags respelled as
/// `<?php` and `?>` at the same offsets, or `None` when it has none (most files: they are
/// parsed as they are).
pub(crate) fn parseable(source: &[u8]) -> Option<Vec<u8>> {
    if memmem::find(source, b"<script").is_none() && memmem::find(source, b"<SCRIPT").is_none() {
        return None;
    }
    let mut copy: Option<Vec<u8>> = None;
    let mut at = 0;
    while at < source.len() {
        // Outside PHP: the next `<?` or PHP open tag starts PHP code.
        let Some(lt) = source
            .get(at..)
            .and_then(|rest| memchr(b'<', rest))
            .map(|offset| at + offset)
        else {
            break;
        };
        if source.get(lt + 1) == Some(&b'?') {
            at = skip_php(source, lt + 2, &mut copy);
        } else if let Some(end) = open_tag_end(source, lt) {
            respell(
                copy.get_or_insert_with(|| source.to_vec()),
                lt,
                end,
                b"<?php",
            );
            at = skip_php(source, end, &mut copy);
        } else {
            at = lt + 1;
        }
    }
    copy
}

/// Where the PHP code that starts at `at` ends: past its `?>` or `</script>` (the
/// latter respelled in `copy`), or at the end of the source.
fn skip_php(source: &[u8], mut at: usize, copy: &mut Option<Vec<u8>>) -> usize {
    while let Some(&byte) = source.get(at) {
        let next = source.get(at + 1).copied();
        at = match (byte, next) {
            (b'?', Some(b'>')) => return at + 2,
            (b'<', Some(b'/')) => match close_tag_end(source, at) {
                Some(end) => {
                    respell(copy.get_or_insert_with(|| source.to_vec()), at, end, b"?>");
                    return end;
                }
                None => at + 2,
            },
            (b'#', _) => line_comment_end(source, at + 1),
            (b'/', Some(b'/')) => line_comment_end(source, at + 2),
            (b'/', Some(b'*')) => source
                .get(at + 2..)
                .and_then(|rest| memmem::find(rest, b"*/"))
                .map_or(source.len(), |offset| at + 2 + offset + 2),
            (b'\'' | b'"' | b'`', _) => quoted_end(source, at + 1, byte),
            (b'<', Some(b'<')) if source.get(at + 2) == Some(&b'<') => heredoc_end(source, at + 3),
            _ => at + 1,
        };
    }
    at
}

/// Overwrites `copy[start..end]` with `tag` and spaces after it, keeping line ends.
fn respell(copy: &mut [u8], start: usize, end: usize, tag: &[u8]) {
    let Some(span) = copy.get_mut(start..end) else {
        return;
    };
    for (index, byte) in span.iter_mut().enumerate() {
        if let Some(&replacement) = tag.get(index) {
            *byte = replacement;
        } else if !matches!(*byte, b'\n' | b'\r') {
            *byte = b' ';
        }
    }
}

/// The end of a `<script language="php">` open tag at `at` (any case, any whitespace
/// around `=`, the value bare or quoted), if one is there.
fn open_tag_end(source: &[u8], at: usize) -> Option<usize> {
    let mut at = keyword(source, at, b"<script")?;
    let after_script = skip_space(source, at);
    if after_script == at {
        return None;
    }
    at = keyword(source, after_script, b"language")?;
    at = skip_space(source, at);
    at = keyword(source, at, b"=")?;
    at = skip_space(source, at);
    at = match source.get(at)? {
        quote @ (b'"' | b'\'') => {
            let end = keyword(source, at + 1, b"php")?;
            (source.get(end)? == quote).then_some(end + 1)?
        }
        _ => keyword(source, at, b"php")?,
    };
    at = skip_space(source, at);
    (source.get(at)? == &b'>').then_some(at + 1)
}

/// The end of a `</script>` close tag at `at`, with any whitespace before its `>`.
fn close_tag_end(source: &[u8], at: usize) -> Option<usize> {
    let at = skip_space(source, keyword(source, at, b"</script")?);
    (source.get(at)? == &b'>').then_some(at + 1)
}

/// Past `word` at `at`, compared without ASCII case, if it is there.
fn keyword(source: &[u8], at: usize, word: &[u8]) -> Option<usize> {
    let end = at.checked_add(word.len())?;
    source
        .get(at..end)?
        .eq_ignore_ascii_case(word)
        .then_some(end)
}

/// The first offset from `at` that is not whitespace.
fn skip_space(source: &[u8], at: usize) -> usize {
    source
        .get(at..)
        .and_then(|rest| rest.iter().position(|byte| !byte.is_ascii_whitespace()))
        .map_or(source.len(), |offset| at + offset)
}

/// Where a `//` or `#` comment whose text starts at `at` ends: at its line end, or at a
/// `?>` in it, which ends PHP code too.
fn line_comment_end(source: &[u8], at: usize) -> usize {
    let mut at = at;
    while let Some(&byte) = source.get(at) {
        match byte {
            b'\n' | b'\r' => return at,
            b'?' if source.get(at + 1) == Some(&b'>') => return at,
            _ => at += 1,
        }
    }
    at
}

/// Past the `quote` that closes a string whose text starts at `at` (a backslash escapes
/// the byte after it), or the end of the source.
fn quoted_end(source: &[u8], at: usize, quote: u8) -> usize {
    let mut at = at;
    while let Some(&byte) = source.get(at) {
        match byte {
            b'\\' => at += 2,
            _ if byte == quote => return at + 1,
            _ => at += 1,
        }
    }
    source.len()
}

/// Past the closing marker of a heredoc or nowdoc whose `<<<` ends at `at`: the first
/// line that starts (after indentation) with its label, not followed by a name byte. A
/// `<<<` that opens no label (not PHP) is skipped alone.
fn heredoc_end(source: &[u8], at: usize) -> usize {
    let mut start = at;
    while matches!(source.get(start), Some(b' ' | b'\t')) {
        start += 1;
    }
    if matches!(source.get(start), Some(b'"' | b'\'')) {
        start += 1;
    }
    let label_len = source.get(start..).map_or(0, |rest| {
        rest.iter().take_while(|&&b| is_name_byte(b)).count()
    });
    let Some(label) = source
        .get(start..start + label_len)
        .filter(|l| !l.is_empty())
    else {
        return at;
    };
    let mut line = start + label_len;
    while let Some(offset) = source.get(line..).and_then(|rest| memchr(b'\n', rest)) {
        let text = skip_indent(source, line + offset + 1);
        let end = text + label.len();
        if source.get(text..end) == Some(label)
            && !source.get(end).copied().is_some_and(is_name_byte)
        {
            return end;
        }
        line = text;
    }
    source.len()
}

/// The first offset from `at` that is not a space or tab.
fn skip_indent(source: &[u8], at: usize) -> usize {
    let mut at = at;
    while matches!(source.get(at), Some(b' ' | b'\t')) {
        at += 1;
    }
    at
}

/// A byte of a PHP name: a letter, digit, `_` or any byte of a non-ASCII character.
fn is_name_byte(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte >= 0x80
}

#[cfg(test)]
mod tests {
    use super::parseable;

    /// The copy has the source's length and line ends, and differs only inside tags.
    fn assert_same_layout(source: &str, copy: &[u8]) {
        assert_eq!(copy.len(), source.len());
        for (offset, (&was, &now)) in source.as_bytes().iter().zip(copy).enumerate() {
            if matches!(was, b'\n' | b'\r') || matches!(now, b'\n' | b'\r') {
                assert_eq!(was, now, "line end moved at {offset}");
            }
        }
    }

    fn respelled(source: &str) -> String {
        let copy = parseable(source.as_bytes()).expect("a copy");
        assert_same_layout(source, &copy);
        String::from_utf8(copy).expect("UTF-8")
    }

    #[test]
    fn script_tags_become_php_tags_at_the_same_offsets() {
        let source = "<p>\n<script language=\"php\">\nfunction a() {}\n</script>\n<b>";
        assert_eq!(
            respelled(source),
            "<p>\n<?php                  \nfunction a() {}\n?>       \n<b>"
        );
    }

    #[test]
    fn tags_across_lines_keep_their_line_ends() {
        let source = "<SCRIPT\n  Language = 'PHP'\n>\nfunction b() {}\n</script\n >x";
        assert_eq!(
            respelled(source),
            format!(
                "<?php  \n{}\n \nfunction b() {{}}\n?>{}\n  x",
                " ".repeat(18),
                " ".repeat(6)
            )
        );
    }

    #[test]
    fn close_tags_in_strings_comments_and_heredocs_stay() {
        let source = "<script language=php>\n$s = '</script>'; // </script>\n# </script>\n/* </script> */\n$h = <<<EOT\n</script>\nEOT;\n</script>";
        let copy = respelled(source);
        assert_eq!(copy.matches("</script>").count(), 5, "{copy}");
        assert!(copy.ends_with("\n?>       "), "{copy}");
    }

    #[test]
    fn files_without_a_php_script_tag_are_parsed_as_they_are() {
        assert_eq!(parseable(b"<?php\nfunction a() {}\n"), None);
        let html = b"<?php echo 1; ?>\n<script>let x = '</script>';</script>\n";
        assert_eq!(parseable(html), None);
        // Only the PHP 5 tags change: a JavaScript block after `?>` is HTML.
        let mixed = b"<script language=php> $a = 1; </script>\n<script>x()</script>\n";
        let copy = parseable(mixed).expect("a copy");
        assert!(copy.ends_with(b"\n<script>x()</script>\n"));
    }
}
