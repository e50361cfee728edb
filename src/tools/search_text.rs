//! `search_text(pattern)`: a deliberately budgeted ripgrep, in process.
//!
//! The matches are exactly those of `rg -n --sort path --max-count=<per file> PATTERN .`:
//! the same regex engine, the same walk and ignore rules, the same binary-file rule (stop
//! at the first NUL byte). Two budgets apply: `search_max_per_file`, and
//! `search_max_matches` in total, which ripgrep cannot do and we do ourselves: once one
//! match more than the budget is found, the walk stops.
//!
//! Both budgets say when they cut the answer, so the model knows it is not seeing
//! everything. Past the per-file cap, the same search goes on to the end of the file
//! counting matches without keeping them (the file is read to its end anyway, for its
//! revision), and a note follows the file's lines: `[+1 more in calc.py]`. At most
//! [`CAPPED_FILES_NAMED`] files get a note of their own; the rest are counted in one
//! closing line, so the notes never cost more than a few lines, each shorter than the
//! matches it follows.
//!
//! The first files are searched one at a time, so a frequent pattern stops the walk
//! exactly where truncation became certain. After that the walk (still in order, on a
//! thread of its own) hands batches of files to one searcher thread per core, and their
//! matches are merged back in walk order by [`super::ordered::map`]: the answer is
//! identical to a sequential search, a full scan costs what a parallel `rg` costs, and the
//! walk runs at most a bounded number of files ahead of the point where the budget ran out.
//! Each file is opened through the project boundary before it is read.
//!
//! The lines it shows are reads the model's patches are held to (see
//! [`crate::authority::revisions`]): every file whose matching lines are printed gets its revision
//! recorded, hashed from the very bytes that were searched (see [`Tee`]).

use std::convert::Infallible;
use std::io::Read;
use std::sync::{Arc, Mutex, PoisonError};

use grep_regex::{ErrorKind, RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};
use serde::Deserialize;

use super::text::clip_line;
use super::{
    Access, Account, Budgets, ReadTool, Reads, ToolContext, ToolError, ToolResult, ToolSpec, arg,
    ordered, walk,
};
use crate::authority::journal::{BlobId, content_hash};
use crate::authority::revisions::MAX_HASHED_BYTES;
use crate::project::{BoundaryError, Project, ProjectPath};

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "search_text",
    description: "Regex search (ripgrep syntax) over project files; prints path:line:text. Few matches per file and in total; narrow the pattern if truncated.",
    parameters: r#"{"type":"object","properties":{"pattern":{"type":"string","description":"regex"}},"required":["pattern"]}"#,
    access: Access::Read,
    scope: "the project tree, gitignored files skipped",
    available: super::always_available,
    run: &Reads(SearchText),
    purged_after_turn: false,
    shown: |args| format!("search for {}", arg(args, "pattern")),
    ledger_arguments: None,
    subject: |args| format!("{:?}", super::plain_arg(args, "pattern")),
    schema: std::sync::OnceLock::new(),
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    pattern: String,
}

struct SearchText;

impl ReadTool for SearchText {
    type Args = Args;

    fn run(&self, context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
        search_text(context, args)
    }
}

fn search_text(context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
    let (result, shown) = search(&context.env.project, &context.env.budgets, &args.pattern)?;
    if !shown.is_empty() {
        let pattern: String = args.pattern.chars().take(60).collect();
        let ellipsis = if pattern.len() < args.pattern.len() {
            "..."
        } else {
            ""
        };
        let how = format!("search_text `{pattern}{ellipsis}`");
        for (path, hash) in shown {
            context.record_revision(&path, BlobId::clone(&hash), how.clone());
        }
    }
    Ok(result)
}

/// One matching line.
struct Hit {
    path: ProjectPath,
    line: u64,
    text: String,
    /// The content hash of the whole file as it was searched; `None` when the file was
    /// too large to keep, or could not be read to its end.
    revision: Option<Arc<BlobId>>,
    /// Matches of the same file after this one that the per-file cap left out (only the
    /// file's last kept match counts them).
    dropped_after: u64,
}

/// The most files whose per-file cap gets a note of its own (`[+1 more in calc.py]`);
/// further capped files are counted in one closing line.
pub(crate) const CAPPED_FILES_NAMED: usize = 3;

/// The note after a file's last shown match when the per-file cap left `more` out.
fn capped_note(path: &ProjectPath, more: u64) -> String {
    format!("[+{more} more in {path}]\n")
}

/// The closing line for capped files past [`CAPPED_FILES_NAMED`]: how many, and how
/// many matches they hold beyond the cap.
fn capped_rest_note(files: usize, matches: u64, per_file: u64) -> String {
    let noun = if files == 1 { "file" } else { "files" };
    format!(
        "[+{matches} more in {files} other {noun} past the cap of {per_file} per file; narrow the pattern or view_slice a file]\n"
    )
}

/// Files searched one at a time, in order, before the search goes parallel. A pattern
/// that exhausts the budget usually does so within them, and then the walk stops exactly
/// where truncation became certain; a rarer pattern goes on to search the rest of the
/// tree on every core.
const SEQUENTIAL_FILES: usize = 64;

/// How far, in files, the walk may run ahead of the searchers in the parallel phase. It
/// runs on a thread of its own and keeps up to this many files ready; the searchers take
/// batches at most this far past the merged matches, plus one batch in flight each.
const LOOKAHEAD: usize = 256;

/// Files handed to a searcher thread at a time (fewer hand-offs, less locking).
const BATCH: usize = 32;

/// Most searcher threads used, whatever the machine has.
const MAX_THREADS: usize = 8;

/// The most bytes the searcher may hold for one line (its buffer grows to fit the longest
/// line it meets). Without a bound, one file of a single 1 GB line made a search hold
/// more than 1 GB; a file with a longer line is skipped with a note in the result.
const MAX_LINE_BYTES: usize = 4 << 20;

/// The note for a file skipped because of [`MAX_LINE_BYTES`], with the next step.
fn long_line_note(path: &ProjectPath) -> String {
    format!(
        "[skipped {path}: it has a line longer than {} MiB, more than search_text holds; view_slice shows it with long lines clipped]\n",
        MAX_LINE_BYTES >> 20
    )
}

/// The note for a file the walk listed as a regular file but that was something else (a
/// FIFO, a device) by the time it was opened: nothing was read from it.
fn not_a_file_note(path: &ProjectPath) -> String {
    format!(
        "[skipped {path}: it was no longer a regular file when opened (a FIFO or device replaced it), so nothing was read; search again once it is a file]\n"
    )
}

/// True when a search stopped because a line did not fit in [`MAX_LINE_BYTES`].
/// grep-searcher reports that only as an `Other` error with this text.
fn is_line_limit_error(error: &std::io::Error) -> bool {
    error.kind() == std::io::ErrorKind::Other
        && error.to_string().contains("configured allocation limit")
}

/// Each file whose lines a search shows, with the content hash of the bytes searched.
type Shown = Vec<(ProjectPath, Arc<BlobId>)>;

/// The search, and the revision of every file whose lines it shows (in output order).
fn search(
    project: &Project,
    budgets: &Budgets,
    pattern: &str,
) -> Result<(ToolResult, Shown), ToolError> {
    let (matcher, literal_note) = matcher_for(pattern)?;
    let literal = !literal_note.is_empty();
    let limit = budgets.search_max_matches;
    let job_per_file = budgets.search_max_per_file as u64;
    let job = Job {
        project,
        matcher,
        per_file: job_per_file,
        max_line_chars: budgets.max_line_chars,
        wanted: limit.saturating_add(1),
        line_limit: MAX_LINE_BYTES,
        too_long: Mutex::new(Vec::new()),
        not_files: Mutex::new(Vec::new()),
    };

    let (builder, skipped) = walk::builder(project, None)?;
    let mut files = walk::files(project, builder.build());
    let mut hits: Vec<Hit> = Vec::new();
    let mut searcher = job.searcher();
    let mut kept = Vec::new();
    for path in files.by_ref().take(SEQUENTIAL_FILES) {
        job.search(&mut searcher, &path, &mut hits, &mut kept);
        if hits.len() >= job.wanted {
            break;
        }
    }
    if hits.len() < job.wanted {
        search_in_parallel(&job, files, &mut hits);
    }

    let mut too_long = job
        .too_long
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    too_long.sort();
    let mut not_files = job
        .not_files
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    not_files.sort();
    let mut notes = literal_note;
    notes.extend(too_long.iter().map(long_line_note));
    notes.extend(not_files.iter().map(not_a_file_note));
    notes.push_str(&skipped.notes());
    let shown_hits = &hits[..hits.len().min(limit)];
    let account = Account::Matches {
        matches: shown_hits.len(),
        files: shown_hits
            .iter()
            .enumerate()
            .filter(|(n, hit)| *n == 0 || shown_hits[n - 1].path != hit.path)
            .count(),
        truncated: hits.len() > limit,
        literal,
    };
    if hits.is_empty() {
        let text = format!("{notes}No matches found.");
        return Ok((ToolResult::new(text, account), Vec::new()));
    }
    let mut out = notes;
    let mut shown: Shown = Vec::new();
    // Capped files past the named ones: how many, and their matches beyond the cap.
    let (mut named, mut rest_files, mut rest_matches) = (0, 0, 0);
    for hit in shown_hits {
        out.push_str(&format!("{}:{}:{}\n", hit.path, hit.line, hit.text));
        if let Some(revision) = &hit.revision
            && shown.last().is_none_or(|(path, _)| *path != hit.path)
        {
            shown.push((hit.path.clone(), Arc::clone(revision)));
        }
        // A file the total budget cut is never counted to its end: its last kept match
        // is not shown, and the truncation note below covers it.
        if hit.dropped_after > 0 {
            if named < CAPPED_FILES_NAMED {
                named += 1;
                out.push_str(&capped_note(&hit.path, hit.dropped_after));
            } else {
                rest_files += 1;
                rest_matches += hit.dropped_after;
            }
        }
    }
    if rest_files > 0 {
        out.push_str(&capped_rest_note(rest_files, rest_matches, job_per_file));
    }
    if hits.len() > limit {
        out.push_str(&format!(
            "[truncated to {limit} matches; narrow the pattern]\n"
        ));
    }
    Ok((ToolResult::new(out, account), shown))
}

/// Passes a file's bytes to the searcher and keeps a copy of everything read (up to
/// [`MAX_HASHED_BYTES`]), so a file with matches is hashed from exactly the bytes that
/// were searched, not from a second read that could see a newer version: the searcher
/// reads one open file from start to stop, the rest is then read through the same
/// handle, and the hash covers that one pass. (A writer racing that pass can still tear
/// it, as with any read; the lines shown then come from the same torn bytes that were
/// hashed, so any later change is still caught.) Copying costs a memcpy per byte read;
/// the buffer is reused from file to file.
struct Tee<'b, R> {
    inner: R,
    copy: &'b mut Vec<u8>,
    overflowed: bool,
}

impl<R: Read> Read for Tee<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        if !self.overflowed {
            if self.copy.len() + n > MAX_HASHED_BYTES {
                self.overflowed = true;
                self.copy.clear();
            } else {
                self.copy.extend_from_slice(&buf[..n]);
            }
        }
        Ok(n)
    }
}

/// The matcher for `pattern`, and a note when it is searched as plain text: a pattern
/// that is not a valid regex (`Greet(`, `a[0]`, `*.go`) is what a small model writes for
/// literal code, and searching it literally answers at once where an error would cost a
/// round trip. Only a syntax error falls back: a pattern the engine parses but will not
/// run (one that needs a newline, one too big to compile) is refused with its reason.
fn matcher_for(pattern: &str) -> Result<(RegexMatcher, String), ToolError> {
    let builder = || {
        let mut builder = RegexMatcherBuilder::new();
        builder.line_terminator(Some(b'\n'));
        builder
    };
    let regex_error = match builder().build(pattern) {
        Ok(matcher) => return Ok((matcher, String::new())),
        Err(e) => e,
    };
    let refused = || ToolError::Refused(format!("bad regex `{pattern}`: {regex_error}"));
    let syntax = matches!(regex_error.kind(), ErrorKind::Regex(message) if message.starts_with("regex parse error"));
    if !syntax {
        return Err(refused());
    }
    let matcher = builder()
        .fixed_strings(true)
        .build(pattern)
        .map_err(|_| refused())?;
    let regex_error = regex_error.to_string();
    // The parser's message ends with its one-line reason ("error: unclosed group").
    let reason = regex_error
        .lines()
        .rev()
        .find(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .trim_start_matches("error: ");
    let shown: String = pattern.chars().take(60).collect();
    Ok((
        matcher,
        format!("[`{shown}` is not a valid regex ({reason}); searched for it as plain text]\n"),
    ))
}

/// One search: what to look for, where, and how much of it to keep.
struct Job<'a> {
    project: &'a Project,
    matcher: RegexMatcher,
    per_file: u64,
    max_line_chars: usize,
    /// The total budget plus one: finding this many proves the output is truncated.
    wanted: usize,
    /// The searcher's buffer limit ([`MAX_LINE_BYTES`]; lower in unit tests).
    line_limit: usize,
    /// Files skipped because a line was longer than `line_limit`, for the notes.
    too_long: Mutex<Vec<ProjectPath>>,
    /// Files skipped because they were no longer regular files when opened, for the notes.
    not_files: Mutex<Vec<ProjectPath>>,
}

impl Job<'_> {
    /// The searcher for one thread. It has no cap on matches: [`Collect`] keeps the
    /// first `per_file` of a file and counts the rest.
    fn searcher(&self) -> Searcher {
        SearcherBuilder::new()
            .binary_detection(BinaryDetection::quit(b'\0'))
            .line_number(true)
            .heap_limit(Some(self.line_limit))
            .build()
    }

    /// Appends the matches of one file to `hits`, stopping once `hits` holds `wanted`,
    /// and marks them with the file's revision. `kept` is a reusable buffer.
    fn search(
        &self,
        searcher: &mut Searcher,
        path: &ProjectPath,
        hits: &mut Vec<Hit>,
        kept: &mut Vec<u8>,
    ) {
        // A file that vanished or cannot be read is skipped, as ripgrep skips it; one that
        // is no longer a regular file (a FIFO or device swapped in after the walk listed
        // it) is refused by the open without blocking, and named in a note.
        let file = match self.project.open_walked_file(path) {
            Ok(opened) => opened.file,
            Err(BoundaryError::NotAFile(_)) => {
                self.not_files
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(path.clone());
                return;
            }
            Err(_) => return,
        };
        kept.clear();
        let mut tee = Tee {
            inner: file,
            copy: kept,
            overflowed: false,
        };
        let first = hits.len();
        let mut sink = Collect {
            path,
            hits: &mut *hits,
            wanted: self.wanted,
            max_line_chars: self.max_line_chars,
            per_file: self.per_file,
            in_file: 0,
        };
        // A read error part-way through a file is skipped too, as ripgrep does after
        // reporting it; the matches found before it stand (without a revision).
        if let Err(error) = searcher.search_reader(&self.matcher, &mut tee, &mut sink)
            && is_line_limit_error(&error)
        {
            self.too_long
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(path.clone());
            return;
        }
        if hits.len() > first {
            // The searcher may stop early (the total budget, a NUL byte): read the rest
            // through the same handle so the hash covers the whole file.
            let complete = std::io::copy(&mut tee, &mut std::io::sink()).is_ok();
            if complete && !tee.overflowed {
                let revision = Arc::new(content_hash(tee.copy));
                for hit in &mut hits[first..] {
                    hit.revision = Some(Arc::clone(&revision));
                }
            }
        }
    }
}

/// Searches the rest of the walk on several threads. The walk goes on, in order, on a
/// thread of its own, and hands out batches of files; each batch's matches are merged in
/// walk order, so the answer is exactly the sequential one. Once the merged prefix holds
/// `wanted` matches no batch is handed out any more, batches still being searched give up
/// (they come after the cut and cannot change the output), and the walk stops.
fn search_in_parallel(
    job: &Job<'_>,
    mut files: impl Iterator<Item = ProjectPath> + Send,
    hits: &mut Vec<Hit>,
) {
    let threads = ordered::available_threads().clamp(1, MAX_THREADS);
    // Each thread's searcher and the buffer its `Tee` copies into.
    let mut scratch: Vec<(Searcher, Vec<u8>)> =
        (0..threads).map(|_| (job.searcher(), Vec::new())).collect();
    let batches = std::iter::from_fn(|| {
        let batch: Vec<ProjectPath> = files.by_ref().take(BATCH).collect();
        (!batch.is_empty()).then_some(batch)
    });
    let mut merged = hits.len();
    let found = std::thread::scope(|scope| {
        ordered::map(
            ordered::read_ahead(scope, batches, LOOKAHEAD / BATCH),
            &mut scratch,
            LOOKAHEAD / BATCH + threads,
            |(searcher, kept), batch, stop| {
                let mut found = Vec::new();
                for path in &batch {
                    if stop.requested() || found.len() >= job.wanted {
                        break;
                    }
                    job.search(searcher, path, &mut found, kept);
                }
                Ok::<_, Infallible>(found)
            },
            |found| {
                merged += found.len();
                merged >= job.wanted
            },
        )
    });
    let Ok(found) = found;
    hits.extend(found.into_iter().flatten());
}

/// Collects matches from one file until the global budget (plus one) is reached: the
/// first `per_file` are kept, and later ones only counted on the last one kept.
struct Collect<'a> {
    path: &'a ProjectPath,
    hits: &'a mut Vec<Hit>,
    wanted: usize,
    max_line_chars: usize,
    per_file: u64,
    /// Matches of this file kept so far.
    in_file: u64,
}

impl Sink for Collect<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _searcher: &Searcher, mat: &SinkMatch<'_>) -> Result<bool, Self::Error> {
        if self.in_file >= self.per_file {
            // Past the cap: counted on the file's last kept match, whose line is shown.
            if self.in_file > 0
                && let Some(last) = self.hits.last_mut()
            {
                last.dropped_after += 1;
            }
            return Ok(true);
        }
        self.in_file += 1;
        let bytes = mat.bytes();
        let line = bytes.strip_suffix(b"\n").unwrap_or(bytes);
        self.hits.push(Hit {
            path: self.path.clone(),
            line: mat.line_number().unwrap_or(0),
            text: clip_line(line, self.max_line_chars),
            revision: None,
            dropped_after: 0,
        });
        Ok(self.hits.len() < self.wanted)
    }
}
