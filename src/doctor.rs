//! `metron --doctor`: checks the setup without running the model. (Being written.)

use crate::cli::Exit;

/// Runs every check, prints them, and says whether the setup is complete.
pub fn run() -> Exit {
    eprintln!("metron: --doctor is not implemented yet");
    Exit::Failure
}
