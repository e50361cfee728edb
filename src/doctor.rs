//! `metron --doctor`: checks the setup without running the model.
//!
//! Each check becomes one [`Check`] row: a [`Status`] (`ok`, `warn`, `fail`), what was
//! measured, and, when not ok, what to do about it. The checks only produce data; [`render`]
//! turns the rows into text, so the decisions and the layout are tested apart from the
//! network.
//!
//! The rules the doctor keeps:
//! - no inference: it reads `/api/version`, `/api/tags`, `/api/show` and `/api/ps` (or,
//!   for an OpenAI-compatible server, `/v1/models`: see `openai`), never `/api/chat` (the agent it builds to list the tools is given a model that cannot talk);
//! - nothing is written anywhere;
//! - every probe is bounded ([`PROBE_LIMIT`]) and so is the whole run ([`TOTAL_LIMIT`]);
//! - a configuration error is reported as a `fail` row and the rest still runs, on the
//!   built-in defaults (plus `OLLAMA_HOST` / `OLLAMA_MODEL` and `--model`);
//! - exit status 0 when no row failed, 1 otherwise, so bootstrap scripts can use it.

use crate::agent::window::{DecidedBy, Window};
use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::agent::{self, Agent, Model, Settings};
use crate::authority::policy::WithdrawalReason;
use crate::config::{
    self, Config, ConfigEnv, ConfigError, ConfigFile, ConfigTrust, Flags, Loaded, RemoteEndpoint,
    Source,
};
use crate::disclosure::{self, Route};
use crate::display::one_line_safe;
use crate::frontend::Exit;
use crate::frontend::models::{describe, installed_as, sole_tool_model};
use crate::instructions::Instructions;
use crate::ollama::wire::{ChatRequest, ModelDetails};
use crate::ollama::{Client, Delta, OllamaError, Reply};
use crate::project::Project;
use crate::tools::symbols::census::Census;
use crate::tools::{Access, Budgets, CommandLimits, Toolbox};

mod openai;

/// The longest one request to Ollama may take, connection included.
pub(crate) const PROBE_LIMIT: Duration = Duration::from_secs(5);

/// The longest all requests together may take; a probe that would start after it is
/// skipped.
pub(crate) const TOTAL_LIMIT: Duration = Duration::from_secs(15);

/// Installed model names listed when the configured one is missing.
const MODELS_LISTED: usize = 8;

/// How a check came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Status {
    /// Nothing to do.
    Ok,
    /// metron works, but not as well or as safely as it could.
    Warn,
    /// metron will not work until this is fixed.
    Fail,
}

impl Status {
    fn word(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Warn => "warn",
            Status::Fail => "fail",
        }
    }

    fn colour(self) -> &'static str {
        match self {
            Status::Ok => "\x1b[32m",
            Status::Warn => "\x1b[33m",
            Status::Fail => "\x1b[31m",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.word())
    }
}

/// One row of the report: what was checked, how it came out, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Check {
    /// ok, warn or fail.
    pub(crate) status: Status,
    /// The area checked (`project`, `config`, `ollama`, ...).
    pub(crate) name: &'static str,
    /// What was found, in one line.
    pub(crate) measured: String,
    /// The next step, when the status is not ok.
    pub(crate) remedy: Option<String>,
}

impl Check {
    fn ok(name: &'static str, measured: impl Into<String>) -> Check {
        Check {
            status: Status::Ok,
            name,
            measured: measured.into(),
            remedy: None,
        }
    }

    fn warn(name: &'static str, measured: impl Into<String>, remedy: impl Into<String>) -> Check {
        Check {
            status: Status::Warn,
            name,
            measured: measured.into(),
            remedy: Some(remedy.into()),
        }
    }

    fn fail(name: &'static str, measured: impl Into<String>, remedy: impl Into<String>) -> Check {
        Check {
            status: Status::Fail,
            name,
            measured: measured.into(),
            remedy: Some(remedy.into()),
        }
    }
}

/// Runs every check (with the command line's `flags` as the top configuration layer, as a
/// session would have them), prints the report on stdout, and says whether the setup is
/// complete.
pub(crate) fn run(flags: &Flags) -> Exit {
    let env = ConfigEnv::from_process();
    let checks = diagnose(std::env::current_dir(), &env, flags);
    let colour = crate::display::colour_for(crate::display::Stream::Stdout);
    // On a terminal, rows wrap between words at its width (a terminal that does not say
    // its size gets 80 columns); piped, each row stays one line for grep.
    let width = crate::display::columns(crate::display::Stream::Stdout);
    let text = render(&checks, colour, width);
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => {}
        // `metron --doctor | head` got what it wanted; the exit status still tells.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => {
            crate::frontend::error(format!("cannot write to stdout: {e}"));
            return Exit::Failure;
        }
    }
    exit_for(&checks)
}

/// The exit status for a report: failure when any row failed.
pub(crate) fn exit_for(checks: &[Check]) -> Exit {
    if checks.iter().any(|c| c.status == Status::Fail) {
        Exit::Failure
    } else {
        Exit::Success
    }
}

/// Runs every check for a session started in `cwd`, in the order they are shown.
fn diagnose(cwd: std::io::Result<PathBuf>, env: &ConfigEnv, flags: &Flags) -> Vec<Check> {
    let mut checks = Vec::new();
    let here = cwd.as_ref().ok().cloned();
    let (project, check) = project_check(cwd);
    checks.push(check);
    let config_root = project
        .as_ref()
        .map_or_else(|| PathBuf::from("."), |p| p.root().to_path_buf());
    let loaded = config::load(&config_root, env, flags).and_then(|mut loaded| {
        config::check_tool_names(&mut loaded, &crate::tools::names())?;
        Ok(loaded)
    });
    let loaded = match loaded {
        Ok(mut loaded) => {
            if let Some(warning) = crate::disclosure::key_withheld(
                &loaded,
                crate::ollama::ApiKey::in_environment().is_some(),
            ) {
                crate::ollama::withhold_api_key();
                loaded.warnings.push(warning);
            }
            checks.extend(config_checks(&loaded));
            loaded
        }
        Err(error) => {
            checks.push(config_error_check(&error));
            defaults_with_env(env, flags)
        }
    };
    let config = &loaded.config;

    let refused = disclosure::check_loaded(&loaded).is_err();
    // The window a session would use, from what the server says of the model (its trained
    // length) or of itself (an OpenAI-compatible server's own window).
    let mut window = Window::new(config.num_ctx, None)
        .on(crate::ollama::ServerKind::of_endpoint(&config.endpoint));
    if refused {
        // A session would not start, so the doctor does not contact that host either.
        checks.push(Check::warn(
            "ollama",
            "skipped the server, model, tool-support and context checks: `remote_endpoint` refuses the endpoint, so the doctor does not contact it either",
            "see the endpoint row below",
        ));
    } else {
        match tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
        {
            Ok(runtime) => {
                checks.extend(runtime.block_on(server_checks(&loaded, &mut window)));
                // A name lookup runs on a blocking thread that the probe's time limit
                // abandons but cannot stop; do not wait for it on the way out.
                runtime.shutdown_timeout(Duration::from_millis(100));
            }
            Err(e) => checks.push(Check::fail(
                "ollama",
                format!("cannot start the async runtime to ask Ollama: {e}"),
                "this is a problem of the machine (threads, file descriptors), not of the setup; try again",
            )),
        }
    }
    checks.push(endpoint_check(
        &config.endpoint,
        loaded.source(crate::config::Key::endpoint),
        config.remote_endpoint,
        loaded.source(crate::config::Key::remote_endpoint),
    ));
    match project {
        Some(project) => {
            // The instructions a session started here would send, as it would read them.
            let instructions = match &here {
                Some(here) => {
                    Instructions::load(&project, here, config::user_dir(env).as_deref(), config)
                }
                None => Instructions::off(),
            };
            checks.extend(instructions_checks(&instructions, config));
            checks.extend(tools_checks(project, &loaded, instructions, window));
        }
        None => checks.push(Check::warn(
            "tools",
            "skipped: there is no project to offer tools on",
            "fix the project row above",
        )),
    }
    checks.push(sandbox_check(config));
    checks.push(Check::ok(
        "binaries",
        "none needed: search, symbols and patches are built in (no rg, ctags or git binary)",
    ));
    checks
}

// ---------------------------------------------------------------------------------------
// Project and configuration
// ---------------------------------------------------------------------------------------

/// Finds the project and says whether it is a git work tree.
fn project_check(cwd: std::io::Result<PathBuf>) -> (Option<Project>, Check) {
    let cwd = match cwd {
        Ok(cwd) => cwd,
        Err(e) => {
            return (
                None,
                Check::fail(
                    "project",
                    format!("cannot read the working directory: {e}"),
                    "cd into the repository you want to work on and run metron --doctor again",
                ),
            );
        }
    };
    match Project::discover(&cwd) {
        Ok(project) => {
            let check = project_row(project.root(), project.is_git());
            (Some(project), check)
        }
        Err(e) => (
            None,
            Check::fail(
                "project",
                format!("cannot open the project at {}: {e}", cwd.display()),
                "cd into a readable repository and run metron --doctor again",
            ),
        ),
    }
}

/// The project row for a root that is, or is not, a git work tree.
fn project_row(root: &Path, is_git: bool) -> Check {
    if is_git {
        Check::ok("project", format!("{} is a git work tree", root.display()))
    } else {
        Check::warn(
            "project",
            format!(
                "{} is not inside a git repository: apply_patch is withdrawn, and the boundary is the working directory",
                root.display()
            ),
            "run metron inside the repository you want to work on (cd ~/code/my-project)",
        )
    }
}

/// The config rows of a successful load: every file read, in layer order, and each trust
/// warning.
fn config_checks(loaded: &Loaded) -> Vec<Check> {
    let mut measured = if loaded.files.is_empty() {
        "defaults, no config file".to_owned()
    } else {
        let read: Vec<String> = loaded.files.iter().map(describe_file).collect();
        format!("read {}", read.join(", then on top "))
    };
    let overrides = overrides(&loaded.sources);
    if !overrides.is_empty() {
        measured.push_str(&format!("; overridden by {}", overrides.join(" and ")));
    }
    let mut checks = vec![Check::ok("config", measured)];
    for warning in &loaded.warnings {
        // The warnings end with their remedy after the last "; ".
        let check = match warning.rsplit_once("; ") {
            Some((what, remedy)) => Check::warn("config", what, remedy),
            None => Check {
                status: Status::Warn,
                name: "config",
                measured: warning.clone(),
                remedy: None,
            },
        };
        checks.push(check);
    }
    checks
}

/// One config file for the config row: its path and how far it is trusted.
fn describe_file(file: &ConfigFile) -> String {
    match file.trust {
        ConfigTrust::User => format!("{} (your own config, trusted)", file.path.display()),
        ConfigTrust::Project => format!(
            "{} (the project's config, untrusted: it cannot grant authority or loosen your limits)",
            file.path.display()
        ),
    }
}

/// The environment variables and flags that set some value, each named once
/// (`$OLLAMA_HOST`, `--model`); `--set` with the keys it set, since it may set any.
fn overrides(sources: &BTreeMap<&'static str, Source>) -> Vec<String> {
    let by_set = Source::Flag(config::SET_FLAG);
    let mut vars: Vec<String> = sources
        .values()
        .filter(|s| matches!(s, Source::Env(_) | Source::Flag(_)) && **s != by_set)
        .map(Source::to_string)
        .collect();
    let set: Vec<&str> = sources
        .iter()
        .filter(|(_, source)| **source == by_set)
        .map(|(key, _)| *key)
        .collect();
    if !set.is_empty() {
        vars.push(format!("{by_set} ({})", set.join(", ")));
    }
    vars.sort();
    vars.dedup();
    vars
}

/// The row for a configuration metron would refuse to start with.
fn config_error_check(error: &ConfigError) -> Check {
    Check::fail(
        "config",
        error.to_string(),
        "fix it: metron refuses to start with this error (the checks below use the built-in defaults, OLLAMA_HOST / OLLAMA_MODEL, --model and --set)",
    )
}

/// The settings to go on with after a config error: the defaults, plus `OLLAMA_HOST`,
/// `OLLAMA_MODEL`, `--model` and `--set` when they are usable.
fn defaults_with_env(env: &ConfigEnv, flags: &Flags) -> Loaded {
    let mut loaded = Loaded::defaults();
    let (config, sources) = (&mut loaded.config, &mut loaded.sources);
    if let Some(endpoint) = env
        .ollama_host
        .as_deref()
        .and_then(|host| config::normalize_endpoint(host).ok())
    {
        config.endpoint = endpoint;
        sources.insert("endpoint", Source::Env("OLLAMA_HOST"));
    }
    if let Some(model) = env.ollama_model.as_deref().filter(|m| !m.trim().is_empty()) {
        config.model = model.to_owned();
        sources.insert("model", Source::Env("OLLAMA_MODEL"));
    }
    if let Some(model) = flags.model.as_deref().filter(|m| !m.trim().is_empty()) {
        config.model = model.to_owned();
        sources.insert("model", Source::Flag(config::MODEL_FLAG));
    }
    // Each `--set` was checked on the command line, so only a check across keys could
    // refuse one here; the rows below then show that key at its default.
    let _ = config::apply_flags(
        &mut loaded,
        &Flags {
            set: flags.set.clone(),
            ..Flags::default()
        },
    );
    loaded
}

/// Where a setting came from, for the rows: `built-in default`, `from $OLLAMA_HOST`,
/// `from PATH`.
fn origin(source: &Source) -> String {
    match source {
        Source::Default => "built-in default".to_owned(),
        other => format!("from {other}"),
    }
}

/// Says whether code sent to the endpoint stays on this machine, and what
/// `remote_endpoint` makes of it: ok when local, a warning when remote (each session
/// announces it), a failure when remote and refused (no session would start).
fn endpoint_check(
    endpoint: &str,
    source: &Source,
    policy: RemoteEndpoint,
    policy_source: &Source,
) -> Check {
    // Never the password of `http://user:password@host`: a doctor's report gets pasted.
    let base = crate::frontend::models::server_url(endpoint);
    let base = base.as_str();
    let policy_text = format!(
        "`remote_endpoint` is {} ({})",
        policy.as_str(),
        origin(policy_source)
    );
    // Over plain http anyone on the path reads the code too; https leaves only the server.
    let wire = if endpoint.starts_with("https://") {
        ""
    } else {
        " and the network to it (plain http)"
    };
    match (disclosure::route(endpoint), policy) {
        (Route::Local, RemoteEndpoint::Warn) => Check::ok(
            "endpoint",
            format!(
                "{base} is on this machine ({}); {policy_text}: a remote one would be announced before the first request",
                origin(source)
            ),
        ),
        (Route::Local, RemoteEndpoint::Refuse) => Check::ok(
            "endpoint",
            format!(
                "{base} is on this machine ({}); {policy_text}: a remote one would be refused",
                origin(source)
            ),
        ),
        (Route::Remote { host }, RemoteEndpoint::Warn) => Check::warn(
            "endpoint",
            format!(
                "{base} ({}) is another host: every tool result, code slices included, is sent to it; {policy_text}, so each session says so on stderr before its first request",
                origin(source)
            ),
            format!(
                "use it only if you trust {host}{wire}; otherwise run Ollama here and unset OLLAMA_HOST or `endpoint`, or set `remote_endpoint` to \"refuse\" to forbid remote servers"
            ),
        ),
        (Route::Remote { host }, RemoteEndpoint::Refuse) => Check::fail(
            "endpoint",
            format!(
                "{base} ({}) is another host, and {policy_text}: metron will not start a session",
                origin(source)
            ),
            format!(
                "use an Ollama server on this machine (unset OLLAMA_HOST or `endpoint`), or set `remote_endpoint` to \"warn\" in your own config if you trust {host}"
            ),
        ),
    }
}

// ---------------------------------------------------------------------------------------
// Ollama
// ---------------------------------------------------------------------------------------

/// Hands out time for probes: each gets [`PROBE_LIMIT`], and none starts after
/// [`TOTAL_LIMIT`].
struct Deadline {
    end: Instant,
}

impl Deadline {
    fn new() -> Deadline {
        Deadline {
            end: Instant::now() + TOTAL_LIMIT,
        }
    }

    /// The limit for the next probe, or `None` when the time is used up.
    fn next(&self) -> Option<Duration> {
        let left = self.end.saturating_duration_since(Instant::now());
        (left >= Duration::from_millis(100)).then(|| left.min(PROBE_LIMIT))
    }
}

/// The rows that need the server: reachable, model installed, tool support, context.
async fn server_checks(loaded: &Loaded, window: &mut Window) -> Vec<Check> {
    let config = &loaded.config;
    let deadline = Deadline::new();
    let mut checks = Vec::new();
    let endpoint_source = loaded.source(crate::config::Key::endpoint);
    let base = crate::frontend::models::server_url(&config.endpoint);
    let base = base.as_str();

    let client = match Client::new(&config.endpoint, PROBE_LIMIT) {
        Ok(client) => client,
        Err(e) => {
            checks.push(Check::fail(
                "ollama",
                e.to_string(),
                "fix what the line above names, then run metron --doctor again",
            ));
            checks.push(skipped("Ollama cannot be asked"));
            return checks;
        }
    };
    if let Some(trust) = client.trust() {
        checks.push(Check::ok("tls", format!("https trusts {trust}")));
    }
    if client.kind() == crate::ollama::ServerKind::OpenAi {
        checks.extend(openai::checks(loaded, &client, base, &deadline, window).await);
        return checks;
    }

    let Some(limit) = deadline.next() else {
        checks.push(out_of_time("ollama"));
        return checks;
    };
    let started = Instant::now();
    let version = client.version(limit).await;
    let elapsed = started.elapsed();
    match version {
        Ok(version) => checks.push(Check::ok(
            "ollama",
            format!(
                "Ollama {} at {base} ({}) answered in {} ms",
                describe_version(&version),
                origin(endpoint_source),
                elapsed.as_millis()
            ),
        )),
        Err(e) => {
            checks.push(unreachable_check(&e, base, limit));
            checks.push(skipped("Ollama is unreachable"));
            return checks;
        }
    }

    let model = config.model.as_str();
    let model_source = loaded.source(crate::config::Key::model);
    let Some(limit) = deadline.next() else {
        checks.push(out_of_time("model"));
        return checks;
    };
    let installed = match client.models(limit).await {
        Ok(installed) => installed,
        Err(e) => {
            checks.push(Check::fail(
                "model",
                format!("cannot list the installed models: {e}"),
                "check the Ollama server's log, then run metron --doctor again",
            ));
            return checks;
        }
    };
    // A missing model: is there exactly one that could replace it? (`/api/show` of each,
    // within the doctor's time.)
    let missing = installed_as(model, installed.iter().map(String::as_str)).is_none();
    let sole = match deadline.next() {
        Some(limit) if missing => {
            let described = describe(&client, installed.clone(), Instant::now() + limit).await;
            sole_tool_model(&described).map(|m| m.name.clone())
        }
        _ => None,
    };
    let check = model_check(model, model_source, &installed, sole.as_deref());
    let present = check.status == Status::Ok;
    checks.push(check);
    if !present {
        checks.push(Check::warn(
            "tool use",
            "skipped the tool-support and context checks: the model is not installed",
            "install or choose the model, then run metron --doctor again",
        ));
        return checks;
    }

    let Some(limit) = deadline.next() else {
        checks.push(out_of_time("tool use"));
        return checks;
    };
    let details = match client.show(model, limit).await {
        Ok(details) => details,
        Err(e) => {
            checks.push(Check::fail(
                "tool use",
                format!("cannot read the model's details (/api/show): {e}"),
                format!("check that `ollama show {model}` works, then run metron --doctor again"),
            ));
            return checks;
        }
    };
    checks.push(tool_support_check(model, &details));
    *window = window.for_model(details.context_length);
    if let Some(host) = &details.remote_host {
        checks.push(cloud_model_check(model, host, config.remote_endpoint));
    }

    // What the loaded copy runs with is a detail; it never fails the doctor.
    let loaded_context = match deadline.next() {
        Some(limit) => loaded_context(&client, model, limit).await,
        None => None,
    };
    checks.push(context_check(
        model,
        config.num_ctx,
        loaded.source(crate::config::Key::num_ctx),
        details.context_length,
        loaded_context,
    ));
    checks
}

/// A cloud model (the server marks it with `remote_host`): every request goes on to that
/// host, as with a remote endpoint; a failure when `remote_endpoint` refuses it, since no
/// session would start.
fn cloud_model_check(model: &str, remote_host: &str, policy: RemoteEndpoint) -> Check {
    let host = match disclosure::ModelPlace::from_remote_host(Some(remote_host)) {
        disclosure::ModelPlace::Remote { host } => host,
        _ => remote_host.to_owned(),
    };
    let measured = format!(
        "{model} is a cloud model: the server passes every request on to {host}, so every tool result, code slices included, is sent there"
    );
    match policy {
        RemoteEndpoint::Warn => Check::warn(
            "cloud model",
            format!("{measured}; `remote_endpoint` is warn, so each session says so on stderr"),
            format!(
                "use it only if you trust {host}; otherwise choose a model installed here (--model NAME or OLLAMA_MODEL), or set `remote_endpoint` to \"refuse\""
            ),
        ),
        RemoteEndpoint::Refuse => Check::fail(
            "cloud model",
            format!("{measured}, and `remote_endpoint` is refuse: metron will not start a session"),
            format!(
                "choose a model installed on this machine (--model NAME or OLLAMA_MODEL), or set `remote_endpoint` to \"warn\" in your own config if you trust {host}"
            ),
        ),
    }
}

/// The row standing for the checks that could not run.
fn skipped(why: &str) -> Check {
    Check::warn(
        "model",
        format!("skipped the model, tool-support and context checks: {why}"),
        "fix the ollama row above, then run metron --doctor again",
    )
}

/// The row for a probe that did not start because the total time was used up.
fn out_of_time(name: &'static str) -> Check {
    Check::fail(
        name,
        format!(
            "skipped: the doctor's {} s for all requests ran out",
            TOTAL_LIMIT.as_secs()
        ),
        "the server answers very slowly; check its load and log, then run metron --doctor again",
    )
}

/// A version as the server reports it, with `0.0.0` called what it is.
fn describe_version(version: &str) -> String {
    match version {
        "0.0.0" => "0.0.0 (a development build)".to_owned(),
        other => other.to_owned(),
    }
}

/// The row for a `/api/version` that did not answer as Ollama does.
fn unreachable_check(error: &OllamaError, base: &str, limit: Duration) -> Check {
    match error {
        OllamaError::Unreachable { reason, .. } => Check::fail(
            "ollama",
            format!("nothing answers at {base} ({reason})"),
            "start Ollama with `ollama serve`, or point OLLAMA_HOST (or `endpoint` in your config) at a running server",
        ),
        OllamaError::IdleTimeout { .. } => Check::fail(
            "ollama",
            format!(
                "no answer from {base} within {} s",
                limit.as_secs_f64().ceil()
            ),
            "check that the host is up and reachable (a firewall that drops packets looks like this); start Ollama with `ollama serve`, or point OLLAMA_HOST at a running server",
        ),
        OllamaError::Tls { problem, .. } => Check::fail(
            "ollama",
            format!("cannot connect securely to {base}: {}", problem.what()),
            problem.next_step(),
        ),
        other => Check::fail(
            "ollama",
            format!("{base} answered, but not as Ollama does: {other}"),
            "point OLLAMA_HOST (or `endpoint` in your config) at an Ollama server; `ollama serve` starts one here",
        ),
    }
}

/// Whether the configured model is installed: its name exactly, or `NAME:latest` when it
/// names no tag. When it is not, and exactly one installed model could replace it
/// (`sole`, see `models::sole_tool_model`), the remedy names that one first.
fn model_check(model: &str, source: &Source, installed: &[String], sole: Option<&str>) -> Check {
    if let Some(found) = installed_as(model, installed.iter().map(String::as_str)) {
        let measured = if found == model {
            format!("{model} is installed ({})", origin(source))
        } else {
            format!("{model} is installed as {found} ({})", origin(source))
        };
        return Check::ok("model", measured);
    }
    let listing = if installed.is_empty() {
        "no models are installed".to_owned()
    } else {
        let shown: Vec<&str> = installed
            .iter()
            .take(MODELS_LISTED)
            .map(String::as_str)
            .collect();
        let more = installed.len().saturating_sub(MODELS_LISTED);
        let more = if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        };
        format!("installed: {}{more}", shown.join(", "))
    };
    let remedy = match sole {
        Some(sole) => format!(
            "use {sole}, the one installed model with tool support: `metron --model {sole}`, or `/model {sole} --save` in a session to keep it; or run `ollama pull {model}`"
        ),
        None => format!(
            "run `ollama pull {model}`, or choose an installed model with tool support: `metron --model NAME`, or `/model NAME --save` in a session, or `model` in .metron.json or your own config (or OLLAMA_MODEL)"
        ),
    };
    Check::fail(
        "model",
        format!("{model} ({}) is not installed; {listing}", origin(source)),
        remedy,
    )
}

/// Whether the model can be given tools, from its capabilities or, on a server too old to
/// report them, its template.
fn tool_support_check(model: &str, details: &ModelDetails) -> Check {
    let pick = "pick a model whose `ollama show` lists the `tools` capability (qwen2.5-coder, qwen3, llama3.1 and others) and pass it with --model, or set `model` or OLLAMA_MODEL";
    match &details.capabilities {
        Some(capabilities) if capabilities.iter().any(|c| c == "tools") => Check::ok(
            "tool use",
            format!(
                "{model} supports tools (capabilities: {})",
                capabilities.join(", ")
            ),
        ),
        Some(capabilities) => {
            let listed = if capabilities.is_empty() {
                "none".to_owned()
            } else {
                capabilities.join(", ")
            };
            Check::fail(
                "tool use",
                format!(
                    "{model} does not support tools (capabilities: {listed}), so it could never see your code"
                ),
                pick,
            )
        }
        None if details.supports_tools() => Check::ok(
            "tool use",
            format!(
                "{model} supports tools (guessed from its template: this server does not report capabilities, so it is older than 0.6.4)"
            ),
        ),
        None => Check::fail(
            "tool use",
            format!(
                "{model} does not appear to support tools (guessed from its template, which never mentions them: this server does not report capabilities)"
            ),
            pick,
        ),
    }
}

/// Compares `num_ctx` with the context the model was trained for (and mentions the one
/// the loaded copy runs with, when the server says).
fn context_check(
    model: &str,
    num_ctx: u64,
    source: &Source,
    trained: Option<u64>,
    loaded: Option<u64>,
) -> Check {
    let loaded = loaded
        .map(|n| format!("; loaded now with {n}"))
        .unwrap_or_default();
    match trained {
        Some(trained) if num_ctx <= trained => Check::ok(
            "context",
            format!(
                "num_ctx {num_ctx} ({}) fits {model}'s trained context of {trained}{loaded}",
                origin(source)
            ),
        ),
        Some(trained) => Check::warn(
            "context",
            format!(
                "num_ctx {num_ctx} ({}) exceeds {model}'s trained context of {trained}, so sessions ask for {trained} (Ollama clamps it anyway){loaded}",
                origin(source)
            ),
            format!("set `num_ctx` to {trained} or less"),
        ),
        None => Check::warn(
            "context",
            format!(
                "{model}'s trained context length is not reported, so num_ctx {num_ctx} ({}) cannot be checked{loaded}",
                origin(source)
            ),
            format!(
                "look for \"context length\" in `ollama show {model}` and keep `num_ctx` within it"
            ),
        ),
    }
}

/// The context window the running copy of `model` was loaded with (`/api/ps`), if it is
/// loaded and the server says. Best effort: any failure is `None`.
async fn loaded_context(client: &Client, model: &str, limit: Duration) -> Option<u64> {
    let running = client.running(limit).await.ok()?;
    let names: Vec<String> = running.iter().map(|(name, _)| name.clone()).collect();
    let found = installed_as(model, names.iter().map(String::as_str))?;
    running
        .into_iter()
        .find(|(name, _)| name == found)
        .and_then(|(_, context)| context)
}

// ---------------------------------------------------------------------------------------
// Tools
// ---------------------------------------------------------------------------------------

/// A model that refuses to be asked: the agent built to list the tools can never reach
/// `/api/chat`.
struct NoInference;

impl Model for NoInference {
    fn chat(
        &self,
        _request: &ChatRequest<'_>,
        _on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> impl Future<Output = Result<Reply, OllamaError>> {
        std::future::ready(Err(OllamaError::Protocol(
            "the doctor never asks the model".to_owned(),
        )))
    }
}

/// What confines the commands run_command runs: ok when the sandbox works, a warning
/// when the user turned it off, and a failure when it is on but this machine cannot
/// enforce it while commands are allowed (run_command then refuses every command).
fn sandbox_check(config: &Config) -> Check {
    let commands_allowed =
        !config.allowed_commands.is_empty() || !config.allowed_project_programs.is_empty();
    match crate::sandbox::status(config.command_sandbox) {
        crate::sandbox::Status::Confined(line) => Check::ok("sandbox", line),
        crate::sandbox::Status::Off(line) => Check::warn(
            "sandbox",
            line,
            "remove \"command_sandbox\": \"off\" from your config to confine commands again",
        ),
        crate::sandbox::Status::Unavailable(line) if commands_allowed => Check::fail(
            "sandbox",
            line,
            "until then run_command refuses every command",
        ),
        crate::sandbox::Status::Unavailable(line) => Check::warn(
            "sandbox",
            line,
            "this matters once you allow commands (`allowed_commands`)",
        ),
    }
}

/// The tools offered (with what their schemas cost per request) and those withdrawn.
/// `window` is the one a session would use (the model's trained length or the server's own
/// window, when the server said), so the fixed-prompt row judges the window for real.
fn tools_checks(
    project: Project,
    loaded: &Loaded,
    instructions: Instructions,
    window: Window,
) -> Vec<Check> {
    let config = &loaded.config;
    let toolbox = Toolbox::new(project, Budgets::from_config(config))
        .with_limits(CommandLimits::from_config(config))
        .for_availability_only();
    let agent = Agent::new(NoInference, toolbox, Settings::from_config(config))
        .with_instructions(instructions);
    let names: Vec<&str> = agent.offered().iter().map(|spec| spec.name).collect();
    let mut checks = Vec::new();
    if names.is_empty() {
        checks.push(Check::fail(
            "tools",
            "no tool is offered, so the model cannot see your code",
            "remove names from `disabled_tools`",
        ));
    } else {
        let bytes = agent.schema_bytes();
        let fixed = agent.fixed_prompt();
        let with_prompt = fixed.total();
        let with = if fixed.instructions > 0 {
            "with the system prompt and instructions"
        } else {
            "with the system prompt"
        };
        checks.push(Check::ok(
            "tools",
            format!(
                "{} ({bytes} schema bytes, ~{} tokens per request; ~{} {with})",
                names.join(", "),
                agent::prompt::approx_tokens(bytes),
                agent::prompt::approx_tokens(with_prompt),
            ),
        ));
    }
    let fixed = agent::prompt::approx_tokens(agent.fixed_prompt().total());
    let result = usize::try_from(config.max_command_output_bytes).unwrap_or(usize::MAX);
    if let Some(check) = fixed_prompt_check(
        window,
        loaded.source(crate::config::Key::num_ctx),
        fixed,
        agent::prompt::approx_tokens(result) as u64,
    ) {
        checks.push(check);
    }
    for withdrawn in agent.withdrawn() {
        let access = crate::tools::spec(withdrawn.name).map(|spec| spec.access);
        checks.push(withdrawn_check(withdrawn.name, access, &withdrawn.reason));
    }
    // Which languages find_symbol reads here, and the source files it cannot (a
    // withdrawn find_symbol is warned about above; this says what it would need).
    if let Some(census) = Census::of(agent.toolbox().project()) {
        checks.push(Check::ok("tools", census.line()));
    }
    checks
}

/// The `agents` row (the instruction files, named for AGENTS.md and kept as short as the
/// other row names): the files a session started here would send, with their size in
/// tokens (or that there are none, or that they are off), then a warning per file not sent
/// whole. Names and notes are escaped: they are the file system's and the repository's.
fn instructions_checks(instructions: &Instructions, config: &Config) -> Vec<Check> {
    let line = instructions.line(agent::prompt::approx_tokens, &config.instructions_fallbacks);
    let mut checks = vec![Check::ok("agents", one_line_safe(&line))];
    for note in &instructions.notes {
        let text = note.text();
        // The notes end with their remedy after the last "; ".
        let (what, remedy) = text
            .rsplit_once("; ")
            .unwrap_or((&text, "see docs/instructions.md"));
        checks.push(Check::warn(
            "agents",
            one_line_safe(what),
            one_line_safe(remedy),
        ));
    }
    checks
}

/// The fewest tokens `num_ctx` must hold beyond the fixed prompt (the system prompt and
/// the tool definitions, sent on every request): the person's request, one tool result
/// (a 120-line slice is about 1,000 tokens) and a short answer. Below that, every turn
/// has Ollama cut (or refuse) the prompt, and the model forgets its rules or its tools.
pub(crate) const FIXED_PROMPT_MARGIN: u64 = 1024;

/// A failure row when the window a session would use (`window`: `num_ctx`, or the
/// model's trained length when smaller) cannot hold the fixed prompt (`fixed` tokens,
/// estimated as the tools row estimates it) plus one tool result at its budget
/// (`result` tokens: `max_command_output_bytes`, the largest output budget), and never
/// less than [`FIXED_PROMPT_MARGIN`]; `None` when it can (the context row compares
/// `num_ctx` with the model's own limit).
fn fixed_prompt_check(window: Window, source: &Source, fixed: usize, result: u64) -> Option<Check> {
    let margin = result.max(FIXED_PROMPT_MARGIN);
    let needed = fixed as u64 + margin;
    let num_ctx = window.effective();
    (num_ctx < needed).then(|| {
        let what = match window.decided_by() {
            DecidedBy::Trained => format!(
                "the context window of {num_ctx} tokens (the model's trained length; num_ctx {} {})",
                window.configured,
                origin(source)
            ),
            DecidedBy::Server => {
                format!("the model server's own context window of {num_ctx} tokens")
            }
            DecidedBy::Configured => format!("num_ctx {num_ctx} ({})", origin(source)),
            DecidedBy::Assumed => format!(
                "num_ctx {num_ctx} ({}), taken as the window of a model server that does not report its own,",
                origin(source)
            ),
        };
        let remedy = match window.decided_by() {
            DecidedBy::Trained => format!(
                "choose a model trained on {needed} tokens or more, or lower `max_command_output_bytes` and shorten the instructions"
            ),
            DecidedBy::Server => format!(
                "restart the model server with a context window of {needed} tokens or more (llama-server's `-c`, LM Studio's context length)"
            ),
            DecidedBy::Configured => format!(
                "set `num_ctx` to {needed} or more (the default, {}, leaves room for real work)",
                Config::default().num_ctx
            ),
            DecidedBy::Assumed => format!(
                "restart the model server with a context window of {needed} tokens or more, and set `num_ctx` to match"
            ),
        };
        Check::fail(
            "context",
            format!(
                "{what} cannot hold the fixed prompt: the system prompt, the project's instructions and the tool definitions take ~{fixed} tokens on every request, and a turn needs {margin} more for one tool result at its budget, the request and the answer"
            ),
            remedy,
        )
    })
}

/// One withdrawn tool. Withholding a tool never fails the doctor: a tool that executes is
/// off until the user allows commands, and `disabled_tools` is the user's choice, so those
/// are ok; anything else (apply_patch outside git) is a warning.
fn withdrawn_check(name: &str, access: Option<Access>, reason: &WithdrawalReason) -> Check {
    let by_choice = reason.by_choice() || access == Some(Access::Execute);
    Check {
        status: if by_choice { Status::Ok } else { Status::Warn },
        name: "tools",
        measured: format!("{name} withdrawn: {reason}"),
        remedy: None,
    }
}

// ---------------------------------------------------------------------------------------
// Rendering
// ---------------------------------------------------------------------------------------

/// The report as text: one aligned row per check, the remedy under it, then the summary
/// line. `colour` paints the status words (for a terminal); with a `width`, a row longer
/// than that wraps between words, continuing under its own column.
pub(crate) fn render(checks: &[Check], colour: bool, width: Option<usize>) -> String {
    let name_width = checks
        .iter()
        .map(|c| c.name.chars().count())
        .max()
        .unwrap_or(0)
        .max(8);
    let column = 6 + name_width + 2;
    let indent = " ".repeat(column);
    let mut out = String::new();
    for check in checks {
        let word = check.status.word();
        let pad = " ".repeat(6 - word.len());
        let row = format!(
            "{word}{pad}{:<name_width$}  {}",
            check.name,
            visible(&check.measured)
        );
        // Measured without colour: the escape codes take no column.
        let row = fitted(&row, width, column);
        if colour {
            let rest = row.strip_prefix(word).unwrap_or(&row);
            out.push_str(&format!("{}{word}\x1b[0m{rest}", check.status.colour()));
        } else {
            out.push_str(&row);
        }
        out.push('\n');
        if let Some(remedy) = &check.remedy {
            let row = format!("{indent}→ {}", visible(remedy));
            out.push_str(&fitted(&row, width, 2));
            out.push('\n');
        }
    }
    out.push_str(&summary(checks));
    out.push('\n');
    out
}

/// A row broken at spaces to `width` columns by the one wrap helper every message goes
/// through ([`crate::display::wrap`]), continuing `hang` columns past the row's own
/// indent; without a width (not a terminal), the row stays one line for grep.
fn fitted(row: &str, width: Option<usize>, hang: usize) -> String {
    match width {
        Some(width) => crate::display::wrap(row, width, hang),
        None => row.to_owned(),
    }
}

/// The last line: `doctor: ready` (with the number of warnings, if any), or the number of
/// failed rows.
pub(crate) fn summary(checks: &[Check]) -> String {
    let count = |status| checks.iter().filter(|c| c.status == status).count();
    let plural = |n: usize, word: &str| {
        if n == 1 {
            format!("1 {word}")
        } else {
            format!("{n} {word}s")
        }
    };
    match (count(Status::Fail), count(Status::Warn)) {
        (0, 0) => "doctor: ready".to_owned(),
        (0, warnings) => format!("doctor: ready ({})", plural(warnings, "warning")),
        (fails, _) => format!("doctor: {}", plural(fails, "problem")),
    }
}

/// `text` on one row, made visible by the same rule as every other view
/// ([`one_line_safe`]: controls, C1 included, bidirectional-format characters; a tab becomes
/// a space and a newline an escape), so a server's version string, a file name or a model
/// name from an untrusted `.metron.json` cannot drive the terminal, reorder the line, or
/// start a row of its own.
fn visible(text: &str) -> String {
    one_line_safe(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// On a terminal, a row longer than its width wraps between words under its own
    /// column, a remedy under its arrow; piped, every row stays one line.
    #[test]
    fn rows_wrap_between_words_on_a_terminal() {
        let checks = [Check::fail(
            "find_symbol",
            "C 2 files; no grammar for 14 .vue files and 3 .svelte files in this project",
            "install a grammar or ignore them in .metronignore, then run the doctor again",
        )];
        let wrapped = render(&checks, false, Some(60));
        let lines: Vec<&str> = wrapped.lines().collect();
        assert!(
            lines.iter().all(|line| line.chars().count() <= 60),
            "{wrapped}"
        );
        let column = "fail  find_symbol  ".len();
        let under = |columns: usize, text: &str| format!("{}{text}", " ".repeat(columns));
        assert_eq!(
            lines[0],
            "fail  find_symbol  C 2 files; no grammar for 14 .vue files"
        );
        assert_eq!(
            lines[1],
            under(column, "and 3 .svelte files in this project")
        );
        assert_eq!(
            lines[2],
            under(column, "→ install a grammar or ignore them in")
        );
        assert_eq!(
            lines[3],
            under(column + 2, ".metronignore, then run the doctor")
        );
        assert_eq!(lines[4], under(column + 2, "again"));
        // Every word is still there, in order.
        let words = |text: &str| {
            text.split_whitespace()
                .map(str::to_owned)
                .collect::<Vec<_>>()
        };
        assert_eq!(words(&wrapped), words(&render(&checks, false, None)));
        assert_eq!(
            render(&checks, false, None).lines().count(),
            3,
            "one line each, piped"
        );
    }

    /// A word longer than the room is the only thing broken, so no row passes the width;
    /// a terminal too narrow for the column still shows every word.
    #[test]
    fn long_words_and_narrow_terminals_keep_every_word() {
        let path = format!("/{}", "very-long-directory-name/".repeat(4));
        let checks = [Check::fail(
            "project",
            format!("cannot read {path} here"),
            "check the permissions",
        )];
        let wrapped = render(&checks, false, Some(40));
        for line in wrapped.lines() {
            assert!(line.chars().count() <= 40, "{wrapped}");
        }
        let joined: String = wrapped.split_whitespace().collect();
        assert!(joined.contains(&path), "{wrapped}");
        let narrow = render(&checks, false, Some(12));
        let words = |text: &str| text.split_whitespace().collect::<String>();
        assert_eq!(words(&narrow), words(&render(&checks, false, None)));
        // Columns, not characters: each of these words takes twelve.
        let wide = "日本語の道具 ".repeat(5);
        let checks = [Check::ok("tools", wide.trim_end())];
        let wrapped = render(&checks, false, Some(44));
        let rows: Vec<&str> = wrapped.lines().collect();
        assert_eq!(rows[0], "ok    tools     日本語の道具 日本語の道具");
        assert_eq!(
            rows[1],
            format!("{}日本語の道具 日本語の道具", " ".repeat(16))
        );
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn a_missing_model_names_the_pull_and_lists_at_most_eight() {
        let installed: Vec<String> = (0..11).map(|i| format!("m{i}:latest")).collect();
        let check = model_check("qwen2.5-coder:7b", &Source::Default, &installed, None);
        assert_eq!(check.status, Status::Fail);
        assert!(check.measured.contains("m7:latest"), "{check:?}");
        assert!(!check.measured.contains("m8:latest"), "{check:?}");
        assert!(check.measured.contains("and 3 more"), "{check:?}");
        assert!(check.measured.contains("built-in default"), "{check:?}");
        let remedy = check.remedy.unwrap_or_default();
        assert!(remedy.contains("ollama pull qwen2.5-coder:7b"), "{remedy}");
        let none = model_check("x", &Source::Env("OLLAMA_MODEL"), &[], None);
        assert!(
            none.measured.contains("no models are installed"),
            "{none:?}"
        );
    }

    #[test]
    fn num_ctx_must_hold_the_fixed_prompt_and_the_margin() {
        let flag = Source::Flag("--model");
        let w = |n| Window::new(n, None);
        let tight = fixed_prompt_check(w(400), &Source::Default, 620, 1000).expect("fails");
        assert_eq!(tight.status, Status::Fail);
        assert!(tight.measured.contains("~620 tokens"), "{tight:?}");
        assert_eq!(
            tight.remedy.as_deref(),
            Some("set `num_ctx` to 1644 or more (the default, 16384, leaves room for real work)")
        );
        assert!(
            fixed_prompt_check(w(1643), &flag, 620, 1000).is_some(),
            "one below"
        );
        assert!(
            fixed_prompt_check(w(1644), &flag, 620, 1000).is_none(),
            "at the bound"
        );
        // A bigger output budget needs more; the window is the model's when smaller.
        assert!(fixed_prompt_check(w(1644), &flag, 620, 2000).is_some());
        assert!(fixed_prompt_check(w(2620), &flag, 620, 2000).is_none());
        let clamped = fixed_prompt_check(Window::new(16384, Some(2048)), &flag, 620, 2000)
            .expect("the trained length is what counts");
        assert!(
            clamped.measured.starts_with(
                "the context window of 2048 tokens (the model's trained length; num_ctx 16384"
            ),
            "{clamped:?}"
        );
        assert!(
            clamped
                .remedy
                .as_deref()
                .is_some_and(|r| r.contains("2620 tokens")),
            "{clamped:?}"
        );
    }

    #[test]
    fn a_missing_model_names_the_one_installed_model_with_tools() {
        let installed = names(&["plain:1b", "qwen3:8b"]);
        let check = model_check("x", &Source::Default, &installed, Some("qwen3:8b"));
        assert_eq!(check.status, Status::Fail);
        let remedy = check.remedy.unwrap_or_default();
        assert!(
            remedy.starts_with(
                "use qwen3:8b, the one installed model with tool support: `metron --model qwen3:8b`"
            ),
            "{remedy}"
        );
    }

    #[test]
    fn context_is_compared_with_the_trained_length() {
        let src = Source::Default;
        assert_eq!(
            context_check("m", 16384, &src, Some(32768), None).status,
            Status::Ok
        );
        assert_eq!(
            context_check("m", 32768, &src, Some(32768), None).status,
            Status::Ok
        );
        let over = context_check("m", 65536, &src, Some(32768), Some(32768));
        assert_eq!(over.status, Status::Warn);
        assert!(over.measured.contains("clamps"), "{over:?}");
        assert!(over.measured.contains("loaded now with 32768"), "{over:?}");
        assert_eq!(
            over.remedy.as_deref(),
            Some("set `num_ctx` to 32768 or less")
        );
        let unknown = context_check("m", 16384, &src, None, None);
        assert_eq!(unknown.status, Status::Warn);
        assert!(unknown.measured.contains("not reported"), "{unknown:?}");
    }

    #[test]
    fn a_cloud_model_is_a_warning_or_under_refuse_a_failure() {
        let warn = cloud_model_check("m-cloud", "https://ollama.com:443", RemoteEndpoint::Warn);
        assert_eq!(warn.status, Status::Warn);
        assert!(
            warn.measured.contains("ollama.com:443"),
            "{}",
            warn.measured
        );
        let refuse = cloud_model_check("m-cloud", "https://ollama.com", RemoteEndpoint::Refuse);
        assert_eq!(refuse.status, Status::Fail);
        assert!(
            refuse.measured.contains("will not start a session"),
            "{}",
            refuse.measured
        );
    }

    #[test]
    fn tool_support_comes_from_capabilities_or_the_template() {
        let details = |capabilities: Option<&[&str]>, template: &str| ModelDetails {
            capabilities: capabilities.map(names),
            context_length: None,
            template: template.to_owned(),
            remote_host: None,
        };
        let yes = tool_support_check("m", &details(Some(&["completion", "tools"]), ""));
        assert_eq!(yes.status, Status::Ok);
        let no = tool_support_check("m", &details(Some(&["completion"]), ".Tools"));
        assert_eq!(no.status, Status::Fail);
        assert!(no.measured.contains("capabilities: completion"), "{no:?}");
        let guessed = tool_support_check("m", &details(None, "{{ if .Tools }}x{{ end }}"));
        assert_eq!(guessed.status, Status::Ok);
        assert!(guessed.measured.contains("guessed"), "{guessed:?}");
        let guessed_no = tool_support_check("m", &details(None, "{{ .Prompt }}"));
        assert_eq!(guessed_no.status, Status::Fail);
        assert!(guessed_no.measured.contains("guessed"), "{guessed_no:?}");
    }

    #[test]
    fn a_remote_endpoint_is_a_warning() {
        let warn = RemoteEndpoint::Warn;
        let local = endpoint_check(
            "http://127.0.0.1:11434/api/chat",
            &Source::Default,
            warn,
            &Source::Default,
        );
        assert_eq!(local.status, Status::Ok);
        assert!(local.measured.starts_with("http://127.0.0.1:11434 is on"));
        assert!(
            local
                .measured
                .contains("`remote_endpoint` is warn (built-in default)"),
            "{local:?}"
        );
        let remote = endpoint_check(
            "http://10.255.255.1:11434/api/chat",
            &Source::Env("OLLAMA_HOST"),
            warn,
            &Source::Default,
        );
        assert_eq!(remote.status, Status::Warn);
        assert!(remote.measured.contains("$OLLAMA_HOST"), "{remote:?}");
        assert!(remote.measured.contains("sent to it"), "{remote:?}");
        assert!(remote.measured.contains("says so on stderr"), "{remote:?}");
        let remedy = remote.remedy.unwrap_or_default();
        assert!(remedy.contains("10.255.255.1:11434"), "{remedy}");
        assert!(remedy.contains("\"refuse\""), "{remedy}");
    }

    #[test]
    fn a_refused_remote_endpoint_fails() {
        let refuse = RemoteEndpoint::Refuse;
        let user = Source::File(PathBuf::from("home/.metron/config.json"));
        let local = endpoint_check(
            "http://localhost:11434/api/chat",
            &Source::Default,
            refuse,
            &user,
        );
        assert_eq!(local.status, Status::Ok);
        assert!(local.measured.contains("would be refused"), "{local:?}");
        let remote = endpoint_check(
            "http://gpu-box:11434/api/chat",
            &Source::Env("OLLAMA_HOST"),
            refuse,
            &user,
        );
        assert_eq!(remote.status, Status::Fail);
        assert!(
            remote
                .measured
                .contains("`remote_endpoint` is refuse (from home/.metron/config.json)"),
            "{remote:?}"
        );
        assert!(remote.measured.contains("will not start"), "{remote:?}");
        let remedy = remote.remedy.unwrap_or_default();
        assert!(remedy.contains("gpu-box:11434"), "{remedy}");
        assert!(remedy.contains("your own config"), "{remedy}");
    }

    #[test]
    fn trust_warnings_become_rows_with_their_remedy() {
        let mut loaded = defaults_with_env(&ConfigEnv::default(), &Flags::default());
        loaded.warnings.push(
            "ignoring `allowed_commands` in p/.metron.json: a project's config cannot grant authority; set METRON_ALLOW_PROJECT_COMMANDS=1".to_owned(),
        );
        let checks = config_checks(&loaded);
        assert_eq!(checks[0].measured, "defaults, no config file");
        assert_eq!(checks[1].status, Status::Warn);
        assert!(checks[1].measured.ends_with("cannot grant authority"));
        assert_eq!(
            checks[1].remedy.as_deref(),
            Some("set METRON_ALLOW_PROJECT_COMMANDS=1")
        );
    }

    #[test]
    fn after_a_config_error_the_environment_still_counts() {
        let env = ConfigEnv {
            ollama_host: Some("localhost:9".to_owned()),
            ollama_model: Some("qwen3:8b".to_owned()),
            ..ConfigEnv::default()
        };
        let loaded = defaults_with_env(&env, &Flags::default());
        assert_eq!(loaded.config.endpoint, "http://localhost:9/api/chat");
        assert_eq!(loaded.config.model, "qwen3:8b");
        assert_eq!(
            *loaded.source(crate::config::Key::model),
            Source::Env("OLLAMA_MODEL")
        );
        let bad = ConfigEnv {
            ollama_host: Some("ftp://x".to_owned()),
            ..ConfigEnv::default()
        };
        assert_eq!(
            defaults_with_env(&bad, &Flags::default()).config.endpoint,
            Config::default().endpoint
        );
    }

    #[test]
    fn withdrawn_tools_never_fail() {
        let unavailable = |why: &str| WithdrawalReason::Unavailable(why.to_owned());
        assert_eq!(
            withdrawn_check(
                "run_command",
                Some(Access::Execute),
                &unavailable("no allowed_commands")
            )
            .status,
            Status::Ok
        );
        assert_eq!(
            withdrawn_check(
                "search_text",
                Some(Access::Read),
                &WithdrawalReason::Disabled
            )
            .status,
            Status::Ok
        );
        assert_eq!(
            withdrawn_check(
                "apply_patch",
                Some(Access::Write),
                &unavailable("not a git work tree")
            )
            .status,
            Status::Warn
        );
    }

    #[test]
    fn rows_align_and_remedies_sit_under_them() {
        let checks = vec![
            Check::ok("project", "p is a git work tree"),
            Check::warn("config", "ignoring x", "do y"),
            Check::fail("ollama", "nothing answers", "ollama serve"),
        ];
        let text = render(&checks, false, None);
        let want = "\
ok    project   p is a git work tree
warn  config    ignoring x
                → do y
fail  ollama    nothing answers
                → ollama serve
doctor: 1 problem
";
        assert_eq!(text, want);
        assert_eq!(exit_for(&checks), Exit::Failure);
        let coloured = render(&checks, true, None);
        assert!(
            coloured.starts_with("\x1b[32mok\x1b[0m    project"),
            "{coloured:?}"
        );
        assert!(
            coloured.contains("\x1b[31mfail\x1b[0m  ollama"),
            "{coloured:?}"
        );
    }

    #[test]
    fn the_summary_counts_failures_and_warnings() {
        let ok = Check::ok("a", "x");
        let warn = Check::warn("a", "x", "y");
        let fail = Check::fail("a", "x", "y");
        assert_eq!(summary(std::slice::from_ref(&ok)), "doctor: ready");
        assert_eq!(
            summary(&[ok.clone(), warn.clone(), warn.clone()]),
            "doctor: ready (2 warnings)"
        );
        assert_eq!(summary(&[fail.clone(), warn, fail]), "doctor: 2 problems");
        assert_eq!(exit_for(&[ok]), Exit::Success);
    }

    #[test]
    fn server_text_cannot_drive_the_terminal() {
        let check = Check::ok("ollama", "Ollama 1.0\x1b[2J\u{202e}x\n\u{9b}1m\u{61c}");
        let text = render(&[check], false, None);
        assert!(
            text.contains("1.0\\u{1b}[2J\\u{202e}x\\u{a}\\u{9b}1m\\u{61c}"),
            "{text:?}"
        );
    }
}
