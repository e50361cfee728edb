//! The revision precondition: a patch is written only over the content it was prepared
//! against, and a conflict tells the model what is there now.
//!
//! A patch is prepared against, for each target the model has read (view_slice, the lines
//! search_text showed), the revision it read (see [`crate::authority::revisions`]); for a
//! target it has not read, the content when the patch was proposed. It is checked twice:
//! when proposed, before anyone is asked ([`stale_at_proposal`]), and when written, after
//! the person said yes ([`super::commit`] compares every target with the content the patch
//! was prepared against, which the first check has shown to be the revision read). A
//! changed, deleted or newly created target stops the whole patch, even where the diff
//! would still apply: writing "the old file plus its change" over newer work is what this
//! prevents. The model gets [`Conflict::message`]: which files, how it had read them, and
//! their current lines where the patch applies, so it can prepare a revised patch.

use std::fmt::Write as _;

use super::parse::{self, HunkLine};
use super::{Change, checked_path, read_current};
use crate::authority::journal::content_hash;
use crate::project::ProjectPath;
use crate::tools::text::clip_line;
use crate::tools::{Budgets, ToolContext, ToolError};

/// Lines of context shown around each place a patch applies.
const CONTEXT: usize = 3;

/// Lines shown of a stale file when the patch names no place in it (a creation, a rename).
const HEAD_LINES: usize = 10;

/// When the precondition failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Moment {
    /// When the patch was proposed: the target changed after the model read it.
    Proposal,
    /// At the moment of writing: the target changed while the person was being asked.
    Write,
}

/// One target that is not what the patch was prepared against.
#[derive(Debug)]
pub(crate) struct Stale {
    /// The file.
    pub(crate) path: ProjectPath,
    /// How the model last read it, if it did.
    pub(crate) read: Option<String>,
    /// Its content now (`None`: it does not exist).
    pub(crate) now: Option<Vec<u8>>,
    /// The patch creates it (it was absent when the patch was prepared).
    pub(crate) creates: bool,
    /// Where the patch applies in it: (first line, line count), 1-based.
    pub(crate) ranges: Vec<(usize, usize)>,
}

/// A refused patch: every stale target.
#[derive(Debug)]
pub(crate) struct Conflict {
    /// The targets, in patch order.
    pub(crate) files: Vec<Stale>,
    /// When it was found.
    pub(crate) moment: Moment,
}

/// The proposal-time check of a prepared patch: every change whose file the model has read
/// must start from that revision (`before` absent means it was deleted since).
pub(crate) fn stale_at_proposal(
    context: &ToolContext<'_>,
    changes: &[Change],
    regions: &[(ProjectPath, Vec<(usize, usize)>)],
) -> Option<Conflict> {
    let files: Vec<Stale> = changes
        .iter()
        .filter_map(|change| {
            let now = change.before.as_ref().map(|(bytes, _)| bytes.as_slice());
            if context.is_current(change.path.as_str(), now)? {
                return None;
            }
            Some(Stale {
                path: change.path.clone(),
                read: context.revision(change.path.as_str()).map(|r| r.how),
                now: now.map(<[u8]>::to_vec),
                creates: false,
                ranges: ranges_of(regions, &change.path),
            })
        })
        .collect();
    (!files.is_empty()).then_some(Conflict {
        files,
        moment: Moment::Proposal,
    })
}

/// For a patch that could not be prepared: whether a target changed since the model read
/// it (then the mismatch is most likely that change, and the model needs the current
/// lines, not a complaint about its context lines), or a file it creates exists now.
pub(crate) fn stale_unprepared(context: &ToolContext<'_>, diff: &str) -> Option<Conflict> {
    let sections = parse::parse(diff).ok()?;
    let mut files = Vec::new();
    for section in &sections {
        let project = &context.env.project;
        let old = section
            .old_path
            .as_deref()
            .and_then(|p| checked_path(project, p).ok());
        let new = section
            .new_path
            .as_deref()
            .and_then(|p| checked_path(project, p).ok());
        let (path, creates) = match (old, new) {
            (Some(old), _) => (old, false),
            (None, Some(new)) if section.old_path.is_none() => (new, true),
            _ => continue,
        };
        let read = context.revision(path.as_str()).map(|r| r.how);
        if read.is_none() && !creates {
            continue;
        }
        let Ok(now) = read_current(project, &path, context.env.limits.max_patch_file_bytes) else {
            continue;
        };
        let now = now.map(|(bytes, _)| bytes);
        let stale = if creates {
            now.is_some()
        } else {
            context.is_current(path.as_str(), now.as_deref()) == Some(false)
        };
        if stale {
            files.push(Stale {
                path,
                read,
                now,
                creates,
                ranges: claimed_ranges(section),
            });
        }
    }
    (!files.is_empty()).then_some(Conflict {
        files,
        moment: Moment::Proposal,
    })
}

/// The write-time conflict: `paths` (from [`super::CommitError::Stale`]) as they are now.
pub(crate) fn stale_at_write(
    context: &ToolContext<'_>,
    changes: &[Change],
    regions: &[(ProjectPath, Vec<(usize, usize)>)],
    paths: &[String],
) -> Conflict {
    let files = changes
        .iter()
        .filter(|change| paths.iter().any(|p| p == change.path.as_str()))
        .map(|change| Stale {
            path: change.path.clone(),
            read: context.revision(change.path.as_str()).map(|r| r.how),
            now: read_current(
                &context.env.project,
                &change.path,
                context.env.limits.max_patch_file_bytes,
            )
            .ok()
            .flatten()
            .map(|(bytes, _)| bytes),
            creates: change.before.is_none(),
            ranges: ranges_of(regions, &change.path),
        })
        .collect();
    Conflict {
        files,
        moment: Moment::Write,
    }
}

impl Conflict {
    /// The conflict as the tool's error (the Toolbox journals it): the message for the
    /// model, after recording what the message showed as the model's new revision of each
    /// file (its current lines are
    /// what the revised patch will be prepared against; a deleted file is forgotten). A
    /// file whose lines did not fit the budget keeps its old revision, so a patch to it
    /// is refused again, with its lines, until the model has seen them.
    pub(crate) fn report(self, context: &ToolContext<'_>) -> ToolError {
        let (message, shown) = self.message(&context.env.budgets);
        for (file, shown) in self.files.iter().zip(shown) {
            match (&file.now, shown) {
                (None, _) => context.forget_revision(file.path.as_str()),
                (Some(bytes), true) => {
                    context.record_revision(
                        &file.path,
                        content_hash(bytes),
                        "an apply_patch conflict message",
                    );
                }
                (Some(_), false) => {}
            }
        }
        ToolError::Conflict {
            message,
            files: self.files.iter().map(|f| f.path.to_string()).collect(),
        }
    }

    /// The text for the model, and for each file whether its current lines were shown.
    pub(crate) fn message(&self, budgets: &Budgets) -> (String, Vec<bool>) {
        let mut out = String::from(
            "Conflict: your patch was not applied and nothing was written. It was prepared against file content that is no longer on disk:\n",
        );
        for file in &self.files {
            let _ = writeln!(out, "- {}", describe(file, self.moment));
        }
        out.push_str("Writing it now would put your change on top of newer work it never saw, even where the diff still fits.\n");
        let mut budget = budgets.max_slice_lines;
        let mut shown = Vec::with_capacity(self.files.len());
        for file in &self.files {
            let Some(bytes) = &file.now else {
                shown.push(true);
                continue;
            };
            let (lines, complete) =
                current_lines(bytes, &file.ranges, budgets.max_line_chars, &mut budget);
            let _ = write!(out, "\nCurrent lines of `{}`", file.path);
            out.push_str(if file.ranges.is_empty() {
                ":\n"
            } else {
                " where your patch applies:\n"
            });
            out.push_str(&lines);
            if !complete {
                out.push_str("      [more lines not shown; view_slice them]\n");
            }
            shown.push(complete);
        }
        out.push_str("\nPrepare a revised patch against the current lines (view_slice shows more). Nothing was changed.");
        (out, shown)
    }
}

/// One line saying what happened to a file.
fn describe(file: &Stale, moment: Moment) -> String {
    let path = &file.path;
    let read = file
        .read
        .as_deref()
        .map(|how| format!(" (you last saw it through {how})"))
        .unwrap_or_default();
    match (moment, &file.now, file.creates) {
        (Moment::Write, None, _) => {
            format!("`{path}` was deleted on disk while your patch waited for approval{read}.")
        }
        (Moment::Write, Some(_), true) => {
            format!(
                "`{path}` was created on disk while your patch, which creates it, waited for approval."
            )
        }
        (Moment::Write, Some(_), false) => format!(
            "`{path}` changed on disk while your patch waited for approval (someone edited it){read}."
        ),
        (Moment::Proposal, None, _) => format!("`{path}` was deleted since you read it{read}."),
        (Moment::Proposal, Some(_), true) => format!(
            "`{path}` already exists; your patch creates it, so it was created since you last looked (or you did not know of it){read}. To change it, send a diff against its current content (`--- a/{path}`)."
        ),
        (Moment::Proposal, Some(_), false) => {
            format!("`{path}` changed on disk since you read it{read}.")
        }
    }
}

/// The current lines of a file around `ranges`, numbered like view_slice (`%5d | `),
/// clipped to `max_line_chars`, taking at most `budget` lines (and reducing it). The flag
/// says whether every wanted line was shown.
fn current_lines(
    bytes: &[u8],
    ranges: &[(usize, usize)],
    max_line_chars: usize,
    budget: &mut usize,
) -> (String, bool) {
    if bytes.contains(&0) {
        return ("      [binary file; not shown]\n".to_owned(), true);
    }
    let body = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let lines: Vec<&[u8]> = if bytes.is_empty() {
        Vec::new()
    } else {
        body.split(|&b| b == b'\n').collect()
    };
    if lines.is_empty() {
        return ("      [the file is empty]\n".to_owned(), true);
    }
    let count = lines.len();
    let mut spans: Vec<(usize, usize)> = if ranges.is_empty() {
        vec![(1, count.min(HEAD_LINES))]
    } else {
        ranges
            .iter()
            .map(|&(start, len)| {
                let first = start.clamp(1, count);
                let last = first.saturating_add(len.max(1) - 1).min(count);
                (
                    first.saturating_sub(CONTEXT).max(1),
                    last.saturating_add(CONTEXT).min(count),
                )
            })
            .collect()
    };
    spans.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
    for (first, last) in spans {
        match merged.last_mut() {
            Some(prev) if first <= prev.1 + 1 => prev.1 = prev.1.max(last),
            _ => merged.push((first, last)),
        }
    }
    let mut out = String::new();
    for (index, (first, last)) in merged.iter().enumerate() {
        if index > 0 {
            out.push_str("      ...\n");
        }
        for number in *first..=*last {
            if *budget == 0 {
                return (out, false);
            }
            *budget -= 1;
            let _ = writeln!(
                out,
                "{number:5} | {}",
                clip_line(lines[number - 1], max_line_chars)
            );
        }
    }
    (out, true)
}

/// The ranges recorded for `path` by prepare.
fn ranges_of(
    regions: &[(ProjectPath, Vec<(usize, usize)>)],
    path: &ProjectPath,
) -> Vec<(usize, usize)> {
    regions
        .iter()
        .find(|(p, _)| p == path)
        .map(|(_, ranges)| ranges.clone())
        .unwrap_or_default()
}

/// Where the model said its hunks apply (its own start lines and old-side lengths), for a
/// patch that could not be placed.
fn claimed_ranges(section: &parse::FilePatch) -> Vec<(usize, usize)> {
    if section.old_path.is_none() {
        return Vec::new();
    }
    section
        .hunks
        .iter()
        .map(|hunk| {
            let old_side = hunk
                .lines
                .iter()
                .filter(|l| matches!(l, HunkLine::Context(_) | HunkLine::Delete(_)))
                .count();
            (hunk.claimed_start.max(1), old_side)
        })
        .collect()
}

/// The old-side ranges of a canonical patch section (`@@ -START,COUNT ...` headers).
pub(crate) fn hunk_ranges(text: &[u8]) -> Vec<(usize, usize)> {
    text.split(|&b| b == b'\n')
        .filter_map(|line| {
            let rest = line.strip_prefix(b"@@ -")?;
            let end = rest.iter().position(|&b| b == b' ')?;
            let spec = std::str::from_utf8(&rest[..end]).ok()?;
            let (start, count) = spec.split_once(',').unwrap_or((spec, "1"));
            Some((start.parse().ok()?, count.parse().ok()?))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_are_read_from_canonical_headers() {
        let text = b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -3,4 +3,5 @@\n x\n-@@ -9,9 @@\n@@ -20 +21 @@\n";
        assert_eq!(hunk_ranges(text), [(3, 4), (20, 1)]);
    }

    #[test]
    fn current_lines_merge_clip_and_stay_in_budget() {
        let file: String = (1..=40).map(|n| format!("line {n}\n")).collect();
        let mut budget = 100;
        let (text, complete) =
            current_lines(file.as_bytes(), &[(10, 2), (14, 1)], 500, &mut budget);
        assert!(complete);
        assert!(text.starts_with("    7 | line 7\n"), "{text}");
        assert!(text.ends_with("   17 | line 17\n"), "{text}");
        assert_eq!(budget, 100 - 11);
        let (text, complete) = current_lines(file.as_bytes(), &[(1, 1), (39, 1)], 3, &mut budget);
        assert!(complete);
        assert!(text.contains("      ...\n"), "{text}");
        let mut small = 2;
        let (text, complete) = current_lines(file.as_bytes(), &[(30, 5)], 500, &mut small);
        assert!(!complete);
        assert_eq!(text.lines().count(), 2);
    }
}
