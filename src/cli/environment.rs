//! The environment variables and files metron reads, and how the configuration layers
//! stack: one table that `--help` and the man page are made from, and that
//! docs/configuration.md is checked against.
//!
//! Help kept as separate texts drifted: the man page once left out a variable the code
//! reads, and `--help` said configuration came from "the first of" files that are in fact
//! layered. A test here reads `src/` for every variable the code looks up and fails when
//! one is not in [`VARIABLES`], or when the table names one nothing reads.

/// Where a variable is listed: `-h` stays short, one line for each variable most people
/// set; `--help`, the man page and the docs have them all, with the whole sentence.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Listed {
    /// In `-h` too, as this phrase (it fits one line beside the name).
    Short(&'static str),
    /// Not in `-h`.
    Long,
}

/// One environment variable metron reads, and what it changes.
#[derive(Debug)]
pub(crate) struct Variable {
    pub(crate) name: &'static str,
    /// What it changes, in a sentence or two.
    pub(crate) meaning: &'static str,
    pub(crate) listed: Listed,
}

/// Every variable metron reads at run time, the ones a person sets most first.
pub(crate) const VARIABLES: &[Variable] = &[
    Variable {
        name: "OLLAMA_HOST",
        meaning: "The Ollama server (default http://localhost:11434), or an OpenAI-compatible one at a URL ending in /v1 (llama-server, LM Studio, vLLM); overrides endpoint.",
        listed: Listed::Short("the Ollama server (default http://localhost:11434)"),
    },
    Variable {
        name: "OLLAMA_MODEL",
        meaning: "The model, unless --model or /model chooses another; overrides model.",
        listed: Listed::Short("the model, unless --model or /model chooses another"),
    },
    Variable {
        name: "METRON_CONFIG",
        meaning: "The user's configuration file, instead of ~/.metron/config.json.",
        listed: Listed::Short("your config file, instead of ~/.metron/config.json"),
    },
    Variable {
        name: "METRON_CONFIG_DIR",
        meaning: "The directory holding .metron/ (config.json and input_history), instead of $HOME.",
        listed: Listed::Long,
    },
    Variable {
        name: "METRON_ALLOW_PROJECT_COMMANDS",
        meaning: "1, true or yes: the project's .metron.json may grant allowed_commands (never the other keys that grant authority).",
        listed: Listed::Long,
    },
    Variable {
        name: "METRON_API_KEY",
        meaning: "The key sent as `Authorization: Bearer` to an OpenAI-compatible endpoint (one ending in /v1), and to nothing else; read only from the environment, never shown. OPENAI_API_KEY is not read.",
        listed: Listed::Long,
    },
    Variable {
        name: "SSL_CERT_FILE",
        meaning: "A PEM file of extra CA certificates for an https endpoint (a private CA), added to the built-in roots; an absolute path (a relative one is refused). SSL_CERT_DIR is never read.",
        listed: Listed::Short("a PEM file of extra CA certificates for an https endpoint"),
    },
    Variable {
        name: "METRON_SANDBOX_NO_MOUNTS",
        meaning: "Set: the command sandbox does not use a mount namespace, as on a system that forbids unprivileged namespaces (to try that fallback); it can only narrow what commands may do.",
        listed: Listed::Long,
    },
    Variable {
        name: "NO_COLOR",
        meaning: "Set and not empty: no colour in any output.",
        listed: Listed::Long,
    },
    Variable {
        name: "TERM",
        meaning: "dumb: no colour in any output.",
        listed: Listed::Long,
    },
    Variable {
        name: "HOME",
        meaning: "Where ~/.metron is, unless METRON_CONFIG_DIR is set; also where git's global configuration is looked for. This home and the one in the password database are never taken as a project root, and their credentials (~/.ssh and the like) are never read.",
        listed: Listed::Long,
    },
    Variable {
        name: "XDG_CONFIG_HOME",
        meaning: "Where git's global configuration and ignore file are looked for (default ~/.config); the file tools follow their ignore rules.",
        listed: Listed::Long,
    },
    Variable {
        name: "GIT_CONFIG_GLOBAL",
        meaning: "Git's global configuration file, whose excludes file the file tools follow.",
        listed: Listed::Long,
    },
    Variable {
        name: "GIT_CONFIG_SYSTEM",
        meaning: "Git's system configuration file (default /etc/gitconfig), whose excludes file the file tools follow.",
        listed: Listed::Long,
    },
];

/// The files metron reads or keeps, lowest configuration layer first, and what each holds.
pub(crate) const FILES: &[(&str, &str)] = &[
    (
        "~/.metron/config.json",
        "The user's configuration (or $METRON_CONFIG_DIR/.metron/config.json, or the file $METRON_CONFIG names). It may set every key; `metron --example-config` prints them all at their defaults. An unknown key or a bad value in it stops metron (exit 2). metron writes it only on /model NAME --save (the model key; every other key kept).",
    ),
    (
        "<project>/.metron.json",
        "The project's configuration, read as well and overriding the user's file key by key. It ships with the repository, so it cannot grant authority: it may lower budgets and choose the model, but its auto_approve_patches, allowed_commands, allowed_project_programs, command_env_passthrough and command sandbox keys are dropped with a warning (METRON_ALLOW_PROJECT_COMMANDS lets allowed_commands through), and its endpoint must name this machine and is ignored when your own file or OLLAMA_HOST sets one. An unknown key or a bad value in it is a warning, and that key is ignored.",
    ),
    (
        "~/.metron/input_history",
        "The lines typed at the session prompt, offered again next session (beside config.json; none is kept with save_input_history: false).",
    ),
];

/// How the configuration layers stack (the order `config::load` applies them).
pub(crate) const LAYERS: &str = "Configuration is read in layers, each overriding the one before key by key: built-in defaults, then the user's file ($METRON_CONFIG, else $METRON_CONFIG_DIR/.metron/config.json, else ~/.metron/config.json), then the project's .metron.json (which cannot grant authority or loosen the user's limits), then OLLAMA_HOST and OLLAMA_MODEL, then --model. `metron --example-config` prints every key at its default; /config in a session shows where each value came from.";

/// What `-h` (`long`: false) or `--help` (`long`: true) adds after the flags: the
/// variables, the layers, and where to read more. `-h` puts each phrase beside its name;
/// `--help` puts each sentence on lines of its own, indented as clap indents a flag's long
/// help, because clap wraps a long line under its own first column.
pub(crate) fn after_help(long: bool) -> String {
    let mut text = String::from("Environment:\n");
    if long {
        for variable in VARIABLES {
            text.push_str(&format!(
                "  {}\n          {}\n",
                variable.name, variable.meaning
            ));
        }
    } else {
        let short: Vec<(&str, &str)> = VARIABLES
            .iter()
            .filter_map(|v| match v.listed {
                Listed::Short(phrase) => Some((v.name, phrase)),
                Listed::Long => None,
            })
            .collect();
        let width = short.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
        for (name, phrase) in short {
            text.push_str(&format!("  {name:width$}  {phrase}\n"));
        }
        text.push_str("  (--help lists every variable)\n");
    }
    text.push('\n');
    text.push_str(LAYERS);
    text.push_str("\n\n`metron tool --help` lists the tools and their arguments.");
    text
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::Path;

    use super::*;

    /// Variables read only by tests and diagnostics (`#[ignore]`d tests for tuning),
    /// which a user never sets. None today.
    const TEST_ONLY: &[&str] = &[];

    /// The calls through which `src/` reads a variable by name: `std::env::var`,
    /// `var_os`, and the small closures around them (`var`, `string` in config,
    /// `env_path` in the symbol walk).
    const READERS: &[&str] = &["var(", "var_os(", "string(", "env_path("];

    fn rust_files(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src") {
            let path = entry.expect("entry").path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// A name that can be an environment variable: capitals, digits and `_`.
    fn variable_like(name: &str) -> bool {
        name.len() > 1
            && name.starts_with(|c: char| c.is_ascii_uppercase())
            && name
                .chars()
                .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
    }

    /// Every variable name `src/` reads: a literal argument of a reader, or a constant
    /// (`const NO_MOUNTS: &str = "…"`) that a reader is called with.
    fn names_read() -> BTreeSet<String> {
        let mut files = Vec::new();
        rust_files(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
            &mut files,
        );
        let sources: Vec<String> = files
            .iter()
            .map(|f| std::fs::read_to_string(f).expect("read source"))
            .collect();
        let mut names = BTreeSet::new();
        let mut constants = BTreeSet::new();
        for source in &sources {
            for reader in READERS {
                for (at, _) in source.match_indices(reader) {
                    // `var(` must be a call of its own, not the end of `some_var(`.
                    let before = source[..at].chars().next_back();
                    if before.is_some_and(|c| c.is_alphanumeric() || c == '_') {
                        continue;
                    }
                    let argument = &source[at + reader.len()..];
                    let end = argument.find([')', ',']).unwrap_or(0);
                    let argument = argument[..end].trim();
                    if let Some(literal) =
                        argument.strip_prefix('"').and_then(|a| a.strip_suffix('"'))
                    {
                        if variable_like(literal) {
                            names.insert(literal.to_owned());
                        }
                    } else if variable_like(argument) {
                        constants.insert(argument.to_owned());
                    }
                }
            }
        }
        for constant in constants {
            let declared = format!("const {constant}: &str = \"");
            let value = sources.iter().find_map(|source| {
                let start = source.find(&declared)? + declared.len();
                let len = source[start..].find('"')?;
                Some(source[start..start + len].to_owned())
            });
            let value = value.unwrap_or_else(|| panic!("no `{declared}...\"` in src"));
            names.insert(value);
        }
        for name in TEST_ONLY {
            assert!(
                names.remove(*name),
                "{name} is no longer read; drop it here"
            );
        }
        names
    }

    #[test]
    fn the_table_lists_every_variable_the_code_reads_and_no_other() {
        let read = names_read();
        // The readers above must keep finding the known ones, or the test proves nothing.
        for sure in [
            "OLLAMA_HOST",
            "SSL_CERT_FILE",
            "METRON_SANDBOX_NO_MOUNTS",
            "TERM",
        ] {
            assert!(read.contains(sure), "the scan missed {sure}: {read:?}");
        }
        let listed: BTreeSet<String> = VARIABLES.iter().map(|v| v.name.to_owned()).collect();
        assert_eq!(listed.len(), VARIABLES.len(), "a variable is listed twice");
        let missing: Vec<_> = read.difference(&listed).collect();
        assert!(missing.is_empty(), "read but not documented: {missing:?}");
        let stale: Vec<_> = listed.difference(&read).collect();
        assert!(stale.is_empty(), "documented but never read: {stale:?}");
    }

    #[test]
    fn the_docs_list_the_same_variables() {
        let docs = include_str!("../../docs/configuration.md");
        let section = docs
            .split("## Environment variables")
            .nth(1)
            .and_then(|rest| rest.split("\n## ").next())
            .expect("docs/configuration.md has an environment section");
        let documented: BTreeSet<&str> = section
            .lines()
            .filter_map(|line| line.strip_prefix("| `"))
            .filter_map(|rest| rest.split('`').next())
            .collect();
        let listed: BTreeSet<&str> = VARIABLES.iter().map(|v| v.name).collect();
        assert_eq!(documented, listed, "docs/configuration.md's table drifted");
    }

    #[test]
    fn help_names_the_layers_in_the_order_they_apply() {
        let help = after_help(false);
        assert!(!help.contains("first of"), "{help}");
        let layers = help.find(LAYERS).map(|at| &help[at..]).expect("the layers");
        let order = [
            "built-in defaults",
            "$METRON_CONFIG,",
            ".metron.json",
            "OLLAMA_HOST and OLLAMA_MODEL",
            "--model",
        ];
        let at: Vec<usize> = order
            .iter()
            .map(|needle| {
                layers
                    .find(needle)
                    .unwrap_or_else(|| panic!("{needle}: {help}"))
            })
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{layers}");
        // -h is the short list; --help has every variable.
        assert!(!help.contains("NO_COLOR"), "{help}");
        let long = after_help(true);
        assert!(VARIABLES.iter().all(|v| long.contains(v.name)), "{long}");
    }
}
