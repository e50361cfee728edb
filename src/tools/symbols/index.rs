//! [`SymbolIndex`]: the session's index, and the order in which a lookup visits files.
//!
//! A lookup refreshes the file list (walking the project again unless the last walk's
//! snapshot proves nothing changed), keeps the entries of files it already knows, and
//! then visits every file in a supported language in path order, in chunks handed out to a few
//! threads by [`crate::tools::ordered::map`]. Each finished chunk is recorded; as soon as
//! the finished prefix of chunks holds more definitions than the caller's limit, the
//! answer is known (output is sorted by path and capped) and the remaining files are left
//! for a later lookup. That keeps a name like `String`, with hundreds of definitions and
//! thousands of files mentioning it, as fast as a rare one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use super::cache::{FileEntry, Found, Query, Visit, Worker};
use super::lang::Lang;
use super::tree::{self, Snapshot};
use super::{Lookup, SymbolError, parse_query};
use crate::project::{Project, ProjectPath};
use crate::tools::ordered;

/// Files per chunk of work. Small enough that the early stop wastes little, large
/// enough that handing chunks out costs nothing measurable.
const CHUNK_FILES: usize = 32;

/// Most threads a lookup uses.
const MAX_THREADS: usize = 4;

/// How far past the finished prefix a chunk may be handed out, in chunks. Without a
/// bound, one thread stalled on an early chunk (descheduled on a busy machine) lets the
/// others parse the whole tree before the answer settles; with it, a capped lookup
/// parses at most this many chunks beyond the one that settles it, whatever the load.
const LOOKAHEAD_CHUNKS: usize = 2 * MAX_THREADS;

/// The session's symbol index. Shared by reference; lookups take an internal lock, so
/// they run one at a time (each one uses several threads itself).
#[derive(Debug, Default)]
pub struct SymbolIndex {
    state: Mutex<State>,
    /// Only asked whether find_symbol can be offered (the doctor's index): finding a
    /// supported file then starts no query compile, as no lookup will wait for it.
    no_compile_ahead: bool,
}

#[derive(Debug, Default)]
struct State {
    /// The root the entries belong to; another project starts from scratch.
    root: Option<PathBuf>,
    /// Every file in a supported language from the last walk, in walk (path) order.
    files: Vec<FileEntry>,
    /// What the last walk depended on.
    snapshot: Snapshot,
    /// Scratch space for the lookup threads, kept between lookups.
    workers: Vec<Worker>,
    /// The project was seen to hold a supported file: find_symbol stays offered for the
    /// session (the tool list is fixed when it starts), so this is never walked again.
    present: bool,
    /// The language whose query finding a supported file started compiling, if any (the
    /// tests check that the doctor's index starts none).
    compiled_ahead: Option<Lang>,
}

/// Counters from the last lookup, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupStats {
    /// Files in a supported language in the project.
    pub files: usize,
    /// Whether the tree was walked (false when the last walk's snapshot still held).
    pub walked: bool,
    /// Files visited (stat-checked) before the answer was known.
    pub visited: usize,
    /// Files read.
    pub reads: usize,
    /// Files parsed.
    pub parses: usize,
}

impl SymbolIndex {
    /// An empty index.
    pub fn new() -> SymbolIndex {
        SymbolIndex::default()
    }

    /// An index that will never look anything up, only say whether the project holds a
    /// supported file: it starts no query compile in the background.
    pub(crate) fn for_availability_only() -> SymbolIndex {
        SymbolIndex {
            no_compile_ahead: true,
            ..SymbolIndex::default()
        }
    }

    /// Finds definitions named exactly `name` (a Rust `r#` prefix is ignored), at most
    /// `limit` of them, sorted by path and line. A qualified name (`Context.JSON`,
    /// `a::b::C`) keeps only the definitions whose scope path ends with its qualifier.
    pub fn lookup(
        &self,
        project: &Project,
        name: &str,
        limit: usize,
    ) -> Result<Lookup, SymbolError> {
        self.lookup_with_stats(project, name, limit)
            .map(|(lookup, _)| lookup)
    }

    /// [`SymbolIndex::lookup`], also saying how much work it took.
    pub fn lookup_with_stats(
        &self,
        project: &Project,
        name: &str,
        limit: usize,
    ) -> Result<(Lookup, LookupStats), SymbolError> {
        let symbol = parse_query(name)?;
        // Only the languages the project holds have their queries compiled: compiling
        // all twelve costs most of a second, which a Go project should never pay.
        let mut state = self.lock();
        if state.root.as_deref() != Some(project.root()) {
            *state = State {
                root: Some(project.root().to_path_buf()),
                ..State::default()
            };
        }
        let walk_again = !state.snapshot.unchanged(project);
        if walk_again {
            let (walked, snapshot) = tree::walk(project);
            merge_file_list(&mut state.files, walked);
            state.snapshot = snapshot;
            prepare_main_languages(&state.files);
        }

        let query = Query::new(project, &symbol);
        let threads = ordered::available_threads().clamp(1, MAX_THREADS);
        let state = &mut *state;
        if state.workers.len() < threads {
            state.workers.resize_with(threads, Worker::default);
        }
        let (found, unreadable, visited) = visit_in_order(
            &mut state.files,
            &query,
            limit,
            &mut state.workers[..threads],
        )?;

        let mut stats = LookupStats {
            files: state.files.len(),
            walked: walk_again,
            visited,
            ..LookupStats::default()
        };
        for worker in &mut state.workers {
            stats.reads += std::mem::take(&mut worker.reads);
            stats.parses += std::mem::take(&mut worker.parses);
            worker.trim();
        }
        let Found {
            matched: mut definitions,
            elsewhere,
        } = found;
        definitions.sort();
        let truncated = definitions.len() > limit;
        definitions.truncate(limit);
        let mut present = [false; super::lang::MAX_LANGS];
        for entry in &state.files {
            present[entry.lang().index()] = true;
        }
        let lookup = Lookup {
            definitions,
            truncated,
            files: state.files.len(),
            languages: Lang::all()
                .filter(|lang| present[lang.index()])
                .map(Lang::name)
                .collect(),
            elsewhere,
            unreadable,
        };
        Ok((lookup, stats))
    }

    /// Whether the project holds a file find_symbol can read, from the index when it
    /// knows one, else from a walk that stops at the first. A project whose walk cannot
    /// start counts as holding one, so the tool's own refusal explains why.
    pub(crate) fn has_supported_files(&self, project: &Project) -> bool {
        {
            let state = self.lock();
            if state.root.as_deref() == Some(project.root())
                && (state.present || !state.files.is_empty())
            {
                return true;
            }
        }
        let first = super::census::first_supported(project);
        // Asked when the session's tools are chosen: the first language found starts
        // compiling now, so the model's first find_symbol call finds its query ready.
        // (After a lookup's walk, every language with an eighth of the files starts too.)
        if let Some(Some(lang)) = first
            && !self.no_compile_ahead
        {
            lang.prepare();
            self.lock().compiled_ahead = Some(lang);
        }
        let present = first.is_none_or(|lang| lang.is_some());
        let mut state = self.lock();
        if present && state.root.as_deref() == Some(project.root()) {
            state.present = true;
        } else if present && state.root.is_none() {
            state.root = Some(project.root().to_path_buf());
            state.present = true;
        }
        present
    }

    /// Drops everything cached and walks the tree again (the REPL's `/tags`). Returns how
    /// many source files the index now knows; their definitions are still parsed on demand.
    pub(crate) fn rebuild(&self, project: &Project) -> usize {
        let mut state = self.lock();
        *state = State {
            root: Some(project.root().to_path_buf()),
            ..State::default()
        };
        let (walked, snapshot) = tree::walk(project);
        merge_file_list(&mut state.files, walked);
        state.snapshot = snapshot;
        state.files.len()
    }

    /// Forgets one file, after metron itself changed, created or removed it. (Lookups
    /// would notice anyway; this is belt and braces.) The next lookup also walks the tree
    /// again, in case the file is new.
    pub(crate) fn invalidate(&self, path: &ProjectPath) {
        let mut state = self.lock();
        if let Some(entry) = state.files.iter_mut().find(|e| e.path() == path) {
            entry.forget();
        }
        state.snapshot = Snapshot::default();
    }

    /// How many files currently hold parsed definitions (for tests and benchmarks).
    pub fn parsed_files(&self) -> usize {
        self.lock().files.iter().filter(|e| e.is_parsed()).count()
    }

    /// Bytes the index holds for the files it knows: for each, its path, an identifier
    /// summary of one bit per two bytes of source (at most 512 KiB; none for a file over
    /// 8 MiB, which is never indexed) and, once parsed, its definitions (16 bytes each
    /// plus their names and scope paths, each distinct scope stored once per file). So
    /// the index grows with the source it covers, never with how often it is asked:
    /// measured on the largest corpora, every file parsed, it stays under a quarter of
    /// the source's size plus 200 bytes a file (see `held_bytes_stay_within_the_rule`).
    pub fn held_bytes(&self) -> usize {
        self.lock().files.iter().map(FileEntry::held_bytes).sum()
    }

    /// The state, recovering from a panic in an earlier lookup by starting afresh
    /// (a half-updated entry must not be trusted).
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| {
            self.state.clear_poison();
            let mut state = poisoned.into_inner();
            *state = State::default();
            state
        })
    }
}

/// A language with at least this share of the project's files (one in N) has its query
/// compiled in the background as soon as the walk is done.
const MAIN_LANGUAGE_SHARE: usize = 8;

/// Starts compiling, beside the reads and the prefilter, the queries of the languages
/// that hold a good share of `files` ([`MAIN_LANGUAGE_SHARE`]): those a lookup will
/// most likely parse. The others are compiled when a file of theirs is first parsed, as
/// compiling one (C++: a few hundred milliseconds of CPU) for a handful of files that may
/// never mention the name would only take a core from the lookup (on the Go tree, its C
/// headers slowed a rare name's first lookup by half).
fn prepare_main_languages(files: &[FileEntry]) {
    let mut counts = [0usize; super::lang::MAX_LANGS];
    for entry in files {
        counts[entry.lang().index()] += 1;
    }
    for lang in Lang::all() {
        let count = counts[lang.index()];
        if count > 0 && count.saturating_mul(MAIN_LANGUAGE_SHARE) >= files.len() {
            lang.prepare();
        }
    }
}

/// Replaces the file list with a fresh walk's, keeping what is known about files that
/// are still there.
fn merge_file_list(files: &mut Vec<FileEntry>, walked: Vec<(ProjectPath, Lang)>) {
    let unchanged = walked.len() == files.len()
        && walked
            .iter()
            .zip(files.iter())
            .all(|((path, _), entry)| path == entry.path());
    if unchanged {
        return;
    }
    let mut known: HashMap<ProjectPath, FileEntry> = files
        .drain(..)
        .map(|entry| (entry.path().clone(), entry))
        .collect();
    files.extend(
        walked
            .into_iter()
            .map(|(path, lang)| match known.remove(&path) {
                // A header read as C until a C++ source appeared is parsed again.
                Some(entry) if entry.lang() == lang => entry,
                _ => FileEntry::new(path, lang),
            }),
    );
}

/// What one chunk of files gave.
#[derive(Default)]
struct ChunkResult {
    found: Found,
    unreadable: usize,
    visited: usize,
}

/// Visits `files` in order on one thread per worker and returns the definitions of the
/// settled prefix (more than `limit` of them only when the rest could not matter), the
/// number of unreadable files in it, and the number of files visited in it.
fn visit_in_order(
    files: &mut [FileEntry],
    query: &Query<'_>,
    limit: usize,
    workers: &mut [Worker],
) -> Result<(Found, usize, usize), SymbolError> {
    let mut found = 0;
    let chunks = ordered::map(
        files.chunks_mut(CHUNK_FILES),
        workers,
        LOOKAHEAD_CHUNKS,
        |worker, chunk, _| {
            let mut result = ChunkResult::default();
            worker.forget_dir();
            for entry in chunk.iter_mut() {
                result.visited += 1;
                match entry.visit(query, worker, &mut result.found)? {
                    Visit::Checked | Visit::Gone => {}
                    Visit::Unreadable => result.unreadable += 1,
                }
            }
            Ok(result)
        },
        |result| {
            found += result.found.matched.len();
            found > limit
        },
    )?;
    let mut found = Found::default();
    let (mut unreadable, mut visited) = (0, 0);
    for result in chunks {
        found.matched.extend(result.found.matched);
        found.elsewhere += result.found.elsewhere;
        unreadable += result.unreadable;
        visited += result.visited;
    }
    Ok((found, unreadable, visited))
}

#[cfg(all(test, feature = "lang-rust"))]
mod tests {
    use super::SymbolIndex;
    use crate::project::Project;

    /// `invalidate` and `rebuild` forget parsed files, and answers stay the same.
    #[test]
    fn invalidate_and_rebuild_forget_without_breaking_answers() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.rs"), "fn one() {}\n").expect("write");
        let project = Project::open(dir.path(), false).expect("open");
        let index = SymbolIndex::new();
        let lines = || -> Vec<(String, usize)> {
            let lookup = index.lookup(&project, "one", 10).expect("lookup");
            lookup
                .definitions
                .iter()
                .map(|d| (d.path.clone(), d.line))
                .collect()
        };
        assert_eq!(lines(), [("a.rs".to_owned(), 1)]);
        assert_eq!(index.parsed_files(), 1);
        index.invalidate(&project.resolve("a.rs").expect("resolve"));
        assert_eq!(index.parsed_files(), 0);
        assert_eq!(lines(), [("a.rs".to_owned(), 1)]);
        std::fs::write(dir.path().join("b.rs"), "fn two() {}\n").expect("write");
        assert_eq!(index.rebuild(&project), 2, "both files, none parsed yet");
        assert_eq!(index.parsed_files(), 0);
        assert_eq!(lines(), [("a.rs".to_owned(), 1)]);
    }

    /// Finding a supported file starts its language's query compile for a session's
    /// index, and not for the doctor's, which never looks anything up.
    #[test]
    fn only_a_session_index_compiles_ahead() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.rs"), "fn one() {}\n").expect("write");
        let project = Project::open(dir.path(), false).expect("open");
        let session = SymbolIndex::new();
        assert!(session.has_supported_files(&project));
        assert_eq!(
            session.lock().compiled_ahead.map(|lang| lang.name()),
            Some("Rust")
        );
        let doctor = SymbolIndex::for_availability_only();
        assert!(doctor.has_supported_files(&project));
        assert_eq!(doctor.lock().compiled_ahead, None);
    }

    /// A project's `.h` files are C while it has C sources and no C++ ones, and C++
    /// from the walk that finds a C++ source; the census agrees.
    #[test]
    #[cfg(all(feature = "lang-c", feature = "lang-cpp"))]
    fn headers_follow_the_project() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(
            dir.path().join("point.c"),
            "int origin(void) { return 0; }\n",
        )
        .expect("write");
        std::fs::write(dir.path().join("point.h"), "struct point { int x; };\n").expect("write");
        let project = Project::open(dir.path(), false).expect("open");
        let index = SymbolIndex::new();
        let lookup = index.lookup(&project, "point", 10).expect("lookup");
        assert_eq!(lookup.languages, ["C"], "headers of a C project are C");
        assert_eq!(lookup.definitions.len(), 1);
        let census = super::super::census::Census::of(&project).expect("census");
        assert!(census.line().contains("C 2 files"), "{}", census.line());

        std::fs::write(dir.path().join("main.cpp"), "int main() { return 0; }\n").expect("write");
        let lookup = index.lookup(&project, "point", 10).expect("lookup");
        assert_eq!(
            lookup.languages,
            ["C", "C++"],
            "a C++ source makes them C++"
        );
        assert_eq!(
            lookup.definitions.len(),
            1,
            "the header is parsed again, as C++"
        );
        let census = super::super::census::Census::of(&project).expect("census");
        assert!(
            census.line().contains("C 1 file, C++ 2"),
            "{}",
            census.line()
        );
    }
}
