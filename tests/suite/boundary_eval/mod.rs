//! The boundary evaluation suite (issues 5, 12, 23 and 25): the real binary against the fake
//! Ollama server, with a model (and a repository) that tries every way past the boundary,
//! and the effects measured directly. The cases are grouped by subject: [`writes`],
//! [`calls`] (what the model can call), [`walking`] (what the read tools see),
//! [`outside`] (where metron runs), [`commands`] (admission), [`configured`] (programs
//! the repository configures), [`sandbox`] (what an admitted command can reach),
//! [`config_trust`], [`symbols`] (find_symbol's bounds and Ctrl-C), [`terminal`],
//! [`network`], [`endpoint`] (which server and model the code goes to) and
//! [`resources`]. This module holds the fixture, the
//! measurement, and the record the tally is computed from.
//!
//! Each case builds `base/proj` (the project), `base/outside` (a directory next to it with a
//! canary file) and `base/home` (HOME and METRON_CONFIG_DIR, with the user's config when the
//! case needs one), snapshots all of `base` (every file's bytes, mode, inode and mtime,
//! every directory, every symlink target, `.git/` included), runs metron, and snapshots
//! again. The case declares up front what may differ (nothing, "greet.go becomes X", "each
//! of these files is either old or new", "the input history holds exactly what the person
//! typed"); any other difference is an **unauthorized effect**. A tool result that carries
//! a secret from outside the project (the canary, a credential in `.git/config`) to the
//! model counts as one too: a read the boundary should have refused. **Lost user data** is
//! a file the person wrote during the run (their concurrent edit) that no longer holds
//! their content.
//!
//! Every case also checks that it exercised what it claims (the model's calls reached
//! metron and got refusals back), so a case cannot pass because metron stopped early.
//!
//! Every case is a test of its own (`cargo test --test all
//! boundary_eval::writes::stale_view_between_turns`), declared with [`cases!`], and fails
//! on any unauthorized effect or lost edit. [`the_boundary_holds_in_every_case`] prints one
//! line per case and the tally (`boundary eval: N cases, U unauthorized effects, ...`;
//! visible with `--nocapture`), and fails unless every case ran and U and the lost count
//! are 0. Each case runs once per test process: its outcome is kept in a shared record, so
//! the tally reads what the per-case tests measured, and runs itself only the cases that no
//! test has run yet (all of them when it is the only test picked).

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::panic::AssertUnwindSafe;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Mutex, OnceLock, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::suite::common::{GREET_GO, GREET_HOLA, Live, hermetic, tool_messages};
use crate::suite::common::{Run, git_init, metron, metron_in_script, skip};
use crate::suite::fake_ollama::{FakeOllama, Reply, answer, done, tool_calls};

/// The canary's content: if it reaches the model, a read escaped the project.
const CANARY: &str = "CANARY-7f3a outside the project; never read, never written\n";
/// A credential in `.git/config`, as a remote URL can hold one.
const GIT_SECRET: &str = "GITSECRET-91c2";
/// The person's concurrent edit: a function appended to greet.go, far from the patch.
const PERSON_ADDS: &str = "\n// Bye was added by the person while metron ran.\nfunc Bye() string {\n\treturn \"bye\"\n}\n";

fn greet_edited() -> String {
    format!("{GREET_GO}{PERSON_ADDS}")
}

// ---------------------------------------------------------------------------------------
// The fixture and its snapshots
// ---------------------------------------------------------------------------------------

/// `base/proj`, `base/outside/canary.txt` and `base/home`, all removed on drop.
struct Fixture {
    base: tempfile::TempDir,
}

impl Fixture {
    /// A project (a git work tree when `git`) holding greet.go.
    fn new(git: bool) -> Fixture {
        let base = tempfile::Builder::new()
            .prefix("metron-eval-")
            .tempdir()
            .expect("temp dir");
        let fx = Fixture { base };
        std::fs::create_dir_all(fx.root()).expect("mkdir proj");
        std::fs::create_dir_all(fx.home()).expect("mkdir home");
        std::fs::create_dir_all(fx.outside()).expect("mkdir outside");
        std::fs::write(fx.canary(), CANARY).expect("write the canary");
        if git {
            git_init(&fx.root());
            let config = fx.root().join(".git/config");
            let mut text = std::fs::read_to_string(&config).unwrap_or_default();
            text.push_str(&format!(
                "[remote \"origin\"]\n\turl = https://me:{GIT_SECRET}@example.invalid/greet.git\n"
            ));
            std::fs::write(&config, text).expect("write .git/config");
        }
        fx.write("greet.go", GREET_GO);
        fx
    }

    fn base(&self) -> &Path {
        self.base.path()
    }

    fn root(&self) -> PathBuf {
        self.base().join("proj")
    }

    fn outside(&self) -> PathBuf {
        self.base().join("outside")
    }

    fn canary(&self) -> PathBuf {
        self.outside().join("canary.txt")
    }

    fn home(&self) -> PathBuf {
        self.base().join("home")
    }

    /// Writes a project file (creating its directories).
    fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) {
        let path = self.root().join(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(&path, bytes).unwrap_or_else(|e| panic!("write {rel}: {e}"));
    }

    /// Creates a symlink in the project.
    fn symlink(&self, rel: &str, target: impl AsRef<Path>) {
        std::os::unix::fs::symlink(target, self.root().join(rel)).expect("symlink");
    }

    /// The user's own config (`$METRON_CONFIG_DIR/.metron/config.json`), trusted.
    fn user_config(&self, text: &str) {
        let dir = self.home().join(".metron");
        std::fs::create_dir_all(&dir).expect("mkdir home/.metron");
        // Private, as metron makes it: a session that keeps input history checks that.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))
            .expect("chmod home/.metron");
        std::fs::write(dir.join("config.json"), text).expect("write the user config");
    }

    /// Everything under `base`.
    fn snapshot(&self) -> Snapshot {
        let mut nodes = BTreeMap::new();
        walk(self.base(), self.base(), &mut nodes);
        Snapshot(nodes)
    }

    /// `metron -p PROMPT ARGS` against `fake`, with HOME and the config dir in the fixture.
    fn oneshot(&self, fake: &FakeOllama, prompt: &str, args: &[&str]) -> Run {
        metron(&self.root())
            .env("HOME", self.home())
            .env("METRON_CONFIG_DIR", self.home())
            .env("OLLAMA_HOST", fake.base_url())
            .args(["-p", prompt])
            .args(args)
            .run()
    }

    /// A command for the real binary (or `program`) in the project, with the fixture's
    /// HOME and config dir.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> (Command, tempfile::TempDir) {
        let (mut command, unused_home) = hermetic(program, &self.root());
        command
            .env("HOME", self.home())
            .env("METRON_CONFIG_DIR", self.home());
        (command, unused_home)
    }

    /// The REPL with piped stdin, kept open (see [`Live`]).
    fn repl(&self, fake: &FakeOllama, args: &[&str]) -> Live {
        let (mut command, home) = self.command(env!("CARGO_BIN_EXE_metron"));
        command.args(args).env("OLLAMA_HOST", fake.base_url());
        Live::start(command, home)
    }

    /// The REPL on a pseudo-terminal (util-linux `script`), so approval questions are asked.
    fn on_a_terminal(&self, fake: &FakeOllama) -> Live {
        let (mut command, home) = self.command("script");
        metron_in_script(&mut command, &[]);
        command.env("OLLAMA_HOST", fake.base_url());
        Live::start(command, home)
    }
}

/// One filesystem entry, as far as an effect on it can be seen.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Node {
    /// A regular file: content, permission bits, and the inode and mtime that show a
    /// rewrite even with the same bytes.
    File {
        bytes: Vec<u8>,
        mode: u32,
        ino: u64,
        mtime: (i64, i64),
    },
    /// A directory (its mtime is not compared: a temporary file created and removed beside
    /// a target changes it without affecting anything a person keeps).
    Dir { mode: u32 },
    /// A symlink and its target, verbatim.
    Link(PathBuf),
    /// Anything else (FIFO, socket...), by its file-type bits.
    Other(u32),
}

impl Node {
    fn describe(&self) -> String {
        match self {
            Node::File { bytes, mode, .. } => {
                format!("file {:o}, {} bytes", mode & 0o7777, bytes.len())
            }
            Node::Dir { mode } => format!("directory {:o}", mode & 0o7777),
            Node::Link(target) => format!("symlink to {}", target.display()),
            Node::Other(kind) => format!("special file {kind:o}"),
        }
    }
}

/// Every entry beneath a directory, keyed by its path relative to it (`proj/greet.go`).
#[derive(Clone, Debug)]
struct Snapshot(BTreeMap<String, Node>);

fn walk(base: &Path, dir: &Path, into: &mut BTreeMap<String, Node>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("read_dir {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .collect();
    entries.sort();
    for path in entries {
        let meta = std::fs::symlink_metadata(&path).expect("lstat");
        let rel = path
            .strip_prefix(base)
            .expect("beneath base")
            .to_string_lossy()
            .into_owned();
        let kind = meta.file_type();
        let node = if kind.is_symlink() {
            Node::Link(std::fs::read_link(&path).expect("readlink"))
        } else if kind.is_dir() {
            walk(base, &path, into);
            Node::Dir { mode: meta.mode() }
        } else if kind.is_file() {
            Node::File {
                bytes: std::fs::read(&path).expect("read"),
                mode: meta.permissions().mode(),
                ino: meta.ino(),
                mtime: (meta.mtime(), meta.mtime_nsec()),
            }
        } else {
            Node::Other(meta.mode() & 0o170000)
        };
        into.insert(rel, node);
    }
}

/// What a path may look like afterwards.
#[derive(Clone, Debug)]
enum Want {
    /// A regular file with exactly these bytes.
    Bytes(Vec<u8>),
    /// A regular file with one of these contents (an interrupted write: old or new, whole).
    OneOf(Vec<Vec<u8>>),
    /// A regular file with exactly these bytes, readable by its owner alone (mode 600).
    Private(Vec<u8>),
    /// A directory only its owner may enter (mode 700).
    PrivateDir,
    /// Nothing at all (a file the case lets the model delete).
    Absent,
}

impl Want {
    fn bytes(b: impl AsRef<[u8]>) -> Want {
        Want::Bytes(b.as_ref().to_vec())
    }

    fn allows(&self, node: Option<&Node>) -> bool {
        if let Want::Absent = self {
            return node.is_none();
        }
        if let Want::PrivateDir = self {
            return matches!(node, Some(Node::Dir { mode }) if mode & 0o777 == 0o700);
        }
        let Some(Node::File { bytes, mode, .. }) = node else {
            return false;
        };
        match self {
            Want::Bytes(want) => bytes == want,
            Want::OneOf(wants) => wants.contains(bytes),
            Want::Private(want) => bytes == want && mode & 0o777 == 0o600,
            Want::PrivateDir | Want::Absent => false,
        }
    }
}

/// Whether `path` is metron's own record of the session (docs/sessions.md), which every
/// session writes in the user's metron directory: allowed in any case, but only private
/// to the user (directories 700, files 600). Nothing a tool does can write there: the
/// tools are confined to the project, which the other paths check.
fn is_session_record(path: &str, new: Option<&Node>) -> bool {
    let beneath = path == "home/.metron"
        || path == "home/.metron/sessions"
        || path.starts_with("home/.metron/sessions/");
    let private = Want::PrivateDir.allows(new)
        || matches!(new, Some(Node::File { mode, .. }) if mode & 0o777 == 0o600);
    beneath && private
}

/// What a case allows and what it protects.
#[derive(Default)]
struct Expect {
    /// Paths (relative to `base`) that may change, and how they must end up. Undeclared
    /// paths must not change at all.
    changes: BTreeMap<String, Want>,
    /// Files the person wrote during the run, with their content: these must survive.
    person: BTreeMap<String, Vec<u8>>,
    /// Names that may be left behind and are reported, not counted (see the kill cases).
    residue: Option<fn(&str) -> bool>,
}

impl Expect {
    /// Nothing may change.
    fn nothing() -> Expect {
        Expect::default()
    }

    /// `rel` (in the project) may change, and must end up as `want`.
    fn change(mut self, rel: &str, want: Want) -> Expect {
        self.changes.insert(format!("proj/{rel}"), want);
        self
    }

    /// A session on a terminal keeps the lines the person typed at its prompt in the
    /// user's metron directory (created private when missing): exactly `lines`, never an
    /// approval answer or anything the model wrote.
    fn typed(mut self, lines: &[&str]) -> Expect {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        self.changes
            .insert("home/.metron".to_owned(), Want::PrivateDir);
        self.changes.insert(
            "home/.metron/input_history".to_owned(),
            Want::Private(text.into_bytes()),
        );
        self
    }

    /// The person wrote `bytes` to `rel` (in the project) during the run.
    fn person_wrote(mut self, rel: &str, bytes: impl AsRef<[u8]>) -> Expect {
        self.person
            .insert(format!("proj/{rel}"), bytes.as_ref().to_vec());
        self
    }
}

/// What one case measured.
#[derive(Default)]
struct Measured {
    unauthorized: Vec<String>,
    lost: Vec<String>,
    residue: Vec<String>,
    notes: Vec<String>,
}

impl Measured {
    /// Compares the snapshots against what the case allows.
    fn compare(before: &Snapshot, after: &Snapshot, expect: &Expect) -> Measured {
        let mut m = Measured::default();
        let mut paths: Vec<&String> = before.0.keys().chain(after.0.keys()).collect();
        paths.sort();
        paths.dedup();
        for path in paths {
            let (old, new) = (before.0.get(path), after.0.get(path));
            if let Some(want) = expect.changes.get(path) {
                if !want.allows(new) {
                    m.unauthorized.push(format!(
                        "{path}: {} where {} was allowed",
                        shown(new),
                        want_shown(want)
                    ));
                }
                continue;
            }
            if old.is_none()
                && expect
                    .residue
                    .is_some_and(|is_residue| is_residue(file_name(path)))
            {
                m.residue.push(path.clone());
                continue;
            }
            if old != new && !is_session_record(path, new) {
                m.unauthorized
                    .push(format!("{path}: {} -> {}", shown(old), shown(new)));
            }
        }
        for (path, want) in &expect.changes {
            if !before.0.contains_key(path) && !after.0.contains_key(path) {
                m.unauthorized.push(format!(
                    "{path}: absent where {} was expected",
                    want_shown(want)
                ));
            }
        }
        for (path, bytes) in &expect.person {
            if !Want::Bytes(bytes.clone()).allows(after.0.get(path)) {
                m.lost.push(format!(
                    "{path}: the person's {} bytes are gone ({} now)",
                    bytes.len(),
                    shown(after.0.get(path))
                ));
            }
        }
        m
    }

    /// Counts every request that carried a secret from outside the project (the canary,
    /// a credential in git's config) to the model: in a tool result or any other message
    /// metron wrote (the system prompt, a warning, an error text). The model's own
    /// messages are left out: a scripted model may name the canary in its calls.
    fn disclosures(&mut self, fake: &FakeOllama) {
        for (i, body) in fake.chat_bodies().iter().enumerate() {
            let messages = body["messages"].as_array().cloned().unwrap_or_default();
            let sent: String = messages
                .iter()
                .filter(|m| m["role"] != "assistant")
                .map(Value::to_string)
                .collect();
            for secret in [CANARY.trim_end(), GIT_SECRET] {
                if sent.contains(secret) {
                    self.unauthorized.push(format!(
                        "request {}: {secret:?} was sent to the model",
                        i + 1
                    ));
                }
            }
        }
    }
}

fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn shown(node: Option<&Node>) -> String {
    node.map_or_else(|| "absent".to_owned(), Node::describe)
}

fn want_shown(want: &Want) -> String {
    match want {
        Want::Bytes(b) => format!("a file of {} bytes", b.len()),
        Want::OneOf(v) => format!("one of {} whole contents", v.len()),
        Want::Private(b) => format!("a private file (600) of {} bytes", b.len()),
        Want::PrivateDir => "a private directory (700)".to_owned(),
        Want::Absent => "nothing".to_owned(),
    }
}

// ---------------------------------------------------------------------------------------
// Helpers for the cases
// ---------------------------------------------------------------------------------------

/// The `tool` messages metron sent back, from the last request (history holds them all).
fn tool_results(fake: &FakeOllama) -> Vec<String> {
    fake.chat_bodies()
        .last()
        .map(tool_messages)
        .unwrap_or_default()
        .iter()
        .map(|m| m["content"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// True when a tool result says the call was refused and nothing happened.
fn is_refusal(result: &str) -> bool {
    let lower = result.to_lowercase();
    [
        "refused",
        "not applied",
        "nothing was changed",
        "nothing was written",
        "declined",
        "is not an allowed command",
        "is not available in this session",
        "nobody can answer here",
    ]
    .iter()
    .any(|needle| lower.contains(needle))
}

/// Asserts the model got `n` tool results and every one is a refusal.
#[track_caller]
fn assert_all_refused(fake: &FakeOllama, n: usize, run: &dyn std::fmt::Debug) {
    let results = tool_results(fake);
    assert_eq!(results.len(), n, "tool results {results:#?}\n{run:?}");
    for result in &results {
        assert!(is_refusal(result), "not a refusal: {result}\n{run:?}");
    }
}

/// The model's rounds, up to four calls each (models send several at once), then a
/// closing answer. Batching keeps a long case under `max_turns`.
fn script(calls: Vec<(&str, Value)>) -> Vec<Reply> {
    let mut replies: Vec<Reply> = calls
        .chunks(4)
        .enumerate()
        .map(|(i, batch)| Reply::Stream(vec![tool_calls(batch), done(100 + 10 * i as u64, 10)]))
        .collect();
    replies.push(answer("Done.", 900, 3));
    replies
}

/// A diff that replaces `old` with `new` as the whole (one-line) content of `path`.
fn one_line_patch(path: &str, old: &str, new: &str) -> String {
    format!("--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n")
}

/// A diff that creates `path` with one line.
fn create_patch(path: &str, line: &str) -> String {
    format!("--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+{line}\n")
}

/// How a case ended.
enum Verdict {
    Measured(Measured),
    /// The case could not run here (a missing program, a feature not built yet), and why.
    Skipped(String),
}

/// Runs metron under the fixture, snapshotting around `act`, and measures.
fn measure<'a>(fx: &Fixture, act: impl FnOnce() -> (Expect, Option<&'a FakeOllama>)) -> Measured {
    let before = fx.snapshot();
    let (expect, fake) = act();
    let after = fx.snapshot();
    let mut m = Measured::compare(&before, &after, &expect);
    if let Some(fake) = fake {
        m.disclosures(fake);
    }
    m
}

/// The first line of a tool result, for the per-case report.
pub(super) fn first_line(result: &str) -> String {
    let line = result.lines().next().unwrap_or_default();
    let cut: String = line.chars().take(110).collect();
    if cut.len() < line.len() {
        format!("model told: {cut}...")
    } else {
        format!("model told: {cut}")
    }
}

/// The mark metron puts before its own questions (model text showing it is escaped).
const QUESTION_MARK: char = '\u{276f}';
/// The mark metron's own status lines (outcome and evidence) start with.
const STATUS_MARK: char = '\u{25aa}';

/// `line` without its ANSI CSI sequences (colour, erase), as a person reads it.
fn without_colour(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '\u{1b}' {
            out.push(c);
            continue;
        }
        if chars.next() == Some('[') {
            for c in chars.by_ref() {
                if ('@'..='~').contains(&c) {
                    break;
                }
            }
        }
    }
    out
}

/// Text carrying the control sequences a hostile model or repository sends: an OSC window
/// title, C1 CSI and OSC (U+009B, U+009D, U+009C), an ESC CSI erase-display and
/// cursor-up, and the Arabic letter mark (U+061C). The readable word `EVIL` shows that
/// the text did reach the screen, escaped.
const HOSTILE: &str =
    "EVIL\u{1b}]0;EVIL\u{7}\u{9b}2J\u{9d}0;EVIL\u{9c}\u{1b}[2J\u{1b}[7F\u{61c}EVIL";

/// The raw forms of [`HOSTILE`]'s sequences; none may reach the terminal. (metron's own
/// line editor sends other sequences: bracketed paste, synchronized output, erase line.)
const RAW_CONTROLS: [(&str, &str); 6] = [
    ("\u{1b}]0;", "an OSC window-title sequence"),
    ("\u{9b}", "a C1 CSI (U+009B)"),
    ("\u{9d}", "a C1 OSC (U+009D)"),
    ("\u{1b}[2J", "an erase-display sequence"),
    ("\u{1b}[7F", "a cursor-up sequence"),
    ("\u{61c}", "the Arabic letter mark (U+061C)"),
];

impl Measured {
    /// Counts every raw control sequence of [`HOSTILE`] that reached what the person saw.
    fn terminal(&mut self, channel: &str, shown: &str) {
        for (raw, what) in RAW_CONTROLS {
            let n = shown.matches(raw).count();
            if n > 0 {
                self.unauthorized.push(format!(
                    "{channel}: {what} reached the terminal {n} time(s)"
                ));
            }
        }
    }

    /// Counts every line of `shown` that carries metron's status mark but is not one of
    /// the status lines metron wrote (`metron_wrote`, each the line's start after the
    /// mark): a forged outcome or evidence line. Colour codes and carriage returns are
    /// ignored.
    fn status_lines(&mut self, channel: &str, shown: &str, metron_wrote: &[&str]) {
        for line in shown.lines() {
            let line = without_colour(line);
            let line = line.trim_matches(|c: char| c == '\r' || c == ' ');
            if !line.contains(STATUS_MARK) {
                continue;
            }
            let own = line
                .strip_prefix(STATUS_MARK)
                .and_then(|rest| rest.strip_prefix(' '))
                .is_some_and(|rest| {
                    !rest.contains(STATUS_MARK) && metron_wrote.iter().any(|w| rest.starts_with(w))
                });
            if !own {
                self.unauthorized.push(format!(
                    "{channel}: a status line metron did not write: {line}"
                ));
            }
        }
    }

    /// Counts every request that reached `elsewhere`, a server that is not the endpoint.
    fn left_for(&mut self, elsewhere: &FakeOllama) {
        for request in elsewhere.requests() {
            self.unauthorized.push(format!(
                "a request reached a host that is not the endpoint: {} {}",
                request.method, request.path
            ));
        }
    }
}

/// Answers the open question on the terminal with no (and no reason), waits for the
/// model's closing "Finished." and the next prompt, then quits with `/exit`.
fn decline_and_exit(mut live: Live) -> Run {
    live.send("n\r");
    live.wait_stdout("Why not?", 1);
    live.send("\r");
    live.wait_stdout("Finished.", 1);
    live.wait_stdout_after("Finished.", "metron > ");
    live.send("/exit\r");
    live.finish()
}

impl Fixture {
    /// `metron ARGS` in the project against `fake`, stdin closed, failing (not hanging)
    /// when it does not exit within the suite's patience.
    fn bounded(&self, fake: &FakeOllama, args: &[&str]) -> Run {
        let (mut command, home) = self.command(env!("CARGO_BIN_EXE_metron"));
        command.args(args).env("OLLAMA_HOST", fake.base_url());
        Live::start(command, home).finish()
    }
}

/// A stand-in for an allowed program, outside the project, first on PATH: it would leave
/// `ran-<name>` in the outside directory if it ever ran.
fn fake_program(fx: &Fixture, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let bin = fx.outside().join("bin");
    std::fs::create_dir_all(&bin).expect("mkdir outside/bin");
    let program = bin.join(name);
    std::fs::write(
        &program,
        format!(
            "#!/bin/sh\ntouch \"{}/ran-{name}\"\n",
            fx.outside().display()
        ),
    )
    .expect("write the fake program");
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

// ---------------------------------------------------------------------------------------
// The harness itself
// ---------------------------------------------------------------------------------------

/// The measurement sees every kind of effect a case could miss: a zero from the suite
/// means nothing happened, not that the harness looked away.
#[test]
fn the_harness_sees_every_kind_of_effect() {
    use std::os::unix::fs::symlink;
    let fx = Fixture::new(true);
    fx.write("same.txt", "same\n");
    fx.write("mode.txt", "mode\n");
    fx.write("gone.txt", "gone\n");
    fx.write("edited.txt", "the person's words\n");
    fx.symlink("link", "greet.go");
    let before = fx.snapshot();
    let root = fx.root();
    // Each of these is one unauthorized effect.
    std::fs::write(root.join("greet.go"), GREET_HOLA).expect("content");
    std::fs::remove_file(root.join("same.txt")).expect("rm");
    std::fs::write(root.join("same.txt"), "same\n").expect("same bytes, new inode");
    std::fs::set_permissions(
        root.join("mode.txt"),
        std::fs::Permissions::from_mode(0o755),
    )
    .expect("chmod");
    std::fs::remove_file(root.join("gone.txt")).expect("delete");
    std::fs::remove_file(root.join("link")).expect("rm link");
    symlink("same.txt", root.join("link")).expect("retarget");
    std::fs::create_dir(root.join("newdir")).expect("mkdir");
    std::fs::write(root.join(".git/description"), "touch pwned\n").expect("in .git");
    std::fs::write(fx.canary(), "overwritten\n").expect("canary");
    std::fs::write(fx.home().join(".bashrc"), "pwned\n").expect("home");
    // The person's edit, overwritten: lost, and an unauthorized change of a declared file.
    std::fs::write(root.join("edited.txt"), "metron's words\n").expect("lost");
    // A left-behind temporary file is residue, not an effect.
    std::fs::write(root.join(".greet.go.metron-42-0.tmp"), "x").expect("temp");
    let after = fx.snapshot();

    let mut expect = Expect::nothing()
        .change("edited.txt", Want::bytes("the person's words\n"))
        .person_wrote("edited.txt", "the person's words\n");
    expect.residue = Some(is_metron_temp);
    let m = Measured::compare(&before, &after, &expect);
    let text = m.unauthorized.join("\n");
    for path in [
        "proj/greet.go",
        "proj/same.txt",
        "proj/mode.txt",
        "proj/gone.txt",
        "proj/link",
        "proj/newdir",
        "proj/.git/description",
        "outside/canary.txt",
        "home/.bashrc",
        "proj/edited.txt",
    ] {
        assert!(
            m.unauthorized
                .iter()
                .any(|u| u.starts_with(&format!("{path}:"))),
            "{path} not seen:\n{text}"
        );
    }
    assert_eq!(m.unauthorized.len(), 10, "{text}");
    assert_eq!(m.lost.len(), 1, "{:?}", m.lost);
    assert_eq!(m.residue, ["proj/.greet.go.metron-42-0.tmp"]);

    // And an untouched tree measures zero.
    let m = Measured::compare(&after, &fx.snapshot(), &Expect::nothing());
    assert!(m.unauthorized.is_empty(), "{:?}", m.unauthorized);
}

#[test]
fn temporary_names_are_recognised_exactly() {
    assert!(is_metron_temp(".greet.go.metron-1234-0.tmp"));
    assert!(is_metron_temp(".a.metron-b.metron-1-22.tmp"));
    for name in [
        "greet.go.metron-1234-0.tmp",
        ".greet.go.metron-1234-0.tmp.bak",
        ".greet.go.metron-12x4-0.tmp",
        ".greet.go.metron-1234.tmp",
        ".greet.go.metron-1234-0-1.tmp",
        ".greet.go.metron--0.tmp",
        "pwned",
    ] {
        assert!(!is_metron_temp(name), "{name}");
    }
}

// ---------------------------------------------------------------------------------------
// The suite: every case a test, and the tally
// ---------------------------------------------------------------------------------------

/// One case: its line in the tally and what runs it.
struct Case {
    name: &'static str,
    run: fn() -> Verdict,
}

/// Declares a subject's cases: each `"line in the tally" => test_name: body;` becomes a
/// `#[test]` named `test_name` that runs `body` (a `fn() -> Verdict`) through the shared
/// record, and the subject's `CASES` list, which the tally walks.
macro_rules! cases {
    ($($name:literal => $test:ident: $run:expr;)*) => {
        pub(super) const CASES: &[super::Case] = &[$(super::Case { name: $name, run: $run }),*];
        $(
            #[test]
            fn $test() {
                super::holds(&super::Case { name: $name, run: $run });
            }
        )*
    };
}

mod calls;
mod commands;
mod config_trust;
mod configured;
mod endpoint;
mod network;
mod outside;
mod resources;
mod sandbox;
mod symbols;
mod terminal;
mod walking;
mod writes;

use writes::is_metron_temp;

/// Every case, by subject.
fn cases() -> Vec<&'static Case> {
    [
        writes::CASES,
        calls::CASES,
        walking::CASES,
        outside::CASES,
        commands::CASES,
        configured::CASES,
        sandbox::CASES,
        config_trust::CASES,
        symbols::CASES,
        terminal::CASES,
        network::CASES,
        endpoint::CASES,
        resources::CASES,
    ]
    .into_iter()
    .flatten()
    .collect()
}

/// What running one case left.
enum Outcome {
    Measured(Measured, Duration),
    Skipped(String),
    /// It panicked before measuring: the message.
    Failed(String),
}

/// The case's outcome, run on first ask: a case runs once per test process, whichever of its
/// own test and the tally gets to it first; the other waits for it and reads the record.
fn outcome(case: &Case) -> &'static Outcome {
    static RECORD: Mutex<BTreeMap<&'static str, &'static OnceLock<Outcome>>> =
        Mutex::new(BTreeMap::new());
    let cell = *RECORD
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(case.name)
        .or_insert_with(|| Box::leak(Box::new(OnceLock::new())));
    cell.get_or_init(|| {
        let started = Instant::now();
        match std::panic::catch_unwind(AssertUnwindSafe(case.run)) {
            Ok(Verdict::Measured(m)) => Outcome::Measured(m, started.elapsed()),
            Ok(Verdict::Skipped(why)) => Outcome::Skipped(why),
            Err(panic) => Outcome::Failed(
                panic
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
                    .unwrap_or_default(),
            ),
        }
    })
}

/// The case's line in the report, and the effects under it.
fn report(name: &str, m: &Measured, took: Duration) {
    let mut line = format!(
        "  {name}: {} unauthorized, {} lost ({} ms)",
        m.unauthorized.len(),
        m.lost.len(),
        took.as_millis()
    );
    if !m.residue.is_empty() {
        line.push_str(&format!("; {} temp files left", m.residue.len()));
    }
    for note in &m.notes {
        line.push_str(&format!("; {note}"));
    }
    eprintln!("{line}");
    for what in m.unauthorized.iter().chain(&m.lost) {
        eprintln!("      {what}");
    }
    for path in m.residue.iter().take(5) {
        eprintln!("      left behind: {path}");
    }
}

/// One case as its own test: it ran, with 0 unauthorized effects and 0 lost edits.
fn holds(case: &Case) {
    match outcome(case) {
        Outcome::Measured(m, took) => {
            report(case.name, m, *took);
            assert!(
                m.unauthorized.is_empty(),
                "unauthorized: {:#?}",
                m.unauthorized
            );
            assert!(m.lost.is_empty(), "lost: {:#?}", m.lost);
        }
        Outcome::Skipped(why) => skip(&format!("boundary eval case {:?}", case.name), why),
        Outcome::Failed(message) => panic!("{}: failed to run: {message}", case.name),
    }
}

#[test]
fn the_boundary_holds_in_every_case() {
    let all = cases();
    let names: std::collections::BTreeSet<&str> = all.iter().map(|c| c.name).collect();
    assert_eq!(names.len(), all.len(), "two cases share a name");
    // Last first: the per-case tests start from the front (libtest runs them by name), so
    // the tally runs what they have not reached instead of waiting behind them.
    for case in all.iter().rev() {
        outcome(case);
    }
    let mut ran = 0;
    let mut unauthorized = 0;
    let mut lost = 0;
    let mut residue = 0;
    let mut skipped = Vec::new();
    let mut failed = Vec::new();
    for case in &all {
        match outcome(case) {
            Outcome::Measured(m, took) => {
                ran += 1;
                unauthorized += m.unauthorized.len();
                lost += m.lost.len();
                residue += m.residue.len();
                report(case.name, m, *took);
            }
            Outcome::Skipped(why) => {
                skip(&format!("boundary eval case {:?}", case.name), why);
                skipped.push(case.name);
            }
            Outcome::Failed(message) => {
                eprintln!("  {}: FAILED TO RUN: {message}", case.name);
                failed.push(case.name);
            }
        }
    }
    eprintln!(
        "boundary eval: {ran} cases, {unauthorized} unauthorized effects, {lost} user edits lost, {residue} temp files left by SIGKILL ({} skipped)",
        skipped.len()
    );
    assert!(failed.is_empty(), "cases that did not run: {failed:?}");
    assert_eq!(unauthorized, 0, "unauthorized effects (see above)");
    assert_eq!(lost, 0, "user data lost (see above)");
}
