//! The command line: flags, `metron tool`, and the mapping from results to exit codes.
//!
//! Exit codes are part of the interface scripts rely on: 0 success, 1 the operation failed
//! or was refused, 2 a usage or configuration error, 3 (`-p` only) the model answered but
//! a patch it proposed did not land, 130 interrupted (for `metron tool apply_patch`, a
//! write that Ctrl-C came too late to stop is reported as done, 0).

use std::io::{IsTerminal, Read};

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{CommandFactory, Parser, Subcommand};
use clap_complete::Shell;
use serde_json::Value;

use crate::authority::CancelToken;
use crate::config::{Flags, Key, edit_distance};
use crate::frontend::ask::AskOnTerminal;
use crate::frontend::session::{self, Mode};
use crate::frontend::{Exit, error, print_text, startup};
use crate::sessions::Resume;
use crate::tools::{self, Access, ToolError};

mod completion;
mod environment;
mod manpage;

#[derive(Debug, Parser)]
#[command(
    name = "metron",
    version = crate::version::long_version(),
    about = "A terminal coding agent for local Ollama models, with budgeted, confined tools.",
    after_help = environment::after_help(false),
    after_long_help = environment::after_help(true)
)]
struct Cli {
    /// Run one request non-interactively and exit: the answer on stdout, everything else
    /// on stderr. Piped stdin is attached to the request as context (32 KiB at most);
    /// `-` reads the request itself from stdin. Exit status 3: a proposed patch did not
    /// land.
    #[arg(
        short = 'p',
        long = "prompt",
        value_name = "PROMPT",
        conflicts_with = "doctor"
    )]
    prompt: Option<String>,

    /// With -p: print the session's ledger events on stdout as JSON Lines instead of the
    /// plain answer (session start, turn start, each tool call's proposal, decision,
    /// approval and effect, model replies with token counts, turn end with totals). The first
    /// event names the schema version; docs/usage.md lists every field.
    #[arg(long, requires = "prompt")]
    json: bool,

    /// Check the project, the configuration, Ollama, the model and the tools, then exit
    /// (no inference, nothing written; exit status 1 when the setup is incomplete).
    #[arg(long)]
    doctor: bool,

    /// Print a configuration file with every key at its built-in default, and exit
    /// (save it as ~/.metron/config.json and edit what you need).
    #[arg(long, conflicts_with_all = ["prompt", "doctor"])]
    example_config: bool,

    /// The model to use for this run, overriding OLLAMA_MODEL and the config file (works
    /// with the session, -p and --doctor; /model NAME switches within a session).
    #[arg(short = 'm', long = "model", value_name = "NAME")]
    model: Option<String>,

    /// Do not read AGENTS.md (or its fallback names, CLAUDE.md by default) from the
    /// project or your metron directory for this run (the `instructions` key, set false).
    #[arg(long)]
    no_instructions: bool,

    /// Set one config key for this run, above every other layer (repeatable; a key given
    /// twice keeps the last value): any key your own config file may set, its VALUE read
    /// as JSON when it is JSON and as text otherwise: --set max_turns=20, --set
    /// model=qwen3:8b, --set 'allowed_commands=["go test"]'. Works before or after a
    /// subcommand.
    #[arg(long = "set", value_name = "KEY=VALUE", global = true)]
    set: Vec<String>,

    /// Continue the last session of this project, in the session or with -p: its
    /// conversation and its model (unless --model is given), never its standing
    /// approvals.
    #[arg(short = 'c', long = "continue", conflicts_with_all = ["resume", "doctor", "example_config"])]
    continue_last: bool,

    /// Continue session ID of this project; without ID, list this project's saved
    /// sessions, newest first (time, model, requests, first request), and exit.
    #[arg(
        long,
        value_name = "ID",
        num_args = 0..=1,
        default_missing_value = "",
        conflicts_with_all = ["doctor", "example_config"]
    )]
    resume: Option<String>,

    /// Apply patches and run commands without asking (required by -p to edit files or run
    /// commands; works before or after a subcommand).
    #[arg(long, global = true)]
    yes: bool,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one tool exactly as the model would, and print exactly what the model would read.
    ///
    /// Exit status: 0 the tool produced a result, 1 it refused or failed, 2 usage error.
    #[command(after_long_help = tools_help())]
    Tool {
        /// The tool to run (`metron tool --help` says what each one does).
        #[arg(value_parser = completion::ToolName)]
        name: String,
        /// The tool's JSON arguments object, for example '{"pattern":"*.go"}'; `-` reads it
        /// from stdin; omitted means {}.
        args: Option<String>,
    },
    /// Print the completion script for SHELL on stdout.
    ///
    /// bash: metron completions bash > ~/.local/share/bash-completion/completions/metron
    ///
    /// zsh: metron completions zsh > "${fpath[1]}/_metron"
    ///
    /// fish: metron completions fish > ~/.config/fish/completions/metron.fish
    Completions {
        /// The shell the script is for.
        shell: Shell,
    },
    /// Print the manual page (roff) on stdout; release archives ship it as man/metron.1.
    Man,
    /// List or prune this project's saved sessions (nothing is ever deleted otherwise).
    Sessions {
        #[command(subcommand)]
        action: SessionsAction,
    },
}

/// What `metron sessions` does.
#[derive(Debug, Subcommand)]
enum SessionsAction {
    /// List this project's saved sessions, newest first (as `metron --resume` does).
    List,
    /// Remove this project's sessions last written longer ago than AGE, naming each one.
    Prune {
        /// How old a session must be to go: a number and a unit, `d` (days), `h` (hours)
        /// or `w` (weeks), for example 30d.
        #[arg(long = "older-than", value_name = "AGE", value_parser = crate::sessions::prune::parse_age)]
        older_than: std::time::Duration,
    },
}

/// Every tool with its description and argument schema, as the model sees them.
fn tools_help() -> String {
    let mut text =
        String::from("Tools (description and JSON arguments, as the model sees them):\n");
    for spec in tools::REGISTRY {
        text.push_str(&format!(
            "  {}\n      {}\n      {}\n",
            spec.name, spec.description, spec.parameters
        ));
    }
    text
}

/// Runs metron with the process's arguments and environment.
pub fn main() -> std::process::ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_error(&e).into(),
    };
    let flags = match flags(cli.model, cli.no_instructions, &cli.set) {
        Ok(flags) => flags,
        Err(message) => {
            error(message);
            return Exit::Usage.into();
        }
    };
    let exit = match cli.command {
        Some(Command::Tool { .. })
            if cli.doctor
                || cli.prompt.is_some()
                || flags.model.is_some()
                || cli.continue_last
                || cli.resume.is_some() =>
        {
            error(
                "`metron tool` runs one tool without a model, so it cannot be combined with -p, --doctor, --model, -c or --resume; run them separately",
            );
            Exit::Usage
        }
        Some(Command::Tool { name, args }) => run_tool(&name, args.as_deref(), cli.yes, &flags),
        Some(Command::Completions { shell }) => print_text(
            &completion::script(shell, &mut Cli::command()),
            Exit::Success,
        ),
        Some(Command::Man) => match manpage::render(Cli::command().disable_help_subcommand(true)) {
            Ok(page) => print_text(&page, Exit::Success),
            Err(e) => {
                error(format!("cannot render the manual page: {e}"));
                Exit::Failure
            }
        },
        Some(Command::Sessions { action }) => match action {
            SessionsAction::List => list_sessions(&flags),
            SessionsAction::Prune { older_than } => prune_sessions(&flags, older_than),
        },
        None if cli.example_config => print_text(&crate::config::example_json(), Exit::Success),
        None if cli.doctor => crate::doctor::run(&flags),
        None if cli.resume.as_deref() == Some("") && cli.prompt.is_some() => {
            error(
                "--resume without an ID only lists the sessions, so -p's request would not run; give the ID to continue one (metron --resume ID -p ...), or use -c for the newest",
            );
            Exit::Usage
        }
        None if cli.resume.as_deref() == Some("") => list_sessions(&flags),
        None => {
            let resume = match cli.resume {
                Some(id) => Resume::Id(id),
                None if cli.continue_last => Resume::Last,
                None => Resume::New,
            };
            match cli.prompt {
                Some(prompt) => crate::oneshot::run(&prompt, cli.yes, cli.json, &flags, &resume),
                None => crate::repl::run(cli.yes, &flags, &resume),
            }
        }
    };
    exit.into()
}

/// The configuration flags, each `--set` checked: an unknown key, a value of the wrong
/// type, or a key that `--model` or `--no-instructions` also sets is a usage error.
fn flags(model: Option<String>, no_instructions: bool, set: &[String]) -> Result<Flags, String> {
    let set = set
        .iter()
        .map(|arg| crate::config::parse_override(arg))
        .collect::<Result<Vec<_>, _>>()?;
    let flags = Flags {
        model,
        no_instructions,
        set,
    };
    // Two values for one key on one command line is a slip, not a layering question.
    let both = |flag: &str, key: Key| {
        format!(
            "{flag} and `--set {key}=...` both set `{key}`; give one of them (the rest of the command line stays as it is)"
        )
    };
    if flags.model.is_some() && flags.sets(Key::model) {
        return Err(both("--model", Key::model));
    }
    if flags.no_instructions && flags.sets(Key::instructions) {
        return Err(both("--no-instructions", Key::instructions));
    }
    Ok(flags)
}

/// `metron --resume` without an ID: this project's sessions on stdout, newest first. An
/// empty list is said on stderr and is not a failure (exit 0): there is simply nothing to
/// resume yet.
fn list_sessions(flags: &Flags) -> Exit {
    let (project, _) = match startup(flags) {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    let Some(dir) = crate::sessions::project_dir(project.root()) else {
        error("no sessions are saved without a user directory; set $HOME or $METRON_CONFIG_DIR");
        return Exit::Failure;
    };
    let lines = crate::sessions::list_lines(&dir);
    if lines.is_empty() {
        error("this project has no saved sessions yet; one is saved once a request is sent");
        return Exit::Success;
    }
    let mut text = lines.join("\n");
    text.push_str("\n(continue one with metron --resume ID, or the newest with metron -c)");
    print_text(&text, Exit::Success)
}

/// `metron sessions prune --older-than AGE`: removes this project's sessions last
/// written before then, naming each on stdout; 1 when one could not be removed.
fn prune_sessions(flags: &Flags, older_than: std::time::Duration) -> Exit {
    let (project, _) = match startup(flags) {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    let Some(dir) = crate::sessions::project_dir(project.root()) else {
        error("no sessions are saved without a user directory; set $HOME or $METRON_CONFIG_DIR");
        return Exit::Failure;
    };
    let now = crate::sessions::place::unix_now();
    let pruned = crate::sessions::prune::prune(
        &crate::sessions::store::Files,
        &dir,
        now.saturating_sub(older_than.as_secs()),
        None,
    );
    for line in &pruned.removed {
        println!("removed {line}");
    }
    for failure in &pruned.failed {
        error(failure);
    }
    println!(
        "{} {} removed, {} kept",
        pruned.removed.len(),
        if pruned.removed.len() == 1 {
            "session"
        } else {
            "sessions"
        },
        pruned.kept
    );
    if pruned.failed.is_empty() {
        Exit::Success
    } else {
        Exit::Failure
    }
}

/// Reports a command line clap refused. A word where a subcommand would go is most often
/// a request typed without `-p`, or `doctor` for `--doctor`, so that case gets a hint
/// naming the right spelling; everything else is clap's own message (and `--help` and
/// `--version` print and exit 0 through the same path).
fn parse_error(e: &clap::Error) -> Exit {
    let word = match e.get(ContextKind::InvalidSubcommand) {
        Some(ContextValue::String(word)) if e.kind() == ErrorKind::InvalidSubcommand => {
            word.clone()
        }
        _ => {
            let _ = e.print();
            return if e.use_stderr() {
                Exit::Usage
            } else {
                Exit::Success
            };
        }
    };
    let args: Vec<String> = std::env::args_os()
        .skip(1)
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    error(stray_word_hint(&word, &args));
    Exit::Usage
}

/// The hint for `word`, found where a subcommand would go in `args` (the arguments after
/// the program name): `doctor` is the `--doctor` flag, a word near `tool` is probably
/// `metron tool`, and anything else a request, which goes after `-p` as one argument
/// (quoted, with the words that follow it), or into the session that starts with no
/// arguments.
fn stray_word_hint(word: &str, args: &[String]) -> String {
    let unexpected = format!("unexpected argument '{word}'");
    if word.eq_ignore_ascii_case("doctor") {
        return format!("{unexpected}: the setup check is a flag; run `metron --doctor`");
    }
    if word != "tool" && edit_distance(&word.to_lowercase(), "tool") <= 1 {
        return format!(
            "{unexpected}; did you mean `metron tool`? (`metron tool --help` lists the tools)"
        );
    }
    // With -p, the words after it were meant as one request; otherwise the words from
    // this one on.
    let prompt_flag = args.iter().position(|a| a == "-p" || a == "--prompt");
    let words: Vec<&str> = match prompt_flag {
        Some(at) => args[at + 1..].iter(),
        None => args[args.iter().position(|a| a == word).unwrap_or(args.len())..].iter(),
    }
    .take_while(|a| !a.starts_with('-'))
    .map(String::as_str)
    .collect();
    let request = if words.is_empty() {
        word.to_owned()
    } else {
        words.join(" ")
    };
    let quoted = double_quoted(&request);
    if prompt_flag.is_some() {
        return format!(
            "{unexpected}: -p takes the whole request as one argument, so quote it: metron -p {quoted}"
        );
    }
    format!(
        "{unexpected}: to run one request, pass it with -p: metron -p {quoted}; to start the interactive session, run metron with no arguments"
    )
}

/// `text` in double quotes for a POSIX shell, with `\`, `"`, `$` and backquote escaped,
/// so the hint can be pasted as it is.
fn double_quoted(text: &str) -> String {
    let mut quoted = String::with_capacity(text.len() + 2);
    quoted.push('"');
    for c in text.chars() {
        if matches!(c, '\\' | '"' | '$' | '`') {
            quoted.push('\\');
        }
        quoted.push(c);
    }
    quoted.push('"');
    quoted
}

fn run_tool(name: &str, args: Option<&str>, yes: bool, flags: &Flags) -> Exit {
    let Some(spec) = tools::spec(name) else {
        error(format!(
            "there is no tool `{name}`; the tools are {}",
            tools::names().join(", ")
        ));
        return Exit::Usage;
    };
    let args = match read_args(name, args) {
        Ok(args) => args,
        Err(message) => {
            error(message);
            return Exit::Usage;
        }
    };
    let (project, loaded) = match startup(flags) {
        Ok(started) => started,
        Err(exit) => return exit,
    };
    if loaded.config.disabled_tools.iter().any(|d| d == name) {
        println!(
            "{name} is disabled by `disabled_tools` ({}).",
            loaded.source(crate::config::Key::disabled_tools)
        );
        return Exit::Failure;
    }
    // Like one-shot mode, a tool run by hand asks on a terminal and otherwise needs --yes.
    // A tool with effects sees Ctrl-C (a command is killed at once, a question is
    // declined, a write in progress is finished), and the exit status says so.
    let ask = std::io::stdin()
        .is_terminal()
        .then(|| -> session::AskPerson {
            Box::new(|cancel: &CancelToken| Box::new(AskOnTerminal::new(cancel.clone())))
        });
    let (toolbox, cancel) =
        match session::toolbox(Mode::Tool(spec.access), project, &loaded.config, yes, ask) {
            Ok(started) => started,
            Err(exit) => return exit,
        };
    let result = toolbox.call(name, args);
    // A write that completed is reported as done (0), even if Ctrl-C came during it.
    let completed_write = spec.access == Access::Write && result.is_ok();
    let interrupted = |exit| {
        if cancel.is_cancelled() && !completed_write {
            Exit::Interrupted
        } else {
            exit
        }
    };
    match result {
        Ok(text) => print_text(&text, interrupted(Exit::Success)),
        Err(ToolError::Refused(text) | ToolError::Conflict { message: text, .. }) => {
            print_text(&text, interrupted(Exit::Failure))
        }
        Err(ToolError::BadArguments(text)) => {
            error(text);
            Exit::Usage
        }
        Err(ToolError::Fault(text)) => {
            error(text);
            interrupted(Exit::Failure)
        }
    }
}

/// A valid arguments object for `tool`, for the error that shows how to write one.
fn example_args(tool: &str) -> &'static str {
    match tool {
        "find_symbol" => r#"{"symbol":"Config"}"#,
        "search_text" => r#"{"pattern":"TODO"}"#,
        "view_slice" => r#"{"path":"README.md","start":1,"end":20}"#,
        "run_command" => r#"{"command":"cargo test"}"#,
        "apply_patch" => r#"{"diff":"--- a/f\n+++ b/f\n..."}"#,
        _ => r#"{"pattern":"*.go"}"#,
    }
}

/// Parses the ARGS operand: a JSON object, `-` for stdin, or nothing.
fn read_args(tool: &str, args: Option<&str>) -> Result<Value, String> {
    let text = match args {
        None => return Ok(Value::Object(Default::default())),
        Some("-") => {
            if std::io::stdin().is_terminal() {
                eprintln!("metron: reading the arguments object from stdin; end with Ctrl-D");
            }
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read arguments from stdin: {e}"))?;
            text
        }
        Some(text) => text.to_owned(),
    };
    let value: Value = serde_json::from_str(text.trim()).map_err(|e| {
        format!(
            "the arguments are not valid JSON ({e}); pass an object such as '{}'",
            example_args(tool)
        )
    })?;
    if !value.is_object() {
        return Err(format!("the arguments must be a JSON object, got {value}"));
    }
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_stray_word_gets_the_spelling_that_works() {
        let hint = stray_word_hint("some text", &args(&["some text"]));
        assert_eq!(
            hint,
            "unexpected argument 'some text': to run one request, pass it with -p: metron -p \"some text\"; to start the interactive session, run metron with no arguments"
        );
        // Unquoted words are gathered into one request, up to the next flag.
        let hint = stray_word_hint("fix", &args(&["fix", "the", "bug", "--yes"]));
        assert!(hint.contains("metron -p \"fix the bug\";"), "{hint}");
        let hint = stray_word_hint("doctor", &args(&["doctor"]));
        assert!(hint.contains("metron --doctor"), "{hint}");
        let hint = stray_word_hint("extra", &args(&["--yes", "-p", "fix", "extra", "--json"]));
        assert!(
            hint.ends_with(
                "-p takes the whole request as one argument, so quote it: metron -p \"fix extra\""
            ),
            "{hint}"
        );
        let hint = stray_word_hint("tol", &args(&["tol", "list_files"]));
        assert!(hint.contains("did you mean `metron tool`?"), "{hint}");
    }

    #[test]
    fn the_quoted_request_can_be_pasted_into_a_shell() {
        assert_eq!(
            double_quoted(r#"say "hi" for $5 `now` \o/"#),
            r#""say \"hi\" for \$5 \`now\` \\o/""#
        );
    }
}
