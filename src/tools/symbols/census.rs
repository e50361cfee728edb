//! Which languages a project holds: whether find_symbol can answer at all (so it is
//! offered only then), and the count the doctor and `/config` show
//! (`find_symbol: Go 412 files, Rust 88; no grammar for 14 .kt files, 3 .vue files`).
//!
//! Both use the shared walk, so they see exactly the files list_files and the index see.
//! The presence check stops at the first supported file; the census stops counting after
//! [`CENSUS_CAP`] files, so neither costs more than one bounded walk.

use std::collections::HashMap;
use std::fmt::Write as _;

use super::lang::{HeaderVote, LANGS, Lang, is_header};
use crate::project::Project;
use crate::tools::walk;

/// Most files the census counts before it stops and says so.
pub(crate) const CENSUS_CAP: usize = 50_000;

/// How many kinds of uncovered files the census line names.
const UNCOVERED_SHOWN: usize = 3;

/// Extensions of source files that some language would give definitions for, so that a
/// file no grammar covers is worth naming in the census (`.md`, `.json` and the like
/// are not). Lower case; a file's extension is compared in lower case.
const SOURCE_EXTENSIONS: &[&str] = &[
    "py", "pyi", "js", "jsx", "mjs", "cjs", "ts", "tsx", "mts", "cts", "java", "kt", "kts",
    "scala", "groovy", "c", "h", "cc", "cpp", "cxx", "hpp", "hh", "hxx", "cs", "fs", "vb", "rb",
    "php", "swift", "m", "mm", "go", "rs", "zig", "nim", "d", "dart", "lua", "pl", "pm", "r", "jl",
    "sh", "bash", "zsh", "ex", "exs", "erl", "hrl", "hs", "ml", "mli", "clj", "elm", "vue",
    "svelte", "sol", "v", "sv", "vhd", "f90", "pas", "ada", "adb", "cr",
];

/// How many files past the first `.h` [`first_supported`] looks for a source file.
const HEADER_LOOKAHEAD: usize = 2000;

/// The language of the first supported file of the project's walk, if it holds one.
/// A `.h` file counts only when no other supported file follows it: what a header is
/// depends on the rest ([`HeaderVote`]). `None` when the walk cannot start (an unsafe
/// ignore file at the root): the tool's own refusal says why.
pub(crate) fn first_supported(project: &Project) -> Option<Option<Lang>> {
    let (builder, _) = walk::builder(project, None).ok()?;
    let mut header = None;
    let mut after_header = 0;
    for path in walk::files(project, builder.build()) {
        match Lang::of_path(path.as_str()) {
            Some(lang) if is_header(path.as_str()) => header = header.or(Some(lang)),
            Some(lang) => return Some(Some(lang)),
            None => {}
        }
        // A project of headers and other languages' files need not be walked whole.
        if header.is_some() {
            after_header += 1;
            if after_header > HEADER_LOOKAHEAD {
                break;
            }
        }
    }
    Some(header)
}

/// What a project's files are, by language.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Census {
    /// Files per supported language, in [`LANGS`] order (zero counts included).
    pub(crate) supported: Vec<(&'static str, usize)>,
    /// Source files no grammar covers, by extension, most first (ties by extension).
    pub(crate) uncovered: Vec<(String, usize)>,
    /// True when the count stopped at [`CENSUS_CAP`] files.
    pub(crate) capped: bool,
}

impl Census {
    /// Counts the project's files, up to [`CENSUS_CAP`]. `None` when the walk cannot start.
    pub(crate) fn of(project: &Project) -> Option<Census> {
        let (builder, _) = walk::builder(project, None).ok()?;
        let mut supported = vec![0usize; LANGS.len()];
        let mut uncovered: HashMap<String, usize> = HashMap::new();
        let mut capped = false;
        let mut vote = HeaderVote::default();
        let mut headers = Vec::new();
        for (seen, path) in walk::files(project, builder.build()).enumerate() {
            if seen == CENSUS_CAP {
                capped = true;
                break;
            }
            let path = path.as_str();
            if let Some(lang) = Lang::of_path(path) {
                vote.see(path, lang);
                if is_header(path) {
                    headers.push(lang);
                } else if let Some(count) = supported.get_mut(lang.index()) {
                    *count += 1;
                }
            } else if let Some(extension) = source_extension(path) {
                *uncovered.entry(extension).or_default() += 1;
            }
        }
        // Headers are counted once the project's other files say what they are.
        for lang in headers {
            let lang = vote.lang_of(".h", lang);
            if let Some(count) = supported.get_mut(lang.index()) {
                *count += 1;
            }
        }
        let mut uncovered: Vec<(String, usize)> = uncovered.into_iter().collect();
        uncovered.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Some(Census {
            supported: LANGS.iter().map(|l| l.name).zip(supported).collect(),
            uncovered,
            capped,
        })
    }

    /// One line: `find_symbol: Go 412 files, Rust 88; no grammar for 14 .kt files, 3 .vue
    /// files`, naming only the languages present and the few most common uncovered
    /// extensions.
    pub(crate) fn line(&self) -> String {
        let mut line = String::from("find_symbol: ");
        let present: Vec<String> = self
            .supported
            .iter()
            .filter(|&&(_, count)| count > 0)
            .enumerate()
            .map(|(at, &(name, count))| match at {
                0 => format!("{name} {}", files(count)),
                _ => format!("{name} {count}"),
            })
            .collect();
        if LANGS.is_empty() {
            line.push_str("built without grammars");
        } else if present.is_empty() {
            let _ = write!(
                line,
                "no {} files",
                super::lang::names().replace(", ", " or ")
            );
        } else {
            line.push_str(&present.join(", "));
        }
        if !self.uncovered.is_empty() {
            let shown: Vec<String> = self
                .uncovered
                .iter()
                .take(UNCOVERED_SHOWN)
                .map(|(extension, count)| {
                    format!(
                        "{count} .{extension} {}",
                        if *count == 1 { "file" } else { "files" }
                    )
                })
                .collect();
            let more = self.uncovered.len().saturating_sub(UNCOVERED_SHOWN);
            let _ = write!(line, "; no grammar for {}", shown.join(", "));
            if more > 0 {
                let _ = write!(
                    line,
                    " and {}",
                    crate::tools::count(more, "other extension", "other extensions")
                );
            }
        }
        if self.capped {
            let _ = write!(line, " (counted the first {CENSUS_CAP} files)");
        }
        line
    }
}

/// `1 file`, `412 files`.
fn files(count: usize) -> String {
    crate::tools::count(count, "file", "files")
}

/// The extension of `path`, as written, when it is a known source extension in any
/// case. Its case is kept: grammars are chosen by exact extension, so `.C` is not `.c`
/// and the census must not say a `.C` file is a `.c` one.
fn source_extension(path: &str) -> Option<String> {
    let file = path.rsplit('/').next().unwrap_or(path);
    let (stem, extension) = file.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    SOURCE_EXTENSIONS
        .contains(&extension.to_ascii_lowercase().as_str())
        .then(|| extension.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    // Its expected text or files name both default languages.
    #[cfg(all(feature = "lang-go", feature = "lang-rust"))]
    fn the_line_names_languages_present_and_the_commonest_uncovered() {
        let census = Census {
            supported: vec![("Go", 412), ("Rust", 88)],
            uncovered: vec![
                ("kt".to_owned(), 14),
                ("vue".to_owned(), 3),
                ("sh".to_owned(), 1),
                ("c".to_owned(), 1),
            ],
            capped: false,
        };
        assert_eq!(
            census.line(),
            "find_symbol: Go 412 files, Rust 88; no grammar for 14 .kt files, 3 .vue files, 1 .sh file and 1 other extension"
        );
        let none = Census {
            supported: vec![("Go", 0), ("Rust", 0)],
            uncovered: vec![("kt".to_owned(), 2)],
            capped: true,
        };
        // Every compiled-in language is named, whichever they are.
        assert_eq!(
            none.line(),
            format!(
                "find_symbol: no {} files; no grammar for 2 .kt files (counted the first 50000 files)",
                super::super::lang::names().replace(", ", " or ")
            )
        );
    }

    #[test]
    fn only_source_extensions_are_uncovered() {
        assert_eq!(source_extension("a/b.PY"), Some("PY".to_owned()));
        assert_eq!(source_extension("src/Stack.C"), Some("C".to_owned()));
        assert_eq!(source_extension("README.md"), None);
        assert_eq!(source_extension("package.json"), None);
        assert_eq!(source_extension(".bashrc"), None);
        assert_eq!(source_extension("Makefile"), None);
    }
}
