//! `metron -p PROMPT`: one turn, the answer on stdout. (Being written.)

use crate::cli::Exit;

/// Runs one request and exits.
pub fn run(_prompt: &str, _yes: bool) -> Exit {
    Exit::Usage
}
