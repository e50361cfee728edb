//! `apply_patch(diff)`: the only tool that changes files.
//!
//! The flow is proposal, then policy, then execution, and nothing is written before the end:
//!
//! 1. [`parse`] reads the diff the way models write it; a mode other than 100644 or
//!    100755 is refused there;
//! 2. every path is checked against the boundary before a byte is read (absolute, `..`,
//!    `.git/`, through a symlink, binary patches), no target larger than
//!    `max_patch_file_bytes` is read, and none at all when the targets' sizes add up to
//!    more than the patch's read budget ([`PATCH_READ_BYTES`]);
//! 3. [`repair`] places each hunk against the file as it is now, repairing only what is
//!    unambiguous, and writes a canonical git patch;
//! 4. [`memory`] has libgit2 apply that patch to an in-memory tree: every post-image exists
//!    before anything is written;
//! 5. [`conflict`]: every target the model has read must still be the revision it read
//!    (the proposal-time precondition); otherwise nothing is asked or written and the
//!    model is shown the current lines;
//! 6. the person sees the exact patch that will be applied, with every mode change named
//!    in its summary, and answers;
//! 7. [`write`] re-checks that no file changed meanwhile (the write-time precondition),
//!    then writes all files or none, and the written content becomes the model's revision.
//!
//! Refusals go back to the model as text saying what to fix, and "Nothing was changed."

mod conflict;
mod lossy;
mod memory;
mod parse;
mod repair;
pub(crate) mod undo;
mod write;

use std::collections::BTreeSet;
use std::fmt::Write as _;

use serde::Deserialize;
use serde_json::Value;

use super::{
    Access, Account, EffectTool, Effects, Planned, ToolContext, ToolEnv, ToolError, ToolResult,
    ToolSpec,
};
use crate::authority::applied::{AppliedFile, AppliedPatch};
use crate::authority::journal::{FileChange, content_hash};
use crate::authority::{Request, Verdict};
use crate::project::{BoundaryError, FileMode, Project, ProjectPath, WriteMode};

pub(crate) use memory::PreImage;
pub(crate) use write::{Change, CommitError, commit};

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "apply_patch",
    description: "Apply a unified diff (--- a/PATH, +++ b/PATH, @@ hunks) to project files after the user approves it. Context lines must match the file.",
    parameters: r#"{"type":"object","properties":{"diff":{"type":"string"}},"required":["diff"]}"#,
    access: Access::Write,
    scope: "files beneath the project root, not .git/, only in a git work tree",
    available,
    run: &Effects(ApplyPatch),
    purged_after_turn: false,
    shown: |_| "the result of a patch".to_owned(),
    subject: |_| String::new(),
    ledger_arguments: Some(|args| {
        format!(
            "(diff of {} bytes)",
            args.get("diff").and_then(Value::as_str).map_or(0, str::len)
        )
    }),
    schema: std::sync::OnceLock::new(),
};

fn available(env: &ToolEnv) -> Result<(), String> {
    if env.project.is_git() {
        Ok(())
    } else {
        Err("apply_patch is only available inside a git work tree, so every change can be reviewed and undone with git; run metron from inside a repository".to_owned())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    diff: String,
}

/// A patch ready to write: what the person is shown and what will be written.
#[derive(Debug)]
pub(crate) struct Prepared {
    /// The canonical patch (after repair), exactly what will be applied.
    pub patch: Vec<u8>,
    /// One line per file: `M src/a.go (+3 -1)`.
    pub summary: String,
    /// The writes.
    pub changes: Vec<Change>,
    /// Where the hunks apply in each existing file: (first line, line count), 1-based,
    /// in the content the patch was prepared against (shown in a conflict message).
    pub regions: Vec<(ProjectPath, Vec<(usize, usize)>)>,
    /// Lines added and removed in each file (by its new path, or its old one when it is
    /// deleted), for the person's outcome line and the turn's evidence.
    pub line_counts: Vec<(ProjectPath, usize, usize)>,
}

/// A prepared patch that has passed the proposal-time precondition, with the files it
/// touches (the scope of a standing approval).
#[derive(Debug)]
pub(crate) struct PatchPlan {
    prepared: Prepared,
    files: Vec<String>,
}

impl Planned for PatchPlan {
    fn request(&self) -> Request<'_> {
        Request::Patch {
            summary: &self.prepared.summary,
            diff: &self.prepared.patch,
            files: &self.files,
        }
    }

    fn refused(&self, verdict: Verdict) -> ToolError {
        refused(verdict)
    }
}

struct ApplyPatch;

impl EffectTool for ApplyPatch {
    type Args = Args;
    type Plan = PatchPlan;

    fn plan(&self, context: &ToolContext<'_>, args: Args) -> Result<PatchPlan, ToolError> {
        plan(context, args)
    }

    fn execute(&self, context: &ToolContext<'_>, plan: PatchPlan) -> Result<ToolResult, ToolError> {
        execute(context, plan.prepared)
    }
}

/// What the model is told when a patch is not approved.
fn refused(verdict: Verdict) -> ToolError {
    ToolError::Refused(match verdict {
        Verdict::Approved | Verdict::Declined(None) => "The user declined this patch; nothing was changed. Do not send it again: explain what you wanted to change and why, and ask how to proceed.".to_owned(),
        Verdict::Declined(Some(reason)) => format!("The user declined this patch and said: \"{reason}\". Nothing was changed. Do not send it again: take their reason into account."),
        Verdict::Unanswerable(why) => format!("Not applied: {why}. Nothing was changed."),
        // Where Ctrl-C is caught (the REPL, -p, metron tool), a press during the write
        // waits for it to finish; a press that came before stops it.
        Verdict::Cancelled => "Not applied: the user pressed Ctrl-C in this turn before the patch was written. Nothing was changed.".to_owned(),
    })
}

/// Prepares the patch and checks it against the revisions the model read; no effect.
fn plan(context: &ToolContext<'_>, args: Args) -> Result<PatchPlan, ToolError> {
    let prepared = match prepare_within(
        &context.env.project,
        &args.diff,
        context.env.limits.max_patch_file_bytes,
    ) {
        Ok(prepared) => prepared,
        // A patch that does not fit a file the model read may not fit because the file
        // changed since: then the conflict, with the current lines, is the useful answer.
        Err(refusal) => {
            return Err(match conflict::stale_unprepared(context, &args.diff) {
                Some(conflict) => conflict.report(context),
                None => refusal,
            });
        }
    };
    // The proposal-time precondition: after this, every `before` of a file the model read
    // is the revision it read, so commit's comparison with `before` checks that revision
    // again at the moment of writing.
    if let Some(conflict) =
        conflict::stale_at_proposal(context, &prepared.changes, &prepared.regions)
    {
        return Err(conflict.report(context));
    }
    let files = prepared
        .changes
        .iter()
        .map(|c| c.path.to_string())
        .collect();
    Ok(PatchPlan { prepared, files })
}

/// Writes an approved patch, all files or none, held to the write-time precondition. Its
/// account names every file written, with hashes, and the contents behind `/undo`.
fn execute(context: &ToolContext<'_>, prepared: Prepared) -> Result<ToolResult, ToolError> {
    let result = commit(&*context.env.project, &prepared.changes);
    for change in &prepared.changes {
        context.env.symbols.invalidate(&change.path);
    }
    match result {
        Ok(()) => {
            let account = written(&context.env.project, &prepared);
            // The model knows what it wrote: that is its revision of each file now.
            if let Account::Wrote { files, .. } = &account {
                for (change, file) in prepared.changes.iter().zip(files) {
                    match &file.after {
                        Some(hash) => {
                            let hash = hash.clone();
                            context.record_revision(&change.path, hash, "your own apply_patch");
                        }
                        None => context.forget_revision(change.path.as_str()),
                    }
                }
            }
            Ok(ToolResult::new(
                format!("Applied:\n{}", prepared.summary),
                account,
            ))
        }
        Err(CommitError::Stale(paths)) => {
            let conflict =
                conflict::stale_at_write(context, &prepared.changes, &prepared.regions, &paths);
            Err(conflict.report(context))
        }
        Err(e) => Err(ToolError::Fault(e.to_string())),
    }
}

/// The account of a patch that was written: each file with its hashes and line counts,
/// and the contents before and after.
fn written(project: &Project, prepared: &Prepared) -> Account {
    let mut files = Vec::with_capacity(prepared.changes.len());
    let mut applied = Vec::with_capacity(prepared.changes.len());
    for change in &prepared.changes {
        let (added, removed) = line_counts(prepared, &change.path);
        files.push(FileChange {
            path: change.path.to_string(),
            before: change.before.as_ref().map(|(bytes, _)| content_hash(bytes)),
            after: change.after.as_deref().map(content_hash),
            mode_before: change.mode_before(),
            mode_after: change.mode_after(),
            added,
            removed,
        });
        applied.push(AppliedFile {
            path: change.path.clone(),
            before: change.before.clone(),
            after: change.after.clone(),
            mode: written_bits(project, change),
            added,
            removed,
        });
    }
    Account::Wrote {
        files,
        applied: AppliedPatch {
            call: None,
            files: applied,
        },
    }
}

/// Lines a prepared patch adds to and removes from `path`.
fn line_counts(prepared: &Prepared, path: &ProjectPath) -> (usize, usize) {
    prepared
        .line_counts
        .iter()
        .find(|(p, _, _)| p == path)
        .map_or((0, 0), |&(_, added, removed)| (added, removed))
}

/// The permission bits `change` left on disk, for /undo to put back if an undo fails
/// midway: a new file's bits come from the umask, so they are looked at after the write.
/// When that look fails, the bits the file would have with the usual umask (022) stand in.
fn written_bits(project: &Project, change: &Change) -> u32 {
    let nominal = || match change.mode {
        WriteMode::Exact(bits) => bits,
        WriteMode::Create(FileMode::Regular) => 0o644,
        WriteMode::Create(FileMode::Executable) => 0o755,
        WriteMode::Switch { bits, to } => match to {
            FileMode::Regular => bits & !0o111,
            FileMode::Executable => bits | ((bits & 0o444) >> 2),
        },
    };
    project
        .file_mode(&change.path)
        .ok()
        .flatten()
        .unwrap_or_else(nominal)
}

/// The paths a diff names (both sides of a rename), normalised the way the project
/// boundary resolves them (`./`, `a/x/../y`), or `None` when the diff cannot be read.
/// A path the boundary refuses outright (absolute, climbing out) is kept as written: no
/// write ever lands there, so nothing can stand in for it. Lexical only: nothing is
/// opened. For the turn's evidence, which asks whether a later patch landed the files a
/// failed one named (`agent::landing`).
pub(crate) fn named_paths(diff: &str) -> Option<Vec<String>> {
    let files = parse::parse(diff).ok()?;
    let paths = files
        .iter()
        .flat_map(|file| [file.old_path.as_deref(), file.new_path.as_deref()])
        .flatten()
        .map(|raw| normalised(raw).unwrap_or_else(|| raw.to_owned()))
        .collect();
    Some(paths)
}

/// `raw` as a project-relative path, `.` and `..` resolved lexically; `None` for one that
/// is empty, absolute or climbs out (the boundary refuses those, so nothing lands there).
fn normalised(raw: &str) -> Option<String> {
    use std::path::{Component, Path};
    let mut parts: Vec<&str> = Vec::new();
    for component in Path::new(raw.trim()).components() {
        match component {
            Component::Normal(part) => parts.push(part.to_str()?),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop()?;
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// [`prepare_within`] with the default `max_patch_file_bytes`, for benches and tests.
#[cfg(any(test, feature = "testing"))]
pub(crate) fn prepare(project: &Project, diff: &str) -> Result<Prepared, ToolError> {
    prepare_within(
        project,
        diff,
        crate::config::Config::default().max_patch_file_bytes,
    )
}

/// Everything short of asking and writing: parse, check paths, read, repair, apply in
/// memory. No target larger than `max_file_bytes` is read, and no result larger than it
/// is produced.
pub(crate) fn prepare_within(
    project: &Project,
    diff: &str,
    max_file_bytes: u64,
) -> Result<Prepared, ToolError> {
    let refuse = |text: String| ToolError::Refused(format!("{text}\nNothing was changed."));
    let files =
        parse::parse(diff).map_err(|e| refuse(format!("The patch cannot be read: {e}.")))?;

    // Paths first: nothing is read until every path in the patch is acceptable.
    let mut seen = BTreeSet::new();
    let mut checked = Vec::with_capacity(files.len());
    for file in &files {
        let old = file
            .old_path
            .as_deref()
            .map(|p| checked_path(project, p))
            .transpose()
            .map_err(|e| refuse(e.to_string()))?;
        let new = file
            .new_path
            .as_deref()
            .map(|p| checked_path(project, p))
            .transpose()
            .map_err(|e| refuse(e.to_string()))?;
        let shown = new
            .as_ref()
            .or(old.as_ref())
            .map(ToString::to_string)
            .unwrap_or_default();
        if file.binary {
            return Err(refuse(format!(
                "The patch for `{shown}` is binary; apply_patch changes text files only."
            )));
        }
        if file.copy {
            return Err(refuse(format!(
                "The patch copies a file to `{shown}`; apply_patch does not copy files: create `{shown}` with `--- /dev/null` and `+++ b/{shown}` and its whole content."
            )));
        }
        let paths: BTreeSet<&ProjectPath> = old.iter().chain(new.iter()).collect();
        for path in paths {
            if !seen.insert(path.clone()) {
                return Err(refuse(format!(
                    "`{path}` appears more than once in the patch; send one section per file with all its hunks."
                )));
            }
        }
        checked.push((old, new));
    }

    // Sizes next: nothing is read unless the files the patch reads fit its budget.
    let budget = read_budget(max_file_bytes);
    let sizes: Vec<(&ProjectPath, u64)> = checked
        .iter()
        .filter_map(|(old, _)| old.as_ref())
        .map(|path| {
            let size = project.symlink_metadata(path).map_or(0, |meta| meta.len());
            (path, size)
        })
        .collect();
    // One file over the per-file cap is the more useful refusal: it names the file.
    if let Some((path, _)) = sizes.iter().find(|(_, size)| *size > max_file_bytes) {
        return Err(refuse(over_file_cap(path, max_file_bytes)));
    }
    let total = sizes
        .iter()
        .fold(0u64, |sum, (_, size)| sum.saturating_add(*size));
    if total > budget {
        return Err(refuse(over_budget(Some(total), budget, sizes.len())));
    }

    // What is left of the budget as the files are read: a file that grew since its size
    // was taken is read no further than that.
    let mut left = budget;
    let mut pre: Vec<(ProjectPath, Vec<u8>, u32)> = Vec::new();
    // The permission bits each written path gets (see `write_mode`).
    let mut modes: Vec<(ProjectPath, WriteMode)> = Vec::new();
    let mut patch = Vec::new();
    let mut summary = String::new();
    let mut problems = Vec::new();
    let mut regions = Vec::new();
    let mut line_counts = Vec::new();
    for (file, (old, new)) in files.iter().zip(&checked) {
        let current = match old {
            Some(path) => {
                let limit = max_file_bytes.min(left);
                let current = read_current(project, path, limit).map_err(|e| match e {
                    BoundaryError::TooLarge { .. } if limit < max_file_bytes => {
                        refuse(over_budget(None, budget, sizes.len()))
                    }
                    e => refuse(too_large_or(e, max_file_bytes)),
                })?;
                if let Some((bytes, _)) = &current {
                    left = left.saturating_sub(bytes.len() as u64);
                }
                current
            }
            None => None,
        };
        if let (Some(new), true) = (new, old.as_ref() != new.as_ref()) {
            if project.exists(new.as_str()) && current.is_some() {
                problems.push(format!(
                    "`{new}` already exists; a rename cannot overwrite it."
                ));
                continue;
            }
            if old.is_none() && project.exists(new.as_str()) {
                problems.push(format!("`{new}` already exists; to change it, send a diff against its current content (`--- a/{new}`)."));
                continue;
            }
            // A file where a directory of the new path must go is only allowed when the
            // patch deletes that file.
            let deleted = |path: &str| {
                checked
                    .iter()
                    .any(|(o, n)| n.is_none() && o.as_ref().is_some_and(|o| o.as_str() == path))
            };
            let blocking = new
                .as_str()
                .match_indices('/')
                .map(|(at, _)| &new.as_str()[..at])
                .find(|dir| {
                    project
                        .resolve(dir)
                        .ok()
                        .and_then(|dir| project.symlink_metadata(&dir).ok())
                        .is_some_and(|meta| !meta.is_dir())
                });
            if let Some(file) = blocking.filter(|file| !deleted(file)) {
                problems.push(format!("`{new}` cannot be created: `{file}` is a file; delete it in the same patch to put a directory there."));
                continue;
            }
        }
        // The canonical patch names the normalised paths (`./src/a.rs` is `src/a.rs`), the
        // ones the pre-images are stored under.
        let file = parse::FilePatch {
            old_path: old.as_ref().map(ToString::to_string),
            new_path: new.as_ref().map(ToString::to_string),
            ..file.clone()
        };
        match repair::resolve(
            &file,
            current
                .as_ref()
                .map(|(bytes, mode)| (bytes.as_slice(), *mode)),
        ) {
            Ok(resolved) => {
                patch.extend_from_slice(&resolved.text);
                if let Some(old) = old {
                    regions.push((old.clone(), conflict::hunk_ranges(&resolved.text)));
                }
                let bits = current.as_ref().map(|(_, bits)| *bits);
                if let Some(new) = new {
                    modes.push((new.clone(), write_mode(bits, file.new_mode)));
                }
                let _ = writeln!(
                    summary,
                    "{}{}{}",
                    summary_line(old.as_ref(), new.as_ref(), resolved.added, resolved.removed),
                    new.as_ref()
                        .map(|_| mode_note(bits.map(FileMode::of_bits), file.new_mode))
                        .unwrap_or_default(),
                    encoding_note(resolved.utf8_in_legacy)
                );
                if let Some(path) = new.as_ref().or(old.as_ref()) {
                    line_counts.push((path.clone(), resolved.added, resolved.removed));
                }
                if let (Some(path), Some((bytes, mode))) = (old, current) {
                    pre.push((path.clone(), bytes, mode));
                }
            }
            Err(refusal) => problems.push(refusal.to_string()),
        }
    }
    if !problems.is_empty() {
        return Err(refuse(problems.join("\n")));
    }

    let pre_images: Vec<PreImage<'_>> = pre
        .iter()
        .map(|(path, bytes, _)| PreImage {
            path: path.as_str(),
            bytes,
        })
        .collect();
    let post = memory::apply(&patch, &pre_images).map_err(|e| {
        refuse(format!(
            "The repaired patch does not apply: {}.",
            e.message()
        ))
    })?;

    let mut changes = Vec::with_capacity(post.len());
    for image in post {
        let path = checked_path(project, &image.path).map_err(|e| refuse(e.to_string()))?;
        if let Some(bytes) = image
            .bytes
            .as_ref()
            .filter(|b| b.len() as u64 > max_file_bytes)
        {
            return Err(refuse(format!(
                "The patch would make `{path}` {} bytes, more than apply_patch's limit of {max_file_bytes} bytes per file (`max_patch_file_bytes`); send a smaller change, or ask the person to raise `max_patch_file_bytes` in their config.",
                bytes.len()
            )));
        }
        let before = pre
            .iter()
            .find(|(p, _, _)| *p == path)
            .map(|(_, bytes, mode)| (bytes.clone(), *mode));
        let mode = modes
            .iter()
            .find(|(p, _)| *p == path)
            .map_or(WriteMode::Create(FileMode::Regular), |(_, mode)| *mode);
        changes.push(Change {
            path,
            before,
            after: image.bytes,
            mode,
        });
    }
    Ok(Prepared {
        patch,
        summary,
        changes,
        regions,
        line_counts,
    })
}

/// Resolves a path from the patch and applies the write rules: inside the root, not in
/// `.git/` (nor the git directory a `.git` file points to), not the trusted config file in
/// use, not through a symlink.
fn checked_path(project: &Project, raw: &str) -> Result<ProjectPath, BoundaryError> {
    let path = project.resolve(raw)?;
    project.refuse_protected(&path)?;
    project.check_no_symlinks(&path)?;
    Ok(path)
}

/// The file's bytes and permission bits, or `None` when it does not exist. A file larger
/// than `limit` bytes is refused from its size on the open file, before any is read.
fn read_current(
    project: &Project,
    path: &ProjectPath,
    limit: u64,
) -> Result<Option<(Vec<u8>, u32)>, BoundaryError> {
    match project.read_capped_with_mode(path, limit) {
        Ok(current) => Ok(Some(current)),
        Err(BoundaryError::NotFound(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The most bytes one patch reads from the files it changes, summed over them (unless
/// `max_patch_file_bytes` is larger: one file at that cap always fits). Every file read
/// is held several times while a patch is prepared (the bytes, libgit2's blob, the
/// post-image), so without it a patch over many files each just under the per-file cap
/// (measured: 20 files of 15 MiB) took memory by the gigabyte before the question was
/// even asked. Real patches read kilobytes; 32 MiB is two files at the default cap.
const PATCH_READ_BYTES: u64 = 32 << 20;

/// The read budget of one patch: [`PATCH_READ_BYTES`], or `max_file_bytes` when larger.
fn read_budget(max_file_bytes: u64) -> u64 {
    PATCH_READ_BYTES.max(max_file_bytes)
}

/// The refusal of a patch whose files add up to more than its read budget: `total` is
/// their size when known (`None`: a file grew past the budget while it was read).
fn over_budget(total: Option<u64>, budget: u64, files: usize) -> String {
    let held = total.map_or_else(|| format!("more than {budget}"), |n| n.to_string());
    let floor = PATCH_READ_BYTES >> 20;
    format!(
        "The {files} files this patch changes hold {held} bytes together, more than apply_patch reads for one patch ({budget} bytes, {floor} MiB or `max_patch_file_bytes` if larger), so none was read; split the change into several smaller patches, each touching fewer or smaller files."
    )
}

/// The text of a read error for the model; a file over the cap names the setting.
fn too_large_or(error: BoundaryError, max_file_bytes: u64) -> String {
    match error {
        BoundaryError::TooLarge { path, .. } => over_file_cap(&path, max_file_bytes),
        other => other.to_string(),
    }
}

/// The refusal of a file larger than `max_patch_file_bytes`.
fn over_file_cap(path: &dyn std::fmt::Display, max_file_bytes: u64) -> String {
    format!(
        "`{path}` is larger than {max_file_bytes} bytes, apply_patch's limit per file (`max_patch_file_bytes`), so it was not read; change it another way, or ask the person to raise `max_patch_file_bytes` in their config."
    )
}

/// The permission bits a written path gets: a modified or renamed file keeps its own
/// (`bits`), a created one gets what `touch` would (0o666 less the umask, or 0o777 for
/// 100755); a mode the patch states for an existing file sets or clears its x bits.
fn write_mode(bits: Option<u32>, stated: Option<FileMode>) -> WriteMode {
    match (bits, stated) {
        (None, stated) => WriteMode::Create(stated.unwrap_or(FileMode::Regular)),
        (Some(bits), Some(to)) if FileMode::of_bits(bits) != to => WriteMode::Switch { bits, to },
        (Some(bits), _) => WriteMode::Exact(bits),
    }
}

/// What the summary line says about a written file's mode: a created executable, and
/// every change, so the person sees at the question what the canonical patch's mode lines
/// mean. Empty when nothing about the mode is worth a word (a new or kept 100644).
fn mode_note(before: Option<FileMode>, stated: Option<FileMode>) -> String {
    match (before, stated) {
        (None, Some(FileMode::Executable)) => ", mode 100755 (executable)".to_owned(),
        (Some(before), Some(after)) if before != after => {
            let what = match after {
                FileMode::Executable => "becomes executable",
                FileMode::Regular => "no longer executable",
            };
            format!(", mode {before} -> {after} ({what})")
        }
        _ => String::new(),
    }
}

/// What the summary says when added lines put UTF-8 text into a file that is not UTF-8,
/// so that a change of encoding is never silent: the person sees it at the question and
/// the model in the result. Empty when there is none.
fn encoding_note(lines: usize) -> String {
    match lines {
        0 => String::new(),
        1 => ", 1 added line has UTF-8 text in a file that is not UTF-8".to_owned(),
        n => format!(", {n} added lines have UTF-8 text in a file that is not UTF-8"),
    }
}

fn summary_line(
    old: Option<&ProjectPath>,
    new: Option<&ProjectPath>,
    added: usize,
    removed: usize,
) -> String {
    // Paths can hold control characters (git quotes them); the summary is printed on the
    // person's terminal, one line per file, so they are shown escaped.
    let shown = |path: &ProjectPath| -> String {
        path.as_str()
            .chars()
            .map(|c| {
                if c.is_control()
                    || matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
                {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    };
    let old = old.map(shown);
    let new = new.map(shown);
    match (old, new) {
        (None, Some(new)) => format!("A {new} (+{added})"),
        (Some(old), None) => format!("D {old} (-{removed})"),
        (Some(old), Some(new)) if old != new => format!("R {old} -> {new} (+{added} -{removed})"),
        (_, Some(path)) => format!("M {path} (+{added} -{removed})"),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_budget_is_32_mib_or_the_per_file_cap_when_larger() {
        let default = crate::config::Config::default().max_patch_file_bytes;
        assert_eq!(read_budget(default), 32 << 20);
        assert_eq!(read_budget(1), 32 << 20);
        assert_eq!(read_budget(64 << 20), 64 << 20);
        assert_eq!(read_budget(u64::MAX), u64::MAX);
    }

    #[test]
    fn the_budget_refusal_names_the_sizes_and_the_next_step() {
        let text = over_budget(Some((32 << 20) + 1), 32 << 20, 3);
        assert!(
            text.starts_with("The 3 files this patch changes hold 33554433 bytes together"),
            "{text}"
        );
        assert!(text.contains("(33554432 bytes, 32 MiB"), "{text}");
        assert!(text.contains("split the change into several smaller patches"));
        let text = over_budget(None, 32 << 20, 2);
        assert!(
            text.contains("hold more than 33554432 bytes together"),
            "{text}"
        );
    }
}
