//! The key a line of a simple configuration format assigns: npm's ini (`.npmrc`), Yarn 1's
//! `.yarnrc`, YAML (`.yarnrc.yml`) and Java properties (`gradle.properties`).
//!
//! Each reader unquotes the key the way its program does (a double-quoted key is decoded,
//! escapes included), so a quoted or escaped spelling is compared as the program reads
//! it. A quoted key whose escapes cannot be decoded is [`KeyText::Unreadable`], and warns.

/// A key as the program reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum KeyText {
    Name(String),
    /// A quoted key with an escape this reader does not decode.
    Unreadable,
}

/// The key an `.npmrc` line assigns (`key = value`, `"key" = value`, `key[] = value`).
/// npm's ini parser takes everything before the first `=`, trimmed, and decodes a
/// double-quoted key as JSON.
pub(super) fn ini(line: &str) -> Option<KeyText> {
    let trimmed = line.trim();
    if trimmed.is_empty() || trimmed.starts_with([';', '#', '[']) {
        return None;
    }
    let key = trimmed.split('=').next().unwrap_or(trimmed).trim();
    let key = key.strip_suffix("[]").unwrap_or(key).trim();
    Some(unquote(key))
}

/// The key a `.yarnrc` line sets (`yarn-path "./x.js"`, `"yarn-path" ./x`, `yarn-path: x`):
/// the first token, when a value follows it.
pub(super) fn spaced(line: &str) -> Option<KeyText> {
    let trimmed = line.trim();
    if trimmed.starts_with('#') {
        return None;
    }
    let (key, rest) = if trimmed.starts_with('"') {
        let end = quoted_end(trimmed)?;
        (&trimmed[..end], &trimmed[end..])
    } else {
        let end = trimmed
            .find(|c: char| c.is_whitespace() || c == ':')
            .unwrap_or(trimmed.len());
        (&trimmed[..end], &trimmed[end..])
    };
    let value = rest.trim_start().trim_start_matches(':').trim();
    (!key.is_empty() && !value.is_empty()).then(|| unquote(key))
}

/// The keys a YAML line maps: after indentation and `- ` or `? ` markers, and after each
/// `{` or `,` of a flow mapping, a plain, single- or double-quoted scalar followed by `:`.
/// A `? key` line (an explicit key) counts with or without the `:`.
pub(super) fn yaml(line: &str) -> Vec<KeyText> {
    let mut found = Vec::new();
    let mut rest = line.trim_start();
    if rest.starts_with('#') {
        return found;
    }
    loop {
        let stripped = rest
            .strip_prefix("- ")
            .or_else(|| rest.strip_prefix("? "))
            .map(str::trim_start);
        match stripped {
            Some(s) => {
                if rest.starts_with('?') {
                    found.push(unquote(s.trim_end_matches(':').trim()));
                }
                rest = s;
            }
            None => break,
        }
    }
    let mut starts = vec![rest];
    let mut in_quote = None;
    for (i, c) in rest.char_indices() {
        match (in_quote, c) {
            (None, '"' | '\'') => in_quote = Some(c),
            (Some(q), _) if c == q => in_quote = None,
            (None, '#') => break,
            (None, '{' | ',') => starts.push(rest[i + 1..].trim_start()),
            _ => {}
        }
    }
    for text in starts {
        let end = if text.starts_with(['"', '\'']) {
            quoted_end(text)
        } else {
            text.find(':')
        };
        let Some(end) = end else { continue };
        let after = text[end..].trim_start();
        let colon = after.strip_prefix(':');
        let maps = colon.is_some_and(|r| r.is_empty() || r.starts_with(char::is_whitespace));
        if maps {
            let key = text[..end].trim();
            if !key.is_empty() {
                found.push(unquote(key));
            }
        }
    }
    found
}

/// The logical lines of a Java properties file (an odd number of trailing backslashes
/// joins the next line, without its leading whitespace), with their first line's number.
pub(super) fn properties_lines(text: &str) -> Vec<(usize, String)> {
    let mut lines = Vec::new();
    let mut current: Option<(usize, String)> = None;
    for (i, line) in text.lines().enumerate() {
        let (number, mut joined, line, continuing) = match current.take() {
            Some((n, j)) => (n, j, line.trim_start(), true),
            None => (i + 1, String::new(), line, false),
        };
        let trailing = line.len() - line.trim_end_matches('\\').len();
        // A comment line does not continue; a continued line that starts with `#` is value.
        if trailing % 2 == 1 && (continuing || !is_comment(line)) {
            joined.push_str(&line[..line.len() - 1]);
            current = Some((number, joined));
        } else {
            joined.push_str(line);
            lines.push((number, joined));
        }
    }
    lines.extend(current);
    lines
}

fn is_comment(line: &str) -> bool {
    line.trim_start().starts_with(['#', '!'])
}

/// The key a logical properties line assigns: up to the first unescaped `=`, `:` or
/// whitespace, with `\uXXXX` and other escapes decoded.
pub(super) fn properties(line: &str) -> Option<KeyText> {
    let trimmed = line.trim_start();
    if trimmed.is_empty() || is_comment(trimmed) {
        return None;
    }
    let mut key = String::new();
    let mut chars = trimmed.chars();
    while let Some(c) = chars.next() {
        match c {
            '=' | ':' => break,
            c if c.is_whitespace() => break,
            '\\' => match chars.next() {
                Some('u') => {
                    let hex: String = chars.by_ref().take(4).collect();
                    let decoded = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32);
                    match decoded {
                        Some(c) if hex.len() == 4 => key.push(c),
                        _ => return Some(KeyText::Unreadable),
                    }
                }
                Some('t') => key.push('\t'),
                Some('n') => key.push('\n'),
                Some('r') => key.push('\r'),
                Some('f') => key.push('\u{c}'),
                Some(other) => key.push(other),
                None => {}
            },
            c => key.push(c),
        }
    }
    Some(KeyText::Name(key))
}

/// The byte length of the quoted string that opens `text`, quotes included.
fn quoted_end(text: &str) -> Option<usize> {
    let quote = text.chars().next()?;
    let mut escaped = false;
    for (i, c) in text.char_indices().skip(1) {
        match c {
            _ if escaped => escaped = false,
            '\\' if quote == '"' => escaped = true,
            _ if c == quote => return Some(i + 1),
            _ => {}
        }
    }
    None
}

/// A key without its quotes: a double-quoted one decoded as JSON (which covers YAML's
/// common escapes), a single-quoted one with `''` read as `'`.
fn unquote(key: &str) -> KeyText {
    if key.len() >= 2 && key.starts_with('"') && key.ends_with('"') {
        return json_string(&key[1..key.len() - 1]);
    }
    if key.len() >= 2 && key.starts_with('\'') && key.ends_with('\'') {
        return KeyText::Name(key[1..key.len() - 1].replace("''", "'"));
    }
    KeyText::Name(key.to_owned())
}

/// The body of a JSON string, decoded; [`KeyText::Unreadable`] on an escape JSON lacks.
fn json_string(body: &str) -> KeyText {
    let mut out = String::new();
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let decoded = match chars.next() {
            Some('"') => Some('"'),
            Some('\\') => Some('\\'),
            Some('/') => Some('/'),
            Some('b') => Some('\u{8}'),
            Some('f') => Some('\u{c}'),
            Some('n') => Some('\n'),
            Some('r') => Some('\r'),
            Some('t') => Some('\t'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
            }
            _ => None,
        };
        match decoded {
            Some(c) => out.push(c),
            None => return KeyText::Unreadable,
        }
    }
    KeyText::Name(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(s: &str) -> Option<KeyText> {
        Some(KeyText::Name(s.to_owned()))
    }

    #[test]
    fn ini_keys_are_unquoted() {
        assert_eq!(ini("script-shell=./x"), name("script-shell"));
        assert_eq!(ini("  \"scr\\u0069pt-shell\" = ./x"), name("script-shell"));
        assert_eq!(ini("'git' = ./x"), name("git"));
        assert_eq!(ini("node-options[] = x"), name("node-options"));
        assert_eq!(ini("; git = x"), None);
        assert_eq!(ini("\"a\\q\" = x"), Some(KeyText::Unreadable));
    }

    #[test]
    fn yarnrc_keys_need_a_value() {
        assert_eq!(spaced("yarn-path \"./x.js\""), name("yarn-path"));
        assert_eq!(spaced("\"yarn-path\" ./x.js"), name("yarn-path"));
        assert_eq!(spaced("yarn-path: ./x.js"), name("yarn-path"));
        assert_eq!(spaced("yarn-path"), None);
    }

    #[test]
    fn yaml_keys_in_every_position() {
        let names = |line: &str| -> Vec<KeyText> { yaml(line) };
        for (line, want) in [
            ("yarnPath: .yarn/releases/y.cjs", "yarnPath"),
            ("\"yarnPath\": x", "yarnPath"),
            ("'yarnPath' : x", "yarnPath"),
            ("\"yarn\\u0050ath\": x", "yarnPath"),
            ("plugins:", "plugins"),
            ("  - path: .yarn/plugins/p.cjs", "path"),
            ("? yarnPath", "yarnPath"),
        ] {
            assert!(
                names(line).contains(&KeyText::Name(want.to_owned())),
                "{line}: {:?}",
                names(line)
            );
        }
        assert!(names("{a: 1, yarnPath: x}").contains(&KeyText::Name("yarnPath".to_owned())));
        assert!(names("# yarnPath: x").is_empty());
        assert!(
            names("x: \"yarnPath: y\"")
                .iter()
                .all(|k| *k == KeyText::Name("x".to_owned()))
        );
    }

    #[test]
    fn properties_keys_are_unescaped_and_joined() {
        assert_eq!(
            properties("org.gradle.java.home=/x"),
            name("org.gradle.java.home")
        );
        assert_eq!(
            properties("org.gradle.java.home : /x"),
            name("org.gradle.java.home")
        );
        assert_eq!(
            properties("org.gradle.java.home /x"),
            name("org.gradle.java.home")
        );
        assert_eq!(
            properties("org.gradle.java\\u002ehome=/x"),
            name("org.gradle.java.home")
        );
        assert_eq!(properties("# org.gradle.java.home=/x"), None);
        let lines = properties_lines("org.gradle.\\\n    java.home=/x\n# a \\\nb=1\n");
        assert_eq!(lines[0], (1, "org.gradle.java.home=/x".to_owned()));
        assert_eq!(lines[1], (3, "# a \\".to_owned()));
        assert_eq!(lines[2], (4, "b=1".to_owned()));
    }
}
