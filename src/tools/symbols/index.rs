//! [`SymbolIndex`]: the session's index, and the order in which a lookup visits files.
//!
//! A lookup refreshes the file list (walking the project again unless the last walk's
//! snapshot proves nothing changed), keeps the entries of files it already knows, and
//! then visits every Go and Rust file in path order, in chunks handed out to a few
//! threads. Each finished chunk is recorded; as soon as the finished prefix of chunks
//! holds more definitions than the caller's limit, the answer is known (output is sorted
//! by path and capped) and the remaining files are left for a later lookup. That keeps a name like `String`, with hundreds of definitions and
//! thousands of files mentioning it, as fast as a rare one.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};

use super::cache::{FileEntry, Query, Visit, Worker};
use super::lang::Lang;
use super::prefilter::Key;
use super::tree::{self, Snapshot};
use super::{Lookup, SymbolError, normalize_name};
use crate::project::{Project, ProjectPath};

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
}

#[derive(Debug, Default)]
struct State {
    /// The root the entries belong to; another project starts from scratch.
    root: Option<PathBuf>,
    /// Every Go and Rust file from the last walk, in walk (path) order.
    files: Vec<FileEntry>,
    /// What the last walk depended on.
    snapshot: Snapshot,
    /// Scratch space for the lookup threads, kept between lookups.
    workers: Vec<Worker>,
}

/// Counters from the last lookup, for tests and benchmarks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LookupStats {
    /// Go and Rust files in the project.
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

    /// Finds definitions named exactly `name` (a Rust `r#` prefix is ignored), at most
    /// `limit` of them, sorted by path and line.
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
        let name = normalize_name(name)?;
        // Fail on a broken grammar or query before doing any work.
        for lang in Lang::ALL {
            lang.definitions()?;
        }
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
        }

        let query = Query {
            project,
            name: &name,
            key: Key::of(&name),
        };
        let threads = thread_count();
        let state = &mut *state;
        if state.workers.len() < threads {
            state.workers.resize_with(threads, Worker::default);
        }
        let (mut definitions, unreadable, visited) = visit_in_order(
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
        definitions.sort();
        let truncated = definitions.len() > limit;
        definitions.truncate(limit);
        let lookup = Lookup {
            definitions,
            truncated,
            files: state.files.len(),
            unreadable,
        };
        Ok((lookup, stats))
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

/// How many threads a lookup uses: one per core, at most [`MAX_THREADS`]. Asked once,
/// since on Linux the answer comes from reading cgroup files.
fn thread_count() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, usize::from)
            .clamp(1, MAX_THREADS)
    })
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
                Some(entry) => entry,
                None => FileEntry::new(path, lang),
            }),
    );
}

/// What the threads share while visiting chunks.
struct Progress<I> {
    /// The chunks not yet handed out, in path order.
    chunks: I,
    /// How many chunks have been handed out.
    handed_out: usize,
    /// Results of finished chunks, by chunk index.
    done: Vec<Option<ChunkResult>>,
    /// Every chunk before this one is finished.
    prefix: usize,
    /// Definitions in the finished prefix.
    prefix_defs: usize,
    /// Set when the finished prefix settles the answer, or on an error.
    stop: bool,
    error: Option<SymbolError>,
}

/// Runs its closure when dropped during a panic.
struct OnUnwind<F: FnMut()>(F);

impl<F: FnMut()> Drop for OnUnwind<F> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.0)();
        }
    }
}

#[derive(Default)]
struct ChunkResult {
    definitions: Vec<super::Definition>,
    unreadable: usize,
    visited: usize,
}

/// Visits `files` in order on one thread per worker and returns the definitions of the
/// settled prefix (more than `limit` of them only when the rest could not matter), the
/// number of unreadable files in it, and the number of files visited.
fn visit_in_order(
    files: &mut [FileEntry],
    query: &Query<'_>,
    limit: usize,
    workers: &mut [Worker],
) -> Result<(Vec<super::Definition>, usize, usize), SymbolError> {
    let chunk_count = files.len().div_ceil(CHUNK_FILES);
    let progress = Mutex::new(Progress {
        chunks: files.chunks_mut(CHUNK_FILES).enumerate(),
        handed_out: 0,
        done: (0..chunk_count).map(|_| None).collect(),
        prefix: 0,
        prefix_defs: 0,
        stop: false,
        error: None,
    });
    // Signalled whenever the finished prefix grows or the visit stops, for threads
    // waiting at the edge of the look-ahead window.
    let advanced = Condvar::new();
    let lock = || progress.lock().unwrap_or_else(PoisonError::into_inner);

    let run = |worker: &mut Worker| {
        // A thread that panics mid-chunk never finishes it; without this the others
        // would wait at the window's edge for ever instead of letting the panic surface.
        let _unblock = OnUnwind(|| {
            lock().stop = true;
            advanced.notify_all();
        });
        loop {
            let (index, chunk) = {
                let mut shared = lock();
                while !shared.stop && shared.handed_out >= shared.prefix + LOOKAHEAD_CHUNKS {
                    shared = advanced
                        .wait(shared)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                if shared.stop {
                    return;
                }
                match shared.chunks.next() {
                    Some(next) => {
                        shared.handed_out += 1;
                        next
                    }
                    None => return,
                }
            };
            let mut result = ChunkResult::default();
            let mut error = None;
            worker.forget_dir();
            for entry in chunk.iter_mut() {
                result.visited += 1;
                match entry.visit(query, worker, &mut result.definitions) {
                    Ok(Visit::Checked | Visit::Gone) => {}
                    Ok(Visit::Unreadable) => result.unreadable += 1,
                    Err(e) => {
                        error = Some(e);
                        break;
                    }
                }
            }
            let mut shared = lock();
            if let Some(e) = error {
                shared.error = Some(e);
                shared.stop = true;
                advanced.notify_all();
                return;
            }
            if let Some(slot) = shared.done.get_mut(index) {
                *slot = Some(result);
            }
            while let Some(Some(finished)) = shared.done.get(shared.prefix) {
                let found = finished.definitions.len();
                shared.prefix_defs += found;
                shared.prefix += 1;
            }
            if shared.prefix_defs > limit {
                shared.stop = true;
            }
            advanced.notify_all();
        }
    };

    match workers {
        [] => {}
        [only] => run(only),
        [first, rest @ ..] => std::thread::scope(|scope| {
            for worker in rest.iter_mut() {
                scope.spawn(|| run(worker));
            }
            run(first);
        }),
    }

    let progress = progress
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(error) = progress.error {
        return Err(error);
    }
    let mut definitions = Vec::new();
    let (mut unreadable, mut visited) = (0, 0);
    for result in progress.done.into_iter().take(progress.prefix).flatten() {
        definitions.extend(result.definitions);
        unreadable += result.unreadable;
        visited += result.visited;
    }
    Ok((definitions, unreadable, visited))
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::{OnUnwind, SymbolIndex};
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

    #[test]
    fn the_unwind_guard_acts_only_during_a_panic() {
        let ran = AtomicBool::new(false);
        {
            let _guard = OnUnwind(|| ran.store(true, Ordering::SeqCst));
        }
        assert!(!ran.load(Ordering::SeqCst), "no panic, no action");
        let result = catch_unwind(AssertUnwindSafe(|| {
            let _guard = OnUnwind(|| ran.store(true, Ordering::SeqCst));
            panic!("a worker failed");
        }));
        assert!(result.is_err());
        assert!(ran.load(Ordering::SeqCst), "the panic ran the action");
    }
}
