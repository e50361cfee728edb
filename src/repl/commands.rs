//! The REPL's slash commands. Each returns the text to print, so they are easy to test.
//!
//! Every line that starts with `/` is a command and is never sent to the model: a typo
//! (`/confg`) or a command with arguments it does not take gets an error with the nearest
//! command, instead of costing a model round trip, or showing the model a line the person
//! meant for metron.

use std::fmt::Write;
use std::path::Path;

use crate::agent::{Agent, Model, prompt::approx_tokens};
use crate::config::{ConfigTrust, KEYS, Loaded, Source, edit_distance};
use crate::display::{HANG, one_line_safe as shown, wrap};
use crate::frontend::models::{Installed, ToolSupport, installed_as};
use crate::tools::symbols::census::Census;

/// A line the REPL handles itself instead of sending to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Command {
    /// List the commands.
    Help,
    /// Every effective setting with its layer, and the tools offered.
    Config,
    /// List the installed models with tool support (`None`), or switch to one.
    Model(Option<String>),
    /// Switch to this model (`None`: keep the current one) and write it as `model` to the
    /// user's own config file, so the next session starts with it: `/model NAME --save`.
    SaveModel(Option<String>),
    /// Clear the conversation, keeping the system prompt.
    Reset,
    /// How much the session is carrying.
    History,
    /// Rebuild the symbol index.
    Tags,
    /// This session's tool calls, from proposal to what the model was told.
    Ledger,
    /// The full text the model read for call N (`/show N`, `/ledger N`).
    Show(usize),
    /// This session's writes as one diff.
    Diff,
    /// Revert the newest patch.
    Undo,
    /// What the model has been shown, and what it still carries.
    Context,
    /// This project's saved sessions, newest first.
    Sessions,
    /// Leave.
    Exit,
}

/// One way to type a slash command, as `/help` lists it: `/model` and `/model NAME` are
/// two entries, because they do different things.
///
/// This table is the only list of the commands: parsing, `/help`, the man page and the
/// "did you mean" hint all read it, and a test holds docs/usage.md to it, so a command
/// cannot be added to one and forgotten in another.
#[derive(Debug)]
pub(crate) struct Slash {
    /// The name after the `/`.
    pub(crate) name: &'static str,
    /// Other names that run this entry (`/quit`, `/ledger N`); `/help` mentions them in
    /// [`help`](Self::help).
    aliases: &'static [&'static str],
    /// The argument as `/help` writes it (`NAME`, `N`); `None` for the entry used
    /// without one.
    pub(crate) argument: Option<&'static str>,
    /// What it does, in one line.
    pub(crate) help: &'static str,
    /// Builds the command from the name as typed and the words after it (trimmed; empty
    /// when there are none).
    parse: fn(&str, &str) -> Result<Command, String>,
}

impl Slash {
    /// How the entry is typed: `/model NAME`.
    pub(crate) fn usage(&self) -> String {
        match self.argument {
            Some(argument) => format!("/{} {argument}", self.name),
            None => format!("/{}", self.name),
        }
    }

    /// Every name the entry answers to, its own first: what Tab completes after `/`.
    pub(crate) fn names(&self) -> impl Iterator<Item = &'static str> {
        std::iter::once(self.name).chain(self.aliases.iter().copied())
    }

    fn answers_to(&self, name: &str) -> bool {
        self.name == name || self.aliases.contains(&name)
    }
}

/// Every slash command, in the order `/help` lists them.
pub(crate) const COMMANDS: &[Slash] = &[
    Slash {
        name: "help",
        aliases: &["?"],
        argument: None,
        help: "list the commands",
        parse: |_, _| Ok(Command::Help),
    },
    Slash {
        name: "config",
        aliases: &[],
        argument: None,
        help: "print the effective settings, which layer each came from, and the tools offered",
        parse: |_, _| Ok(Command::Config),
    },
    Slash {
        name: "model",
        aliases: &[],
        argument: None,
        help: "list the installed models that support tools, marking the current one",
        parse: |_, _| Ok(Command::Model(None)),
    },
    Slash {
        name: "model",
        aliases: &[],
        argument: Some("NAME"),
        help: "switch to NAME (installed, with tool support); the conversation is kept. With --save, also write it to your own config file (the only config write metron makes)",
        parse: |_, args| parse_model(args),
    },
    Slash {
        name: "reset",
        aliases: &[],
        argument: None,
        help: "clear the conversation history, keeping the system prompt",
        parse: |_, _| Ok(Command::Reset),
    },
    Slash {
        name: "history",
        aliases: &[],
        argument: None,
        help: "show how many messages and bytes the session is carrying",
        parse: |_, _| Ok(Command::History),
    },
    Slash {
        name: "tags",
        aliases: &[],
        argument: None,
        help: "rebuild the symbol index behind find_symbol (after a big refactor)",
        parse: |_, _| Ok(Command::Tags),
    },
    Slash {
        name: "ledger",
        aliases: &[],
        argument: None,
        help: "every tool call of this session: proposed, decided, approved, done, reported",
        parse: |_, _| Ok(Command::Ledger),
    },
    Slash {
        name: "show",
        aliases: &["ledger"],
        argument: Some("N"),
        help: "the full result of call N exactly as the model read it (also /ledger N)",
        parse: |name, args| parse_call_number(name, args).map(Command::Show),
    },
    Slash {
        name: "diff",
        aliases: &[],
        argument: None,
        help: "this session's writes as one diff: each file from before metron's first write",
        parse: |_, _| Ok(Command::Diff),
    },
    Slash {
        name: "undo",
        aliases: &[],
        argument: None,
        help: "revert the newest patch metron applied (only if its files are as metron left them)",
        parse: |_, _| Ok(Command::Undo),
    },
    Slash {
        name: "context",
        aliases: &[],
        argument: None,
        help: "what the model has been shown (files and lines, searches, symbols) and still carries",
        parse: |_, _| Ok(Command::Context),
    },
    Slash {
        name: "sessions",
        aliases: &[],
        argument: None,
        help: "this project's saved sessions, newest first (continue one with metron --resume ID)",
        parse: |_, _| Ok(Command::Sessions),
    },
    Slash {
        name: "exit",
        aliases: &["quit"],
        argument: None,
        help: "quit (also exit, quit, /quit, or Ctrl-D)",
        parse: |_, _| Ok(Command::Exit),
    },
];

/// What `/help` says after the commands, and the man page after its list.
pub(crate) const NOTES: &[&str] = &[
    "A line starting with / is always a command; anything else is sent to the model.",
    "Ctrl-C cancels a reply in progress; at the prompt it clears the line (Ctrl-D or /exit quits).",
    "Typed lines are offered again next session (arrow keys), except one starting with a space;",
    "save_input_history: false keeps none.",
    "Tab completes commands, models and paths; Alt-Enter or Ctrl-J adds a line.",
];

/// The column where each entry's help starts in `/help`.
const HELP_COLUMN: usize = 15;

/// The text of `/help`, one line per entry and note, each ending in a newline: each entry's
/// usage in a column, its line of help, then the notes. On a terminal of `width` columns
/// the lines are wrapped at spaces, an entry's help continuing under its column.
pub(crate) fn help_text(width: Option<usize>) -> String {
    let fitted = |line: String, hang: usize| match width {
        Some(width) => wrap(&line, width, hang),
        None => line,
    };
    let mut text = String::new();
    for command in COMMANDS {
        let line = format!("{:<HELP_COLUMN$}{}", command.usage(), command.help);
        let _ = writeln!(text, "{}", fitted(line, HELP_COLUMN));
    }
    for note in NOTES {
        let _ = writeln!(text, "{}", fitted((*note).to_owned(), HANG));
    }
    text
}

impl Command {
    /// Recognises a command line. `Ok(None)` is a line for the model; `Err` carries the
    /// message for a line that starts with `/` but is not a command metron can run (an
    /// unknown name, or arguments the command does not take), so that such a line never
    /// reaches the model.
    pub(crate) fn parse(line: &str) -> Result<Option<Command>, String> {
        let line = line.trim();
        if line == "exit" || line == "quit" {
            return Ok(Some(Command::Exit));
        }
        let Some(rest) = line.strip_prefix('/') else {
            return Ok(None);
        };
        let (name, args) = match rest.split_once(char::is_whitespace) {
            Some((name, args)) => (name, args.trim()),
            None => (rest, ""),
        };
        let mut forms = COMMANDS.iter().filter(|c| c.answers_to(name));
        let Some(first) = forms.next() else {
            return Err(unknown_command(name, args));
        };
        // The form that matches: with an argument when one was given, else without one
        // (`/show` alone gets the error that asks for its argument).
        let chosen = std::iter::once(first)
            .chain(forms)
            .find(|c| c.argument.is_some() != args.is_empty());
        match chosen {
            Some(form) => (form.parse)(name, args).map(Some),
            None if args.is_empty() => (first.parse)(name, args).map(Some),
            None => Err(format!(
                "/{name} takes no arguments; did you mean /{name}? (/help lists the commands)"
            )),
        }
    }
}

/// The argument of `/show N` (or `/ledger N`): a call number as `/ledger` numbers them.
fn parse_call_number(name: &str, args: &str) -> Result<usize, String> {
    match args.parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(format!(
            "/{name} takes a call number, as /ledger numbers them: /{name} 3"
        )),
    }
}

/// The flag of `/model NAME --save`.
const SAVE_FLAG: &str = "--save";

/// The arguments of `/model`: none, one model name (model names hold no spaces), and
/// `--save` before or after it.
fn parse_model(args: &str) -> Result<Command, String> {
    let words: Vec<&str> = args.split_whitespace().collect();
    let save = words.contains(&SAVE_FLAG);
    let names: Vec<&str> = words.into_iter().filter(|w| *w != SAVE_FLAG).collect();
    match (names.as_slice(), save) {
        ([], false) => Ok(Command::Model(None)),
        ([], true) => Ok(Command::SaveModel(None)),
        ([name], false) => Ok(Command::Model(Some((*name).to_owned()))),
        ([name], true) => Ok(Command::SaveModel(Some((*name).to_owned()))),
        ([name, ..], _) => Err(format!(
            "/model takes one model name, and model names hold no spaces; did you mean /model {name}? (/model alone lists the models with tool support)"
        )),
    }
}

/// The error for a `/word` that is no command: the nearest command when one is close, and,
/// for what looks like a path or a sentence, how to ask the model about it instead.
fn unknown_command(name: &str, args: &str) -> String {
    let mut text = match closest_command(name) {
        Some(near) => {
            format!("unknown command /{name}; did you mean /{near}? (/help lists the commands)")
        }
        None => format!("unknown command /{name}; /help lists the commands"),
    };
    if name.contains('/') || !args.is_empty() {
        text.push_str(
            ". A line starting with / is never sent to the model: to ask about a path, start the line with a word (\"what is in /etc/hosts?\")",
        );
    }
    text
}

/// The command nearest to a mistyped name: within a third of its length in edits (at
/// least one edit), or of which the name is a beginning (`/hist`).
fn closest_command(typed: &str) -> Option<&'static str> {
    let typed = typed.to_lowercase();
    // Names and aliases that are words: a one-letter typo is not taken for `/?`.
    COMMANDS
        .iter()
        .flat_map(|c| std::iter::once(&c.name).chain(c.aliases))
        .filter(|name| name.chars().all(|c| c.is_ascii_alphabetic()))
        .filter_map(|&name| {
            let distance = edit_distance(&typed, name);
            let near = distance <= 1.max(name.len() / 3)
                || (typed.chars().count() >= 2 && name.starts_with(typed.as_str()));
            near.then_some((distance, name))
        })
        .min()
        .map(|(_, name)| name)
}

/// How the layer that chose a setting reads in a sentence: `the built-in default`,
/// `from --model`, `from $OLLAMA_MODEL`, `from .metron.json` (a file beneath `root` is
/// named relative to it), `chosen with /model`.
pub(crate) fn chosen_by(source: &Source, root: &Path) -> String {
    match source {
        Source::Default => "the built-in default".to_owned(),
        Source::File(path) => {
            let shown = path.strip_prefix(root).unwrap_or(path);
            format!("from {}", shown.display())
        }
        Source::Env(_) | Source::Flag(_) => format!("from {source}"),
        Source::Command(command) => format!("chosen with {command}"),
    }
}

/// The layer a key's value came from, as `/config` shows it: `user PATH` or `project
/// .metron.json` for a file (a file beneath `root` relative to it), else the layer's own
/// name (`default`, `$OLLAMA_HOST`, `--model`, `/model`).
pub(crate) fn layer_text(loaded: &Loaded, key: &str, root: &Path) -> String {
    let source = loaded.source_of(key);
    let Source::File(path) = source else {
        return source.to_string();
    };
    let shown = path.strip_prefix(root).unwrap_or(path).display();
    match loaded.trust_of(path) {
        Some(ConfigTrust::User) => format!("user {shown}"),
        Some(ConfigTrust::Project) => format!("project {shown}"),
        None => shown.to_string(),
    }
}

/// The config files read, for the banner and `/config`: each named (relative to `root`
/// when beneath it) with its layer, lowest first, or that there was none.
pub(crate) fn files_text(loaded: &Loaded, root: &Path) -> String {
    if loaded.files.is_empty() {
        return "built-in defaults (no config file)".to_owned();
    }
    let named: Vec<String> = loaded
        .files
        .iter()
        .map(|file| {
            let shown = file.path.strip_prefix(root).unwrap_or(&file.path).display();
            match (file.trust, loaded.files.len()) {
                (_, 1) => shown.to_string(),
                (ConfigTrust::User, _) => format!("{shown} (yours)"),
                (ConfigTrust::Project, _) => format!("{shown} (the project's, on top)"),
            }
        })
        .collect();
    named.join(", ")
}

/// The names of `models` with this tool support, in the server's order.
fn names_with(models: &[Installed], tools: ToolSupport) -> Vec<&str> {
    models
        .iter()
        .filter(|m| m.tools == tools)
        .map(|m| m.name.as_str())
        .collect()
}

/// Model names for one line of text: each escaped (a name from `/api/tags` or a
/// `.metron.json` may hold a newline), joined with commas.
fn joined(names: &[&str]) -> String {
    names
        .iter()
        .map(|name| shown(name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// ` (cloud: runs at HOST)` for a model the server passes on to another host, so the list
/// never offers one without saying where the code would go; empty otherwise.
fn cloud_note(models: &[Installed], name: &str) -> String {
    match models.iter().find(|m| m.name == name).map(|m| &m.place) {
        Some(crate::disclosure::ModelPlace::Remote { host }) => {
            format!(" (cloud: runs at {}, not on this machine)", shown(host))
        }
        _ => String::new(),
    }
}

/// What can be chosen instead: `installed models with tool support: a, b`, or that there
/// is none, plus any model the server did not describe in time.
fn alternatives(models: &[Installed]) -> String {
    let usable = names_with(models, ToolSupport::Yes);
    let mut text = if usable.is_empty() {
        "no installed model supports tools".to_owned()
    } else {
        format!("installed models with tool support: {}", joined(&usable))
    };
    let unknown = names_with(models, ToolSupport::Unknown);
    if !unknown.is_empty() {
        let _ = write!(
            text,
            " (not described by the server in time: {})",
            joined(&unknown)
        );
    }
    let served = names_with(models, ToolSupport::NotReported);
    if !served.is_empty() {
        text = format!("models served: {}", joined(&served));
    }
    text
}

/// The next step when no installed model supports tools.
const PULL_ONE: &str =
    "`ollama pull qwen3` installs one (`ollama show NAME` lists a model's capabilities)";

/// The start-up notice for a configured `model` (`chosen` says by which layer) that the
/// server at `server` does not have: what is there instead, and how to choose it.
pub(crate) fn missing_model_text(
    model: &str,
    chosen: &str,
    server: &str,
    models: &[Installed],
) -> String {
    let model = shown(model);
    let next = if !names_with(models, ToolSupport::NotReported).is_empty() {
        "Switch with /model NAME, or load that model on the server".to_owned()
    } else if names_with(models, ToolSupport::Yes).is_empty() {
        format!("Run `ollama pull {model}`, or {PULL_ONE}")
    } else {
        format!("Switch with /model NAME, or run `ollama pull {model}`")
    };
    let missing = if names_with(models, ToolSupport::NotReported).is_empty() {
        "not installed"
    } else {
        "not served"
    };
    format!(
        "the model {model} ({chosen}) is {missing} at {server}; {}. {next}",
        alternatives(models)
    )
}

/// `/model`: the installed models with tool support, the current one marked with `*`;
/// then what else is installed, so nothing on the server is hidden.
pub(crate) fn model_list_text(
    current: &str,
    chosen: &str,
    server: &str,
    models: &[Installed],
) -> String {
    let names: Vec<&str> = models.iter().map(|m| m.name.as_str()).collect();
    let resolved = installed_as(current, names.iter().copied());
    let served = names_with(models, ToolSupport::NotReported);
    if !served.is_empty() {
        return served_list_text(current, chosen, server, &served);
    }
    let usable = names_with(models, ToolSupport::Yes);
    let mut text = String::new();
    if usable.is_empty() {
        let _ = writeln!(
            text,
            "no model installed at {server} supports tools; {PULL_ONE}"
        );
    } else {
        let _ = writeln!(text, "models with tool support at {server}:");
        for name in &usable {
            let cloud = cloud_note(models, name);
            if Some(*name) == resolved {
                let _ = writeln!(text, "* {} (current, {chosen}){cloud}", shown(name));
            } else {
                let _ = writeln!(text, "  {}{cloud}", shown(name));
            }
        }
    }
    let current_usable = resolved.is_some_and(|name| usable.contains(&name));
    if !current_usable {
        let why = match resolved {
            None => "which is not installed",
            Some(_) => "which does not support tools",
        };
        let _ = writeln!(text, "current: {} ({chosen}), {why}", shown(current));
    }
    let without = names_with(models, ToolSupport::No);
    if !without.is_empty() {
        let _ = writeln!(text, "installed without tool support: {}", joined(&without));
    }
    let unknown = names_with(models, ToolSupport::Unknown);
    if !unknown.is_empty() {
        let _ = writeln!(
            text,
            "not described by the server in time: {}",
            joined(&unknown)
        );
    }
    if !usable.is_empty() {
        text.push_str("/model NAME switches to another; the conversation is kept\n");
    }
    text
}

/// `/model` on an OpenAI-compatible server: every model it serves (it does not say which
/// support tools, so none is claimed to), the current one marked with `*`.
fn served_list_text(current: &str, chosen: &str, server: &str, served: &[&str]) -> String {
    let mut text = format!(
        "models served at {server} (an OpenAI-compatible server does not say which support tools):\n"
    );
    let resolved = installed_as(current, served.iter().copied());
    for name in served {
        if Some(*name) == resolved {
            let _ = writeln!(text, "* {} (current, {chosen})", shown(name));
        } else {
            let _ = writeln!(text, "  {}", shown(name));
        }
    }
    if resolved.is_none() {
        let _ = writeln!(
            text,
            "current: {} ({chosen}), which is not served",
            shown(current)
        );
    }
    text.push_str("/model NAME switches to another; the conversation is kept\n");
    text
}

/// `/model NAME`: the installed name to switch to (the server's spelling, so `llama3.1`
/// becomes `llama3.1:latest`), or the error to print: not installed, or installed without
/// tool support, with what could be chosen instead.
pub(crate) fn model_choice(
    wanted: &str,
    current: &str,
    server: &str,
    models: &[Installed],
) -> Result<String, String> {
    let found = installed_as(wanted, models.iter().map(|m| m.name.as_str()))
        .and_then(|name| models.iter().find(|m| m.name == name));
    let stays = format!("the model stays {}", shown(current));
    match found {
        Some(model) if matches!(model.tools, ToolSupport::Yes | ToolSupport::NotReported) => {
            Ok(model.name.clone())
        }
        Some(model) if model.tools == ToolSupport::No => Err(format!(
            "{} is installed but does not support tools, so it could never see your code; {stays}; {}. Choose one with /model NAME",
            shown(&model.name),
            alternatives(models)
        )),
        Some(model) => Err(format!(
            "the server did not say in time whether {} supports tools; {stays}. Try /model {} again, or check `ollama show {}`",
            shown(&model.name),
            shown(&model.name),
            shown(&model.name)
        )),
        None => {
            let next = if names_with(models, ToolSupport::Yes).is_empty() {
                format!("Run `ollama pull {wanted}` first")
            } else {
                format!("Choose one of them with /model NAME, or run `ollama pull {wanted}` first")
            };
            Err(format!(
                "there is no model {wanted} at {server}; {stays}; {}. {next}",
                alternatives(models)
            ))
        }
    }
}

/// `/config`: every setting, its value and its layer; then the tools and their cost.
/// With `--yes` (`yes`), a line says that nothing is asked: no setting shows it.
pub(crate) fn config_text<M: Model>(loaded: &Loaded, agent: &Agent<M>, yes: bool) -> String {
    let root = agent.toolbox().project().root();
    let mut text = String::new();
    let _ = writeln!(text, "config files: {}", files_text(loaded, root));
    if yes {
        let _ = writeln!(text, "approvals: {}", crate::frontend::ask::YES_NOTICE);
    }
    let width = KEYS.iter().map(|k| k.len()).max().unwrap_or(0);
    for key in KEYS {
        let value = match *key {
            // Never the password of `http://user:password@host`.
            "endpoint" => {
                serde_json::Value::from(crate::config::shown_endpoint(&loaded.config.endpoint))
                    .to_string()
            }
            _ => loaded
                .config
                .get_json(key)
                .map(|v| v.to_string())
                .unwrap_or_default(),
        };
        let _ = writeln!(
            text,
            "{key:<width$}  {value}  ({})",
            layer_text(loaded, key, root)
        );
    }
    let kind = crate::ollama::ServerKind::of_endpoint(&loaded.config.endpoint);
    let _ = writeln!(text, "server: {}", kind.label());
    let names: Vec<_> = agent.offered().iter().map(|s| s.name).collect();
    let bytes = agent.schema_bytes();
    let _ = writeln!(
        text,
        "tools: {} ({bytes} schema bytes, ~{} tokens per request)",
        if names.is_empty() {
            "none".to_owned()
        } else {
            names.join(", ")
        },
        approx_tokens(bytes)
    );
    for spec in agent.offered() {
        let _ = writeln!(
            text,
            "  {}: {}",
            spec.name,
            spec.capabilities(agent.toolbox())
        );
    }
    for withdrawn in agent.withdrawn() {
        let _ = writeln!(text, "withdrawn: {} ({})", withdrawn.name, withdrawn.reason);
    }
    if let Some(census) = Census::of(agent.toolbox().project()) {
        let _ = writeln!(text, "{}", census.line());
    }
    if let Some(files) = agent.instructions().summary(approx_tokens) {
        let _ = writeln!(text, "instructions: {files}");
    }
    let _ = writeln!(text, "fixed prompt: {}", agent.fixed_prompt().line());
    let _ = writeln!(text, "{}", agent.window().line());
    text
}

/// What `/tags` says: how many files it indexed, in which of the project's languages
/// (`3 files: Python 2, Go 1`), or that there is none a grammar reads.
pub(crate) fn tags_text(languages: &[(&str, usize)], millis: u128) -> String {
    use crate::tools::count;
    let total: usize = languages.iter().map(|(_, files)| files).sum();
    if total == 0 {
        return format!(
            "symbol index rebuilt ({millis} ms): no files find_symbol reads (it reads {}); search_text finds definitions in any file",
            crate::tools::symbols::lang::names()
        );
    }
    let each: Vec<String> = languages
        .iter()
        .map(|(language, files)| format!("{language} {files}"))
        .collect();
    format!(
        "symbol index rebuilt: {} ({}) in {millis} ms; definitions are parsed on demand",
        count(total, "file", "files"),
        each.join(", ")
    )
}

/// `/context`: the instructions sent with every request (each file, its size and its first
/// line), what is not sent of them, the fixed prompt every request carries, then what the
/// model has been shown from the project. Unescaped: the caller escapes it whole, since
/// the file names and lines are the repository's text.
pub(crate) fn context_text<M: Model>(agent: &Agent<M>, config: &crate::config::Config) -> String {
    let instructions = agent.instructions();
    let mut text = format!(
        "instructions: {}\n",
        instructions.line(approx_tokens, &config.instructions_fallbacks)
    );
    for file in &instructions.files {
        let first = file
            .text
            .lines()
            .map(str::trim)
            .find(|line| !line.is_empty())
            .unwrap_or("");
        let first: String = first.chars().take(PREVIEW_CHARS).collect();
        let _ = writeln!(text, "  {}: {}", file.origin.shown(), shown(&first));
    }
    for note in &instructions.notes {
        let _ = writeln!(text, "  note: {}", note.text());
    }
    let _ = writeln!(text, "fixed prompt: {}", agent.fixed_prompt().line());
    let _ = writeln!(text, "{}", agent.window().line());
    text.push_str(&agent.ledger().context(agent.history()));
    text
}

/// The characters of an instruction file's first line that `/context` shows.
const PREVIEW_CHARS: usize = 72;

/// `/history`: what the next request will carry.
pub(crate) fn history_text<M: Model>(agent: &Agent<M>) -> String {
    let history = agent.history();
    let messages = history.len().saturating_sub(1);
    let mut text = format!(
        "{messages} message{} after the system prompt, {} bytes carried on every request",
        if messages == 1 { "" } else { "s" },
        history.carried_bytes()
    );
    if history.dropped() > 0 {
        let _ = write!(text, "; {} earlier messages dropped", history.dropped());
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_and_their_aliases() {
        for exit in ["exit", "quit", "/exit", "/quit", "  /exit  "] {
            assert_eq!(Command::parse(exit), Ok(Some(Command::Exit)), "{exit}");
        }
        assert_eq!(Command::parse("/tags"), Ok(Some(Command::Tags)));
        assert_eq!(Command::parse("/?"), Ok(Some(Command::Help)));
        assert_eq!(Command::parse("make Greet return hola"), Ok(None));
        // `exit` without a slash is only a command alone; in a sentence it is a question.
        assert_eq!(Command::parse("exit the loop early"), Ok(None));
        assert!(Command::parse("/frobnicate").is_err_and(|e| e.contains("/help")));
    }

    #[test]
    fn a_line_starting_with_a_slash_is_never_for_the_model() {
        for line in [
            "/etc/passwd is what?",
            "/model qwen3 please",
            "/config model",
            "/",
            "  /tags now",
            "/Help",
        ] {
            assert!(
                Command::parse(line).is_err(),
                "{line} would reach the model"
            );
        }
        let path = Command::parse("/etc/passwd is what?").unwrap_err();
        assert!(path.starts_with("unknown command /etc/passwd;"), "{path}");
        assert!(path.contains("start the line with a word"), "{path}");
    }

    #[test]
    fn a_typo_gets_the_nearest_command() {
        let cases = [
            ("/confg", "config"),
            ("/Config", "config"),
            ("/modle", "model"),
            ("/models", "model"),
            ("/hist", "history"),
            ("/histroy", "history"),
            ("/ledgr", "ledger"),
            ("/exti", "exit"),
            ("/hepl", "help"),
        ];
        for (typed, near) in cases {
            let message = Command::parse(typed).unwrap_err();
            assert!(
                message.contains(&format!("did you mean /{near}?")),
                "{typed}: {message}"
            );
        }
        let far = Command::parse("/frobnicate").unwrap_err();
        assert_eq!(far, "unknown command /frobnicate; /help lists the commands");
    }

    #[test]
    fn unexpected_arguments_are_refused_with_the_bare_command() {
        let message = Command::parse("/history all").unwrap_err();
        assert_eq!(
            message,
            "/history takes no arguments; did you mean /history? (/help lists the commands)"
        );
        let message = Command::parse("/model qwen3 please").unwrap_err();
        assert!(message.contains("did you mean /model qwen3?"), "{message}");
    }

    #[test]
    fn help_lists_every_entry_in_its_column() {
        let help = help_text(None);
        let lines: Vec<&str> = help.lines().collect();
        assert_eq!(lines.len(), COMMANDS.len() + NOTES.len(), "{help}");
        for (line, command) in lines.iter().zip(COMMANDS) {
            // The usage fits the column, with room for two spaces before the help.
            assert!(
                command.usage().len() <= HELP_COLUMN - 2,
                "{}",
                command.usage()
            );
            assert_eq!(
                line.split_at(HELP_COLUMN),
                (format!("{:<15}", command.usage()).as_str(), command.help)
            );
        }
        // Every entry can be typed as /help shows it.
        for command in COMMANDS {
            let typed = match command.argument {
                Some(_) => format!("{} 3", command.usage().split(' ').next().unwrap_or("")),
                None => command.usage(),
            };
            assert!(Command::parse(&typed).is_ok_and(|c| c.is_some()), "{typed}");
        }
    }

    #[test]
    fn help_wraps_under_its_column_without_splitting_a_word() {
        let whole = help_text(None);
        for width in [80, 60, 40] {
            let help = help_text(Some(width));
            for line in help.lines() {
                assert!(line.chars().count() <= width, "{width}: {line:?}");
            }
            let words = |text: &str| {
                text.split_whitespace()
                    .map(str::to_owned)
                    .collect::<Vec<_>>()
            };
            assert_eq!(words(&help), words(&whole), "{help}");
            // A continued entry goes on under the help column, not under the usage.
            for line in help.lines().filter(|l| l.starts_with(' ')) {
                let indent = line.len() - line.trim_start().len();
                assert!(indent == HELP_COLUMN || indent == HANG, "{line:?}");
            }
        }
        assert!(help_text(Some(60)).lines().count() > whole.lines().count());
    }

    /// The first cell of each row of the markdown table after `heading` in `doc`.
    fn table_commands<'a>(doc: &'a str, heading: &str) -> Vec<&'a str> {
        let section = doc.split(heading).nth(1).expect("the heading is there");
        section
            .lines()
            .skip_while(|line| !line.starts_with('|'))
            .take_while(|line| line.starts_with('|'))
            .filter_map(|line| line.split('|').nth(1))
            .flat_map(|cell| cell.split('`').skip(1).step_by(2))
            .collect()
    }

    #[test]
    fn the_docs_list_the_same_commands() {
        let usage = include_str!("../../docs/usage.md");
        let documented: std::collections::BTreeSet<&str> = table_commands(usage, "\n## Commands\n")
            .into_iter()
            .collect();
        let listed: std::collections::BTreeSet<String> =
            COMMANDS.iter().map(Slash::usage).collect();
        let listed: std::collections::BTreeSet<&str> = listed.iter().map(String::as_str).collect();
        assert_eq!(
            documented, listed,
            "docs/usage.md's table of commands drifted"
        );
        // The README shows a few, each of which must exist.
        let readme = include_str!("../../README.md");
        let few = table_commands(readme, "A few commands");
        assert!(few.len() >= 5, "{few:?}");
        for usage in few {
            let name = usage
                .trim_start_matches('/')
                .split(' ')
                .next()
                .unwrap_or("");
            assert!(
                COMMANDS.iter().any(|c| c.name == name),
                "README.md names /{name}"
            );
        }
    }

    #[test]
    fn tags_names_the_languages_found() {
        assert_eq!(
            tags_text(&[("Go", 1), ("Python", 12)], 4),
            "symbol index rebuilt: 13 files (Go 1, Python 12) in 4 ms; definitions are parsed on demand"
        );
        assert_eq!(
            tags_text(&[("Python", 1)], 0),
            "symbol index rebuilt: 1 file (Python 1) in 0 ms; definitions are parsed on demand"
        );
        let none = tags_text(&[], 2);
        assert!(
            none.starts_with("symbol index rebuilt (2 ms): no files find_symbol reads (it reads "),
            "{none}"
        );
        assert!(
            none.ends_with("search_text finds definitions in any file"),
            "{none}"
        );
    }

    #[test]
    fn model_takes_no_name_or_one() {
        assert_eq!(Command::parse("/model"), Ok(Some(Command::Model(None))));
        assert_eq!(
            Command::parse("/model   qwen3:8b  "),
            Ok(Some(Command::Model(Some("qwen3:8b".to_owned()))))
        );
    }

    #[test]
    fn model_save_takes_a_name_or_saves_the_current_one() {
        let save = |name: &str| Ok(Some(Command::SaveModel(Some(name.to_owned()))));
        assert_eq!(Command::parse("/model qwen3:8b --save"), save("qwen3:8b"));
        assert_eq!(Command::parse("/model --save qwen3:8b"), save("qwen3:8b"));
        assert_eq!(
            Command::parse("/model --save"),
            Ok(Some(Command::SaveModel(None)))
        );
        let two = Command::parse("/model a b --save").unwrap_err();
        assert!(two.contains("one model name"), "{two}");
    }

    fn installed(list: &[(&str, ToolSupport)]) -> Vec<Installed> {
        list.iter()
            .map(|&(name, tools)| Installed {
                name: name.to_owned(),
                tools,
                place: crate::disclosure::ModelPlace::Server,
                trained: None,
            })
            .collect()
    }

    const SERVER: &str = "http://127.0.0.1:11434";

    #[test]
    fn the_list_marks_the_current_model_and_shows_what_else_is_installed() {
        let models = installed(&[
            ("llama3.1:latest", ToolSupport::Yes),
            ("nomic-embed-text:latest", ToolSupport::No),
            ("qwen3:8b", ToolSupport::Yes),
            ("slow:1b", ToolSupport::Unknown),
        ]);
        let text = model_list_text("llama3.1", "from --model", SERVER, &models);
        assert_eq!(
            text,
            "models with tool support at http://127.0.0.1:11434:
* llama3.1:latest (current, from --model)
  qwen3:8b
installed without tool support: nomic-embed-text:latest
not described by the server in time: slow:1b
/model NAME switches to another; the conversation is kept
"
        );
        let text = model_list_text("gone:7b", "the built-in default", SERVER, &models);
        assert!(
            text.contains("current: gone:7b (the built-in default), which is not installed"),
            "{text}"
        );
        assert!(!text.contains('*'), "{text}");
        let text = model_list_text("nomic-embed-text", "from $OLLAMA_MODEL", SERVER, &models);
        assert!(text.contains("which does not support tools"), "{text}");
        let none = model_list_text("x", "the built-in default", SERVER, &[]);
        assert!(none.starts_with("no model installed at"), "{none}");
        assert!(none.contains("ollama pull"), "{none}");
    }

    #[test]
    fn a_choice_must_be_installed_and_support_tools() {
        let models = installed(&[
            ("llama3.1:latest", ToolSupport::Yes),
            ("nomic-embed-text:latest", ToolSupport::No),
            ("qwen3:8b", ToolSupport::Yes),
            ("slow:1b", ToolSupport::Unknown),
        ]);
        let choose = |wanted| model_choice(wanted, "qwen3:8b", SERVER, &models);
        assert_eq!(choose("llama3.1"), Ok("llama3.1:latest".to_owned()));
        assert_eq!(choose("qwen3:8b"), Ok("qwen3:8b".to_owned()));
        let missing = choose("foo").unwrap_err();
        assert!(missing.starts_with("there is no model foo at http://127.0.0.1:11434; the model stays qwen3:8b; installed models with tool support: llama3.1:latest, qwen3:8b"), "{missing}");
        assert!(missing.contains("ollama pull foo"), "{missing}");
        let no_tools = choose("nomic-embed-text").unwrap_err();
        assert!(no_tools.contains("does not support tools"), "{no_tools}");
        assert!(no_tools.contains("llama3.1:latest, qwen3:8b"), "{no_tools}");
        let unknown = choose("slow:1b").unwrap_err();
        assert!(unknown.contains("did not say in time"), "{unknown}");
    }

    #[test]
    fn the_startup_notice_names_the_layer_and_the_alternatives() {
        let models = installed(&[("qwen3:8b", ToolSupport::Yes), ("e:1b", ToolSupport::No)]);
        let text = missing_model_text("qwen2.5-coder:7b", "the built-in default", SERVER, &models);
        assert_eq!(
            text,
            "the model qwen2.5-coder:7b (the built-in default) is not installed at http://127.0.0.1:11434; installed models with tool support: qwen3:8b. Switch with /model NAME, or run `ollama pull qwen2.5-coder:7b`"
        );
        let none = missing_model_text("m", "from --model", SERVER, &[]);
        assert!(none.contains("no installed model supports tools"), "{none}");
        assert!(none.contains("ollama pull m"), "{none}");
    }

    #[test]
    fn layers_read_as_sentences() {
        let root = Path::new("/p");
        assert_eq!(chosen_by(&Source::Default, root), "the built-in default");
        assert_eq!(chosen_by(&Source::Flag("--model"), root), "from --model");
        assert_eq!(
            chosen_by(&Source::Env("OLLAMA_MODEL"), root),
            "from $OLLAMA_MODEL"
        );
        assert_eq!(
            chosen_by(&Source::File("/p/.metron.json".into()), root),
            "from .metron.json"
        );
        assert_eq!(
            chosen_by(&Source::File("/home/u/.metron/config.json".into()), root),
            "from /home/u/.metron/config.json"
        );
        assert_eq!(
            chosen_by(&Source::Command("/model"), root),
            "chosen with /model"
        );
    }
}
