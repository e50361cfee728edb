//! `run_command(command)`: one allowlisted program, run in the project root after the
//! person says yes, with its exit status and clipped output returned as text.
//!
//! This is the only tool that executes anything, so every step narrows what a model (or a
//! hostile repository) can make happen:
//!
//! 1. **No shell.** The command is split on whitespace and handed to `execve` as argv, so
//!    `;`, `&&`, `|`, `$VAR`, redirections and globs arrive as literal arguments.
//! 2. **An allowlist of argv prefixes, matched on whole tokens.** `go test` permits
//!    `go test ./...` but not `go tool`, `gotcha test` or `env go test`. With both
//!    `allowed_commands` and `allowed_project_programs` empty the tool is withdrawn
//!    entirely ([`SPEC`]'s `available`).
//! 3. **The program comes from outside the project.** The first token must be a bare name
//!    (no `/`), looked up on PATH while skipping entries that are empty, relative, or
//!    resolve inside the project root, and skipping candidates whose real path is inside
//!    it; so a repository cannot shadow `go` with its own `./go` or `bin/go`. The command
//!    receives that same filtered PATH, so the programs it starts are looked up the same
//!    way. The resolved absolute path is what the person approves and what runs. The one
//!    exception is opt-in: a path the user lists in `allowed_project_programs` (their own
//!    config only), such as `.venv/bin/pytest`, which must resolve inside the root, and
//!    is resolved again right before it runs ([`recheck_project_program`]).
//! 4. **The person is asked every time**, through the session's approver; a decline goes
//!    back to the model as text telling it not to retry. The question carries warnings
//!    when the repository chose the program: a project program, or an allowlisted one
//!    whose configuration in the project can swap what runs ([`configured`]).
//! 5. **A minimal environment.** The command starts from an empty environment plus
//!    [`SAFE_ENV`] (and `LC_*`), the names the user lists in `command_env_passthrough`, and
//!    [`NEUTRALISED_ENV`], which makes pagers, editors and git's credential prompt fail fast
//!    instead of waiting for a terminal. Credentials such as `GITHUB_TOKEN` or `AWS_*` are
//!    not passed unless named. A `git` command also gets `GIT_CONFIG_COUNT` settings that
//!    reset what the repository's git config makes git run ([`configured`]).
//! 6. **Bounded in time and memory.** stdin is `/dev/null`; the command runs in a session
//!    of its own (so its own process group, and no controlling terminal), and the whole
//!    group is killed with SIGKILL at `command_timeout_seconds`, and also as soon as the
//!    command itself exits, so nothing it started in the background outlives the run
//!    (short of leaving the group with `setsid`). Ctrl-C (which the terminal does not
//!    deliver to another process group) kills the group too, within 50 ms, where a front
//!    end catches it (the session's [`CancelToken`], which the REPL, `-p` and `metron
//!    tool` raise). stdout and stderr share one pipe (their interleaving is kept), read on
//!    the calling thread into a head buffer and a tail ring of together
//!    `max_command_output_bytes`; the bytes in between are counted, never stored.
//!
//! A non-zero exit status is a result, not an error: "the tests still fail" is what the
//! model asked to find out. The text the model reads is
//!
//! ```text
//! $ go test ./...
//! exit status 1
//! <combined output, the middle cut with a `[... N bytes cut ...]` line if too long>
//! ```
//!
//! and all of it, the echoed command included, fits `max_command_output_bytes` (a long
//! command is echoed clipped, see [`echo_line`]; output that is not UTF-8 is measured as
//! rendered, with U+FFFD, see [`Clip::render`]).
//!
//! 7. **Confined while it runs.** An allowed `go test` or `make` still runs code the
//!    repository controls (build scripts, Makefile recipes, `go generate` directives), so
//!    the command runs inside the OS sandbox ([`crate::sandbox`]): it writes only the
//!    project (not `.git`) and the session's temp dir, reads everything but credentials,
//!    and has no network, unless the user's own config grants more. The question says in
//!    one line what it may reach; arguments that name where to write (`--output=F`) are
//!    warned about, so a standing approval never covers them.
//! 8. **What it changed is evidence.** The project's tree is stamped before and after
//!    (within the walker's ignore rules), and the files created, modified or deleted are
//!    journaled with the run and shown to the model and the person.

use std::collections::VecDeque;
use std::ffi::{OsStr, OsString};
use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

mod changes;
mod configured;

use serde::Deserialize;

use super::account::CommandRecord;
use super::{
    Access, Account, EffectTool, Effects, Planned, ToolContext, ToolEnv, ToolError, ToolResult,
    ToolSpec, arg,
};
use crate::authority::admission::{Admitted, admit, normal_relative};
use crate::authority::journal::{Exit, TreeChanges};
use crate::authority::{CancelToken, Request, Verdict};
use crate::sandbox::{Confinement, Places, SandboxMode};

/// The registry entry.
pub(crate) static SPEC: ToolSpec = ToolSpec {
    name: "run_command",
    description: "Run one allowlisted command (e.g. go test ./...) in the project root; returns exit status and output. No shell: no pipes, globs or &&. The user is asked first.",
    parameters: r#"{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}"#,
    access: Access::Execute,
    scope: "programs on PATH outside the project matching allowed_commands, and allowed_project_programs",
    available,
    run: &Effects(RunCommand),
    purged_after_turn: false,
    shown: |args| format!("output of `{}`", arg(args, "command")),
    ledger_arguments: None,
    subject: |args| crate::quoting::code(&super::plain_arg(args, "command")),
    schema: std::sync::OnceLock::new(),
};

/// Variables copied from metron's own environment into every command's (when set), besides
/// every `LC_*` variable. PATH is copied filtered: see the module documentation.
/// `VIRTUAL_ENV` is passed so Python tools started from an activated virtualenv find it;
/// its `bin` is not added to PATH (inside the project it would be filtered out anyway:
/// such programs are run by path through `allowed_project_programs`).
pub(crate) const SAFE_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LANG",
    "TERM",
    "TMPDIR",
    "VIRTUAL_ENV",
];

/// Variables set on every command, overriding anything passed through: interactive tools
/// that would wait for a terminal that is not there fail or print straight away instead.
pub(crate) const NEUTRALISED_ENV: &[(&str, &str)] = &[
    ("GIT_TERMINAL_PROMPT", "0"),
    ("PAGER", "cat"),
    ("GIT_PAGER", "cat"),
    ("EDITOR", "false"),
    ("VISUAL", "false"),
    ("GIT_EDITOR", "false"),
];

/// The longest the reader waits between checks of the command's state, so a command that
/// exits while a background process still holds the output pipe is noticed promptly.
const POLL_SLICE: Duration = Duration::from_millis(50);

/// How long output is still read after the command has exited (or been killed) when
/// something outside its process group still holds the pipe open.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// Bytes read from the pipe at a time.
const READ_CHUNK: usize = 64 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Args {
    command: String,
}

/// Off unless the user's own config allows something to run.
fn available(env: &ToolEnv) -> Result<(), String> {
    if env.limits.allowed_commands.is_empty() && env.limits.allowed_project_programs.is_empty() {
        Err("run_command is off: neither `allowed_commands` nor `allowed_project_programs` is configured (the user can list argv prefixes such as \"go test\", or project programs such as \".venv/bin/pytest\", in their own config)".to_owned())
    } else {
        Ok(())
    }
}

struct RunCommand;

impl EffectTool for RunCommand {
    type Args = Args;
    type Plan = CommandPlan;

    fn plan(&self, context: &ToolContext<'_>, args: Args) -> Result<CommandPlan, ToolError> {
        let env: Vec<(OsString, OsString)> = std::env::vars_os().collect();
        plan_command(context.env, &args.command, &env)
    }

    fn execute(
        &self,
        context: &ToolContext<'_>,
        plan: CommandPlan,
    ) -> Result<ToolResult, ToolError> {
        execute(context, plan)
    }
}

/// A command ready to run: what the person approves is exactly what runs.
#[derive(Debug)]
pub(crate) struct CommandPlan {
    /// The command as the model typed it, tokens joined by single spaces.
    typed: String,
    /// The absolute program, then the arguments.
    argv: Vec<String>,
    /// The `allowed_commands` (or `allowed_project_programs`) entry that admitted it.
    prefix: String,
    /// What the person should know before saying yes: the repository chose the program.
    warnings: Vec<String>,
    /// The program to execute.
    program: PathBuf,
    /// For a project program, its path relative to the root as listed: resolved again
    /// right before it runs ([`recheck_project_program`]).
    project_relative: Option<String>,
    /// Where it runs: the project root, resolved.
    root: PathBuf,
    /// Its whole environment.
    env: Vec<(OsString, OsString)>,
    /// What it may reach while it runs.
    confinement: Confinement,
    /// The same, in the words the question shows.
    sandbox_line: String,
}

impl Planned for CommandPlan {
    fn request(&self) -> Request<'_> {
        Request::Command {
            argv: &self.argv,
            prefix: &self.prefix,
            warnings: &self.warnings,
            sandbox: &self.sandbox_line,
        }
    }

    fn refused(&self, verdict: Verdict) -> ToolError {
        let typed = &self.typed;
        ToolError::Refused(match verdict {
            Verdict::Approved | Verdict::Declined(None) => format!(
                "The user declined to run `{typed}`. Do not retry it; explain what you wanted to check and ask how to proceed."
            ),
            Verdict::Declined(Some(reason)) => format!(
                "The user declined to run `{typed}` and said: \"{reason}\". Do not retry it; take their reason into account."
            ),
            Verdict::Unanswerable(text) => text,
            Verdict::Cancelled => format!(
                "Not run: the user pressed Ctrl-C in this turn before `{typed}` started, so nothing was run."
            ),
        })
    }
}

/// Checks `command` against the allowlist and resolves its program, with `parent_env`
/// standing for metron's own environment (the source of PATH and of every variable
/// passed on). No effect: nothing runs.
pub(crate) fn plan_command(
    env: &ToolEnv,
    command: &str,
    parent_env: &[(OsString, OsString)],
) -> Result<CommandPlan, ToolError> {
    let policy = &env.limits;
    let tokens: Vec<&str> = command.split_whitespace().collect();
    let admitted = admit(
        &tokens,
        &policy.allowed_commands,
        &policy.allowed_project_programs,
    )
    .map_err(ToolError::Refused)?;
    let typed = tokens.join(" ");

    let root = env.project.canonical_root().to_path_buf();
    let path_var = lookup(parent_env, "PATH");
    let search = SearchPath::new(path_var, &root);
    let mut project_relative = None;
    let (program, args, prefix, mut warnings) = match admitted {
        Admitted::Named { name, args, prefix } => {
            (search.find(name, &root)?, args, prefix, Vec::new())
        }
        Admitted::Project {
            relative,
            args,
            prefix,
        } => {
            let program = project_program(&relative, &root)?;
            let warning = format!(
                "`{relative}` is a program inside the project (allowed by your allowed_project_programs): the repository controls what it does"
            );
            project_relative = Some(relative);
            (program, args, prefix, vec![warning])
        }
    };
    let configured = configured::check(&env.project, &program.display);
    warnings.extend(configured.warnings.iter().cloned());
    warnings.extend(output_warnings(args, &root));

    // What the person approves is exactly what runs: the absolute program, then the rest.
    let argv: Vec<String> = std::iter::once(program.display.clone())
        .chain(args.iter().map(|t| (*t).to_owned()))
        .collect();
    let mut child_env = child_env(
        parent_env,
        &policy.command_env_passthrough,
        &search.joined(),
    );
    configured.apply(&mut child_env);
    let confinement = confinement(env, &tokens, &root, parent_env)?;
    if let Confinement::Confined(sandbox) = &confinement {
        for (name, dir) in crate::sandbox::temp_env(&sandbox.temp) {
            set_var(&mut child_env, name, dir);
        }
    }
    let sandbox_line = confinement.describe();
    Ok(CommandPlan {
        typed,
        argv,
        prefix,
        warnings,
        program: program.path,
        project_relative,
        root,
        env: child_env,
        confinement,
        sandbox_line,
    })
}

/// How the command will run: confined under the policy the user's config gives it, or,
/// only when that config turns the sandbox off, unconfined. HOME and the user's metron
/// directory come from metron's own environment, as the config was read.
fn confinement(
    env: &ToolEnv,
    tokens: &[&str],
    root: &Path,
    parent_env: &[(OsString, OsString)],
) -> Result<Confinement, ToolError> {
    let settings = &env.limits.sandbox;
    if settings.mode == SandboxMode::Off {
        return Ok(Confinement::Off);
    }
    let temp = env
        .command_temp
        .path()
        .map_err(|e| ToolError::Fault(format!("Not run: {e}. Tell the user.")))?;
    let var = |name: &str| {
        lookup(parent_env, name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = var("HOME");
    let mut metron_config: Vec<PathBuf> = var("METRON_CONFIG").into_iter().collect();
    metron_config.extend(var("METRON_CONFIG_DIR").map(|dir| dir.join(".metron")));
    // The project's own `.metron.json` is metron's file too: a command may not rewrite the
    // model or the budgets the next session reads.
    let mut metron_files = env.project.protected_config_paths();
    metron_files.push(root.join(".metron.json"));
    let places = Places {
        root,
        git_internals: env.project.git_internals(),
        metron_files,
        temp,
        home,
        metron_config,
    };
    Ok(Confinement::Confined(crate::sandbox::Policy::for_command(
        settings, tokens, &places,
    )))
}

/// Warnings for arguments that tell the program where to write (`--output=F`, `-o F`) or
/// name a place outside the project: the question says so, and a standing approval never
/// covers such a call, so the person sees each one. The sandbox refuses writes outside
/// anyway; this keeps `a` from covering more than the person saw.
fn output_warnings(args: &[&str], root: &Path) -> Vec<String> {
    let outside = |value: &str| {
        value.starts_with('~')
            || (value.starts_with('/') && !Path::new(value).starts_with(root))
            || (!value.starts_with('/') && value.contains("..") && normal_relative(value).is_none())
    };
    args.iter()
        .filter(|arg| {
            let value = arg.split_once('=').map_or(**arg, |(_, v)| v);
            crate::sandbox::names_output(arg) || outside(value)
        })
        .map(|arg| {
            format!(
                "`{arg}` names where the program writes, or a place outside the project: this call is asked about every time"
            )
        })
        .collect()
}

/// Sets `name` in an environment given as pairs, replacing an earlier value.
fn set_var(env: &mut Vec<(OsString, OsString)>, name: OsString, value: OsString) {
    match env.iter_mut().find(|(k, _)| *k == name) {
        Some(slot) => slot.1 = value,
        None => env.push((name, value)),
    }
}

/// The project program at `relative`: an executable regular file whose real path (every
/// symlink followed) is inside `root`. What runs is that real path, resolved with std::fs
/// (not through the project's boundary checks), so a symlink swapped in for the program
/// itself after the question changes nothing; one swapped in for a directory on the way
/// is caught by [`recheck_project_program`] right before the run, except in the short
/// window between that check and the `execve` (see SECURITY.md).
fn project_program(relative: &str, root: &Path) -> Result<Program, ToolError> {
    let refuse = |why: String| {
        Err(ToolError::Refused(format!(
            "Refused: `{relative}` {why}; it cannot be run. Tell the user what you wanted to run."
        )))
    };
    let real = match root.join(relative).canonicalize() {
        Ok(real) => real,
        Err(e) => return refuse(format!("cannot be found in the project ({e})")),
    };
    if !real.starts_with(root) {
        return refuse("leads outside the project through a symlink".to_owned());
    }
    let is_executable =
        std::fs::metadata(&real).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
    if !is_executable {
        return refuse("is not an executable file".to_owned());
    }
    match real.to_str() {
        Some(display) => Ok(Program {
            display: display.to_owned(),
            path: real.clone(),
        }),
        None => refuse("has a path that is not UTF-8".to_owned()),
    }
}

/// Resolves an approved project program again, right before it runs, and refuses it when
/// it no longer resolves to the approved real path inside the root: the person may take a
/// while to answer, and the repository (or a command it ran) may have swapped a directory
/// on the way for a symlink meanwhile. The `execve` still follows the path, so a swap
/// between this check and the exec is not caught; it narrows the window to microseconds.
fn recheck_project_program(relative: &str, root: &Path, approved: &Path) -> Result<(), ToolError> {
    let now = project_program(relative, root)?;
    if now.path == approved {
        Ok(())
    } else {
        Err(ToolError::Refused(format!(
            "Not run: `{relative}` changed after it was approved (it was {}, it is now {}). Tell the user; the project may have been changed under you.",
            approved.display(),
            now.display
        )))
    }
}

/// Runs an approved command: the text the model reads, and the run's account. The
/// command's own failure is an `Ok` result with its exit status.
pub(crate) fn execute(
    context: &ToolContext<'_>,
    plan: CommandPlan,
) -> Result<ToolResult, ToolError> {
    let policy = &context.env.limits;
    let typed = &plan.typed;
    if let Some(relative) = &plan.project_relative {
        recheck_project_program(relative, &plan.root, &plan.program)?;
    }
    let mut child_command = plan
        .confinement
        .command(&plan.program, &plan.argv[1..])
        .map_err(ToolError::Refused)?;
    child_command
        .current_dir(&plan.root)
        .env_clear()
        .envs(plan.env.iter().map(|(k, v)| (k, v)))
        .stdin(Stdio::null());
    let budget = policy.max_command_output_bytes;
    let echo = echo_line(typed, budget / 2);
    let output_budget = budget
        .saturating_sub(echo.len() + 1)
        .saturating_sub(status_reserve(policy.command_timeout) + 1)
        .saturating_sub(CUT_MARKER_RESERVE);
    let before = changes::take(&context.env.project, changes::DEFAULT_LIMIT);
    let started = std::time::Instant::now();
    let _running = context.activity().start(typed);
    let outcome = spawn_and_watch(
        child_command,
        policy.command_timeout,
        output_budget,
        context.cancel_token(),
    )
    .map_err(|e| ToolError::Fault(format!("cannot run `{typed}`: {e}")))?;
    let duration = started.elapsed();
    let changed = tree_changes(
        &changes::take(&context.env.project, changes::DEFAULT_LIMIT),
        &before,
    );
    let exit = outcome.exit(policy.command_timeout);
    let sandbox = plan.confinement.record();
    let hint = match (&sandbox, outcome.failed()) {
        (Some(summary), true) => crate::sandbox::hint(&outcome.output, summary),
        _ => None,
    };
    let mut text = format!("{echo}\n{exit}\n{}", outcome.output);
    if let Some(files) = changed.brief(MAX_CHANGED_NAMES) {
        text.push_str(&format!("[changed in the project: {files}]\n"));
    }
    if let Some(hint) = hint {
        text.push_str(&hint);
        text.push('\n');
    }
    let run = CommandRecord {
        argv: plan.argv,
        exit,
        duration,
        sandbox,
        changed,
        tail: tail_lines(&outcome.output),
    };
    Ok(ToolResult::new(text, Account::Ran(run)))
}

/// Lines of a command's output shown under the person's outcome line.
const TAIL_LINES: usize = 5;

/// The last non-blank lines of a command's output, each cut to one short line.
fn tail_lines(output: &str) -> Vec<String> {
    let lines: Vec<&str> = output
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    lines[lines.len().saturating_sub(TAIL_LINES)..]
        .iter()
        .map(|line| super::text::one_line(line, 200))
        .collect()
}

/// Names of changed files the model reads after a command; the ledger keeps them all.
const MAX_CHANGED_NAMES: usize = 10;

/// The stamps' difference as evidence.
fn tree_changes(after: &changes::Stamp, before: &changes::Stamp) -> TreeChanges {
    let diff = after.changes_since(before);
    TreeChanges {
        untracked: diff.untracked,
        caveats: diff.caveats(MAX_CHANGED_NAMES),
        created: diff.created,
        modified: diff.modified,
        deleted: diff.deleted,
    }
}

/// The most bytes the `[... N bytes cut ...]` line (and the line break put before it) can
/// take, whatever N: reserved so the clipped output, marker included, fits the budget.
const CUT_MARKER_RESERVE: usize = "\n[... 18446744073709551615 bytes cut ...]\n".len();

/// The marker that ends an echoed command that was clipped.
const ECHO_CUT: &str = " [... command clipped: N bytes cut ...]";

/// The longest status line a run with `timeout` can end with, reserved before the run.
fn status_reserve(timeout: Duration) -> usize {
    [
        Exit::TimedOut(timeout),
        Exit::Interrupted,
        Exit::Code(i32::MIN),
        Exit::Signal(i32::MAX),
        Exit::Unknown,
    ]
    .into_iter()
    .map(|exit| exit.to_string().len())
    .max()
    .unwrap_or_default()
}

/// The `$ command` line the result starts with, at most `limit` bytes when the command is
/// longer: its start (cut on a character boundary), then a marker saying how much was
/// cut. The model typed the command, so its start is enough to tell which result this
/// is; the budget is for the output. A limit too small for the marker still gets it: the
/// marker is never dropped.
fn echo_line(typed: &str, limit: usize) -> String {
    let whole = format!("$ {typed}");
    if whole.len() <= limit {
        return whole;
    }
    let marker_len = ECHO_CUT.len() + 20 - 1; // N: at most 20 digits instead of one
    let mut keep = limit.saturating_sub(marker_len).max(2);
    while !whole.is_char_boundary(keep) {
        keep -= 1;
    }
    let cut = whole.len() - keep;
    let marker = ECHO_CUT.replace('N', &cut.to_string());
    format!("{}{marker}", &whole[..keep])
}

/// The value of `name` in an environment given as pairs (the last one wins, as in
/// `Command::envs`).
fn lookup<'a>(env: &'a [(OsString, OsString)], name: &str) -> Option<&'a OsStr> {
    env.iter()
        .rev()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_os_str())
}

/// The PATH entries run_command uses: absolute, UTF-8, existing, and outside the project.
struct SearchPath {
    dirs: Vec<PathBuf>,
    /// Absolute entries that resolve inside the project: never searched, only named in a
    /// refusal so the person learns why a program there was not used.
    inside: Vec<PathBuf>,
}

/// A program found on the search path.
#[derive(Debug)]
struct Program {
    /// The absolute path that is executed (not canonicalised, so a symlinked multi-call
    /// binary such as a rustup proxy still sees the name it dispatches on).
    path: PathBuf,
    /// The same path as text, for the approval question.
    display: String,
}

impl SearchPath {
    /// Filters `path_var` against the canonical project `root`.
    fn new(path_var: Option<&OsStr>, root: &Path) -> SearchPath {
        let mut search = SearchPath {
            dirs: Vec::new(),
            inside: Vec::new(),
        };
        for dir in path_var.map(std::env::split_paths).into_iter().flatten() {
            if !dir.is_absolute() || dir.to_str().is_none() || search.dirs.contains(&dir) {
                continue;
            }
            match dir.canonicalize() {
                Ok(real) if real.starts_with(root) => search.inside.push(real),
                Ok(_) => search.dirs.push(dir),
                Err(_) => {}
            }
        }
        search
    }

    /// The filtered entries as a PATH value for the command.
    fn joined(&self) -> OsString {
        std::env::join_paths(&self.dirs).unwrap_or_default()
    }

    /// The first executable regular file named `name` whose real path is outside `root`.
    fn find(&self, name: &str, root: &Path) -> Result<Program, ToolError> {
        let mut inside = None;
        for dir in &self.dirs {
            let candidate = dir.join(name);
            let is_executable = std::fs::metadata(&candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0);
            if !is_executable {
                continue;
            }
            match candidate.canonicalize() {
                Ok(real) if real.starts_with(root) => {
                    inside.get_or_insert(real);
                }
                Ok(_) => {
                    if let Some(display) = candidate.to_str() {
                        return Ok(Program {
                            display: display.to_owned(),
                            path: candidate,
                        });
                    }
                }
                Err(_) => {}
            }
        }
        if inside.is_none() {
            inside = self
                .inside
                .iter()
                .map(|dir| dir.join(name))
                .find(|p| p.is_file());
        }
        let why = match inside {
            Some(real) => format!(
                "`{name}` was found only inside the project (at {}), and run_command never runs programs from the project",
                real.strip_prefix(root).unwrap_or(&real).display()
            ),
            None => format!(
                "`{name}` was not found on PATH (entries inside the project and relative ones are skipped)"
            ),
        };
        Err(ToolError::Refused(format!(
            "{why}; it cannot be run here. Tell the user what you wanted to run."
        )))
    }
}

/// The command's environment: [`SAFE_ENV`] and `LC_*` from the parent, then the
/// passthrough names, then PATH set to `path`, then [`NEUTRALISED_ENV`]. Nothing else.
fn child_env(
    parent: &[(OsString, OsString)],
    passthrough: &[String],
    path: &OsStr,
) -> Vec<(OsString, OsString)> {
    let wanted = |name: &OsStr| {
        let name = name.to_str().unwrap_or("");
        name != "PATH"
            && (SAFE_ENV.contains(&name)
                || name.starts_with("LC_")
                || passthrough.iter().any(|p| p == name))
    };
    let mut env: Vec<(OsString, OsString)> = Vec::new();
    let mut set = |k: OsString, v: OsString| match env.iter_mut().find(|(name, _)| *name == k) {
        Some(slot) => slot.1 = v,
        None => env.push((k, v)),
    };
    for (k, v) in parent {
        if wanted(k) {
            set(k.clone(), v.clone());
        }
    }
    if !path.is_empty() {
        set("PATH".into(), path.to_owned());
    }
    for (k, v) in NEUTRALISED_ENV {
        set((*k).into(), (*v).into());
    }
    env
}

/// How a run ended, and what it printed.
#[derive(Debug)]
struct Watched {
    /// The exit status, if the command was reaped.
    status: Option<ExitStatus>,
    /// The deadline passed and the group was killed.
    timed_out: bool,
    /// Ctrl-C was pressed and the group was killed.
    interrupted: bool,
    /// Combined stdout and stderr, clipped.
    output: String,
}

impl Watched {
    /// The command did not exit with status 0.
    fn failed(&self) -> bool {
        self.timed_out || self.interrupted || self.status.is_none_or(|s| !s.success())
    }

    fn exit(&self, timeout: Duration) -> Exit {
        if self.timed_out {
            return Exit::TimedOut(timeout);
        }
        if self.interrupted {
            return Exit::Interrupted;
        }
        match self.status.map(|s| (s.code(), s.signal())) {
            Some((Some(code), _)) => Exit::Code(code),
            Some((None, Some(signal))) => Exit::Signal(signal),
            _ => Exit::Unknown,
        }
    }
}

/// Spawns `command` with stdout and stderr on one pipe, reads it until end of file while
/// enforcing `timeout`, and kills the process group when the command exits or times out
/// (or when anything here fails, so no error leaves it running).
fn spawn_and_watch(
    mut command: std::process::Command,
    timeout: Duration,
    budget: usize,
    cancel: &CancelToken,
) -> std::io::Result<Watched> {
    let (reader, writer) = std::io::pipe()?;
    command.stdout(writer.try_clone()?).stderr(writer);
    let child = command.spawn();
    // The Command holds the parent's copies of the write end; drop them now, or the pipe
    // would never reach end of file.
    drop(command);
    let mut child = child?;
    let group = rustix::process::Pid::from_child(&child);
    let kill_group = || {
        // ESRCH (the group is already gone) is the usual, harmless answer.
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    };
    let outcome = watch(&mut child, reader, &kill_group, timeout, budget, cancel);
    match &outcome {
        Err(_) => {
            kill_group();
            let _ = child.wait();
        }
        // Killed but not gone within the grace period (stuck in the kernel, say): reap
        // it whenever it does go, so a long session does not collect zombies.
        Ok(Watched { status: None, .. }) => {
            std::thread::spawn(move || {
                let _ = child.wait();
            });
        }
        Ok(_) => {}
    }
    outcome
}

/// The read loop of [`execute`]: one thread, no output held beyond the budget.
fn watch(
    child: &mut Child,
    mut reader: std::io::PipeReader,
    kill_group: &dyn Fn(),
    timeout: Duration,
    budget: usize,
    cancel: &CancelToken,
) -> std::io::Result<Watched> {
    let deadline = Instant::now().checked_add(timeout);
    let mut clip = Clip::new(budget);
    let mut buf = vec![0u8; READ_CHUNK];
    let mut status: Option<ExitStatus> = None;
    let mut eof = false;
    let mut timed_out = false;
    let mut interrupted = false;
    let mut give_up: Option<Instant> = None;
    let mut backoff = Duration::from_micros(50);
    loop {
        if status.is_none() {
            status = reap(child, kill_group)?;
            if status.is_some() {
                give_up.get_or_insert_with(|| Instant::now() + DRAIN_GRACE);
            }
        }
        if eof && status.is_some() {
            break;
        }
        let now = Instant::now();
        if !timed_out && status.is_none() && deadline.is_some_and(|d| now >= d) {
            kill_group();
            timed_out = true;
            give_up = Some(now + DRAIN_GRACE);
        }
        if !timed_out && !interrupted && status.is_none() && cancel.is_cancelled() {
            kill_group();
            interrupted = true;
            give_up = Some(now + DRAIN_GRACE);
        }
        if give_up.is_some_and(|g| now >= g) {
            break;
        }
        let mut wake = now + POLL_SLICE;
        if let Some(d) = deadline.filter(|_| !timed_out) {
            wake = wake.min(d);
        }
        if let Some(g) = give_up {
            wake = wake.min(g);
        }
        let wait = wake.saturating_duration_since(now);
        if eof {
            // The output is closed but the command has not exited yet: usually it is
            // exiting right now, so check again soon, then less often.
            std::thread::sleep(backoff.min(wait));
            backoff = (backoff * 2).min(POLL_SLICE);
            continue;
        }
        if readable(&reader, wait)? {
            match reader.read(&mut buf) {
                Ok(0) => eof = true,
                Ok(n) => clip.push(&buf[..n]),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
    Ok(Watched {
        status,
        timed_out,
        interrupted,
        output: clip.render(),
    })
}

/// The exit status once the child has exited, after killing what it left running in its
/// process group; `None` while it runs. The exit is first observed without reaping
/// (`waitid` with `WNOWAIT`): until the child is reaped its pid, which is also the group's
/// id, cannot be reused, so the kill cannot reach an unrelated group. On a wait error the
/// group is killed too.
fn reap(child: &mut Child, kill_group: &dyn Fn()) -> std::io::Result<Option<ExitStatus>> {
    use rustix::process::{Pid, WaitId, WaitIdOptions, waitid};
    let options = WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT;
    match waitid(WaitId::Pid(Pid::from_child(child)), options) {
        Ok(None) => Ok(None),
        Ok(Some(_)) => {
            kill_group();
            // The child is a zombie now, so this returns at once.
            child.wait().map(Some)
        }
        Err(rustix::io::Errno::INTR) => Ok(None),
        Err(e) => {
            kill_group();
            Err(e.into())
        }
    }
}

/// Waits up to `wait` (at most [`POLL_SLICE`]) for the pipe to have data or be closed.
fn readable(reader: &std::io::PipeReader, wait: Duration) -> std::io::Result<bool> {
    use rustix::event::{PollFd, PollFlags, Timespec};
    // `wait` is at most POLL_SLICE, so the conversion cannot fail; if it did, not waiting
    // at all is the safe direction.
    let timeout = Timespec::try_from(wait).unwrap_or_default();
    let mut fds = [PollFd::new(reader, PollFlags::IN)];
    match rustix::event::poll(&mut fds, Some(&timeout)) {
        Ok(n) => Ok(n > 0),
        Err(rustix::io::Errno::INTR) => Ok(false),
        Err(e) => Err(e.into()),
    }
}

/// Output kept within a byte budget: the first half and the last half, with the number of
/// bytes between them counted but not stored. Memory use never exceeds the budget, however
/// much the command prints.
#[derive(Debug)]
struct Clip {
    head: Vec<u8>,
    head_cap: usize,
    tail: VecDeque<u8>,
    tail_cap: usize,
    total: u64,
}

impl Clip {
    fn new(budget: usize) -> Clip {
        let head_cap = budget / 2;
        let tail_cap = budget - head_cap;
        // Capacity grows with use: a generous budget should not be allocated up front.
        let initial = |cap: usize| cap.min(READ_CHUNK);
        Clip {
            head: Vec::with_capacity(initial(head_cap)),
            head_cap,
            tail: VecDeque::with_capacity(initial(tail_cap)),
            tail_cap,
            total: 0,
        }
    }

    fn push(&mut self, mut bytes: &[u8]) {
        self.total = self.total.saturating_add(bytes.len() as u64);
        let room = self.head_cap - self.head.len();
        let (first, rest) = bytes.split_at(room.min(bytes.len()));
        self.head.extend_from_slice(first);
        bytes = rest;
        if bytes.len() >= self.tail_cap {
            self.tail.clear();
            self.tail.extend(&bytes[bytes.len() - self.tail_cap..]);
        } else {
            let overflow = (self.tail.len() + bytes.len()).saturating_sub(self.tail_cap);
            self.tail.drain(..overflow);
            self.tail.extend(bytes);
        }
    }

    /// Everything, when it fits; otherwise head, a `[... N bytes cut ...]` line, and tail,
    /// each trimmed to whole UTF-8 characters. Invalid UTF-8 is shown as U+FFFD, which
    /// takes three bytes where the raw input took one: the head and the tail are measured
    /// as rendered text, so a binary or Latin-1 stream still fits the budget (N counts raw
    /// bytes, as the command wrote them).
    fn render(&self) -> String {
        let kept = (self.head.len() + self.tail.len()) as u64;
        let tail: Vec<u8> = self.tail.iter().copied().collect();
        let budget = self.head_cap + self.tail_cap;
        let mut all = Vec::new();
        let (head, tail) = if self.total == kept {
            if kept == 0 {
                return "(no output)\n".to_owned();
            }
            all.extend_from_slice(&self.head);
            all.extend_from_slice(&tail);
            let pieces = Piece::split(&all);
            if pieces.iter().map(|p| p.text.len()).sum::<usize>() <= budget {
                return pieces.iter().map(|p| p.text).collect();
            }
            // Only the rendering overflows: clip the whole of it, head and tail.
            let head = Piece::fitting(&pieces, self.head_cap);
            let rest = &pieces[head.len()..];
            let tail = Piece::fitting_from_end(rest, self.tail_cap);
            (head.to_vec(), tail.to_vec())
        } else {
            let head = Piece::split(&self.head[..utf8_prefix_len(&self.head)]);
            let tail = Piece::split(&tail[utf8_suffix_start(&tail)..]);
            (
                Piece::fitting(&head, self.head_cap).to_vec(),
                Piece::fitting_from_end(&tail, self.tail_cap).to_vec(),
            )
        };
        let shown_raw: usize = head.iter().chain(&tail).map(|p| p.raw).sum();
        let cut = self.total.saturating_sub(shown_raw as u64);
        let mut text: String = head.iter().map(|p| p.text).collect();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        let unit = if cut == 1 { "byte" } else { "bytes" };
        text.push_str(&format!("[... {cut} {unit} cut ...]\n"));
        text.extend(tail.iter().map(|p| p.text));
        text
    }
}

/// One character of output as shown: its text (U+FFFD for an invalid sequence) and the
/// raw bytes it stands for.
#[derive(Debug, Clone, Copy)]
struct Piece<'a> {
    text: &'a str,
    raw: usize,
}

impl<'a> Piece<'a> {
    /// `bytes` as `String::from_utf8_lossy` renders it, one piece per character.
    fn split(bytes: &'a [u8]) -> Vec<Piece<'a>> {
        let mut pieces = Vec::new();
        for chunk in bytes.utf8_chunks() {
            let valid = chunk.valid();
            pieces.extend(valid.char_indices().map(|(i, c)| Piece {
                text: &valid[i..i + c.len_utf8()],
                raw: c.len_utf8(),
            }));
            if !chunk.invalid().is_empty() {
                pieces.push(Piece {
                    text: "\u{fffd}",
                    raw: chunk.invalid().len(),
                });
            }
        }
        pieces
    }

    /// The longest start of `pieces` whose text fits `cap` bytes.
    fn fitting<'p>(pieces: &'p [Piece<'a>], cap: usize) -> &'p [Piece<'a>] {
        let mut used = 0;
        let n = pieces
            .iter()
            .take_while(|p| {
                used += p.text.len();
                used <= cap
            })
            .count();
        &pieces[..n]
    }

    /// The longest end of `pieces` whose text fits `cap` bytes.
    fn fitting_from_end<'p>(pieces: &'p [Piece<'a>], cap: usize) -> &'p [Piece<'a>] {
        let mut used = 0;
        let n = pieces
            .iter()
            .rev()
            .take_while(|p| {
                used += p.text.len();
                used <= cap
            })
            .count();
        &pieces[pieces.len() - n..]
    }
}

/// The length of `bytes` without a trailing incomplete UTF-8 sequence.
fn utf8_prefix_len(bytes: &[u8]) -> usize {
    match std::str::from_utf8(bytes) {
        Err(e) if e.error_len().is_none() => e.valid_up_to(),
        _ => bytes.len(),
    }
}

/// Where `bytes` starts once leading UTF-8 continuation bytes (the end of a character cut
/// in half) are skipped; at most three are.
fn utf8_suffix_start(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .take(3)
        .take_while(|&&b| b & 0xC0 == 0x80)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allowed(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    fn os(pairs: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).into(), (*v).into()))
            .collect()
    }

    #[test]
    fn environment_is_the_safe_set_plus_named_passthrough() {
        let parent = os(&[
            ("PATH", "/usr/bin:./bin"),
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("LANG", "C.UTF-8"),
            ("GITHUB_TOKEN", "secret"),
            ("AWS_SECRET_ACCESS_KEY", "secret"),
            ("GOFLAGS", "-mod=mod"),
            ("EDITOR", "vim"),
        ]);
        let env = child_env(
            &parent,
            &allowed(&["GOFLAGS", "EDITOR"]),
            OsStr::new("/usr/bin"),
        );
        let expected = os(&[
            ("HOME", "/home/u"),
            ("LC_ALL", "C"),
            ("LANG", "C.UTF-8"),
            ("GOFLAGS", "-mod=mod"),
            ("EDITOR", "false"),
            ("PATH", "/usr/bin"),
            ("GIT_TERMINAL_PROMPT", "0"),
            ("PAGER", "cat"),
            ("GIT_PAGER", "cat"),
            ("VISUAL", "false"),
            ("GIT_EDITOR", "false"),
        ]);
        assert_eq!(env, expected);
    }

    fn clip(budget: usize, chunks: &[&[u8]]) -> String {
        let mut c = Clip::new(budget);
        for chunk in chunks {
            c.push(chunk);
        }
        assert!(c.head.len() + c.tail.len() <= budget);
        c.render()
    }

    #[test]
    fn clipping_keeps_head_and_tail_at_the_edges() {
        assert_eq!(clip(10, &[b"123456789"]), "123456789");
        assert_eq!(clip(10, &[b"1234567890"]), "1234567890");
        assert_eq!(clip(10, &[b"1234", b"567890"]), "1234567890");
        assert_eq!(
            clip(10, &[b"12345678901"]),
            "12345\n[... 1 byte cut ...]\n78901"
        );
        assert_eq!(
            clip(10, &[b"1234\n", b"abc", b"def", b"ghij"]),
            "1234\n[... 5 bytes cut ...]\nfghij"
        );
        assert_eq!(clip(10, &[]), "(no output)\n");
        assert_eq!(clip(0, &[b"ab"]), "[... 2 bytes cut ...]\n");
        assert_eq!(clip(1, &[b"ab"]), "[... 1 byte cut ...]\nb");
    }

    #[test]
    fn clipping_never_splits_a_character() {
        // "é" is two bytes; the head would end and the tail begin in the middle of one.
        let text = "aéééééé".as_bytes(); // 13 bytes
        assert_eq!(clip(5, &[text]), "a\n[... 10 bytes cut ...]\né");
        assert_eq!(clip(6, &[text]), "aé\n[... 8 bytes cut ...]\né");
    }

    #[test]
    fn invalid_utf8_is_measured_as_shown() {
        // U+FFFD is three bytes: the rendered head and tail, not the raw ones, fit.
        for budget in [0, 1, 2, 3, 5, 6, 7, 10, 100] {
            for len in [0, 1, 2, 3, 4, 9, 10, 11, 50, 500] {
                for data in [vec![0xffu8; len], b"a\xe9".repeat(len)] {
                    let text = clip(budget, &[&data]);
                    let body = match text.split_once(" cut ...]\n") {
                        Some((head, tail)) => {
                            let head = head.rsplit_once("[... ").map_or("", |(h, _)| h);
                            head.trim_end_matches('\n').len() + tail.len()
                        }
                        None => text.len(),
                    };
                    let limit = if data.is_empty() { text.len() } else { budget };
                    assert!(body <= limit, "{budget} {data:?}: {text:?}");
                    if let Some((_, rest)) = text.split_once("[... ") {
                        let cut: usize = rest
                            .split(' ')
                            .next()
                            .and_then(|n| n.parse().ok())
                            .expect("a count");
                        // "a" is one raw byte; each U+FFFD stands for one 0xff or 0xe9.
                        let shown = text.matches('\u{fffd}').count() + text.matches('a').count();
                        assert_eq!(cut + shown, data.len(), "{budget}: {text:?}");
                    }
                }
            }
        }
        assert_eq!(clip(6, &[b"\xff\xff"]), "\u{fffd}\u{fffd}");
        assert_eq!(clip(5, &[b"\xff\xff"]), "[... 1 byte cut ...]\n\u{fffd}");
        assert_eq!(
            clip(6, &[b"\xff\xff\xff"]),
            "\u{fffd}\n[... 1 byte cut ...]\n\u{fffd}"
        );
    }

    #[test]
    fn clipping_a_long_stream_holds_only_the_budget() {
        let mut c = Clip::new(100);
        let chunk = [b'x'; 4096];
        for _ in 0..1000 {
            c.push(&chunk);
        }
        c.push(b"END");
        assert!(
            c.head.capacity() <= 100 && c.tail.capacity() <= 256,
            "{c:?}"
        );
        let text = c.render();
        assert!(text.ends_with("xxEND"), "{text}");
        assert!(text.contains(&format!("[... {} bytes cut ...]", 4_096_003 - 100)));
    }

    #[test]
    fn status_lines() {
        let outcome = |status: Option<ExitStatus>, timed_out| Watched {
            status,
            timed_out,
            interrupted: false,
            output: String::new(),
        };
        let t = Duration::from_secs(120);
        assert_eq!(
            outcome(Some(ExitStatus::from_raw(0)), false)
                .exit(t)
                .to_string(),
            "exit status 0"
        );
        assert_eq!(
            outcome(Some(ExitStatus::from_raw(2 << 8)), false)
                .exit(t)
                .to_string(),
            "exit status 2"
        );
        assert_eq!(
            outcome(Some(ExitStatus::from_raw(9)), false)
                .exit(t)
                .to_string(),
            "killed by signal 9"
        );
        assert_eq!(
            outcome(Some(ExitStatus::from_raw(9)), true)
                .exit(t)
                .to_string(),
            "timed out after 120 s; killed"
        );
        let pressed = Watched {
            interrupted: true,
            ..outcome(Some(ExitStatus::from_raw(9)), false)
        };
        assert_eq!(
            pressed.exit(t).to_string(),
            "interrupted by the user (Ctrl-C); killed"
        );
        assert_eq!(
            Exit::TimedOut(Duration::from_millis(500)).to_string(),
            "timed out after 0.5 s; killed"
        );
    }

    #[test]
    fn a_long_command_is_echoed_clipped_with_a_marker() {
        assert_eq!(echo_line("go test", 100), "$ go test");
        assert_eq!(echo_line("go test", 9), "$ go test");
        let long = format!("echo {}", "é".repeat(1000));
        let line = echo_line(&long, 150);
        assert!(line.len() <= 150, "{} bytes: {line}", line.len());
        assert!(line.starts_with("$ echo é"), "{line}");
        let head = line.find(" [... command clipped").expect("marker");
        let cut = 2 + long.len() - head;
        assert!(
            line.ends_with(&format!(" [... command clipped: {cut} bytes cut ...]")),
            "{line}"
        );
        assert!(echo_line(&long, 0).starts_with("$  [... command clipped"));
    }

    #[test]
    fn spec_is_small() {
        let bytes = SPEC.description.len() + SPEC.parameters.len();
        assert!(bytes <= 250, "{bytes} bytes of description and schema");
    }
}
