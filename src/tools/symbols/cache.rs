//! What the index remembers about one file, and the rule for when to trust it.
//!
//! An entry is trusted only while the file's [`Stamp`] (modification and change times
//! in nanoseconds, size, inode) is unchanged. That is git's index rule, and it has git's
//! hole: on a file system with a coarse clock (1–4 ms ticks on older Linux kernels, 1–2 s
//! on FAT, HFS+ and some network file systems) a file rewritten to the same size within
//! the same tick keeps its stamp. Git's answer applies here too: an entry read within
//! [`RACY_WINDOW`] of the file's modification time is "racily clean", so a fingerprint of its
//! content is kept and compared (by reading the file again) until the window has passed.
//!
//! The file is `stat`ed before anything else, then read; both go through the project
//! boundary. The `stat` is a name looked up in its directory, opened beneath the root with
//! [`Project::open_dir`] and kept while the worker stays in that directory (one `fstatat`
//! per file, as cheap as a plain `stat` by path); the read opens the file with
//! [`Project::open_walked_file`]. The stamp stored is the one taken from the open file
//! before reading, so a write during the read shows up as a changed stamp next time.

use std::hash::Hasher;
use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::budget::Budget;
use super::extract::{Cut, Extractor, FileDefs, MAX_FILE_BYTES};
use super::lang::Lang;
use super::prefilter::{Key, Summary, may_define};
use super::{Definition, SymbolError, SymbolQuery};
use crate::project::{BoundaryError, Project, ProjectDir, ProjectPath};

/// How close to its modification time a file must have been read for the stamp alone not
/// to be trusted.
pub(crate) const RACY_WINDOW: Duration = Duration::from_secs(2);

/// How many directories a worker keeps open for `stat`s.
const OPEN_DIRS: usize = 4;

/// What identifies one version of a file without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    /// Modification time, nanoseconds since the epoch.
    mtime_ns: i128,
    /// Status change time (Unix), which no user call can set back.
    ctime_ns: i128,
    /// Size in bytes.
    size: u64,
    /// Device and inode (Unix), so a file replaced by another is noticed.
    dev: u64,
    ino: u64,
}

impl Stamp {
    /// The stamp of a file's metadata.
    pub(crate) fn of(metadata: &cap_std::fs::Metadata) -> Stamp {
        use cap_std::fs::MetadataExt;
        let ns = |secs: i64, nanos: i64| i128::from(secs) * 1_000_000_000 + i128::from(nanos);
        Stamp {
            mtime_ns: ns(metadata.mtime(), metadata.mtime_nsec()),
            ctime_ns: ns(metadata.ctime(), metadata.ctime_nsec()),
            size: metadata.size(),
            dev: metadata.dev(),
            ino: metadata.ino(),
        }
    }

    /// True when a file with this stamp, read at `read_at`, might still change without
    /// its stamp changing: its modification time is within [`RACY_WINDOW`] of the read
    /// (or in the future, or unknown).
    pub(crate) fn is_racy(&self, read_at: SystemTime) -> bool {
        let Ok(read_at) = read_at.duration_since(UNIX_EPOCH) else {
            return true;
        };
        let read_at = read_at.as_nanos() as i128;
        self.mtime_ns.saturating_add(RACY_WINDOW.as_nanos() as i128) > read_at
    }
}

/// A fast in-memory fingerprint of a file's bytes, to tell whether a racily clean entry's
/// content changed. Not the recorded content hash of [`crate::tools::journal`]: it never
/// leaves this index.
fn fingerprint(bytes: &[u8]) -> u64 {
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    hasher.write(bytes);
    hasher.finish()
}

/// What is known about one version of a file.
#[derive(Debug, Clone)]
struct Indexed {
    stamp: Stamp,
    /// The content's [`fingerprint`] while the entry is racily clean; `None` once the stamp alone
    /// can be trusted.
    racy_hash: Option<u64>,
    /// Which identifiers the file contains (give or take false positives).
    summary: Summary,
    /// The file's definitions, once it has been parsed.
    defs: Option<FileDefs>,
}

impl Indexed {
    fn new(stamp: Stamp, bytes: &[u8], read_at: SystemTime) -> Indexed {
        if stamp.size > MAX_FILE_BYTES {
            // Too big to index: every lookup visits it and says it was not parsed,
            // until it changes (a silent empty summary would miss a definition there).
            return Indexed {
                stamp,
                racy_hash: None,
                summary: Summary::unknown(),
                defs: Some(FileDefs::too_large()),
            };
        }
        Indexed {
            stamp,
            racy_hash: stamp.is_racy(read_at).then(|| fingerprint(bytes)),
            summary: Summary::build(bytes),
            defs: None,
        }
    }
}

/// One source file of the project in a supported language, with whatever is known about
/// it.
#[derive(Debug, Clone)]
pub(crate) struct FileEntry {
    path: ProjectPath,
    lang: Lang,
    state: Option<Indexed>,
}

/// What became of a file during a visit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Visit {
    /// The file was checked (and read or parsed if needed).
    Checked,
    /// The file vanished since the walk listed it.
    Gone,
    /// The file exists but could not be read.
    Unreadable,
    /// The budget ran out (or a stop was asked for) while the file was parsed: nothing
    /// of the parse is kept, and the caller stops visiting.
    Halted,
}

/// Per-thread scratch space: a parser set and a read buffer.
#[derive(Debug, Default)]
pub(crate) struct Worker {
    extractor: Extractor,
    buffer: Vec<u8>,
    /// The directories of the last few files `stat`ed, open, with their paths, most
    /// recent first: the next file in one of them is a single `fstatat` in it. (Walk
    /// order interleaves a directory's files with its subdirectories', so one is not
    /// enough.)
    dirs: Vec<(String, ProjectDir)>,
    /// Files read so far.
    pub(crate) reads: usize,
    /// Files parsed so far.
    pub(crate) parses: usize,
    /// Bytes of source parsed so far (the warm-up's budget counts them).
    pub(crate) parsed_bytes: usize,
}

impl Worker {
    /// Drops an oversized read buffer so an idle index does not hold a big file's bytes,
    /// and the open directory.
    pub(crate) fn trim(&mut self) {
        if self.buffer.capacity() > 1024 * 1024 {
            self.buffer = Vec::new();
        }
        self.forget_dir();
    }

    /// Closes the directories kept open for `stat`s, so the next `stat` opens its
    /// directory afresh (one renamed or replaced meanwhile is not looked into). Called
    /// before every chunk of files, so a directory handle lives no longer than one chunk
    /// takes.
    pub(crate) fn forget_dir(&mut self) {
        self.dirs.clear();
    }

    /// Metadata of `path` without following a final symlink, through the project
    /// boundary: looked up in its directory, which stays open for the next file.
    fn stat(
        &mut self,
        project: &Project,
        path: &ProjectPath,
    ) -> std::io::Result<cap_std::fs::Metadata> {
        let (parent, name) = path
            .as_str()
            .rsplit_once('/')
            .unwrap_or(("", path.as_str()));
        match self.dirs.iter().position(|(open, _)| open == parent) {
            Some(0) => {}
            Some(at) => self.dirs[..=at].rotate_right(1),
            None => {
                self.dirs.truncate(OPEN_DIRS - 1);
                self.dirs
                    .insert(0, (parent.to_owned(), project.open_dir(parent)?));
            }
        }
        match self.dirs.first() {
            Some((_, dir)) => dir.symlink_metadata(name),
            None => Err(std::io::ErrorKind::NotFound.into()),
        }
    }
}

/// What a visit is for, and where.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Query<'a> {
    /// The project, for reading and `stat`ing through its boundary.
    pub(crate) project: &'a Project,
    /// What to do with the file once its entry is up to date.
    purpose: Purpose<'a>,
}

/// What a visit does with a file whose entry is up to date.
#[derive(Debug, Clone, Copy)]
enum Purpose<'a> {
    /// A lookup: parse the file if it may contain the name, and collect its definitions.
    Lookup {
        /// The normalised name and its qualifier.
        symbol: &'a SymbolQuery,
        /// The name's prefilter key.
        key: Option<Key>,
    },
    /// The warm-up's first pass: read and summarise the file, parse nothing.
    Summarize,
    /// The warm-up's second pass: parse the file, collect nothing.
    Parse,
}

impl<'a> Query<'a> {
    /// A lookup of `symbol` in `project`, with its key worked out once.
    pub(crate) fn new(project: &'a Project, symbol: &'a SymbolQuery) -> Query<'a> {
        Query {
            project,
            purpose: Purpose::Lookup {
                symbol,
                key: Key::of(&symbol.name),
            },
        }
    }

    /// A warm-up visit: bring entries up to date and, when `parse`, parse them too, so a
    /// later lookup finds the work done.
    pub(crate) fn warm(project: &'a Project, parse: bool) -> Query<'a> {
        Query {
            project,
            purpose: if parse {
                Purpose::Parse
            } else {
                Purpose::Summarize
            },
        }
    }
}

/// What a visit found: the definitions in the query's scope go to `matched`; those of
/// the same name elsewhere are only counted, so a qualified miss can point at them.
#[derive(Debug, Default)]
pub(crate) struct Found {
    /// Definitions of the name in the qualifier's scope.
    pub(crate) matched: Vec<Definition>,
    /// Definitions of the name outside it.
    pub(crate) elsewhere: usize,
    /// Files that may hold the name but are indexed only in part, and why.
    pub(crate) cut: Vec<(String, Cut)>,
}

impl FileEntry {
    /// An entry for a file that has not been read yet.
    pub(crate) fn new(path: ProjectPath, lang: Lang) -> FileEntry {
        FileEntry {
            path,
            lang,
            state: None,
        }
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &ProjectPath {
        &self.path
    }

    /// The file's language.
    pub(crate) fn lang(&self) -> Lang {
        self.lang
    }

    /// Forgets everything read from the file.
    pub(crate) fn forget(&mut self) {
        self.state = None;
    }

    /// Brings the entry up to date with the file on disk, then adds the file's
    /// definitions of the query's name to `out`, parsing it within `budget`.
    pub(crate) fn visit(
        &mut self,
        query: &Query<'_>,
        worker: &mut Worker,
        out: &mut Found,
        budget: &Budget<'_>,
    ) -> Result<Visit, SymbolError> {
        let stamp = match worker.stat(query.project, &self.path) {
            Ok(metadata) if metadata.is_file() => Stamp::of(&metadata),
            Ok(_) => {
                self.state = None;
                return Ok(Visit::Gone);
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                self.state = None;
                return Ok(Visit::Gone);
            }
            Err(_) => {
                self.state = None;
                return Ok(Visit::Unreadable);
            }
        };

        // `holding` is true while `worker.buffer` holds the bytes `self.state` describes.
        let mut holding = false;
        let trusted = match &self.state {
            Some(indexed) => indexed.stamp == stamp && indexed.racy_hash.is_none(),
            None => false,
        };
        if !trusted {
            let racy_hash = self.state.as_ref().and_then(|s| s.racy_hash);
            let same_stamp = self.state.as_ref().is_some_and(|s| s.stamp == stamp);
            let read_at = SystemTime::now();
            let Some(read_stamp) = self.read(query, worker)? else {
                return Ok(self.unreadable_or_gone(query));
            };
            holding = true;
            let unchanged =
                same_stamp && read_stamp == stamp && racy_hash == Some(fingerprint(&worker.buffer));
            match &mut self.state {
                Some(indexed) if unchanged => {
                    // Verified by content: keep the definitions, and stop hashing once
                    // the window has passed.
                    if !stamp.is_racy(read_at) {
                        indexed.racy_hash = None;
                    }
                }
                _ => self.state = Some(Indexed::new(read_stamp, &worker.buffer, read_at)),
            }
        }

        let Some(indexed) = &self.state else {
            return Ok(Visit::Checked);
        };
        // The only test that rules a file out is the prefilter's, which is sound: a file
        // that does not contain the name's identifier cannot define it. Every other
        // candidate is parsed, so an answer is always what the grammar query finds.
        let symbol = match query.purpose {
            Purpose::Summarize => return Ok(Visit::Checked),
            Purpose::Lookup { symbol, key } => {
                if !indexed.summary.may_contain(key) {
                    return Ok(Visit::Checked);
                }
                Some(symbol)
            }
            Purpose::Parse => None,
        };
        if indexed.defs.is_none() {
            if !holding {
                let read_at = SystemTime::now();
                let Some(read_stamp) = self.read(query, worker)? else {
                    return Ok(self.unreadable_or_gone(query));
                };
                if self.state.as_ref().is_none_or(|s| s.stamp != read_stamp) {
                    // Changed since the stat a moment ago: start over with these bytes.
                    self.state = Some(Indexed::new(read_stamp, &worker.buffer, read_at));
                }
            }
            let Some(indexed) = &mut self.state else {
                return Ok(Visit::Checked);
            };
            if indexed.defs.is_none() {
                // The summary can say "maybe" for a name that is not there (and always
                // does for one without a key); the bytes are at hand, so the exact
                // test spares the parse.
                if let Some(symbol) = symbol
                    && !may_define(&worker.buffer, &symbol.name)
                {
                    return Ok(Visit::Checked);
                }
                let Some(defs) =
                    worker
                        .extractor
                        .extract_within(self.lang, &worker.buffer, budget)?
                else {
                    return Ok(Visit::Halted);
                };
                indexed.defs = Some(defs);
                worker.parses += 1;
                worker.parsed_bytes += worker.buffer.len();
            }
        }

        if let (Some(symbol), Some(defs)) =
            (symbol, self.state.as_ref().and_then(|s| s.defs.as_ref()))
        {
            self.collect(defs, symbol, out);
        }
        Ok(Visit::Checked)
    }

    /// Sorts the file's definitions of the query's name into those in its scope and the
    /// count of the rest.
    fn collect(&self, defs: &FileDefs, symbol: &SymbolQuery, out: &mut Found) {
        let spec = self.lang.spec();
        if let Some(why) = defs.cut() {
            out.cut.push((self.path.as_str().to_owned(), why));
        }
        let file_scope = match spec.file_scope_kind {
            Some(kind) if !symbol.qualifier.is_empty() => defs.file_scope(kind),
            _ => None,
        };
        for def in defs.named(&symbol.name) {
            if !symbol.in_scope(file_scope, def.scope, spec.separator) {
                out.elsewhere += 1;
                continue;
            }
            out.matched.push(Definition {
                path: self.path.as_str().to_owned(),
                line: def.line,
                name: def.name.to_owned(),
                kind: def.kind,
                scope: def.scope.to_owned(),
            });
        }
    }

    /// Reads the file through the project boundary into the worker's buffer and returns
    /// the stamp of the opened file, taken before reading. `None` when it cannot be read.
    fn read(&self, query: &Query<'_>, worker: &mut Worker) -> Result<Option<Stamp>, SymbolError> {
        worker.buffer.clear();
        worker.reads += 1;
        // The walk and the `stat` in `visit` have just seen a regular file; the one
        // `fstat` here both checks it still is one and stamps what is read.
        // The open refuses, without blocking, a FIFO or device swapped in since then.
        let Ok(opened) = query.project.open_walked_file(&self.path) else {
            return Ok(None);
        };
        let file = opened.file;
        let metadata = cap_std::fs::Metadata::from_just_metadata(opened.metadata);
        let stamp = Stamp::of(&metadata);
        if stamp.size > MAX_FILE_BYTES {
            return Ok(Some(stamp));
        }
        if file
            .take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut worker.buffer)
            .is_err()
        {
            worker.buffer.clear();
            return Ok(None);
        }
        Ok(Some(stamp))
    }

    /// After a failed read: forget the file, and tell a vanished file from a locked one.
    fn unreadable_or_gone(&mut self, query: &Query<'_>) -> Visit {
        self.state = None;
        match query.project.symlink_metadata(&self.path) {
            Err(BoundaryError::NotFound(_)) => Visit::Gone,
            _ => Visit::Unreadable,
        }
    }

    /// The file's parsed definitions, if it has been parsed. Only as fresh as the last
    /// visit: a lookup that visited the file checked it first.
    pub(crate) fn parsed(&self) -> Option<&FileDefs> {
        self.state.as_ref().and_then(|s| s.defs.as_ref())
    }

    /// True when the entry holds parsed definitions (for tests and statistics).
    pub(crate) fn is_parsed(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.defs.is_some())
    }

    /// Bytes this entry holds, itself included: the path, the summary and the parsed
    /// definitions. What the memory rule in [`super::SymbolIndex::held_bytes`] adds up.
    pub(crate) fn held_bytes(&self) -> usize {
        let indexed = self.state.as_ref().map_or(0, |state| {
            state.summary.heap_bytes() + state.defs.as_ref().map_or(0, FileDefs::heap_bytes)
        });
        std::mem::size_of::<FileEntry>() + self.path.as_str().len() + indexed
    }

    /// True when the entry is waiting for its racy window to pass.
    #[cfg(all(test, feature = "lang-go"))]
    pub(crate) fn is_racy(&self) -> bool {
        self.state.as_ref().is_some_and(|s| s.racy_hash.is_some())
    }
}

#[cfg(all(test, feature = "lang-go"))]
mod tests {
    use std::path::Path;

    use super::*;

    fn go() -> Lang {
        Lang::of_path("x.go").expect("Go is compiled in")
    }

    fn setup(files: &[(&str, &str)]) -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().expect("tempdir");
        for (name, body) in files {
            std::fs::write(dir.path().join(name), body).expect("write");
        }
        let project = Project::open(dir.path(), false).expect("open");
        (dir, project)
    }

    fn visit(entry: &mut FileEntry, project: &Project, name: &str) -> Vec<(usize, &'static str)> {
        visit_with(entry, project, name, &mut Worker::default())
    }

    fn visit_with(
        entry: &mut FileEntry,
        project: &Project,
        name: &str,
        worker: &mut Worker,
    ) -> Vec<(usize, &'static str)> {
        let symbol = super::super::parse_query(name).expect("a name");
        let query = Query::new(project, &symbol);
        let mut out = Found::default();
        assert_eq!(
            entry.visit(&query, worker, &mut out, &Budget::unlimited()),
            Ok(Visit::Checked)
        );
        out.matched.into_iter().map(|d| (d.line, d.kind)).collect()
    }

    fn set_mtime(path: &Path, mtime: SystemTime) {
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .expect("open");
        file.set_modified(mtime).expect("set mtime");
    }

    #[test]
    fn racily_clean_same_stamp_edit_is_caught_by_the_hash() {
        let (dir, project) = setup(&[("a.go", "package a\n\nfunc Foo() {}\n")]);
        let path = dir.path().join("a.go");
        // A stamp in the future is racy by the same rule as one just now, and stays so
        // however long a loaded machine takes to get to the read.
        let mtime = SystemTime::now() + std::time::Duration::from_secs(60);
        set_mtime(&path, mtime);
        let Ok(rel) = project.resolve("a.go") else {
            panic!("resolve");
        };
        let mut entry = FileEntry::new(rel, go());
        assert_eq!(visit(&mut entry, &project, "Foo"), [(3, "func")]);
        assert!(entry.is_racy(), "read within the racy window: racily clean");

        // Same size, same mtime: only ctime (and the content) differ. Pretend the clock
        // was too coarse for ctime too by copying the stored stamp over.
        std::fs::write(&path, "package a\n\nfunc Bar() {}\n").expect("rewrite");
        set_mtime(&path, mtime);
        if let (Some(indexed), Ok(meta)) = (&mut entry.state, std::fs::metadata(&path)) {
            indexed.stamp = Stamp::of(&cap_std::fs::Metadata::from_just_metadata(meta));
        }
        assert_eq!(visit(&mut entry, &project, "Foo"), []);
        assert_eq!(visit(&mut entry, &project, "Bar"), [(3, "func")]);
    }

    #[test]
    fn settled_entries_are_trusted_without_reading() {
        let (dir, project) = setup(&[("a.go", "package a\n\nfunc Foo() {}\n")]);
        let path = dir.path().join("a.go");
        set_mtime(&path, SystemTime::now() - Duration::from_secs(60));
        let Ok(rel) = project.resolve("a.go") else {
            panic!("resolve");
        };
        let mut entry = FileEntry::new(rel, go());
        let mut worker = Worker::default();
        assert_eq!(
            visit_with(&mut entry, &project, "Foo", &mut worker),
            [(3, "func")]
        );
        assert!(!entry.is_racy());
        assert!(entry.is_parsed());
        assert_eq!((worker.reads, worker.parses), (1, 1));
        // A trusted entry answers from memory, for this name and any other.
        assert_eq!(
            visit_with(&mut entry, &project, "Foo", &mut worker),
            [(3, "func")]
        );
        assert_eq!(visit_with(&mut entry, &project, "Bar", &mut worker), []);
        assert_eq!(
            visit_with(&mut entry, &project, "a", &mut worker),
            [(1, "package")]
        );
        assert_eq!((worker.reads, worker.parses), (1, 1));
    }

    #[test]
    fn oversized_files_are_skipped_and_not_read_again() {
        let mut body = String::from("package big\n\nfunc Huge() {}\n");
        let filler = "// generated table row\n";
        while body.len() as u64 <= MAX_FILE_BYTES {
            body.push_str(filler);
        }
        let (_dir, project) = setup(&[("big.go", &body)]);
        let Ok(rel) = project.resolve("big.go") else {
            panic!("resolve");
        };
        let mut entry = FileEntry::new(rel, go());
        let mut worker = Worker::default();
        assert_eq!(visit_with(&mut entry, &project, "Huge", &mut worker), []);
        assert_eq!(visit_with(&mut entry, &project, "Huge", &mut worker), []);
        assert_eq!((worker.reads, worker.parses), (1, 0));
        assert!(worker.buffer.is_empty(), "its bytes were never read");
    }

    #[test]
    fn vanished_files_are_gone() {
        let (dir, project) = setup(&[("a.go", "package a\n")]);
        let Ok(rel) = project.resolve("a.go") else {
            panic!("resolve");
        };
        let mut entry = FileEntry::new(rel, go());
        assert_eq!(visit(&mut entry, &project, "a"), [(1, "package")]);
        std::fs::remove_file(dir.path().join("a.go")).expect("remove");
        let symbol = super::super::parse_query("a").expect("a name");
        let query = Query::new(&project, &symbol);
        let mut out = Found::default();
        let result = entry.visit(
            &query,
            &mut Worker::default(),
            &mut out,
            &Budget::unlimited(),
        );
        assert_eq!(result, Ok(Visit::Gone));
        assert!(out.matched.is_empty());
    }

    #[test]
    fn stamps_see_size_and_mtime() {
        let (dir, _project) = setup(&[("a.go", "x")]);
        let path = dir.path().join("a.go");
        let of = |m| Stamp::of(&cap_std::fs::Metadata::from_just_metadata(m));
        let stamp = |p: &Path| std::fs::metadata(p).map(of).ok();
        let before = stamp(&path);
        std::fs::write(&path, "xy").expect("write");
        assert_ne!(before, stamp(&path));
        assert!(of(std::fs::metadata(&path).expect("meta")).is_racy(SystemTime::now()));
    }
}
