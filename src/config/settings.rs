//! The table of settings: one line per key, with its type, default and meaning.
//!
//! Everything else about a key (parsing it from JSON, printing it for `/config`, writing
//! `metron.example.json`, suggesting it when a user misspells it, what a project's file may
//! do with it) is derived from this one table, so adding a setting is one entry here plus
//! whatever validation it needs.

use serde_json::Value;

/// A type a setting can have, with its JSON conversion.
///
/// Kept separate from serde so that a type error can name the key and say what was
/// expected in words a user understands ("a positive integer", not "u64").
pub(crate) trait SettingValue: Sized {
    /// Reads the value from JSON, or says in a few words what was expected instead.
    fn from_json(value: &Value) -> Result<Self, String>;
    /// The value as JSON, for `/config` and the example file.
    fn to_json(&self) -> Value;
}

impl SettingValue for String {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| "must be a string".to_owned())
    }
    fn to_json(&self) -> Value {
        Value::String(self.clone())
    }
}

impl SettingValue for bool {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_bool()
            .ok_or_else(|| "must be true or false".to_owned())
    }
    fn to_json(&self) -> Value {
        Value::Bool(*self)
    }
}

impl SettingValue for u64 {
    fn from_json(value: &Value) -> Result<Self, String> {
        value
            .as_u64()
            .ok_or_else(|| "must be a positive integer".to_owned())
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

impl SettingValue for f64 {
    fn from_json(value: &Value) -> Result<Self, String> {
        value.as_f64().ok_or_else(|| "must be a number".to_owned())
    }
    fn to_json(&self) -> Value {
        Value::from(*self)
    }
}

/// What metron does when `endpoint` is not on this machine (the `remote_endpoint` key).
///
/// Written in JSON as the string `"warn"` or `"refuse"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum RemoteEndpoint {
    /// Start, and say once per session, before the first request, that code will be sent
    /// to that host.
    #[default]
    Warn,
    /// Do not start: no request is ever sent to another host.
    Refuse,
}

impl RemoteEndpoint {
    /// The word used in JSON and in messages.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            RemoteEndpoint::Warn => "warn",
            RemoteEndpoint::Refuse => "refuse",
        }
    }
}

impl SettingValue for RemoteEndpoint {
    fn from_json(value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("warn") => Ok(RemoteEndpoint::Warn),
            Some("refuse") => Ok(RemoteEndpoint::Refuse),
            _ => Err(format!("must be \"warn\" or \"refuse\", got {value}")),
        }
    }
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

/// How far commands are confined: `command_sandbox` in the user's own config.
///
/// Written in JSON as `"on"` (the default) or `"off"`. Only the user's own config can
/// turn it off; a project file never can (it is [`Rule::Privileged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Every command runs confined; where the platform cannot confine, none runs.
    #[default]
    On,
    /// Commands run with all of the user's rights, said in the banner, the doctor and
    /// every question.
    Off,
}

impl SandboxMode {
    /// The word used in JSON and in messages.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            SandboxMode::On => "on",
            SandboxMode::Off => "off",
        }
    }
}

impl SettingValue for SandboxMode {
    fn from_json(value: &Value) -> Result<Self, String> {
        match value.as_str() {
            Some("on") => Ok(SandboxMode::On),
            Some("off") => Ok(SandboxMode::Off),
            _ => Err(format!("must be \"on\" or \"off\", got {value}")),
        }
    }
    fn to_json(&self) -> Value {
        Value::from(self.as_str())
    }
}

impl SettingValue for Vec<String> {
    fn from_json(value: &Value) -> Result<Self, String> {
        let err = || "must be a list of strings".to_owned();
        value
            .as_array()
            .ok_or_else(err)?
            .iter()
            .map(|item| item.as_str().map(str::to_owned).ok_or_else(err))
            .collect()
    }
    fn to_json(&self) -> Value {
        Value::from(self.clone())
    }
}

/// What a project's own `.metron.json` may do with a key, declared beside the key in the
/// table below (`[Privileged] allowed_commands: ...`), so the trust rules are read in the
/// same place as the keys and cannot drift from them. `config::apply_file` and
/// `config::keep_user_limits` match on it; a key without a rule is [`Rule::Free`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    /// A preference (the model, sampling, `stream`): the project's value stands.
    Free,
    /// A server address: the project's value is accepted only when it names this
    /// machine, since every byte the tools read is sent there, and only when neither the
    /// user's own file nor the environment chose one (the user's choice of server stands).
    LocalOnly,
    /// Widens what metron may do without asking: a project's file may not set it (only
    /// `allowed_commands` may be let through, by `METRON_ALLOW_PROJECT_COMMANDS`).
    Privileged,
    /// A limit: when the user's own file sets it, a project's value that loosens it (see
    /// [`Loosens`], which the key's type must implement) is put back, with a warning.
    TightenOnly,
    /// A list of things withheld: the user's list plus the project's, so a project may
    /// withhold more but never offer what the user withheld. Only for `Vec<String>`.
    Union,
}

/// A setting's type that is a limit: knows whether a new value allows more than the old.
///
/// Implemented only for the types whose direction does not depend on the key. A list is
/// left out on purpose: more entries allow more in `allowed_commands` but less in
/// `disabled_tools`, so marking a list [`Rule::TightenOnly`] does not compile; a list of
/// things withheld is [`Rule::Union`] instead.
pub(crate) trait Loosens {
    /// True when `new` allows more than `self`.
    fn loosens(&self, new: &Self) -> bool;
}

/// Every integer setting is a budget: more of it allows more.
impl Loosens for u64 {
    fn loosens(&self, new: &Self) -> bool {
        new > self
    }
}

/// Every boolean limit is phrased so that `true` allows more (`save_input_history` keeps
/// what is typed, `auto_approve_patches` skips the question).
impl Loosens for bool {
    fn loosens(&self, new: &Self) -> bool {
        !*self && *new
    }
}

/// `refuse` is the stricter: anything else lifts it.
impl Loosens for RemoteEndpoint {
    fn loosens(&self, new: &Self) -> bool {
        *self == RemoteEndpoint::Refuse && *new != RemoteEndpoint::Refuse
    }
}

/// `on` confines commands: anything else lifts it.
impl Loosens for SandboxMode {
    fn loosens(&self, new: &Self) -> bool {
        *self == SandboxMode::On && *new != SandboxMode::On
    }
}

/// The user's list with the project's entries it lacks appended, in the project's order;
/// the result of [`Rule::Union`].
fn union(users: &[String], project: &[String]) -> Vec<String> {
    let mut merged = users.to_vec();
    for entry in project {
        if !merged.contains(entry) {
            merged.push(entry.clone());
        }
    }
    merged
}

/// The model asked for when no layer names one: the one the README tells a new user to
/// pull (`ollama pull qwen2.5-coder:7b`), so that following the README gives a setup the
/// doctor passes. It supports tools and runs on a laptop; a larger model is one `/model
/// NAME --save` away.
pub(crate) const DEFAULT_MODEL: &str = "qwen2.5-coder:7b";

macro_rules! settings {
    ($( $(#[doc = $doc:literal])+ $([$rule:ident])? $name:ident : $ty:ty = $default:expr ; )*) => {
        /// Every effective setting, after defaults, the config file and the environment
        /// have been layered and validated.
        #[derive(Debug, Clone, PartialEq)]
        pub struct Config {
            $( $(#[doc = $doc])+ pub $name: $ty, )*
        }

        impl Default for Config {
            fn default() -> Self {
                Config { $( $name: $default, )* }
            }
        }

        /// Every key, in the order the documentation lists them.
        pub const KEYS: &[&str] = &[$( stringify!($name), )*];

        /// One setting. The rules about keys match on this, so a misspelt key is a compile
        /// error instead of a rule that silently never applies.
        ///
        /// The variants are spelt exactly as the JSON keys, so that searching for a key
        /// finds its rules, its uses and its documentation alike.
        #[allow(non_camel_case_types)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub(crate) enum Key {
            $( $(#[doc = $doc])+ $name, )*
        }

        impl Key {
            /// Every key, in the order of [`KEYS`].
            pub(crate) const ALL: &[Key] = &[$( Key::$name, )*];

            /// The key as written in JSON.
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $( Key::$name => stringify!($name), )*
                }
            }

            /// The key written `name` in JSON, if there is one.
            pub(crate) fn from_name(name: &str) -> Option<Key> {
                match name {
                    $( stringify!($name) => Some(Key::$name), )*
                    _ => None,
                }
            }

            /// What a project's file may do with this key.
            pub(crate) fn rule(self) -> Rule {
                match self {
                    $( Key::$name => settings!(@rule $($rule)?), )*
                }
            }
        }

        impl Config {
            /// Sets `key` from JSON, or says what was expected instead.
            pub(crate) fn set_json(&mut self, key: Key, value: &Value) -> Result<(), String> {
                match key {
                    $( Key::$name => self.$name = <$ty as SettingValue>::from_json(value)?, )*
                }
                Ok(())
            }

            /// The value of `key` as JSON.
            pub(crate) fn value(&self, key: Key) -> Value {
                match key {
                    $( Key::$name => self.$name.to_json(), )*
                }
            }

            /// Sets `key` to its value in `other`.
            pub(crate) fn copy_from(&mut self, key: Key, other: &Config) {
                match key {
                    $( Key::$name => self.$name = other.$name.clone(), )*
                }
            }

            /// True when this value of `key` allows more than its value in `limits`. Only a
            /// [`Rule::TightenOnly`] key has a direction; every other key says false.
            pub(crate) fn loosens(&self, key: Key, limits: &Config) -> bool {
                match key {
                    $( Key::$name => settings!(@loosens $($rule)? ; limits.$name, self.$name), )*
                }
            }

            /// For a [`Rule::Union`] key, sets it to its list in `users` plus the entries
            /// of this one, and says whether this one added any; other keys are left alone
            /// and say false.
            pub(crate) fn union_with(&mut self, key: Key, users: &Config) -> bool {
                match key {
                    $( Key::$name => settings!(@union $($rule)? ; users.$name, self.$name), )*
                }
            }
        }
    };
    (@rule) => { Rule::Free };
    (@rule $rule:ident) => { Rule::$rule };
    (@loosens TightenOnly ; $limit:expr, $new:expr) => { Loosens::loosens(&$limit, &$new) };
    (@loosens $($rule:ident)? ; $limit:expr, $new:expr) => { false };
    (@union Union ; $users:expr, $mine:expr) => {{
        let merged = union(&$users, &$mine);
        let added = merged.len() > $users.len();
        $mine = merged;
        added
    }};
    (@union $($rule:ident)? ; $users:expr, $mine:expr) => { false };
}

// A bracketed rule before a key says what a project's file may do with it (see [`Rule`]);
// none means `Free`. Three keys that a project could misuse are deliberately not
// `Privileged`, because a project may use them to tighten:
// - `remote_endpoint`: its only values are the default (`warn`) and the stricter `refuse`,
//   so a project can forbid remote routes but never allow one; a project's `warn` never
//   outweighs the user's own `refuse` (it is `TightenOnly`).
// - `endpoint`: a project's value is accepted only when it names this machine and the
//   user chose none (in their own file or `$OLLAMA_HOST`).
// - `save_input_history`: a project's `false` keeps less on disk, and its `true` is the
//   default, which never outweighs the user's own `false`.
settings! {
    /// The model server's chat endpoint, path included: Ollama's `/api/chat`, or an
    /// OpenAI-compatible server's `/v1/chat/completions` (written as `.../v1`).
    [LocalOnly] endpoint: String = "http://localhost:11434/api/chat".to_owned();
    /// When `endpoint` is another machine: `warn` (say so on stderr before the first
    /// request) or `refuse` (do not start). A project's file may only make this stricter.
    [TightenOnly] remote_endpoint: RemoteEndpoint = RemoteEndpoint::Warn;
    /// Model name to request.
    model: String = DEFAULT_MODEL.to_owned();
    /// Seconds of silence before a model call is abandoned (an idle watchdog).
    [TightenOnly] timeout_seconds: u64 = 180;
    /// Print the reply as it is generated.
    stream: bool = true;
    /// Sampling temperature.
    temperature: f64 = 0.1;
    /// Nucleus sampling cutoff, in (0, 1].
    top_p: f64 = 0.95;
    /// Context window requested from Ollama; the same on every request of a session.
    [TightenOnly] num_ctx: u64 = 16384;
    /// Maximum tokens Ollama may generate in one model call (sent as `num_predict`).
    [TightenOnly] max_output_tokens: u64 = 4096;
    /// Model round-trips allowed in one user turn.
    [TightenOnly] max_turns: u64 = 10;
    /// Tool output above this size is purged after the turn.
    [TightenOnly] compact_threshold_bytes: u64 = 400;
    /// Messages kept after a turn, excluding the system prompt.
    [TightenOnly] max_history_messages: u64 = 60;
    /// Widest span `view_slice` will read.
    [TightenOnly] max_slice_lines: u64 = 120;
    /// Longest single line a tool will emit before clipping it.
    [TightenOnly] max_line_chars: u64 = 500;
    /// Apply patches without showing the diff and asking (trusted config only).
    [Privileged] auto_approve_patches: bool = false;
    /// Total `search_text` results.
    [TightenOnly] search_max_matches: u64 = 10;
    /// `search_text` results per file.
    [TightenOnly] search_max_per_file: u64 = 2;
    /// Paths `list_files` will return (and definitions `find_symbol` will return).
    [TightenOnly] list_max_entries: u64 = 60;
    /// Tool names to withhold from the model entirely.
    [Union] disabled_tools: Vec<String> = Vec::new();
    /// Argv prefixes `run_command` may execute; empty withdraws the tool (trusted config only).
    [Privileged] allowed_commands: Vec<String> = Vec::new();
    /// Programs inside the project `run_command` may execute by path, with argv prefixes
    /// (`.venv/bin/pytest`, `./gradlew test`); the repository controls them (trusted config
    /// only, and never let through by `METRON_ALLOW_PROJECT_COMMANDS`).
    [Privileged] allowed_project_programs: Vec<String> = Vec::new();
    /// Wall clock one `run_command` gets.
    [TightenOnly] command_timeout_seconds: u64 = 120;
    /// Combined output `run_command` returns.
    [TightenOnly] max_command_output_bytes: u64 = 4000;
    /// Largest file `apply_patch` reads or writes (16 MiB): a larger target is refused
    /// from its size, before it is read, so a huge file cannot exhaust memory.
    [TightenOnly] max_patch_file_bytes: u64 = 16 * 1024 * 1024;
    /// Environment variables passed to `run_command` beyond the safe set (trusted config only).
    [Privileged] command_env_passthrough: Vec<String> = Vec::new();
    /// `on`: every command runs in the OS sandbox, and none runs where there is none;
    /// `off`: commands run with all of your rights (trusted config only).
    [Privileged] command_sandbox: SandboxMode = SandboxMode::On;
    /// More places sandboxed commands may write, absolute or `~/...` (`~/.cache/go-build`);
    /// protected paths stay closed inside them (trusted config only).
    [Privileged] command_writable_paths: Vec<String> = Vec::new();
    /// More places sandboxed commands may neither read nor write, absolute or `~/...`,
    /// beyond the built-in set (`~/.ssh`, `~/.aws`, `~/.metron`, ...).
    [Privileged] command_protected_paths: Vec<String> = Vec::new();
    /// Allowlist prefixes whose commands may use the network (`npm install`); all others
    /// have none (trusted config only).
    [Privileged] command_network: Vec<String> = Vec::new();
    /// Allowlist prefixes whose commands may write `.git` (`git add`, `git commit`); its
    /// hooks and config stay read-only even then (trusted config only).
    [Privileged] command_git_writes: Vec<String> = Vec::new();
    /// Keep the lines typed at the session prompt in `input_history` in the user's metron
    /// directory, so the next session offers them with the arrow keys. A project's file may
    /// only turn it off (see `config::load`).
    [TightenOnly] save_input_history: bool = true;
    /// Read the project's instruction files (AGENTS.md, else a fallback name, from the
    /// project root down to the working directory) and the user's own AGENTS.md, and send
    /// them after the system prompt. A project's file may only turn it off.
    [TightenOnly] instructions: bool = true;
    /// Most bytes of instruction text sent, all files together (8 KiB, about 2,000
    /// tokens: an eighth of the default 16k context); the rest is cut, with a note.
    [TightenOnly] instructions_max_bytes: u64 = 8192;
    /// Names read in a directory that has no AGENTS.md, in order (trusted config only).
    [Privileged] instructions_fallbacks: Vec<String> = vec!["CLAUDE.md".to_owned()];
    /// At the start of a session, remove this project's saved sessions last written more
    /// than this many days ago, naming each (as `metron sessions prune` does by hand); 0,
    /// the default, removes none. Only your own file may set it: a repository must never
    /// delete your sessions.
    [Privileged] session_retention_days: u64 = 0;
}

impl Config {
    /// The value of the key written `key` in JSON, or `None` for an unknown key: for
    /// callers that hold the name ([`KEYS`], `/config`).
    pub(crate) fn get_json(&self, key: &str) -> Option<Value> {
        Key::from_name(key).map(|key| self.value(key))
    }
}

impl Key {
    /// True when a project's file may not set this key at all.
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn is_privileged(self) -> bool {
        self.rule() == Rule::Privileged
    }

    /// True when a project's file may only tighten the value the user's own file sets.
    pub(crate) fn is_tighten_only(self) -> bool {
        matches!(self.rule(), Rule::TightenOnly | Rule::Union)
    }
}

impl std::fmt::Display for Key {
    /// The key as written in JSON, so messages read the same as when keys were strings.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
