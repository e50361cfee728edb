//! Internals that the integration tests and benches reach directly. Not an API: hidden
//! from the docs, and free to change. Everything else they use is the library's public
//! surface, and tests of tool behaviour go through [`crate::tools::Toolbox::call`], the
//! path a model's call takes.

use std::ffi::OsString;

use crate::tools::{ToolError, Toolbox};

pub use crate::tools::list_files::list_files;
pub use crate::tools::search_text::search_text;
pub use crate::tools::view_slice::view_slice;

/// Runs `command` through run_command's whole path (plan, authority, execute) with
/// `parent_env` standing for metron's environment.
pub fn run_command(
    toolbox: &Toolbox,
    command: &str,
    parent_env: &[(OsString, OsString)],
) -> Result<String, ToolError> {
    toolbox.run_command_with_env(command, parent_env)
}
