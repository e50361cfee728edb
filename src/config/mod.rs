//! Settings: built-in defaults, the user's config file, the project's `.metron.json`, the
//! environment, then the command line.
//!
//! Six layers, each overriding the one before key by key, and for every key we remember
//! which layer won so `/config` can show it:
//!
//! ```text
//! defaults < user's file < project's .metron.json < environment < flags < --set
//! ```
//!
//! `--set KEY=VALUE` ([`overrides`]) gives any key the user's own file may set, for one
//! run; with `--model` or `--no-instructions` it may not give the same key (the command
//! line refuses the pair, so the order of the two is never a question).
//!
//! The user's file is the one `$METRON_CONFIG` names, else
//! `$METRON_CONFIG_DIR/.metron/config.json` (else `~/.metron/config.json`). Both files are
//! read when both exist, so a repository's `.metron.json` no longer hides the user's
//! `allowed_commands`, `disabled_tools` or model. A key's value comes from the highest
//! layer that sets it; a list is replaced whole, not extended, with one exception below.
//!
//! Trust: a project's own `.metron.json` ships with the repository, so it may tune budgets
//! and the model but may not widen authority. Each key's [`Rule`] is declared beside it in
//! the settings table. Its privileged keys (`auto_approve_patches`, `allowed_commands`,
//! `command_env_passthrough`, the sandbox's) are dropped with a warning (commands may be
//! let through with `METRON_ALLOW_PROJECT_COMMANDS`), and its `endpoint` is accepted only
//! when it names this machine and neither the user's file nor `$OLLAMA_HOST` chose one. Nor may it loosen a limit the user's own file sets
//! ([`keep_user_limits`]): a budget only goes down, `remote_endpoint: "refuse"` and
//! `save_input_history: false` hold, and `disabled_tools` is the user's list plus the
//! project's. Loading does I/O only to read the two files: the environment is passed in
//! as a [`ConfigEnv`], so tests never touch the process environment.

mod endpoint;
mod overrides;
mod save;
mod settings;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde_json::Value;

pub(crate) use endpoint::{CHAT_PATH as OLLAMA_CHAT_PATH, OPENAI_CHAT_PATH};
pub(crate) use endpoint::{Credentials, host_and_port, shown as shown_endpoint, split_credentials};
pub use endpoint::{is_local, normalize_endpoint};
pub(crate) use overrides::{Override, SET_FLAG, parse as parse_override};
pub(crate) use save::save_model;
pub use settings::{Config, KEYS, RemoteEndpoint, SandboxMode};
pub(crate) use settings::{DEFAULT_MODEL, Key, Rule};

/// The file name of a project's own config, at the project root.
pub(crate) const PROJECT_FILE: &str = ".metron.json";

/// The most bytes a config file may hold. Far above any real configuration; it keeps a
/// repository's `.metron.json -> /dev/zero` (or a huge file) from exhausting memory.
pub(crate) const MAX_CONFIG_BYTES: u64 = 1 << 20;

/// The name of the user's metron directory, under `$METRON_CONFIG_DIR` or else `$HOME`. It
/// holds the user's own `config.json` and the REPL's input history, so one override moves
/// both (which is how tests stay out of the real home).
pub(crate) const USER_DIR: &str = ".metron";

/// Where the value of one setting came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Source {
    /// The built-in default.
    Default,
    /// The config file at this path.
    File(PathBuf),
    /// This environment variable.
    Env(&'static str),
    /// This command-line flag (`--model`): the highest layer, since what a person types
    /// for one run is the most specific choice there is.
    Flag(&'static str),
    /// This REPL command changed the value during the session (`/model`), so `/config`
    /// does not credit a layer that no longer holds.
    Command(&'static str),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::File(path) => write!(f, "{}", path.display()),
            Source::Env(var) => write!(f, "${var}"),
            Source::Flag(flag) | Source::Command(flag) => f.write_str(flag),
        }
    }
}

/// How far a config file is trusted: whose file it is. Named for config because the
/// https client has a `Trust` of its own (the certificate roots it accepts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ConfigTrust {
    /// The user's own file (or the one `$METRON_CONFIG` names): may set anything.
    User,
    /// The repository's `.metron.json`: may not grant authority.
    Project,
}

/// A config file that was read, and the layer it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConfigFile {
    /// Where it is.
    pub(crate) path: PathBuf,
    /// Whether it may grant authority.
    pub(crate) trust: ConfigTrust,
}

/// The environment variables that configuration reads, captured once.
///
/// Passing these in (rather than reading `std::env` deep inside) keeps loading pure and
/// lets tests run in parallel without mutating the process environment.
#[derive(Debug, Clone, Default)]
pub(crate) struct ConfigEnv {
    /// `$METRON_CONFIG`: the user's config file, instead of the one in [`user_dir`].
    pub(crate) metron_config: Option<PathBuf>,
    /// `$METRON_CONFIG_DIR`: base directory holding `.metron/config.json`.
    pub(crate) metron_config_dir: Option<PathBuf>,
    /// `$HOME`.
    pub(crate) home: Option<PathBuf>,
    /// `$OLLAMA_HOST`: overrides `endpoint`.
    pub(crate) ollama_host: Option<String>,
    /// `$OLLAMA_MODEL`: overrides `model`.
    pub(crate) ollama_model: Option<String>,
    /// `$METRON_ALLOW_PROJECT_COMMANDS`.
    pub(crate) allow_project_commands: Option<String>,
}

impl ConfigEnv {
    /// Reads the variables from the process environment. Empty values count as unset.
    pub(crate) fn from_process() -> ConfigEnv {
        let var = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty());
        let string = |name: &str| var(name).map(|v| v.to_string_lossy().into_owned());
        ConfigEnv {
            metron_config: var("METRON_CONFIG").map(PathBuf::from),
            metron_config_dir: var("METRON_CONFIG_DIR").map(PathBuf::from),
            home: var("HOME").map(PathBuf::from),
            ollama_host: string("OLLAMA_HOST"),
            ollama_model: string("OLLAMA_MODEL"),
            allow_project_commands: string("METRON_ALLOW_PROJECT_COMMANDS"),
        }
    }

    fn project_commands_allowed(&self) -> bool {
        self.allow_project_commands
            .as_deref()
            .is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes"))
    }
}

/// The settings given on the command line, the highest layer. Passed in like
/// [`ConfigEnv`], so loading stays free of process state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Flags {
    /// `--model NAME`: overrides `model`, so a model can be chosen for one run without
    /// editing a file or exporting a variable.
    pub(crate) model: Option<String>,
    /// `--no-instructions`: sets `instructions` to false for this run, so a session can be
    /// started without the repository's AGENTS.md without editing a file.
    pub(crate) no_instructions: bool,
    /// `--set KEY=VALUE`, in the order given: any key the user's own file may set, for
    /// one run, above every other layer (a key given twice keeps the last value).
    pub(crate) set: Vec<Override>,
}

impl Flags {
    /// True when `--set` gives `key`.
    pub(crate) fn sets(&self, key: Key) -> bool {
        self.set.iter().any(|item| item.key == key)
    }
}

/// The flag that sets `model`, as `/config` and `--doctor` name its layer.
pub(crate) const MODEL_FLAG: &str = "--model";

/// The flag that turns `instructions` off, as `/config` and `--doctor` name its layer.
pub(crate) const NO_INSTRUCTIONS_FLAG: &str = "--no-instructions";

/// A configuration problem that stops metron at startup (exit code 2).
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConfigError {
    /// The file exists but could not be read.
    #[error("cannot read config file {}: {source}; {}", path.display(), remedy(*.trust))]
    Read {
        /// The file.
        path: PathBuf,
        /// Whose file it is, which decides the next step.
        trust: ConfigTrust,
        /// Why.
        source: std::io::Error,
    },
    /// The project's config file cannot be used safely: a symlink leaving the project, not
    /// a regular file, or larger than [`MAX_CONFIG_BYTES`].
    #[error(
        "cannot use config file {}: {reason}; config files must be regular files inside the project of at most 1 MiB",
        path.display()
    )]
    Unsafe {
        /// The file.
        path: PathBuf,
        /// The boundary's refusal.
        reason: String,
    },
    /// The file is not a JSON object.
    #[error("config file {} is not valid JSON: {message}; {}", path.display(), remedy(*.trust))]
    Parse {
        /// The file.
        path: PathBuf,
        /// Whose file it is, which decides the next step.
        trust: ConfigTrust,
        /// serde_json's description, with line and column.
        message: String,
    },
    /// A key no version of metron knows.
    #[error("unknown key `{key}` in config file {}{}", path.display(), suggestion_text(.suggestion))]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key as written.
        key: String,
        /// The closest valid key, when one is close.
        suggestion: Option<&'static str>,
    },
    /// A value of the wrong type or out of range.
    #[error("`{key}` from {layer} {message}{}", fix_value(.layer))]
    Invalid {
        /// The key.
        key: &'static str,
        /// The layer the bad value came from.
        layer: Source,
        /// What is wrong, as the end of a sentence ("must be in (0, 1]").
        message: String,
    },
}

/// The next step for a config file that cannot be used, by whose file it is: both
/// layers are read on every start, so either one can stop metron.
fn remedy(trust: ConfigTrust) -> &'static str {
    match trust {
        ConfigTrust::User => {
            "fix your own config file (the one $METRON_CONFIG names, else ~/.metron/config.json), or move it aside to run without it"
        }
        ConfigTrust::Project => {
            "fix the project's .metron.json (it is read on top of your own config), or move it aside to run without it"
        }
    }
}

/// The next step for a bad value, by the layer it came from (the message has named it).
fn fix_value(layer: &Source) -> String {
    match layer {
        Source::File(_) => "; fix that value in the file".to_owned(),
        Source::Env(var) => format!("; fix or unset ${var}"),
        Source::Flag(flag) => format!("; give {flag} another value"),
        Source::Default | Source::Command(_) => String::new(),
    }
}

fn suggestion_text(suggestion: &Option<&'static str>) -> String {
    match suggestion {
        Some(key) => format!("; did you mean `{key}`?"),
        None => format!("; `metron --example-config` prints all {} keys", KEYS.len()),
    }
}

/// The result of loading: the effective settings and how they came to be.
#[derive(Debug, Clone)]
pub(crate) struct Loaded {
    /// The effective, validated settings.
    pub(crate) config: Config,
    /// The config files read, lowest layer first: the user's own file, then the
    /// project's `.metron.json`; empty when there is neither.
    pub(crate) files: Vec<ConfigFile>,
    /// For each key, the layer its value came from.
    pub(crate) sources: BTreeMap<&'static str, Source>,
    /// Warnings for stderr (for example, project-file keys that were ignored).
    pub(crate) warnings: Vec<String>,
    /// For each name in `disabled_tools`, the layer that listed it first: the list is
    /// merged across the files, and a typo must be blamed on the file that holds it.
    pub(crate) disabled_by: BTreeMap<String, Source>,
    /// The model the user's own file chose, when the project's file replaced it (and no
    /// higher layer chose again): said at start, in the banner and in `session_start`, so
    /// a repository never swaps the model (and with it, perhaps, the server that reads
    /// the code) in silence.
    pub(crate) replaced_model: Option<String>,
}

impl Loaded {
    /// The built-in defaults, before any layer is applied: the start of [`load`], and what
    /// `--doctor` goes on with after a config error.
    pub(crate) fn defaults() -> Loaded {
        Loaded {
            config: Config::default(),
            files: Vec::new(),
            sources: Key::ALL
                .iter()
                .map(|k| (k.name(), Source::Default))
                .collect(),
            warnings: Vec::new(),
            disabled_by: BTreeMap::new(),
            replaced_model: None,
        }
    }

    /// Records the layer of every disabled tool not recorded yet (see `disabled_by`).
    fn note_disabled_tools(&mut self) {
        let source = self.source(Key::disabled_tools).clone();
        for name in &self.config.disabled_tools {
            self.disabled_by
                .entry(name.clone())
                .or_insert_with(|| source.clone());
        }
    }

    /// The layer a key's value came from.
    pub(crate) fn source(&self, key: Key) -> &Source {
        self.sources.get(key.name()).unwrap_or(&Source::Default)
    }

    /// The layer the key written `key` in JSON came from, for callers that hold the name.
    /// A name that is no key is a caller's typo, which tests catch here instead of reading
    /// it as "default".
    pub(crate) fn source_of(&self, key: &str) -> &Source {
        debug_assert!(Key::from_name(key).is_some(), "`{key}` is not a config key");
        self.sources.get(key).unwrap_or(&Source::Default)
    }

    /// The file read for the layer of this trust, if one was.
    pub(crate) fn file(&self, trust: ConfigTrust) -> Option<&ConfigFile> {
        self.files.iter().find(|file| file.trust == trust)
    }

    /// Whose file `path` is, when it is one of the files read: a [`Source::File`] names
    /// only the path, and `/config` says which layer that is.
    pub(crate) fn trust_of(&self, path: &Path) -> Option<ConfigTrust> {
        self.files
            .iter()
            .find(|file| file.path == path)
            .map(|file| file.trust)
    }
}

/// Loads the configuration for a project rooted at `project_root`: the user's file, the
/// project's file on top, then `env` and `flags` from the command line.
pub(crate) fn load(
    project_root: &Path,
    env: &ConfigEnv,
    flags: &Flags,
) -> Result<Loaded, ConfigError> {
    let mut loaded = Loaded::defaults();
    let user = user_layer(env);
    if let Some(file) = &user {
        apply_layer(&mut loaded, project_root, file, env)?;
        warn_if_inside_project(&mut loaded, file, project_root);
    }
    let mut users_model = None;
    if let Some(file) = project_layer(project_root, user.as_ref()) {
        // What the user's file (and the defaults) said, before the project's file is laid
        // on top: the limits the project may tighten but not loosen.
        let users = loaded.clone();
        apply_layer(&mut loaded, project_root, &file, env)?;
        keep_user_limits(&mut loaded, &users, &file);
        if let Source::File(path) = users.source(Key::model) {
            users_model = Some((users.config.model.clone(), path.clone(), file.path));
        }
    }
    apply_env(&mut loaded, env)?;
    apply_flags(&mut loaded, flags)?;
    validate(&loaded)?;
    if let Some((model, user_path, project_path)) = users_model {
        note_replaced_model(&mut loaded, model, &user_path, &project_path);
    }
    Ok(loaded)
}

/// When the project's file chose the model over the one the user's own file names (and
/// no higher layer chose again), records it and says so. A project may choose the model
/// (it is a preference), but the person must know it did: a cloud model, for one, sends
/// the code to another host.
fn note_replaced_model(loaded: &mut Loaded, users: String, user_path: &Path, project: &Path) {
    let by_project = *loaded.source(Key::model) == Source::File(project.to_owned());
    if !by_project || loaded.config.model == users {
        return;
    }
    // The names on one line (a project's may hold a newline); the printer makes the rest
    // harmless to the terminal (config sits below the display module, so not its helper).
    loaded.warnings.push(format!(
        "the project's config {} chooses the model {} instead of yours ({}, from {}); set OLLAMA_MODEL or pass --model to use yours",
        project.display(),
        loaded.config.model.escape_debug(),
        users.escape_debug(),
        user_path.display()
    ));
    loaded.replaced_model = Some(users);
}

/// Reads one file and lays it onto `loaded`, then checks the result, so that a bad value
/// is reported as that file's even when a higher layer would set the key again.
fn apply_layer(
    loaded: &mut Loaded,
    project_root: &Path,
    file: &ConfigFile,
    env: &ConfigEnv,
) -> Result<(), ConfigError> {
    let text = read_file(project_root, file)?;
    apply_file(loaded, file, &text, env)?;
    validate(loaded)?;
    loaded.note_disabled_tools();
    loaded.files.push(file.clone());
    Ok(())
}

/// Warns when the user's trusted file lies inside the project, where a patch could reach
/// it (the front end also protects it from writes).
fn warn_if_inside_project(loaded: &mut Loaded, file: &ConfigFile, project_root: &Path) {
    if let Some(inside) = inside_project(&file.path, project_root) {
        loaded.warnings.push(format!(
            "the trusted config file {} is inside the project (at `{inside}`), so a patch could change what metron may do (such as `allowed_commands`); apply_patch refuses to write it, but keep your own config outside the project (unset METRON_CONFIG, or point it at ~/.metron/config.json)",
            file.path.display()
        ));
    }
}

/// Where `file` lies inside the project at `project_root`, relative to the root with `/`
/// separators, with every symlink resolved; `None` when it is outside, missing, or not
/// UTF-8. A trusted file inside the project is one the model's patches could reach.
pub(crate) fn inside_project(file: &Path, project_root: &Path) -> Option<String> {
    let real = canonical_even_if_missing(file)?;
    let root = project_root.canonicalize().ok()?;
    let relative = real.strip_prefix(&root).ok()?;
    let parts = relative
        .components()
        .map(|part| part.as_os_str().to_str())
        .collect::<Option<Vec<_>>>()?;
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `path` with symlinks resolved, when it or only its last components do not exist yet:
/// the nearest existing ancestor is resolved and the rest appended, so a directory that a
/// patch could still create is placed correctly.
fn canonical_even_if_missing(path: &Path) -> Option<PathBuf> {
    let mut missing = Vec::new();
    let mut existing = path;
    loop {
        if let Ok(real) = existing.canonicalize() {
            return Some(missing.iter().rev().fold(real, |acc, part| acc.join(part)));
        }
        missing.push(existing.file_name()?);
        existing = existing.parent()?;
    }
}

/// Reads a config file whole. The project's own file is read through the project
/// boundary (a symlink may not leave the tree; only a regular file; at most
/// [`MAX_CONFIG_BYTES`]), since a cloned repository controls it. The user's files are
/// theirs and may be symlinks (dotfile managers), but are capped all the same.
fn read_file(project_root: &Path, file: &ConfigFile) -> Result<String, ConfigError> {
    let read_error = |source| ConfigError::Read {
        path: file.path.clone(),
        trust: file.trust,
        source,
    };
    let too_large = || {
        read_error(std::io::Error::other(format!(
            "larger than {MAX_CONFIG_BYTES} bytes"
        )))
    };
    let bytes = match file.trust {
        ConfigTrust::Project => {
            let unsafe_file = |reason: String| ConfigError::Unsafe {
                path: file.path.clone(),
                reason,
            };
            let project = crate::project::Project::open(project_root, false).map_err(read_error)?;
            let path = project
                .resolve(PROJECT_FILE)
                .map_err(|e| unsafe_file(e.to_string()))?;
            project
                .read_capped(&path, MAX_CONFIG_BYTES)
                .map_err(|e| match e {
                    crate::project::BoundaryError::Io { source, .. } => read_error(source),
                    other => unsafe_file(other.to_string()),
                })?
        }
        ConfigTrust::User => {
            use std::io::Read;
            let mut bytes = Vec::new();
            std::fs::File::open(&file.path)
                .and_then(|f| f.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes))
                .map_err(read_error)?;
            if bytes.len() as u64 > MAX_CONFIG_BYTES {
                return Err(too_large());
            }
            bytes
        }
    };
    String::from_utf8(bytes).map_err(|_| {
        read_error(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            "not UTF-8 text; save it as UTF-8 JSON",
        ))
    })
}

/// The user's layer: the file `$METRON_CONFIG` names, else the user's own
/// `config.json` when it exists. `$METRON_CONFIG` is returned even when missing, so that a
/// typo in it is reported instead of silently skipped.
fn user_layer(env: &ConfigEnv) -> Option<ConfigFile> {
    let path = match &env.metron_config {
        Some(path) => path.clone(),
        None => user_file(env)?,
    };
    Some(ConfigFile {
        path,
        trust: ConfigTrust::User,
    })
}

/// The project's layer: `<project root>/.metron.json` when something is there. Not when
/// it is the very file the user's layer read (`METRON_CONFIG` naming it): that file was
/// chosen by the user and read as theirs, and is not read a second time as untrusted.
fn project_layer(project_root: &Path, user: Option<&ConfigFile>) -> Option<ConfigFile> {
    let path = project_root.join(PROJECT_FILE);
    // A symlink counts even when it leads nowhere usable, so reading it reports why
    // instead of passing over it in silence.
    std::fs::symlink_metadata(&path).ok()?;
    let same_as_user = user.is_some_and(|user| {
        matches!(
            (user.path.canonicalize(), path.canonicalize()),
            (Ok(a), Ok(b)) if a == b
        )
    });
    (!same_as_user).then_some(ConfigFile {
        path,
        trust: ConfigTrust::Project,
    })
}

/// The user's metron directory (`$METRON_CONFIG_DIR/.metron`, else `~/.metron`), whether
/// or not it exists yet; `None` when neither variable is set. Everything metron keeps for
/// the user (their config file, the REPL's input history) lives here and nowhere else.
pub(crate) fn user_dir(env: &ConfigEnv) -> Option<PathBuf> {
    let base = env.metron_config_dir.as_ref().or(env.home.as_ref())?;
    Some(base.join(USER_DIR))
}

/// The user's own config file (`config.json` in [`user_dir`]), when it exists.
fn user_file(env: &ConfigEnv) -> Option<PathBuf> {
    let user = user_dir(env)?.join("config.json");
    user.exists().then_some(user)
}

/// After the project's file is laid over the user's: undoes what would loosen a limit the
/// user's own file set. `users` is the state before the project's file. For each
/// tighten-only key (see [`Rule`]) the user's file set and the project's file set again:
///
/// - [`Rule::TightenOnly`]: a value that loosens the user's (as its type's `Loosens` says)
///   is put back. So a budget (every integer setting) may only go down: a project may ask
///   for less context, fewer turns or shorter output, never more than the user allows; and
///   `remote_endpoint: "refuse"` and `save_input_history: false` hold;
/// - [`Rule::Union`]: `disabled_tools` is the user's list plus the project's: a project may
///   withhold more tools, never offer one the user withheld.
///
/// A value put back is warned about, naming both files. Keys the user's file does not
/// set are the project's to choose, as before (within the trust rules of [`apply_file`]).
fn keep_user_limits(loaded: &mut Loaded, users: &Loaded, project: &ConfigFile) {
    let project_source = Source::File(project.path.clone());
    for &key in Key::ALL.iter().filter(|key| key.is_tighten_only()) {
        let user_source = users.source(key);
        let Source::File(user_path) = user_source else {
            continue;
        };
        if *loaded.source(key) != project_source {
            continue;
        }
        match key.rule() {
            Rule::Union => {
                if !loaded.config.union_with(key, &users.config) {
                    loaded.sources.insert(key.name(), user_source.clone());
                }
            }
            Rule::TightenOnly => {
                if !loaded.config.loosens(key, &users.config) {
                    continue;
                }
                let (mine, theirs) = (users.config.value(key), loaded.config.value(key));
                loaded.config.copy_from(key, &users.config);
                loaded.sources.insert(key.name(), user_source.clone());
                loaded.warnings.push(format!(
                    "ignoring `{key}` {theirs} in {}: your own config {} sets {mine}, and a project's config may only tighten a limit you set; change it in your own config if you want the project's value",
                    project.path.display(),
                    user_path.display()
                ));
            }
            Rule::Free | Rule::LocalOnly | Rule::Privileged => {}
        }
    }
}

/// Layers one file's text onto `loaded`. Separate from I/O so it can be tested on strings.
pub(crate) fn apply_file(
    loaded: &mut Loaded,
    file: &ConfigFile,
    text: &str,
    env: &ConfigEnv,
) -> Result<(), ConfigError> {
    let parse_error = |message: String| ConfigError::Parse {
        path: file.path.clone(),
        trust: file.trust,
        message,
    };
    let value: Value = serde_json::from_str(text).map_err(|e| parse_error(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(parse_error(
            "expected a JSON object such as {\"model\": \"...\"}".to_owned(),
        ));
    };
    for (key, value) in &map {
        let Some(known) = Key::from_name(key) else {
            let unknown = ConfigError::UnknownKey {
                path: file.path.clone(),
                key: key.clone(),
                suggestion: closest_key(key),
            };
            match file.trust {
                ConfigTrust::User => return Err(unknown),
                // A repository's file is not the person's to fix: a typo in it, or a key
                // from a newer metron, must not stop every command they run there.
                ConfigTrust::Project => {
                    loaded.warnings.push(unknown_key_warning(key, &file.path));
                    continue;
                }
            }
        };
        if file.trust == ConfigTrust::Project {
            match known.rule() {
                Rule::Privileged => {
                    let let_through =
                        known == Key::allowed_commands && env.project_commands_allowed();
                    if !let_through {
                        loaded.warnings.push(untrusted_warning(known, &file.path));
                        continue;
                    }
                }
                // The server you chose (in your own file or the environment) is the one
                // that reads your code: a repository may not pick another, even a local one
                // (another service on this machine, or a port it has a tunnel on).
                Rule::LocalOnly if let Some(chosen) = chosen_endpoint(loaded, env) => {
                    loaded.warnings.push(format!(
                        "ignoring `{known}` {value} in {}: {chosen} sets the endpoint, and a project's config may not change the server you chose; change {chosen} if you want the project's server",
                        file.path.display()
                    ));
                    continue;
                }
                // Every byte the tools read goes to the endpoint: a cloned repository must
                // not be able to route your code to a server of its choosing.
                Rule::LocalOnly if !names_local_endpoint(value) => {
                    loaded.warnings.push(format!(
                        "ignoring `{known}` {value} in {}: a project's config may only point at a server on this machine; set OLLAMA_HOST or your own ~/.metron/config.json to use a remote one",
                        file.path.display()
                    ));
                    continue;
                }
                Rule::Free | Rule::LocalOnly | Rule::TightenOnly | Rule::Union => {}
            }
        }
        let source = Source::File(file.path.clone());
        match file.trust {
            ConfigTrust::User => set(&mut loaded.config, known, value, &source)?,
            // Tried on a copy first, so that a bad value leaves the layer below in force
            // (the key is ignored, the rest of the file still applies).
            ConfigTrust::Project => {
                let mut trial = loaded.config.clone();
                let checked = set(&mut trial, known, value, &source)
                    .and_then(|()| check_key(&trial, known, &source));
                if let Err(error) = checked {
                    loaded
                        .warnings
                        .push(invalid_value_warning(&error, &file.path));
                    continue;
                }
                loaded.config.copy_from(known, &trial);
            }
        }
        loaded.sources.insert(known.name(), source);
    }
    Ok(())
}

/// The warning for a key of a project's file that no version of metron knows: named,
/// with the nearest key when one is near, and ignored.
fn unknown_key_warning(key: &str, path: &Path) -> String {
    let hint = match closest_key(key) {
        Some(near) => format!("did you mean `{near}`? Rename it"),
        None => format!(
            "`metron --example-config` prints all {} keys; fix or remove it",
            KEYS.len()
        ),
    };
    format!(
        "ignoring unknown key `{}` in {} (a typo, or a key of a newer metron); the rest of the file still applies; {hint} in that file",
        key.escape_debug(),
        path.display()
    )
}

/// The warning for a value of a project's file that is of the wrong type or out of
/// range: the key keeps the value of the layer below.
fn invalid_value_warning(error: &ConfigError, path: &Path) -> String {
    let what = match error {
        ConfigError::Invalid { key, message, .. } => format!("`{key}` {message}"),
        other => other.to_string(),
    };
    format!(
        "ignoring {what} in {}: the key keeps its value from the layer below, and the rest of the file still applies; fix that value in the file",
        path.display()
    )
}

/// Who already chose the endpoint, when someone did: the user's own file (the layer below
/// the project's) or `$OLLAMA_HOST` (the layer above, read after it); named for a warning.
fn chosen_endpoint(loaded: &Loaded, env: &ConfigEnv) -> Option<String> {
    if env.ollama_host.is_some() {
        return Some("$OLLAMA_HOST".to_owned());
    }
    match loaded.source(Key::endpoint) {
        Source::File(path) => Some(format!("your own config {}", path.display())),
        _ => None,
    }
}

/// True when a JSON endpoint value names this machine (an unusable value counts as local
/// here, so that validation reports it instead of a trust warning hiding it).
fn names_local_endpoint(value: &Value) -> bool {
    match value.as_str().map(normalize_endpoint) {
        Some(Ok(endpoint)) => is_local(&endpoint),
        _ => true,
    }
}

fn untrusted_warning(key: Key, path: &Path) -> String {
    let remedy = match key {
        Key::allowed_commands => {
            "set METRON_ALLOW_PROJECT_COMMANDS=1 to let this project's commands through, or put them in your own ~/.metron/config.json"
        }
        _ => "put it in your own ~/.metron/config.json if you want it",
    };
    format!(
        "ignoring `{key}` in {}: a project's config cannot grant authority; {remedy}",
        path.display()
    )
}

fn apply_env(loaded: &mut Loaded, env: &ConfigEnv) -> Result<(), ConfigError> {
    if let Some(host) = &env.ollama_host {
        set_from(loaded, Key::endpoint, host, Source::Env("OLLAMA_HOST"))?;
    }
    if let Some(model) = &env.ollama_model {
        set_from(loaded, Key::model, model, Source::Env("OLLAMA_MODEL"))?;
    }
    Ok(())
}

/// Layers the command line's flags onto `loaded`: the last word on a setting.
pub(crate) fn apply_flags(loaded: &mut Loaded, flags: &Flags) -> Result<(), ConfigError> {
    if let Some(model) = &flags.model {
        set_from(loaded, Key::model, model, Source::Flag(MODEL_FLAG))?;
    }
    if flags.no_instructions {
        let source = Source::Flag(NO_INSTRUCTIONS_FLAG);
        set(
            &mut loaded.config,
            Key::instructions,
            &Value::Bool(false),
            &source,
        )?;
        loaded.sources.insert(Key::instructions.name(), source);
    }
    overrides::apply(loaded, &flags.set)
}

/// Sets one string setting from a layer above the files and records that layer as its
/// source.
fn set_from(loaded: &mut Loaded, key: Key, value: &str, source: Source) -> Result<(), ConfigError> {
    set(&mut loaded.config, key, &Value::from(value), &source)?;
    loaded.sources.insert(key.name(), source);
    Ok(())
}

fn set(config: &mut Config, key: Key, value: &Value, source: &Source) -> Result<(), ConfigError> {
    let invalid = |message: String| ConfigError::Invalid {
        key: key.name(),
        layer: source.clone(),
        message,
    };
    config.set_json(key, value).map_err(invalid)?;
    if key == Key::endpoint {
        config.endpoint = normalize_endpoint(&config.endpoint).map_err(invalid)?;
    }
    Ok(())
}

/// Checks that `disabled_tools` names only tools in `names` (the registry's; the front
/// end passes them, so the settings do not depend on the tools). A name only a project's
/// file lists is dropped with a warning instead, like any bad value of that file: a
/// repository (perhaps written for a newer metron) must not stop the person's commands.
pub(crate) fn check_tool_names(loaded: &mut Loaded, names: &[&str]) -> Result<(), ConfigError> {
    let mut kept = Vec::with_capacity(loaded.config.disabled_tools.len());
    for name in std::mem::take(&mut loaded.config.disabled_tools) {
        if names.contains(&name.as_str()) {
            kept.push(name);
            continue;
        }
        let layer = loaded
            .disabled_by
            .get(&name)
            .unwrap_or_else(|| loaded.source(Key::disabled_tools))
            .clone();
        let error = ConfigError::Invalid {
            key: Key::disabled_tools.name(),
            layer: layer.clone(),
            message: format!(
                "names `{name}`, which is not a tool; the tools are {}",
                names.join(", ")
            ),
        };
        match &layer {
            Source::File(path) if loaded.trust_of(path) == Some(ConfigTrust::Project) => {
                loaded.warnings.push(format!(
                    "ignoring `{name}` in `disabled_tools` of {}: it is not a tool (the tools are {}), and the rest of the file still applies; fix that entry in the file",
                    path.display(),
                    names.join(", ")
                ));
            }
            _ => return Err(error),
        }
    }
    loaded.config.disabled_tools = kept;
    Ok(())
}

/// The longest `session_retention_days`: 100 years, as `metron sessions prune` takes.
pub(crate) const MAX_RETENTION_DAYS: u64 = 36_500;

/// The largest `instructions_max_bytes`: 1 MiB, about 250k tokens, more than any local
/// model's context holds, so a typo cannot make every request carry a whole file.
pub(crate) const MAX_INSTRUCTIONS_BYTES: u64 = 1 << 20;

/// Checks ranges the types alone cannot express, key by key.
fn validate(loaded: &Loaded) -> Result<(), ConfigError> {
    for &key in Key::ALL {
        check_key(&loaded.config, key, loaded.source(key))?;
    }
    Ok(())
}

/// Checks one key's value against the ranges its type cannot express; `source` is the
/// layer the value came from, named in the error. One key at a time, so that a project's
/// bad value can be set aside alone (see [`apply_file`]).
fn check_key(config: &Config, key: Key, source: &Source) -> Result<(), ConfigError> {
    let invalid = |message: String| {
        Err(ConfigError::Invalid {
            key: key.name(),
            layer: source.clone(),
            message,
        })
    };
    // Every integer setting is a budget or a limit, and none of them can be zero.
    // (Floats such as `temperature` never report an integer value here.)
    // `session_retention_days` is the exception: 0 is its "off".
    if let Value::Number(n) = config.value(key)
        && n.as_u64() == Some(0)
        && key != Key::session_retention_days
    {
        return invalid("must be positive, got 0".to_owned());
    }
    match key {
        Key::session_retention_days if config.session_retention_days > MAX_RETENTION_DAYS => {
            invalid(format!(
                "must be at most {MAX_RETENTION_DAYS} days, got {}; 0 keeps every session",
                config.session_retention_days
            ))
        }
        Key::instructions_max_bytes if config.instructions_max_bytes > MAX_INSTRUCTIONS_BYTES => {
            invalid(format!(
                "must be at most {MAX_INSTRUCTIONS_BYTES} bytes (1 MiB), got {}; the default 8192 suits a 16k context",
                config.instructions_max_bytes
            ))
        }
        Key::top_p if !(config.top_p > 0.0 && config.top_p <= 1.0) => {
            invalid(format!("must be in (0, 1], got {}", config.top_p))
        }
        Key::temperature if !(config.temperature >= 0.0 && config.temperature.is_finite()) => {
            invalid(format!("must be zero or more, got {}", config.temperature))
        }
        Key::model if config.model.trim().is_empty() => {
            invalid(format!("must name a model, such as {DEFAULT_MODEL}"))
        }
        Key::command_env_passthrough => match config
            .command_env_passthrough
            .iter()
            .find(|n| !is_env_name(n))
        {
            Some(name) => invalid(format!(
                "names `{name}`, which is not an environment variable name (letters, digits, _)"
            )),
            None => Ok(()),
        },
        Key::allowed_commands if config.allowed_commands.iter().any(|c| c.trim().is_empty()) => {
            invalid("contains an empty entry".to_owned())
        }
        Key::allowed_project_programs => match config
            .allowed_project_programs
            .iter()
            .find(|e| !names_project_program(e))
        {
            Some(entry) => invalid(format!(
                "entry `{entry}` must start with a path inside the project, such as `.venv/bin/pytest` or `./gradlew` (relative, with a `/`, no `..`)"
            )),
            None => Ok(()),
        },
        Key::instructions_fallbacks => match config
            .instructions_fallbacks
            .iter()
            .find(|n| !is_plain_file_name(n))
        {
            Some(name) => invalid(format!(
                "entry `{name}` must be a file name without a directory, such as `CLAUDE.md` or `GEMINI.md`"
            )),
            None => Ok(()),
        },
        _ => Ok(()),
    }
}

/// True for a name that is one directory entry: not empty, no `/`, not `.` or `..`, no
/// control character. An instruction file name is looked up in each directory from the
/// root down, so a path in it could reach outside that directory.
pub(crate) fn is_plain_file_name(name: &str) -> bool {
    !name.is_empty()
        && name != "."
        && name != ".."
        && !name.contains('/')
        && !name.chars().any(char::is_control)
}

/// True when a `allowed_project_programs` entry starts with a relative path holding a `/`
/// and no `..` (run_command matches programs given as paths only).
fn names_project_program(entry: &str) -> bool {
    entry.split_whitespace().next().is_some_and(|first| {
        let parts = || first.split('/');
        first.contains('/')
            && !first.starts_with('/')
            && !parts().any(|p| p == "..")
            && parts().any(|p| !p.is_empty() && p != ".")
    })
}

/// True for a plausible environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The known key a misspelt `typo` most likely meant, if one is near enough to be a
/// plausible slip: the nearest by [`edit_distance`] once case and separators are set
/// aside (`Max-Turns`, `maxTurns`), else the only key that a cut-short `typo` begins
/// (`timeout` for `timeout_seconds`).
pub(crate) fn closest_key(typo: &str) -> Option<&'static str> {
    let typo = snake_case(typo);
    let near = Key::ALL
        .iter()
        .map(|key| (edit_distance(&typo, key.name()), key.name()))
        .filter(|&(distance, key)| distance <= 2.max(key.len() / 3))
        .min()
        .map(|(_, key)| key);
    near.or_else(|| {
        // Four letters at least, so that `max` or `num` does not pick a key by chance.
        let mut starting = KEYS
            .iter()
            .filter(|key| typo.len() >= 4 && key.starts_with(&typo));
        match (starting.next(), starting.next()) {
            (Some(&key), None) => Some(key),
            _ => None,
        }
    })
}

/// `name` as a config key would be spelt: lower case, words joined by `_`. Keys are snake
/// case, and `maxTurns`, `Max-Turns` and `max turns` are the same slip.
fn snake_case(name: &str) -> String {
    let mut out = String::with_capacity(name.len() + 4);
    let mut previous_lower = false;
    for c in name.chars() {
        if c.is_uppercase() && previous_lower {
            out.push('_');
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        match c {
            '-' | ' ' | '.' => out.push('_'),
            c => out.extend(c.to_lowercase()),
        }
    }
    out
}

/// Levenshtein distance, counting an adjacent swap as one edit (so `modle` is one edit
/// from `model`; strsim's optimal string alignment). Also behind the REPL's "did you mean
/// /config?" and `metron tool`'s, so every suggestion measures nearness alike.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    strsim::osa_distance(a, b)
}

/// The text of `metron.example.json` and `metron --example-config`: every key at its
/// built-in default.
pub(crate) fn example_json() -> String {
    let defaults = Config::default();
    let map: serde_json::Map<String, Value> = Key::ALL
        .iter()
        .map(|&key| (key.name().to_owned(), defaults.value(key)))
        .collect();
    let mut text = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_default();
    text.push('\n');
    text
}

#[cfg(test)]
mod tests;
