//! What Tab offers at the session prompt: slash commands, `/model` names, and paths.
//!
//! The line editor asks for candidates for the word before the cursor; this module
//! decides what that word is and lists what could finish it:
//!
//! - a line that starts with `/` and has no space yet: the command names, read from
//!   [`COMMANDS`] (the one list of the commands), with a space after those that take an
//!   argument (`/mo` becomes `/model `);
//! - the word after `/model `: the names the server lists (`/api/tags`), asked once, on the
//!   first Tab that needs them, within [`MODEL_NAMES_LIMIT`]; a server that does not
//!   answer in time completes nothing, and is not asked again this session;
//! - any other word after a space, on a line for the model: a path, relative to the
//!   working directory, listed from one directory read. A directory outside the project
//!   root (after resolving `..` and symlinks) is never listed, so Tab cannot show what the
//!   tools could not read; at most [`MAX_DIR_ENTRIES`] entries are read per Tab, hidden
//!   names only when the word starts with `.`, and `.git` never. The project's ignore
//!   files are not consulted: completion shows names only, never content.
//!
//! Names from the server and from the disk are shown on the terminal, so a name holding
//! a control character (an escape sequence could drive the terminal) is never offered.

use std::cell::OnceCell;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustyline::completion::Pair;

use super::commands::COMMANDS;
use crate::ollama::Client;

/// The longest a Tab after `/model ` waits for the server's list, once per session: a
/// local server answers in milliseconds, and a person pressing Tab should not wait longer
/// than a blink for a server that is not there.
pub(crate) const MODEL_NAMES_LIMIT: Duration = Duration::from_secs(1);

/// The most model names kept from the server's list: far more than anyone installs, and a
/// bound on what a misbehaving server can make the prompt hold.
pub(crate) const MAX_MODEL_NAMES: usize = 1000;

/// The most directory entries one Tab reads: a directory of thousands of files is listed
/// in part (the first entries the system returns) rather than making the prompt wait.
pub(crate) const MAX_DIR_ENTRIES: usize = 4096;

/// What completion needs to know about the session, sent once it has started.
#[derive(Debug, Clone)]
pub(crate) struct Sources {
    /// The project root, canonical: no path outside it is listed.
    pub(crate) root: PathBuf,
    /// The chat endpoint, whose server lists the model names.
    pub(crate) endpoint: String,
}

/// Completion for one session: its sources, and the model names once asked for.
#[derive(Debug)]
pub(crate) struct Completion {
    sources: Sources,
    /// The server's model names, fetched on the first Tab that needs them; empty when
    /// the server could not be asked.
    models: OnceCell<Vec<String>>,
}

/// The word Tab is asked to finish, by what it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Word<'a> {
    /// `/mo`: a command name, with its slash.
    Command(&'a str),
    /// The word after `/model `.
    Model(&'a str),
    /// A word after a space on a line for the model.
    Path(&'a str),
}

impl Completion {
    pub(crate) fn new(sources: Sources) -> Completion {
        Completion {
            sources,
            models: OnceCell::new(),
        }
    }

    /// Where the replaced word starts in `line`, and the candidates for the word that
    /// ends at byte `pos`.
    pub(crate) fn candidates(&self, line: &str, pos: usize) -> (usize, Vec<Pair>) {
        let Some(before) = line.get(..pos) else {
            return (pos, Vec::new());
        };
        let Some((word, start)) = word_at(before) else {
            return (pos, Vec::new());
        };
        let candidates = match word {
            Word::Command(typed) => commands(typed),
            Word::Model(typed) => {
                let names = self
                    .models
                    .get_or_init(|| fetch_names(&self.sources.endpoint));
                models(names, typed)
            }
            Word::Path(typed) => match std::env::current_dir() {
                Ok(cwd) => paths(&self.sources.root, &cwd, typed, MAX_DIR_ENTRIES),
                Err(_) => Vec::new(),
            },
        };
        (start, candidates)
    }
}

/// The word that ends `before` (the line up to the cursor), and where it starts, when Tab
/// can complete it.
fn word_at(before: &str) -> Option<(Word<'_>, usize)> {
    if let Some(rest) = before.strip_prefix('/') {
        if !rest.contains(char::is_whitespace) {
            return Some((Word::Command(before), 0));
        }
        let (name, args) = rest.split_once(char::is_whitespace)?;
        let args = args.trim_start();
        // Only the name right after `/model`; other commands take no path or name.
        if name != "model" || args.contains(char::is_whitespace) {
            return None;
        }
        return Some((Word::Model(args), before.len() - args.len()));
    }
    // After the whitespace character, whatever its width (a no-break space is two bytes).
    let (at, space) = before
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_whitespace())?;
    let start = at + space.len_utf8();
    let word = &before[start..];
    // A path quoted as people write them in prose: `src/ma or (src/ma.
    let quoted = word.starts_with(['`', '\'', '"', '(']);
    let start = start + usize::from(quoted);
    Some((Word::Path(&before[start..]), start))
}

/// The command names (and aliases) that start with `typed` (`/mo`), each with a space
/// after it when some form of the command takes an argument.
fn commands(typed: &str) -> Vec<Pair> {
    let mut names: Vec<Pair> = Vec::new();
    for slash in COMMANDS {
        for name in slash.names() {
            let full = format!("/{name}");
            if !full.starts_with(typed) || names.iter().any(|p| p.display == full) {
                continue;
            }
            let takes_argument = COMMANDS
                .iter()
                .any(|c| c.argument.is_some() && c.names().any(|n| n == name));
            let replacement = if takes_argument {
                format!("{full} ")
            } else {
                full.clone()
            };
            names.push(Pair {
                display: full,
                replacement,
            });
        }
    }
    names
}

/// The model names that start with `typed`.
fn models(names: &[String], typed: &str) -> Vec<Pair> {
    names
        .iter()
        .filter(|name| name.starts_with(typed))
        .map(|name| Pair {
            display: name.clone(),
            replacement: name.clone(),
        })
        .collect()
}

/// Asks the server at `endpoint` for its model names, within [`MODEL_NAMES_LIMIT`]; any
/// failure is an empty list. Runs on the line editor's thread, which has no runtime of its
/// own, so it builds a small one for the one request.
fn fetch_names(endpoint: &str) -> Vec<String> {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return Vec::new();
    };
    let Ok(client) = Client::new(endpoint, MODEL_NAMES_LIMIT) else {
        return Vec::new();
    };
    let listed = runtime.block_on(async {
        tokio::time::timeout(MODEL_NAMES_LIMIT, client.models(MODEL_NAMES_LIMIT)).await
    });
    match listed {
        Ok(Ok(names)) => kept_names(names),
        Ok(Err(_)) | Err(_) => Vec::new(),
    }
}

/// The names worth offering: at most [`MAX_MODEL_NAMES`], none that could drive the
/// terminal or that a space would split, sorted, each once.
fn kept_names(names: Vec<String>) -> Vec<String> {
    let mut kept: Vec<String> = names
        .into_iter()
        .filter(|name| !name.is_empty() && shows_safely(name) && !name.contains(' '))
        .take(MAX_MODEL_NAMES)
        .collect();
    kept.sort();
    kept.dedup();
    kept
}

/// Whether `name` can be shown on the terminal as it is: nothing every other view of
/// metron escapes (controls, bidirectional overrides, line separators, metron's marks).
fn shows_safely(name: &str) -> bool {
    !name
        .chars()
        .any(|c| c.is_control() || crate::display::needs_escape(c))
}

/// The entries of the directory `typed` names (relative to `cwd`) that start with its
/// last component, as replacements for the whole word (`src/ma` → `src/main.rs`, a
/// directory with a `/` after it). Nothing when that directory is not inside `root`
/// (canonical) once `..` and symlinks are resolved. At most `max_entries` entries are
/// read.
fn paths(root: &Path, cwd: &Path, typed: &str, max_entries: usize) -> Vec<Pair> {
    let (dir, prefix) = match typed.rfind('/') {
        Some(at) => typed.split_at(at + 1),
        None => ("", typed),
    };
    let Ok(listed) = std::fs::canonicalize(cwd.join(if dir.is_empty() { "." } else { dir })) else {
        return Vec::new();
    };
    if !listed.starts_with(root) {
        return Vec::new();
    }
    let Ok(entries) = std::fs::read_dir(&listed) else {
        return Vec::new();
    };
    let mut candidates: Vec<Pair> = Vec::new();
    for entry in entries.take(max_entries).flatten() {
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if !name.starts_with(prefix)
            || name == ".git"
            || (name.starts_with('.') && !prefix.starts_with('.'))
            || !shows_safely(&name)
        {
            continue;
        }
        // A symlink to a directory completes as one; listing it later is checked again.
        let is_dir = std::fs::metadata(entry.path()).is_ok_and(|m| m.is_dir());
        let slash = if is_dir { "/" } else { "" };
        candidates.push(Pair {
            display: format!("{name}{slash}"),
            replacement: format!("{dir}{name}{slash}"),
        });
    }
    candidates.sort_by(|a, b| a.display.cmp(&b.display));
    candidates
}

#[cfg(test)]
mod tests {
    use super::*;

    fn replacements(pairs: &[Pair]) -> Vec<&str> {
        pairs.iter().map(|p| p.replacement.as_str()).collect()
    }

    #[test]
    fn the_word_before_the_cursor_is_a_command_a_model_or_a_path() {
        assert_eq!(word_at("/mo"), Some((Word::Command("/mo"), 0)));
        assert_eq!(word_at("/"), Some((Word::Command("/"), 0)));
        assert_eq!(word_at("/model q"), Some((Word::Model("q"), 7)));
        assert_eq!(word_at("/model  "), Some((Word::Model(""), 8)));
        assert_eq!(word_at("/model qwen3:8b --s"), None);
        assert_eq!(word_at("/show 3"), None);
        assert_eq!(word_at("explain src/ma"), Some((Word::Path("src/ma"), 8)));
        assert_eq!(word_at("explain `src/ma"), Some((Word::Path("src/ma"), 9)));
        // Whitespace wider than a byte: a no-break space, an ideographic space.
        assert_eq!(word_at("explain\u{a0}src"), Some((Word::Path("src"), 9)));
        assert_eq!(
            word_at("説明\u{3000}src/ma"),
            Some((Word::Path("src/ma"), 9))
        );
        assert_eq!(word_at("two\nlines src"), Some((Word::Path("src"), 10)));
        // The first word of a line is not a path: paths complete after a space.
        assert_eq!(word_at("src/ma"), None);
    }

    #[test]
    fn commands_come_from_the_one_list_with_a_space_where_an_argument_follows() {
        assert_eq!(replacements(&commands("/mo")), ["/model "]);
        assert_eq!(replacements(&commands("/he")), ["/help"]);
        assert_eq!(replacements(&commands("/sh")), ["/show "]);
        assert_eq!(replacements(&commands("/q")), ["/quit"]);
        assert!(commands("/zz").is_empty());
        // Every command is offered for a lone slash, each name once.
        let all = commands("/");
        for slash in COMMANDS {
            assert!(all.iter().any(|p| p.display == format!("/{}", slash.name)));
        }
        let mut shown: Vec<&str> = all.iter().map(|p| p.display.as_str()).collect();
        let count = shown.len();
        shown.dedup();
        assert_eq!(shown.len(), count);
    }

    #[test]
    fn model_names_are_bounded_and_never_hold_a_control_character() {
        let mut names: Vec<String> = (0..MAX_MODEL_NAMES + 5)
            .map(|i| format!("m{i:05}"))
            .collect();
        names.insert(0, "evil\x1b[2Jname".to_owned());
        names.insert(0, "two words".to_owned());
        names.insert(0, "\u{202e}gnp.exe".to_owned());
        names.insert(0, "split\u{2028}line".to_owned());
        let kept = kept_names(names);
        assert_eq!(kept.len(), MAX_MODEL_NAMES);
        assert!(kept.iter().all(|n| n.starts_with('m')), "{kept:?}");
        assert_eq!(
            replacements(&models(&["qwen3:8b".into(), "llama3.1:latest".into()], "q")),
            ["qwen3:8b"]
        );
    }

    #[test]
    fn a_path_completes_inside_the_project_and_never_outside_it() {
        let outside = tempfile::tempdir().expect("tempdir");
        std::fs::write(outside.path().join("secret.txt"), "x").expect("write");
        let root = outside.path().join("project");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/main.rs"), "").expect("write");
        std::fs::write(root.join("src/.hidden"), "").expect("write");
        std::fs::write(root.join("src/bad\x1bname"), "").expect("write");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join(".gitignore"), "").expect("write");
        std::os::unix::fs::symlink(outside.path(), root.join("out")).expect("symlink");
        let root = std::fs::canonicalize(&root).expect("canonical");

        assert_eq!(
            replacements(&paths(&root, &root, "src/ma", 100)),
            ["src/main.rs"]
        );
        assert_eq!(replacements(&paths(&root, &root, "sr", 100)), ["src/"]);
        // From a subdirectory, relative to it.
        let src = root.join("src");
        assert_eq!(replacements(&paths(&root, &src, "m", 100)), ["main.rs"]);
        // Hidden names only for a word that starts with a dot, and .git never.
        assert_eq!(replacements(&paths(&root, &root, ".", 100)), [".gitignore"]);
        assert_eq!(replacements(&paths(&root, &src, "", 100)), ["main.rs"]);
        // Outside the root, by `..`, an absolute path or a symlink: nothing.
        assert!(paths(&root, &root, "../se", 100).is_empty());
        assert!(paths(&root, &src, "../../", 100).is_empty());
        let absolute = format!("{}/", outside.path().display());
        assert!(paths(&root, &root, &absolute, 100).is_empty());
        assert!(paths(&root, &root, "out/", 100).is_empty());
        // The symlink itself is a name in the project, shown as a directory.
        assert_eq!(replacements(&paths(&root, &root, "ou", 100)), ["out/"]);
        assert!(paths(&root, &root, "missing/", 100).is_empty());
    }

    #[test]
    fn one_tab_reads_at_most_max_dir_entries() {
        let root = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(root.path()).expect("canonical");
        for i in 0..MAX_DIR_ENTRIES + 1 {
            std::fs::write(root.join(format!("f{i:05}")), "").expect("write");
        }
        let offered = paths(&root, &root, "f", MAX_DIR_ENTRIES);
        assert_eq!(offered.len(), MAX_DIR_ENTRIES);
        assert_eq!(paths(&root, &root, "f", 10).len(), 10);
    }
}
