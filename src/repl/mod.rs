//! The interactive session: a prompt, the reply streamed, and the slash commands.
//!
//! Each line is one turn, except a line starting with `/` (or a lone `exit` or `quit`),
//! which is a command and never reaches the model. The prompt behaves like a shell's:
//! Ctrl-C clears what was typed, and on an empty line says how to quit ([`QUIT_HINT`])
//! instead of quitting, so a press meant for a reply that had just finished never ends the
//! session; Ctrl-D or `/exit` quits. Ctrl-C during a reply cancels that turn and returns to
//! the prompt with the session intact. On a terminal the typed lines are kept between
//! sessions (see [`history`]). Approval questions are asked through the same line reader
//! as the prompt; when stdin is not a terminal nobody can answer them, so writes and
//! commands fail closed unless `--yes`.
//!
//! At start, a check bounded by [`STARTUP_CHECK`] asks the server whether the configured
//! model is installed, so a missing one is reported at once, with what could be chosen
//! instead, rather than on the first prompt. A server that does not answer in time is left
//! for the first prompt to report, as it always was.

mod commands;
mod complete;
mod history;
mod input;

use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::authority::CancelToken;
use crate::authority::approval::{
    Approver, Decision, Request, decision_for, may_add_reason, valid_answers,
};
use crate::config::{self, ConfigEnv, Flags, Source};
use crate::display::{
    Display, HANG, Stream, colour_for, columns, footer, one_line_safe, print_wrapped, terminal_safe,
};
use crate::frontend::ask::{self, show_request};
use crate::frontend::models::{self, installed_as, server_url};
use crate::frontend::session::{self, Ending, Mode, Session};
use crate::frontend::{Exit, error};
use crate::ollama::{Client, ServerKind};

pub(crate) use commands::{COMMANDS, Command, NOTES};
pub(crate) use input::{Input, InputHistory, Line};

/// The prompt shown for each line.
pub(crate) const PROMPT: &str = "metron > ";

/// Shown when Ctrl-C finds nothing to stop or clear: the person may be trying to quit, and
/// Ctrl-C no longer does that.
pub(crate) const QUIT_HINT: &str = "Ctrl-D or /exit quits";

/// The longest the start-up model check may delay the first prompt: long enough for a
/// local server to list its models, short enough not to be noticed when none answers.
pub(crate) const STARTUP_CHECK: Duration = Duration::from_secs(2);

/// The longest `/model` waits for the server to list and describe its models.
const MODEL_LIMIT: Duration = Duration::from_secs(5);

/// Runs the interactive session (with the command line's `flags` as the top configuration
/// layer) until the person quits.
pub(crate) fn run(yes: bool, flags: &Flags, resume: &crate::sessions::Resume) -> Exit {
    let terminal = std::io::stdin().is_terminal();
    let input = Arc::new(Input::spawn(terminal));
    let asker = Arc::clone(&input);
    let ask = terminal.then(|| -> session::AskPerson {
        Box::new(move |cancel: &CancelToken| {
            Box::new(AskThroughInput {
                input: asker,
                color: colour_for(Stream::Stderr),
                cancel: cancel.clone(),
            })
        })
    });
    let started = session::start(Mode::Interactive, flags, yes, ask, resume);
    let mut session = match started {
        Ok(session) => session,
        Err(exit) => return exit,
    };
    print_banner(&session);
    if terminal {
        input.keep(saved_history(&session));
        input.complete_with(complete::Sources {
            root: session
                .agent
                .toolbox()
                .project()
                .canonical_root()
                .to_path_buf(),
            endpoint: session.loaded.config.endpoint.clone(),
        });
    }
    let prompt = if terminal { PROMPT } else { "" };
    let cancel = session.cancel.clone();
    session::block_on(async || {
        // Ctrl-C during the check gives up on it and goes on to the prompt, where it would
        // not quit either.
        let offer = tokio::select! {
            biased;
            () = cancel.cancelled() => {
                eprintln!("{QUIT_HINT}");
                None
            }
            offer = check_model(&session) => offer,
        };
        // Asked outside the check's select, so that Ctrl-C at the question is the line
        // editor's (it answers no) and never abandons a read in progress.
        if let Some(offer) = offer
            && terminal
        {
            offer_model(&mut session, &input, offer).await;
        }
        // The read waiting for the next line. It outlives a Ctrl-C that arrives as a
        // signal (stdin is not a terminal, or the editor is between reads): the reading
        // thread is still blocked on that line, so asking again would lose it.
        let mut pending = None;
        loop {
            // A press that a turn or a slash command already acted on is not a press at
            // the idle prompt (where Ctrl-C shows how to quit).
            cancel.forget();
            let read = pending.get_or_insert_with(|| Box::pin(input.read(prompt)));
            let line = tokio::select! {
                biased;
                () = cancel.cancelled() => {
                    eprintln!("{QUIT_HINT}");
                    continue;
                }
                line = read => line,
            };
            pending = None;
            let line = match line {
                Line::Text(line) => line,
                Line::Eof => return Exit::Success,
                Line::Interrupted => {
                    eprintln!("{QUIT_HINT}");
                    continue;
                }
                Line::Cleared => continue,
            };
            if line.trim().is_empty() {
                continue;
            }
            match Command::parse(&line) {
                Ok(Some(Command::Exit)) => return Exit::Success,
                // Asking the server can take a while; Ctrl-C abandons it.
                Ok(Some(Command::Model(name))) => {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => say_err(&format!(
                            "[interrupted: /model was cancelled; the model stays {}]",
                            one_line_safe(&session.loaded.config.model)
                        )),
                        _ = choose_model(&mut session, name.as_deref()) => {}
                    }
                }
                Ok(Some(Command::SaveModel(name))) => {
                    tokio::select! {
                        biased;
                        () = cancel.cancelled() => say_err(&format!(
                            "[interrupted: /model was cancelled; the model stays {} and nothing was saved]",
                            one_line_safe(&session.loaded.config.model)
                        )),
                        () = save_model(&mut session, name.as_deref()) => {}
                    }
                }
                // A slash command (`/tags` walks the tree) cannot be cut short; a press
                // while it runs is forgotten before the next prompt.
                Ok(Some(command)) => run_slash_command(command, &mut session),
                Ok(None) => turn(&mut session, &line).await,
                Err(message) => say_err(&terminal_safe(&message)),
            }
        }
    })
}

/// `/sessions`: this project's saved sessions, or why there are none to show.
fn sessions_text(agent: &crate::agent::Agent<Client>) -> String {
    let Some(dir) = crate::sessions::project_dir(agent.toolbox().project().root()) else {
        return "no sessions are saved: neither $HOME nor $METRON_CONFIG_DIR is set".to_owned();
    };
    let lines = crate::sessions::list_lines(&dir);
    if lines.is_empty() {
        return "no saved sessions in this project yet (one is saved once a request is sent)"
            .to_owned();
    }
    lines.join("\n")
}

/// Prints one of metron's messages on stdout, wrapped on a terminal ([`print_wrapped`]);
/// a final newline in `text` is the line's own. Quoted parts must already be safe.
fn say(text: &str) {
    print_wrapped(
        Stream::Stdout,
        text.strip_suffix('\n').unwrap_or(text),
        HANG,
    );
}

/// [`say`] on stderr.
fn say_err(text: &str) {
    print_wrapped(
        Stream::Stderr,
        text.strip_suffix('\n').unwrap_or(text),
        HANG,
    );
}

/// The input history for the line editor: the saved entries and the file new ones go to,
/// or nothing when `save_input_history` is off (this session's lines are then kept in
/// memory only) or there is no user directory to keep them in.
fn saved_history(session: &Session) -> InputHistory {
    if !session.loaded.config.save_input_history {
        return InputHistory::default();
    }
    let Some(dir) = config::user_dir(&ConfigEnv::from_process()) else {
        error(
            "warning: this session does not save what you type: neither $HOME nor $METRON_CONFIG_DIR is set; set one to keep the input history, or set \"save_input_history\": false",
        );
        return InputHistory::default();
    };
    let (file, entries) = history::HistoryFile::open(&dir);
    InputHistory { entries, file }
}

/// The banner: the model and the layer that chose it, how to get help, the project (and
/// whether it is a git work tree, which decides whether patches can be offered), and which
/// config files were read (both, when the user's and the project's exist): what a person
/// needs to know before the first prompt; when commands are allowed, what confines them;
/// with `--yes`, that nothing will be asked.
fn print_banner(session: &Session) {
    let config = &session.loaded;
    let project = session.agent.toolbox().project();
    let root = project.root();
    // The model may come from a repository's own `.metron.json`: shown, never obeyed.
    // A project's choice that replaced the user's own model says so here too.
    let replaced = match &config.replaced_model {
        Some(users) => format!(", instead of your {}", one_line_safe(users)),
        None => String::new(),
    };
    let cloud = match &session.model_host {
        Some(host) => format!(", a cloud model run at {}", one_line_safe(host)),
        None => String::new(),
    };
    say(&format!(
        "=== metron (model: {}, {}{replaced}{cloud}) ===",
        one_line_safe(&config.config.model),
        commands::chosen_by(config.source(crate::config::Key::model), root)
    ));
    say("Context-disciplined terminal coder. /help for commands, /exit to quit.");
    say(&session.agent.window().line());
    // Ollama is the default and says nothing; another kind of server is named, since its
    // window and its models are its own (`num_ctx` cannot be set over Chat Completions).
    if crate::ollama::ServerKind::of_endpoint(&config.config.endpoint)
        == crate::ollama::ServerKind::OpenAi
    {
        say(&format!(
            "server: OpenAI-compatible at {} (its own context window; `num_ctx` is not sent)",
            terminal_safe(&server_url(&config.config.endpoint))
        ));
    }
    let kind = if project.is_git() {
        "a git work tree"
    } else {
        "not a git work tree, so apply_patch is not offered"
    };
    // A directory name can hold escapes too.
    say(&format!(
        "project: {} ({kind})",
        terminal_safe(&root.display().to_string())
    ));
    say(&format!(
        "config: {}",
        terminal_safe(&commands::files_text(config, root))
    ));
    if !config.config.allowed_commands.is_empty()
        || !config.config.allowed_project_programs.is_empty()
    {
        let sandbox = match crate::sandbox::status(config.config.command_sandbox) {
            crate::sandbox::Status::Confined(line) => format!("ok {line}"),
            crate::sandbox::Status::Off(line) => format!("OFF: {line}"),
            crate::sandbox::Status::Unavailable(line) => format!("unavailable: {line}"),
        };
        say(&format!("sandbox: {}", terminal_safe(&sandbox)));
    }
    if session.yes {
        say(&format!("approvals: {}", ask::YES_NOTICE));
    }
    for line in crate::frontend::instructions_lines(session.agent.instructions(), &config.config) {
        say(&line);
    }
    println!();
}

/// The start-up check: when the server lists its models within [`STARTUP_CHECK`] and the
/// configured model is not among them, says so on stderr with the installed models that
/// support tools, and returns the one to offer instead when there is exactly one (see
/// [`models::sole_tool_model`]). Any failure to ask (no server, no answer in time) says
/// nothing: the first prompt reports it with its remedy.
async fn check_model(session: &Session) -> Option<String> {
    let deadline = Instant::now() + STARTUP_CHECK;
    let config = &session.loaded.config;
    let client = Client::new(&config.endpoint, STARTUP_CHECK).ok()?;
    let names = client.models(STARTUP_CHECK).await.ok()?;
    if installed_as(&config.model, names.iter().map(String::as_str)).is_some() {
        return None;
    }
    let installed = models::describe(&client, names, deadline).await;
    let root = session.agent.toolbox().project().root();
    let notice = commands::missing_model_text(
        &config.model,
        &commands::chosen_by(session.loaded.source(crate::config::Key::model), root),
        &server_url(&config.endpoint),
        &installed,
    );
    // Model names come from the server: shown, never obeyed.
    error(terminal_safe(&notice));
    models::sole_tool_model(&installed).map(|m| m.name.clone())
}

/// The answers [`offer_model`] understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum YesNo {
    Yes,
    No,
}

impl YesNo {
    /// `y`/`yes` or `n`/`no` (any case); a bare Return is no, the safe default. Anything
    /// else is not taken for either: the question is asked again.
    fn parse(answer: &str) -> Option<YesNo> {
        match answer.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Some(YesNo::Yes),
            "" | "n" | "no" => Some(YesNo::No),
            _ => None,
        }
    }
}

/// Offers the one installed model with tool support in place of a configured model that
/// is not installed: a yes/no question, asked on a terminal only. Yes switches for this
/// session (as `/model NAME` does) and says how to keep it; no, Ctrl-C or Ctrl-D keeps
/// the configured model.
async fn offer_model(session: &mut Session, input: &Input, name: String) {
    let question = format!(
        "Use {} for this session instead? [y/N] ",
        one_line_safe(&name)
    );
    let answer = loop {
        match input.answer(&question).await {
            Line::Text(text) => match YesNo::parse(&text) {
                Some(answer) => break answer,
                None => say_err(&format!(
                    "Answer y (switch to {}) or n (keep {}).",
                    one_line_safe(&name),
                    one_line_safe(&session.loaded.config.model)
                )),
            },
            Line::Eof | Line::Interrupted | Line::Cleared => break YesNo::No,
        }
    };
    if answer == YesNo::No {
        say_err(&format!(
            "keeping {}; /model lists the models you can switch to",
            one_line_safe(&session.loaded.config.model)
        ));
        return;
    }
    if choose_model(session, Some(&name)).await.is_some() {
        say(&format!(
            "/model {} --save keeps it for the next session",
            one_line_safe(&name)
        ));
    }
}

/// `/model` lists the installed models with tool support; `/model NAME` switches to NAME
/// when it is one of them, keeping the conversation. Only `/api/tags` and `/api/show` are
/// asked, never `/api/chat`, so a wrong name costs no inference. Returns the model in use
/// when `wanted` is (now) the session's model, `None` when it was refused or only listed.
async fn choose_model(session: &mut Session, wanted: Option<&str>) -> Option<String> {
    let config = &session.loaded.config;
    let server = server_url(&config.endpoint);
    let current = config.model.clone();
    let (client, surveyed) = match Client::new(&config.endpoint, MODEL_LIMIT) {
        Ok(client) => {
            let surveyed = models::survey(&client, MODEL_LIMIT).await;
            (Some(client), surveyed)
        }
        Err(e) => (None, Err(e)),
    };
    let installed = match surveyed {
        Ok(installed) => installed,
        Err(e) => {
            say_err(&format!(
                "cannot list the models installed at {server}, so the model stays {}: {}",
                one_line_safe(&current),
                terminal_safe(&e.to_string())
            ));
            return None;
        }
    };
    let root = session.agent.toolbox().project().root();
    let chosen = commands::chosen_by(session.loaded.source(crate::config::Key::model), root);
    // Model names come from the server: every text below is shown, never obeyed.
    let Some(wanted) = wanted else {
        let list = commands::model_list_text(&current, &chosen, &server, &installed);
        say(&terminal_safe(&list));
        return None;
    };
    match commands::model_choice(wanted, &current, &server, &installed) {
        Ok(name) if name == current => {
            say(&format!("already using {}", one_line_safe(&name)));
            Some(name)
        }
        Ok(name) => {
            // A cloud model is a remote endpoint of its own: refused or announced before
            // the next request carries the conversation (and the code in it) there.
            let chosen = installed.iter().find(|m| m.name == name);
            let place =
                chosen
                    .map(|m| m.place.clone())
                    .unwrap_or(crate::disclosure::ModelPlace::Unknown {
                        reason: "not described by the server".to_owned(),
                    });
            let trained = chosen.and_then(|m| m.trained);
            match crate::disclosure::model_check(
                &session.loaded,
                &name,
                &Source::Command("/model"),
                &place,
            ) {
                Err(refusal) => {
                    say_err(&format!(
                        "metron: {}; the model stays {}",
                        terminal_safe(&refusal.to_string()),
                        one_line_safe(&current)
                    ));
                    return None;
                }
                Ok(Some(host)) => say_err(&crate::disclosure::model_notice(&name, &host)),
                Ok(None) => {}
            }
            say(&format!(
                "model: {} (was {}); the conversation is kept",
                one_line_safe(&name),
                one_line_safe(&current)
            ));
            if let Some(warning) = session.agent.set_model(name.clone()) {
                error(warning);
            }
            // A new model, so a new window: fixed once here, as at start. An
            // OpenAI-compatible server's own window is asked again: LM Studio's is the
            // loaded model's, so it changes with the model (llama-server's stays).
            let mut window = session.agent.window().for_model(trained);
            if let Some(client) = &client
                && client.kind() == ServerKind::OpenAi
            {
                let served = client
                    .context_length(&name, MODEL_LIMIT)
                    .await
                    .ok()
                    .flatten();
                window = window.with_served(served);
            }
            if window.effective() != session.agent.window().effective() {
                say(&window.line());
            }
            session.agent.set_window(window);
            session.loaded.config.model = name.clone();
            session
                .loaded
                .sources
                .insert("model", Source::Command("/model"));
            Some(name)
        }
        Err(message) => {
            say_err(&terminal_safe(&message));
            None
        }
    }
}

/// `/model NAME --save` (or `/model --save`, for the current model): switches as
/// `/model NAME` does, then writes the model to the user's own config file, the only
/// write to a config file metron makes (see `config::save_model`), and says so. Nothing
/// is saved when the switch is refused.
async fn save_model(session: &mut Session, wanted: Option<&str>) {
    // The layer that chose the model at start, before a switch credits `/model`: one
    // above the user's file still chooses next time, and the person must know.
    let above = above_users_file(session);
    let model = match wanted {
        Some(wanted) => match choose_model(session, Some(wanted)).await {
            Some(model) => model,
            None => {
                say_err("nothing was saved");
                return;
            }
        },
        None => session.loaded.config.model.clone(),
    };
    match config::save_model(&ConfigEnv::from_process(), &model) {
        Ok(saved) => {
            let what = if saved.created { "created" } else { "updated" };
            say(&format!(
                "saved: {what} {} with \"model\": \"{}\" (every other key kept); /model --save is the only way metron ever writes a config file",
                terminal_safe(&saved.path.display().to_string()),
                one_line_safe(&model)
            ));
            if let Some(layer) = above {
                say(&format!(
                    "note: {} chooses the model above your config file, so sessions here start with that one until it is removed",
                    terminal_safe(&layer)
                ));
            }
        }
        Err(e) => error(e),
    }
}

/// The layer above the user's own file that chose the session's model at start (the
/// project's `.metron.json`, `$OLLAMA_MODEL`, `--model`), named for a note; `None` when
/// the user's file, the default or `/model` chose it.
fn above_users_file(session: &Session) -> Option<String> {
    let loaded = &session.loaded;
    match loaded.source(crate::config::Key::model) {
        Source::File(path) if loaded.trust_of(path) == Some(config::ConfigTrust::Project) => {
            Some(format!("the project's {}", path.display()))
        }
        source @ (Source::Env(_) | Source::Flag(_)) => Some(source.to_string()),
        Source::File(_) | Source::Default | Source::Command(_) => None,
    }
}

fn run_slash_command(command: Command, session: &mut Session) {
    match command {
        Command::Help => print!("{}", commands::help_text(columns(Stream::Stdout))),
        // Values may come from a repository's `.metron.json`: shown, never obeyed.
        Command::Config => say(&terminal_safe(&commands::config_text(
            &session.loaded,
            &session.agent,
            session.yes,
        ))),
        Command::Reset => {
            if let Some(warning) = session.agent.reset() {
                error(warning);
            }
            say("conversation cleared (the system prompt is kept)");
        }
        Command::History => say(&terminal_safe(&commands::history_text(&session.agent))),
        Command::Tags => rebuild_tags(session),
        // The ledger quotes the model (tool names, arguments, reasons) and the tools
        // (results, paths, argv): shown, never obeyed.
        Command::Ledger => {
            say(&terminal_safe(&session.agent.ledger().render(
                &session.agent.toolbox().authority().standing_approvals(),
            )));
            // Evidence the files no longer bear out, marked under the calls it came from.
            for line in session.agent.stale_lines() {
                say(&terminal_safe(&line));
            }
        }
        Command::Diff => match session.agent.session_diff() {
            Ok(diff) if diff.is_empty() => {
                say(
                    "no changes: metron has written nothing in this session that is still different",
                );
            }
            Ok(diff) => {
                let colour = colour_for(Stream::Stdout);
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(&ask::render_diff(&diff, colour));
                let _ = out.flush();
            }
            Err(why) => error(why),
        },
        Command::Undo => match session.agent.undo() {
            Ok(done) => say(&terminal_safe(&done)),
            Err(why) => error(why),
        },
        Command::Show(number) => match session.agent.ledger().show(number) {
            Ok(text) => print!("{}", terminal_safe(&text)),
            Err(why) => error(terminal_safe(&why)),
        },
        Command::Sessions => say(&sessions_text(&session.agent)),
        Command::Context => say(&terminal_safe(&commands::context_text(
            &session.agent,
            &session.loaded.config,
        ))),
        // Handled by the loop: leaving, and asking the server (which needs the runtime).
        Command::Exit | Command::Model(_) | Command::SaveModel(_) => {}
    }
}

/// `/tags`: drops the symbol index and walks the tree again, so the next lookup sees the
/// project as it is now.
fn rebuild_tags(session: &Session) {
    let started = std::time::Instant::now();
    let languages = session.agent.rebuild_symbols();
    say(&commands::tags_text(
        &languages,
        started.elapsed().as_millis(),
    ));
}

async fn turn(session: &mut Session, line: &str) {
    let window = session.agent.window();
    let mut display = Display::new(true, &session.loaded.config.model);
    let outcome = session::drive_turn(&mut session.agent, line, &mut display).await;
    display.finish_line();
    match outcome {
        Ending::Finished(Ok(report)) => {
            for line in footer(&report, window) {
                say_err(&line);
            }
        }
        Ending::Finished(Err(e)) => error(e),
        Ending::Interrupted => {
            say_err("[interrupted: the turn was cancelled; the session is intact]")
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
        // `a` only where it can hold: a warned command is asked about every time.
        let offer_standing = request.offers_standing();
        let question = show_request(request, self.color, offer_standing);
        // An answer that is neither yes nor no (`ok`) is asked again, the request still on
        // screen above; end of input and Ctrl-C end the question as they always did.
        let (answer, mut decision) = loop {
            match self.input.read_blocking(&question) {
                Line::Text(answer) => match decision_for(&answer, offer_standing) {
                    Some(decision) => break (answer, decision),
                    None => say_err(valid_answers(offer_standing)),
                },
                Line::Eof => return Decision::Declined(None),
                Line::Interrupted | Line::Cleared => {
                    self.cancel.cancel();
                    return Decision::Interrupted;
                }
            }
        };
        if decision == Decision::Declined(None) && may_add_reason(&answer) {
            match self.input.read_blocking(REASON_PROMPT) {
                Line::Text(reason) if !reason.trim().is_empty() => {
                    decision = Decision::Declined(Some(reason.trim().to_owned()));
                }
                Line::Text(_) | Line::Eof => {}
                Line::Interrupted | Line::Cleared => {
                    self.cancel.cancel();
                    return Decision::Interrupted;
                }
            }
        }
        if decision == Decision::ApprovedForSession {
            say_err(&format!(
                "standing approval granted: {} (listed by /ledger)",
                terminal_safe(&request.standing_scope())
            ));
        }
        decision
    }
}

#[cfg(test)]
mod tests {
    use super::YesNo;

    #[test]
    fn the_model_offer_takes_yes_or_no_and_return_is_no() {
        for yes in ["y", "Y", " yes ", "YES"] {
            assert_eq!(YesNo::parse(yes), Some(YesNo::Yes), "{yes:?}");
        }
        for no in ["", "n", "No", "  "] {
            assert_eq!(YesNo::parse(no), Some(YesNo::No), "{no:?}");
        }
        for neither in ["ok", "sure", "y please", "1"] {
            assert_eq!(YesNo::parse(neither), None, "{neither:?}");
        }
    }
}
