//! `view_slice(path, start, end)`: one numbered line range from one file.
//!
//! This is the only tool that shows file content in bulk, so it is where the budget bites:
//! a span wider than `max_slice_lines` is refused (not trimmed, so the model learns the
//! rule) unless the file ends within the budget (`1-500` on a 6-line file is answered: a
//! refusal would only cost a round trip), every line is clipped to `max_line_chars`, and a
//! large file is streamed so memory use does not depend on its size, even for a single
//! enormous line.
//!
//! It is also a read the model's patches are held to (see [`crate::authority::revisions`]): a file up
//! to [`MAX_HASHED_BYTES`] is read whole, once, hashed, and the lines are cut from those
//! same bytes, so the recorded revision is exactly the content the lines came from.

use std::io::{BufRead, BufReader, Read};

use serde::Deserialize;

use super::text::clip_line;
use super::{
    Access, Account, Budgets, ReadTool, Reads, ToolContext, ToolError, ToolResult, ToolSpec, arg,
};
use crate::authority::journal::{BlobId, content_hash};
use crate::authority::revisions::MAX_HASHED_BYTES;
use crate::project::{BoundaryError, Project, ProjectPath};

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "view_slice",
    description: "Read lines start..end (1-based, inclusive) of one file, numbered. At most max_slice_lines lines per call; never ask for whole files.",
    parameters: r#"{"type":"object","properties":{"path":{"type":"string"},"start":{"type":"integer"},"end":{"type":"integer"}},"required":["path","start","end"]}"#,
    access: Access::Read,
    scope: "files named beneath the project root, not .git/",
    available: super::always_available,
    run: &Reads(ViewSlice),
    purged_after_turn: true,
    shown: |args| {
        format!(
            "file {} lines {}-{}",
            arg(args, "path"),
            arg(args, "start"),
            arg(args, "end")
        )
    },
    ledger_arguments: None,
    subject: |args| {
        format!(
            "{} {}-{}",
            super::subject_arg(args, "path"),
            super::plain_arg(args, "start"),
            super::plain_arg(args, "end")
        )
    },
    schema: std::sync::OnceLock::new(),
};

/// How much of a file is inspected for a NUL byte before it is called binary (git and
/// ripgrep look at about the same amount).
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    path: String,
    start: i64,
    end: i64,
}

struct ViewSlice;

impl ReadTool for ViewSlice {
    type Args = Args;

    fn run(&self, context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
        view(context, args)
    }
}

fn view(context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
    let viewed = read_slice(
        &context.env.project,
        &context.env.budgets,
        &args.path,
        args.start,
        args.end,
    )?;
    if let Some(hash) = viewed.hash {
        let mut how = format!("view_slice {}-{}", viewed.first, viewed.last);
        // Read through a symlink: kept under the real path, the one a patch names. It is
        // the path of the file that was read, found while opening it.
        if viewed.real != viewed.path {
            how = format!("{how} of `{}`", viewed.path);
        }
        context.record_revision(&viewed.real, hash, how);
    }
    let lines = usize::try_from(viewed.last.saturating_add(1).saturating_sub(viewed.first))
        .unwrap_or(usize::MAX);
    Ok(ToolResult::new(viewed.text, Account::Slice { lines }))
}

/// Reads lines `start..=end` of `path`, formatted `%5d | text`, one per line.
#[cfg(test)]
pub(crate) fn view_slice(
    project: &Project,
    budgets: &Budgets,
    path: &str,
    start: i64,
    end: i64,
) -> Result<String, ToolError> {
    read_slice(project, budgets, path, start, end).map(|viewed| viewed.text)
}

/// What one view showed, and of which revision.
struct Viewed {
    /// The numbered lines.
    text: String,
    /// The file, as named.
    path: ProjectPath,
    /// Where the opened file really is (symlinks followed): the revision's key.
    real: ProjectPath,
    /// The first line shown.
    first: u64,
    /// The last line shown.
    last: u64,
    /// The content hash of the whole file the lines were cut from; `None` for a file
    /// larger than [`MAX_HASHED_BYTES`], which is streamed instead.
    hash: Option<BlobId>,
}

fn read_slice(
    project: &Project,
    budgets: &Budgets,
    path: &str,
    start: i64,
    end: i64,
) -> Result<Viewed, ToolError> {
    let refuse = |msg: String| Err(ToolError::Refused(msg));
    if start < 1 {
        return refuse(format!(
            "start must be 1 or more (lines are numbered from 1), got {start}"
        ));
    }
    if end < start {
        return refuse(format!(
            "end ({end}) is before start ({start}); ask for start <= end"
        ));
    }
    let span = end.abs_diff(start).saturating_add(1);
    let max = budgets.max_slice_lines as u64;
    let too_wide = move || {
        ToolError::Refused(format!(
            "lines {start}-{end} is {span} lines; view_slice reads at most {max} lines per call, so ask for a narrower range"
        ))
    };
    // Zero lines per call refuses everything, as before; otherwise a wide range is read up
    // to the budget and refused only if the file goes on past it.
    if max == 0 {
        return Err(too_wide());
    }
    let path = project.resolve(path)?;
    project.refuse_git_internals(&path)?;
    project.refuse_secret(&path)?;
    // Through a symlink in the tree the path may still lead into .git/; that is decided
    // on the directories the file was actually opened through.
    let resolved = project.open_resolved(&path)?;
    if resolved.in_git_dir {
        return Err(BoundaryError::GitDir(path.to_string()).into());
    }
    // A symlink in the tree may lead into a protected place (`k -> home/me/.ssh`).
    project.refuse_secret(&resolved.real)?;
    let (mut file, real) = (resolved.file, resolved.real);
    let (start, asked_end) = (start as u64, end as u64);
    let end = asked_end.min(start.saturating_add(max - 1));
    let slice = Slice {
        start,
        end,
        wide: asked_end > end,
    };
    let fault = |e: std::io::Error| ToolError::Fault(format!("reading `{path}`: {e}"));

    // A file up to the limit is read whole, hashed, and sliced from the same bytes. The
    // size is only a hint (the file may grow meanwhile), so the read itself is bounded: a
    // file that turns out larger is streamed on from where the read stopped, unrecorded.
    let small = file
        .metadata()
        .is_ok_and(|meta| meta.len() <= MAX_HASHED_BYTES as u64);
    let (text, last, hash) = if small {
        let mut bytes = Vec::new();
        (&mut file)
            .take(MAX_HASHED_BYTES as u64 + 1)
            .read_to_end(&mut bytes)
            .map_err(fault)?;
        if bytes.len() <= MAX_HASHED_BYTES {
            let (text, last) = render(&bytes[..], &path, budgets, slice)?.ok_or_else(too_wide)?;
            (text, last, Some(content_hash(&bytes)))
        } else {
            let (text, last) = render(bytes.as_slice().chain(file), &path, budgets, slice)?
                .ok_or_else(too_wide)?;
            (text, last, None)
        }
    } else {
        let (text, last) = render(file, &path, budgets, slice)?.ok_or_else(too_wide)?;
        (text, last, None)
    };
    Ok(Viewed {
        text,
        path,
        real,
        first: start,
        last,
        hash,
    })
}

/// The lines a view cuts out.
#[derive(Clone, Copy)]
struct Slice {
    /// The first line (1-based).
    start: u64,
    /// The last line, within the budget.
    end: u64,
    /// The model asked for more than the budget: the answer stands only if the file ends
    /// by `end`.
    wide: bool,
}

/// Cuts the slice's lines out of `reader`, numbered and clipped; returns them and the
/// number of the last line shown, or `None` for a wide slice of a file that goes on past
/// the budget (the caller refuses it).
fn render(
    reader: impl Read,
    path: &ProjectPath,
    budgets: &Budgets,
    slice: Slice,
) -> Result<Option<(String, u64)>, ToolError> {
    let Slice { start, end, wide } = slice;
    let refuse = |msg: String| Err(ToolError::Refused(msg));
    let mut lines = LineReader::new(reader, budgets.max_line_chars);
    let fault = |e: std::io::Error| ToolError::Fault(format!("reading `{path}`: {e}"));
    let binary = || {
        Err(ToolError::Refused(format!(
            "`{path}` is a binary file; view_slice shows text only"
        )))
    };
    if lines.looks_binary().map_err(fault)? {
        return binary();
    }

    let mut out = String::new();
    let mut number = 0u64;
    while let Some(line) = lines.next_line(number + 1 >= start).map_err(fault)? {
        number += 1;
        if number < start {
            continue;
        }
        if line.contains(&0) {
            return binary();
        }
        out.push_str(&format!(
            "{number:5} | {}\n",
            clip_line(line, budgets.max_line_chars)
        ));
        if number == end {
            // Only counted: is there a line past the budget?
            if wide && lines.next_line(false).map_err(fault)?.is_some() {
                return Ok(None);
            }
            return Ok(Some((out, number)));
        }
    }
    if number < start {
        let noun = if number == 1 { "line" } else { "lines" };
        return refuse(format!(
            "`{path}` has {number} {noun}; start {start} is past the end of the file"
        ));
    }
    Ok(Some((out, number)))
}

/// Streams lines out of a reader, keeping at most a fixed prefix of each one, so a file
/// with a gigabyte-long line costs no more memory than one with short lines.
struct LineReader<R> {
    reader: BufReader<R>,
    keep: usize,
    line: Vec<u8>,
}

impl<R: Read> LineReader<R> {
    fn new(inner: R, max_line_chars: usize) -> Self {
        // One byte more than clip_line looks at, so it can tell the line was longer.
        let keep = max_line_chars.saturating_mul(4).saturating_add(5);
        LineReader {
            reader: BufReader::with_capacity(64 * 1024, inner),
            keep,
            line: Vec::new(),
        }
    }

    fn looks_binary(&mut self) -> std::io::Result<bool> {
        let head = self.reader.fill_buf()?;
        Ok(head[..head.len().min(BINARY_SNIFF_BYTES)].contains(&0))
    }

    /// The next line without its `\n`, or `None` at end of file. When `wanted` is false
    /// the line is only counted, not kept.
    fn next_line(&mut self, wanted: bool) -> std::io::Result<Option<&[u8]>> {
        self.line.clear();
        let mut saw_any = false;
        loop {
            let chunk = self.reader.fill_buf()?;
            if chunk.is_empty() {
                return Ok(saw_any.then_some(&self.line[..]));
            }
            saw_any = true;
            let (body, consumed, done) = match memchr::memchr(b'\n', chunk) {
                Some(i) => (&chunk[..i], i + 1, true),
                None => (chunk, chunk.len(), false),
            };
            if wanted && self.line.len() < self.keep {
                let room = self.keep - self.line.len();
                self.line.extend_from_slice(&body[..body.len().min(room)]);
            }
            self.reader.consume(consumed);
            if done {
                return Ok(Some(&self.line[..]));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::text::CLIP_MARKER;

    fn setup(files: &[(&str, &[u8])]) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, body) in files {
            std::fs::write(dir.path().join(name), body).expect("write");
        }
        let project = Project::open(dir.path(), false).expect("open");
        (dir, project)
    }

    fn budgets(lines: usize, chars: usize) -> Budgets {
        Budgets {
            max_slice_lines: lines,
            max_line_chars: chars,
            ..Budgets::default()
        }
    }

    #[test]
    fn numbers_and_clamps() {
        let (_d, p) = setup(&[("a.txt", b"one\ntwo\nthree\n")]);
        let b = budgets(10, 100);
        assert_eq!(
            view_slice(&p, &b, "a.txt", 2, 3),
            Ok("    2 | two\n    3 | three\n".into())
        );
        assert_eq!(
            view_slice(&p, &b, "a.txt", 3, 9),
            Ok("    3 | three\n".into())
        );
        let past = view_slice(&p, &b, "a.txt", 4, 5).unwrap_err().to_string();
        assert!(past.contains("has 3 lines"), "{past}");
    }

    #[test]
    fn span_edges() {
        let body = "x\n".repeat(50);
        let (_d, p) = setup(&[("a.txt", body.as_bytes())]);
        let b = budgets(5, 100);
        assert_eq!(
            view_slice(&p, &b, "a.txt", 1, 5).map(|s| s.lines().count()),
            Ok(5)
        );
        assert!(view_slice(&p, &b, "a.txt", 1, 6).is_err());
        assert!(view_slice(&p, &b, "a.txt", 3, 2).is_err());
        assert!(view_slice(&p, &b, "a.txt", 0, 2).is_err());
        assert!(view_slice(&p, &b, "a.txt", 1, i64::MAX).is_err());
    }

    #[test]
    fn a_wide_range_is_answered_when_the_file_ends_within_the_budget() {
        let (_d, p) = setup(&[("a.txt", b"one\ntwo\nthree\n"), ("b.txt", b"1\n2\n3\n4\n")]);
        let b = budgets(3, 100);
        assert_eq!(
            view_slice(&p, &b, "a.txt", 1, 500),
            Ok("    1 | one\n    2 | two\n    3 | three\n".into())
        );
        assert_eq!(
            view_slice(&p, &b, "b.txt", 2, i64::MAX),
            Ok("    2 | 2\n    3 | 3\n    4 | 4\n".into())
        );
        // A line past the budget: refused as before, naming the budget.
        let wide = view_slice(&p, &b, "b.txt", 1, 500).unwrap_err().to_string();
        assert!(wide.contains("at most 3 lines per call"), "{wide}");
        let none = view_slice(&p, &budgets(0, 100), "a.txt", 1, 1).unwrap_err();
        assert!(none.to_string().contains("at most 0 lines"), "{none}");
    }

    #[test]
    fn no_trailing_newline_and_crlf() {
        let (_d, p) = setup(&[("a.txt", b"one\r\ntwo")]);
        let b = budgets(10, 100);
        assert_eq!(
            view_slice(&p, &b, "a.txt", 1, 2),
            Ok("    1 | one\n    2 | two\n".into())
        );
        let past = view_slice(&p, &b, "a.txt", 3, 3).unwrap_err().to_string();
        assert!(past.contains("has 2 lines"), "{past}");
    }

    #[test]
    fn long_lines_binary_and_lossy() {
        let long = format!("{}\nshort\n", "y".repeat(100_000));
        let (_d, p) = setup(&[
            ("l.txt", long.as_bytes()),
            ("b.bin", b"ab\0cd\n"),
            ("u.txt", b"a\xffb\n"),
        ]);
        let b = budgets(10, 8);
        assert_eq!(
            view_slice(&p, &b, "l.txt", 1, 2),
            Ok(format!("    1 | yyyyyyyy{CLIP_MARKER}\n    2 | short\n"))
        );
        assert!(
            view_slice(&p, &b, "b.bin", 1, 1)
                .unwrap_err()
                .to_string()
                .contains("binary")
        );
        assert_eq!(
            view_slice(&p, &b, "u.txt", 1, 1),
            Ok("    1 | a\u{fffd}b\n".into())
        );
    }

    #[test]
    fn empty_file() {
        let (_d, p) = setup(&[("e.txt", b"")]);
        let msg = view_slice(&p, &budgets(10, 10), "e.txt", 1, 1)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("has 0 lines"), "{msg}");
    }
}
