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
//! The walk stops as soon as one entry more than the budget has been seen. A listing the
//! budget cut then says where the rest is, by directory (`[not listed:
//! cmd/promtool/testdata/ (143 more), ...]`), so the next call can be a narrower glob
//! instead of a guess; that count walks the whole tree, on every core.

use ignore::overrides::OverrideBuilder;
use serde::Deserialize;

use super::{
    Access, Account, Budgets, ReadTool, Reads, ToolContext, ToolError, ToolResult, ToolSpec, arg,
    walk,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use ignore::WalkState;

use crate::project::Project;

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "list_files",
    description: "List project files (gitignored files skipped), optionally narrowed by a glob such as internal/**/*.go. Capped; narrow with a glob.",
    parameters: r#"{"type":"object","properties":{"pattern":{"type":"string","description":"glob"}}}"#,
    access: Access::Read,
    scope: "the project tree, gitignored files skipped",
    available: super::always_available,
    run: &Reads(ListFiles),
    purged_after_turn: false,
    shown: |args| match args.get("pattern") {
        Some(_) => format!("file list {}", arg(args, "pattern")),
        None => "file list".to_owned(),
    },
    ledger_arguments: None,
    subject: |args| super::subject_arg(args, "pattern"),
    schema: std::sync::OnceLock::new(),
};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    #[serde(default)]
    pattern: Option<String>,
}

struct ListFiles;

impl ReadTool for ListFiles {
    type Args = Args;

    fn run(&self, context: &ToolContext<'_>, args: Args) -> Result<ToolResult, ToolError> {
        list_files(
            &context.env.project,
            &context.env.budgets,
            args.pattern.as_deref(),
        )
    }
}

/// Lists files beneath the root, sorted by path, at most `list_max_entries` of them.
pub(crate) fn list_files(
    project: &Project,
    budgets: &Budgets,
    pattern: Option<&str>,
) -> Result<ToolResult, ToolError> {
    let pattern = pattern.map(str::trim).filter(|p| !p.is_empty());
    let account = |files: usize, truncated: bool| Account::Listed {
        files,
        truncated,
        glob: pattern.is_some(),
    };
    let (builder, skipped) = walk::builder(project, glob_filter(project, pattern)?)?;
    let limit = budgets.list_max_entries;
    let found: Vec<_> = walk::files(project, builder.build())
        .take(limit.saturating_add(1))
        .collect();
    if found.is_empty() {
        let notes = skipped.notes();
        let text = match pattern {
            Some(glob) => format!("{notes}No files match `{glob}`."),
            None => format!("{notes}No files found."),
        };
        return Ok(ToolResult::new(text, account(0, false)));
    }
    let mut out = String::new();
    for path in found.iter().take(limit) {
        out.push_str(path.as_str());
        out.push('\n');
    }
    if found.len() <= limit {
        out.push_str(&skipped.notes());
        return Ok(ToolResult::new(out, account(found.len(), false)));
    }
    out.push_str(&format!(
        "[truncated to {limit} entries; narrow with a glob]\n"
    ));
    // The rest is counted by a second, parallel walk of the whole tree (order does not
    // matter for counts), less what was listed.
    let (builder, skipped) = walk::builder(project, glob_filter(project, pattern)?)?;
    let (mut per_dir, capped) = files_per_directory(project, builder);
    for path in &found[..limit] {
        if let Some(n) = per_dir.get_mut(parent_of(path.as_str())) {
            *n = n.saturating_sub(1);
        }
    }
    out.push_str(&not_listed(&per_dir, capped));
    // Walk order is not defined in parallel; the notes are sorted by directory.
    let mut notes: Vec<&str> = Vec::new();
    let all = skipped.notes();
    notes.extend(all.split_inclusive('\n'));
    notes.sort_unstable();
    notes.dedup();
    out.extend(notes);
    Ok(ToolResult::new(out, account(limit, true)))
}

/// The walk filter for list_files' glob, if there is one.
fn glob_filter(project: &Project, glob: Option<&str>) -> Result<Option<walk::Narrow>, ToolError> {
    let Some(glob) = glob else {
        return Ok(None);
    };
    let bad_glob = |e: ignore::Error| ToolError::Refused(format!("bad glob `{glob}`: {e}"));
    let mut overrides = OverrideBuilder::new(project.root());
    overrides.add(glob).map_err(bad_glob)?;
    let overrides = overrides.build().map_err(bad_glob)?;
    // Keep what the glob does not exclude; a directory it excludes (`!vendor`) is not
    // entered. Unlike `WalkBuilder::overrides`, a match never re-admits an ignored file.
    Ok(Some(Box::new(move |entry| {
        let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
        !overrides.matched(entry.path(), is_dir).is_ignore()
    })))
}

/// `a/b/` for `a/b/c.go`, "" for a file at the top.
fn parent_of(path: &str) -> &str {
    path.rfind('/').map_or("", |at| &path[..=at])
}

/// The most files the note on a cut listing counts: past it the note says so, so that a
/// huge tree cannot make a capped answer cost more than a walk of this many files.
const MAX_COUNTED: usize = 50_000;

/// How many files the walk yields in each directory (`a/b/`; "" for the top), counted on
/// every core: the same files [`walk::files`] yields, in no particular order, and whether
/// the count stopped at [`MAX_COUNTED`].
fn files_per_directory(
    project: &Project,
    builder: ignore::WalkBuilder,
) -> (BTreeMap<String, usize>, bool) {
    let counts: Mutex<(BTreeMap<String, usize>, usize)> = Mutex::new((BTreeMap::new(), 0));
    let root = project.root();
    builder.build_parallel().run(|| {
        let counts = &counts;
        Box::new(move |entry| {
            let Ok(entry) = entry else {
                return WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return WalkState::Continue;
            }
            let relative = walk::beneath(entry.path(), root).unwrap_or(Path::new(""));
            let Some(path) = project.walked_path(relative) else {
                return WalkState::Continue;
            };
            let mut counts = counts.lock().unwrap_or_else(PoisonError::into_inner);
            let (per_dir, total) = &mut *counts;
            if *total >= MAX_COUNTED {
                return WalkState::Quit;
            }
            *total += 1;
            // Most files are in a directory already counted: no key is built for them.
            let dir = parent_of(path.as_str());
            match per_dir.get_mut(dir) {
                Some(n) => *n += 1,
                None => {
                    per_dir.insert(dir.to_owned(), 1);
                }
            }
            WalkState::Continue
        })
    });
    let (per_dir, total) = counts.into_inner().unwrap_or_else(PoisonError::into_inner);
    (per_dir, total >= MAX_COUNTED)
}

/// How many places the note on unlisted files names at most.
const MAX_GROUPS: usize = 6;

/// The note on the files a cut listing left out: where they are, in at most
/// [`MAX_GROUPS`] places, largest first. Starting from the top-level directories, a
/// directory is split into its subdirectories while the split still fits, or when one
/// subdirectory holds most of its files; so one crowded directory deep in the tree
/// (`cmd/promtool/testdata/`) is named rather than only its top-level ancestor, and the
/// next call can exclude or narrow to it.
fn not_listed(per_dir: &BTreeMap<String, usize>, capped: bool) -> String {
    let mut tree = DirCounts::default();
    for (dir, &n) in per_dir {
        tree.add(dir, n);
    }
    let mut groups = vec![Group {
        dir: String::new(),
        own: false,
    }];
    loop {
        groups.sort_by_key(|g| std::cmp::Reverse(tree.files_in(g)));
        let fits = |g: &Group| groups.len() + tree.split_adds(&g.dir) <= MAX_GROUPS;
        let splittable = |g: &Group| {
            !g.own
                && tree.children.contains_key(&g.dir)
                && (g.dir.is_empty() || fits(g) || tree.dominated(&g.dir))
        };
        let Some(at) = groups.iter().position(splittable) else {
            break;
        };
        let dir = groups.remove(at).dir;
        if tree.direct(&dir) > 0 {
            groups.push(Group {
                dir: dir.clone(),
                own: true,
            });
        }
        let subdirs = tree.children[&dir].iter().cloned();
        groups.extend(subdirs.map(|dir| Group { dir, own: false }));
    }
    groups.sort_by_key(|g| std::cmp::Reverse(tree.files_in(g)));
    let mut named: Vec<String> = Vec::new();
    let mut elsewhere = 0;
    for (i, group) in groups.iter().enumerate() {
        let n = tree.files_in(group);
        if i + 1 < MAX_GROUPS || groups.len() == MAX_GROUPS {
            named.push(format!("{} ({n} more)", group.label()));
        } else {
            elsewhere += n;
        }
    }
    if elsewhere > 0 {
        named.push(format!("{elsewhere} more elsewhere"));
    }
    let capped = if capped {
        format!("; counting stopped at {MAX_COUNTED} files")
    } else {
        String::new()
    };
    format!("[not listed: {}{capped}]\n", named.join(", "))
}

/// A place in the note on unlisted files: a directory with everything beneath it, or
/// (`own`) only the files directly in it, once its subdirectories are named on their own.
struct Group {
    /// `cmd/promtool/`, or empty for the root.
    dir: String,
    own: bool,
}

impl Group {
    fn label(&self) -> String {
        match (self.dir.is_empty(), self.own) {
            (true, _) => "the top level".to_owned(),
            (false, true) => format!("{}*", self.dir),
            (false, false) => self.dir.clone(),
        }
    }
}

/// Unlisted files counted per directory (each file counts in every ancestor).
#[derive(Default)]
struct DirCounts {
    /// Files beneath each directory (`a/b/`; the root is "").
    total: BTreeMap<String, usize>,
    /// Each directory's subdirectories that hold unlisted files.
    children: BTreeMap<String, BTreeSet<String>>,
}

impl DirCounts {
    /// Adds `n` files directly in `dir` (`a/b/`, or "" for the top).
    fn add(&mut self, dir: &str, n: usize) {
        if n == 0 {
            return;
        }
        let mut parent = String::new();
        *self.total.entry(String::new()).or_default() += n;
        for part in dir.split_terminator('/') {
            let child = format!("{parent}{part}/");
            self.children
                .entry(parent)
                .or_default()
                .insert(child.clone());
            *self.total.entry(child.clone()).or_default() += n;
            parent = child;
        }
    }

    fn count(&self, dir: &str) -> usize {
        self.total.get(dir).copied().unwrap_or(0)
    }

    fn below(&self, dir: &str) -> impl Iterator<Item = usize> + '_ {
        self.children
            .get(dir)
            .into_iter()
            .flatten()
            .map(|d| self.count(d))
    }

    /// Files directly in `dir`, not in a subdirectory.
    fn direct(&self, dir: &str) -> usize {
        self.count(dir) - self.below(dir).sum::<usize>()
    }

    fn files_in(&self, group: &Group) -> usize {
        if group.own {
            self.direct(&group.dir)
        } else {
            self.count(&group.dir)
        }
    }

    /// How many more groups splitting `dir` makes.
    fn split_adds(&self, dir: &str) -> usize {
        let subdirs = self.children.get(dir).map_or(0, BTreeSet::len);
        (subdirs + usize::from(self.direct(dir) > 0)).saturating_sub(1)
    }

    /// True when one subdirectory holds at least half of `dir`'s files.
    fn dominated(&self, dir: &str) -> bool {
        self.below(dir)
            .max()
            .is_some_and(|n| n * 2 >= self.count(dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn note(paths: &[String]) -> String {
        let mut per_dir = BTreeMap::new();
        for path in paths {
            *per_dir.entry(parent_of(path).to_owned()).or_default() += 1;
        }
        not_listed(&per_dir, false)
    }

    fn many(dir: &str, n: usize) -> Vec<String> {
        (0..n).map(|i| format!("{dir}f{i}.yml")).collect()
    }

    #[test]
    fn a_crowded_directory_deep_in_the_tree_is_named() {
        let mut paths = many("cmd/promtool/testdata/", 143);
        paths.extend(many("cmd/promtool/", 2));
        for top in ["a", "b", "c", "d", "e", "f", "g"] {
            paths.extend(many(&format!("{top}/x/"), 3));
        }
        paths.extend(many("", 4));
        assert_eq!(
            note(&paths),
            "[not listed: cmd/promtool/testdata/ (143 more), the top level (4 more), a/x/ (3 more), b/x/ (3 more), c/x/ (3 more), 14 more elsewhere]\n"
        );
    }

    #[test]
    fn a_few_directories_are_split_as_far_as_they_fit() {
        let mut paths = many("src/a/", 5);
        paths.extend(many("src/b/", 4));
        paths.extend(many("src/", 1));
        paths.extend(many("docs/", 2));
        assert_eq!(
            note(&paths),
            "[not listed: src/a/ (5 more), src/b/ (4 more), docs/ (2 more), src/* (1 more)]\n"
        );
        assert_eq!(note(&many("", 3)), "[not listed: the top level (3 more)]\n");
    }
}
