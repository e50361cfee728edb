//! Ctrl-C for code that blocks.
//!
//! The REPL and `-p` hear Ctrl-C through tokio, between awaits. A tool, though, runs
//! inline and holds the runtime until it returns, so without this a long `run_command`
//! would keep Ctrl-C waiting for `command_timeout_seconds`. [`listen`] installs a second
//! SIGINT handler (beside tokio's: both see every press) that raises a flag a blocking
//! loop can poll; the turn is still cancelled through tokio once the tool returns.
//!
//! The front ends (the REPL, `-p`, `metron tool`) listen from the start; library code
//! never installs a handler. Where nothing listens, [`pressed`] is always false and
//! Ctrl-C keeps its default effect.

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
