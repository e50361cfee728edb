//! Programs the repository configures: an allowlisted `cargo` that rustup swaps for a
//! binary inside the project, a `make` whose Makefile picks the shell, an `npm` whose
//! `.npmrc` picks the script shell, a `git status` whose `.git/config` names an fsmonitor.
//!
//! The allowlist names a program, and run_command makes sure that program comes from
//! outside the project. But several common programs read a file in the project that can
//! make them run something else: `rust-toolchain.toml` with `[toolchain] path = "tools"`
//! makes the rustup proxy `~/.cargo/bin/cargo` exec `tools/bin/cargo`, while the approval
//! question shows the proxy. This module finds those settings, so the question can say
//! so; it does not stop the command (see SECURITY.md, "programs the repository
//! configures"). For git, what it finds is also reset for the run ([`Configured::apply`]).
//!
//! The detection is a table with one entry per program family, and each file is read in
//! its own syntax, keys unquoted and unescaped as the program reads them: TOML keys
//! split on dots outside quotes ([`toml`]), a Makefile's logical lines with `define`,
//! prefixes, target-specific and computed names ([`make`]), npm's ini, YAML, Yarn 1's
//! `.yarnrc` and Java properties ([`lines`]), git's config ([`git`]). A listed key counts
//! wherever it stands (`target.x.runner`, `{ runner = ... }`, even under an unrelated
//! table), which errs towards warning, the safe direction for a warning. What cannot be
//! read warns by itself: a quoted key with an escape the reader does not decode, a
//! Makefile `include` or computed variable name, a git `include.path`. A file that cannot
//! be read inside the project (a symlink leading out, a directory, an unreadable file) or
//! that is larger than [`MAX_CONFIG_BYTES`] is itself a reason to warn, since the program
//! may still read it. Only the project root is looked at (and, for git, the git
//! directories it uses, its submodules' included, see [`places`]): the program runs
//! there, and the directories above it are not the repository's.

use std::ffi::OsString;
use std::path::Path;

use crate::project::{BoundaryError, Project};

mod git;
mod lines;
mod make;
mod places;
mod toml;

/// The most bytes read of one configuration file; a larger one is reported, not scanned.
pub(crate) const MAX_CONFIG_BYTES: u64 = 256 * 1024;

/// The most git settings named in warnings for one config file; the rest are counted.
const MAX_GIT_FINDINGS: usize = 8;

/// Programs that read the same configuration files, and those files.
struct Family {
    /// What the warning calls the family (`cargo`).
    name: &'static str,
    /// Program names (the last path component) that belong to it.
    programs: &'static [&'static str],
    /// Files, relative to the project root, that can choose what the program runs.
    files: &'static [ConfigFile],
}

/// One configuration file and the keys in it that name a program to run.
struct ConfigFile {
    /// The path relative to the project root.
    path: &'static str,
    /// How a key is written in it.
    syntax: Syntax,
    /// Keys whose assignment makes the program run something the repository chose.
    keys: &'static [&'static str],
    /// Tables (TOML `[name]` sections, or dotted `name.x = ...` keys) that do the same.
    tables: &'static [&'static str],
}

/// How a file writes a key, which decides how it is read.
#[derive(Clone, Copy)]
enum Syntax {
    /// TOML: dotted keys, table headers, inline tables.
    Toml,
    /// rustup's legacy `rust-toolchain`: TOML, or a bare toolchain name, which may also be
    /// a path to a toolchain directory.
    Toolchain,
    /// npm's ini (`.npmrc`): `key = value`, a double-quoted key decoded as JSON.
    Ini,
    /// A Makefile: `SHELL = ...`, `define SHELL`, `all: SHELL := ...`, `$(X) = ...`.
    Make,
    /// Yarn 1's `.yarnrc`: `yarn-path "./file.js"`.
    Spaced,
    /// YAML: `yarnPath: file.cjs`.
    Yaml,
    /// Java properties: `key=value`, `key: value`, `key value`, escapes in the key.
    Properties,
}

/// Cargo's configuration keys that name a program (`[target.*] runner/linker/ar`,
/// `[build] rustc/rustc-wrapper/rustc-workspace-wrapper/rustdoc`, credential providers,
/// `[doc] browser`), pull in another file (`include`), or pass flags that can pick one
/// (`rustflags`, `rustdocflags`: `-Clinker=./ld`, `-Clink-arg=-B./tools`). The flags warn
/// whenever they are set, not only when a value looks like a linker: a value can be split
/// across lines and tokens (`"-C",` then `"linker=./ld"`) or spelled with escapes, and
/// only keys are read here, not values.
const CARGO_KEYS: &[&str] = &[
    "rustflags",
    "rustdocflags",
    "runner",
    "linker",
    "ar",
    "rustc",
    "rustc-wrapper",
    "rustc-workspace-wrapper",
    "rustdoc",
    "credential-provider",
    "global-credential-providers",
    "browser",
    "include",
];

/// `[alias]` can turn `cargo fmt` or `cargo clippy` (external subcommands, which aliases
/// may shadow) into `cargo run`.
const CARGO_TABLES: &[&str] = &["alias"];

/// The families, one entry each. Add a program to `programs`, or a file to `files`.
const FAMILIES: &[Family] = &[
    Family {
        name: "cargo",
        programs: &[
            "cargo",
            "rustc",
            "rustdoc",
            "rustfmt",
            "cargo-fmt",
            "cargo-clippy",
            "clippy-driver",
            "cargo-miri",
            "rustup",
            "rust-analyzer",
            "rust-gdb",
            "rust-lldb",
        ],
        files: &[
            ConfigFile {
                path: "rust-toolchain.toml",
                syntax: Syntax::Toml,
                keys: &["path"],
                tables: &[],
            },
            ConfigFile {
                path: "rust-toolchain",
                syntax: Syntax::Toolchain,
                keys: &["path"],
                tables: &[],
            },
            ConfigFile {
                path: ".cargo/config.toml",
                syntax: Syntax::Toml,
                keys: CARGO_KEYS,
                tables: CARGO_TABLES,
            },
            ConfigFile {
                path: ".cargo/config",
                syntax: Syntax::Toml,
                keys: CARGO_KEYS,
                tables: CARGO_TABLES,
            },
        ],
    },
    Family {
        name: "make",
        programs: &["make", "gmake"],
        // GNU make's order; whichever exists first is read, but any of them warns.
        files: &[
            ConfigFile {
                path: "GNUmakefile",
                syntax: Syntax::Make,
                keys: &["SHELL", ".SHELLFLAGS"],
                tables: &[],
            },
            ConfigFile {
                path: "makefile",
                syntax: Syntax::Make,
                keys: &["SHELL", ".SHELLFLAGS"],
                tables: &[],
            },
            ConfigFile {
                path: "Makefile",
                syntax: Syntax::Make,
                keys: &["SHELL", ".SHELLFLAGS"],
                tables: &[],
            },
        ],
    },
    Family {
        name: "npm",
        programs: &["npm", "npx", "pnpm", "pnpx", "yarn", "yarnpkg", "corepack"],
        files: &[
            ConfigFile {
                path: ".npmrc",
                syntax: Syntax::Ini,
                // `git`, `node-gyp`: programs npm runs; `pnpmfile`: code pnpm loads;
                // `userconfig`, `globalconfig`: other files read as configuration.
                keys: &[
                    "script-shell",
                    "shell",
                    "node-options",
                    "onload-script",
                    "git",
                    "node-gyp",
                    "pnpmfile",
                    "global-pnpmfile",
                    "userconfig",
                    "globalconfig",
                ],
                tables: &[],
            },
            ConfigFile {
                path: ".yarnrc",
                syntax: Syntax::Spaced,
                keys: &["yarn-path"],
                tables: &[],
            },
            ConfigFile {
                path: ".yarnrc.yml",
                syntax: Syntax::Yaml,
                // `plugins:` lists code Yarn loads into itself.
                keys: &["yarnPath", "plugins"],
                tables: &[],
            },
        ],
    },
    Family {
        name: "gradle",
        programs: &["gradle", "gradlew"],
        files: &[ConfigFile {
            path: "gradle.properties",
            syntax: Syntax::Properties,
            // The JVM Gradle runs on, and the JDKs its toolchains may pick.
            keys: &[
                "org.gradle.java.home",
                "org.gradle.java.installations.paths",
            ],
            tables: &[],
        }],
    },
    Family {
        name: "the Gradle wrapper",
        programs: &["gradlew"],
        files: &[ConfigFile {
            path: "gradle/wrapper/gradle-wrapper.properties",
            syntax: Syntax::Properties,
            // Which Gradle distribution `gradlew` downloads and runs.
            keys: &["distributionUrl"],
            tables: &[],
        }],
    },
];

/// The longest excerpt of a configuration line quoted in a warning.
const EXCERPT_CHARS: usize = 80;

/// What the checks found for one command: the warnings for its question, and the git
/// settings that reset, for the run, what the repository's git config set.
#[derive(Debug, Default)]
pub(crate) struct Configured {
    pub(crate) warnings: Vec<String>,
    /// `(key, value)` pairs handed to git through `GIT_CONFIG_COUNT`.
    resets: Vec<(String, String)>,
}

impl Configured {
    /// Adds the git resets to a command's environment as git's own highest-precedence
    /// configuration (`GIT_CONFIG_COUNT`, `GIT_CONFIG_KEY_<n>`, `GIT_CONFIG_VALUE_<n>`,
    /// read by git 2.31 and later, and inherited by every git the command starts), after
    /// any pairs the environment already holds (passed through by the user's config).
    pub(crate) fn apply(&self, env: &mut Vec<(OsString, OsString)>) {
        if self.resets.is_empty() {
            return;
        }
        let existing = env
            .iter()
            .rev()
            .find(|(k, _)| k == "GIT_CONFIG_COUNT")
            .and_then(|(_, v)| v.to_str()?.trim().parse::<usize>().ok())
            .unwrap_or(0);
        let mut set = |name: String, value: &str| {
            let name = OsString::from(name);
            match env.iter_mut().find(|(k, _)| *k == name) {
                Some(slot) => slot.1 = value.into(),
                None => env.push((name, value.into())),
            }
        };
        // Saturating: the count comes from the user's environment, whatever it says.
        for (i, (key, value)) in self.resets.iter().enumerate() {
            set(
                format!("GIT_CONFIG_KEY_{}", existing.saturating_add(i)),
                key,
            );
            set(
                format!("GIT_CONFIG_VALUE_{}", existing.saturating_add(i)),
                value,
            );
        }
        set(
            "GIT_CONFIG_COUNT".to_owned(),
            &existing.saturating_add(self.resets.len()).to_string(),
        );
    }
}

/// What `program` (a name or a path; its last component decides the family) reads in
/// `project` that can make it run a program the repository chose. The warning texts are
/// plain: the front end escapes them for the terminal.
///
/// git's resets apply to every command, not only to `git`: other programs run git in the
/// project too (`go build` and `go list` run `git status` to stamp the version, and so
/// do Python build backends such as setuptools-scm), and the environment reaches those
/// gits. Only a `git` command is warned about them.
pub(crate) fn check(project: &Project, program: &str) -> Configured {
    let name = program.rsplit('/').next().unwrap_or(program);
    let git = check_git(project.canonical_root());
    if name == "git" {
        return git;
    }
    let warnings = FAMILIES
        .iter()
        .filter(|f| f.programs.contains(&name))
        .flat_map(|family| {
            family
                .files
                .iter()
                .filter_map(|file| finding(project, file))
                .map(move |found| {
                    format!(
                        "this repository configures {}: {found}; approving runs a program the repository chose",
                        family.name
                    )
                })
        })
        .collect();
    Configured {
        warnings,
        resets: git.resets,
    }
}

/// The git directory's config files under `root`, each key that runs a program, and the
/// resets for those that have one.
fn check_git(root: &Path) -> Configured {
    let mut out = Configured::default();
    let warn = |text: String| format!("this repository configures git: {text}");
    let places = places::config_places(root);
    out.warnings.extend(places.problems.into_iter().map(warn));
    for place in places.files {
        let bytes = match git::read_outside(&place.path, MAX_CONFIG_BYTES) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => continue,
            Err(e) => {
                out.warnings.push(warn(format!(
                    "{} {e}, so metron did not check it",
                    place.shown
                )));
                continue;
            }
        };
        let text = String::from_utf8_lossy(&bytes);
        let mut named = 0;
        let mut more = 0;
        let parsed = git::entries(&text);
        if let Some(first) = parsed.bad_lines.first() {
            out.warnings.push(warn(format!(
                "{} line {first} is a line metron cannot read as git does ({} such lines), so a key there may run a program unchecked; look at it with `git config --list --show-origin`",
                place.shown,
                parsed.bad_lines.len()
            )));
        }
        for entry in parsed.entries {
            let Some(reset) = git::rule_for(&entry.key) else {
                continue;
            };
            let key = entry.key.dotted();
            let outcome = match reset {
                git::Reset::To(value) => {
                    // The same key in several submodules needs one reset: the environment
                    // reaches every git.
                    let pair = (key.clone(), value.to_owned());
                    if !out.resets.contains(&pair) {
                        out.resets.push(pair);
                    }
                    format!(
                        "metron resets it for this run (`{key}={value}`; git before 2.31 ignores that)"
                    )
                }
                git::Reset::ByEnvironment => {
                    "commands run with GIT_PAGER=cat, which git prefers".to_owned()
                }
                git::Reset::WarnOnly => "approving runs a program the repository chose".to_owned(),
            };
            if named == MAX_GIT_FINDINGS {
                more += 1;
                continue;
            }
            named += 1;
            out.warnings.push(warn(format!(
                "{} line {} sets `{key}`; {outcome}",
                place.shown, entry.line
            )));
        }
        if more > 0 {
            out.warnings.push(warn(format!(
                "{} sets {more} more such keys (see `git config --local --list`)",
                place.shown
            )));
        }
    }
    out
}

/// What `file` in `project` sets, if anything worth a warning.
fn finding(project: &Project, file: &ConfigFile) -> Option<String> {
    let path = project.resolve(file.path).ok()?;
    let bytes = match project.read_capped(&path, MAX_CONFIG_BYTES) {
        Ok(bytes) => bytes,
        Err(BoundaryError::NotFound(_)) => return None,
        Err(BoundaryError::TooLarge { .. }) => {
            return Some(format!(
                "{} is larger than {MAX_CONFIG_BYTES} bytes, so metron did not check it",
                file.path
            ));
        }
        Err(BoundaryError::SymlinkEscape(_)) => {
            return Some(format!(
                "{} is a symlink leading outside the project, so metron did not check it",
                file.path
            ));
        }
        Err(e) => {
            return Some(format!(
                "{} cannot be read inside the project ({e}), so metron did not check it",
                file.path
            ));
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    // A byte-order mark is not part of the first key.
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let logical = match file.syntax {
        Syntax::Make => make::logical_lines(text),
        Syntax::Properties => lines::properties_lines(text),
        _ => text
            .lines()
            .enumerate()
            .map(|(i, l)| (i + 1, l.to_owned()))
            .collect(),
    };
    logical.iter().find_map(|(number, line)| {
        let what = line_sets(line, file)?;
        Some(format!(
            "{} line {number} sets {what} ({})",
            file.path,
            excerpt(line)
        ))
    })
}

/// What `line` (a logical line) sets among `file`'s keys and tables, in words
/// (`` `runner` ``), if any.
fn line_sets(line: &str, file: &ConfigFile) -> Option<String> {
    const UNREADABLE: &str = "a key spelled with an escape, which metron cannot check";
    let listed = |key: &lines::KeyText, normalise: bool| match key {
        lines::KeyText::Unreadable => Some(UNREADABLE.to_owned()),
        lines::KeyText::Name(name) => {
            let dashed = name.replace('_', "-");
            file.keys
                .iter()
                .find(|k| **k == name || (normalise && **k == dashed))
                .map(|k| format!("`{k}`"))
        }
    };
    // npm expands `${VAR}` (and `${VAR?}`) in a key as in a value, so
    // `script${UNSET?}-shell` is `script-shell`; Yarn expands it in values, and a key
    // holding one is checked the same way rather than guessed at.
    let computed = |key: &lines::KeyText| {
        match key {
        lines::KeyText::Name(name) if name.contains("${") => Some(
            "a key whose name is computed from the environment (`${...}`), so metron did not check it"
                .to_owned(),
        ),
        _ => None,
    }
    };
    match file.syntax {
        Syntax::Toml => toml_sets(line, file),
        Syntax::Toolchain => toml_sets(line, file).or_else(|| {
            let trimmed = line.trim();
            let bare_path =
                !trimmed.starts_with(['[', '#']) && !trimmed.contains('=') && trimmed.contains('/');
            bare_path.then(|| "a toolchain by path".to_owned())
        }),
        Syntax::Ini => lines::ini(line).and_then(|k| computed(&k).or_else(|| listed(&k, true))),
        Syntax::Spaced => {
            lines::spaced(line).and_then(|k| computed(&k).or_else(|| listed(&k, false)))
        }
        Syntax::Yaml => lines::yaml(line)
            .iter()
            .find_map(|k| computed(k).or_else(|| listed(k, false))),
        Syntax::Properties => lines::properties(line).and_then(|k| listed(&k, false)),
        Syntax::Make => match make::line_sets(line, file.keys)? {
            make::Sets::Variable(name) => Some(format!("`{name}`")),
            make::Sets::Computed => Some(
                "a variable whose name is computed (it may be SHELL), so metron did not check it"
                    .to_owned(),
            ),
            make::Sets::Include(directive) => Some(format!(
                "`{directive}` of another makefile, which may set SHELL, so metron did not check it"
            )),
            make::Sets::Eval => {
                Some("an `eval`, which may set SHELL, so metron did not check it".to_owned())
            }
        },
    }
}

/// What a TOML line assigns or opens among `file`'s keys and tables: a listed key as any
/// segment of a dotted key or header, a listed table as the first segment.
fn toml_sets(line: &str, file: &ConfigFile) -> Option<String> {
    toml::keys(line).iter().find_map(|key| {
        let mut names = Vec::new();
        for segment in &key.segments {
            match segment {
                toml::Segment::Name(name) => names.push(name.as_str()),
                toml::Segment::Unreadable => {
                    return Some(
                        "a key spelled with an escape, which metron cannot check".to_owned(),
                    );
                }
            }
        }
        if let Some(k) = names.iter().find(|n| file.keys.contains(n)) {
            return Some(format!("`{k}`"));
        }
        let first = names.first()?;
        file.tables
            .iter()
            .find(|t| *t == first)
            .map(|t| format!("`[{t}]`"))
    })
}

/// The line, trimmed and clipped to [`EXCERPT_CHARS`] characters.
fn excerpt(line: &str) -> String {
    let line = line.trim();
    match line.char_indices().nth(EXCERPT_CHARS) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_owned(),
    }
}

#[cfg(test)]
mod tests;
