//! What the front ends share: exit codes, the one error format, loading the project and
//! its configuration, printing a result, asking at the terminal, running a session, and
//! turning Ctrl-C into the session's cancel token.
//!
//! The command line ([`crate::cli`]) dispatches to the REPL, one-shot mode, the doctor
//! and `metron tool`; each of those builds on this module and none imports another, so
//! dependencies run one way: front ends → frontend → agent → tools → authority → project.

pub(crate) mod ask;
pub(crate) mod ctrl_c;
pub(crate) mod models;
pub(crate) mod session;

use std::io::Write;

use crate::config::{self, ConfigEnv, Flags};
use crate::project::Project;

/// What metron tells the shell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Exit {
    /// It worked (a tool produced a result, including "No matches found.").
    Success = 0,
    /// It ran and failed, or was refused.
    Failure = 1,
    /// The command line or the configuration is wrong.
    Usage = 2,
    /// `-p`: the model answered, but a patch it proposed had still not landed when the
    /// turn ended (see `agent::landing`), so a script cannot take the answer for the edit.
    Incomplete = 3,
    /// Ctrl-C.
    Interrupted = 130,
}

impl From<Exit> for std::process::ExitCode {
    fn from(exit: Exit) -> Self {
        std::process::ExitCode::from(exit as u8)
    }
}

/// Prints an error line in the one format metron uses: whole, wrapped at spaces on a
/// terminal (the remedy comes last, and must not be cut or broken mid-word).
pub(crate) fn error(message: impl std::fmt::Display) {
    use crate::display::{HANG, Stream, print_wrapped, terminal_safe};
    // Messages quote config values, server answers and paths: shown, never obeyed.
    let line = format!("metron: {}", terminal_safe(&message.to_string()));
    print_wrapped(Stream::Stderr, &line, HANG);
}

/// The warning when no home directory is known (HOME unset, empty or relative, and no
/// entry in the password database), as in a minimal container: there is no home to
/// refuse as the project or to protect, and nothing a program would look for under `~`
/// either (ssh, git and npm find their files through the same two sources), so metron
/// runs, and says so.
const NO_HOME: &str = "warning: no home directory is known (HOME is unset, empty or not an absolute path, and the password database has no home for this user), so no home is protected from the tools; if this machine has one, set HOME to it (export HOME=/home/you)";

/// Loads the project and configuration (with the command line's `flags` on top), printing
/// warnings; `Err` carries the exit code.
pub(crate) fn startup(flags: &Flags) -> Result<(Project, config::Loaded), Exit> {
    let cwd = std::env::current_dir().map_err(|e| {
        error(format!("cannot read the working directory: {e}"));
        Exit::Failure
    })?;
    let mut project = Project::discover(&cwd).map_err(|e| {
        error(format!("cannot open the project at {}: {e}", cwd.display()));
        Exit::Failure
    })?;
    let env = ConfigEnv::from_process();
    // HOME and the password database's home: an unset, empty or misleading HOME neither
    // lets metron run in the home directory nor unprotects its credentials.
    let homes = crate::project::user_homes(env.home.as_deref());
    if homes.is_empty() {
        error(NO_HOME);
    }
    if let Some(wide) = project.too_wide(&homes) {
        error(wide.message(project.root()));
        return Err(Exit::Usage);
    }
    let loaded = config::load(project.root(), &env, flags)
        .and_then(|mut loaded| {
            config::check_tool_names(&mut loaded, &crate::tools::names())?;
            Ok(loaded)
        })
        .map_err(|e| {
            error(e);
            Exit::Usage
        })?;
    for warning in &loaded.warnings {
        error(format!("warning: {warning}"));
    }
    if let Some(warning) =
        crate::disclosure::key_withheld(&loaded, crate::ollama::ApiKey::in_environment().is_some())
    {
        crate::ollama::withhold_api_key();
        error(format!("warning: {warning}"));
    }
    // A trusted config file inside the project is out of the model's reach: a patch to
    // it could grant itself `allowed_commands` (the warning above says so too). So is the
    // user's metron directory when it lies inside (HOME a work tree, METRON_CONFIG_DIR
    // the project): a patch could create the config file the next session trusts.
    if let Some(file) = loaded.file(config::ConfigTrust::User)
        && let Some(inside) = config::inside_project(&file.path, project.root())
    {
        project.protect_config(inside);
    }
    if let Some(dir) = config::user_dir(&ConfigEnv::from_process())
        && let Some(inside) = config::inside_project(&dir, project.root())
    {
        project.protect_config(inside);
    }
    // The places the sandbox keeps commands from reading are kept from the read tools
    // too, where the project holds them (a project above HOME).
    let limits = crate::tools::CommandLimits::from_config(&loaded.config);
    let metron_config: Vec<_> = env
        .metron_config
        .iter()
        .cloned()
        .chain(config::user_dir(&env))
        .collect();
    for place in crate::sandbox::protected_places(&limits.sandbox, &homes, &metron_config) {
        project.protect_secret(&place);
    }
    Ok((project, loaded))
}

/// What the person is told of the session's instructions at start (the REPL's banner,
/// `-p`'s stderr): the files sent with their size in tokens, or that they are off, then a
/// line per file not sent whole. Nothing when instructions are on and none was found, so
/// a project without them starts as it always did. Escaped: the names and notes are the
/// file system's and the repository's text.
pub(crate) fn instructions_lines(
    instructions: &crate::instructions::Instructions,
    config: &config::Config,
) -> Vec<String> {
    use crate::display::terminal_safe;
    use crate::instructions::State;
    let mut lines = Vec::new();
    if instructions.state == State::Off || !instructions.files.is_empty() {
        let line = instructions.line(
            crate::agent::prompt::approx_tokens,
            &config.instructions_fallbacks,
        );
        lines.push(format!("instructions: {}", terminal_safe(&line)));
    }
    for note in &instructions.notes {
        lines.push(format!(
            "instructions: note: {}",
            terminal_safe(&note.text())
        ));
    }
    lines
}

/// Writes a tool's text to stdout with a final newline. A closed pipe (`| head`) is not an
/// error: the reader got what it wanted.
pub(crate) fn print_text(text: &str, exit: Exit) -> Exit {
    use std::io::IsTerminal as _;
    // On a terminal, a tool's output (a file's slice, a command's output) is shown, never
    // obeyed; a pipe gets the bytes as they are.
    let text = if std::io::stdout().is_terminal() {
        crate::display::terminal_safe(text)
    } else {
        std::borrow::Cow::Borrowed(text)
    };
    print_shown(&text, exit)
}

/// Writes `text`, already made safe for stdout (or rendered for it), with a final
/// newline; a closed pipe is not an error, as for [`print_text`].
pub(crate) fn print_shown(text: &str, exit: Exit) -> Exit {
    let mut stdout = std::io::stdout().lock();
    let newline = if text.ends_with('\n') { "" } else { "\n" };
    match write!(stdout, "{text}{newline}").and_then(|()| stdout.flush()) {
        Ok(()) => exit,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => exit,
        Err(e) => {
            error(format!("cannot write to stdout: {e}"));
            Exit::Failure
        }
    }
}
