//! `list_files(pattern?)`: what is here, as ripgrep's `--files` would say.
//!
//! The walk honours `.gitignore`, `.ignore` and the hidden-file rule, so build output and
//! vendored trees never reach the model. The optional glob narrows it with ripgrep's `-g`
//! semantics (`*.go` matches at any depth, `internal/**/*.go` from the root, `!x` excludes).
//! It only narrows: ripgrep lets a `-g` glob override every ignore rule (`rg --files -g '*'`
//! lists `.git/` internals, `.env` and gitignored build output), so here the glob is applied
//! as a filter on top of the ignore rules instead of as an override. The answer is always a
//! subset of the unglobbed listing: the files `rg --files -g GLOB` lists that `rg --files`
//! lists too.
//! The walk stops as soon as one entry more than the budget has been seen.

use ignore::overrides::OverrideBuilder;
use serde::Deserialize;
use serde_json::Value;

use super::{Access, Budgets, Run, ToolContext, ToolError, ToolSpec, arg, parse_args, walk};
use crate::project::Project;

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "list_files",
    description: "List project files (gitignored files skipped), optionally narrowed by a glob such as internal/**/*.go. Capped; narrow with a glob.",
    parameters: r#"{"type":"object","properties":{"pattern":{"type":"string","description":"glob"}}}"#,
    access: Access::Read,
    scope: "the project tree, gitignored files skipped",
    available: super::always_available,
    run: Run::Read(run),
    purged_after_turn: false,
    shown: |args| match args.get("pattern") {
        Some(_) => format!("file list {}", arg(args, "pattern")),
        None => "file list".to_owned(),
    },
    ledger_arguments: None,
    subject: |args| super::plain_arg(args, "pattern"),
    summarize: Some(summarize),
    schema: std::sync::OnceLock::new(),
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    #[serde(default)]
    pattern: Option<String>,
}

fn run(context: &ToolContext<'_>, args: Value) -> Result<String, ToolError> {
    let args: Args = parse_args(SPEC.name, args)?;
    list_files(
        &context.env.project,
        &context.env.budgets,
        args.pattern.as_deref(),
    )
}

/// Lists files beneath the root, sorted by path, at most `list_max_entries` of them.
pub(crate) fn list_files(
    project: &Project,
    budgets: &Budgets,
    pattern: Option<&str>,
) -> Result<String, ToolError> {
    let pattern = pattern.map(str::trim).filter(|p| !p.is_empty());
    let mut narrow: Option<walk::Narrow> = None;
    if let Some(glob) = pattern {
        let bad_glob = |e: ignore::Error| ToolError::Refused(format!("bad glob `{glob}`: {e}"));
        let mut overrides = OverrideBuilder::new(project.root());
        overrides.add(glob).map_err(bad_glob)?;
        let overrides = overrides.build().map_err(bad_glob)?;
        // Keep what the glob does not exclude; a directory it excludes (`!vendor`) is not
        // entered. Unlike `WalkBuilder::overrides`, a match never re-admits an ignored file.
        narrow = Some(Box::new(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            !overrides.matched(entry.path(), is_dir).is_ignore()
        }));
    }
    let (builder, skipped) = walk::builder(project, narrow)?;
    let limit = budgets.list_max_entries;
    let found: Vec<_> = walk::files(project, builder.build())
        .take(limit.saturating_add(1))
        .collect();
    let notes = skipped.notes();
    if found.is_empty() {
        return Ok(match pattern {
            Some(glob) => format!("{notes}No files match `{glob}`."),
            None => format!("{notes}No files found."),
        });
    }
    let mut out = String::new();
    for path in found.iter().take(limit) {
        out.push_str(path.as_str());
        out.push('\n');
    }
    if found.len() > limit {
        out.push_str(&format!(
            "[truncated to {limit} entries; narrow with a glob]\n"
        ));
    }
    out.push_str(&notes);
    Ok(out)
}

/// `41 files`, `60 files (truncated)`, `no files`.
fn summarize(result: &str) -> String {
    let files = result
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('['))
        .count();
    let truncated = result.lines().any(|line| line.starts_with("[truncated"));
    match (files, truncated) {
        (0, _) => "no files".to_owned(),
        (n, false) => super::count(n, "file", "files"),
        (n, true) => format!("{} (truncated)", super::count(n, "file", "files")),
    }
}
