//! Starting a session (project, configuration, tools, model client, agent) and running
//! one turn of it under Ctrl-C. Shared by the REPL and one-shot mode.

use std::time::Duration;

use crate::agent::{Agent, Settings, TurnError, TurnReport};
use crate::cli::{Exit, error, startup};
use crate::config::Loaded;
use crate::display::Display;
use crate::ollama::Client;
use crate::tools::approval::Approver;
use crate::tools::{Budgets, Policy, Toolbox};

/// How the session talks to the person, which decides what may happen without asking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The REPL: `auto_approve_patches` from a trusted config applies.
    Interactive,
    /// `-p`: nobody can answer, so only `--yes` approves; `auto_approve_patches` never
    /// bypasses this.
    OneShot,
}

/// A started session.
#[derive(Debug)]
pub struct Session {
    /// The configuration and where each value came from.
    pub loaded: Loaded,
    /// The agent, with its tools and model client.
    pub agent: Agent<Client>,
}

/// Loads everything a session needs; on failure the error is printed and the exit code
/// returned (2 for configuration problems).
pub fn start(approver: Box<dyn Approver>, mode: Mode) -> Result<Session, Exit> {
    let (project, loaded) = startup()?;
    // A remote endpoint receives every tool result: refuse it when the user's config says
    // so, and otherwise say so once, before the first request.
    let route = crate::disclosure::check_loaded(&loaded).map_err(|message| {
        error(message);
        Exit::Usage
    })?;
    let config = &loaded.config;
    let mut policy = Policy::from_config(config);
    if mode == Mode::OneShot {
        policy.auto_approve_patches = false;
    }
    let toolbox = Toolbox::new(project, Budgets::from_config(config))
        .with_policy(policy)
        .with_approver(approver);
    let client = Client::new(
        &config.endpoint,
        Duration::from_secs(config.timeout_seconds),
    )
    .map_err(|e| {
        error(format!("{e} ({})", loaded.source_of("endpoint")));
        Exit::Usage
    })?;
    let agent = Agent::new(client, toolbox, Settings::from_config(config));
    if let crate::disclosure::Route::Remote { host } = &route {
        eprintln!("{}", crate::disclosure::notice(host));
    }
    Ok(Session { loaded, agent })
}

/// How a turn ended.
#[derive(Debug)]
pub enum Outcome {
    /// It finished, with an answer or an error.
    Finished(Result<TurnReport, TurnError>),
    /// Ctrl-C: the turn was cancelled and closed in history.
    Interrupted,
}

/// Ctrl-C, as a stream of events (the handler stays installed for the whole session, so a
/// press is never lost between turns).
#[derive(Debug)]
pub struct Interrupts {
    #[cfg(unix)]
    signal: tokio::signal::unix::Signal,
}

impl Interrupts {
    /// Starts listening. Must be called inside the runtime.
    pub fn listen() -> std::io::Result<Interrupts> {
        crate::interrupt::listen()?;
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(Interrupts {
                signal: signal(SignalKind::interrupt())?,
            })
        }
        #[cfg(not(unix))]
        {
            Ok(Interrupts {})
        }
    }

    /// Takes off the stream a Ctrl-C that blocking code (a tool, a slash command) already
    /// saw through [`crate::interrupt::pressed`], so it does not also end the next wait:
    /// at the idle prompt, Ctrl-C quits. Does nothing when there was no such press.
    pub async fn forget_seen_press(&mut self) {
        if crate::interrupt::pressed() {
            let _ = tokio::time::timeout(STALE_PRESS_WAIT, self.next()).await;
            crate::interrupt::clear();
        }
    }

    /// Waits for the next Ctrl-C.
    pub async fn next(&mut self) {
        #[cfg(unix)]
        {
            self.signal.recv().await;
        }
        #[cfg(not(unix))]
        {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// How often the waiting indicator is redrawn.
const SPINNER_TICK: Duration = Duration::from_millis(120);

/// Runs one turn, drawing the waiting indicator, until it finishes or Ctrl-C cancels it.
pub async fn drive_turn(
    agent: &mut Agent<Client>,
    line: &str,
    display: &mut Display,
    interrupts: &mut Interrupts,
) -> Outcome {
    let spinner = display.spinner();
    let outcome = {
        let turn = agent.turn(line, display);
        tokio::pin!(turn);
        let mut ticks = tokio::time::interval(SPINNER_TICK);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            tokio::select! {
                biased;
                () = interrupts.next() => break Outcome::Interrupted,
                result = &mut turn => break Outcome::Finished(result),
                _ = ticks.tick() => spinner.borrow_mut().draw(),
            }
        }
    };
    spinner.borrow_mut().clear();
    if matches!(outcome, Outcome::Interrupted) {
        agent.interrupted(display);
        return Outcome::Interrupted;
    }
    // A tool may have seen a press before this loop did (the turn then closed itself).
    interrupts.forget_seen_press().await;
    match outcome {
        Outcome::Finished(Err(TurnError::Interrupted)) => Outcome::Interrupted,
        finished => finished,
    }
}

/// How long to wait for tokio to report a Ctrl-C the turn already saw (both handlers run
/// in the same signal delivery, so in practice it is there at once).
const STALE_PRESS_WAIT: Duration = Duration::from_millis(500);

/// Runs `work` on a current-thread runtime (metron does one thing at a time, and tools
/// run inline) with Ctrl-C already being listened for; a failure to set either up is
/// reported and exits 1.
pub fn block_on(work: impl AsyncFnOnce(&mut Interrupts) -> Exit) -> Exit {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            error(format!("cannot start the async runtime: {e}"));
            return Exit::Failure;
        }
    };
    runtime.block_on(async {
        match Interrupts::listen() {
            Ok(mut interrupts) => work(&mut interrupts).await,
            Err(e) => {
                error(format!("cannot listen for Ctrl-C: {e}"));
                Exit::Failure
            }
        }
    })
}
