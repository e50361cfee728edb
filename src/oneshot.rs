//! `metron -p PROMPT`: one turn for scripts and CI.
//!
//! The answer goes to stdout and everything else to stderr, so the result can be piped.
//! Nobody can answer an approval question here, so apply_patch and run_command fail
//! closed unless `--yes` was given; `auto_approve_patches` does not apply.
//!
//! With `--json`, stdout carries the ledger's events as JSON Lines instead of the answer
//! (the answer is in the `turn_end` event), so CI can check what the agent did.
//!
//! Exit codes: 0 an answer, and every patch the model proposed landed (or was replaced by
//! one that landed, see [`crate::agent::landing`]); 3 an answer, but a proposed patch had
//! still not landed when the turn ended, whatever the answer claims; 1 the turn failed
//! (model unreachable, model error, an empty answer, max turns exceeded); 2 usage or
//! configuration error; 130 interrupted. The turn's evidence line is printed last on
//! stderr, after the answer, so the journal has the last word over the model's claim.
//!
//! With a request as text, stdin that is not a terminal is attached to it as context
//! ([`piped`]); `-p -` reads the request itself from stdin.

mod piped;

use std::io::{IsTerminal, Read};

use crate::agent::ledger::{EVENT_SCHEMA_VERSION, InstructionSent, WithdrawnTool};
use crate::agent::{Event, TurnStatus};
use crate::config::{Flags, KEYS, Source, is_local};
use crate::display::{Display, HANG, Stream, footer, marks_escaped, print_wrapped, terminal_safe};
use crate::frontend::session::{self, Ending, Mode, Session};
use crate::frontend::{Exit, error, print_shown, print_text};

/// Runs one request (configured with the command line's `flags` on top) and returns the
/// exit code.
pub(crate) fn run(
    prompt: &str,
    yes: bool,
    json: bool,
    flags: &Flags,
    resume: &crate::sessions::Resume,
) -> Exit {
    let prompt = match read_prompt(prompt) {
        Ok(prompt) => prompt,
        Err(message) => {
            error(message);
            return Exit::Usage;
        }
    };
    // Nobody is asked in one-shot mode: only --yes approves.
    let mut session = match session::start(Mode::OneShot, flags, yes, None, resume) {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    // The instruction files the model gets, and any it does not get whole, before the
    // request: stderr, as the rest of what is not the answer.
    for line in
        crate::frontend::instructions_lines(session.agent.instructions(), &session.loaded.config)
    {
        print_wrapped(Stream::Stderr, &line, HANG);
    }
    session::block_on(async || {
        let window = session.agent.window();
        let mut display = Display::new(false, &session.loaded.config.model).with_evidence_last();
        if json {
            display = display.with_json_events();
            display.print_event(&session_start(&session));
        }
        let agent = &mut session.agent;
        match session::drive_turn(agent, &prompt, &mut display).await {
            Ending::Interrupted => {
                display.print_evidence();
                error("interrupted");
                Exit::Interrupted
            }
            Ending::Finished(Err(e)) => {
                display.print_evidence();
                error(&e);
                let endpoint = &session.loaded.config.endpoint;
                if let Some(hint) = crate::frontend::models::missing_model_hint(&e, endpoint).await
                {
                    error(hint);
                }
                Exit::Failure
            }
            Ending::Finished(Ok(report)) => {
                for line in footer(&report, window) {
                    print_wrapped(Stream::Stderr, &line, HANG);
                }
                let exit = match report.status {
                    TurnStatus::Ok => Exit::Success,
                    TurnStatus::Incomplete => Exit::Incomplete,
                    // An empty answer: a script must not mistake "no answer" for one.
                    TurnStatus::Error => Exit::Failure,
                };
                // With --json the answer is in the `turn_end` event.
                let exit = if json || report.status == TurnStatus::Error {
                    exit
                } else {
                    print_answer(&report.answer, exit)
                };
                display.print_evidence();
                exit
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
        num_ctx: agent.window().effective(),
        endpoint: crate::config::shown_endpoint(&loaded.config.endpoint),
        server_kind: crate::ollama::ServerKind::of_endpoint(&loaded.config.endpoint).json_name(),
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
        instructions: agent
            .instructions()
            .files
            .iter()
            .map(|file| InstructionSent {
                path: file.origin.shown(),
                bytes: file.text.len(),
                cut: file.cut,
            })
            .collect(),
    }
}

/// The request: the `-p` value with piped stdin attached ([`piped`]), or stdin for `-`.
fn read_prompt(arg: &str) -> Result<String, String> {
    if arg != "-" {
        if arg.trim().is_empty() {
            return Err(EMPTY_REQUEST.into());
        }
        return Ok(with_piped_stdin(arg));
    }
    if std::io::stdin().is_terminal() {
        eprintln!("metron: reading the request from stdin; end it with Ctrl-D");
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .take(REQUEST_CAP as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the request from stdin: {e}"))?;
    if bytes.len() > REQUEST_CAP {
        return Err(format!(
            "the request on stdin is over {} KiB, more than a model's context holds; put the instruction in -p \"...\" and pipe the input in: it is attached as context, the first {} KiB of it",
            REQUEST_CAP / 1024,
            piped::STDIN_CAP / 1024
        ));
    }
    // Bytes that are not UTF-8 are shown as U+FFFD rather than refused: the request is
    // prose for the model, and the rest of it is still good.
    let prompt = String::from_utf8_lossy(&bytes).into_owned();
    if prompt.trim().is_empty() {
        return Err(EMPTY_REQUEST.into());
    }
    Ok(prompt)
}

/// The most bytes `-p -` takes as the request: 256 KiB, far more than a request a person
/// writes and more than a local model's context holds, so only a mistake (a whole log
/// piped in as the request) reaches it. Reading stops one byte past it.
const REQUEST_CAP: usize = 256 * 1024;

/// The usage error for a request with nothing in it.
const EMPTY_REQUEST: &str = "the request is empty; pass it as -p \"...\", or pipe it in with -p -";

/// `request`, with what stdin carries attached when stdin is not a terminal; the notes
/// about it (cut, silent, not UTF-8) go to stderr. A stdin that cannot be read is said
/// and left out: the request itself is still good.
fn with_piped_stdin(request: &str) -> String {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        return request.to_owned();
    }
    let gathered = match piped::gather(&stdin, piped::STDIN_CAP, piped::STDIN_WAIT) {
        Ok(gathered) => gathered,
        Err(e) => {
            error(format!(
                "cannot read stdin ({e}), so the request goes without it; to attach input, pipe it in or redirect a file (< input.txt)"
            ));
            return request.to_owned();
        }
    };
    if gathered.ending != piped::Ending::Closed {
        piped::discard_rest_of_pipe();
    }
    let (message, notes) = piped::attach(request, &gathered, piped::STDIN_CAP);
    for note in notes {
        error(note);
    }
    message
}

/// Prints the answer with a final newline: rendered from Markdown on a terminal that takes
/// colour, made safe on any other terminal, and elsewhere with metron's marks escaped, so
/// no answer line reads as metron's own.
/// Returns `exit`, unless stdout cannot be written.
fn print_answer(answer: &str, exit: Exit) -> Exit {
    if crate::display::renders_markdown() {
        print_shown(&crate::display::rendered_answer(answer), exit)
    } else if std::io::stdout().is_terminal() {
        print_text(&terminal_safe(answer), exit)
    } else {
        print_text(&marks_escaped(answer), exit)
    }
}
