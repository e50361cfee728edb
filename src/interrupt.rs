//! Ctrl-C for code that blocks.
//!
//! The REPL and `-p` hear Ctrl-C through tokio, between awaits. A tool, though, runs
//! inline and holds the runtime until it returns, so without this a long `run_command`
//! would keep Ctrl-C waiting for `command_timeout_seconds`. [`listen`] installs a second
//! SIGINT handler (beside tokio's: both see every press) that raises a flag a blocking
//! loop can poll; the turn is still cancelled through tokio once the tool returns.

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

static PRESSED: OnceLock<Arc<AtomicBool>> = OnceLock::new();

/// Starts raising the flag on SIGINT. Called once by the interactive front ends; in
/// `metron tool` and in library use nothing listens, and [`pressed`] stays false.
pub fn listen() -> std::io::Result<()> {
    let flag = PRESSED.get_or_init(|| Arc::new(AtomicBool::new(false)));
    #[cfg(unix)]
    signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(flag))?;
    Ok(())
}

/// Forgets earlier presses: each turn starts with this, so only a Ctrl-C pressed during
/// the turn stops its tools.
pub fn clear() {
    if let Some(flag) = PRESSED.get() {
        flag.store(false, Ordering::SeqCst);
    }
}

/// Whether Ctrl-C was pressed since the last [`clear`].
pub fn pressed() -> bool {
    PRESSED
        .get()
        .is_some_and(|flag| flag.load(Ordering::SeqCst))
}
