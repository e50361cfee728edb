//! `metron --doctor` against the fake Ollama server: each row's verdict, the exit status,
//! and the rules it keeps (no inference, nothing written, bounded time).
//!
//! Every run gets a hermetic environment from [`metron`]; OLLAMA_HOST points at the fake
//! (or at a port where nothing listens), and a user config, when a test needs one, is a
//! file in the run's temporary HOME named by METRON_CONFIG.

use std::path::Path;
use std::time::{Duration, Instant};

use super::common::*;
use super::fake_ollama::*;

/// A template that offers tools, as an old (pre-0.6.4) server would send it.
const TOOLS_TEMPLATE: &str =
    "{{- if .Tools }}<tools>{{ range .Tools }}{{ . }}{{ end }}</tools>{{ end }}{{ .Prompt }}";

/// `metron --doctor` in `dir`, talking to `url`.
fn doctor(dir: &Path, url: &str) -> Metron {
    metron(dir).args(["--doctor"]).env("OLLAMA_HOST", url)
}

/// `run` with a user config file (METRON_CONFIG, in the run's temporary HOME) holding
/// `json`.
fn with_user_config(run: Metron, json: &str) -> Metron {
    let path = run.home().join("user-config.json");
    std::fs::write(&path, json).expect("write the user config");
    run.env("METRON_CONFIG", path)
}

/// The first row with this status and name, e.g. `row(&run, "fail", "model")`.
#[track_caller]
fn row<'a>(run: &'a Run, status: &str, name: &str) -> &'a str {
    find_row(run, status, name)
        .unwrap_or_else(|| panic!("no `{status} {name}` row in:\n{}", run.stdout))
}

fn find_row<'a>(run: &'a Run, status: &str, name: &str) -> Option<&'a str> {
    run.stdout.lines().find(|line| {
        line.strip_prefix(status)
            .filter(|rest| rest.starts_with(' '))
            .and_then(|rest| rest.trim_start().strip_prefix(name))
            .is_some_and(|rest| rest.starts_with(' '))
    })
}

/// The remedy printed under the first row with this status and name.
#[track_caller]
fn remedy<'a>(run: &'a Run, status: &str, name: &str) -> &'a str {
    let first = row(run, status, name);
    let mut lines = run.stdout.lines().skip_while(|line| *line != first).skip(1);
    lines
        .next()
        .map(str::trim_start)
        .and_then(|line| line.strip_prefix("→ "))
        .unwrap_or_else(|| panic!("no remedy under `{first}` in:\n{}", run.stdout))
}

/// The last line of the report.
fn summary(run: &Run) -> &str {
    run.stdout.lines().last().unwrap_or_default()
}

/// The doctor never asks the model: no request may reach `/api/chat`.
#[track_caller]
fn assert_no_inference(fake: &FakeOllama) {
    let chats: Vec<String> = fake
        .requests()
        .iter()
        .filter(|r| r.path.starts_with("/api/chat"))
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    assert!(chats.is_empty(), "the doctor sent {chats:?}");
}

/// Every entry under `dir`, relative, sorted (`.git` internals excluded).
fn listing(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap_or(&path);
            out.push(rel.display().to_string());
            if path.is_dir() && entry.file_name() != ".git" {
                walk(root, &path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

#[test]
fn a_complete_setup_is_ready_and_only_reads() {
    let project = TestProject::git();
    project.file("src/main.rs", "fn main() {}\n");
    let before = listing(project.root());
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .start();
    let run = doctor(project.root(), &fake.base_url()).run();

    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(summary(&run), "doctor: ready", "{}", run.stdout);
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    assert!(
        !run.stdout.contains('\x1b'),
        "colour on a pipe: {:?}",
        run.stdout
    );
    assert!(row(&run, "ok", "project").contains("is a git work tree"));
    assert!(row(&run, "ok", "config").contains("defaults, no config file"));
    let ollama = row(&run, "ok", "ollama");
    assert!(ollama.contains("Ollama 0.12.10"), "{ollama}");
    assert!(ollama.contains(" ms"), "{ollama}");
    assert!(row(&run, "ok", "model").contains(DEFAULT_MODEL));
    assert!(row(&run, "ok", "tool use").contains("supports tools"));
    let context = row(&run, "ok", "context");
    assert!(context.contains("16384"), "{context}");
    assert!(context.contains("32768"), "{context}");
    assert!(row(&run, "ok", "endpoint").contains("on this machine"));
    let tools = row(&run, "ok", "tools");
    assert!(tools.contains("apply_patch"), "{tools}");
    assert!(tools.contains("schema bytes"), "{tools}");
    assert!(row(&run, "ok", "binaries").contains("no rg, ctags or git binary"));
    assert!(
        !run.stdout
            .lines()
            .any(|l| l.starts_with("fail") || l.starts_with("warn")),
        "{}",
        run.stdout
    );

    assert_no_inference(&fake);
    let asked: Vec<String> = fake
        .requests()
        .iter()
        .map(|r| format!("{} {}", r.method, r.path))
        .collect();
    for wanted in [
        "GET /api/version",
        "GET /api/tags",
        "POST /api/show",
        "GET /api/ps",
    ] {
        assert!(
            asked.iter().any(|a| a == wanted),
            "{wanted} not in {asked:?}"
        );
    }
    assert_eq!(
        listing(project.root()),
        before,
        "the doctor wrote something"
    );
}

#[test]
fn a_missing_model_fails_with_the_pull_command_and_the_installed_models() {
    let project = TestProject::git();
    let fake = FakeOllama::builder()
        .model("llama3.1:8b", &["completion", "tools"], 131072)
        .model("qwen3:8b", &["completion", "tools", "thinking"], 40960)
        .start();
    let run = doctor(project.root(), &fake.base_url()).run();

    assert_eq!(run.code, 1, "{run:?}");
    let model = row(&run, "fail", "model");
    assert!(model.contains(DEFAULT_MODEL), "{model}");
    assert!(model.contains("llama3.1:8b, qwen3:8b"), "{model}");
    let fix = remedy(&run, "fail", "model");
    assert!(
        fix.contains(&format!("ollama pull {DEFAULT_MODEL}")),
        "{fix}"
    );
    assert!(
        row(&run, "warn", "tool use").contains("skipped"),
        "{}",
        run.stdout
    );
    assert_eq!(summary(&run), "doctor: 1 problem");
    assert!(
        !fake
            .requests()
            .iter()
            .any(|r| r.path == "/api/show" && r.body["model"] == DEFAULT_MODEL),
        "asked /api/show for a model that is not installed"
    );
    assert_no_inference(&fake);
}

#[test]
fn a_name_without_a_tag_matches_latest() {
    let project = TestProject::git();
    let fake = FakeOllama::builder()
        .model("llama3.1:latest", &["completion", "tools"], 131072)
        .start();
    let run = doctor(project.root(), &fake.base_url())
        .env("OLLAMA_MODEL", "llama3.1")
        .run();

    assert_eq!(run.code, 0, "{run:?}");
    let model = row(&run, "ok", "model");
    assert!(model.contains("installed as llama3.1:latest"), "{model}");
    assert!(model.contains("$OLLAMA_MODEL"), "{model}");
    assert_no_inference(&fake);
}

#[test]
fn the_model_flag_is_checked_and_named_as_its_layer() {
    let project = TestProject::git();
    let fake = FakeOllama::builder()
        .model("qwen3:8b", &["completion", "tools"], 40960)
        .start();
    let run = doctor(project.root(), &fake.base_url())
        .args(["--model", "qwen3:8b"])
        .env("OLLAMA_MODEL", "missing:1b")
        .run();
    assert_eq!(run.code, 0, "{run:?}");
    let model = row(&run, "ok", "model");
    assert_eq!(
        model,
        "ok    model     qwen3:8b is installed (from --model)"
    );
    assert!(
        row(&run, "ok", "config").contains("overridden by $OLLAMA_HOST and --model"),
        "{}",
        run.stdout
    );
    // A missing model named by the flag fails with the flag in the row and the remedy.
    let run = doctor(project.root(), &fake.base_url())
        .args(["-m", "gone:1b"])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(
        row(&run, "fail", "model").contains("gone:1b (from --model) is not installed"),
        "{}",
        run.stdout
    );
    // qwen3:8b is the one installed model with tool support: the remedy names it.
    assert!(
        remedy(&run, "fail", "model").contains("metron --model qwen3:8b"),
        "{}",
        run.stdout
    );
    assert_no_inference(&fake);
}

#[test]
fn a_model_without_tool_support_fails() {
    let project = TestProject::git();
    let fake = FakeOllama::builder()
        .model("gemma3:4b", &["completion", "vision"], 131072)
        .start();
    let run = doctor(project.root(), &fake.base_url())
        .env("OLLAMA_MODEL", "gemma3:4b")
        .run();

    assert_eq!(run.code, 1, "{run:?}");
    let tools = row(&run, "fail", "tool use");
    assert!(tools.contains("does not support tools"), "{tools}");
    assert!(tools.contains("completion, vision"), "{tools}");
    assert!(remedy(&run, "fail", "tool use").contains("`tools` capability"));
    assert_eq!(summary(&run), "doctor: 1 problem");
    assert_no_inference(&fake);
}

#[test]
fn an_old_server_is_judged_by_the_template() {
    let project = TestProject::git();
    let fake = FakeOllama::builder()
        .version("0.5.7")
        .old_model(DEFAULT_MODEL, TOOLS_TEMPLATE)
        .old_model("plain:1b", "{{ .Prompt }}")
        .start();
    let run = doctor(project.root(), &fake.base_url()).run();
    assert_eq!(run.code, 0, "{run:?}");
    assert!(row(&run, "ok", "ollama").contains("Ollama 0.5.7"));
    let tools = row(&run, "ok", "tool use");
    assert!(tools.contains("guessed from its template"), "{tools}");

    let run = doctor(project.root(), &fake.base_url())
        .env("OLLAMA_MODEL", "plain:1b")
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    let tools = row(&run, "fail", "tool use");
    assert!(tools.contains("guessed from its template"), "{tools}");
    assert_no_inference(&fake);
}

#[test]
fn an_unreachable_server_fails_quickly_and_skips_the_model_checks() {
    let project = TestProject::git();
    let started = Instant::now();
    let run = doctor(project.root(), &refused_url()).run();
    let took = started.elapsed();

    assert_eq!(run.code, 1, "{run:?}");
    // Refused at once, not timed out: the row says which (and the time is only a
    // loose guard, since a loaded machine can be slow to start a process).
    let ollama = row(&run, "fail", "ollama");
    assert!(ollama.contains("nothing answers"), "{ollama}");
    assert!(!ollama.contains("no answer from"), "{ollama}");
    assert!(
        took < Duration::from_secs(10),
        "took {took:?} against a refused port"
    );
    assert!(remedy(&run, "fail", "ollama").contains("ollama serve"));
    assert!(row(&run, "warn", "model").contains("skipped"));
    assert!(find_row(&run, "ok", "model").is_none(), "{}", run.stdout);
    // The checks that need no server still ran.
    row(&run, "ok", "tools");
    row(&run, "ok", "binaries");
    assert_eq!(summary(&run), "doctor: 1 problem");
}

#[test]
fn num_ctx_above_the_trained_length_warns() {
    let project = TestProject::git();
    // A Go file, so find_symbol is offered and the only warning is the context's.
    project.file("main.go", "package main\n");
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .start();
    let run = with_user_config(
        doctor(project.root(), &fake.base_url()),
        r#"{"num_ctx": 65536}"#,
    )
    .run();

    assert_eq!(run.code, 0, "{run:?}");
    let context = row(&run, "warn", "context");
    assert!(context.contains("65536"), "{context}");
    assert!(context.contains("clamps"), "{context}");
    assert_eq!(
        remedy(&run, "warn", "context"),
        "set `num_ctx` to 32768 or less"
    );
    assert!(row(&run, "ok", "config").contains("(your own config, trusted)"));
    assert_eq!(summary(&run), "doctor: ready (1 warning)");
    assert_no_inference(&fake);
}

#[test]
fn outside_git_the_project_warns_and_apply_patch_is_withdrawn() {
    let project = TestProject::new();
    project.file("main.go", "package main\n");
    let fake = FakeOllama::builder().start();
    let run = doctor(project.root(), &fake.base_url()).run();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(row(&run, "warn", "project").contains("not inside a git repository"));
    assert!(remedy(&run, "warn", "project").contains("inside the repository"));
    assert!(row(&run, "warn", "tools").contains("apply_patch withdrawn"));
    assert!(!row(&run, "ok", "tools").contains("apply_patch"));
    assert!(summary(&run).starts_with("doctor: ready"), "{}", run.stdout);
    assert_no_inference(&fake);
}

#[test]
fn a_project_config_asking_for_commands_is_a_warning() {
    let project = TestProject::git();
    project.file(
        ".metron.json",
        r#"{"allowed_commands": ["cargo test"], "max_turns": 5}"#,
    );
    let fake = FakeOllama::builder().start();
    let run = doctor(project.root(), &fake.base_url()).run();

    assert_eq!(run.code, 0, "{run:?}");
    assert!(row(&run, "ok", "config").contains("the project's config, untrusted"));
    let warning = row(&run, "warn", "config");
    assert!(warning.contains("allowed_commands"), "{warning}");
    assert!(remedy(&run, "warn", "config").contains("METRON_ALLOW_PROJECT_COMMANDS"));
    assert!(
        run.stdout
            .lines()
            .any(|l| l.starts_with("ok ") && l.contains("run_command withdrawn")),
        "{}",
        run.stdout
    );
    assert!(run.stderr.is_empty(), "stderr: {}", run.stderr);
    assert_no_inference(&fake);
}

#[test]
fn a_broken_config_fails_but_the_other_checks_still_run() {
    let project = TestProject::git();
    project.file(".metron.json", "{\"model\": \"qwen3:8b\",,}");
    let fake = FakeOllama::builder().start();
    let run = doctor(project.root(), &fake.base_url()).run();

    assert_eq!(run.code, 1, "{run:?}");
    let config = row(&run, "fail", "config");
    assert!(config.contains("not valid JSON"), "{config}");
    assert!(config.contains(".metron.json"), "{config}");
    // It went on with the defaults, and OLLAMA_HOST still counted.
    row(&run, "ok", "ollama");
    assert!(row(&run, "ok", "model").contains(DEFAULT_MODEL));
    row(&run, "ok", "tool use");
    row(&run, "ok", "tools");
    assert_eq!(summary(&run), "doctor: 1 problem");
    assert_no_inference(&fake);
}

#[test]
fn an_unknown_key_is_a_config_failure() {
    let project = TestProject::git();
    let fake = FakeOllama::builder().start();
    let run = with_user_config(
        doctor(project.root(), &fake.base_url()),
        r#"{"modle": "x"}"#,
    )
    .run();

    assert_eq!(run.code, 1, "{run:?}");
    let config = row(&run, "fail", "config");
    assert!(config.contains("unknown key `modle`"), "{config}");
    assert!(config.contains("did you mean `model`?"), "{config}");
    row(&run, "ok", "model");
    assert_no_inference(&fake);
}

#[test]
fn a_remote_endpoint_warns_that_code_leaves_the_machine() {
    // `.invalid` never resolves (RFC 2606), so the probe fails at once instead of waiting
    // on a host that drops packets; the endpoint row does not depend on the answer.
    let project = TestProject::git();
    let started = Instant::now();
    let run = with_user_config(
        metron(project.root()).args(["--doctor"]),
        r#"{"endpoint": "http://metron-doctor.invalid:11434"}"#,
    )
    .run();
    let took = started.elapsed();

    assert_eq!(run.code, 1, "{run:?}");
    let endpoint = row(&run, "warn", "endpoint");
    assert!(endpoint.contains("metron-doctor.invalid"), "{endpoint}");
    assert!(endpoint.contains("another host"), "{endpoint}");
    assert!(endpoint.contains("user-config.json"), "{endpoint}");
    row(&run, "fail", "ollama");
    assert!(
        took < Duration::from_secs(8),
        "took {took:?}: the probe limit is 5 s"
    );
}

#[test]
fn a_refused_remote_endpoint_fails_without_contacting_it() {
    // Under `remote_endpoint: "refuse"` no session would start, so the endpoint row fails
    // and the server is not probed at all (the `.invalid` host could not answer anyway).
    let project = TestProject::git();
    let run = with_user_config(
        metron(project.root()).args(["--doctor"]),
        r#"{"endpoint": "http://metron-doctor.invalid:11434", "remote_endpoint": "refuse"}"#,
    )
    .run();

    assert_eq!(run.code, 1, "{run:?}");
    let endpoint = row(&run, "fail", "endpoint");
    assert!(endpoint.contains("metron-doctor.invalid"), "{endpoint}");
    assert!(
        endpoint.contains("`remote_endpoint` is refuse (from "),
        "{endpoint}"
    );
    assert!(endpoint.contains("will not start"), "{endpoint}");
    let fix = remedy(&run, "fail", "endpoint");
    assert!(fix.contains("on this machine"), "{fix}");
    assert!(fix.contains("metron-doctor.invalid:11434"), "{fix}");
    assert!(row(&run, "warn", "ollama").contains("does not contact it"));
    assert!(find_row(&run, "fail", "ollama").is_none(), "{}", run.stdout);
    row(&run, "ok", "tools");
    assert_eq!(summary(&run), "doctor: 1 problem", "{}", run.stdout);

    // A project's `.metron.json` saying `warn` does not lift the user's own refusal.
    let project = TestProject::git();
    project.file(".metron.json", r#"{"remote_endpoint": "warn"}"#);
    let home_run = metron(project.root())
        .args(["--doctor"])
        .env("OLLAMA_HOST", "http://metron-doctor.invalid:11434");
    let user = home_run.home().join(".metron");
    std::fs::create_dir_all(&user).expect("mkdir ~/.metron");
    std::fs::write(user.join("config.json"), r#"{"remote_endpoint": "refuse"}"#)
        .expect("write the user config");
    let run = home_run.run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(row(&run, "ok", "config").contains("the project's config, untrusted"));
    let endpoint = row(&run, "fail", "endpoint");
    assert!(endpoint.contains("$OLLAMA_HOST"), "{endpoint}");
    assert!(endpoint.contains(".metron/config.json)"), "{endpoint}");
}

#[test]
fn a_local_endpoint_row_shows_the_remote_policy() {
    let project = TestProject::git();
    let fake = FakeOllama::builder().start();
    let run = with_user_config(
        doctor(project.root(), &fake.base_url()),
        r#"{"remote_endpoint": "refuse"}"#,
    )
    .run();
    assert_eq!(run.code, 0, "{run:?}");
    let endpoint = row(&run, "ok", "endpoint");
    assert!(endpoint.contains("on this machine"), "{endpoint}");
    assert!(
        endpoint.contains("`remote_endpoint` is refuse"),
        "{endpoint}"
    );
    row(&run, "ok", "ollama");
    assert_no_inference(&fake);
}

/// A model name from a repository's `.metron.json` is untrusted text: `--doctor` shows its
/// escapes, C1 controls (CSI as U+009B) and the Arabic letter mark instead of sending them
/// to the terminal, on every row that names it.
#[test]
fn a_model_name_from_the_project_config_cannot_drive_the_terminal() {
    let project = TestProject::git();
    project.file(
        ".metron.json",
        r#"{"model": "evil\u001b[2J\u009b2J\u061cx\u009d0;t\u0007"}"#,
    );
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .start();
    let run = doctor(project.root(), &fake.base_url()).run();
    for (name, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        for c in ['\u{1b}', '\u{9b}', '\u{9d}', '\u{61c}', '\u{7}'] {
            assert!(
                !text.contains(c),
                "{name} carries {:?}: {run:?}",
                c.escape_unicode().to_string()
            );
        }
    }
    assert!(
        run.stdout.contains("evil\\u{1b}[2J\\u{9b}2J\\u{61c}x"),
        "{run:?}"
    );
}

/// `--doctor` warns when the trusted config file (`METRON_CONFIG`) lies inside the
/// project, where the model's patches could reach it; outside, it says nothing of it.
#[test]
fn doctor_warns_about_a_trusted_config_inside_the_project() {
    let p = TestProject::git();
    p.file("cfg/metron.json", "{}\n");
    let fake = FakeOllama::start(vec![]);
    let run = doctor(p.root(), &fake.base_url())
        .env("METRON_CONFIG", p.path("cfg/metron.json"))
        .run();
    let line = run
        .stdout
        .lines()
        .find(|l| l.contains("is inside the project"))
        .unwrap_or_else(|| panic!("no warning row:\n{}", run.stdout));
    assert!(line.trim_start().starts_with("warn"), "{line}");
    assert!(line.contains("`cfg/metron.json`"), "{line}");
    let outside = with_user_config(doctor(p.root(), &fake.base_url()), "{}").run();
    assert!(
        !outside.stdout.contains("is inside the project"),
        "{}",
        outside.stdout
    );
}

/// `--doctor` names both config files it read, in layer order, and the user's
/// `allowed_commands` stay in force under a project file that tries to grant its own.
#[test]
fn doctor_names_both_config_files_and_keeps_the_users_commands() {
    let project = TestProject::git();
    project.file(
        ".metron.json",
        r#"{"allowed_commands": ["curl"], "max_turns": 5}"#,
    );
    let fake = FakeOllama::builder().start();
    let run = with_user_config(
        doctor(project.root(), &fake.base_url()),
        r#"{"allowed_commands": ["cargo test"]}"#,
    )
    .run();
    let config = row(&run, "ok", "config");
    let user = config.find("user-config.json (your own config, trusted)");
    let theirs = config.find(".metron.json (the project's config, untrusted");
    assert!(
        matches!((user, theirs), (Some(u), Some(t)) if u < t),
        "both files, the user's first: {config}"
    );
    let warning = row(&run, "warn", "config");
    assert!(warning.contains("allowed_commands"), "{warning}");
    assert!(
        !run.stdout.contains("run_command withdrawn"),
        "the user's commands keep run_command offered: {}",
        run.stdout
    );
    assert_no_inference(&fake);
}

/// `localhost` is answered by metron itself (RFC 6761): in a container with no
/// /etc/hosts the default endpoint must still reach a server on loopback. Emulated with a
/// user and mount namespace in which /etc/hosts is empty; skipped (even in CI: it depends
/// on the kernel allowing unprivileged namespaces, not on a package) when that is refused.
#[test]
fn localhost_resolves_without_etc_hosts() {
    let test = "localhost_resolves_without_etc_hosts";
    let probe = std::process::Command::new("unshare")
        .args(["-rm", "true"])
        .output();
    if !probe.is_ok_and(|out| out.status.success()) {
        eprintln!("SKIP {test}: `unshare -rm` is not allowed here");
        return;
    }
    let project = TestProject::git();
    project.file("src/main.rs", "fn main() {}\n");
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .start();
    let port = fake
        .base_url()
        .rsplit(':')
        .next()
        .unwrap_or_default()
        .trim_end_matches('/')
        .to_owned();
    let empty_hosts = tempfile::NamedTempFile::new().expect("an empty hosts file");
    let (mut command, _home) = hermetic("unshare", project.root());
    command
        .args([
            "-rm",
            "sh",
            "-c",
            "mount --bind \"$1\" /etc/hosts && shift && exec \"$@\"",
            "sh",
        ])
        .arg(empty_hosts.path())
        .args([env!("CARGO_BIN_EXE_metron"), "--doctor"])
        .env("OLLAMA_HOST", format!("http://localhost:{port}"));
    let started = Instant::now();
    let out = command.output().expect("run metron under unshare");
    let took = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "status {:?}\nstdout:\n{stdout}\nstderr:\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("doctor: ready"), "{stdout}");
    assert!(took < Duration::from_secs(5), "took {took:?}");
}

#[test]
fn the_doctor_names_the_sandbox_and_says_when_it_is_off() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![]);
    let on = with_user_config(
        doctor(p.root(), &fake.base_url()),
        r#"{"allowed_commands": ["go test"]}"#,
    )
    .run();
    let line = row(&on, "ok", "sandbox");
    if cfg!(target_os = "linux") {
        assert!(line.contains("Landlock ABI"), "{line}");
    }
    assert!(
        line.contains("commands write only the project") && line.contains("no network"),
        "{line}"
    );
    let off = with_user_config(
        doctor(p.root(), &fake.base_url()),
        r#"{"allowed_commands": ["go test"], "command_sandbox": "off"}"#,
    )
    .run();
    assert!(
        row(&off, "warn", "sandbox").contains("with all of your rights"),
        "{}",
        off.stdout
    );
    assert!(remedy(&off, "warn", "sandbox").contains("command_sandbox"));
}

#[test]
fn a_project_file_cannot_turn_the_sandbox_off() {
    let p = TestProject::git();
    p.file(
        ".metron.json",
        r#"{"command_sandbox": "off", "command_network": ["go test"], "command_writable_paths": ["/"]}"#,
    );
    let fake = FakeOllama::start(vec![]);
    let run = with_user_config(
        doctor(p.root(), &fake.base_url()),
        r#"{"allowed_commands": ["go test"]}"#,
    )
    .run();
    row(&run, "ok", "sandbox");
    for key in [
        "command_sandbox",
        "command_network",
        "command_writable_paths",
    ] {
        assert!(
            run.stderr.contains(key) || run.stdout.contains(key),
            "no warning about the project's {key}: {run:?}"
        );
    }
}
