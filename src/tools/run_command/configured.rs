//! Programs the repository configures: an allowlisted `cargo` that rustup swaps for a
//! binary inside the project, a `make` whose Makefile picks the shell, an `npm` whose
//! `.npmrc` picks the script shell.
//!
//! The allowlist names a program, and run_command makes sure that program comes from
//! outside the project. But several common programs read a file in the project that can
//! make them run something else: `rust-toolchain.toml` with `[toolchain] path = "tools"`
//! makes the rustup proxy `~/.cargo/bin/cargo` exec `tools/bin/cargo`, while the approval
//! question shows the proxy. This module finds the cheap-to-find cases, so the question
//! can say so; it does not stop the command (see SECURITY.md, "programs the repository
//! configures").
//!
//! The detection is a table with one entry per program family, and the files are scanned
//! line by line, not parsed: a line that assigns one of the listed keys (`runner = ...`,
//! `target.x.runner = ...`, `{ runner = ... }`, `SHELL := ...`) counts wherever it
//! appears, even inside a string or under an unrelated table. That errs towards warning,
//! which is the safe direction for a warning. What a line scan cannot follow warns by
//! itself: a quoted key spelled with an escape (`"runn\u0065r"`, which TOML and npm read
//! as `runner`), and a Makefile `include`/`-include`/`sinclude` (the other file may set
//! `SHELL`). A file that cannot be read inside the
//! project (a symlink leading out, a directory, an unreadable file) or that is larger
//! than [`MAX_CONFIG_BYTES`] is itself a reason to warn, since the program may still read
//! it. Only the project root is looked at: the program runs there, and the directories
//! above it are not the repository's.

use crate::project::{BoundaryError, Project};

/// The most bytes read of one configuration file; a larger one is reported, not scanned.
pub(crate) const MAX_CONFIG_BYTES: u64 = 256 * 1024;

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
    /// How a key is assigned in it.
    syntax: Syntax,
    /// Keys whose assignment makes the program run something the repository chose.
    keys: &'static [&'static str],
    /// Tables (TOML `[name]` sections, or dotted `name.x = ...` keys) that do the same.
    tables: &'static [&'static str],
}

/// How a file assigns a key, which decides what may follow the key name.
#[derive(Clone, Copy)]
enum Syntax {
    /// TOML, and ini files such as `.npmrc`: `key = value`.
    Equals,
    /// A Makefile: `SHELL = ...`, `SHELL := ...`, `SHELL ?= ...`, `SHELL != ...`.
    Make,
    /// Yarn 1's `.yarnrc`: `yarn-path "./file.js"`.
    Spaced,
    /// YAML: `yarnPath: file.cjs`.
    Colon,
    /// rustup's legacy `rust-toolchain`: TOML, or a bare toolchain name, which may also be
    /// a path to a toolchain directory.
    Toolchain,
}

/// Cargo's configuration keys that name a program (`[target.*] runner/linker/ar`,
/// `[build] rustc/rustc-wrapper/rustc-workspace-wrapper/rustdoc`, credential providers,
/// `[doc] browser`), pull in another file (`include`), or pass flags that can pick one
/// (`rustflags`, `rustdocflags`: `-Clinker=./ld`, `-Clink-arg=-B./tools`). The flags warn
/// whenever they are set, not only when a value looks like a linker: a value can be split
/// across lines and tokens (`"-C",` then `"linker=./ld"`) or spelled with escapes, which a
/// line scan cannot see through.
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
                syntax: Syntax::Equals,
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
                syntax: Syntax::Equals,
                keys: CARGO_KEYS,
                tables: CARGO_TABLES,
            },
            ConfigFile {
                path: ".cargo/config",
                syntax: Syntax::Equals,
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
                syntax: Syntax::Equals,
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
                syntax: Syntax::Colon,
                keys: &["yarnPath"],
                tables: &[],
            },
        ],
    },
];

/// The longest excerpt of a configuration line quoted in a warning.
const EXCERPT_CHARS: usize = 80;

/// Warnings for the approval question when `program` (a name or a path; its last
/// component decides the family) reads configuration in `project` that can make it run a
/// program the repository chose. Empty when nothing was found. The texts are plain: the
/// front end escapes them for the terminal.
pub(crate) fn warnings(project: &Project, program: &str) -> Vec<String> {
    let name = program.rsplit('/').next().unwrap_or(program);
    let Some(family) = FAMILIES.iter().find(|f| f.programs.contains(&name)) else {
        return Vec::new();
    };
    family
        .files
        .iter()
        .filter_map(|file| finding(project, file))
        .map(|found| {
            format!(
                "this repository configures {}: {found}; approving runs a program the repository chose",
                family.name
            )
        })
        .collect()
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
    text.lines().enumerate().find_map(|(i, line)| {
        let what = line_sets(line, file)?;
        Some(format!(
            "{} line {} sets {what} ({})",
            file.path,
            i + 1,
            excerpt(line)
        ))
    })
}

/// What `line` sets among `file`'s keys and tables, in words (`` `runner` ``), if any.
fn line_sets(line: &str, file: &ConfigFile) -> Option<String> {
    let trimmed = line.trim_start();
    if trimmed.starts_with('#') || trimmed.starts_with(';') {
        return None;
    }
    if let Some(key) = file.keys.iter().find(|k| assigns(line, k, file.syntax)) {
        return Some(format!("`{key}`"));
    }
    if let Some(table) = file.tables.iter().find(|t| opens_table(trimmed, t)) {
        return Some(format!("`[{table}]`"));
    }
    match file.syntax {
        Syntax::Equals | Syntax::Toolchain if escaped_key(line) => {
            return Some("a key spelled with an escape, which metron cannot check".to_owned());
        }
        Syntax::Make => {
            if let Some(directive) = MAKE_INCLUDES.iter().find(|d| {
                trimmed
                    .strip_prefix(**d)
                    .is_some_and(|r| r.starts_with(char::is_whitespace))
            }) {
                return Some(format!(
                    "`{directive}` of another makefile, which may set SHELL, so metron did not check it"
                ));
            }
        }
        _ => {}
    }
    let bare_path = matches!(file.syntax, Syntax::Toolchain)
        && !trimmed.starts_with('[')
        && !trimmed.contains('=')
        && trimmed.contains('/');
    bare_path.then(|| "a toolchain by path".to_owned())
}

/// GNU make directives that read another makefile, which can set `SHELL` where this scan
/// does not look.
const MAKE_INCLUDES: &[&str] = &["include", "-include", "sinclude"];

/// True when `line` has a double-quoted string holding a backslash used as a key: followed
/// by `=`, `.` (a dotted key) or `]` (a table header). TOML unescapes such keys
/// (`"runn\u0065r" = "./x"` is `runner`), and so does npm's ini parser, so the key the
/// program reads is not the text [`assigns`] matches; any escape in a key warns.
fn escaped_key(line: &str) -> bool {
    let mut rest = line;
    while let Some(open) = rest.find('"') {
        let after = &rest[open + 1..];
        let mut escaped = false;
        let mut close = None;
        for (i, c) in after.char_indices() {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    close = Some(i);
                    break;
                }
                _ => {}
            }
        }
        let Some(close) = close else {
            return false;
        };
        let next = after[close + 1..].trim_start();
        if after[..close].contains('\\') && next.starts_with(['=', '.', ']']) {
            return true;
        }
        rest = &after[close + 1..];
    }
    false
}

/// True when `line` assigns `key`: the key starts a word (after the line's start,
/// whitespace, `.`, `{`, `,` or a quote), may be closed by a quote, and is followed by
/// the syntax's assignment.
fn assigns(line: &str, key: &str, syntax: Syntax) -> bool {
    let mut from = 0;
    while let Some(found) = line[from..].find(key) {
        let start = from + found;
        let end = start + key.len();
        from = start + 1;
        let before = line[..start].chars().next_back();
        let starts_word =
            before.is_none_or(|c| c.is_whitespace() || matches!(c, '.' | '{' | ',' | '"' | '\''));
        if !starts_word {
            continue;
        }
        let after = line[end..]
            .strip_prefix(['"', '\''])
            .unwrap_or(&line[end..]);
        let spaced = after.starts_with(char::is_whitespace);
        let rest = after.trim_start();
        let assigned = match syntax {
            Syntax::Equals | Syntax::Toolchain => rest.starts_with('='),
            Syntax::Make => {
                rest.starts_with('=')
                    || ["::=", ":::=", ":=", "?=", "+=", "!="]
                        .iter()
                        .any(|op| rest.starts_with(op))
            }
            Syntax::Spaced => spaced && !rest.is_empty(),
            Syntax::Colon => rest.starts_with(':'),
        };
        if assigned {
            return true;
        }
    }
    false
}

/// True when a (left-trimmed) TOML line opens `table` or assigns inside it with a dotted
/// key (`[alias]`, `[ alias ]`, `alias.b = ...`, `alias = { ... }`).
fn opens_table(trimmed: &str, table: &str) -> bool {
    if let Some(header) = trimmed.strip_prefix('[') {
        let name = header.split(']').next().unwrap_or("").trim();
        let name = name.trim_matches(['"', '\'']);
        return name == table || name.starts_with(&format!("{table}."));
    }
    let key = trimmed.split('=').next().unwrap_or("").trim();
    let key = key.trim_matches(['"', '\'']);
    trimmed.contains('=') && (key == table || key.starts_with(&format!("{table}.")))
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
mod tests {
    use super::*;

    fn file(syntax: Syntax, keys: &'static [&'static str]) -> ConfigFile {
        ConfigFile {
            path: "f",
            syntax,
            keys,
            tables: CARGO_TABLES,
        }
    }

    #[test]
    fn assignments_are_found_in_every_spelling() {
        let toml = file(Syntax::Equals, CARGO_KEYS);
        for line in [
            "runner = \"tools/run\"",
            "  runner=\"x\"",
            "target.x86_64-unknown-linux-gnu.runner = \"x\"",
            "target.'cfg(unix)'.runner = 'x'",
            "\"runner\" = \"x\"",
            "target = { x = { runner = \"x\" } }",
            "rustc-wrapper = \"x\"",
            "build.rustc = \"x\"",
            "[alias]",
            "[ alias ]",
            "alias.t = \"run\"",
            "alias = { t = \"run\" }",
            "rustflags = [\"-Clinker=./ld\"]",
            "rustflags = [\"-Clink-arg=-B./tools\"]",
            "build.rustflags = [",
            "target.x.rustflags = [\"-C\", \"target-cpu=native\"]",
            "rustdocflags = [\"-Clinker=./ld\"]",
            "\"runn\\u0065r\" = \"./x\"",
            "\"runn\\U00000065r\" = \"./x\"",
            "target.\"x\".\"runn\\u0065r\" = \"./x\"",
            "target = { x = { \"link\\u0065r\" = \"./x\" } }",
            "[\"ali\\u0061s\"]",
            "\"b\\u0075ild\".rustc = \"x\"",
        ] {
            assert!(line_sets(line, &toml).is_some(), "{line}");
        }
        for line in [
            "# runner = \"x\"",
            "runners = 1",
            "myrunner = 1",
            "[target.x]",
            "jobs = 4",
            "rustflagsx = 1",
            "[aliases]",
            "name = \"caf\\u00e9\"",
            "x = [\"a\\\"b\", \"c\"]",
        ] {
            assert_eq!(line_sets(line, &toml), None, "{line}");
        }
        let make = file(Syntax::Make, &["SHELL", ".SHELLFLAGS"]);
        for line in [
            "SHELL = /bin/bash",
            "SHELL := ./tools/sh",
            "SHELL::=x",
            "SHELL ?= x",
            "SHELL += -x",
            "override SHELL = x",
            "export SHELL := x",
            ".SHELLFLAGS = -ec",
        ] {
            assert!(line_sets(line, &make).is_some(), "{line}");
        }
        for line in [
            "include other.mk",
            "-include $(wildcard *.mk)",
            "sinclude local.mk",
            "  include\tx.mk",
        ] {
            assert!(
                line_sets(line, &make).is_some_and(|w| w.contains("include")),
                "{line}"
            );
        }
        for line in [
            "\t$(SHELL) -c true",
            "MYSHELL = x",
            "# SHELL = x",
            "includes = x",
            "INCLUDE_DIRS = a",
        ] {
            assert_eq!(line_sets(line, &make), None, "{line}");
        }
        let npmrc = file(
            Syntax::Equals,
            &["git", "node-gyp", "pnpmfile", "userconfig", "globalconfig"],
        );
        for line in [
            "git=./tools/git",
            "node-gyp = ./tools/gyp",
            "pnpmfile=./hooks.cjs",
            "userconfig=./other.npmrc",
            "globalconfig=./g",
            "\"scr\\u0069pt-shell\"=./x",
        ] {
            assert!(line_sets(line, &npmrc).is_some(), "{line}");
        }
        for line in [
            "github-token=x",
            "git-tag-version=false",
            "registry=https://x/",
        ] {
            assert_eq!(line_sets(line, &npmrc), None, "{line}");
        }
        let yarn = file(Syntax::Spaced, &["yarn-path"]);
        assert!(line_sets("yarn-path \"./x.js\"", &yarn).is_some());
        assert_eq!(line_sets("yarn-path", &yarn), None);
        let yaml = file(Syntax::Colon, &["yarnPath"]);
        assert!(line_sets("yarnPath: .yarn/releases/y.cjs", &yaml).is_some());
        let legacy = file(Syntax::Toolchain, &["path"]);
        assert!(line_sets("/opt/toolchains/mine", &legacy).is_some());
        assert!(line_sets("path = \"tools\"", &legacy).is_some());
        assert_eq!(line_sets("stable", &legacy), None);
        assert_eq!(line_sets("1.80.0", &legacy), None);
    }

    #[test]
    fn excerpts_are_clipped_on_characters() {
        assert_eq!(excerpt("  a = 1  "), "a = 1");
        let long = "é".repeat(100);
        assert_eq!(excerpt(&long), format!("{}...", "é".repeat(80)));
    }
}
