//! The REPL's slash commands. Each returns the text to print, so they are easy to test.

use std::fmt::Write;

use crate::agent::{Agent, Model, prompt::approx_tokens};
use crate::config::{KEYS, Loaded};

/// A line the REPL handles itself instead of sending to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Command {
    /// List the commands.
    Help,
    /// Every effective setting with its layer, and the tools offered.
    Config,
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
    /// Leave.
    Exit,
}

/// The commands and what they do, for `/help`.
pub(crate) const HELP: &str = "\
/help     list the commands
/config   print the effective settings, which layer each came from, and the tools offered
/reset    clear the conversation history, keeping the system prompt
/history  show how many messages and bytes the session is carrying
/tags     rebuild the symbol index behind find_symbol (after a big refactor)
/ledger   every tool call of this session: proposed, decided, approved, done, reported
/show N   the full result of call N exactly as the model read it (also /ledger N)
/diff     this session's writes as one diff: each file from before metron's first write to now
/undo     revert the newest patch metron applied (only if its files are as metron left them)
/context  what the model has been shown (files and lines, searches, symbols) and still carries
/exit     quit (also exit, quit, /quit, or Ctrl-D)
Anything else is sent to the model. Ctrl-C cancels a reply in progress.";

impl Command {
    /// Recognises a command line. `Err` carries the message for an unknown `/word`; a line
    /// that is not a command at all gives `Ok(None)`.
    pub(crate) fn parse(line: &str) -> Result<Option<Command>, String> {
        let line = line.trim();
        let command = match line {
            "exit" | "quit" | "/exit" | "/quit" => Command::Exit,
            "/help" | "/?" => Command::Help,
            "/config" => Command::Config,
            "/reset" => Command::Reset,
            "/history" => Command::History,
            "/tags" => Command::Tags,
            "/ledger" => Command::Ledger,
            "/context" => Command::Context,
            "/diff" => Command::Diff,
            "/undo" => Command::Undo,
            _ if line.starts_with("/show") || line.starts_with("/ledger ") => {
                let (word, number) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
                if word != "/show" && word != "/ledger" {
                    return Err(format!("unknown command {line}; /help lists the commands"));
                }
                match number.trim().parse::<usize>() {
                    Ok(n) if n > 0 => Command::Show(n),
                    _ => {
                        return Err(format!(
                            "{word} takes a call number, as /ledger numbers them: {word} 3"
                        ));
                    }
                }
            }
            _ if line.starts_with('/') && !line.contains(char::is_whitespace) => {
                return Err(format!("unknown command {line}; /help lists the commands"));
            }
            _ => return Ok(None),
        };
        Ok(Some(command))
    }
}

/// `/config`: every setting, its value and its layer; then the tools and their cost.
pub(crate) fn config_text<M: Model>(loaded: &Loaded, agent: &Agent<M>) -> String {
    let mut text = String::new();
    let width = KEYS.iter().map(|k| k.len()).max().unwrap_or(0);
    for key in KEYS {
        let value = loaded
            .config
            .get_json(key)
            .map(|v| v.to_string())
            .unwrap_or_default();
        let _ = writeln!(text, "{key:<width$}  {value}  ({})", loaded.source_of(key));
    }
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
    text
}

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
        assert_eq!(Command::parse("make Greet return hola"), Ok(None));
        assert_eq!(Command::parse("/etc/passwd is what?"), Ok(None));
        assert!(Command::parse("/frobnicate").is_err_and(|e| e.contains("/help")));
    }
}
