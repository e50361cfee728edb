//! `metron -p PROMPT`: one turn for scripts and CI.
//!
//! The answer goes to stdout and everything else to stderr, so the result can be piped.
//! Nobody can answer an approval question here, so apply_patch and run_command fail
//! closed unless `--yes` was given; `auto_approve_patches` does not apply.
//!
//! With `--json`, stdout carries the ledger's events as JSON Lines instead of the answer
//! (the answer is in the `turn_end` event), so CI can check what the agent did.
//!
//! Exit codes: 0 an answer, 1 the turn failed (model unreachable, model error, an empty
//! answer, max turns exceeded), 2 usage or configuration error, 130 interrupted.

use std::io::{IsTerminal, Read};

use crate::agent::Event;
use crate::agent::ledger::{EVENT_SCHEMA_VERSION, WithdrawnTool};
use crate::config::{Flags, KEYS, Source, is_local};
use crate::display::{Display, HANG, Stream, footer, marks_escaped, print_wrapped, terminal_safe};
use crate::frontend::session::{self, Ending, Mode, Session};
use crate::frontend::{Exit, error, print_text};

/// Runs one request (configured with the command line's `flags` on top) and returns the
/// exit code.
pub(crate) fn run(prompt: &str, yes: bool, json: bool, flags: &Flags) -> Exit {
    let prompt = match read_prompt(prompt) {
        Ok(prompt) => prompt,
        Err(message) => {
            error(message);
            return Exit::Usage;
        }
    };
    // Nobody is asked in one-shot mode: only --yes approves.
    let mut session = match session::start(Mode::OneShot, flags, yes, None) {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    session::block_on(async || {
        let num_ctx = session.loaded.config.num_ctx;
        let mut display = Display::new(false, &session.loaded.config.model);
        if json {
            display = display.with_json_events();
            display.print_event(&session_start(&session));
        }
        let agent = &mut session.agent;
        match session::drive_turn(agent, &prompt, &mut display).await {
            Ending::Interrupted => {
                error("interrupted");
                Exit::Interrupted
            }
            Ending::Finished(Err(e)) => {
                error(&e);
                let endpoint = &session.loaded.config.endpoint;
                if let Some(hint) = crate::frontend::models::missing_model_hint(&e, endpoint).await
                {
                    error(hint);
                }
                Exit::Failure
            }
            Ending::Finished(Ok(report)) => {
                for line in footer(&report, num_ctx) {
                    print_wrapped(Stream::Stderr, &line, HANG);
                }
                if report.answer.trim().is_empty() {
                    // A script must not mistake "no answer" for an answer.
                    return Exit::Failure;
                }
                if json {
                    // The answer is in the `turn_end` event.
                    return Exit::Success;
                }
                print_answer(&report.answer)
            }
        }
    })
}

/// The first `--json` event: what this session is, and where its settings came from.
fn session_start(session: &Session) -> Event {
    let loaded = &session.loaded;
    let config_sources = KEYS
        .iter()
        .filter(|key| *loaded.source_of(key) != Source::Default)
        .map(|key| {
            (
                (*key).to_owned(),
                serde_json::Value::from(loaded.source_of(key).to_string()),
            )
        })
        .collect();
    let agent = &session.agent;
    Event::SessionStart {
        schema_version: EVENT_SCHEMA_VERSION,
        model: loaded.config.model.clone(),
        endpoint: crate::config::shown_endpoint(&loaded.config.endpoint),
        endpoint_local: is_local(&loaded.config.endpoint) && session.model_host.is_none(),
        model_remote_host: session.model_host.clone(),
        model_replaced: loaded.replaced_model.clone(),
        config_file: loaded.files.last().map(|f| f.path.display().to_string()),
        config_files: loaded
            .files
            .iter()
            .map(|f| f.path.display().to_string())
            .collect(),
        config_sources,
        tools_offered: agent.offered().iter().map(|s| s.name.to_owned()).collect(),
        tools_withdrawn: agent
            .withdrawn()
            .iter()
            .map(|w| WithdrawnTool {
                name: w.name.to_owned(),
                reason: w.reason.to_string(),
            })
            .collect(),
    }
}

/// The request: the `-p` value, or stdin for `-`.
fn read_prompt(arg: &str) -> Result<String, String> {
    let prompt = if arg == "-" {
        if std::io::stdin().is_terminal() {
            eprintln!("metron: reading the request from stdin; end it with Ctrl-D");
        }
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .map_err(|e| format!("cannot read the request from stdin: {e}"))?;
        text
    } else {
        arg.to_owned()
    };
    if prompt.trim().is_empty() {
        return Err("the request is empty; pass it as -p \"...\", or pipe it in with -p -".into());
    }
    Ok(prompt)
}

/// Prints the answer with a final newline: made safe when stdout is a terminal, and
/// elsewhere with metron's marks escaped, so no answer line reads as metron's own.
fn print_answer(answer: &str) -> Exit {
    if std::io::stdout().is_terminal() {
        print_text(&terminal_safe(answer), Exit::Success)
    } else {
        print_text(&marks_escaped(answer), Exit::Success)
    }
}
