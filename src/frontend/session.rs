//! Starting a session (project, configuration, Ctrl-C, tools, model client, agent) and
//! running one turn of it with the waiting indicator. Shared by the REPL and one-shot
//! mode; [`toolbox`] is also `metron tool`'s, so every front end gets its approver,
//! `auto_approve_patches` and Ctrl-C from one place.

use std::time::Duration;

use super::{Exit, error, startup};
use crate::agent::window::{Window, refuses_overflow};
use crate::agent::{Agent, Settings, TurnError, TurnReport};
use crate::authority::{Approver, CancelToken};
use crate::config::Config;
use crate::config::{Flags, Loaded, Source};
use crate::display::{Display, HANG, Stream, print_wrapped};
use crate::instructions::Instructions;
use crate::ollama::{Client, ServerKind};
use crate::project::Project;
use crate::sessions::store::Files;
use crate::sessions::{Resume, SessionLog};
use crate::tools::{Access, Budgets, CommandLimits, Toolbox};

/// How the session talks to the person, which decides what may happen without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// The REPL: `auto_approve_patches` from a trusted config applies.
    Interactive,
    /// `-p`: nobody can answer, so only `--yes` approves; `auto_approve_patches` never
    /// bypasses this.
    OneShot,
    /// `metron tool`: one call of a tool with this access, asked on a terminal or approved
    /// by `--yes`, never by `auto_approve_patches`.
    Tool(Access),
}

impl Mode {
    /// `auto_approve_patches` from a trusted config applies only where the person is
    /// watching the session.
    fn auto_approves(self) -> bool {
        self == Mode::Interactive
    }

    /// Ctrl-C is caught (and handed to the tools through the cancel token) in a session,
    /// and for a tool with effects, so it cannot kill metron halfway through a write or
    /// leave a command's process group running. A read-only `metron tool` keeps Ctrl-C's
    /// default.
    fn catches_ctrl_c(self) -> bool {
        self != Mode::Tool(Access::Read)
    }
}

/// A front end's way of asking a person, built around the session's Ctrl-C.
pub(crate) type AskPerson = Box<dyn FnOnce(&CancelToken) -> Box<dyn Approver>>;

/// The session's tools and its Ctrl-C: the limits and budgets from `config`, the approver
/// (`--yes`; else `ask`, the front end's way of asking a person, if it has one; else
/// nobody, which fails closed), `auto_approve_patches` where `mode` allows it, and Ctrl-C
/// caught where `mode` needs it. On failure the error is printed and the exit returned.
pub(crate) fn toolbox(
    mode: Mode,
    project: Project,
    config: &Config,
    yes: bool,
    ask: Option<AskPerson>,
) -> Result<(Toolbox, CancelToken), Exit> {
    let cancel = CancelToken::new();
    if mode.catches_ctrl_c()
        && let Err(e) = super::ctrl_c::forward_to(&cancel)
    {
        error(format!("cannot listen for Ctrl-C: {e}"));
        return Err(Exit::Failure);
    }
    let watched = match mode {
        Mode::Interactive => super::ask::Watched::ByAPerson,
        Mode::OneShot | Mode::Tool(_) => super::ask::Watched::No,
    };
    let approver = super::ask::approver(yes, watched, ask.map(|ask| ask(&cancel)));
    let toolbox = Toolbox::new(project, Budgets::from_config(config))
        .with_limits(CommandLimits::from_config(config))
        .with_auto_approve_patches(mode.auto_approves() && config.auto_approve_patches)
        .with_approver(approver)
        .with_cancel(cancel.clone());
    Ok((toolbox, cancel))
}

/// A started session.
#[derive(Debug)]
pub(crate) struct Session {
    /// The configuration and where each value came from.
    pub(crate) loaded: Loaded,
    /// The agent, with its tools and model client.
    pub(crate) agent: Agent<Client>,
    /// The session's Ctrl-C (raised by every press from the start).
    pub(crate) cancel: CancelToken,
    /// The host a cloud model runs at, when the server says the model is one (announced
    /// at start; in the banner and `session_start`).
    pub(crate) model_host: Option<String>,
    /// `--yes`: patches and allowed commands go ahead without asking (the banner and
    /// `/config` say so).
    pub(crate) yes: bool,
}

/// Loads everything a session needs (the command line's `flags` as the top configuration
/// layer), with the tools [`toolbox`] sets up (`yes` and the front end's way of asking,
/// `ask`); on failure the error is printed and the exit code returned (2 for
/// configuration problems).
pub(crate) fn start(
    mode: Mode,
    flags: &Flags,
    yes: bool,
    ask: Option<AskPerson>,
    resume: &Resume,
) -> Result<Session, Exit> {
    let (project, mut loaded) = startup(flags)?;
    let root = project.root().to_path_buf();
    let sessions_dir = crate::sessions::project_dir(&root);
    let resumed = resumed(resume, sessions_dir.as_deref())?;
    // A resumed session keeps its model unless --model (or --set model=) says otherwise.
    if let Some((_, saved)) = &resumed
        && flags.model.is_none()
        && !flags.sets(crate::config::Key::model)
        && !saved.model.is_empty()
    {
        loaded.config.model.clone_from(&saved.model);
        let how = match resume {
            Resume::Last => "--continue",
            _ => "--resume",
        };
        loaded.sources.insert("model", Source::Command(how));
    }
    // A remote endpoint receives every tool result: refuse it when the user's config says
    // so, and otherwise say so once, before the first request.
    let route = crate::disclosure::check_loaded(&loaded).map_err(|message| {
        error(message);
        Exit::Usage
    })?;
    let config = &loaded.config;
    // Read once, before the first request: every request of the session then carries the
    // same instructions.
    let instructions = match std::env::current_dir() {
        Ok(cwd) => Instructions::load(
            &project,
            &cwd,
            crate::config::user_dir(&crate::config::ConfigEnv::from_process()).as_deref(),
            config,
        ),
        Err(_) => Instructions::off(),
    };
    let (toolbox, cancel) = toolbox(mode, project, config, yes, ask)?;
    // The model takes seconds over the first prompt: find_symbol's index reads and parses
    // the project meanwhile, so the model's first lookup finds the work done.
    toolbox.symbols().warm();
    let client = Client::new(
        &config.endpoint,
        Duration::from_secs(config.timeout_seconds),
    )
    .map_err(|e| {
        // Name where the endpoint came from when the endpoint is what is wrong; a bad
        // SSL_CERT_FILE names its own variable and file.
        match e {
            crate::ollama::OllamaError::CertFile { .. } => error(e.to_string()),
            _ => error(format!(
                "{e} ({})",
                loaded.source(crate::config::Key::endpoint)
            )),
        }
        Exit::Usage
    })?;
    // Before any request, the question below included.
    if let crate::disclosure::Route::Remote { host } = &route {
        print_wrapped(Stream::Stderr, &crate::disclosure::notice(host), HANG);
    }
    // The model may run elsewhere even when the server is here (a cloud model): asked
    // before any chat request, and refused or announced like a remote endpoint.
    let limit = super::models::PLACE_LIMIT;
    // A press during the question ends the session as it would end the first request
    // (the turn forgets earlier presses when it starts).
    let described = super::models::place_of(&config.endpoint, &config.model, limit, &cancel);
    let Some(described) = described.filter(|_| !cancel.is_cancelled()) else {
        error("interrupted");
        return Err(Exit::Interrupted);
    };
    let model_host = crate::disclosure::model_check(
        &loaded,
        &config.model,
        loaded.source(crate::config::Key::model),
        &described.place,
    )
    .map_err(|message| {
        error(message);
        Exit::Usage
    })?;
    let mut agent =
        Agent::new(client, toolbox, Settings::from_config(config)).with_instructions(instructions);
    // Fixed here, once, for the session's model (a resumed session's too): `/model`
    // fixes it again for the new model, and nothing else changes it.
    agent.set_window(
        Window::new(config.num_ctx, described.trained)
            .on(ServerKind::of_endpoint(&config.endpoint))
            .with_served(described.served),
    );
    agent.set_refuses_overflow(refuses_overflow(described.version.as_deref()));
    let mut resumed_path = None;
    match (resumed, sessions_dir.clone()) {
        (Some((path, saved)), _) => {
            resumed_path = Some(path.clone());
            agent.restore(saved.messages.clone(), saved.dropped, saved.facts.clone());
            let log = SessionLog::resume(Box::new(Files), path, &saved, agent.history());
            agent.save_to(Box::new(log));
            if let Some(warning) = agent.close_unanswered() {
                error(&warning);
            }
            // `-m` over the saved model is a switch, as `/model NAME` is: saved, so the
            // next resume keeps it.
            if config.model != saved.model
                && let Some(warning) = agent.set_model(config.model.clone())
            {
                error(&warning);
            }
            print_wrapped(Stream::Stderr, &crate::sessions::resumed_line(&saved), HANG);
        }
        (None, Some(dir)) => {
            let id = crate::sessions::place::new_id(
                crate::sessions::place::unix_now(),
                std::process::id(),
            );
            agent.save_to(Box::new(SessionLog::create(
                Box::new(Files),
                &dir,
                &id,
                &root,
                &config.model,
                // The window the requests carry, not the one configured.
                agent.window().effective(),
            )));
        }
        (None, None) => error(
            "warning: this session is not saved, so it cannot be resumed: neither $HOME nor $METRON_CONFIG_DIR is set; set one to keep sessions",
        ),
    }
    if let Some(dir) = &sessions_dir {
        retain(&loaded, dir, resumed_path.as_deref());
    }
    if let Some(host) = &model_host {
        print_wrapped(
            Stream::Stderr,
            &crate::disclosure::model_notice(&config.model, host),
            HANG,
        );
    }
    Ok(Session {
        loaded,
        agent,
        cancel,
        model_host,
        yes,
    })
}

/// The session `resume` asks for, read back with its file; `None` for a new one. An
/// error is printed and exits 1.
fn resumed(
    resume: &Resume,
    dir: Option<&std::path::Path>,
) -> Result<Option<(std::path::PathBuf, crate::sessions::Saved)>, Exit> {
    if *resume == Resume::New {
        return Ok(None);
    }
    let Some(dir) = dir else {
        error(
            "cannot resume: no sessions are saved without a user directory; set $HOME or $METRON_CONFIG_DIR",
        );
        return Err(Exit::Failure);
    };
    match crate::sessions::find(resume, dir) {
        Ok(found) => Ok(Some(found)),
        Err(message) => {
            error(message);
            Err(Exit::Failure)
        }
    }
}

/// `session_retention_days`: removes the project's sessions older than it (never `keep`,
/// the one being resumed), saying what went and why.
fn retain(loaded: &Loaded, dir: &std::path::Path, keep: Option<&std::path::Path>) {
    let days = loaded.config.session_retention_days;
    if days == 0 {
        return;
    }
    let now = crate::sessions::place::unix_now();
    let cutoff = now.saturating_sub(days.saturating_mul(86_400));
    let pruned = crate::sessions::prune::prune(&Files, dir, cutoff, keep);
    for line in &pruned.removed {
        print_wrapped(
            Stream::Stderr,
            &format!(
                "removed session {line} (session_retention_days: {days}, {})",
                loaded.source(crate::config::Key::session_retention_days)
            ),
            HANG,
        );
    }
    for failure in &pruned.failed {
        error(format!("warning: {failure}"));
    }
}

/// How a turn ended.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per turn, matched at once; boxing it would buy nothing"
)]
pub(crate) enum Ending {
    /// It finished, with an answer or an error.
    Finished(Result<TurnReport, TurnError>),
    /// Ctrl-C: the turn was cancelled and closed in history.
    Interrupted,
}

/// How often the waiting indicator is redrawn.
const SPINNER_TICK: Duration = Duration::from_millis(120);

/// Runs one turn, drawing the waiting indicator, until it finishes. Ctrl-C reaches the
/// turn through the session's cancel token; the turn closes itself.
pub(crate) async fn drive_turn(
    agent: &mut Agent<Client>,
    line: &str,
    display: &mut Display,
) -> Ending {
    let spinner = display.spinner();
    // An approved command's elapsed time, set by the tool thread while it runs.
    let activity = agent.toolbox().authority().activity().clone();
    let result = {
        let turn = agent.turn(line, display);
        tokio::pin!(turn);
        let mut ticks = tokio::time::interval(SPINNER_TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                biased;
                result = &mut turn => break result,
                _ = ticks.tick() => match activity.current() {
                    Some((label, elapsed)) => spinner.borrow_mut().draw_running(&label, elapsed),
                    None => spinner.borrow_mut().draw(),
                },
            }
        }
    };
    spinner.borrow_mut().clear();
    match result {
        Err(TurnError::Interrupted) => Ending::Interrupted,
        finished => Ending::Finished(finished),
    }
}

/// Runs `work` on a current-thread runtime (the model's stream and the indicator share
/// it; tools run on its blocking pool); a failure to set it up is reported and exits 1.
pub(crate) fn block_on(work: impl AsyncFnOnce() -> Exit) -> Exit {
    match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime.block_on(work()),
        Err(e) => {
            error(format!("cannot start the async runtime: {e}"));
            Exit::Failure
        }
    }
}
