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
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use super::budget::{Budget, Halt, LOOKUP_TIME};
use super::cache::{FileEntry, Found, Query, Visit, Worker};
use super::lang::Lang;
use super::tree::{self, Snapshot};
use super::{Halted, Lookup, OTHER_CASE_NAMED, SymbolError, differs_only_in_case, parse_query};
use crate::authority::CancelToken;
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

/// The most source the warm-up parses. Parsed definitions are held for the session
/// ([`SymbolIndex::held_bytes`]), and a tree far larger than any corpus the index is
/// measured on should not have its every file parsed unasked: past this, files are
/// parsed only when a lookup needs them.
const WARM_MAX_PARSED_BYTES: usize = 256 * 1024 * 1024;

/// The longest the warm-up keeps cores busy. Every lookup yields the same answer
/// whether or not it ran, so stopping early only costs the first lookups time.
const WARM_MAX_TIME: Duration = Duration::from_secs(60);

/// A project's symbol index. Shared by reference; lookups take an internal lock, so they
/// run one at a time (each one uses several threads itself). A warm-up
/// ([`SymbolIndex::warm`]) holds the same lock only between files, and lets a waiting
/// lookup go first.
#[derive(Debug)]
pub struct SymbolIndex {
    shared: Arc<Shared>,
}

/// What the index and its warm-up thread share.
#[derive(Debug)]
struct Shared {
    /// The project the index belongs to: every entry is a file of it.
    project: Arc<Project>,
    state: Mutex<State>,
    /// Lookups waiting for the lock: a warm-up stops at its next file and lets them in.
    waiting: AtomicUsize,
    /// Raised when the index is dropped, so a warm-up stops at its next file instead of
    /// parsing for nobody.
    closed: AtomicBool,
    /// Only asked whether find_symbol can be offered (the doctor's index): finding a
    /// supported file then starts no query compile, as no lookup will wait for it.
    no_compile_ahead: bool,
}

#[derive(Debug, Default)]
struct State {
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
    /// A warm-up thread is running (a second call to `warm` starts none).
    warming: bool,
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

/// How a warm-up ended, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WarmStats {
    /// Files read (and summarised).
    pub reads: usize,
    /// Files parsed.
    pub parses: usize,
    /// Every file was parsed (false when a budget, or the index being dropped, stopped
    /// it first).
    pub complete: bool,
}

impl SymbolIndex {
    /// An empty index of `project`'s files.
    pub fn new(project: Arc<Project>) -> SymbolIndex {
        SymbolIndex::with(project, false)
    }

    /// An index that will never look anything up, only say whether the project holds a
    /// supported file: it starts no query compile in the background.
    pub(crate) fn for_availability_only(project: Arc<Project>) -> SymbolIndex {
        SymbolIndex::with(project, true)
    }

    fn with(project: Arc<Project>, no_compile_ahead: bool) -> SymbolIndex {
        SymbolIndex {
            shared: Arc::new(Shared {
                project,
                state: Mutex::new(State::default()),
                waiting: AtomicUsize::new(0),
                closed: AtomicBool::new(false),
                no_compile_ahead,
            }),
        }
    }

    /// The project the index belongs to.
    pub fn project(&self) -> &Project {
        &self.shared.project
    }

    /// Finds definitions named exactly `name` (a Rust `r#` prefix is ignored), at most
    /// `limit` of them, sorted by path and line. A qualified name (`Context.JSON`,
    /// `a::b::C`) keeps only the definitions whose scope path ends with its qualifier.
    pub fn lookup(&self, name: &str, limit: usize) -> Result<Lookup, SymbolError> {
        self.lookup_with_stats(name, limit)
            .map(|(lookup, _)| lookup)
    }

    /// [`SymbolIndex::lookup`] for a session: it stops when `cancel` is raised (Ctrl-C),
    /// as it does when [`LOOKUP_TIME`] runs out, and says so in the answer.
    pub(crate) fn lookup_until(
        &self,
        name: &str,
        limit: usize,
        cancel: &CancelToken,
    ) -> Result<Lookup, SymbolError> {
        let stop = || cancel.is_cancelled();
        let budget = Budget::until(Instant::now() + LOOKUP_TIME, &stop);
        self.lookup_within(name, limit, &budget)
            .map(|(lookup, _)| lookup)
    }

    /// [`SymbolIndex::lookup`], also saying how much work it took. Neither has a time
    /// budget: benchmarks and the differential tests parse whole trees through them.
    /// The model's lookups go through [`SymbolIndex::lookup_until`].
    pub fn lookup_with_stats(
        &self,
        name: &str,
        limit: usize,
    ) -> Result<(Lookup, LookupStats), SymbolError> {
        self.lookup_within(name, limit, &Budget::unlimited())
    }

    /// A lookup that parses only within `budget`.
    fn lookup_within(
        &self,
        name: &str,
        limit: usize,
        budget: &Budget<'_>,
    ) -> Result<(Lookup, LookupStats), SymbolError> {
        let symbol = parse_query(name)?;
        let project = &*self.shared.project;
        let mut state = self.shared.lock();
        let walk_again = refresh(&mut state, project);

        let query = Query::new(project, &symbol);
        let threads = ordered::available_threads().clamp(1, MAX_THREADS);
        let state = &mut *state;
        if state.workers.len() < threads {
            state.workers.resize_with(threads, Worker::default);
        }
        let (found, unreadable, visited, halt) = visit_in_order(
            &mut state.files,
            &query,
            limit,
            &mut state.workers[..threads],
            budget,
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
            cut,
        } = found;
        definitions.sort();
        let truncated = definitions.len() > limit;
        definitions.truncate(limit);
        let mut present = [false; super::lang::MAX_LANGS];
        for entry in &state.files {
            present[entry.lang().index()] = true;
        }
        // A plain miss: the names held that differ only in case, as a hint. A stopped
        // lookup says what it did not search instead.
        let (other_case, other_case_more) =
            if definitions.is_empty() && elsewhere == 0 && halt.is_none() {
                other_case(&state.files, &symbol.name)
            } else {
                (Vec::new(), 0)
            };
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
            cut,
            halted: halt.map(|why| Halted {
                why,
                unvisited: state.files.len().saturating_sub(visited),
            }),
            other_case,
            other_case_more,
        };
        Ok((lookup, stats))
    }

    /// Starts reading, summarising and then parsing the project's files on a thread of
    /// its own, so that lookups made later find the work done. A session calls it when
    /// it starts: the model takes seconds to reply to the first prompt, and a lookup's
    /// cost is mostly parsing, which this moves out of the model's way.
    ///
    /// It never changes an answer, only how soon it comes: a lookup that arrives first
    /// takes the index at the warm-up's next file boundary (the warm-up waits while any
    /// lookup wants it), and freshness is checked on every lookup as before. It stops at
    /// [`WARM_MAX_PARSED_BYTES`] of parsed source or after [`WARM_MAX_TIME`], and when
    /// the index is dropped. A second call while one runs starts nothing. Returns the
    /// thread's handle (its result is for tests and benchmarks), or `None` when none was
    /// started.
    pub fn warm(&self) -> Option<std::thread::JoinHandle<WarmStats>> {
        if self.shared.no_compile_ahead {
            return None;
        }
        {
            let mut state = self.shared.lock();
            if state.warming {
                return None;
            }
            state.warming = true;
        }
        let shared = Arc::clone(&self.shared);
        let spawned = std::thread::Builder::new()
            .name("symbols-warm".to_owned())
            .spawn(move || {
                let stats = shared.warm();
                shared.lock_as_warm_up().warming = false;
                stats
            });
        match spawned {
            Ok(handle) => Some(handle),
            Err(_) => {
                // No thread to be had: lookups do the work when asked, as without warm-up.
                self.shared.lock().warming = false;
                None
            }
        }
    }

    /// Whether the project holds a file find_symbol can read, from the index when it
    /// knows one, else from a walk that stops at the first. A project whose walk cannot
    /// start counts as holding one, so the tool's own refusal explains why.
    pub(crate) fn has_supported_files(&self) -> bool {
        {
            let state = self.shared.lock();
            if state.present || !state.files.is_empty() {
                return true;
            }
        }
        let first = super::census::first_supported(&self.shared.project);
        // Asked when the session's tools are chosen: the first language found starts
        // compiling now, so the model's first find_symbol call finds its query ready.
        // (After a lookup's walk, every language with an eighth of the files starts too.)
        if let Some(Some(lang)) = first
            && !self.shared.no_compile_ahead
        {
            lang.prepare();
            self.shared.lock().compiled_ahead = Some(lang);
        }
        let present = first.is_none_or(|lang| lang.is_some());
        if present {
            self.shared.lock().present = true;
        }
        present
    }

    /// Drops everything cached and walks the tree again (the REPL's `/tags`). Returns how
    /// many source files the index now knows in each language it found, in the language
    /// table's order (so `/tags` names the languages of this project, not every one
    /// compiled in); their definitions are still parsed on demand.
    pub(crate) fn rebuild(&self) -> Vec<(&'static str, usize)> {
        let mut state = self.shared.lock();
        let warming = state.warming;
        *state = State {
            warming,
            ..State::default()
        };
        let (walked, snapshot) = tree::walk(&self.shared.project);
        merge_file_list(&mut state.files, walked);
        state.snapshot = snapshot;
        let mut counts = [0usize; super::lang::MAX_LANGS];
        for entry in &state.files {
            counts[entry.lang().index()] += 1;
        }
        Lang::all()
            .filter(|lang| counts[lang.index()] > 0)
            .map(|lang| (lang.name(), counts[lang.index()]))
            .collect()
    }

    /// Forgets one file, after metron itself changed, created or removed it. (Lookups
    /// would notice anyway; this is belt and braces.) The next lookup also walks the tree
    /// again, in case the file is new.
    pub(crate) fn invalidate(&self, path: &ProjectPath) {
        let mut state = self.shared.lock();
        if let Some(entry) = state.files.iter_mut().find(|e| e.path() == path) {
            entry.forget();
        }
        state.snapshot = Snapshot::default();
    }

    /// How many files currently hold parsed definitions (for tests and benchmarks).
    pub fn parsed_files(&self) -> usize {
        self.shared
            .lock()
            .files
            .iter()
            .filter(|e| e.is_parsed())
            .count()
    }

    /// Bytes the index holds for the files it knows: for each, its path, an identifier
    /// summary of one bit per two bytes of source (at most 512 KiB; none for a file over
    /// 8 MiB, which is never indexed) and, once parsed, its definitions (16 bytes each
    /// plus their names and scope paths, each distinct scope stored once per file). So
    /// the index grows with the source it covers, never with how often it is asked:
    /// measured on the largest corpora, every file parsed, it stays under a quarter of
    /// the source's size plus 200 bytes a file (see `held_bytes_stay_within_the_rule`).
    pub fn held_bytes(&self) -> usize {
        self.shared
            .lock()
            .files
            .iter()
            .map(FileEntry::held_bytes)
            .sum()
    }

    #[cfg(test)]
    fn lock(&self) -> MutexGuard<'_, State> {
        self.shared.lock()
    }
}

impl Drop for SymbolIndex {
    /// A warm-up still running holds the shared state alive; this tells it to stop.
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::Relaxed);
    }
}

impl Shared {
    /// The state for the warm-up thread, recovering from a panic in an earlier lookup
    /// by starting afresh (a half-updated entry must not be trusted).
    fn lock_as_warm_up(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|poisoned| {
            self.state.clear_poison();
            let mut state = poisoned.into_inner();
            let warming = state.warming;
            *state = State {
                warming,
                ..State::default()
            };
            state
        })
    }

    /// The state, for anyone but the warm-up: while this waits, the warm-up gives the
    /// lock up at its next file and does not take it again until this is done, so no
    /// caller waits on a whole warm-up pass.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let state = self.lock_as_warm_up();
        self.waiting.fetch_sub(1, Ordering::SeqCst);
        state
    }

    /// Whether the warm-up should give the lock up (someone waits) or stop (the index is
    /// gone).
    fn warm_should_pause(&self) -> bool {
        self.waiting.load(Ordering::Relaxed) > 0 || self.closed.load(Ordering::Relaxed)
    }

    /// The warm-up: a first pass reads and summarises every file (what a cold lookup
    /// spends most of its reads on), a second parses them in path order (the order
    /// lookups visit them in), each pass handing the lock to any lookup that asks.
    fn warm(&self) -> WarmStats {
        let started = Instant::now();
        let mut stats = WarmStats::default();
        // A project of other languages (or a home directory) is not walked whole for
        // nothing: the census stops at the first supported file. Nor is one whose walk
        // cannot start (an unsafe ignore file at the root); find_symbol says why.
        match super::census::first_supported(&self.project) {
            Some(Some(_)) => {}
            Some(None) => {
                stats.complete = true;
                return stats;
            }
            None => return stats,
        }
        {
            let mut state = self.lock_as_warm_up();
            refresh(&mut state, &self.project);
        }
        for parse in [false, true] {
            match self.warm_pass(parse, started, &mut stats) {
                Ok(true) => {}
                Ok(false) | Err(_) => return stats,
            }
        }
        stats.complete = true;
        stats
    }

    /// One warm-up pass over every file; true when it reached the end. A file that fails
    /// to parse is left to the lookup that needs it, which reports the error.
    fn warm_pass(
        &self,
        parse: bool,
        started: Instant,
        stats: &mut WarmStats,
    ) -> Result<bool, SymbolError> {
        let project = &*self.project;
        let query = Query::warm(project, parse);
        let threads = ordered::available_threads().clamp(1, MAX_THREADS);
        let mut next = 0;
        // Bytes of source the pass may still parse.
        let budget = AtomicUsize::new(if parse {
            WARM_MAX_PARSED_BYTES
        } else {
            usize::MAX
        });
        loop {
            // Let waiting lookups in first: they take the lock as soon as it is free.
            while self.waiting.load(Ordering::SeqCst) > 0 {
                if self.closed.load(Ordering::Relaxed) {
                    return Ok(false);
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            if self.closed.load(Ordering::Relaxed) || started.elapsed() > WARM_MAX_TIME {
                return Ok(false);
            }
            let mut state = self.lock_as_warm_up();
            let state = &mut *state;
            if next >= state.files.len() {
                return Ok(true);
            }
            if state.workers.len() < threads {
                state.workers.resize_with(threads, Worker::default);
            }
            let pause = || self.warm_should_pause();
            let time = Budget::until(started + WARM_MAX_TIME, &pause);
            let (done, finished) = warm_in_order(
                &mut state.files[next..],
                &query,
                &mut state.workers[..threads],
                &budget,
                &time,
            )?;
            next += done;
            for worker in &mut state.workers[..threads] {
                stats.reads += std::mem::take(&mut worker.reads);
                stats.parses += std::mem::take(&mut worker.parses);
                worker.trim();
            }
            if parse && budget.load(Ordering::Relaxed) == 0 {
                return Ok(false);
            }
            if finished {
                return Ok(true);
            }
        }
    }
}

/// The names among the definitions already parsed in `files` that are `wanted` with other
/// capitals, each with its count of definitions: at most [`OTHER_CASE_NAMED`] in sorted
/// order, and how many more there are. Reads only what the index holds in memory.
fn other_case(files: &[FileEntry], wanted: &str) -> (Vec<(String, usize)>, usize) {
    let mut names: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for defs in files.iter().filter_map(FileEntry::parsed) {
        for def in defs.iter() {
            if differs_only_in_case(def.name, wanted) {
                *names.entry(def.name).or_default() += 1;
            }
        }
    }
    let more = names.len().saturating_sub(OTHER_CASE_NAMED);
    let named = names
        .into_iter()
        .take(OTHER_CASE_NAMED)
        .map(|(name, count)| (name.to_owned(), count))
        .collect();
    (named, more)
}

/// Brings the file list up to date: walks the project again unless the last walk's
/// snapshot proves nothing changed, keeping what is known of files still there. Returns
/// whether it walked.
fn refresh(state: &mut State, project: &Project) -> bool {
    if state.snapshot.unchanged(project) {
        return false;
    }
    let (walked, snapshot) = tree::walk(project);
    merge_file_list(&mut state.files, walked);
    state.snapshot = snapshot;
    // Only the languages the project holds have their queries compiled: compiling all
    // twelve costs most of a second, which a Go project should never pay.
    prepare_main_languages(&state.files);
    true
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
    /// The budget stopped the chunk before its end.
    halted: Option<Halt>,
}

/// Visits `files` in order on one thread per worker and returns the definitions of the
/// settled prefix (more than `limit` of them only when the rest could not matter), the
/// number of unreadable files in it, the number of files visited in it, and why the
/// budget stopped it, if it did (then the prefix ends with the chunk it stopped in).
fn visit_in_order(
    files: &mut [FileEntry],
    query: &Query<'_>,
    limit: usize,
    workers: &mut [Worker],
    budget: &Budget<'_>,
) -> Result<(Found, usize, usize, Option<Halt>), SymbolError> {
    let mut found = 0;
    let chunks = ordered::map(
        files.chunks_mut(CHUNK_FILES),
        workers,
        LOOKAHEAD_CHUNKS,
        |worker, chunk, _| {
            let mut result = ChunkResult::default();
            worker.forget_dir();
            for entry in chunk.iter_mut() {
                if let Some(why) = budget.check() {
                    result.halted = Some(why);
                    break;
                }
                match entry.visit(query, worker, &mut result.found, budget)? {
                    Visit::Checked | Visit::Gone => {}
                    Visit::Unreadable => result.unreadable += 1,
                    Visit::Halted => {
                        result.halted = Some(budget.check().unwrap_or(Halt::OutOfTime));
                        break;
                    }
                }
                result.visited += 1;
            }
            Ok(result)
        },
        |result| {
            found += result.found.matched.len();
            found > limit || result.halted.is_some()
        },
    )?;
    let mut found = Found::default();
    let (mut unreadable, mut visited, mut halt) = (0, 0, None);
    for result in chunks {
        found.matched.extend(result.found.matched);
        found.elsewhere += result.found.elsewhere;
        found.cut.extend(result.found.cut);
        unreadable += result.unreadable;
        visited += result.visited;
        halt = halt.or(result.halted);
    }
    Ok((found, unreadable, visited, halt))
}

/// Visits `files` in order for a warm-up on one thread per worker, until `time` says to
/// give the lock up (a lookup waits, the index is gone, the warm-up's time is up: a file
/// being parsed is then given up halfway) or the parse `budget` (bytes) runs out.
/// Returns how many files from the start were done (a later call starts there; files
/// done beyond it cost one `stat` when visited again) and whether that is all of them.
fn warm_in_order(
    files: &mut [FileEntry],
    query: &Query<'_>,
    workers: &mut [Worker],
    budget: &AtomicUsize,
    time: &Budget<'_>,
) -> Result<(usize, bool), SymbolError> {
    let total = files.len();
    let chunks = ordered::map(
        files.chunks_mut(CHUNK_FILES),
        workers,
        LOOKAHEAD_CHUNKS,
        |worker, chunk, stop| {
            let mut result = ChunkResult::default();
            let mut interrupted = false;
            worker.forget_dir();
            for entry in chunk.iter_mut() {
                if stop.requested() || time.check().is_some() || budget.load(Ordering::Relaxed) == 0
                {
                    interrupted = true;
                    break;
                }
                let before = worker.parsed_bytes;
                if entry.visit(query, worker, &mut result.found, time)? == Visit::Halted {
                    interrupted = true;
                    break;
                }
                let parsed = worker.parsed_bytes - before;
                // Saturating: the last file may overdraw the budget by its own size.
                let _ = budget.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |left| {
                    Some(left.saturating_sub(parsed))
                });
                result.visited += 1;
            }
            Ok((result.visited, interrupted))
        },
        |(_, interrupted)| *interrupted,
    )?;
    let done: usize = chunks.iter().map(|(visited, _)| visited).sum();
    Ok((done, done >= total))
}

#[cfg(all(test, feature = "lang-rust"))]
mod tests {
    use std::sync::Arc;

    use std::time::Instant;

    use super::super::budget::Budget;
    use super::SymbolIndex;
    use crate::project::Project;

    fn open(dir: &tempfile::TempDir) -> Arc<Project> {
        Arc::new(Project::open(dir.path(), false).expect("open"))
    }

    /// A miss names the definitions the index holds that differ only in capitals, and
    /// finding them costs no walk, read or parse; at most the bound are named and the
    /// rest counted.
    #[test]
    fn a_miss_names_other_capitals_from_what_is_held() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        let mut source = String::new();
        for name in ["JSON", "json", "JSon", "JsoN", "jSON", "jSoN", "jsoN"] {
            source.push_str(&format!("fn {name}() {{}}\n"));
        }
        source.push_str("fn JSON() {}\n");
        let path = dir.path().join("a.rs");
        std::fs::write(&path, &source).expect("write");
        // Out of the racy window, so a settled entry is trusted without a read.
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .expect("open");
        file.set_modified(old).expect("set mtime");
        // The directory too, after its file: a recent one makes the walk single-use.
        std::fs::File::open(dir.path())
            .and_then(|d| d.set_times(std::fs::FileTimes::new().set_modified(old)))
            .expect("set the directory's mtime");
        let index = SymbolIndex::new(open(&dir));
        // Parses the file: it holds the identifier `JSON`.
        let found = index.lookup("JSON", 10).expect("lookup");
        assert_eq!(found.definitions.len(), 2);
        assert!(found.other_case.is_empty(), "a hit needs no hint");
        let (missed, stats) = index.lookup_with_stats("Json", 10).expect("lookup");
        assert!(missed.definitions.is_empty());
        assert_eq!(
            (stats.walked, stats.reads, stats.parses),
            (false, 0, 0),
            "the hint costs no second walk: {stats:?}"
        );
        // Sorted, each with its count, five named and two counted.
        let named: Vec<(&str, usize)> = missed
            .other_case
            .iter()
            .map(|(name, n)| (name.as_str(), *n))
            .collect();
        assert_eq!(
            named,
            [
                ("JSON", 2),
                ("JSon", 1),
                ("JsoN", 1),
                ("jSON", 1),
                ("jSoN", 1)
            ]
        );
        assert_eq!(super::OTHER_CASE_NAMED, 5);
        assert_eq!(missed.other_case_more, 2);
    }

    /// `invalidate` and `rebuild` forget parsed files, and answers stay the same.
    #[test]
    fn invalidate_and_rebuild_forget_without_breaking_answers() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.rs"), "fn one() {}\n").expect("write");
        let project = open(&dir);
        let index = SymbolIndex::new(Arc::clone(&project));
        let lines = || -> Vec<(String, usize)> {
            let lookup = index.lookup("one", 10).expect("lookup");
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
        assert_eq!(
            index.rebuild(),
            [("Rust", 2)],
            "both files, none parsed yet"
        );
        assert_eq!(index.parsed_files(), 0);
        assert_eq!(lines(), [("a.rs".to_owned(), 1)]);
    }

    /// A warm-up parses every file, lookups made during or after it answer as an index
    /// without one does, and a second warm-up while one runs starts nothing.
    #[test]
    fn warm_up_parses_ahead_and_changes_no_answer() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(60);
        for i in 0..200 {
            let path = dir.path().join(format!("f{i:03}.rs"));
            std::fs::write(
                &path,
                format!("fn one{i}() {{}}\nfn shared() {{ one{i}() }}\n"),
            )
            .expect("write");
            // Out of the racy window, so a settled entry is trusted without a read.
            let file = std::fs::OpenOptions::new()
                .write(true)
                .open(&path)
                .expect("open");
            file.set_modified(old).expect("set mtime");
        }
        let project = open(&dir);
        let plain = SymbolIndex::new(Arc::clone(&project));
        let expected = plain.lookup("shared", 60).expect("lookup");

        let index = SymbolIndex::new(Arc::clone(&project));
        let handle = index.warm().expect("a warm-up starts");
        // Asked at once, the lookup may well come first: it waits at most a file.
        assert_eq!(index.lookup("shared", 60).expect("lookup"), expected);
        let stats = handle.join().expect("warm-up thread");
        assert!(stats.complete, "{stats:?}");
        assert_eq!(index.parsed_files(), 200);
        let (lookup, lookup_stats) = index.lookup_with_stats("shared", 60).expect("lookup");
        assert_eq!(lookup, expected);
        assert_eq!((lookup_stats.reads, lookup_stats.parses), (0, 0));
        assert_eq!(
            index.lookup("one7", 60).expect("lookup").definitions.len(),
            1
        );

        // One warm-up at a time; the doctor's index never warms.
        let again = SymbolIndex::new(Arc::clone(&project));
        let first = again.warm();
        assert!(first.is_some());
        assert!(again.warm().is_none(), "one is running");
        drop(first.map(std::thread::JoinHandle::join));
        assert!(SymbolIndex::for_availability_only(project).warm().is_none());
    }

    fn deep_project(files: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("temp dir");
        let depth = 20_000;
        let deep = format!(
            "{}fn target() {{}}\n{}",
            "mod a {\n".repeat(depth),
            "}\n".repeat(depth)
        );
        for i in 0..files {
            std::fs::write(dir.path().join(format!("d{i}.rs")), &deep).expect("write");
        }
        std::fs::write(dir.path().join("z.rs"), "fn target() {}\n").expect("write");
        dir
    }

    /// A stop request (Ctrl-C) ends a lookup before its first parse, and the answer
    /// says so and how many files it did not get to; nothing half-parsed is kept.
    #[test]
    fn a_stopped_lookup_says_so() {
        use super::super::{Halt, Halted};
        let dir = deep_project(2);
        let index = SymbolIndex::new(open(&dir));
        let stop = || true;
        let budget = Budget::until(Instant::now() + super::LOOKUP_TIME, &stop);
        let (lookup, stats) = index.lookup_within("target", 10, &budget).expect("lookup");
        assert_eq!(
            lookup.halted,
            Some(Halted {
                why: Halt::Stopped,
                unvisited: 3
            })
        );
        assert!(lookup.definitions.is_empty());
        assert_eq!((stats.parses, index.parsed_files()), (0, 0));
    }

    /// A lookup out of time answers with what it has and says so; asked again with
    /// time, it finds everything, the deep files marked cut.
    #[test]
    fn a_lookup_out_of_time_says_so_and_a_later_one_goes_on() {
        use super::super::{Cut, Halt};
        let dir = deep_project(2);
        let index = SymbolIndex::new(open(&dir));
        let go_on = || false;
        let budget = Budget::until(Instant::now(), &go_on);
        let (lookup, _) = index.lookup_within("target", 10, &budget).expect("lookup");
        assert_eq!(lookup.halted.map(|h| h.why), Some(Halt::OutOfTime));
        let lookup = index.lookup("target", 10).expect("lookup");
        assert_eq!(lookup.halted, None);
        let found: Vec<&str> = lookup.definitions.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(found, ["z.rs"]);
        assert_eq!(
            lookup.cut,
            [
                ("d0.rs".to_owned(), Cut::Depth),
                ("d1.rs".to_owned(), Cut::Depth)
            ]
        );
    }

    /// The warm-up gets through pathologically nested files within its bounds.
    #[test]
    fn the_warm_up_gets_through_deep_files() {
        let dir = deep_project(3);
        let index = SymbolIndex::new(open(&dir));
        let started = std::time::Instant::now();
        let stats = index
            .warm()
            .expect("a warm-up starts")
            .join()
            .expect("warm-up thread");
        assert!(stats.complete, "{stats:?}");
        assert_eq!(index.parsed_files(), 4);
        assert!(
            started.elapsed() < super::WARM_MAX_TIME,
            "{:?}",
            started.elapsed()
        );
    }

    /// Dropping the index stops its warm-up at the next file.
    #[test]
    fn a_dropped_index_stops_warming() {
        let dir = tempfile::tempdir().expect("temp dir");
        for i in 0..400 {
            std::fs::write(
                dir.path().join(format!("f{i:03}.rs")),
                format!("fn one{i}() {{}}\n"),
            )
            .expect("write");
        }
        let index = SymbolIndex::new(open(&dir));
        let handle = index.warm().expect("a warm-up starts");
        drop(index);
        // The thread ends (it may have finished before it saw the drop).
        let stats = handle.join().expect("warm-up thread");
        assert!(stats.parses <= 400, "{stats:?}");
    }

    /// Finding a supported file starts its language's query compile for a session's
    /// index, and not for the doctor's, which never looks anything up.
    #[test]
    fn only_a_session_index_compiles_ahead() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.rs"), "fn one() {}\n").expect("write");
        let project = open(&dir);
        let session = SymbolIndex::new(Arc::clone(&project));
        assert!(session.has_supported_files());
        assert_eq!(
            session.lock().compiled_ahead.map(|lang| lang.name()),
            Some("Rust")
        );
        let doctor = SymbolIndex::for_availability_only(project);
        assert!(doctor.has_supported_files());
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
        let project = open(&dir);
        let index = SymbolIndex::new(Arc::clone(&project));
        let lookup = index.lookup("point", 10).expect("lookup");
        assert_eq!(lookup.languages, ["C"], "headers of a C project are C");
        assert_eq!(lookup.definitions.len(), 1);
        let census = super::super::census::Census::of(&project).expect("census");
        assert!(census.line().contains("C 2 files"), "{}", census.line());

        std::fs::write(dir.path().join("main.cpp"), "int main() { return 0; }\n").expect("write");
        let lookup = index.lookup("point", 10).expect("lookup");
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
