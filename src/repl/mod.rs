//! The interactive session. (Being written.)

use crate::cli::Exit;

/// Runs the interactive session until the person quits.
pub fn run(_yes: bool) -> Exit {
    Exit::Usage
}
