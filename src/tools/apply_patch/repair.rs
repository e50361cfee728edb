//! Resolving a model's hunks against the file as it is now, and writing the patch out again
//! in canonical git form.
//!
//! This is where the common model mistakes are repaired, and only the safe ones:
//!
//! - hunk line counts are recomputed from the body (overstated, understated, omitted);
//! - a hunk whose start line is wrong is moved to where its old lines actually are, but only
//!   when they occur exactly once in the file (or at the claimed line itself);
//! - an LF patch against a CRLF file matches, and its added lines get CRLF;
//! - a dropped `\ No newline at end of file` marker keeps the file's missing final newline;
//! - in a file that is not UTF-8, a U+FFFD in a context or `-` line matches the invalid
//!   bytes view_slice showed as U+FFFD there, and one in a `+` line is written as the bytes
//!   behind it in the same word of a line the same change removes, or refused (see
//!   [`lossy`]).
//!
//! Anything ambiguous is refused, with the numbered lines around the closest match so the
//! model can see what is really there. Context and deleted lines are written out with the
//! file's own bytes, so a repaired patch does exactly what the original would have done
//! wherever the original applies.

use std::fmt::Write as _;
use std::io::Write as _;

use super::lossy::{self, Replacements, Unmapped};
use super::parse::{FilePatch, Hunk, HunkLine};
use crate::project::FileMode;

/// Lines of context shown around the closest match in a refusal.
const CONTEXT_SHOWN: usize = 2;
/// Most file lines a refusal quotes.
const MAX_QUOTED_LINES: usize = 14;
/// Most characters of one file line a refusal quotes (the default `max_line_chars`).
const MAX_QUOTED_CHARS: usize = 500;
/// Most places an ambiguity refusal lists.
const MAX_LISTED_PLACES: usize = 20;
/// git's marker for a last line without a newline.
const NO_NEWLINE: &[u8] = b"\\ No newline at end of file\n";

/// A file split into lines, remembering whether it ended with a newline.
pub(crate) struct FileLines<'a> {
    lines: Vec<&'a [u8]>,
    final_newline: bool,
    crlf: bool,
}

impl<'a> FileLines<'a> {
    /// Splits `bytes` on `\n`; each line keeps any `\r` it had.
    pub(crate) fn new(bytes: &'a [u8]) -> FileLines<'a> {
        let final_newline = bytes.is_empty() || bytes.ends_with(b"\n");
        let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        let lines: Vec<&[u8]> = if bytes.is_empty() {
            Vec::new()
        } else {
            body.split(|&b| b == b'\n').collect()
        };
        // CRLF when most lines that end in a newline end in `\r\n`. A last line without a
        // newline has no line ending to count.
        let ended = if final_newline {
            lines.len()
        } else {
            lines.len().saturating_sub(1)
        };
        let with_cr = lines[..ended].iter().filter(|l| l.ends_with(b"\r")).count();
        let crlf = with_cr * 2 > ended;
        FileLines {
            lines,
            final_newline,
            crlf,
        }
    }
}

/// Why a file's hunks cannot be placed. The text is for the model.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub(crate) struct Refusal(pub String);

/// The canonical patch text for one file, and what it changes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// The file's section of a git-format patch, with exact counts and start lines. Bytes,
    /// because context lines are copied from the file, which need not be UTF-8.
    pub(crate) text: Vec<u8>,
    /// Lines added.
    pub(crate) added: usize,
    /// Lines removed.
    pub(crate) removed: usize,
    /// Added lines with UTF-8 text beyond ASCII in a file that is not UTF-8: the file's
    /// encoding changes on those lines, which the summary says.
    pub(crate) utf8_in_legacy: usize,
}

/// Resolves one file's changes against its current bytes and permission bits (`None` when
/// it does not exist).
pub(crate) fn resolve(
    file: &FilePatch,
    current: Option<(&[u8], u32)>,
) -> Result<Resolved, Refusal> {
    let display = file
        .new_path
        .as_deref()
        .or(file.old_path.as_deref())
        .unwrap_or("?");
    match (&file.old_path, &file.new_path, current) {
        (None, Some(path), None) => create(file, path),
        (None, Some(path), Some(_)) => Err(Refusal(format!(
            "`{path}` already exists; to change it, send a diff against its current content (`--- a/{path}`)"
        ))),
        (Some(path), _, None) => Err(Refusal(format!(
            "`{path}` does not exist; to create it, use `--- /dev/null` and `+++ b/{path}`"
        ))),
        (Some(old), new, Some((bytes, mode))) => modify(file, old, new.as_deref(), bytes, mode),
        (None, None, _) => Err(Refusal(format!(
            "cannot tell which file a section of the patch is for ({display})"
        ))),
    }
}

fn create(file: &FilePatch, path: &str) -> Result<Resolved, Refusal> {
    let mut added = Vec::new();
    let mut no_newline = false;
    for hunk in &file.hunks {
        for line in &hunk.lines {
            match line {
                HunkLine::Add(text) => added.push(text.as_bytes()),
                HunkLine::NoNewline => no_newline = true,
                HunkLine::Context(_) | HunkLine::Delete(_) => {
                    return Err(Refusal(format!(
                        "the patch creates `{path}` but its hunk has context or removed lines; a new file's hunk has only `+` lines"
                    )));
                }
            }
        }
    }
    let mode = file.new_mode.unwrap_or(FileMode::Regular);
    // libgit2 reads the extended header as a state machine: after `new file mode` it
    // needs the `---`/`+++` pair (or an `index` line) to finish, even with no hunk.
    let mut text = format!(
        "{}new file mode {mode}\n--- /dev/null\n+++ {}\n",
        git_line(path, path),
        quoted("b/", path)
    )
    .into_bytes();
    if !added.is_empty() {
        let _ = writeln!(text, "@@ -0,0 +1,{} @@", added.len());
        for line in &added {
            push_line(&mut text, b'+', line);
        }
        if no_newline {
            text.extend_from_slice(NO_NEWLINE);
        }
    }
    Ok(Resolved {
        text,
        added: added.len(),
        removed: 0,
        utf8_in_legacy: 0,
    })
}

fn modify(
    file: &FilePatch,
    old: &str,
    new: Option<&str>,
    bytes: &[u8],
    mode: u32,
) -> Result<Resolved, Refusal> {
    let lines = FileLines::new(bytes);
    if lines.lines.iter().any(|l| l.contains(&0)) {
        return Err(Refusal(format!(
            "`{old}` is a binary file; apply_patch edits text files only"
        )));
    }
    let Some(new) = new else {
        return delete(file, old, &lines);
    };

    // The header in the order libgit2's parser requires: mode change, rename, then (when
    // hunks follow) an `index` line and the `---`/`+++` pair.
    let git_mode = FileMode::of_bits(mode);
    // A stated old mode is a claim about the file; when it is wrong, the model's idea of
    // the file is, and the change it asks for may not be the one it means.
    if let Some(stated) = file.old_mode.filter(|stated| *stated != git_mode) {
        return Err(Refusal(format!(
            "the patch says `old mode {stated}` but `{old}` is {git_mode} on disk; resend with `old mode {git_mode}`, or without the mode lines to keep its mode"
        )));
    }
    let new_mode = file.new_mode.filter(|m| *m != git_mode);
    let mut text = git_line(old, new).into_bytes();
    if let Some(new_mode) = new_mode {
        let _ = write!(text, "old mode {git_mode}\nnew mode {new_mode}\n");
    }
    if old != new {
        let similarity = if file.hunks.is_empty() { 100 } else { 50 };
        let _ = write!(
            text,
            "similarity index {similarity}%\nrename from {}\nrename to {}\n",
            quoted("", old),
            quoted("", new)
        );
    }
    if file.hunks.is_empty() {
        if let (true, None, Some(stated)) = (old == new, new_mode, file.new_mode) {
            return Err(Refusal(format!(
                "`{old}` already has mode {stated}, so the patch changes nothing in it; send `@@` hunks with the lines to change, or leave the file out"
            )));
        }
        if old == new && new_mode.is_none() {
            return Err(Refusal(format!(
                "the patch for `{old}` has no hunks; send `@@` hunks with the lines to change"
            )));
        }
        return Ok(Resolved {
            text,
            added: 0,
            removed: 0,
            utf8_in_legacy: 0,
        });
    }
    let _ = write!(
        text,
        "index 0000000..0000000\n--- {}\n+++ {}\n",
        quoted("a/", old),
        quoted("b/", new)
    );

    // An LF patch against a CRLF file: its added lines get the file's `\r`. A patch that
    // carries `\r`s itself (git's diff of a CRLF file) is taken byte for byte.
    let lf_patch = lines.crlf
        && !file
            .hunks
            .iter()
            .flat_map(|h| &h.lines)
            .any(|line| match line {
                HunkLine::Context(t) | HunkLine::Delete(t) | HunkLine::Add(t) => t.ends_with('\r'),
                HunkLine::NoNewline => false,
            });
    // Only in a file that is not UTF-8 does a U+FFFD stand for other bytes; in a UTF-8 file
    // an added U+FFFD is the character itself.
    let legacy = std::str::from_utf8(bytes).is_err();
    let (mut added, mut removed, mut utf8_in_legacy) = (0, 0, 0);
    let mut next_free = 0usize; // first file line a later hunk may touch
    let mut delta: isize = 0; // new line numbers minus old, after the hunks so far
    for (index, hunk) in file.hunks.iter().enumerate() {
        let label = hunk_label(index, file.hunks.len(), hunk);
        let at = place(hunk, &lines, next_free, old, &label)?;
        let new_lines = added_lines(hunk, &lines, at, legacy, old, &label)?;
        utf8_in_legacy += new_lines.utf8_in_legacy;
        let emitted = emit_hunk(
            hunk,
            &lines,
            at,
            delta,
            lf_patch,
            new_lines.bytes,
            &mut text,
        );
        added += emitted.added;
        removed += emitted.removed;
        next_free = at + emitted.removed + emitted.context;
        delta += emitted.added as isize - emitted.removed as isize;
    }
    Ok(Resolved {
        text,
        added,
        removed,
        utf8_in_legacy,
    })
}

fn delete(file: &FilePatch, path: &str, lines: &FileLines<'_>) -> Result<Resolved, Refusal> {
    // Whatever the hunks claim to delete must be the whole file as it is now.
    let claimed: Vec<&str> = file
        .hunks
        .iter()
        .flat_map(|h| &h.lines)
        .filter_map(|l| match l {
            HunkLine::Delete(t) | HunkLine::Context(t) => Some(t.as_str()),
            _ => None,
        })
        .collect();
    if !claimed.is_empty() {
        let matches = claimed.len() == lines.lines.len()
            && claimed
                .iter()
                .zip(&lines.lines)
                .all(|(c, l)| line_eq(l, c.as_bytes()));
        if !matches {
            return Err(Refusal(format!(
                "the patch deletes `{path}` but the lines it removes are not the file's current {} lines; read it again with view_slice",
                lines.lines.len()
            )));
        }
    }
    let mut text = format!(
        "{}deleted file mode 100644\n--- {}\n+++ /dev/null\n",
        git_line(path, path),
        quoted("a/", path)
    )
    .into_bytes();
    if !lines.lines.is_empty() {
        let _ = writeln!(text, "@@ -1,{} +0,0 @@", lines.lines.len());
        for line in &lines.lines {
            push_line(&mut text, b'-', line);
        }
        if !lines.final_newline {
            text.extend_from_slice(NO_NEWLINE);
        }
    }
    Ok(Resolved {
        text,
        added: 0,
        removed: lines.lines.len(),
        utf8_in_legacy: 0,
    })
}

fn hunk_label(index: usize, total: usize, hunk: &Hunk) -> String {
    if total == 1 {
        format!("the hunk at patch line {}", hunk.patch_line)
    } else {
        format!(
            "hunk {} of {} (patch line {})",
            index + 1,
            total,
            hunk.patch_line
        )
    }
}

/// The old side of a hunk: its context and removed lines, in order.
fn old_side(hunk: &Hunk) -> Vec<&[u8]> {
    hunk.lines
        .iter()
        .filter_map(|l| match l {
            HunkLine::Context(t) | HunkLine::Delete(t) => Some(t.as_bytes()),
            _ => None,
        })
        .collect()
}

/// A file line equals a patch line when the bytes are the same, or when the only
/// difference is the file's `\r` (an LF patch against a CRLF file). A patch line with a
/// U+FFFD also equals a file line whose lossy view it is (view_slice's view), so a line
/// with bytes that are not UTF-8 can be matched by copying what the model was shown.
fn line_eq(file_line: &[u8], patch_line: &[u8]) -> bool {
    let without_cr = file_line
        .strip_suffix(b"\r")
        .filter(|_| !patch_line.ends_with(b"\r"));
    file_line == patch_line
        || without_cr == Some(patch_line)
        || (lossy::has_replacement(patch_line)
            && (lossy::view_eq(file_line, patch_line)
                || without_cr.is_some_and(|line| lossy::view_eq(line, patch_line))))
}

/// The bytes of a hunk's added lines, in order, and how many of them put UTF-8 text
/// beyond ASCII into a file that is not UTF-8.
struct AddedLines {
    bytes: Vec<Vec<u8>>,
    utf8_in_legacy: usize,
}

/// Most characters of an added line a refusal quotes.
const MAX_QUOTED_ADDED_CHARS: usize = 120;

/// The added lines of `hunk`, placed at `at`, as they will be written. In a `legacy` file
/// (not UTF-8) a U+FFFD in an added line is written as the bytes it stands for in the same
/// word of a line the same change removes ([`Replacements`]), or the hunk is refused;
/// elsewhere the model's text is written as it is.
fn added_lines(
    hunk: &Hunk,
    lines: &FileLines<'_>,
    at: usize,
    legacy: bool,
    path: &str,
    label: &str,
) -> Result<AddedLines, Refusal> {
    let mut out = AddedLines {
        bytes: Vec::new(),
        utf8_in_legacy: 0,
    };
    // One change at a time: the `-` and `+` lines between two context lines.
    let mut removed: Vec<&[u8]> = Vec::new();
    let mut pending: Vec<&str> = Vec::new();
    let mut file_index = at;
    let mut flush = |removed: &mut Vec<&[u8]>, pending: &mut Vec<&str>| {
        let rule = Replacements::new(removed.drain(..));
        for text in pending.drain(..) {
            if !legacy {
                out.bytes.push(text.as_bytes().to_vec());
                continue;
            }
            if text.chars().any(|c| !c.is_ascii() && c != '\u{fffd}') {
                out.utf8_in_legacy += 1;
            }
            if !lossy::has_replacement(text.as_bytes()) {
                out.bytes.push(text.as_bytes().to_vec());
                continue;
            }
            match rule.added(text) {
                Ok(bytes) => out.bytes.push(bytes),
                Err(why) => return Err(Refusal(unmapped(label, path, text, why))),
            }
        }
        Ok(())
    };
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => {
                flush(&mut removed, &mut pending)?;
                file_index += 1;
            }
            HunkLine::Delete(_) => {
                if let Some(bytes) = lines.lines.get(file_index) {
                    removed.push(bytes.strip_suffix(b"\r").unwrap_or(bytes));
                }
                file_index += 1;
            }
            HunkLine::Add(text) => pending.push(text),
            HunkLine::NoNewline => {}
        }
    }
    flush(&mut removed, &mut pending)?;
    Ok(out)
}

/// The refusal of an added line whose U+FFFDs cannot be written back as the file's bytes.
/// The next step is the same whatever the reason: copy the line's words as they were.
fn unmapped(label: &str, path: &str, text: &str, why: Unmapped) -> String {
    let shown = crate::tools::text::clip_line(text.as_bytes(), MAX_QUOTED_ADDED_CHARS);
    let n = lossy::count(text.as_bytes());
    let reason = match why {
        Unmapped::NoSuchWord(word) => format!(
            "no line that the same change removes has the word `{}`",
            crate::tools::text::clip_line(word.as_bytes(), MAX_QUOTED_ADDED_CHARS)
        ),
        Unmapped::Disagree(word) => format!(
            "the lines that the same change removes have the word `{}` with different bytes behind it",
            crate::tools::text::clip_line(word.as_bytes(), MAX_QUOTED_ADDED_CHARS)
        ),
    };
    format!(
        "{label} adds the line `{shown}` with {n} \u{fffd} (U+FFFD), but `{path}` is not UTF-8: each \u{fffd} view_slice shows stands for bytes that are not UTF-8, and an added line can only keep them inside the same word as a line it replaces ({reason}). Leave that line unchanged (as a context line), keep exactly the \u{fffd} of the line it replaces, or write the line without the \u{fffd} character."
    )
}

/// Where the hunk's old lines start in the file (0-based), or a refusal.
fn place(
    hunk: &Hunk,
    lines: &FileLines<'_>,
    next_free: usize,
    path: &str,
    label: &str,
) -> Result<usize, Refusal> {
    let old = old_side(hunk);
    let claimed = hunk.claimed_start.saturating_sub(1);
    // An empty hunk would be written as a header alone, which libgit2 rejects.
    if hunk.lines.iter().all(|l| *l == HunkLine::NoNewline) {
        return Err(Refusal(format!(
            "{label} has no lines; a hunk lists its context (` `), removed (`-`) and added (`+`) lines"
        )));
    }
    if old.is_empty() {
        // A hunk that only adds lines says where only by its start line, which is the
        // number models get wrong; its (empty) old lines match everywhere. Only an empty
        // file has a single place for it.
        if lines.lines.is_empty() && next_free == 0 {
            return Ok(0);
        }
        return Err(Refusal(format!(
            "{label} only adds lines, so nothing but its start line says where they go; include the unchanged lines just before and after them as context (lines starting with a space)"
        )));
    }
    let fits = |at: usize| {
        at.checked_add(old.len())
            .is_some_and(|end| end <= lines.lines.len())
            && old
                .iter()
                .zip(&lines.lines[at..])
                .all(|(p, f)| line_eq(f, p))
    };
    if fits(claimed) && claimed >= next_free {
        return Ok(claimed);
    }
    let found: Vec<usize> = (0..lines.lines.len()).filter(|&at| fits(at)).collect();
    match found.as_slice() {
        [only] if *only >= next_free => Ok(*only),
        [only] => Err(Refusal(format!(
            "{label} matches `{path}` only at line {}, which overlaps an earlier hunk; keep hunks in file order and do not repeat lines",
            only + 1
        ))),
        [] => Err(Refusal(not_found(label, path, &old, lines, claimed))),
        many => {
            let mut places: Vec<String> = many
                .iter()
                .take(MAX_LISTED_PLACES)
                .map(|at| (at + 1).to_string())
                .collect();
            if many.len() > MAX_LISTED_PLACES {
                places.push(format!("and {} more", many.len() - MAX_LISTED_PLACES));
            }
            Err(Refusal(format!(
                "{label} is ambiguous: its {} old lines occur in `{path}` at lines {}; add context lines so it matches one place, and give its real start line",
                old.len(),
                places.join(", ")
            )))
        }
    }
}

/// A refusal for old lines that are nowhere in the file, quoting the closest stretch.
fn not_found(
    label: &str,
    path: &str,
    old: &[&[u8]],
    lines: &FileLines<'_>,
    claimed: usize,
) -> String {
    let score = |at: usize| {
        old.iter()
            .zip(lines.lines.iter().skip(at))
            .filter(|(p, f)| line_eq(f, p))
            .count()
    };
    // Best alignment by matching lines; ties go to the one nearest the claimed start.
    let best = (0..lines.lines.len())
        .max_by_key(|&at| (score(at), std::cmp::Reverse(at.abs_diff(claimed))));
    let mut text =
        format!("{label} does not apply: its old lines are not in `{path}` as it is now.");
    let Some(best) = best.filter(|&at| score(at) > 0) else {
        let _ = write!(
            text,
            " None of them occur in the file ({} lines); read it with view_slice before patching.",
            lines.lines.len()
        );
        return text;
    };
    let first = best.saturating_sub(CONTEXT_SHOWN);
    let last = (best + old.len() + CONTEXT_SHOWN)
        .min(lines.lines.len())
        .min(first + MAX_QUOTED_LINES);
    let _ = writeln!(
        text,
        " The closest match is at line {}; the file there reads:",
        best + 1
    );
    for (number, line) in lines.lines[first..last].iter().enumerate() {
        let shown = crate::tools::text::clip_line(line, MAX_QUOTED_CHARS);
        let _ = writeln!(text, "{:5} | {shown}", first + number + 1);
    }
    text.push_str("Make the hunk's context and `-` lines match these lines exactly.");
    if lines.lines[first..last]
        .iter()
        .any(|line| std::str::from_utf8(line).is_err())
    {
        text.push_str(
            " Each \u{fffd} there stands for bytes that are not UTF-8: copy it as it is.",
        );
    }
    text
}

struct Emitted {
    added: usize,
    removed: usize,
    context: usize,
}

/// Writes one hunk, placed at `at`, with exact counts. Context and removed lines come from
/// the file itself; with `lf_patch`, added lines get the file's `\r` (except a last line
/// that has no line ending at all).
fn emit_hunk(
    hunk: &Hunk,
    lines: &FileLines<'_>,
    at: usize,
    delta: isize,
    lf_patch: bool,
    added: Vec<Vec<u8>>,
    out: &mut Vec<u8>,
) -> Emitted {
    let mut added = added.into_iter();
    #[derive(Clone, Copy, PartialEq)]
    enum Kind {
        Context,
        Delete,
        Add,
    }
    let mut body: Vec<(Kind, Vec<u8>)> = Vec::new();
    let mut file_index = at;
    let mut patch_markers = (false, false); // (old side, new side) from `\` lines
    for line in &hunk.lines {
        match line {
            HunkLine::Context(_) => {
                body.push((Kind::Context, lines.lines[file_index].to_vec()));
                file_index += 1;
            }
            HunkLine::Delete(_) => {
                body.push((Kind::Delete, lines.lines[file_index].to_vec()));
                file_index += 1;
            }
            HunkLine::Add(text) => body.push((
                Kind::Add,
                added.next().unwrap_or_else(|| text.as_bytes().to_vec()),
            )),
            HunkLine::NoNewline => match body.last().map(|(k, _)| *k) {
                Some(Kind::Context) => patch_markers = (true, true),
                Some(Kind::Delete) => patch_markers.0 = true,
                Some(Kind::Add) => patch_markers.1 = true,
                None => {}
            },
        }
    }
    let touches_eof = file_index == lines.lines.len();
    let old_no_newline = touches_eof && !lines.final_newline;
    let new_no_newline = if patch_markers == (false, false) {
        old_no_newline
    } else {
        patch_markers.1 && touches_eof
    };

    // A context line that ends one side without a newline, but not the other, must be
    // written as a removal plus an addition: the two sides differ in that newline.
    let last_old = body.iter().rposition(|(k, _)| *k != Kind::Add);
    let last_new = body.iter().rposition(|(k, _)| *k != Kind::Delete);
    let mut split = Vec::new();
    if let Some(o) = last_old.filter(|&o| body[o].0 == Kind::Context) {
        let also_last_new = last_new == Some(o);
        if (also_last_new && old_no_newline != new_no_newline) || (!also_last_new && old_no_newline)
        {
            split.push(o);
        }
    }
    if let Some(n) = last_new.filter(|&n| body[n].0 == Kind::Context && last_old != Some(n))
        && new_no_newline
    {
        split.push(n);
    }
    split.sort_unstable_by(|a, b| b.cmp(a));
    for idx in split {
        let bytes = body[idx].1.clone();
        body[idx].0 = Kind::Delete;
        // After the removals that follow it: a marker ends its side, so the old side's
        // lines (and its marker) must all come before the new side's last line.
        let mut to = idx + 1;
        while body.get(to).is_some_and(|(kind, _)| *kind == Kind::Delete) {
            to += 1;
        }
        body.insert(to, (Kind::Add, bytes));
    }
    let last_old = body.iter().rposition(|(k, _)| *k != Kind::Add);
    let last_new = body.iter().rposition(|(k, _)| *k != Kind::Delete);
    if lf_patch {
        for (index, (kind, bytes)) in body.iter_mut().enumerate() {
            let ends_file = new_no_newline && Some(index) == last_new;
            if *kind == Kind::Add && !ends_file && !bytes.ends_with(b"\r") {
                bytes.push(b'\r');
            }
        }
    }

    let removed = body.iter().filter(|(k, _)| *k == Kind::Delete).count();
    let added = body.iter().filter(|(k, _)| *k == Kind::Add).count();
    let context = body.len() - removed - added;
    let old_count = removed + context;
    let new_count = added + context;
    let old_start = if old_count == 0 { at } else { at + 1 };
    let new_base = (at as isize + delta).max(0) as usize;
    // libgit2 places every hunk at `new_start - 1`, even one with no new lines, where
    // git's convention (the line before) would put a pure removal one line early; so
    // such a hunk names the line after, except at the top of the file.
    let new_start = if new_count == 0 && new_base == 0 {
        0
    } else {
        new_base + 1
    };
    let _ = writeln!(
        out,
        "@@ -{old_start},{old_count} +{new_start},{new_count} @@"
    );
    for (index, (kind, bytes)) in body.iter().enumerate() {
        let sign = match kind {
            Kind::Context => b' ',
            Kind::Delete => b'-',
            Kind::Add => b'+',
        };
        push_line(out, sign, bytes);
        let marks_old = old_no_newline && Some(index) == last_old;
        let marks_new = new_no_newline && Some(index) == last_new;
        if marks_old || marks_new {
            out.extend_from_slice(NO_NEWLINE);
        }
    }
    Emitted {
        added,
        removed,
        context,
    }
}

/// The `diff --git a/OLD b/NEW` line, quoted like the other lines (see [`quoted`]).
fn git_line(old: &str, new: &str) -> String {
    format!("diff --git {} {}\n", quoted("a/", old), quoted("b/", new))
}

/// `prefix` + `path` for a header line, quoted when libgit2 would misread it plainly: it
/// ends `diff --git` and `rename` paths at the first space, trims trailing spaces, and
/// needs quotes, backslashes and control characters escaped. (git quotes only the latter;
/// libgit2 reads the quoted form of all of them.)
fn quoted(prefix: &str, path: &str) -> String {
    let full = format!("{prefix}{path}");
    if needs_quotes(path) {
        c_quote(&full)
    } else {
        full
    }
}

fn needs_quotes(path: &str) -> bool {
    path.chars()
        .any(|c| c == ' ' || c == '"' || c == '\\' || c.is_control())
}

/// A C-style quoted string, as git and libgit2 read it.
fn c_quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            // Other control characters, as octal bytes (UTF-8 stays as it is).
            c if c.is_control() => {
                let mut buf = [0; 4];
                for byte in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("\\{byte:03o}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn push_line(out: &mut Vec<u8>, sign: u8, bytes: &[u8]) {
    out.push(sign);
    out.extend_from_slice(bytes);
    out.push(b'\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_libgit2_would_misread_are_quoted() {
        assert_eq!(git_line("a.txt", "a.txt"), "diff --git a/a.txt b/a.txt\n");
        assert_eq!(
            git_line("my file", "my file"),
            "diff --git \"a/my file\" \"b/my file\"\n"
        );
        assert_eq!(quoted("b/", "my file"), "\"b/my file\"");
        assert_eq!(quoted("b/", "caf\u{e9}"), "b/caf\u{e9}");
        assert_eq!(quoted("b/", "q\"\\\tx\u{1}"), "\"b/q\\\"\\\\\\tx\\001\"");
    }

    #[test]
    fn a_huge_claimed_start_line_is_refused_not_a_panic() {
        let file = FilePatch {
            old_path: Some("a.txt".into()),
            new_path: Some("a.txt".into()),
            hunks: vec![Hunk {
                claimed_start: usize::MAX,
                patch_line: 3,
                lines: vec![
                    HunkLine::Context("a".into()),
                    HunkLine::Delete("b".into()),
                    HunkLine::Add("c".into()),
                ],
            }],
            ..FilePatch::default()
        };
        let resolved = resolve(&file, Some((b"a\nb\n", 0o644))).expect("placed");
        assert_eq!(resolved.removed, 1);
    }

    fn one_hunk(claimed_start: usize, lines: Vec<HunkLine>) -> FilePatch {
        FilePatch {
            old_path: Some("a.txt".into()),
            new_path: Some("a.txt".into()),
            hunks: vec![Hunk {
                claimed_start,
                patch_line: 3,
                lines,
            }],
            ..FilePatch::default()
        }
    }

    #[test]
    fn a_refusal_stays_small_whatever_the_file_holds() {
        // One enormous line near the closest match is not quoted whole.
        let mut file = b"keep\n".to_vec();
        file.extend(vec![b'x'; 1_000_000]);
        file.extend_from_slice(b"\nend\n");
        let patch = one_hunk(
            1,
            vec![
                HunkLine::Context("keep".into()),
                HunkLine::Delete("nope".into()),
            ],
        );
        let refusal = resolve(&patch, Some((&file, 0o644))).expect_err("refused");
        assert!(refusal.0.len() < 4_000, "{} bytes", refusal.0.len());
        // Old lines that occur in thousands of places do not list every place.
        let file = "same\n".repeat(50_000);
        let patch = one_hunk(60_000, vec![HunkLine::Delete("same".into())]);
        let refusal = resolve(&patch, Some((file.as_bytes(), 0o644))).expect_err("refused");
        assert!(refusal.0.len() < 4_000, "{} bytes", refusal.0.len());
        assert!(refusal.0.contains("ambiguous"), "{}", refusal.0);
    }

    /// One change a property test makes at a line, through the lossy view.
    #[derive(Debug, Clone, Copy)]
    enum Edit {
        /// `-view` then `+X view`: the line kept, with a word put before it (a word of its
        /// own: a U+FFFD is only written back inside the word it was in).
        Prefix,
        /// `-view` then `+new`: the line rewritten in ASCII.
        Rewrite,
        /// `-view`: the line removed.
        Remove,
        /// ` view` then `+new`: a line added after it.
        Insert,
    }

    /// Applies `edit` at line `at` of `file` the way a model would after view_slice: the
    /// patch holds only the lossy view, with up to two context lines each side. Returns
    /// the file after, or the refusal.
    fn through_the_view(file: &[u8], at: usize, edit: Edit) -> Result<Vec<u8>, String> {
        let lines = FileLines::new(file);
        let view = |i: usize| String::from_utf8_lossy(lines.lines[i]).into_owned();
        let first = at.saturating_sub(2);
        let last = (at + 3).min(lines.lines.len());
        let mut body = String::new();
        for i in first..last {
            let line = view(i);
            if i != at {
                body.push_str(&format!(" {line}\n"));
                continue;
            }
            match edit {
                Edit::Prefix => body.push_str(&format!("-{line}\n+X {line}\n")),
                Edit::Rewrite => body.push_str(&format!("-{line}\n+new\n")),
                Edit::Remove => body.push_str(&format!("-{line}\n")),
                Edit::Insert => body.push_str(&format!(" {line}\n+new\n")),
            }
        }
        let diff = format!("--- a/f.txt\n+++ b/f.txt\n@@ -{} @@\n{body}", first + 1);
        let files = super::super::parse::parse(&diff).map_err(|e| e.to_string())?;
        let resolved = resolve(&files[0], Some((file, 0o644))).map_err(|e| e.0)?;
        let post = super::super::memory::apply(
            &resolved.text,
            &[super::super::memory::PreImage {
                path: "f.txt",
                bytes: file,
            }],
        )
        .map_err(|e| e.message().to_owned())?;
        Ok(post[0].bytes.clone().unwrap_or_default())
    }

    /// The file `edit` should give: every byte outside line `at` as it was.
    fn expected(file: &[u8], at: usize, edit: Edit) -> Vec<u8> {
        let mut lines: Vec<Vec<u8>> = file
            .split_inclusive(|&b| b == b'\n')
            .map(<[u8]>::to_vec)
            .collect();
        let ending = |line: &[u8]| {
            if line.ends_with(b"\n") {
                &b"\n"[..]
            } else {
                b""
            }
        };
        match edit {
            Edit::Prefix => lines[at] = [&b"X "[..], &lines[at]].concat(),
            Edit::Rewrite => lines[at] = [&b"new"[..], ending(&lines[at])].concat(),
            Edit::Remove => {
                // A removed last line without a newline leaves the line before it last,
                // without one too (the file's missing final newline is kept).
                if lines.remove(at).last() != Some(&b'\n')
                    && let Some(last) = lines.last_mut()
                {
                    last.pop();
                }
            }
            Edit::Insert => {
                // After a last line without a newline, the new line ends the file the
                // same way and the old last line gets one.
                let end = ending(&lines[at]).to_vec();
                if end.is_empty() {
                    lines[at].push(b'\n');
                }
                lines.insert(at + 1, [&b"new"[..], &end].concat());
            }
        }
        lines.concat()
    }

    use proptest::prelude::*;

    /// A line's bytes: mostly ASCII, with stray high bytes (Latin-1, Shift-JIS halves,
    /// truncated UTF-8), whole UTF-8 characters and literal U+FFFDs mixed in.
    fn line() -> impl Strategy<Value = Vec<u8>> {
        proptest::collection::vec(
            prop_oneof![
                6 => proptest::sample::select(b"abc xyz(){};=_.1".to_vec()).prop_map(|b| vec![b]),
                3 => (0x80u8..=0xff).prop_map(|b| vec![b]),
                1 => Just("\u{e9}".as_bytes().to_vec()),
                1 => Just("\u{fffd}".as_bytes().to_vec()),
                1 => Just(b"\xe2\x82".to_vec()),
            ],
            0..8,
        )
        .prop_map(|parts| parts.concat())
    }

    proptest! {
        /// A patch written from the lossy view of any lines applies to the bytes, and
        /// changes only the line it edits: every other byte, every invalid sequence and
        /// every literal U+FFFD elsewhere is kept, and a kept line keeps its own bytes
        /// behind each U+FFFD.
        #[test]
        fn a_patch_from_the_lossy_view_keeps_every_untouched_byte(
            lines in proptest::collection::vec(line(), 1..10),
            final_newline in any::<bool>(),
            at in any::<proptest::sample::Index>(),
            edit in prop_oneof![Just(Edit::Prefix), Just(Edit::Rewrite), Just(Edit::Remove), Just(Edit::Insert)],
        ) {
            let mut file = lines.join(&b'\n');
            if final_newline {
                file.push(b'\n');
            }
            // The file's own lines: an empty last line joined without a newline is none.
            let count = FileLines::new(&file).lines.len();
            prop_assume!(count > 0);
            let at = at.index(count);
            match through_the_view(&file, at, edit) {
                Ok(after) => prop_assert_eq!(after, expected(&file, at, edit)),
                // Only a hunk whose old lines' view occurs elsewhere with the same
                // neighbours may be refused; never with a different file.
                Err(refusal) => prop_assert!(refusal.contains("ambiguous"), "{}", refusal),
            }
        }

        /// The lossy view is matched exactly: a `-` line that differs from the view in
        /// any character, a U+FFFD included, does not match the line.
        #[test]
        fn a_view_matches_only_its_own_line(line in line(), other in line()) {
            let view = String::from_utf8_lossy(&line).into_owned();
            let other_view = String::from_utf8_lossy(&other).into_owned();
            prop_assert!(line_eq(&line, view.as_bytes()));
            prop_assert_eq!(line_eq(&line, other_view.as_bytes()), view == other_view);
        }
    }

    #[test]
    fn the_latin1_line_with_the_e_acute_is_patched_and_nothing_else_moves() {
        let file = b"// caf\xe9 menu\nprint(\"caf\xe9\")\nend \xe8\n";
        let diff = "--- a/f.txt\n+++ b/f.txt\n@@ -1,3 +1,3 @@\n // caf\u{fffd} menu\n-print(\"caf\u{fffd}\")\n+print(\"caf\u{fffd} au lait\")\n end \u{fffd}\n";
        let files = super::super::parse::parse(diff).expect("parsed");
        let resolved = resolve(&files[0], Some((file, 0o644))).expect("resolved");
        assert_eq!(resolved.utf8_in_legacy, 0);
        let post = super::super::memory::apply(
            &resolved.text,
            &[super::super::memory::PreImage {
                path: "f.txt",
                bytes: file,
            }],
        )
        .expect("applied");
        assert_eq!(
            post[0].bytes.as_deref(),
            Some(&b"// caf\xe9 menu\nprint(\"caf\xe9 au lait\")\nend \xe8\n"[..])
        );
    }

    #[test]
    fn an_added_replacement_character_that_cannot_be_mapped_is_refused_with_the_next_step() {
        let file = b"a\ncaf\xe9\nb\n";
        let patch = one_hunk(
            1,
            vec![
                HunkLine::Context("a".into()),
                HunkLine::Delete("caf\u{fffd}".into()),
                HunkLine::Add("caf\u{fffd} cr\u{fffd}me".into()),
                HunkLine::Context("b".into()),
            ],
        );
        let refusal = resolve(&patch, Some((file, 0o644))).expect_err("refused").0;
        assert!(refusal.contains("is not UTF-8"), "{refusal}");
        assert!(
            refusal.contains("no line that the same change removes has the word `cr\u{fffd}me`"),
            "{refusal}"
        );
        assert!(
            refusal.contains("write the line without the \u{fffd} character"),
            "{refusal}"
        );
        // In a UTF-8 file the same character is itself, literal, and written as such.
        let file = "a\ncaf\u{fffd}\nb\n".as_bytes();
        let resolved = resolve(&patch, Some((file, 0o644))).expect("a literal U+FFFD");
        assert!(
            String::from_utf8_lossy(&resolved.text).contains("+caf\u{fffd} cr\u{fffd}me\n"),
            "{}",
            String::from_utf8_lossy(&resolved.text)
        );
        // UTF-8 text added to a Latin-1 file is written as given, and counted.
        let patch = one_hunk(
            1,
            vec![
                HunkLine::Context("a".into()),
                HunkLine::Delete("caf\u{fffd}".into()),
                HunkLine::Add("caf\u{e9}".into()),
                HunkLine::Context("b".into()),
            ],
        );
        let resolved = resolve(&patch, Some((b"a\ncaf\xe9\nb\n", 0o644))).expect("resolved");
        assert_eq!(resolved.utf8_in_legacy, 1);
    }

    #[test]
    fn the_refusal_of_an_unmappable_line_quotes_at_most_120_characters_of_it() {
        let long = format!("{}\u{fffd}\u{fffd}", "x".repeat(1_000_000));
        let patch = one_hunk(
            1,
            vec![
                HunkLine::Context("a".into()),
                HunkLine::Delete("caf\u{fffd}".into()),
                HunkLine::Add(long),
            ],
        );
        let refusal = resolve(&patch, Some((b"a\ncaf\xe9\n", 0o644)))
            .expect_err("refused")
            .0;
        assert!(refusal.len() < 1_500, "{} bytes", refusal.len());
        let quoted = "x".repeat(MAX_QUOTED_ADDED_CHARS);
        assert!(
            refusal.contains(&format!("`{quoted}{}`", crate::tools::text::CLIP_MARKER)),
            "{refusal}"
        );
    }

    #[test]
    fn a_literal_replacement_character_is_not_taken_for_invalid_bytes() {
        // The view of both lines is `x\u{fffd}`, but only the second is UTF-8; the
        // claimed line decides, and the bytes removed are that line's.
        let file = b"x\xef\xbf\xbd\nx\xff\nend\n";
        let patch = one_hunk(
            1,
            vec![
                HunkLine::Delete("x\u{fffd}".into()),
                HunkLine::Context("x\u{fffd}".into()),
            ],
        );
        let resolved = resolve(&patch, Some((file, 0o644))).expect("resolved");
        assert!(
            resolved.text.ends_with(b"-x\xef\xbf\xbd\n x\xff\n"),
            "{:?}",
            String::from_utf8_lossy(&resolved.text)
        );
    }

    #[test]
    fn removing_a_last_line_without_newline_keeps_the_file_without_one() {
        for (file, kept) in [(&b"x\na"[..], "x"), (b"\na", "")] {
            let patch = one_hunk(
                1,
                vec![HunkLine::Context(kept.into()), HunkLine::Delete("a".into())],
            );
            let resolved = resolve(&patch, Some((file, 0o644))).expect("resolved");
            let post = super::super::memory::apply(
                &resolved.text,
                &[super::super::memory::PreImage {
                    path: "a.txt",
                    bytes: file,
                }],
            )
            .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&resolved.text)));
            assert_eq!(post[0].bytes.as_deref(), Some(kept.as_bytes()));
        }
    }

    #[test]
    fn a_last_line_without_newline_does_not_count_against_crlf() {
        assert!(FileLines::new(b"one\r\ntwo").crlf);
        assert!(FileLines::new(b"one\r\ntwo\r\n").crlf);
        assert!(!FileLines::new(b"one\ntwo\r\nthree\n").crlf);
        assert!(!FileLines::new(b"one").crlf);
    }
}
