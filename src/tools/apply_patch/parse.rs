//! A tolerant reader for unified diffs as models actually write them.
//!
//! It accepts git's format and the plain `diff -u` format, with or without the `diff --git`
//! line, with or without `a/` `b/` prefixes, inside a Markdown code fence or not (when the
//! text has fences, only what is inside them is the patch), and it ignores the hunk line
//! counts entirely: a hunk's body runs until the next hunk, the next file, or a line that
//! cannot be part of a hunk. The counts are recomputed later from the body, which is what
//! makes overstated, understated and omitted counts harmless.
//!
//! What it does not guess at: binary patches are recorded as binary and copies as copies
//! (both refused later); a hunk outside any file section is an error that says so; and a
//! hunk cut short by a line that is not a hunk line is an error when a change (`+` or `-`
//! line) follows before the next hunk or file, so no change is ever silently dropped.

use crate::project::FileMode;

/// One line of a hunk body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum HunkLine {
    /// Present before and after (` ` prefix, or a bare empty line).
    Context(String),
    /// Removed (`-` prefix).
    Delete(String),
    /// Added (`+` prefix).
    Add(String),
    /// `\ No newline at end of file`, about the line before it.
    NoNewline,
}

/// One `@@` hunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Hunk {
    /// The old start line the model claimed (1-based; 0 for an insertion at the top).
    pub(crate) claimed_start: usize,
    /// Where the hunk header is in the patch text (1-based), for error messages.
    pub(crate) patch_line: usize,
    /// The body.
    pub(crate) lines: Vec<HunkLine>,
}

/// The changes to one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct FilePatch {
    /// The path before (`None` for a created file).
    pub(crate) old_path: Option<String>,
    /// The path after (`None` for a deleted file).
    pub(crate) new_path: Option<String>,
    /// Mode the file should have afterwards (`new file mode`, `new mode`), if stated.
    pub(crate) new_mode: Option<FileMode>,
    /// Mode the patch says the file has now (`old mode`), if stated; checked against the
    /// file on disk before anything is asked.
    pub(crate) old_mode: Option<FileMode>,
    /// True for `GIT binary patch` or `Binary files ... differ`.
    pub(crate) binary: bool,
    /// True for a copy (`copy from` / `copy to`), which apply_patch does not do.
    pub(crate) copy: bool,
    /// The hunks, in patch order.
    pub(crate) hunks: Vec<Hunk>,
}

/// Why a patch could not even be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line} of the patch: {message}")]
pub(crate) struct ParseError {
    /// 1-based line in the patch text.
    pub(crate) line: usize,
    /// What is wrong and what was expected.
    pub(crate) message: String,
}

/// Reads a patch into per-file changes.
pub(crate) fn parse(text: &str) -> Result<Vec<FilePatch>, ParseError> {
    let lines = patch_lines(text);
    let mut files: Vec<FilePatch> = Vec::new();
    // True while the current file section came from `diff --git` and has not yet seen its
    // `---`/`+++` pair, so that pair belongs to it rather than starting a new section.
    let mut awaiting_paths = false;
    let mut i = 0;
    while i < lines.len() {
        let (number, line) = lines[i];
        let header = line.trim_end_matches('\r');
        if let Some(rest) = header.strip_prefix("diff --git ") {
            let (old, new) = split_git_paths(rest);
            files.push(FilePatch {
                old_path: old,
                new_path: new,
                ..FilePatch::default()
            });
            awaiting_paths = true;
            i += 1;
        } else if is_path_pair(&lines, i) {
            let old = header_path(&header[4..]);
            let new = header_path(lines[i + 1].1[4..].trim_end_matches('\r'));
            // The pair belongs to the `diff --git` section above only if it names the same
            // files; after a section that needs no pair (a pure rename, a mode change, an
            // empty file), a pair for another file starts that file's own section.
            // A side the section leaves open (/dev/null after `new file mode`) is no
            // wildcard: every path the pair names must be one the section names, or an
            // empty file's creation followed by another file's pair would swallow it.
            let belongs = awaiting_paths
                && files.last().is_some_and(|file| {
                    let known: Vec<&str> = [file.old_path.as_deref(), file.new_path.as_deref()]
                        .into_iter()
                        .flatten()
                        .collect();
                    same_file(&file.old_path, &old)
                        && same_file(&file.new_path, &new)
                        && (known.is_empty()
                            || [old.as_deref(), new.as_deref()]
                                .into_iter()
                                .flatten()
                                .all(|path| known.contains(&path)))
                });
            if !belongs {
                files.push(FilePatch::default());
            }
            if let Some(file) = files.last_mut() {
                // `---`/`+++` are authoritative for creation and deletion (/dev/null).
                file.old_path = old;
                file.new_path = new;
            }
            awaiting_paths = false;
            i += 2;
        } else if line.starts_with("@@") {
            let Some(file) = files.last_mut() else {
                return Err(ParseError {
                    line: number,
                    message: "a hunk (`@@`) before any file header; start each file with `--- a/PATH` and `+++ b/PATH`".to_owned(),
                });
            };
            awaiting_paths = false;
            let claimed_start = parse_old_start(line).ok_or_else(|| ParseError {
                line: number,
                message: format!("cannot read the hunk header `{line}`; expected `@@ -START,COUNT +START,COUNT @@`"),
            })?;
            let (body, next) = read_body(&lines, i + 1);
            check_nothing_dropped(&lines, next)?;
            file.hunks.push(Hunk {
                claimed_start,
                patch_line: number,
                lines: body,
            });
            i = next;
        } else {
            if let Some(file) = files.last_mut() {
                read_extended_header(file, header).map_err(|message| ParseError {
                    line: number,
                    message,
                })?;
            }
            i += 1;
        }
    }
    if files.is_empty() {
        return Err(ParseError {
            line: 1,
            message: "no file changes found; send a unified diff with `--- a/PATH`, `+++ b/PATH` and `@@` hunks".to_owned(),
        });
    }
    Ok(files)
}

/// The patch's lines with their 1-based numbers in `text`, split on `\n` only (so a `\r`
/// that belongs to a CRLF file's content survives). When the text holds Markdown code
/// fences (a line starting with ```` ``` ```` or `~~~`), only the lines inside them are the
/// patch: the prose around a fenced diff is not. A fence must start the line; no hunk line
/// can, so an indented fence in a Markdown file's context (`` ```sh`` after the space)
/// stays a context line.
fn patch_lines(text: &str) -> Vec<(usize, &str)> {
    let text = text.strip_suffix('\n').unwrap_or(text);
    let is_fence = |line: &str| line.starts_with("```") || line.starts_with("~~~");
    let numbered = text.split('\n').enumerate().map(|(i, line)| (i + 1, line));
    if !text.split('\n').any(is_fence) {
        return numbered.collect();
    }
    let mut inside = false;
    numbered
        .filter(|&(_, line)| {
            if is_fence(line) {
                inside = !inside;
                false
            } else {
                inside
            }
        })
        .collect()
}

/// True unless both paths are known and differ (`None` is /dev/null or unknown).
fn same_file(a: &Option<String>, b: &Option<String>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a == b,
        _ => true,
    }
}

/// True when lines `i` and `i + 1` are a `--- PATH` / `+++ PATH` pair.
fn is_path_pair(lines: &[(usize, &str)], i: usize) -> bool {
    lines[i].1.starts_with("--- ") && lines.get(i + 1).is_some_and(|l| l.1.starts_with("+++ "))
}

/// True when the line at `i` starts a new file section, seen from inside a hunk body.
/// There a `--- X` / `+++ Y` pair can also be a removed `-- X` and an added `++ Y` (SQL or
/// Lua comments), so it counts as a header only when a hunk or the end of the text follows.
fn starts_file_in_body(lines: &[(usize, &str)], i: usize) -> bool {
    lines[i].1.starts_with("diff --git ")
        || (is_path_pair(lines, i)
            && lines
                .get(i + 2)
                .is_none_or(|l| l.1.starts_with("@@") || l.1.starts_with("diff --git ")))
}

/// Reads a hunk body starting at `start`; returns it and the index of the first line after.
fn read_body(lines: &[(usize, &str)], start: usize) -> (Vec<HunkLine>, usize) {
    let mut body = Vec::new();
    let mut i = start;
    while i < lines.len() {
        let line = lines[i].1;
        if line.starts_with("@@") || starts_file_in_body(lines, i) {
            break;
        }
        let item = match line.as_bytes().first() {
            Some(b' ') => HunkLine::Context(line[1..].to_owned()),
            Some(b'-') => HunkLine::Delete(line[1..].to_owned()),
            Some(b'+') => HunkLine::Add(line[1..].to_owned()),
            Some(b'\\') => HunkLine::NoNewline,
            // Models often drop the space of a blank context line.
            None => HunkLine::Context(String::new()),
            Some(b'\r') if line.len() == 1 => HunkLine::Context(line.to_owned()),
            Some(_) => break,
        };
        body.push(item);
        i += 1;
    }
    // Blank lines at the very end are the gap before the next section (or the end of the
    // text), not context the file must contain. Dropping trailing context only loosens the
    // anchor, it never changes what the hunk does. A blank that is the hunk's only old line
    // stays: git writes `@@ -1 +1,2 @@` / `+x` / ` ` for a line added above a file's one
    // empty line, and without it the hunk would say nothing about where it goes.
    while matches!(body.last(), Some(HunkLine::Context(text)) if text.trim_end().is_empty()) {
        let old_lines = body
            .iter()
            .filter(|l| matches!(l, HunkLine::Context(_) | HunkLine::Delete(_)))
            .count();
        if old_lines > 1 && lines[start + body.len() - 1].1.trim_end().is_empty() {
            body.pop();
        } else {
            break;
        }
    }
    (body, i)
}

/// A hunk body ended at `stop` on a line that is not a hunk line. That is fine for prose
/// after the patch, but if a change line (`+` or `-`) follows before the next hunk or file,
/// the body was cut short (typically a context line that lost its leading space), and
/// going on would silently drop that change.
fn check_nothing_dropped(lines: &[(usize, &str)], stop: usize) -> Result<(), ParseError> {
    let Some(&(number, text)) = lines.get(stop) else {
        return Ok(());
    };
    if text.starts_with("@@") || starts_file_in_body(lines, stop) {
        return Ok(());
    }
    let mut i = stop;
    while i < lines.len() {
        let line = lines[i].1;
        if line.starts_with("@@") || line.starts_with("diff --git ") || is_path_pair(lines, i) {
            return Ok(());
        }
        if line.starts_with('+') || line.starts_with('-') {
            return Err(ParseError {
                line: number,
                message: format!(
                    "`{}` is not a hunk line, so the hunk would end there, but line {} after it is a change; every line of a hunk starts with a space (context), `-` or `+`: give each context line its leading space",
                    text.trim_end_matches('\r'),
                    lines[i].0
                ),
            });
        }
        i += 1;
    }
    Ok(())
}

/// The old start line from `@@ -START[,COUNT] +START[,COUNT] @@`.
fn parse_old_start(header: &str) -> Option<usize> {
    let rest = header.trim_start_matches('@').trim_start();
    let old = rest.strip_prefix('-')?;
    let digits: String = old.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Paths from `diff --git a/X b/Y` (or without prefixes). When X and Y are the same path
/// without prefixes the split is ambiguous only if the path has spaces; we split at the
/// middle space in that case, which is right whenever the two names are equal. Paths git
/// quoted (`"a/caf\303\251.md"`) are unquoted.
fn split_git_paths(rest: &str) -> (Option<String>, Option<String>) {
    let rest = rest.trim();
    if let Some(end) = rest.strip_prefix('"').and_then(closing_quote) {
        let old = unquote(&rest[..end + 2]);
        let new = rest[end + 2..].trim_start();
        return (Some(strip_prefix(&old)), Some(strip_prefix(&unquote(new))));
    }
    if let Some((old, new)) = rest.split_once(" \"").filter(|_| rest.ends_with('"')) {
        let new = unquote(&format!("\"{new}"));
        return (Some(strip_prefix(old)), Some(strip_prefix(&new)));
    }
    if let Some(idx) = rest.find(" b/").filter(|_| rest.starts_with("a/")) {
        return (
            Some(rest[2..idx].to_owned()),
            Some(rest[idx + 3..].to_owned()),
        );
    }
    let parts: Vec<&str> = rest.split(' ').collect();
    if parts.len().is_multiple_of(2) {
        let half = parts.len() / 2;
        let (old, new) = (parts[..half].join(" "), parts[half..].join(" "));
        return (Some(strip_prefix(&old)), Some(strip_prefix(&new)));
    }
    (None, None)
}

/// A path from a `---` or `+++` line: `None` for /dev/null; a trailing tab and timestamp
/// (as `diff -u` writes) and one `a/` or `b/` prefix are removed, and a quoted path is
/// unquoted.
fn header_path(raw: &str) -> Option<String> {
    let path = match raw.strip_prefix('"').and_then(closing_quote) {
        Some(end) => unquote(&raw[..end + 2]),
        None => raw.split('\t').next().unwrap_or(raw).trim_end().to_owned(),
    };
    if path == "/dev/null" {
        return None;
    }
    Some(strip_prefix(&path))
}

/// In the text after an opening `"`, the index of the closing one.
fn closing_quote(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return Some(i),
            _ => i += 1,
        }
    }
    None
}

/// Undoes git's C-style quoting (`core.quotePath`, on by default, quotes non-ASCII bytes
/// as octal escapes, and any path with a quote, a backslash or a control character). Text
/// that is not quoted comes back as it is.
fn unquote(raw: &str) -> String {
    let Some(inner) = raw.strip_prefix('"').and_then(|r| r.strip_suffix('"')) else {
        return raw.to_owned();
    };
    let bytes = inner.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            out.push(bytes[i]);
            i += 1;
            continue;
        }
        let Some(&escaped) = bytes.get(i + 1) else {
            break;
        };
        i += 2;
        let byte = match escaped {
            b'a' => 0x07,
            b'b' => 0x08,
            b't' => b'\t',
            b'n' => b'\n',
            b'v' => 0x0b,
            b'f' => 0x0c,
            b'r' => b'\r',
            b'0'..=b'7' => {
                let mut value = u32::from(escaped - b'0');
                for _ in 0..2 {
                    match bytes.get(i) {
                        Some(&d @ b'0'..=b'7') => {
                            value = value * 8 + u32::from(d - b'0');
                            i += 1;
                        }
                        _ => break,
                    }
                }
                u8::try_from(value).unwrap_or(b'?')
            }
            other => other,
        };
        out.push(byte);
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn strip_prefix(path: &str) -> String {
    path.strip_prefix("a/")
        .or_else(|| path.strip_prefix("b/"))
        .unwrap_or(path)
        .to_owned()
}

/// Records what matters from git's extended header lines. A mode line must name one of
/// git's two regular-file modes; any other is an error the model can act on.
fn read_extended_header(file: &mut FilePatch, line: &str) -> Result<(), String> {
    if let Some(m) = line.strip_prefix("new file mode ") {
        file.new_mode = Some(stated_mode(line, m)?);
        file.old_path = None;
    } else if let Some(m) = line.strip_prefix("deleted file mode ") {
        // The mode of a file being deleted changes nothing, but a symlink's or a
        // submodule's is a sign the patch is about something apply_patch does not touch.
        stated_mode(line, m)?;
        file.new_path = None;
    } else if let Some(m) = line.strip_prefix("new mode ") {
        file.new_mode = Some(stated_mode(line, m)?);
    } else if let Some(m) = line.strip_prefix("old mode ") {
        file.old_mode = Some(stated_mode(line, m)?);
    } else if let Some(p) = line.strip_prefix("rename from ") {
        let p = unquote(p);
        file.old_path = Some(p);
    } else if let Some(p) = line.strip_prefix("rename to ") {
        let p = unquote(p);
        file.new_path = Some(p);
    } else if let Some(p) = line.strip_prefix("copy from ") {
        let p = unquote(p);
        file.old_path = Some(p);
        file.copy = true;
    } else if let Some(p) = line.strip_prefix("copy to ") {
        let p = unquote(p);
        file.new_path = Some(p);
        file.copy = true;
    } else if line.starts_with("GIT binary patch")
        || (line.starts_with("Binary files ") && line.ends_with(" differ"))
    {
        file.binary = true;
    }
    Ok(())
}

/// The mode a header line (`line`, whose number is `text`) states, when it is 100644 or
/// 100755. Anything else is refused rather than approximated: the person would be shown
/// one mode and the file given another (100711 written as executable, 100600 clearing
/// bits nobody mentioned).
fn stated_mode(line: &str, text: &str) -> Result<FileMode, String> {
    let number = u32::from_str_radix(text.trim(), 8).ok();
    if let Some(mode) = number.and_then(FileMode::from_git) {
        return Ok(mode);
    }
    let what = match number {
        Some(0o120000) => " (a symlink, which apply_patch never writes)",
        Some(0o160000) => " (a submodule, which apply_patch never writes)",
        _ => "",
    };
    Err(format!(
        "`{}`{what} is not a mode apply_patch applies: only 100644 (a regular file) and 100755 (an executable) are applied; resend without the mode line or with one of those",
        line.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use HunkLine::*;

    #[test]
    fn git_patch() {
        let text = "diff --git a/x.go b/x.go\nindex 1..2 100644\n--- a/x.go\n+++ b/x.go\n@@ -3,2 +3,2 @@ func\n a\n-b\n+c\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(files[0].old_path.as_deref(), Some("x.go"));
        assert_eq!(files[0].hunks[0].claimed_start, 3);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![Context("a".into()), Delete("b".into()), Add("c".into())]
        );
    }

    #[test]
    fn plain_diff_u_no_prefixes_in_fence() {
        let text =
            "```diff\n--- x.go\t2024-01-01\n+++ x.go\t2024-01-02\n@@ -1 +1 @@\n-a\n+b\n```\n";
        let files = parse(text).expect("parses");
        assert_eq!(files[0].new_path.as_deref(), Some("x.go"));
        assert_eq!(
            files[0].hunks[0].lines,
            vec![Delete("a".into()), Add("b".into())]
        );
    }

    #[test]
    fn create_delete_rename() {
        let text = "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n\
                    diff --git a/old.txt b/old.txt\ndeleted file mode 100644\n--- a/old.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n\
                    diff --git a/r.txt b/s.txt\nsimilarity index 100%\nrename from r.txt\nrename to s.txt\n";
        let files = parse(text).expect("parses");
        assert_eq!(
            (files[0].old_path.clone(), files[0].new_path.clone()),
            (None, Some("new.txt".into()))
        );
        assert_eq!(
            (files[1].old_path.clone(), files[1].new_path.clone()),
            (Some("old.txt".into()), None)
        );
        assert_eq!(
            (files[2].old_path.clone(), files[2].new_path.clone()),
            (Some("r.txt".into()), Some("s.txt".into()))
        );
        assert!(files[2].hunks.is_empty());
    }

    #[test]
    fn blank_context_and_trailing_gap() {
        let text = "--- a/x\n+++ b/x\n@@ -1,3 +1,3 @@\n a\n\n-b\n+c\n\n\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-p\n+q\n";
        let files = parse(text).expect("parses");
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                Context("a".into()),
                Context(String::new()),
                Delete("b".into()),
                Add("c".into())
            ]
        );
        assert_eq!(files.len(), 2);
    }

    #[test]
    fn a_blank_that_is_the_only_old_line_is_kept() {
        let text =
            "--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n+top\n \n\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-p\n+q\n";
        let files = parse(text).expect("parses");
        assert_eq!(
            files[0].hunks[0].lines,
            vec![Add("top".into()), Context(String::new())]
        );
    }

    #[test]
    fn binary_and_errors() {
        let files = parse("diff --git a/i.png b/i.png\nBinary files a/i.png and b/i.png differ\n")
            .expect("parses");
        assert!(files[0].binary);
        assert!(parse("@@ -1 +1 @@\n-a\n+b\n").is_err());
        assert!(parse("just some words").is_err());
        assert!(parse("--- a/x\n+++ b/x\n@@ nonsense @@\n").is_err());
    }

    #[test]
    fn deleting_a_line_that_starts_with_dashes() {
        let text = "--- a/x\n+++ b/x\n@@ -1,2 +1,1 @@\n--- old rule\n keep\n";
        let files = parse(text).expect("parses");
        assert_eq!(
            files[0].hunks[0].lines,
            vec![Delete("-- old rule".into()), Context("keep".into())]
        );
    }

    #[test]
    fn only_fenced_lines_are_the_patch_and_indented_fences_are_context() {
        let text = "Here it is:\n```diff\n--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n ```sh\n-cargo build\n+cargo test\n```\nThis:\n- runs the tests\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                Context("```sh".into()),
                Delete("cargo build".into()),
                Add("cargo test".into())
            ]
        );
        // Line numbers are those of the text the model sent.
        assert_eq!(files[0].hunks[0].patch_line, 5);
    }

    #[test]
    fn header_like_change_lines_stay_in_the_hunk() {
        let text = "--- a/q.sql\n+++ b/q.sql\n@@ -1,2 +1,2 @@\n--- old\n+++ new\n select 1;\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 1);
        assert_eq!(
            files[0].hunks[0].lines,
            vec![
                Delete("-- old".into()),
                Add("++ new".into()),
                Context("select 1;".into())
            ]
        );
        // A real second file still starts a section.
        let text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n--- a/y\n+++ b/y\n@@ -1 +1 @@\n-c\n+d\n";
        assert_eq!(parse(text).expect("parses").len(), 2);
    }

    #[test]
    fn a_change_after_a_line_without_its_space_is_an_error() {
        let text = "--- a/x\n+++ b/x\n@@ -1,4 +1,4 @@\n a\n-b\n+B\nc\n-d\n+D\n";
        let err = parse(text).expect_err("refused");
        assert_eq!(err.line, 7, "{err}");
        assert!(err.message.contains("`c` is not a hunk line"), "{err}");
        assert!(err.message.contains("line 8"), "{err}");
        // Prose after the last hunk is not a change, and is ignored.
        let text = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\nThis renames a to b.\n";
        assert_eq!(parse(text).expect("parses")[0].hunks[0].lines.len(), 2);
    }

    #[test]
    fn copies_are_marked() {
        let text =
            "diff --git a/a.txt b/b.txt\nsimilarity index 100%\ncopy from a.txt\ncopy to b.txt\n";
        let files = parse(text).expect("parses");
        assert!(files[0].copy);
        assert_eq!(files[0].new_path.as_deref(), Some("b.txt"));
    }

    #[test]
    fn a_pair_for_another_file_after_a_header_only_section_starts_its_own() {
        let text = "diff --git a/e.txt b/e.txt\nnew file mode 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(
            (files[0].old_path.as_deref(), files[0].new_path.as_deref()),
            (None, Some("e.txt"))
        );
        assert_eq!(files[1].new_path.as_deref(), Some("x"));
        assert_eq!(files[1].hunks.len(), 1);
        // An empty file's creation, then a deletion written without `diff --git` and
        // without prefixes: two sections, the creation kept.
        let text = "diff --git a/e.txt b/e.txt\nnew file mode 100644\nindex 0000000..e69de29\n--- x\n+++ /dev/null\n@@ -1 +0,0 @@\n-a\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(
            (files[0].old_path.as_deref(), files[0].new_path.as_deref()),
            (None, Some("e.txt"))
        );
        assert_eq!(
            (files[1].old_path.as_deref(), files[1].new_path.as_deref()),
            (Some("x"), None)
        );
        // The section's own pair still joins it.
        let text = "diff --git a/r b/s\nsimilarity index 90%\nrename from r\nrename to s\n--- a/r\n+++ b/s\n@@ -1 +1 @@\n-a\n+b\n";
        assert_eq!(parse(text).expect("parses").len(), 1);
    }

    #[test]
    fn only_regular_file_modes_are_read() {
        let section = |header: &str| format!("diff --git a/x b/x\n{header}\n");
        let files = parse(&section("old mode 100644\nnew mode 100755")).expect("parses");
        assert_eq!(files[0].old_mode, Some(FileMode::Regular));
        assert_eq!(files[0].new_mode, Some(FileMode::Executable));
        for header in [
            "new file mode 100711",
            "new mode 100600",
            "old mode 100777",
            "deleted file mode 120000",
            "new file mode 160000",
            "new mode 0",
        ] {
            let err = parse(&section(header)).expect_err(header);
            assert_eq!(err.line, 2, "{header}");
            assert!(err.message.starts_with(&format!("`{header}`")), "{err}");
            assert!(
                err.message
                    .contains("resend without the mode line or with one of those"),
                "{err}"
            );
        }
    }

    #[test]
    fn quoted_paths_are_unquoted() {
        let text = "diff --git \"a/caf\\303\\251 x.md\" \"b/caf\\303\\251 x.md\"\n--- \"a/caf\\303\\251 x.md\"\n+++ \"b/caf\\303\\251 x.md\"\n@@ -1 +1 @@\n-a\n+b\n\
                    diff --git a/q b/\"r\\\"s\"\nsimilarity index 100%\nrename from q\nrename to \"r\\\"s\"\n";
        let files = parse(text).expect("parses");
        assert_eq!(files.len(), 2, "{files:?}");
        assert_eq!(files[0].old_path.as_deref(), Some("caf\u{e9} x.md"));
        assert_eq!(files[0].new_path.as_deref(), Some("caf\u{e9} x.md"));
        assert_eq!(files[1].new_path.as_deref(), Some("r\"s"));
        assert_eq!(unquote("\"t\\tab\\001\""), "t\tab\u{1}");
        assert_eq!(unquote("plain"), "plain");
    }
}
