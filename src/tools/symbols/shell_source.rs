//! Shell source made parseable before tree-sitter-bash reads it.
//!
//! tree-sitter-bash (0.25.1, the newest release) misreads a few bash constructs, and a
//! misreading is rarely local: its scanner loses track of quotes and braces, so the
//! rest of the file becomes one ERROR of string fragments, and every function after
//! the construct is lost. bash-completion's library lost 58 of its 80 functions that
//! way. The constructs are patterns and regular expressions, which never define a
//! function or an alias, so their punctuation is overwritten before parsing:
//!
//! - in a `[[ x =~ re ]]` regular expression, a bracket expression whose first member is
//!   `]` (`[^]]`, `[]a]`): that `]` becomes `_`; a line continuation right after `=~`
//!   (`=~ \` at the end of a line) loses its backslash;
//! - an extended glob group that is part of a longer word (`*@(a|b)`, `$dir/!($skip)`,
//!   `@(*/|x)*`) or holds a bracket expression (`@(help|[h?])`): its parentheses and
//!   `|` become `_`, so the word stays one word;
//! - in the pattern of a parameter expansion (`${x%%[<{(]*}`, `${x%]}`), a brace or
//!   parenthesis inside a bracket expression, and a `]` that closes no bracket, become
//!   `_`.
//!
//! Every rewrite replaces one byte by one byte and never touches a newline, so every
//! byte offset, line and column the tree gives is the source's own, and names (which
//! are words outside these constructs) read the same. A file with none of the
//! constructs is not copied: the checks are `memchr` scans for `=~`, `(` and `${`.

use memchr::{memchr_iter, memmem};

/// The byte every overwritten punctuation byte becomes: a word character to the grammar.
const FILLER: u8 = b'_';

/// How far a group or an expansion is read before it is left alone: real ones are a
/// few dozen bytes (bash-completion's longest, a list of file extensions, is 600),
/// and a generated file's long line is not worth reading to its end for each.
const MAX_SPAN: usize = 1024;

/// `source` with the constructs above overwritten, or `None` when it has none of them.
pub(crate) fn parseable(source: &[u8]) -> Option<Vec<u8>> {
    let mut edits = Vec::new();
    regex_operands(source, &mut edits);
    extglob_groups(source, &mut edits);
    expansion_patterns(source, &mut edits);
    if edits.is_empty() {
        return None;
    }
    let mut out = source.to_vec();
    for (at, byte) in edits {
        if let Some(slot) = out.get_mut(at) {
            *slot = byte;
        }
    }
    Some(out)
}

fn is_blank(byte: u8) -> bool {
    matches!(byte, b' ' | b'\t' | b'\n' | b'\r')
}

/// The operand of each `=~` that stands as an operator (blanks on both sides): a
/// bracket expression opening with `]` loses that `]`, and a line continuation between
/// the operator and its operand becomes a blank (a newline inside `[[ ]]` is one).
fn regex_operands(source: &[u8], edits: &mut Vec<(usize, u8)>) {
    for at in memmem::find_iter(source, b"=~") {
        let before = at.checked_sub(1).and_then(|i| source.get(i));
        if !before.is_some_and(|&b| is_blank(b)) {
            continue;
        }
        let mut i = at + 2;
        if !source.get(i).is_some_and(|&b| b == b' ' || b == b'\t') {
            continue;
        }
        while source.get(i).is_some_and(|&b| b == b' ' || b == b'\t') {
            i += 1;
        }
        if source.get(i) == Some(&b'\\') && source.get(i + 1) == Some(&b'\n') {
            edits.push((i, b' '));
            i += 2;
            while source.get(i).is_some_and(|&b| b == b' ' || b == b'\t') {
                i += 1;
            }
        }
        while let Some(&byte) = source.get(i) {
            match byte {
                b if is_blank(b) => break,
                b'\\' => {
                    i += 2;
                    continue;
                }
                b'[' => {
                    let mut first = i + 1;
                    if matches!(source.get(first), Some(b'^' | b'!')) {
                        first += 1;
                    }
                    if source.get(first) == Some(&b']') {
                        edits.push((first, FILLER));
                        i = first;
                    }
                }
                _ => {}
            }
            i += 1;
        }
    }
}

/// Each extended glob group (`@(`, `+(`, `!(`, `?(`, `*(`) with other text of its word
/// before or after it, or with a bracket expression inside: its parentheses and
/// alternatives become word characters. A group alone in its word without brackets
/// (`@(a|b)`, a `case` pattern) is read right and left alone, and so is a group that a
/// blank, a quote or the end of the file interrupts, with the groups inside it.
fn extglob_groups(source: &[u8], edits: &mut Vec<(usize, u8)>) {
    let mut done = 0;
    for open in memchr_iter(b'(', source) {
        if open < done || open < 1 {
            continue;
        }
        if !matches!(source.get(open - 1), Some(b'@' | b'+' | b'!' | b'?' | b'*')) {
            continue;
        }
        let text_before = open
            .checked_sub(2)
            .and_then(|i| source.get(i))
            .is_some_and(|&b| !is_blank(b));
        let mut marks = Vec::new();
        let mut depth = 0usize;
        let mut i = open;
        let mut closed = false;
        let mut brackets = false;
        while let Some(&byte) = source.get(i) {
            if i - open > MAX_SPAN {
                break;
            }
            match byte {
                b'\\' => {
                    i += 2;
                    continue;
                }
                b'\'' | b'"' => break,
                b if is_blank(b) => break,
                b'[' => brackets = true,
                b'(' => {
                    depth += 1;
                    marks.push(i);
                }
                b')' => {
                    depth -= 1;
                    marks.push(i);
                    if depth == 0 {
                        closed = true;
                        break;
                    }
                }
                b'|' => marks.push(i),
                _ => {}
            }
            i += 1;
        }
        // What ends a word after the group: a blank, the `)` of a `case` pattern, an
        // operator.
        let text_after = source.get(i + 1).is_some_and(|&b| {
            !is_blank(b) && !matches!(b, b')' | b';' | b'|' | b'&' | b'<' | b'>')
        });
        if closed && (text_before || text_after || brackets) {
            edits.extend(marks.into_iter().map(|at| (at, FILLER)));
        }
        // The groups inside this one were read with it: reading each again would take
        // time quadratic in the nesting.
        done = i + 1;
    }
}

/// The pattern of each `${name…}` expansion on one line, after its operator (`%`, `#`,
/// `/`): braces and parentheses inside a bracket expression, and a `]` that closes
/// none, become word characters. The subscript before the operator (`${a[i]%x}`) is
/// left alone; an expansion with a quote or a `$` inside a bracket expression, or that
/// does not close on its line, is left alone whole.
///
/// An expansion nested in another is read with the outer one (`${a:-${b%]}}`), not again
/// on its own: that would take time quadratic in the nesting.
fn expansion_patterns(source: &[u8], edits: &mut Vec<(usize, u8)>) {
    let mut done = 0;
    for dollar in memmem::find_iter(source, b"${") {
        if dollar < done {
            continue;
        }
        let mut mine = Vec::new();
        let (closed, end) = expansion_pattern(source, dollar + 2, &mut mine);
        if closed {
            edits.extend(mine);
        }
        done = end;
    }
}

/// One expansion's edits, from just after its `${`, and where its reading stopped:
/// `false` when it is to be left alone.
fn expansion_pattern(source: &[u8], start: usize, edits: &mut Vec<(usize, u8)>) -> (bool, usize) {
    let mut depth = 1usize;
    let mut pattern = false;
    let mut subscript = 0usize;
    let mut i = start;
    while let Some(&byte) = source.get(i) {
        if i - start > MAX_SPAN {
            return (false, i);
        }
        match byte {
            b'\n' => return (false, i),
            b'\\' => {
                i += 2;
                continue;
            }
            b'[' if pattern => match bracket(source, i, edits) {
                Some(end) => i = end,
                None => return (false, i),
            },
            b'[' => subscript += 1,
            b']' if subscript > 0 => subscript -= 1,
            b']' if pattern => edits.push((i, FILLER)),
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    return (true, i);
                }
            }
            // `${#name}` is a length, not a pattern; after the name, `#`, `%` and `/`
            // start one.
            b'%' | b'/' => pattern = true,
            b'#' if i > start => pattern = true,
            _ => {}
        }
        i += 1;
    }
    (false, i)
}

/// The bracket expression opening at `open` in a pattern: its braces and parentheses
/// become word characters. Returns where it closes, or `None` when it holds a quote or
/// a `$`, or does not close on its line.
fn bracket(source: &[u8], open: usize, edits: &mut Vec<(usize, u8)>) -> Option<usize> {
    let mut i = open + 1;
    if matches!(source.get(i), Some(b'^' | b'!')) {
        i += 1;
    }
    // A `]` first is a member, not the end.
    if source.get(i) == Some(&b']') {
        i += 1;
    }
    while let Some(&byte) = source.get(i) {
        if i - open > MAX_SPAN {
            return None;
        }
        match byte {
            b']' => return Some(i),
            b'\n' | b'\'' | b'"' | b'$' => return None,
            b'\\' => i += 1,
            // A class (`[:space:]`) ends at its own `:]`.
            b'[' if source.get(i + 1) == Some(&b':') => {
                let rest = source.get(i + 2..)?;
                let end = memmem::find(rest, b":]")?;
                i += 2 + end + 1;
            }
            b'{' | b'}' | b'(' | b')' => edits.push((i, FILLER)),
            _ => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::parseable;

    fn rewritten(source: &str) -> String {
        let out = parseable(source.as_bytes()).unwrap_or_else(|| source.as_bytes().to_vec());
        assert_eq!(out.len(), source.len(), "{source}");
        String::from_utf8(out).unwrap_or_default()
    }

    #[test]
    fn every_offset_and_line_is_kept() {
        let source = "\
f() {
    [[ $v =~ ^x([^]]*)$ ]] && [[ $w =~ \\
        (a|b) ]]
    [[ $os == *@(one|two)* ]] && g=${g%%[<{(]*} h=${h%]?(:+([0-9]))}
    for f in $dir/!($skip); do :; done
}
";
        let out = rewritten(source);
        let lines = |s: &str| s.match_indices('\n').map(|(at, _)| at).collect::<Vec<_>>();
        assert_eq!(lines(&out), lines(source));
        // Names and words outside the constructs are unchanged.
        for (a, b) in source.bytes().zip(out.bytes()) {
            assert!(a == b || matches!(a, b'[' | b']' | b'(' | b')' | b'{' | b'}' | b'|' | b'\\'));
        }
        assert!(out.contains("f() {"));
        assert!(out.contains("([^_]*)$"));
        assert!(out.contains("=~  \n        (a|b)"));
        assert!(out.contains("*@_one_two_*"));
        assert!(out.contains("${g%%[<__]*}"));
        assert!(out.contains("$dir/!_$skip_;"));
    }

    #[test]
    fn extglob_groups_alone_in_their_word_are_left_alone() {
        let source = "case $1 in\n    @(a|b)) x ;;\n    !(c)|d) y ;;\nesac\n[[ $1 == @(a|b) ]]\n";
        assert_eq!(parseable(source.as_bytes()), None);
        let source = "[[ $1 == @(*/|[.~])* ]]\n[[ $2 == @(h|[h?]) ]]\n";
        assert_eq!(
            rewritten(source),
            "[[ $1 == @_*/_[.~]_* ]]\n[[ $2 == @_h_[h?]_ ]]\n"
        );
    }

    /// A long line of unclosed groups and expansions is read in linear time, and left
    /// alone.
    #[test]
    fn unclosed_groups_on_a_long_line_are_bounded() {
        let line = "x@(${".repeat(200_000);
        let started = std::time::Instant::now();
        assert_eq!(parseable(line.as_bytes()), None);
        assert!(started.elapsed() < std::time::Duration::from_secs(5));
    }

    #[test]
    fn a_file_without_the_constructs_is_not_copied() {
        let source = "f() {\n    a=${b%%.*} c=$((1 * (2)))\n    [[ $x =~ ^[a-z]+$ ]]\n}\n";
        assert_eq!(parseable(source.as_bytes()), None);
    }

    #[test]
    fn subscripts_and_classes_are_left_alone() {
        for source in [
            "x=${a[${#a[@]}-1]}\n",
            "x=${a[i]%.*}\n",
            "x=${a//[[:space:]]/}\n",
            "x=${a//[\"']/}\n",
            "dir=~/x\n",
        ] {
            assert_eq!(parseable(source.as_bytes()), None, "{source}");
        }
    }
}
