//! Ctrl-C, turned into the session's [`CancelToken`] in one place.
//!
//! A front end that must not be killed halfway through an effect (the REPL, `-p`, and
//! `metron tool` for the tools with effects) calls [`forward_to`] once: from then on
//! SIGINT no longer ends metron by itself; a thread raises the token on every press, and
//! whatever is running acts on it (a command is killed, a question declined, a write not
//! started, a model request abandoned). Library code never installs a handler.

use crate::authority::CancelToken;

/// Raises `token` on every Ctrl-C from now on (for the rest of the process).
pub(crate) fn forward_to(token: &CancelToken) -> std::io::Result<()> {
    let mut signals = signal_hook::iterator::Signals::new([signal_hook::consts::SIGINT])?;
    let token = token.clone();
    std::thread::Builder::new()
        .name("metron-ctrl-c".to_owned())
        .spawn(move || {
            for _ in signals.forever() {
                token.cancel();
            }
        })?;
    Ok(())
}
