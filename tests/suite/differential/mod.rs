//! Differential tests of find_symbol's definitions against Universal Ctags, one module
//! per language, each on a real tree of that language.
//!
//! Each test prints a per-kind recall table (ctags' tags we find at the same name, file
//! and line), our precision (our definitions ctags also lists) and, where ctags prints
//! scopes, how often our scope agrees; run with `--nocapture` to see them and
//! `METRON_SHOW_MISSES=N` for more examples of each. Corpora come from `.ci/corpora/`
//! (fetched by `.ci/run` into `$METRON_CORPORA`); a missing corpus or ctags skips the
//! test outside CI and fails it under `CI=true`.

use std::collections::{BTreeMap, HashSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use metron::testing::Definitions;

#[cfg(feature = "lang-bash")]
mod bash;
#[cfg(feature = "lang-c")]
mod c;
#[cfg(feature = "lang-cpp")]
mod cpp;
#[cfg(feature = "lang-csharp")]
mod csharp;
#[cfg(feature = "lang-go")]
mod go;
#[cfg(feature = "lang-java")]
mod java;
#[cfg(feature = "lang-javascript")]
mod javascript;
#[cfg(feature = "lang-kotlin")]
mod kotlin;
#[cfg(feature = "lang-php")]
mod php;
#[cfg(feature = "lang-python")]
mod python;
#[cfg(feature = "lang-ruby")]
mod ruby;
#[cfg(feature = "lang-rust")]
mod rust;
#[cfg(feature = "lang-typescript")]
mod typescript;

/// The corpus fetched by `.ci/corpora/NAME.sh`: `$METRON_CORPORA/NAME`, else the same
/// under `~/.cache/metron-corpora`. `None` when it is not there.
pub(crate) fn corpus(name: &str) -> Option<PathBuf> {
    let base = std::env::var_os("METRON_CORPORA")
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/metron-corpora"))
        })?;
    let dir = base.join(name);
    dir.is_dir().then_some(dir)
}

/// Every file under `root` (not following symlinks, skipping hidden entries) with the
/// given extension, relative to `root`, sorted.
pub(crate) fn source_files(root: &Path, extension: &str, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(root) else {
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() {
            source_files(&path, extension, out);
        } else if kind.is_file() && path.extension().is_some_and(|e| e == extension) {
            out.push(path);
        }
    }
}

/// A tag: name, file, line.
pub(crate) type Tag = (String, String, usize);

/// A ctags tag with its kind and scope (`struct:gin.Context`; empty without one).
pub(crate) struct CtagsTag {
    pub(crate) kind: String,
    pub(crate) tag: Tag,
    pub(crate) scope: String,
}

/// Runs Universal Ctags over `files` (absolute paths) and returns its tags.
pub(crate) fn ctags_tags(lang: &str, files: &[PathBuf]) -> Vec<CtagsTag> {
    ctags_tags_with(lang, &[], files)
}

/// [`ctags_tags`] with more options before the file list (`--map-TypeScript=+.tsx`, to
/// read an extension ctags does not map to the language).
pub(crate) fn ctags_tags_with(lang: &str, options: &[&str], files: &[PathBuf]) -> Vec<CtagsTag> {
    let mut child = Command::new("ctags")
        .args([
            "--fields=+nKsZ",
            "--excmd=number",
            &format!("--languages={lang}"),
        ])
        .args(options)
        .args(["-L", "-", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn ctags");
    let list: String = files.iter().map(|p| format!("{}\n", p.display())).collect();
    let mut stdin = child.stdin.take().expect("ctags stdin");
    let writer = std::thread::spawn(move || stdin.write_all(list.as_bytes()));
    let output = child.wait_with_output().expect("run ctags");
    let _ = writer.join();
    let mut tags = Vec::new();
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        if line.starts_with("!_") {
            continue;
        }
        // name \t file \t 123;" \t kind \t line:123 ...
        let fields: Vec<&str> = line.split('\t').collect();
        let (Some(name), Some(file), Some(kind)) = (fields.first(), fields.get(1), fields.get(3))
        else {
            continue;
        };
        let Some(line_no) = fields
            .iter()
            .find_map(|f| f.strip_prefix("line:"))
            .and_then(|n| n.parse().ok())
        else {
            continue;
        };
        let scope = fields
            .iter()
            .find_map(|f| f.strip_prefix("scope:"))
            .unwrap_or("");
        tags.push(CtagsTag {
            kind: (*kind).to_owned(),
            tag: ((*name).to_owned(), (*file).to_owned(), line_no),
            scope: scope.to_owned(),
        });
    }
    tags
}

/// The (kind, tag) pairs of ctags' tags, for [`recall`].
pub(crate) fn kinds_and_tags(tags: &[CtagsTag]) -> Vec<(String, Tag)> {
    tags.iter()
        .map(|t| (t.kind.clone(), t.tag.clone()))
        .collect()
}

/// How often our scope equals ctags' for the tags both found; prints a per-kind table
/// and the first disagreements, and returns (agreeing, compared). `normalize` turns
/// ctags' `kind:name` scope field into the scope path find_symbol shows.
pub(crate) fn scope_agreement(
    title: &str,
    ctags: &[CtagsTag],
    ours: &std::collections::HashMap<Tag, (String, &'static str)>,
    normalize: impl Fn(&str) -> String,
) -> (usize, usize) {
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut differences = Vec::new();
    for theirs in ctags {
        let Some((scope, _)) = ours.get(&theirs.tag) else {
            continue;
        };
        let expected = normalize(&theirs.scope);
        let row = by_kind.entry(theirs.kind.as_str()).or_default();
        row.1 += 1;
        if *scope == expected {
            row.0 += 1;
        } else {
            differences.push((theirs, expected, scope));
        }
    }
    let (agree, total) = by_kind
        .values()
        .fold((0, 0), |(a, t), row| (a + row.0, t + row.1));
    println!("\n{title}: scope agreement with ctags (tags both found)");
    for (kind, (a, t)) in &by_kind {
        let pct = 100.0 * *a as f64 / (*t).max(1) as f64;
        println!("{kind:<14} {t:>9} {a:>9} {pct:>8.2}%");
    }
    let pct = 100.0 * agree as f64 / total.max(1) as f64;
    println!("{:<14} {total:>9} {agree:>9} {pct:>8.2}%", "all");
    for (theirs, expected, scope) in differences.iter().take(show_misses()) {
        let (name, file, line) = &theirs.tag;
        println!(
            "  scope: {name} [{}] {file}:{line}: ctags `{expected}`, ours `{scope}`",
            theirs.kind
        );
    }
    (agree, total)
}

/// Extracts every definition from `files` with the index's own extractor, on two
/// threads, with its scope and kind.
pub(crate) fn our_tags(
    files: &[PathBuf],
) -> std::collections::HashMap<Tag, (String, &'static str)> {
    our_tags_in(files, None)
}

/// [`our_tags`], reading every file as `language` (by its find_symbol name) when given.
pub(crate) fn our_tags_in(
    files: &[PathBuf],
    language: Option<&str>,
) -> std::collections::HashMap<Tag, (String, &'static str)> {
    let halves: Vec<&[PathBuf]> = files.chunks(files.len().div_ceil(2).max(1)).collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = halves
            .into_iter()
            .map(|half| {
                scope.spawn(move || {
                    let mut extractor = Definitions::new();
                    let mut tags = std::collections::HashMap::new();
                    let mut dropped = Vec::new();
                    for path in half {
                        let Ok(bytes) = std::fs::read(path) else {
                            continue;
                        };
                        let shown = path.display().to_string();
                        let defs = extractor
                            .of_scoped(&shown, language, &bytes)
                            .expect("a file of a compiled-in language");
                        let dropped_names = metron::testing::prefilter_drops(
                            &bytes,
                            defs.iter().map(|def| def.name.as_str()),
                        );
                        for def in defs {
                            let tag = (def.name, shown.clone(), def.line);
                            if dropped_names.contains(&tag.0) {
                                dropped.push(tag);
                            } else {
                                tags.insert(tag, (def.scope, def.kind));
                            }
                        }
                    }
                    (tags, dropped)
                })
            })
            .collect();
        let mut tags = std::collections::HashMap::new();
        let mut dropped = Vec::new();
        for handle in handles {
            let (half_tags, half_dropped) = handle.join().expect("extract thread");
            tags.extend(half_tags);
            dropped.extend(half_dropped);
        }
        if !dropped.is_empty() {
            println!(
                "definitions a lookup would not parse for (the prefilter): {}, e.g. {:?}",
                dropped.len(),
                &dropped[..dropped.len().min(5)]
            );
        }
        prefilter_dropped().extend(dropped);
        tags
    })
}

/// Definitions the parser finds but a lookup would not, because the prefilter
/// (`src/tools/symbols/prefilter.rs`) rules their file out: left out of what [`our_tags`]
/// returns, so every figure is what find_symbol answers, and checked by [`recall`],
/// which fails if one of them is a tag ctags lists. The prefilter is meant never to
/// drop one; the in-repo fixtures check that in every `cargo test`.
fn prefilter_dropped() -> std::sync::MutexGuard<'static, HashSet<Tag>> {
    static DROPPED: std::sync::LazyLock<std::sync::Mutex<HashSet<Tag>>> =
        std::sync::LazyLock::new(Default::default);
    DROPPED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Per-kind recall of ctags' tags by ours; prints the table, returns (found, total).
pub(crate) fn recall(
    title: &str,
    ctags: &[(String, Tag)],
    ours: &HashSet<Tag>,
    exclude: impl Fn(&str, &Tag) -> bool,
) -> (usize, usize) {
    let mut by_kind: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut misses: Vec<(&str, &Tag)> = Vec::new();
    for (kind, tag) in ctags {
        let row = by_kind.entry(kind.as_str()).or_default();
        if exclude(kind, tag) {
            row.2 += 1;
            continue;
        }
        row.1 += 1;
        if ours.contains(tag) {
            row.0 += 1;
        } else {
            misses.push((kind, tag));
        }
    }
    let dropped = prefilter_dropped();
    let lost: Vec<&(&str, &Tag)> = misses
        .iter()
        .filter(|(_, tag)| dropped.contains(*tag))
        .collect();
    assert!(
        lost.is_empty(),
        "{title}: the prefilter keeps lookups from {} of ctags' tags, e.g. {:?}",
        lost.len(),
        &lost[..lost.len().min(10)]
    );
    drop(dropped);
    let (found, total) = by_kind
        .values()
        .fold((0, 0), |(f, t), row| (f + row.0, t + row.1));
    println!("\n{title}: recall of ctags tags (same name, file, line)");
    println!(
        "{:<14} {:>9} {:>9} {:>9} {:>11}",
        "ctags kind", "ctags", "found", "recall", "excluded"
    );
    for (kind, (f, t, excluded)) in &by_kind {
        let pct = if *t == 0 {
            100.0
        } else {
            100.0 * *f as f64 / *t as f64
        };
        println!("{kind:<14} {t:>9} {f:>9} {pct:>8.2}% {excluded:>11}");
    }
    let pct = 100.0 * found as f64 / total.max(1) as f64;
    println!("{:<14} {total:>9} {found:>9} {pct:>8.2}%", "all");
    let excluded: usize = by_kind.values().map(|row| row.2).sum();
    if excluded > 0 {
        let all = total + excluded;
        let pct = 100.0 * found as f64 / all as f64;
        println!(
            "{:<14} {all:>9} {found:>9} {pct:>8.2}%   (counting the excluded as misses)",
            "all, raw"
        );
    }
    println!("tree-sitter definitions: {}", ours.len());
    for (kind, (name, file, line)) in misses.iter().take(show_misses()) {
        println!("  miss: {name} [{kind}] {file}:{line}");
    }
    (found, total)
}

/// Our precision against ctags: the share of our definitions (name, file, line) that
/// ctags also lists under any kind, by our kind; prints the table, returns (listed,
/// ours). Kinds ctags does not tag by default at all are left out with `skip_kind`.
pub(crate) fn precision(
    title: &str,
    ours: &std::collections::HashMap<Tag, (String, &'static str)>,
    ctags: &[(String, Tag)],
    skip_kind: impl Fn(&str) -> bool,
) -> (usize, usize) {
    let theirs: HashSet<&Tag> = ctags.iter().map(|(_, tag)| tag).collect();
    let their_kinds: HashSet<(&str, &Tag)> = ctags
        .iter()
        .map(|(kind, tag)| (kind.as_str(), tag))
        .collect();
    let mut same_kind = 0;
    let mut by_kind: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    let mut extra = Vec::new();
    for (tag, (_, kind)) in ours {
        if skip_kind(kind) {
            continue;
        }
        let row = by_kind.entry(kind).or_default();
        row.1 += 1;
        if theirs.contains(tag) {
            row.0 += 1;
            if their_kinds.contains(&(*kind, tag)) {
                same_kind += 1;
            }
        } else {
            extra.push((*kind, tag));
        }
    }
    let (listed, total) = by_kind
        .values()
        .fold((0, 0), |(l, t), row| (l + row.0, t + row.1));
    println!("\n{title}: precision (our definitions that ctags also lists)");
    for (kind, (l, t)) in &by_kind {
        let pct = 100.0 * *l as f64 / (*t).max(1) as f64;
        println!("{kind:<14} {t:>9} {l:>9} {pct:>8.2}%");
    }
    let pct = 100.0 * listed as f64 / total.max(1) as f64;
    println!("{:<14} {total:>9} {listed:>9} {pct:>8.2}%", "all");
    // A definition both list under different kind names would be invisible above. (For
    // JavaScript about 8% differ on purpose: ctags calls an object literal a `class` and
    // an arrow function held by a key a `property`; here they are what they are
    // declared as, a `constant` or `variable` and a `method`.)
    println!(
        "kinds agree for {:.2}% of the definitions both list",
        100.0 * same_kind as f64 / listed.max(1) as f64
    );
    assert!(
        same_kind * 100 >= listed * 90,
        "{title}: only {same_kind} of {listed} shared definitions have ctags' kind"
    );
    extra.sort();
    for (kind, (name, file, line)) in extra.iter().take(show_misses()) {
        println!("  not in ctags: {name} [{kind}] {file}:{line}");
    }
    (listed, total)
}

/// How many examples of each kind of difference to print (`METRON_SHOW_MISSES`, 15).
pub(crate) fn show_misses() -> usize {
    std::env::var("METRON_SHOW_MISSES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(15)
}

/// The lines of the corpus files an exclusion rule looks at, each file read once.
#[derive(Default)]
pub(crate) struct SourceLines(BTreeMap<String, Vec<String>>);

impl SourceLines {
    /// Every line of `file` (none when it cannot be read).
    pub(crate) fn file(&mut self, file: &str) -> &[String] {
        self.0.entry(file.to_owned()).or_insert_with(|| {
            std::fs::read(file)
                .map(|bytes| {
                    String::from_utf8_lossy(&bytes)
                        .lines()
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Line `line` (1-based) of `file`, or `None` past its end or when it cannot be read.
    pub(crate) fn line(&mut self, file: &str, line: usize) -> Option<String> {
        self.file(file).get(line.checked_sub(1)?).cloned()
    }
}
