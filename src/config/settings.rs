//! The table of settings: one line per key, with its type, default and meaning.
//!
//! Everything else about a key (parsing it from JSON, printing it for `/config`, writing
//! `metron.example.json`, suggesting it when a user misspells it) is derived from this one
//! table, so adding a setting is one entry here plus whatever validation it needs.

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
/// turn it off; a project file never can (see [`PRIVILEGED_KEYS`]).
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

macro_rules! settings {
    ($( $(#[doc = $doc:literal])+ $name:ident : $ty:ty = $default:expr ; )*) => {
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

        impl Config {
            /// Sets `key` from JSON. `Ok(false)` means there is no such key.
            pub(crate) fn set_json(&mut self, key: &str, value: &Value) -> Result<bool, String> {
                match key {
                    $( stringify!($name) => {
                        self.$name = <$ty as SettingValue>::from_json(value)?;
                        Ok(true)
                    } )*
                    _ => Ok(false),
                }
            }

            /// The value of `key` as JSON, or `None` for an unknown key.
            pub(crate) fn get_json(&self, key: &str) -> Option<Value> {
                match key {
                    $( stringify!($name) => Some(self.$name.to_json()), )*
                    _ => None,
                }
            }
        }
    };
}

settings! {
    /// Ollama chat endpoint, path included.
    endpoint: String = "http://localhost:11434/api/chat".to_owned();
    /// When `endpoint` is another machine: `warn` (say so on stderr before the first
    /// request) or `refuse` (do not start). A project's file may only make this stricter.
    remote_endpoint: RemoteEndpoint = RemoteEndpoint::Warn;
    /// Model name to request.
    model: String = "qwen2.5-coder:32b".to_owned();
    /// Seconds of silence before a model call is abandoned (an idle watchdog).
    timeout_seconds: u64 = 180;
    /// Print the reply as it is generated.
    stream: bool = true;
    /// Sampling temperature.
    temperature: f64 = 0.1;
    /// Nucleus sampling cutoff, in (0, 1].
    top_p: f64 = 0.95;
    /// Context window requested from Ollama; the same on every request of a session.
    num_ctx: u64 = 16384;
    /// Maximum tokens Ollama may generate in one model call (sent as `num_predict`).
    max_output_tokens: u64 = 4096;
    /// Model round-trips allowed in one user turn.
    max_turns: u64 = 10;
    /// Tool output above this size is purged after the turn.
    compact_threshold_bytes: u64 = 400;
    /// Messages kept after a turn, excluding the system prompt.
    max_history_messages: u64 = 60;
    /// Widest span `view_slice` will read.
    max_slice_lines: u64 = 120;
    /// Longest single line a tool will emit before clipping it.
    max_line_chars: u64 = 500;
    /// Apply patches without showing the diff and asking (trusted config only).
    auto_approve_patches: bool = false;
    /// Total `search_text` results.
    search_max_matches: u64 = 10;
    /// `search_text` results per file.
    search_max_per_file: u64 = 2;
    /// Paths `list_files` will return (and definitions `find_symbol` will return).
    list_max_entries: u64 = 60;
    /// Tool names to withhold from the model entirely.
    disabled_tools: Vec<String> = Vec::new();
    /// Argv prefixes `run_command` may execute; empty withdraws the tool (trusted config only).
    allowed_commands: Vec<String> = Vec::new();
    /// Programs inside the project `run_command` may execute by path, with argv prefixes
    /// (`.venv/bin/pytest`, `./gradlew test`); the repository controls them (trusted config
    /// only, and never let through by `METRON_ALLOW_PROJECT_COMMANDS`).
    allowed_project_programs: Vec<String> = Vec::new();
    /// Wall clock one `run_command` gets.
    command_timeout_seconds: u64 = 120;
    /// Combined output `run_command` returns.
    max_command_output_bytes: u64 = 4000;
    /// Largest file `apply_patch` reads or writes (16 MiB): a larger target is refused
    /// from its size, before it is read, so a huge file cannot exhaust memory.
    max_patch_file_bytes: u64 = 16 * 1024 * 1024;
    /// Environment variables passed to `run_command` beyond the safe set (trusted config only).
    command_env_passthrough: Vec<String> = Vec::new();
    /// `on`: every command runs in the OS sandbox, and none runs where there is none;
    /// `off`: commands run with all of your rights (trusted config only).
    command_sandbox: SandboxMode = SandboxMode::On;
    /// More places sandboxed commands may write, absolute or `~/...` (`~/.cache/go-build`);
    /// protected paths stay closed inside them (trusted config only).
    command_writable_paths: Vec<String> = Vec::new();
    /// More places sandboxed commands may neither read nor write, absolute or `~/...`,
    /// beyond the built-in set (`~/.ssh`, `~/.aws`, `~/.metron`, ...).
    command_protected_paths: Vec<String> = Vec::new();
    /// Allowlist prefixes whose commands may use the network (`npm install`); all others
    /// have none (trusted config only).
    command_network: Vec<String> = Vec::new();
    /// Allowlist prefixes whose commands may write `.git` (`git add`, `git commit`); its
    /// hooks and config stay read-only even then (trusted config only).
    command_git_writes: Vec<String> = Vec::new();
    /// Keep the lines typed at the session prompt in `input_history` in the user's metron
    /// directory, so the next session offers them with the arrow keys. A project's file may
    /// only turn it off (see `config::load`).
    save_input_history: bool = true;
}

/// Keys a project's own `.metron.json` may not set, because they widen what metron may do
/// without asking. See `config::load`.
///
/// `remote_endpoint` is deliberately not here: its only values are the default (`warn`)
/// and the stricter `refuse`, so a project can use it to forbid remote routes but never to
/// allow one. A project file saying `warn` changes nothing: it is the default, and when the
/// user's own config file says `refuse`, that refusal still holds (see `config::load`).
/// Likewise `endpoint` is not here, because a project's value is accepted only when it names
/// this machine, and neither is `save_input_history`: a project's `false` keeps less on
/// disk, and its `true` is the default, which never outweighs the user's own `false`.
pub(crate) const PRIVILEGED_KEYS: &[&str] = &[
    "auto_approve_patches",
    "allowed_commands",
    "allowed_project_programs",
    "command_env_passthrough",
    "command_sandbox",
    "command_writable_paths",
    "command_protected_paths",
    "command_network",
    "command_git_writes",
];
