//! The interactive session: a prompt, the reply streamed, and the slash commands.
//!
//! Each line is one turn. Ctrl-C during a reply cancels that turn and returns to the
//! prompt with the session intact; Ctrl-C (or Ctrl-D) at an idle prompt quits. Approval
//! questions are asked through the same line reader as the prompt; when stdin is not a
//! terminal nobody can answer them, so writes and commands fail closed unless `--yes`.

mod commands;
mod input;

use std::io::{IsTerminal, Write};
use std::sync::Arc;

use crate::authority::CancelToken;
use crate::authority::approval::{Approver, Decision, Request, decision_for, may_add_reason};
use crate::display::{Display, footer};
use crate::frontend::ask::{self, show_request, stderr_supports_color};
use crate::frontend::session::{self, Mode, Outcome, Session};
use crate::frontend::{Exit, error};

pub(crate) use commands::{Command, HELP};
pub(crate) use input::{Input, Line};

/// The prompt shown for each line.
pub(crate) const PROMPT: &str = "metron > ";

/// Runs the interactive session until the person quits.
pub(crate) fn run(yes: bool) -> Exit {
    let terminal = std::io::stdin().is_terminal();
    let input = Arc::new(Input::spawn(terminal));
    let asker = |cancel: &CancelToken| -> Box<dyn Approver> {
        Box::new(AskThroughInput {
            input: Arc::clone(&input),
            color: stderr_supports_color(),
            cancel: cancel.clone(),
        })
    };
    let started = session::start(Mode::Interactive, |cancel| {
        ask::approver(yes, terminal.then(|| asker(cancel)))
    });
    let mut session = match started {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    print_banner(&session);
    let prompt = if terminal { PROMPT } else { "" };
    let cancel = session.cancel.clone();
    session::block_on(async || {
        loop {
            // A press that a turn or a slash command already acted on is not a press at
            // the idle prompt (where Ctrl-C quits).
            cancel.forget();
            let line = tokio::select! {
                biased;
                () = cancel.cancelled() => return Exit::Interrupted,
                line = input.read(prompt) => line,
            };
            let line = match line {
                Line::Text(line) => line,
                Line::Eof => return Exit::Success,
                Line::Interrupted => return Exit::Interrupted,
            };
            if line.trim().is_empty() {
                continue;
            }
            match Command::parse(&line) {
                Ok(Some(Command::Exit)) => return Exit::Success,
                // A slash command (`/tags` walks the tree) cannot be cut short; a press
                // while it runs is forgotten before the next prompt.
                Ok(Some(command)) => run_slash_command(command, &mut session),
                Ok(None) => turn(&mut session, &line).await,
                Err(message) => eprintln!("{message}"),
            }
        }
    })
}

/// The banner: the model, how to get help, and which config file was read.
fn print_banner(session: &Session) {
    let config = &session.loaded;
    println!("=== metron (model: {}) ===", config.config.model);
    println!("Context-disciplined terminal coder. /help for commands, /exit to quit.");
    let root = session.agent.toolbox().project().root();
    match &config.file {
        Some(file) => {
            let shown = file.path.strip_prefix(root).unwrap_or(&file.path);
            println!("config: {}", shown.display());
        }
        None => println!("config: built-in defaults (no config file)"),
    }
    println!();
}

fn run_slash_command(command: Command, session: &mut Session) {
    match command {
        Command::Help => println!("{HELP}"),
        Command::Config => print!("{}", commands::config_text(&session.loaded, &session.agent)),
        Command::Reset => {
            session.agent.reset();
            println!("conversation cleared (the system prompt is kept)");
        }
        Command::History => println!("{}", commands::history_text(&session.agent)),
        Command::Tags => rebuild_tags(session),
        Command::Ledger => print!(
            "{}",
            session
                .agent
                .ledger()
                .render(&session.agent.toolbox().authority().standing_approvals())
        ),
        Command::Diff => match session.agent.session_diff() {
            Ok(diff) if diff.is_empty() => {
                println!(
                    "no changes: metron has written nothing in this session that is still different"
                );
            }
            Ok(diff) => {
                let colour = std::io::stdout().is_terminal()
                    && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&ask::render_diff(&diff, colour));
                let _ = out.flush();
            }
            Err(why) => error(why),
        },
        Command::Undo => match session.agent.undo() {
            Ok(done) => println!("{done}"),
            Err(why) => error(why),
        },
        Command::Show(number) => match session.agent.ledger().show(number) {
            Ok(text) => print!("{text}"),
            Err(why) => error(why),
        },
        Command::Context => print!(
            "{}",
            session.agent.ledger().context(session.agent.history())
        ),
        Command::Exit => {}
    }
}

/// `/tags`: drops the symbol index and walks the tree again, so the next lookup sees the
/// project as it is now.
fn rebuild_tags(session: &Session) {
    let started = std::time::Instant::now();
    let files = session.agent.rebuild_symbols();
    println!(
        "symbol index rebuilt: {files} Go and Rust files ({} ms); definitions are parsed on demand",
        started.elapsed().as_millis()
    );
}

async fn turn(session: &mut Session, line: &str) {
    let num_ctx = session.loaded.config.num_ctx;
    let mut display = Display::new(true, &session.loaded.config.model);
    let outcome = session::drive_turn(&mut session.agent, line, &mut display).await;
    display.finish_line();
    match outcome {
        Outcome::Finished(Ok(report)) => {
            for line in footer(&report, num_ctx) {
                eprintln!("{line}");
            }
        }
        Outcome::Finished(Err(e)) => error(e),
        Outcome::Interrupted => {
            eprintln!("[interrupted: the turn was cancelled; the session is intact]")
        }
    }
}

/// Asked after a bare `n`: the person may tell the model why (a bare Return skips).
const REASON_PROMPT: &str = "Why not? A reason for the model (Return to skip): ";

/// Asks approval questions through the REPL's line reader. Ctrl-C at a question declines
/// and cancels the turn (by raising the session's cancel token, as a Ctrl-C during a
/// reply does).
#[derive(Debug)]
struct AskThroughInput {
    input: Arc<Input>,
    color: bool,
    cancel: CancelToken,
}

impl Approver for AskThroughInput {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if self.cancel.is_cancelled() {
            return Decision::Interrupted;
        }
        let question = show_request(request, self.color, true);
        match self.input.read_blocking(&question) {
            Line::Text(answer) => {
                let mut decision = decision_for(&answer, true);
                if decision == Decision::Declined(None) && may_add_reason(&answer) {
                    match self.input.read_blocking(REASON_PROMPT) {
                        Line::Text(reason) if !reason.trim().is_empty() => {
                            decision = Decision::Declined(Some(reason.trim().to_owned()));
                        }
                        Line::Text(_) | Line::Eof => {}
                        Line::Interrupted => {
                            self.cancel.cancel();
                            return Decision::Interrupted;
                        }
                    }
                }
                if decision == Decision::ApprovedForSession {
                    eprintln!(
                        "standing approval granted: {} (listed by /ledger)",
                        request.standing_scope()
                    );
                }
                decision
            }
            Line::Eof => Decision::Declined(None),
            Line::Interrupted => {
                self.cancel.cancel();
                Decision::Interrupted
            }
        }
    }
}
