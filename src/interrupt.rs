//! Ctrl-C for code that blocks.
//!
//! A tool runs inline: in the REPL and `-p` it holds the async runtime, so tokio's own
//! Ctrl-C handling only gets a turn once the tool returns, and in `metron tool` there is
//! no runtime at all. Without this a long `run_command` would keep Ctrl-C waiting for
//! `command_timeout_seconds`. [`listen`] installs a SIGINT handler (beside tokio's, where
//! there is one: both see every press) that raises a flag blocking code polls: a command
//! is killed, a question is declined, a write is not started (one in progress finishes),
//! and the agent closes the turn before asking the model again.
//!
//! Only the front ends listen (the REPL and `-p` from the start, `metron tool` for the
//! tools with effects); library code never installs a handler. Where nothing listens,
//! [`pressed`] is always false and Ctrl-C keeps its default effect.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

/// The flag, once a handler raises it; an installation error is kept and repeated.
static PRESSED: OnceLock<Result<Arc<AtomicBool>, String>> = OnceLock::new();

/// Starts raising the flag on SIGINT (once per process; later calls only report how
/// the first went). From then on Ctrl-C no longer ends the process by itself: the code
/// that installed it must notice [`pressed`].
pub fn listen() -> std::io::Result<()> {
    let installed = PRESSED.get_or_init(|| {
        let flag = Arc::new(AtomicBool::new(false));
        #[cfg(unix)]
        signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&flag))
            .map_err(|e| e.to_string())?;
        Ok(flag)
    });
    match installed {
        Ok(_) => Ok(()),
        Err(e) => Err(std::io::Error::other(e.clone())),
    }
}

/// Forgets earlier presses: each turn starts with this, so only a Ctrl-C pressed during
/// the turn stops its tools.
pub fn clear() {
    if let Some(Ok(flag)) = PRESSED.get() {
        flag.store(false, Ordering::SeqCst);
    }
}

/// Whether Ctrl-C was pressed since the last [`clear`] (false while nothing listens).
pub fn pressed() -> bool {
    PRESSED
        .get()
        .is_some_and(|installed| installed.as_ref().is_ok_and(|f| f.load(Ordering::SeqCst)))
}
