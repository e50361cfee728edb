//! The properties the fuzz targets check, one function per parser that takes untrusted
//! bytes. Each takes arbitrary bytes and panics only when its property is violated, so the
//! same function serves `cargo fuzz` (the targets in `fuzz/` are one-line calls) and the
//! corpus replay test that runs on stable Rust (`tests/suite/fuzz_replay.rs`).
//!
//! They live in the library, behind the hidden testing module, so that they can reach the
//! `pub(crate)` stages (the stream parser, text-call recovery, config loading) without
//! making any of them public.
//!
//! Targets that need files (paths, patch, config, read_budgets) build them in a scratch
//! directory of their own under the system's temporary directory, one per process and
//! target, reused from call to call (creating a fresh one per input would dominate the
//! run time). A lock serialises callers, since the replay test may run targets on several
//! threads.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};

use serde_json::{Value, json};

use crate::project::Project;
use crate::tools::{Budgets, ToolError, Toolbox};

/// Reads an input as a sequence of small decisions; past its end every read is zero, so
/// any input, however short, decides everything.
struct Input<'a> {
    bytes: &'a [u8],
}

impl<'a> Input<'a> {
    fn new(bytes: &'a [u8]) -> Input<'a> {
        Input { bytes }
    }

    fn byte(&mut self) -> u8 {
        match self.bytes.split_first() {
            Some((&first, rest)) => {
                self.bytes = rest;
                first
            }
            None => 0,
        }
    }

    /// A number in `0..bound` (`bound` > 0).
    fn below(&mut self, bound: usize) -> usize {
        usize::from(self.byte()) % bound
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    /// Up to `max` bytes.
    fn take(&mut self, max: usize) -> &'a [u8] {
        let (taken, rest) = self.bytes.split_at(max.min(self.bytes.len()));
        self.bytes = rest;
        taken
    }

    fn rest(self) -> &'a [u8] {
        self.bytes
    }
}

/// A scratch directory for one target, created once per process and locked per call.
struct Scratch {
    dir: PathBuf,
    lock: Mutex<()>,
}

impl Scratch {
    fn get(
        cell: &'static OnceLock<Scratch>,
        name: &str,
    ) -> (&'static Path, MutexGuard<'static, ()>) {
        let scratch = cell.get_or_init(|| {
            let dir =
                std::env::temp_dir().join(format!("metron-fuzz-{name}-{}", std::process::id()));
            let _ = fs::remove_dir_all(&dir);
            fs::create_dir_all(&dir)
                .unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
            Scratch {
                dir,
                lock: Mutex::new(()),
            }
        });
        let guard = scratch.lock.lock().unwrap_or_else(PoisonError::into_inner);
        (&scratch.dir, guard)
    }
}

/// Empties `dir` (which must exist afterwards) for the next input's tree.
fn fresh_dir(dir: &Path) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap_or_else(|e| panic!("cannot create {}: {e}", dir.display()));
}

fn write(path: &Path, bytes: &[u8]) {
    if let Some(parent) = path.parent() {
        fs::create_dir_all(parent)
            .unwrap_or_else(|e| panic!("cannot create {}: {e}", parent.display()));
    }
    fs::write(path, bytes).unwrap_or_else(|e| panic!("cannot write {}: {e}", path.display()));
}

// ---------------------------------------------------------------------------------------
// patch

/// **patch**: apply_patch's preparation (parse, path checks, repair, in-memory apply with
/// libgit2) never panics, and repair either reproduces exactly what the diff says or
/// refuses.
///
/// The first byte picks one of two modes:
///
/// - odd: *generated*. The input describes a small file (lines drawn from an alphabet
///   full of repeats, look-alikes and lines that resemble diff syntax; LF or CRLF; with or
///   without a final newline) and one edit. The exact git diff of that edit must be
///   accepted and give exactly the intended file. A damaged diff (wrong start line, wrong
///   or missing counts, a blank context line without its space, whitespace damage in a
///   line, a context line dropped, `\ No newline` markers dropped, CR stripped, fenced,
///   without `a/` `b/` prefixes) is held to repair's stated rule: the hunk goes at its
///   claimed line if its old lines are there, else at the one place they occur, else the
///   patch is refused; and wherever it goes, the result is the hunk applied there.
/// - even: *raw*. The rest is a diff, a NUL, then NUL-separated contents given to the
///   files the diff names (in order of their old paths). Preparing it never panics, and
///   repair never writes a patch that libgit2 then refuses to apply.
pub fn patch(data: &[u8]) {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    let (dir, _guard) = Scratch::get(&SCRATCH, "patch");
    let root = dir.join("root");
    fresh_dir(&root);
    match data.split_first() {
        Some((mode, rest)) if mode % 2 == 1 => patch_generated(&root, rest),
        Some((_, rest)) => patch_raw(&root, rest),
        None => {}
    }
}

/// Lines the generated files are made of: repeats make placement ambiguous, look-alikes
/// (trailing or leading whitespace) test exact matching, and the rest look like diff
/// syntax once prefixed.
const PATCH_ALPHABET: &[&str] = &[
    "a", "b", "a ", " a", "", "\tb", "fn f() {", "}", "-x", "+y", "@@ z", "\\ q", "```", "c",
];

/// A file as lines (each with any `\r` it has, without `\n`) and whether it ends with a
/// newline.
#[derive(Clone, Debug, PartialEq)]
struct Lines {
    lines: Vec<Vec<u8>>,
    final_newline: bool,
}

impl Lines {
    fn bytes(&self) -> Vec<u8> {
        let mut out = self.lines.join(&b'\n');
        if !self.lines.is_empty() && self.final_newline {
            out.push(b'\n');
        }
        out
    }

    /// CRLF by repair's rule: most lines that end in a newline end in `\r\n`.
    fn crlf(&self) -> bool {
        let ended = if self.final_newline {
            self.lines.len()
        } else {
            self.lines.len().saturating_sub(1)
        };
        let with_cr = self.lines[..ended]
            .iter()
            .filter(|l| l.ends_with(b"\r"))
            .count();
        with_cr * 2 > ended
    }
}

/// One line of a hunk as generated (and as the parser will read it back).
#[derive(Clone, Debug, PartialEq)]
enum Line {
    Context(Vec<u8>),
    Delete(Vec<u8>),
    Add(Vec<u8>),
    NoNewline,
}

impl Line {
    fn old_text(&self) -> Option<&[u8]> {
        match self {
            Line::Context(t) | Line::Delete(t) => Some(t),
            _ => None,
        }
    }
}

/// A file line equals a patch line byte for byte, or but for the file's `\r`.
fn line_matches(file_line: &[u8], patch_line: &[u8]) -> bool {
    file_line == patch_line
        || (file_line.strip_suffix(b"\r") == Some(patch_line) && !patch_line.ends_with(b"\r"))
}

/// The file after `hunk` is applied with its old lines at `at`: context and removed lines
/// are the file's own, added lines get the file's `\r` when an LF patch meets a CRLF file
/// (except a last line left without a line ending), and the final newline follows the
/// `\ No newline` markers where the hunk reaches the end of the file (a patch without
/// markers keeps the file's missing newline).
fn applied_at(file: &Lines, hunk: &[Line], at: usize) -> Lines {
    let lf_patch = file.crlf()
        && !hunk.iter().any(|l| match l {
            Line::Context(t) | Line::Delete(t) | Line::Add(t) => t.ends_with(b"\r"),
            Line::NoNewline => false,
        });
    let mut out: Vec<(Vec<u8>, bool)> = file.lines[..at]
        .iter()
        .map(|l| (l.clone(), false))
        .collect();
    let mut index = at;
    let mut markers = (false, false);
    let mut last: Option<&Line> = None;
    for line in hunk {
        match line {
            Line::Context(_) => {
                out.push((file.lines[index].clone(), false));
                index += 1;
            }
            Line::Delete(_) => index += 1,
            Line::Add(text) => {
                let mut text = text.clone();
                let cr = lf_patch && !text.ends_with(b"\r");
                if cr {
                    text.push(b'\r');
                }
                out.push((text, cr));
            }
            Line::NoNewline => match last {
                Some(Line::Context(_)) => markers = (true, true),
                Some(Line::Delete(_)) => markers.0 = true,
                Some(Line::Add(_)) => markers.1 = true,
                _ => {}
            },
        }
        if !matches!(line, Line::NoNewline) {
            last = Some(line);
        }
    }
    let touches_eof = index == file.lines.len();
    out.extend(file.lines[index..].iter().map(|l| (l.clone(), false)));
    let old_no_newline = touches_eof && !file.final_newline;
    let new_no_newline = if markers == (false, false) {
        old_no_newline
    } else {
        markers.1 && touches_eof
    };
    let final_newline = if touches_eof {
        !new_no_newline
    } else {
        file.final_newline
    };
    if !final_newline && let Some((text, true)) = out.last_mut() {
        text.pop();
    }
    Lines {
        lines: out.into_iter().map(|(text, _)| text).collect(),
        final_newline,
    }
}

/// Where repair must put `hunk` in `file` by its stated rule, or `None` when it must
/// refuse: at the claimed line if the old lines are there, else at their only place.
fn expected_place(file: &Lines, hunk: &[Line], claimed_start: usize) -> Option<usize> {
    let old: Vec<&[u8]> = hunk.iter().filter_map(Line::old_text).collect();
    if old.is_empty() {
        return file.lines.is_empty().then_some(0);
    }
    let fits = |at: usize| {
        at.checked_add(old.len())
            .is_some_and(|end| end <= file.lines.len())
            && old
                .iter()
                .zip(&file.lines[at..])
                .all(|(p, f)| line_matches(f, p))
    };
    let claimed = claimed_start.saturating_sub(1);
    if fits(claimed) {
        return Some(claimed);
    }
    let found: Vec<usize> = (0..file.lines.len()).filter(|&at| fits(at)).collect();
    match found.as_slice() {
        [only] => Some(*only),
        _ => None,
    }
}

/// The damage a generated diff may get, one bit each.
mod damage {
    pub const START: u8 = 1;
    pub const COUNTS: u8 = 2;
    pub const BLANK_WITHOUT_SPACE: u8 = 4;
    pub const WHITESPACE: u8 = 8;
    pub const DROP_CONTEXT: u8 = 16;
    pub const DROP_MARKERS: u8 = 32;
    pub const STRIP_CR: u8 = 64;
    pub const FENCE_AND_PLAIN_PATHS: u8 = 128;
}

fn patch_generated(root: &Path, data: &[u8]) {
    let mut input = Input::new(data);
    let n = input.below(17);
    let crlf = input.byte().is_multiple_of(4);
    let words: Vec<&str> = (0..n)
        .map(|_| PATCH_ALPHABET[input.below(PATCH_ALPHABET.len())])
        .collect();
    // An empty last line without a newline is no line at all.
    let final_newline =
        words.last().is_none_or(|w| w.is_empty()) || !input.byte().is_multiple_of(4);
    let ending = |word: &str, last: bool| -> Vec<u8> {
        let mut line = word.as_bytes().to_vec();
        // The last line of a file without a final newline has no line ending at all.
        if crlf && (final_newline || !last) {
            line.push(b'\r');
        }
        line
    };
    let file = Lines {
        lines: words
            .iter()
            .enumerate()
            .map(|(i, w)| ending(w, i + 1 == n))
            .collect(),
        final_newline,
    };

    // The edit: lines s..s+d replaced by `added`, with context around.
    let mut s = input.below(n + 1);
    let mut d = input.below((n - s).min(4) + 1);
    let mut a = input.below(4);
    if !final_newline && s + d == n {
        // An edit that reaches the end of a file without a final newline keeps it
        // missing, which a diff says with markers after a removed and an added line.
        if d == 0 {
            s -= 1;
            d = 1;
        }
        a = a.max(1);
    }
    if d == 0 && a == 0 {
        a = 1;
    }
    let before = input.below(4).min(s);
    let mut after = input.below(4).min(n - s - d);
    // A blank context line at the very end is read as the gap after the hunk.
    while after > 0 && words[s + d + after - 1].is_empty() {
        after -= 1;
    }
    let added_words: Vec<&str> = (0..a)
        .map(|_| PATCH_ALPHABET[input.below(PATCH_ALPHABET.len())])
        .collect();
    let reaches_eof = s + d + after == n;
    let added: Vec<Vec<u8>> = added_words
        .iter()
        .enumerate()
        .map(|(i, w)| ending(w, reaches_eof && after == 0 && i + 1 == a))
        .collect();

    let mut intended = file.lines[..s].to_vec();
    intended.extend(added.iter().cloned());
    intended.extend(file.lines[s + d..].iter().cloned());
    let intended = Lines {
        lines: intended,
        final_newline,
    };

    let marker = reaches_eof && !final_newline;
    let mut hunk = Vec::new();
    hunk.extend((s - before..s).map(|i| Line::Context(file.lines[i].clone())));
    hunk.extend((s..s + d).map(|i| Line::Delete(file.lines[i].clone())));
    if marker && after == 0 && d > 0 {
        hunk.push(Line::NoNewline);
    }
    hunk.extend(added.iter().map(|t| Line::Add(t.clone())));
    if marker && after == 0 {
        hunk.push(Line::NoNewline);
    }
    hunk.extend((s + d..s + d + after).map(|i| Line::Context(file.lines[i].clone())));
    if marker && after > 0 {
        hunk.push(Line::NoNewline);
    }
    let old_start = s - before + 1;
    write(&root.join("f.txt"), &file.bytes());
    let project =
        Project::open(root, true).unwrap_or_else(|e| panic!("cannot open {}: {e}", root.display()));

    // The exact diff: accepted (when its old side says where it goes), and exact.
    let exact = render_diff(&hunk, old_start, true, 0, false);
    let outcome = prepared_file(&project, &exact);
    let old_lines = hunk.iter().filter(|l| l.old_text().is_some()).count();
    if old_lines > 0 || n == 0 {
        match &outcome {
            Ok(after) => assert_eq!(
                after,
                &intended.bytes(),
                "the exact diff gave another file\nfile: {:?}\n{exact}",
                String::from_utf8_lossy(&file.bytes())
            ),
            Err(e) => panic!(
                "the exact diff was refused: {e}\nfile: {:?}\n{exact}",
                String::from_utf8_lossy(&file.bytes())
            ),
        }
    } else if let Ok(after) = &outcome {
        assert_eq!(
            after,
            &intended.bytes(),
            "the exact diff gave another file\nfile: {:?}\n{exact}",
            String::from_utf8_lossy(&file.bytes())
        );
    }

    // A damaged diff, held to repair's rule.
    let damage = input.byte();
    if damage == 0 {
        return;
    }
    let mut damaged = hunk.clone();
    let mut claimed = old_start;
    if damage & damage::START != 0 {
        let shift = i64::from(input.byte() as i8);
        claimed = usize::try_from(claimed as i64 + shift).unwrap_or(0);
    }
    if damage & damage::WHITESPACE != 0 && !damaged.is_empty() {
        let at = input.below(damaged.len());
        let how = input.byte();
        if let Line::Context(t) | Line::Delete(t) | Line::Add(t) = &mut damaged[at] {
            match how % 3 {
                0 => t.push(b' '),
                1 => t.insert(0, b' '),
                _ => {
                    if let Some(pos) = t.iter().position(|b| b.is_ascii_whitespace()) {
                        t.remove(pos);
                    }
                }
            }
        }
        // Damage may not make the hunk's last line blank context (the parser drops it).
        if matches!(damaged.iter().rev().find(|l| **l != Line::NoNewline), Some(Line::Context(t)) if t.iter().all(u8::is_ascii_whitespace))
        {
            return;
        }
    }
    if damage & damage::DROP_CONTEXT != 0 {
        let first_is_context = matches!(damaged.first(), Some(Line::Context(_)));
        if first_is_context && input.byte().is_multiple_of(2) {
            damaged.remove(0);
            claimed += 1;
        } else if let Some(last) = damaged.iter().rposition(|l| *l != Line::NoNewline)
            && matches!(damaged[last], Line::Context(_))
        {
            damaged.remove(last);
            // Its marker now follows the line before; that one is not at the end.
            damaged.retain(|l| *l != Line::NoNewline);
        }
        if matches!(damaged.iter().rev().find(|l| **l != Line::NoNewline), Some(Line::Context(t)) if t.iter().all(u8::is_ascii_whitespace))
        {
            return;
        }
    }
    if damage & damage::DROP_MARKERS != 0 {
        damaged.retain(|l| *l != Line::NoNewline);
    }
    if damage & damage::STRIP_CR != 0 {
        for line in &mut damaged {
            if let Line::Context(t) | Line::Delete(t) | Line::Add(t) = line
                && t.ends_with(b"\r")
            {
                t.pop();
            }
        }
    }
    let counts = if damage & damage::COUNTS != 0 {
        1 + input.below(3) as u8
    } else {
        0
    };
    let text = render_diff(
        &damaged,
        claimed,
        damage & damage::FENCE_AND_PLAIN_PATHS == 0,
        counts,
        damage & damage::BLANK_WITHOUT_SPACE != 0,
    );
    let text = if damage & damage::FENCE_AND_PLAIN_PATHS != 0 {
        format!("Here is the change:\n\n```diff\n{text}```\n")
    } else {
        text
    };
    let outcome = prepared_file(&project, &text);
    let place = expected_place(&file, &damaged, claimed);
    match (place, outcome) {
        (None, Ok(after)) => panic!(
            "repair accepted a hunk whose place is ambiguous or nowhere, giving {:?}\nfile: {:?}\n{text}",
            String::from_utf8_lossy(&after),
            String::from_utf8_lossy(&file.bytes())
        ),
        (Some(at), Ok(after)) => {
            let want = applied_at(&file, &damaged, at).bytes();
            // When the file's last line has no newline, whether the edited file ends in one
            // is carried only by "\ No newline at end of file" markers, which damage may
            // drop and git and the generator read differently when the last line itself
            // goes: either answer is the edit.
            let marker_lost = !file.bytes().ends_with(b"\n");
            let trim = |b: &[u8]| -> Vec<u8> {
                match (marker_lost, b.strip_suffix(b"\n")) {
                    (true, Some(kept)) => kept.to_vec(),
                    _ => b.to_vec(),
                }
            };
            assert_eq!(
                String::from_utf8_lossy(&trim(&after)),
                String::from_utf8_lossy(&trim(&want)),
                "repair placed the hunk elsewhere than line {} or changed it\nfile: {:?}\n{text}",
                at + 1,
                String::from_utf8_lossy(&file.bytes())
            );
        }
        // A refusal is always allowed for a damaged diff (the one it must place is then
        // refused for the blank-line or marker rules the parser applies); the exact diff
        // above is the one that must go through.
        (_, Err(_)) => {}
    }
}

/// A unified diff of `f.txt` with one hunk. `counts`: 0 exact, 1 omitted (`@@ -N +N @@`),
/// 2 overstated, 3 bare `@@`-less start only.
fn render_diff(
    hunk: &[Line],
    claimed: usize,
    git_paths: bool,
    counts: u8,
    blank_without_space: bool,
) -> String {
    let old = hunk.iter().filter(|l| l.old_text().is_some()).count();
    let new = hunk
        .iter()
        .filter(|l| matches!(l, Line::Context(_) | Line::Add(_)))
        .count();
    let mut text = if git_paths {
        "diff --git a/f.txt b/f.txt\n--- a/f.txt\n+++ b/f.txt\n".to_owned()
    } else {
        "--- f.txt\n+++ f.txt\n".to_owned()
    };
    text.push_str(&match counts {
        0 => format!("@@ -{claimed},{old} +{claimed},{new} @@\n"),
        1 => format!("@@ -{claimed} +{claimed} @@\n"),
        2 => format!("@@ -{claimed},{} +{claimed},{} @@\n", old + 3, new + 3),
        _ => format!("@@ -{claimed},1 +{claimed},1 @@ fn context()\n"),
    });
    for line in hunk {
        let (sign, body) = match line {
            Line::Context(t) => (" ", t),
            Line::Delete(t) => ("-", t),
            Line::Add(t) => ("+", t),
            Line::NoNewline => {
                text.push_str("\\ No newline at end of file\n");
                continue;
            }
        };
        let body = String::from_utf8_lossy(body);
        if sign == " " && body.is_empty() && blank_without_space {
            text.push('\n');
        } else {
            text.push_str(sign);
            text.push_str(&body);
            text.push('\n');
        }
    }
    text
}

/// What apply_patch would write to `f.txt` for `diff`, or its refusal.
fn prepared_file(project: &Project, diff: &str) -> Result<Vec<u8>, String> {
    let prepared = crate::tools::apply_patch::prepare(project, diff).map_err(|e| e.to_string())?;
    match prepared.changes.as_slice() {
        [change] if change.path.as_str() == "f.txt" => Ok(change.after.clone().unwrap_or_default()),
        other => panic!(
            "a one-file patch of f.txt changed {:?}\n{diff}",
            other.iter().map(|c| c.path.to_string()).collect::<Vec<_>>()
        ),
    }
}

fn patch_raw(root: &Path, data: &[u8]) {
    let mut parts = data.split(|&b| b == 0);
    let Ok(diff) = std::str::from_utf8(parts.next().unwrap_or_default()) else {
        return;
    };
    // The old paths the diff names, in order, get the contents that follow: enough for
    // the fuzzer to give a diff's files the lines it expects, without a path syntax.
    let project =
        Project::open(root, true).unwrap_or_else(|e| panic!("cannot open {}: {e}", root.display()));
    let mut names: Vec<String> = Vec::new();
    for line in diff.lines() {
        let raw = line
            .strip_prefix("--- ")
            .or_else(|| line.strip_prefix("rename from "));
        let Some(raw) = raw else { continue };
        let raw = raw.split('\t').next().unwrap_or(raw).trim_end_matches('\r');
        let raw = raw.strip_prefix("a/").unwrap_or(raw);
        if let Ok(path) = project.resolve(raw)
            && !path.is_in_git_dir()
            && !names.contains(&path.as_str().to_owned())
            && path.as_str().len() < 200
        {
            names.push(path.as_str().to_owned());
        }
    }
    for (name, content) in names.iter().zip(parts) {
        // A name beneath one already written as a file (or the reverse) cannot exist.
        let target = root.join(name);
        if target.exists()
            || target
                .ancestors()
                .skip(1)
                .take_while(|a| *a != root)
                .any(Path::is_file)
        {
            continue;
        }
        if let Some(parent) = target.parent()
            && fs::create_dir_all(parent).is_ok()
        {
            let _ = fs::write(&target, content);
        }
    }
    match crate::tools::apply_patch::prepare(&project, diff) {
        Ok(_) | Err(ToolError::BadArguments(_)) => {}
        // The message starts with it; elsewhere it is a quote of the model's own text
        // (a path, a line of the diff).
        Err(
            ToolError::Refused(text)
            | ToolError::Fault(text)
            | ToolError::Conflict { message: text, .. },
        ) => assert!(
            !text.starts_with("The repaired patch does not apply"),
            "repair wrote a patch libgit2 refuses: {text}\n{diff}"
        ),
    }
}

// ---------------------------------------------------------------------------------------
// paths

/// Written in the file outside the project root; no read through the project may return
/// it.
const OUTSIDE_MARKER: &[u8] = b"METRON-FUZZ-OUTSIDE";

/// **paths**: resolving and opening a model-supplied path against a tree with symlinks
/// (inside, outside, absolute, through `..`, into `.git`, loops) never panics and never
/// reaches outside the root: a resolved path is normalised and relative; no read returns
/// the outside file's bytes; a file opened by following symlinks lies beneath the real
/// root, and is marked as git's when its real path is in `.git/`.
pub fn paths(data: &[u8]) {
    static TREE: OnceLock<(PathBuf, PathBuf)> = OnceLock::new();
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    let (dir, _guard) = Scratch::get(&SCRATCH, "paths");
    let (root, canonical_root) = TREE.get_or_init(|| paths_tree(dir));
    let project =
        Project::open(root, true).unwrap_or_else(|e| panic!("cannot open {}: {e}", root.display()));
    let raw = String::from_utf8_lossy(&data[..data.len().min(4096)]);

    let Ok(path) = project.resolve(&raw) else {
        return;
    };
    let text = path.as_str();
    assert!(
        !text.is_empty()
            && !text.starts_with('/')
            && text
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != ".."),
        "{raw:?} resolved to {text:?}, which is not a normalised relative path"
    );
    let outside = |bytes: &[u8], how: &str| {
        assert!(
            !bytes
                .windows(OUTSIDE_MARKER.len())
                .any(|w| w == OUTSIDE_MARKER),
            "{how} of {raw:?} read the file outside the root"
        );
    };
    if let Ok(bytes) = project.read(&path) {
        outside(&bytes, "read");
    }
    if let Ok(bytes) = project.read_capped(&path, 64) {
        outside(&bytes, "read_capped");
    }
    let _ = project.check_no_symlinks(&path);
    let _ = project.file_mode(&path);
    let _ = project.symlink_metadata(&path);
    let _ = project.exists(text);
    let _ = project.refuse_protected(&path);
    if let Ok(resolved) = project.open_resolved(&path) {
        use std::io::Read;
        let mut bytes = Vec::new();
        let _ = (&resolved.file).take(1024).read_to_end(&mut bytes);
        outside(&bytes, "open_resolved");
        let real = resolved.real.as_str();
        assert!(
            real.split('/')
                .all(|p| !p.is_empty() && p != "." && p != ".."),
            "{raw:?} opened as {real:?}"
        );
        let on_disk = root
            .join(real)
            .canonicalize()
            .unwrap_or_else(|e| panic!("{raw:?} opened as {real:?}, which is gone: {e}"));
        assert!(
            on_disk.starts_with(canonical_root),
            "{raw:?} opened {}, outside the root",
            on_disk.display()
        );
        assert!(
            !resolved.real.is_in_git_dir() || resolved.in_git_dir,
            "{raw:?} opened {real:?} in .git/ without saying so"
        );
    }
}

/// The tree `paths` resolves against: `root/` with files and symlinks of every kind, and
/// `outside/secret.txt` next to it.
fn paths_tree(dir: &Path) -> (PathBuf, PathBuf) {
    use std::os::unix::fs::symlink;
    let root = dir.join("root");
    let outside = dir.join("outside");
    let mut secret = OUTSIDE_MARKER.to_vec();
    secret.push(b'\n');
    write(&outside.join("secret.txt"), &secret);
    write(&root.join("a.txt"), b"inside a\n");
    write(&root.join("dir/b.txt"), b"inside b\n");
    write(&root.join("dir/sub/c.txt"), b"inside c\n");
    write(&root.join(".git/config"), b"[core]\n");
    write(&root.join(".metron.json"), b"{}\n");
    let links: &[(&str, PathBuf)] = &[
        ("in_link", "dir/b.txt".into()),
        ("dir_link", "dir".into()),
        ("up_link", "..".into()),
        ("out_link", "../outside/secret.txt".into()),
        ("out_dir", "../outside".into()),
        ("abs_link", outside.join("secret.txt")),
        ("abs_dir", outside.clone()),
        ("loop1", "loop2".into()),
        ("loop2", "loop1".into()),
        ("self", "self".into()),
        ("git_link", ".git".into()),
        ("git_config", ".git/config".into()),
        ("dangling", "nowhere/at/all".into()),
        ("dir/up", "../..".into()),
        ("dir/back", "..".into()),
        ("dir/sub/deep_out", "../../../outside/secret.txt".into()),
        ("dir/sub/chain", "../../in_link".into()),
    ];
    for (name, target) in links {
        symlink(target, root.join(name))
            .unwrap_or_else(|e| panic!("cannot make the symlink {name}: {e}"));
    }
    let canonical = root
        .canonicalize()
        .unwrap_or_else(|e| panic!("cannot canonicalise {}: {e}", root.display()));
    (root, canonical)
}

// ---------------------------------------------------------------------------------------
// ndjson

/// **ndjson**: the Ollama stream reader, fed arbitrary bytes in chunks cut where the input
/// says, with line and reply limits from the input, never panics and keeps its bounds:
/// while it has not seen `done`, every complete line it accepted is within the line limit
/// and so is the unfinished line it holds (else it must have refused); an accepted reply's
/// text and reasoning fit the reply limit; call ids are unique; and after `done` it stays
/// done.
///
/// Layout: two bytes line limit, two bytes reply limit, one byte seed for the chunk sizes,
/// then the stream.
pub fn ndjson(data: &[u8]) {
    let mut input = Input::new(data);
    let max_line = 1 + usize::from(input.u16() % 4096);
    let max_reply = match input.u16() {
        0 => usize::MAX,
        n => usize::from(n),
    };
    let seed = u32::from(input.byte()) | 0x100;
    let stream = input.rest();

    let mut parser =
        crate::ollama::StreamParser::new("call_f".to_owned()).with_limits(max_line, max_reply);
    let mut on_delta = |_: crate::ollama::Delta<'_>| {};
    let fed = Chunked {
        seed,
        max_line,
        lines: true,
        end: "`done`",
    }
    .feed(stream, |chunk| parser.feed(chunk, &mut on_delta));
    if !fed {
        return;
    }
    if let Ok(reply) = parser.finish(&mut on_delta) {
        assert!(
            reply.content.len() + reply.thinking.len() <= max_reply,
            "a reply of {} bytes was accepted with the limit at {max_reply}",
            reply.content.len() + reply.thinking.len()
        );
        assert_unique_ids(&reply.tool_calls);
    }
}

/// How a stream reader is fed in the `ndjson` and `sse` properties: in chunks of 1 to 64
/// bytes, their sizes from an xorshift of `seed` (cheap and deterministic), checking after
/// each accepted chunk that the reader has not forgotten it saw its `end`, and that no
/// line it holds passes `max_line`. `lines` is false for a non-streamed body, which is
/// one line however many newlines it holds.
struct Chunked {
    seed: u32,
    max_line: usize,
    lines: bool,
    end: &'static str,
}

impl Chunked {
    /// Feeds `stream` through `feed` (true once the reader saw its end); false when the
    /// reader refused it.
    fn feed(
        mut self,
        stream: &[u8],
        mut feed: impl FnMut(&[u8]) -> Result<bool, crate::ollama::OllamaError>,
    ) -> bool {
        let (mut fed, mut done) = (0, false);
        // The longest complete line fed so far, and the length of the unfinished one.
        let (mut longest, mut pending) = (0usize, 0usize);
        while fed < stream.len() {
            self.seed ^= self.seed << 13;
            self.seed ^= self.seed >> 17;
            self.seed ^= self.seed << 5;
            let size = 1 + (self.seed % 64) as usize;
            let chunk = &stream[fed..stream.len().min(fed + size)];
            fed += chunk.len();
            for &b in chunk {
                if b == b'\n' && self.lines {
                    longest = longest.max(pending);
                    pending = 0;
                } else {
                    pending += 1;
                }
            }
            match feed(chunk) {
                Ok(true) => done = true,
                Ok(false) => {
                    assert!(!done, "the parser forgot it had seen {}", self.end);
                    assert!(
                        longest <= self.max_line && pending <= self.max_line,
                        "a line of {} bytes was accepted with the limit at {}",
                        longest.max(pending),
                        self.max_line
                    );
                }
                Err(_) => return false,
            }
        }
        true
    }
}

/// Every call of an accepted reply has an id, and no two the same.
fn assert_unique_ids(calls: &[crate::ollama::wire::ToolCall]) {
    let mut ids = std::collections::HashSet::new();
    for call in calls {
        assert!(
            !call.id.is_empty() && ids.insert(call.id.as_str()),
            "call id {:?} is empty or repeated",
            call.id
        );
    }
}

// ---------------------------------------------------------------------------------------
// sse

/// **sse**: the Chat Completions reader (SSE framing, then the reply assembled from the
/// events, calls merged by `index`), fed arbitrary bytes in chunks cut where the input
/// says, with line and reply limits from the input, never panics and keeps its bounds:
/// while it has not seen `[DONE]`, every complete line it accepted is within the line
/// limit and so is the unfinished line it holds (else it must have refused); an accepted
/// reply's text, reasoning, call names and arguments fit the reply limit; call ids are
/// unique and never empty; and after `[DONE]` it stays done. A switch byte's low bit
/// reads the input as one non-streamed JSON body instead, bounded by the line limit.
///
/// Layout: two bytes line limit, two bytes reply limit, one byte seed for the chunk
/// sizes, one switch byte, then the stream.
pub fn sse(data: &[u8]) {
    let mut input = Input::new(data);
    let max_line = 1 + usize::from(input.u16() % 4096);
    let max_reply = match input.u16() {
        0 => usize::MAX,
        n => usize::from(n),
    };
    let seed = u32::from(input.byte()) | 0x100;
    let streaming = input.byte() & 1 == 0;
    let stream = input.rest();

    let mut parser = crate::ollama::openai::OpenAiParser::new("call_f".to_owned(), streaming)
        .with_limits(max_line, max_reply);
    let mut on_delta = |_: crate::ollama::Delta<'_>| {};
    let fed = Chunked {
        seed,
        max_line,
        lines: streaming,
        end: "[DONE]",
    }
    .feed(stream, |chunk| parser.feed(chunk, &mut on_delta));
    if !fed {
        return;
    }
    if let Ok(reply) = parser.finish(&mut on_delta) {
        let bytes = reply.content.len()
            + reply.thinking.len()
            + reply
                .tool_calls
                .iter()
                .map(|c| c.function.name.len())
                .sum::<usize>();
        assert!(
            bytes <= max_reply,
            "a reply of {bytes} bytes was accepted with the limit at {max_reply}"
        );
        assert_unique_ids(&reply.tool_calls);
    }
}

// ---------------------------------------------------------------------------------------
// config

/// **config**: loading a project's `.metron.json` (with the user's own file beside it)
/// and loading a user's file never panic, and the project file never widens authority:
/// `auto_approve_patches`, `allowed_commands` (unless `METRON_ALLOW_PROJECT_COMMANDS` is
/// set) and `command_env_passthrough` keep their defaults and never come from it; an
/// `endpoint` it sets names this machine; and the user's `remote_endpoint: "refuse"` and
/// `save_input_history: false` still hold.
///
/// Layout: one byte of switches, then the project file's text, a NUL, the user file's
/// text.
pub fn config(data: &[u8]) {
    use crate::config::{ConfigEnv, Flags, RemoteEndpoint, Source};
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    let (dir, _guard) = Scratch::get(&SCRATCH, "config");
    let mut input = Input::new(data);
    let switches = input.byte();
    let rest = input.rest();
    let (project_text, user_text) = match rest.iter().position(|&b| b == 0) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let root = dir.join("project");
    let home = dir.join("home");
    fresh_dir(&root);
    fresh_dir(&home);
    let project_file = root.join(crate::config::PROJECT_FILE);
    write(&project_file, project_text);
    let user_file = home.join(crate::config::USER_DIR).join("config.json");
    if let Some(text) = user_text {
        write(&user_file, text);
    }
    let allowed = switches & 1 == 1;
    let env = ConfigEnv {
        metron_config_dir: Some(home.clone()),
        allow_project_commands: allowed.then(|| "1".to_owned()),
        ..ConfigEnv::default()
    };

    if let Ok(loaded) = crate::config::load(&root, &env, &Flags::default()) {
        let defaults = crate::config::Config::default();
        let from_project = |key: &str| *loaded.source_of(key) == Source::File(project_file.clone());
        for &key in crate::config::Key::ALL {
            if !key.is_privileged() || (key == crate::config::Key::allowed_commands && allowed) {
                continue;
            }
            let key = key.name();
            // The user's own file may set it; otherwise it keeps its default.
            let users = *loaded.source_of(key) == Source::File(user_file.clone());
            assert!(
                (users || loaded.config.get_json(key) == defaults.get_json(key))
                    && !from_project(key),
                "the project file set `{key}` to {:?}",
                loaded.config.get_json(key)
            );
        }
        if from_project("endpoint") {
            assert!(
                crate::config::is_local(&loaded.config.endpoint),
                "the project file set a remote endpoint {}",
                loaded.config.endpoint
            );
        }
        let user: Option<Value> = user_text
            .and_then(|t| std::str::from_utf8(t).ok())
            .and_then(|t| serde_json::from_str(t).ok());
        if let Some(Value::Object(user)) = user {
            if user.get("remote_endpoint") == Some(&json!("refuse")) {
                assert_eq!(
                    loaded.config.remote_endpoint,
                    RemoteEndpoint::Refuse,
                    "the project file lifted the user's refusal of remote endpoints"
                );
            }
            if user.get("save_input_history") == Some(&json!(false)) {
                assert!(
                    !loaded.config.save_input_history,
                    "the project file turned the user's input history back on"
                );
            }
        }
    }
    // The user's file as the one in use (`$METRON_CONFIG`): anything may fail, nothing
    // may panic.
    if user_text.is_some() {
        let env = ConfigEnv {
            metron_config: Some(user_file),
            ..ConfigEnv::default()
        };
        if let Ok(mut loaded) = crate::config::load(&root, &env, &Flags::default()) {
            let _ = crate::config::check_tool_names(&mut loaded, &crate::tools::names());
        }
    }
}

// ---------------------------------------------------------------------------------------
// text_calls

/// The tools a text call may name, as offered in a session.
const TOOL_NAMES: [&str; 6] = [
    "list_files",
    "find_symbol",
    "search_text",
    "view_slice",
    "apply_patch",
    "run_command",
];

/// **text_calls**: recovering tool calls from a reply's text never panics; a recovered
/// call names only tools offered in the session, and there is at least one; and the
/// module's quoting rules hold: a reply that yields calls yields none once prose follows
/// it, once it is wrapped in a code fence, or once the model was shown its text in a tool
/// result (as view_slice shows a file, with line-number gutters).
///
/// Layout: one byte saying which tools are offered (bit i: `TOOL_NAMES[i]`), then the
/// reply text, optionally a NUL and a tool result the model was shown before.
pub fn text_calls(data: &[u8]) {
    use crate::agent::text_calls::{Shown, recover};
    let mut input = Input::new(data);
    let mask = input.byte();
    let rest = input.rest();
    let (content, shown_text) = match rest.iter().position(|&b| b == 0) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let content = String::from_utf8_lossy(content);
    let offered = |name: &str| {
        TOOL_NAMES
            .iter()
            .position(|&t| t == name)
            .is_some_and(|i| mask & (1 << i) != 0)
    };
    let mut shown = Shown::default();
    if let Some(text) = shown_text {
        shown.record(&String::from_utf8_lossy(text));
    }
    let Some(recovered) = recover(&content, offered, &shown) else {
        return;
    };
    assert!(
        !recovered.calls.is_empty(),
        "recovered no calls from {content:?}"
    );
    for call in &recovered.calls {
        assert!(
            offered(&call.function.name),
            "recovered a call to {:?}, which is not offered, from {content:?}",
            call.function.name
        );
    }
    let followed = format!("{content}\nThat is what the file says.");
    assert_eq!(
        recover(&followed, offered, &shown),
        None,
        "calls followed by prose were recovered from {followed:?}"
    );
    let fenced = format!("```\n{content}\n```");
    assert_eq!(
        recover(&fenced, offered, &shown),
        None,
        "fenced calls were recovered from {fenced:?}"
    );
    let as_viewed: String = content
        .split('\n')
        .enumerate()
        .map(|(i, line)| format!("{:5} | {line}\n", i + 1))
        .collect();
    shown.record(&as_viewed);
    assert_eq!(
        recover(&content, offered, &shown),
        None,
        "calls the model was shown in a file were recovered from {content:?}"
    );
}

// ---------------------------------------------------------------------------------------
// read_budgets

/// The files `read_budgets` may create, by index.
const BUDGET_FILES: [&str; 8] = [
    "a.rs",
    "b.go",
    "dir/c.rs",
    "dir/sub/d.txt",
    "e.txt",
    ".gitignore",
    "dir/.ignore",
    "dir/f.go",
];

/// **read_budgets**: each read tool (view_slice, search_text, list_files, find_symbol),
/// on a small tree and with budgets and arguments from the input, never panics, and a
/// successful result stays within its budget. Budgets count lines and characters, so the
/// byte bound is derived from them: a clipped line is at most `max_line_chars` characters
/// of at most 4 bytes each plus the clip marker.
///
/// - view_slice: at most `max_slice_lines` lines, each `%5d | ` and one clipped line;
/// - search_text: at most `search_max_matches` lines `path:line:` and one clipped line,
///   one truncation line, a note per directory skipped for an unsafe ignore file, and
///   at most `CAPPED_FILES_NAMED` + 1 notes on what the per-file cap left out;
/// - list_files: at most `list_max_entries` paths, one truncation line, the notes;
/// - find_symbol: at most `list_max_entries` definitions, each one clipped line, and at
///   most two note lines.
///
/// Messages that only echo the model's own argument back (no match, a bad pattern) are
/// not bounded by a budget.
///
/// Layout: five budget bytes, two bytes for view_slice's start and end, a file count, then
/// per file a name byte, a length byte and the content; the rest is the argument text
/// (pattern, glob, symbol, path).
pub fn read_budgets(data: &[u8]) {
    static SCRATCH: OnceLock<Scratch> = OnceLock::new();
    let (dir, _guard) = Scratch::get(&SCRATCH, "read_budgets");
    let root = dir.join("root");
    fresh_dir(&root);
    let mut input = Input::new(data);
    let budgets = Budgets {
        max_slice_lines: 1 + input.below(8),
        max_line_chars: 1 + input.below(40),
        search_max_matches: 1 + input.below(8),
        search_max_per_file: 1 + input.below(4),
        list_max_entries: 1 + input.below(8),
    };
    let number = |byte: u8| -> i64 {
        match byte {
            255 => i64::MAX,
            254 => i64::MIN,
            b => i64::from(b as i8),
        }
    };
    let start = number(input.byte());
    let end = number(input.byte());
    let files = input.below(BUDGET_FILES.len() + 1);
    let mut written: Vec<&str> = Vec::new();
    for _ in 0..files {
        let name = BUDGET_FILES[input.below(BUDGET_FILES.len())];
        let length = usize::from(input.byte());
        let content = input.take(length);
        write(&root.join(name), content);
        if !written.contains(&name) {
            written.push(name);
        }
    }
    let argument = String::from_utf8_lossy(input.rest()).into_owned();
    let project = Project::open(&root, true)
        .unwrap_or_else(|e| panic!("cannot open {}: {e}", root.display()));
    let toolbox = Toolbox::new(project, budgets);

    let clipped = 4 * budgets.max_line_chars + crate::tools::text::CLIP_MARKER.len();
    let longest_path = BUDGET_FILES.iter().map(|p| p.len()).max().unwrap_or(0);
    let directories = 3;
    // Files hold at most 255 bytes, so at most 256 lines: three digits.
    let line_digits = 3;

    let path = BUDGET_FILES
        .iter()
        .find(|p| argument.starts_with(*p))
        .copied()
        .unwrap_or(&argument);
    let view = toolbox.call(
        "view_slice",
        json!({"path": path, "start": start, "end": end}),
    );
    if let Ok(text) = &view {
        let lines: Vec<&str> = text.lines().collect();
        assert!(
            lines.len() <= budgets.max_slice_lines,
            "view_slice showed {} lines with max_slice_lines {}",
            lines.len(),
            budgets.max_slice_lines
        );
        for line in &lines {
            assert!(
                line.len() <= 5 + 3 + clipped,
                "view_slice line of {} bytes with max_line_chars {}: {line:?}",
                line.len(),
                budgets.max_line_chars
            );
        }
    }

    let search = toolbox.call("search_text", json!({"pattern": argument}));
    if let Ok(text) = &search
        && !text.ends_with("No matches found.")
    {
        let (mut matches, mut truncated, mut notes, mut capped) = (0, 0, 0, 0);
        for line in text.split_terminator('\n') {
            if line.starts_with("[skipped ") {
                notes += 1;
            } else if line.starts_with("[truncated to ") {
                truncated += 1;
            } else if line.starts_with("[+") {
                capped += 1;
                // A path of the tree, or the closing count of the rest.
                assert!(
                    line.len() <= longest_path + 120,
                    "search_text per-file note of {} bytes: {line:?}",
                    line.len()
                );
            } else {
                matches += 1;
                assert!(
                    line.len() <= longest_path + 1 + line_digits + 1 + clipped,
                    "search_text line of {} bytes with max_line_chars {}: {line:?}",
                    line.len(),
                    budgets.max_line_chars
                );
            }
        }
        assert!(
            matches <= budgets.search_max_matches
                && truncated <= 1
                && notes <= directories + written.len()
                && capped <= crate::tools::search_text::CAPPED_FILES_NAMED + 1,
            "search_text showed {matches} matches, {truncated} truncation lines, {notes} notes and {capped} per-file notes with search_max_matches {}",
            budgets.search_max_matches
        );
    }

    let glob = toolbox.call("list_files", json!({"pattern": argument}));
    let all = toolbox.call("list_files", json!({}));
    for listing in [&glob, &all].into_iter().flatten() {
        if listing.contains("No files match `") || listing.ends_with("No files found.") {
            continue;
        }
        let (mut paths, mut other) = (0, 0);
        for line in listing.split_terminator('\n') {
            if line.starts_with('[') {
                other += 1;
            } else {
                paths += 1;
                assert!(
                    line.len() <= longest_path,
                    "list_files listed {line:?}, which is not a file of the tree"
                );
            }
        }
        assert!(
            paths <= budgets.list_max_entries && other <= 1 + directories,
            "list_files listed {paths} paths and {other} notes with list_max_entries {}",
            budgets.list_max_entries
        );
    }

    let symbols = toolbox.call("find_symbol", json!({"symbol": argument}));
    if let Ok(text) = &symbols
        && !text.starts_with("No ")
    {
        let (mut definitions, mut notes) = (0, 0);
        for line in text.split_terminator('\n') {
            if line.starts_with('[') {
                notes += 1;
            } else {
                definitions += 1;
                assert!(
                    line.len() <= clipped,
                    "find_symbol line of {} bytes with max_line_chars {}: {line:?}",
                    line.len(),
                    budgets.max_line_chars
                );
            }
        }
        assert!(
            definitions <= budgets.list_max_entries && notes <= 2,
            "find_symbol showed {definitions} definitions and {notes} notes with list_max_entries {}",
            budgets.list_max_entries
        );
    }
}
