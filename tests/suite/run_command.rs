//! `run_command`: the allowlist, program resolution outside the project, approval, the
//! environment, the timeout (grandchildren included), and output clipping.
//!
//! Every test passes the parent environment to [`run_command`] explicitly (or sets it on a
//! child `metron` process), so the test process's own environment is never mutated. Helper
//! programs are small `/bin/sh` scripts in a temp directory *outside* the project, put on
//! that explicit PATH. Sleep-based tests use timeouts of a second or two.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use metron::authority::approval::{Approver, Decision, Request};
use metron::testing::run_command;
use metron::tools::{Budgets, CommandLimits, ToolError, Toolbox};
use serde_json::json;

use super::common::*;

/// Records every command it is asked about (and the warnings shown with it), and answers
/// with `answer`.
#[derive(Debug, Clone)]
struct Recorder {
    answer: Decision,
    seen: Arc<Mutex<Vec<Vec<String>>>>,
    warned: Arc<Mutex<Vec<Vec<String>>>>,
}

impl Recorder {
    fn new(answer: Decision) -> Recorder {
        Recorder {
            answer,
            seen: Arc::default(),
            warned: Arc::default(),
        }
    }

    /// The warnings of each question, in order.
    fn warned(&self) -> Vec<Vec<String>> {
        self.warned.lock().expect("lock").clone()
    }

    fn approving() -> Recorder {
        Recorder::new(Decision::Approved)
    }

    fn seen(&self) -> Vec<Vec<String>> {
        self.seen.lock().expect("lock").clone()
    }
}

impl Approver for Recorder {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if let Request::Command { argv, warnings, .. } = request {
            self.seen.lock().expect("lock").push(argv.to_vec());
            self.warned.lock().expect("lock").push(warnings.to_vec());
        }
        self.answer.clone()
    }
}

/// A directory outside the project for helper scripts and the files they write.
struct Outside {
    dir: tempfile::TempDir,
}

impl Outside {
    fn new() -> Outside {
        Outside {
            dir: tempfile::Builder::new()
                .prefix("metron-cmd-")
                .tempdir()
                .expect("create a temp dir"),
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The directory as text (temp paths here never contain whitespace).
    fn str(&self) -> String {
        self.path().to_str().expect("UTF-8 temp path").to_owned()
    }

    /// Writes an executable `/bin/sh` script named `name` and returns its path.
    fn script(&self, name: &str, body: &str) -> PathBuf {
        write_script(&self.path().join(name), body)
    }
}

fn write_script(path: &Path, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).expect("write script");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path.to_path_buf()
}

/// The test process's PATH (read, never changed).
fn real_path() -> String {
    std::env::var("PATH").unwrap_or_else(|_| "/usr/bin:/bin".to_owned())
}

/// A parent environment holding only PATH.
fn path_env(path: &str) -> Vec<(OsString, OsString)> {
    vec![("PATH".into(), path.into())]
}

fn policy(allowed: &[&str]) -> CommandLimits {
    CommandLimits {
        allowed_commands: allowed.iter().map(|s| (*s).to_owned()).collect(),
        command_timeout: Duration::from_secs(10),
        ..CommandLimits::default()
    }
}

/// `policy`, with `outside` writable by the sandboxed command (the helper scripts there
/// leave pid files and markers in it).
fn writing(mut policy: CommandLimits, outside: &Outside) -> CommandLimits {
    policy.sandbox.writable_paths.push(outside.str());
    policy
}

fn toolbox(p: &TestProject, policy: CommandLimits, approver: &Recorder) -> Toolbox {
    Toolbox::new(p.project(), Budgets::default())
        .with_limits(policy)
        .with_approver(Box::new(approver.clone()))
}

/// Runs a command, retrying the rare `Text file busy` a freshly written script can hit
/// while another test thread is forking.
fn run(
    toolbox: &Toolbox,
    command: &str,
    env: &[(OsString, OsString)],
) -> Result<String, ToolError> {
    // Another thread's fork holds the script open until its `exec`, which on a starved
    // machine can take a while: keep trying for up to 5 s.
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match run_command(toolbox, command, env) {
            Err(ToolError::Fault(text))
                if text.contains("Text file busy") && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other,
        }
    }
}

#[track_caller]
fn refused(result: Result<String, ToolError>) -> String {
    match result {
        Err(ToolError::Refused(text)) => text,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn shell_metacharacters_arrive_literally() {
    let p = TestProject::new();
    p.file("a.txt", "x").file("b.txt", "y");
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["echo"]), &approver);
    let command = "echo a;b && c | d $HOME * > out.txt `id` $(id)";
    let text = run(&tb, command, &path_env(&real_path())).expect("runs");
    assert_text_eq(
        &text,
        "$ echo a;b && c | d $HOME * > out.txt `id` $(id)\nexit status 0\na;b && c | d $HOME * > out.txt `id` $(id)\n",
    );
    assert!(!p.path("out.txt").exists(), "no redirection happened");
    let seen = approver.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    let program = Path::new(&seen[0][0]);
    assert!(
        program.is_absolute() && program.ends_with("echo"),
        "{seen:?}"
    );
    assert_eq!(
        seen[0][1..],
        [
            "a;b", "&&", "c", "|", "d", "$HOME", "*", ">", "out.txt", "`id`", "$(id)"
        ]
    );
}

#[test]
fn the_allowlist_matches_whole_tokens_and_refusals_ask_nobody() {
    let p = TestProject::new();
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["echo hello", "true"]), &approver);
    let env = path_env(&real_path());
    assert_eq!(
        run(&tb, "  echo   hello\tworld ", &env).as_deref(),
        Ok("$ echo hello world\nexit status 0\nhello world\n")
    );
    assert_eq!(
        run(&tb, "echo hello", &env).as_deref(),
        Ok("$ echo hello\nexit status 0\nhello\n")
    );
    for bad in [
        "echo",
        "echo hellox",
        "echo bye hello",
        "env echo hello",
        "echoo hello",
        "truex",
    ] {
        let text = refused(run(&tb, bad, &env));
        assert!(
            text.contains("is not an allowed command") && text.contains("`echo hello`, `true`"),
            "{bad}: {text}"
        );
    }
    let text = refused(run(&tb, "   ", &env));
    assert!(text.starts_with("the command is empty"), "{text}");
    assert_eq!(
        approver.seen().len(),
        2,
        "refused commands are never put to the user"
    );
}

#[test]
fn without_allowed_commands_the_tool_is_not_offered() {
    let p = TestProject::new();
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&[]), &approver);
    let availability = tb.availability();
    let (_, status) = availability
        .iter()
        .find(|(spec, _)| spec.name == "run_command")
        .expect("run_command is registered");
    let reason = status.clone().expect_err("withdrawn");
    assert!(reason.contains("allowed_commands"), "{reason}");
    let text = refused(tb.call("run_command", json!({"command": "echo hi"})));
    assert_eq!(text, reason);
    assert!(approver.seen().is_empty());

    // With an allowlist, the model's call goes through the registry and its schema.
    let tb = toolbox(&p, policy(&["true"]), &approver);
    assert!(matches!(
        tb.call("run_command", json!({"cmd": "true"})),
        Err(ToolError::BadArguments(_))
    ));
    assert!(tb.call("run_command", json!({"command": "true"})).is_ok());
}

#[test]
fn programs_inside_the_project_are_never_run() {
    let p = TestProject::new();
    let outside = Outside::new();
    let marker = outside.path().join("shadow-ran");
    let shadow = format!("touch {}; echo SHADOW", marker.display());
    write_script(&p.path("bin/echo"), &shadow);
    write_script(&p.path("echo"), &shadow);
    write_script(&p.path("bin/only-here"), &shadow);
    // A directory outside whose `echo` is a symlink into the project.
    let sneaky = outside.path().join("sneaky");
    std::fs::create_dir_all(&sneaky).expect("mkdir");
    std::os::unix::fs::symlink(p.path("bin/echo"), sneaky.join("echo")).expect("symlink");
    // A directory outside that is itself a symlink to one inside.
    std::os::unix::fs::symlink(p.path("bin"), outside.path().join("linked-bin")).expect("symlink");

    let approver = Recorder::approving();
    let tb = toolbox(
        &p,
        policy(&["echo", "only-here", "no-such-program-here"]),
        &approver,
    );
    let path = format!(
        "{}:{}:{}:bin:.::{}:{}",
        p.path("bin").display(),
        outside.path().join("linked-bin").display(),
        sneaky.display(),
        p.root().display(),
        real_path()
    );
    let env = path_env(&path);
    let text = run(&tb, "echo hi", &env).expect("runs");
    assert_text_eq(&text, "$ echo hi\nexit status 0\nhi\n");
    assert!(!marker.exists(), "the project's echo ran");
    let program = PathBuf::from(&approver.seen()[0][0]);
    let root = p.root().canonicalize().expect("root");
    let real = program.canonicalize().expect("program");
    assert!(!real.starts_with(&root), "{program:?}");

    let text = refused(run(&tb, "only-here", &env));
    assert!(
        text.contains("`only-here` was found only inside the project (at bin/only-here)"),
        "{text}"
    );
    let text = refused(run(&tb, "no-such-program-here", &env));
    assert!(text.contains("was not found on PATH"), "{text}");
    assert_eq!(
        approver.seen().len(),
        1,
        "only the real echo was put to the user"
    );
    assert!(!marker.exists());
}

#[test]
fn a_program_given_as_a_path_is_refused() {
    let p = TestProject::new();
    write_script(&p.path("run.sh"), "echo ran");
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["./run.sh", "/usr/bin/env"]), &approver);
    for command in ["./run.sh", "/usr/bin/env"] {
        let text = refused(run(&tb, command, &path_env(&real_path())));
        assert!(text.contains("is a path"), "{command}: {text}");
    }
    assert!(approver.seen().is_empty());
}

#[test]
fn each_run_is_approved_and_a_no_is_final() {
    let p = TestProject::new();
    let outside = Outside::new();
    let marker = outside.path().join("ran");
    let script = outside.script(
        "mark",
        &format!("touch {}; echo marked \"$@\"", marker.display()),
    );
    let env = path_env(&format!("{}:{}", outside.str(), real_path()));

    let declined = Recorder::new(Decision::Declined(None));
    let tb = toolbox(&p, writing(policy(&["mark"]), &outside), &declined);
    let text = refused(run(&tb, "mark  now", &env));
    assert_eq!(
        text,
        "The user declined to run `mark now`. Do not retry it; explain what you wanted to check and ask how to proceed."
    );
    assert!(!marker.exists());

    let nobody = Recorder::new(Decision::Unanswerable(
        "nobody here; rerun with --yes".into(),
    ));
    let tb = toolbox(&p, writing(policy(&["mark"]), &outside), &nobody);
    assert_eq!(
        refused(run(&tb, "mark now", &env)),
        "nobody here; rerun with --yes"
    );
    assert!(!marker.exists());

    let approver = Recorder::approving();
    let tb = toolbox(&p, writing(policy(&["mark"]), &outside), &approver);
    let text = run(&tb, "mark now", &env).expect("runs");
    assert_text_eq(&text, "$ mark now\nexit status 0\nmarked now\n");
    assert!(marker.exists());
    let expected = vec![script.to_str().expect("UTF-8").to_owned(), "now".to_owned()];
    for recorder in [&declined, &nobody, &approver] {
        assert_eq!(
            recorder.seen(),
            vec![expected.clone()],
            "the question shows the absolute program"
        );
    }
}

#[test]
fn exit_status_and_interleaved_output_are_data() {
    let p = TestProject::new();
    let outside = Outside::new();
    outside.script("fail", "echo out; echo err >&2; echo out2; exit 3");
    outside.script("die", "echo dying; kill -TERM $$");
    outside.script("where", "pwd; cat; echo stdin-was-empty");
    let env = path_env(&format!("{}:{}", outside.str(), real_path()));
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["fail", "die", "where"]), &approver);
    assert_eq!(
        run(&tb, "fail", &env).as_deref(),
        Ok("$ fail\nexit status 3\nout\nerr\nout2\n")
    );
    assert_eq!(
        run(&tb, "die", &env).as_deref(),
        Ok("$ die\nkilled by signal 15\ndying\n")
    );
    let root = p.root().canonicalize().expect("root");
    assert_eq!(
        run(&tb, "where", &env),
        Ok(format!(
            "$ where\nexit status 0\n{}\nstdin-was-empty\n",
            root.display()
        ))
    );
}

/// True once `pid` is gone: no `/proc` entry, or a zombie nobody has reaped yet.
fn is_gone(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

#[track_caller]
fn assert_gone_soon(pid: u32, what: &str) {
    let start = Instant::now();
    while !is_gone(pid) {
        assert!(
            start.elapsed() < Duration::from_secs(3),
            "{what} (pid {pid}) survived"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn read_pid(path: &Path) -> u32 {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
        .trim()
        .parse()
        .expect("a pid")
}

#[cfg(target_os = "linux")]
#[test]
fn a_timeout_kills_the_whole_process_group() {
    let p = TestProject::new();
    let outside = Outside::new();
    outside.script(
        "spawner",
        "echo $$ > \"$1/child\"; sleep 300 & echo $! > \"$1/grandchild\"; echo started; sleep 300",
    );
    let env = path_env(&format!("{}:{}", outside.str(), real_path()));
    let approver = Recorder::approving();
    let tb = toolbox(
        &p,
        CommandLimits {
            command_timeout: Duration::from_secs(3),
            ..writing(policy(&["spawner"]), &outside)
        },
        &approver,
    );
    let start = Instant::now();
    let text = run(&tb, &format!("spawner {}", outside.str()), &env).expect("runs");
    let took = start.elapsed();
    assert_text_eq(
        &text,
        &format!(
            "$ spawner {}\ntimed out after 3 s; killed\nstarted\n",
            outside.str()
        ),
    );
    // Far below the 300 s the command would otherwise take, with slack for a loaded
    // machine.
    assert!(took < Duration::from_secs(15), "took {took:?}");
    assert_gone_soon(read_pid(&outside.path().join("child")), "the child");
    assert_gone_soon(
        read_pid(&outside.path().join("grandchild")),
        "the grandchild",
    );
}

#[cfg(target_os = "linux")]
#[test]
fn background_processes_do_not_outlive_the_command() {
    // The command exits at once, but a background process still holds the output pipe.
    let p = TestProject::new();
    let outside = Outside::new();
    outside.script(
        "leaver",
        "sleep 300 & echo $! > \"$1/grandchild\"; echo bye",
    );
    let env = path_env(&format!("{}:{}", outside.str(), real_path()));
    let approver = Recorder::approving();
    let tb = toolbox(&p, writing(policy(&["leaver"]), &outside), &approver);
    let start = Instant::now();
    let text = run(&tb, &format!("leaver {}", outside.str()), &env).expect("runs");
    let took = start.elapsed();
    assert_text_eq(
        &text,
        &format!("$ leaver {}\nexit status 0\nbye\n", outside.str()),
    );
    // The background `sleep 300` holds the pipe; the command is done long before.
    assert!(took < Duration::from_secs(5), "took {took:?}");
    assert_gone_soon(
        read_pid(&outside.path().join("grandchild")),
        "the background sleep",
    );
}

#[test]
fn output_is_clipped_to_head_and_tail_at_the_budget_edges() {
    let p = TestProject::new();
    let outside = Outside::new();
    let data: Vec<u8> = (0..400).map(|i| b"abcdefghij\n"[i % 11]).collect();
    let file = outside.path().join("data.txt");
    std::fs::write(&file, &data).expect("write data");
    let approver = Recorder::approving();
    let budget = 400;
    let tb = toolbox(
        &p,
        CommandLimits {
            max_command_output_bytes: budget,
            ..policy(&["head -c"])
        },
        &approver,
    );
    let env = path_env(&real_path());
    // The output's share of the budget: what is left after the echoed command, the
    // status line and the cut line are reserved. Found from the largest output kept whole.
    let command = |n: usize| format!("head -c {n} {}", file.display());
    let header = |n: usize| format!("$ {}\nexit status 0\n", command(n));
    let whole = |n: usize| {
        let text = run(&tb, &command(n), &env).expect("runs");
        !text.contains(" cut ...]")
    };
    let (mut fits, mut cut) = (1, data.len());
    assert!(whole(fits) && !whole(cut));
    while cut - fits > 1 {
        let mid = (fits + cut) / 2;
        if whole(mid) { fits = mid } else { cut = mid }
    }
    let share = fits;
    assert!(share >= 100, "the output keeps a useful share: {share}");
    for n in [share - 1, share, share + 1, data.len()] {
        let text = run(&tb, &command(n), &env).expect("runs");
        assert!(
            text.len() <= budget,
            "{} bytes > {budget}: {text}",
            text.len()
        );
        let body = text
            .strip_prefix(&header(n))
            .unwrap_or_else(|| panic!("header: {text}"));
        let out = String::from_utf8(data[..n].to_vec()).expect("ASCII");
        let expected = if n <= share {
            out
        } else {
            let (head, tail) = (&out[..share / 2], &out[n - (share - share / 2)..]);
            let newline = if head.ends_with('\n') { "" } else { "\n" };
            let cut = n - share;
            let unit = if cut == 1 { "byte" } else { "bytes" };
            format!("{head}{newline}[... {cut} {unit} cut ...]\n{tail}")
        };
        assert_text_eq(body, &expected);
    }
}

#[test]
fn the_echoed_command_counts_against_the_output_budget() {
    let p = TestProject::new();
    let outside = Outside::new();
    let data = "0123456789\n".repeat(200);
    let file = outside.path().join("data.txt");
    std::fs::write(&file, &data).expect("write data");
    let env = path_env(&real_path());
    let word = "x".repeat(9);
    let long: String = vec![word.as_str(); 200].join(" ");
    let accents = "é".repeat(1000);
    for budget in [300, 1000] {
        let approver = Recorder::approving();
        let tb = toolbox(
            &p,
            CommandLimits {
                max_command_output_bytes: budget,
                ..policy(&["echo", "cat"])
            },
            &approver,
        );
        for command in [
            format!("echo {long}"),
            format!("echo {accents}"),
            format!("cat {} {long}", file.display()),
        ] {
            let text = run(&tb, &command, &env).expect("runs");
            assert!(
                text.len() <= budget,
                "{budget}: {} bytes for a {}-byte command: {text}",
                text.len(),
                command.len()
            );
            let first = text.lines().next().unwrap_or_default();
            let program = command.split(' ').next().unwrap_or_default();
            assert!(first.starts_with(&format!("$ {program} ")), "{first}");
            assert!(first.contains(" [... command clipped: "), "{first}");
            assert!(first.ends_with(" bytes cut ...]"), "{first}");
            assert!(
                text.lines()
                    .nth(1)
                    .is_some_and(|l| l.starts_with("exit status ")),
                "{text}"
            );
        }
        // A short command is echoed whole, as before.
        let text = run(&tb, "echo short", &env).expect("runs");
        assert_eq!(text, "$ echo short\nexit status 0\nshort\n");
    }
}

#[test]
fn output_that_is_not_utf8_still_fits_the_budget() {
    // Each invalid byte is shown as U+FFFD, three bytes of text: a Latin-1 or binary file
    // must not turn a 4000-byte budget into a 12 KB result.
    let p = TestProject::new();
    let outside = Outside::new();
    let env = path_env(&real_path());
    let latin1: Vec<u8> = (0..20_000)
        .map(|i| [b'a', 0xe9, b'\n', 0xff][i % 4])
        .collect();
    let binary: Vec<u8> = (0..20_000u32).map(|i| (i % 256) as u8).collect();
    let all_invalid = vec![0xffu8; 20_000];
    for (name, data) in [
        ("latin1", &latin1),
        ("binary", &binary),
        ("ff", &all_invalid),
    ] {
        let file = outside.path().join(name);
        std::fs::write(&file, data).expect("write data");
        for budget in [170, 200, 333, 1000, 4000, 12_000] {
            for length in [10, 100, 1000, data.len()] {
                let approver = Recorder::approving();
                let tb = toolbox(
                    &p,
                    CommandLimits {
                        max_command_output_bytes: budget,
                        ..policy(&["head -c"])
                    },
                    &approver,
                );
                let command = format!("head -c {length} {}", file.display());
                let text = run(&tb, &command, &env).expect("runs");
                assert!(
                    text.len() <= budget,
                    "{name}, {length} bytes, budget {budget}: {} bytes of result",
                    text.len()
                );
                assert!(text.starts_with("$ head -c "), "{text}");
                if length == data.len() {
                    assert!(text.contains(" bytes cut ...]"), "{name} {budget}: {text}");
                }
                if length == data.len() && budget >= 1000 {
                    assert!(text.contains('\u{fffd}'), "{name} {budget}: {text}");
                }
            }
        }
    }
}

#[test]
fn huge_output_is_clipped_in_bounded_memory() {
    let p = TestProject::new();
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["seq"]), &approver);
    let env = path_env(&real_path());
    let start = Instant::now();
    let (text, peak) = alloc_meter::peak_during(|| run(&tb, "seq 1 5000000", &env));
    let took = start.elapsed();
    let text = text.expect("runs");
    // seq prints 38,888,896 bytes; the whole result, header and cut line included, is
    // kept to the 4,000-byte budget.
    let header = "$ seq 1 5000000\nexit status 0\n";
    assert!(text.starts_with(&format!("{header}1\n2\n3\n")), "{text}");
    assert!(text.ends_with("4999999\n5000000\n"), "{text}");
    assert!(text.len() <= 4000, "{} bytes", text.len());
    let (head, rest) = text[header.len()..].split_once("[... ").expect("cut line");
    let (cut, tail) = rest.split_once(" bytes cut ...]\n").expect("cut line");
    let cut: usize = cut.parse().expect("a count");
    // Plus one when the head ended mid-line and a line break was put before the cut line.
    let accounted = head.len() + cut + tail.len();
    assert!(
        [38_888_896, 38_888_897].contains(&accounted),
        "{accounted}: {text}"
    );
    assert!(peak < 512 * 1024, "peak heap {peak} bytes");
    eprintln!("seq 1 5000000: {took:?}, peak heap {peak} bytes");
    assert!(took < Duration::from_secs(20), "took {took:?}");
}

#[test]
fn the_environment_holds_only_the_safe_set_and_named_passthrough() {
    let p = TestProject::new();
    let outside = Outside::new();
    let approver = Recorder::approving();
    let tb = toolbox(
        &p,
        CommandLimits {
            command_env_passthrough: vec!["GOFLAGS".into()],
            ..policy(&["env"])
        },
        &approver,
    );
    let path = format!(
        "{}:relative/bin:{}/bin:{}",
        outside.str(),
        p.root().display(),
        real_path()
    );
    let parent: Vec<(OsString, OsString)> = [
        ("PATH", path.as_str()),
        ("HOME", "/nonexistent/home"),
        ("USER", "someone"),
        ("LC_ALL", "C"),
        ("GITHUB_TOKEN", "ghp_secret"),
        ("AWS_SECRET_ACCESS_KEY", "aws_secret"),
        ("SSH_AUTH_SOCK", "/nonexistent/agent"),
        ("GOFLAGS", "-count=1"),
        ("PAGER", "less"),
        ("VIRTUAL_ENV", "/nonexistent/venv"),
        ("CONDA_PREFIX", "/nonexistent/conda"),
    ]
    .iter()
    .map(|(k, v)| ((*k).into(), (*v).into()))
    .collect();
    let text = run(&tb, "env", &parent).expect("runs");
    let body = text.strip_prefix("$ env\nexit status 0\n").expect("header");
    let mut vars: Vec<(&str, &str)> = body.lines().filter_map(|l| l.split_once('=')).collect();
    vars.sort();
    // The session's private temp dir, the same under all three names.
    let temps: Vec<(&str, &str)> = vars
        .iter()
        .copied()
        .filter(|(k, _)| ["TEMP", "TMP", "TMPDIR"].contains(k))
        .collect();
    assert_eq!(temps.len(), 3, "{body}");
    assert!(temps.iter().all(|(_, v)| *v == temps[0].1), "{temps:?}");
    assert!(temps[0].1.contains("/metron-tmp-"), "{temps:?}");
    vars.retain(|(k, _)| !["TEMP", "TMP", "TMPDIR"].contains(k));
    // The command's PATH: the absolute entries that exist outside the project, each once.
    let mut expected_path: Vec<String> = Vec::new();
    for dir in std::iter::once(outside.str()).chain(real_path().split(':').map(str::to_owned)) {
        if dir.starts_with('/') && Path::new(&dir).is_dir() && !expected_path.contains(&dir) {
            expected_path.push(dir);
        }
    }
    let expected_path = expected_path.join(":");
    let mut expected = vec![
        ("EDITOR", "false"),
        ("GIT_EDITOR", "false"),
        ("GIT_PAGER", "cat"),
        ("GIT_TERMINAL_PROMPT", "0"),
        ("GOFLAGS", "-count=1"),
        ("HOME", "/nonexistent/home"),
        ("LC_ALL", "C"),
        ("PAGER", "cat"),
        ("PATH", expected_path.as_str()),
        ("USER", "someone"),
        ("VIRTUAL_ENV", "/nonexistent/venv"),
        ("VISUAL", "false"),
    ];
    expected.sort();
    assert_eq!(vars, expected);
}

// ---- the command line ----

fn write_user_config(home: &Path, text: &str) {
    let dir = home.join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir .metron");
    std::fs::write(dir.join("config.json"), text).expect("write config");
}

/// `metron ARGS` in `p` with a trusted config allowing `allowed`.
fn metron_allowing(p: &TestProject, allowed: &str, args: &[&str]) -> Metron {
    let m = metron(p.root()).args(args);
    write_user_config(
        m.home(),
        &format!(r#"{{"allowed_commands": {allowed}, "command_timeout_seconds": 10}}"#),
    );
    m
}

#[test]
fn cli_asks_or_needs_yes() {
    let p = TestProject::git();
    let args = r#"{"command":"echo hi  there"}"#;
    let allow = r#"["echo"]"#;
    let ok = "$ echo hi there\nexit status 0\nhi there\n";

    // stdin is a pipe, not a terminal: nobody can answer, so it fails closed.
    let run = metron_allowing(&p, allow, &["tool", "run_command", args]).run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("--yes"), "{run:?}");
    assert!(!run.stdout.contains("hi there\n"), "{run:?}");

    for argv in [
        ["--yes", "tool", "run_command", args],
        ["tool", "--yes", "run_command", args],
        ["tool", "run_command", "--yes", args],
        ["tool", "run_command", args, "--yes"],
    ] {
        let run = metron_allowing(&p, allow, &argv).run();
        assert_eq!(
            (run.code, run.stdout.as_str(), run.stderr.as_str()),
            (0, ok, ""),
            "{argv:?}"
        );
    }
    let run = metron_allowing(&p, allow, &["--yes", "tool", "run_command", "-"])
        .stdin(args)
        .run();
    assert_eq!((run.code, run.stdout.as_str()), (0, ok), "{run:?}");

    // A non-zero exit is still a result.
    let run = metron_allowing(
        &p,
        r#"["false"]"#,
        &["--yes", "tool", "run_command", r#"{"command":"false"}"#],
    )
    .run();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "$ false\nexit status 1\n(no output)\n"),
        "{run:?}"
    );
    // Not allowed: a refusal, exit 1.
    let run = metron_allowing(
        &p,
        allow,
        &["--yes", "tool", "run_command", r#"{"command":"ls"}"#],
    )
    .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("is not an allowed command"), "{run:?}");
}

#[test]
fn cli_without_allowed_commands_refuses_and_a_project_cannot_grant_them() {
    let p = TestProject::git();
    let args = r#"{"command":"echo hi"}"#;
    let run = metron(p.root())
        .args(["--yes", "tool", "run_command", args])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("run_command is off"), "{run:?}");

    p.file(".metron.json", r#"{"allowed_commands": ["echo"]}"#);
    let run = metron(p.root())
        .args(["--yes", "tool", "run_command", args])
        .run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.starts_with("run_command is off"), "{run:?}");
    assert!(
        run.stderr.contains("ignoring `allowed_commands`"),
        "{run:?}"
    );

    let run = metron(p.root())
        .args(["--yes", "tool", "run_command", args])
        .env("METRON_ALLOW_PROJECT_COMMANDS", "1")
        .run();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "$ echo hi\nexit status 0\nhi\n"),
        "{run:?}"
    );
}

#[test]
fn cli_credentials_in_metrons_environment_do_not_reach_the_command() {
    let p = TestProject::git();
    let run = metron_allowing(
        &p,
        r#"["env"]"#,
        &["--yes", "tool", "run_command", r#"{"command":"env"}"#],
    )
    .env("GITHUB_TOKEN", "ghp_secret")
    .env("AWS_SECRET_ACCESS_KEY", "aws_secret")
    .env("AWS_PROFILE", "prod")
    .env("LC_MESSAGES", "C")
    .run();
    assert_eq!(run.code, 0, "{run:?}");
    let mut names: Vec<&str> = run
        .stdout
        .lines()
        .skip(2)
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    names.sort();
    // What the test process itself has of the safe set (read, never changed).
    let mut expected: Vec<String> = std::env::vars_os()
        .filter_map(|(k, _)| k.into_string().ok())
        .filter(|k| {
            ["USER", "LANG", "TERM", "TMPDIR", "VIRTUAL_ENV"].contains(&k.as_str())
                || k.starts_with("LC_")
        })
        .collect();
    expected.extend(
        [
            "PATH",
            "HOME",
            "TMPDIR",
            "TMP",
            "TEMP",
            "LC_MESSAGES",
            "GIT_TERMINAL_PROMPT",
            "PAGER",
            "GIT_PAGER",
            "EDITOR",
            "VISUAL",
            "GIT_EDITOR",
        ]
        .map(str::to_owned),
    );
    expected.sort();
    expected.dedup();
    assert_eq!(names, expected, "{}", run.stdout);
    assert!(
        !run.stdout.contains("secret") && !run.stdout.contains("prod"),
        "{}",
        run.stdout
    );
}

/// `metron tool run_command` for `command` on a pseudo-terminal (util-linux `script`),
/// with `echo` allowed, once its question is on screen.
fn cli_command_at_its_question(p: &TestProject, command: &str) -> super::common::Live {
    use super::common::{Live, hermetic, metron_in_script};
    let args = json!({ "command": command }).to_string();
    let (mut script, home) = hermetic("script", p.root());
    write_user_config(home.path(), r#"{"allowed_commands": ["echo"]}"#);
    metron_in_script(&mut script, &["tool", "run_command", &args]);
    let live = Live::start(script, home);
    live.wait_stdout("Run this command? [y/N]", 1);
    live
}

#[cfg(target_os = "linux")]
#[test]
fn cli_on_a_terminal_asks_and_only_yes_runs() {
    // The answer is typed once the question is on screen (typed ahead, the terminal's
    // echo could land anywhere).
    if !super::common::script_available() {
        return skip(
            "cli_on_a_terminal_asks_and_only_yes_runs",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    for (answer, code, needle) in [
        ("y\r", 0, "$ echo via tty\nexit status 0\nvia tty\n"),
        ("n\r", 1, "The user declined to run `echo via tty`."),
        ("\r", 1, "The user declined to run `echo via tty`."),
    ] {
        let mut live = cli_command_at_its_question(&p, "echo via tty");
        live.send(answer);
        let run = live.finish();
        let shown = run.stdout.replace('\r', "");
        assert_eq!(run.code, code, "{answer:?}: {shown}");
        assert!(
            shown.contains("command: /") && shown.contains("/echo via tty\n"),
            "the question shows the absolute program: {shown}"
        );
        assert!(shown.contains(needle), "{answer:?}: {shown}");
    }
}

#[test]
fn ctrl_c_at_the_cli_question_declines_and_exits_130() {
    if !super::common::script_available() {
        return skip(
            "ctrl_c_at_the_cli_question_declines_and_exits_130",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    let mut live = cli_command_at_its_question(&p, "echo never");
    // The Ctrl-C key: the terminal turns it into SIGINT, which metron catches.
    live.send("\x03");
    let run = live.finish();
    let shown = run.stdout.replace('\r', "");
    assert_eq!(run.code, 130, "{shown}");
    assert!(
        shown.contains("The user declined to run `echo never`."),
        "{shown}"
    );
    assert!(!shown.contains("exit status"), "{shown}");
}

// ---- programs the repository configures ----

/// Runs `command` (allowed as `program`) in a fresh project holding `files`, with a fake
/// `program` outside the project first on PATH, and returns the warnings of its question.
fn warnings_for(program: &str, command: &str, files: &[(&str, &str)]) -> Vec<String> {
    let p = TestProject::new();
    for (path, text) in files {
        p.file(path, text);
    }
    let outside = Outside::new();
    outside.script(program, "echo fake \"$@\"");
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&[program]), &approver);
    let env = path_env(&format!("{}:{}", outside.str(), real_path()));
    let text = run(&tb, command, &env).expect("runs");
    assert!(text.contains("exit status 0\nfake"), "{text}");
    // One question per attempt: `run` tries again (and so asks again) when the script was
    // busy being written, which a loaded machine makes happen. Every question must carry
    // the same warnings.
    let warned = approver.warned();
    assert!(
        !warned.is_empty() && warned.windows(2).all(|pair| pair[0] == pair[1]),
        "{warned:?}"
    );
    warned[0].clone()
}

#[test]
fn the_question_warns_when_the_repository_configures_the_allowed_program() {
    let chose = "; approving runs a program the repository chose";
    for (program, files, expected) in [
        (
            "cargo",
            [(
                "rust-toolchain.toml",
                "[toolchain]\npath = \"/abs/project/tools\"\n",
            )],
            "this repository configures cargo: rust-toolchain.toml line 2 sets `path` (path = \"/abs/project/tools\")",
        ),
        (
            "cargo",
            [("rust-toolchain", "/abs/project/tools\n")],
            "rust-toolchain line 1 sets a toolchain by path (/abs/project/tools)",
        ),
        (
            "rustfmt",
            [("rust-toolchain", "[toolchain]\n path = 'tools'\n")],
            "this repository configures cargo: rust-toolchain line 2 sets `path`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[target.x86_64-unknown-linux-gnu]\nrunner = \"tools/run\"\n",
            )],
            ".cargo/config.toml line 2 sets `runner`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "target.'cfg(unix)'.runner = 'tools/run'\n",
            )],
            ".cargo/config.toml line 1 sets `runner`",
        ),
        (
            "cargo",
            [(
                ".cargo/config",
                "[build]\njobs = 2\nrustc-wrapper = \"tools/wrap\"\n",
            )],
            ".cargo/config line 3 sets `rustc-wrapper`",
        ),
        (
            "cargo",
            [(".cargo/config.toml", "[build]\nrustc = \"tools/rustc\"\n")],
            ".cargo/config.toml line 2 sets `rustc`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[build]\nrustc-workspace-wrapper = \"w\"\n",
            )],
            "sets `rustc-workspace-wrapper`",
        ),
        (
            "cargo",
            [(".cargo/config.toml", "[alias]\nfmt = \"run --bin evil\"\n")],
            ".cargo/config.toml line 1 sets `[alias]`",
        ),
        (
            "make",
            [("Makefile", "all:\n\techo hi\nSHELL := ./tools/sh\n")],
            "this repository configures make: Makefile line 3 sets `SHELL` (SHELL := ./tools/sh)",
        ),
        (
            "make",
            [("GNUmakefile", "override SHELL = tools/sh\n")],
            "GNUmakefile line 1 sets `SHELL`",
        ),
        (
            "npm",
            [(
                ".npmrc",
                "registry=https://example.invalid/\nscript-shell=./tools/sh\n",
            )],
            "this repository configures npm: .npmrc line 2 sets `script-shell`",
        ),
        (
            "yarn",
            [(".yarnrc.yml", "yarnPath: .yarn/releases/yarn-4.cjs\n")],
            ".yarnrc.yml line 1 sets `yarnPath`",
        ),
        (
            "yarn",
            [(".yarnrc", "yarn-path \"./tools/yarn.js\"\n")],
            ".yarnrc line 1 sets `yarn-path`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[build]\nrustflags = [\"-Clinker=./ld\"]\n",
            )],
            ".cargo/config.toml line 2 sets `rustflags`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[target.x86_64-unknown-linux-gnu]\nrustflags = [\n  \"-Clink-arg=-B./tools\",\n]\n",
            )],
            ".cargo/config.toml line 2 sets `rustflags`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[build]\nrustdocflags = [\"-Clinker=./ld\"]\n",
            )],
            ".cargo/config.toml line 2 sets `rustdocflags`",
        ),
        (
            "cargo",
            [(
                ".cargo/config.toml",
                "[target.x86_64-unknown-linux-gnu]\n\"runn\\u0065r\" = \"./x\"\n",
            )],
            // The escape is decoded as TOML does: the key is `runner`.
            ".cargo/config.toml line 2 sets `runner`",
        ),
        (
            "cargo",
            [(".cargo/config.toml", "\"runn\\q\" = \"./x\"\n")],
            ".cargo/config.toml line 1 sets a key spelled with an escape",
        ),
        (
            "make",
            [("Makefile", "all:\n\techo hi\ninclude other.mk\n")],
            "Makefile line 3 sets `include` of another makefile, which may set SHELL",
        ),
        (
            "make",
            [("Makefile", "-include local.mk\n")],
            "Makefile line 1 sets `-include` of another makefile",
        ),
        (
            "make",
            [("makefile", "sinclude local.mk\n")],
            "makefile line 1 sets `sinclude` of another makefile",
        ),
        (
            "npm",
            [(".npmrc", "git=./tools/git\n")],
            ".npmrc line 1 sets `git`",
        ),
        (
            "npm",
            [(".npmrc", "node-gyp=./tools/gyp\n")],
            ".npmrc line 1 sets `node-gyp`",
        ),
        (
            "pnpm",
            [(".npmrc", "pnpmfile=./hooks.cjs\n")],
            ".npmrc line 1 sets `pnpmfile`",
        ),
        (
            "npm",
            [(".npmrc", "userconfig=./other\n")],
            ".npmrc line 1 sets `userconfig`",
        ),
        (
            "npm",
            [(".npmrc", "globalconfig=./other\n")],
            ".npmrc line 1 sets `globalconfig`",
        ),
    ] {
        let command = format!("{program} build");
        let warnings = warnings_for(program, &command, &files);
        assert_eq!(warnings.len(), 1, "{program} {files:?}: {warnings:?}");
        assert!(
            warnings[0].contains(expected) && warnings[0].ends_with(chose),
            "{program} {files:?}: {warnings:?}"
        );
    }
    // Several files: one warning each.
    let warnings = warnings_for(
        "cargo",
        "cargo test",
        &[
            ("rust-toolchain.toml", "[toolchain]\npath = \"tools\"\n"),
            (".cargo/config.toml", "[target.x]\nlinker = \"tools/ld\"\n"),
        ],
    );
    assert_eq!(warnings.len(), 2, "{warnings:?}");
}

#[test]
fn benign_configuration_and_other_programs_are_not_warned_about() {
    for (program, files) in [
        ("cargo", vec![]),
        (
            "cargo",
            vec![(
                "rust-toolchain.toml",
                "[toolchain]\nchannel = \"1.80.0\"\ncomponents = [\"clippy\"]\n",
            )],
        ),
        ("cargo", vec![("rust-toolchain", "stable\n")]),
        (
            "cargo",
            vec![(
                ".cargo/config.toml",
                "# runner = \"x\"\n[build]\njobs = 2\n[target.x]\n# rustflags = [\"-Dwarnings\"]\n",
            )],
        ),
        ("make", vec![("Makefile", "all:\n\t$(SHELL) -c true\n")]),
        (
            "npm",
            vec![(".npmrc", "registry=https://example.invalid/\n")],
        ),
        // A family's files do not concern another family's programs.
        (
            "make",
            vec![("rust-toolchain.toml", "[toolchain]\npath = \"tools\"\n")],
        ),
        (
            "echo",
            vec![
                ("Makefile", "SHELL = tools/sh\n"),
                (".npmrc", "script-shell=x\n"),
            ],
        ),
    ] {
        let command = format!("{program} x");
        let warnings = warnings_for(program, &command, &files);
        assert!(warnings.is_empty(), "{program} {files:?}: {warnings:?}");
    }
}

#[test]
fn configuration_that_cannot_be_checked_is_itself_a_warning() {
    // A symlink out of the project: cargo follows it, metron does not read it.
    let outside = Outside::new();
    let target = outside.path().join("config.toml");
    std::fs::write(&target, "[build]\njobs = 1\n").expect("write");
    let p = TestProject::new();
    p.dir(".cargo").symlink(".cargo/config.toml", &target);
    let tools = Outside::new();
    tools.script("cargo", "echo fake");
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["cargo"]), &approver);
    let env = path_env(&format!("{}:{}", tools.str(), real_path()));
    run(&tb, "cargo build", &env).expect("runs");
    let warned = approver.warned();
    assert!(
        warned[0].len() == 1
            && warned[0][0].contains(".cargo/config.toml is a symlink leading outside the project"),
        "{warned:?}"
    );

    // Too large to scan: warned, not read.
    let big = format!("{}\n", "# padding\n".repeat(30_000));
    let warnings = warnings_for("make", "make all", &[("Makefile", &big)]);
    assert!(
        warnings.len() == 1 && warnings[0].contains("Makefile is larger than 262144 bytes"),
        "{warnings:?}"
    );
    // A directory where the file should be.
    let p = TestProject::new();
    p.dir(".npmrc");
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["npm"]), &approver);
    let env = path_env(&format!("{}:{}", tools.str(), real_path()));
    tools.script("npm", "echo fake");
    run(&tb, "npm test", &env).expect("runs");
    assert!(
        approver.warned()[0]
            .iter()
            .any(|w| w.contains(".npmrc cannot be read inside the project")),
        "{:?}",
        approver.warned()
    );
}

/// `metron tool run_command` for `cargo build` in `p`, with a fake `cargo` outside the
/// project first on PATH and `cargo` allowed by the user's config.
fn metron_cargo(p: &TestProject, tools: &Outside, args: &[&str]) -> Metron {
    tools.script("cargo", "echo fake cargo \"$@\"");
    metron_allowing(p, r#"["cargo"]"#, args).env("PATH", format!("{}:{}", tools.str(), real_path()))
}

#[test]
fn cli_yes_runs_a_configured_program_but_warns_on_stderr_escaped() {
    let p = TestProject::git();
    p.file(
        "rust-toolchain.toml",
        "[toolchain]\npath = \"tools\x1b[2K\"\n",
    );
    let tools = Outside::new();
    let args = r#"{"command":"cargo build"}"#;
    let run = metron_cargo(&p, &tools, &["--yes", "tool", "run_command", args]).run();
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        run.stdout,
        "$ cargo build\nexit status 0\nfake cargo build\n"
    );
    assert!(
        run.stderr.contains(
            "warning: this repository configures cargo: rust-toolchain.toml line 2 sets `path` (path = \"tools\\u{1b}[2K\"); approving runs a program the repository chose\n"
        ),
        "{run:?}"
    );
    assert!(!run.stderr.contains('\x1b'), "{run:?}");

    // Nobody to ask: refused, and the warning is still shown.
    let run = metron_cargo(&p, &tools, &["tool", "run_command", args]).run();
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.contains("--yes"), "{run:?}");
    assert!(
        run.stderr
            .contains("warning: this repository configures cargo"),
        "{run:?}"
    );
}

#[test]
fn cli_json_approval_events_carry_the_warnings() {
    use super::fake_ollama::{FakeOllama, answer, call};
    let p = TestProject::git();
    p.file("rust-toolchain.toml", "[toolchain]\npath = \"tools\"\n");
    let tools = Outside::new();
    tools.script("cargo", "echo fake cargo \"$@\"");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "cargo build"}), 10, 1),
        call("run_command", json!({"command": "echo plain"}), 10, 1),
        answer("done", 10, 1),
    ]);
    let m = metron(p.root())
        .args(["-p", "build it", "--json", "--yes"])
        .env("OLLAMA_HOST", fake.base_url())
        .env("PATH", format!("{}:{}", tools.str(), real_path()));
    write_user_config(m.home(), r#"{"allowed_commands": ["cargo", "echo"]}"#);
    let (run, events) = json_events(m.run());
    assert_eq!(run.code, 0, "{run:?}");
    let approvals = events_of_type(&events, "approval");
    assert_eq!(approvals.len(), 2, "{events:?}");
    let warnings = approvals[0]["warnings"].as_array().expect("warnings");
    assert!(
        warnings.len() == 1
            && warnings[0].as_str().is_some_and(|w| w.starts_with(
                "this repository configures cargo: rust-toolchain.toml line 2 sets `path`"
            )),
        "{:?}",
        approvals[0]
    );
    assert_eq!(approvals[0]["by"], "--yes", "{:?}", approvals[0]);
    assert!(
        approvals[1].get("warnings").is_none(),
        "omitted when empty: {:?}",
        approvals[1]
    );
}

#[cfg(target_os = "linux")]
#[test]
fn cli_on_a_terminal_the_question_shows_the_warning() {
    use super::common::{Live, hermetic, metron_in_script};
    if !super::common::script_available() {
        return skip(
            "cli_on_a_terminal_the_question_shows_the_warning",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    p.file(
        ".cargo/config.toml",
        "[target.x86_64-unknown-linux-gnu]\nrunner = \"tools/run\"\n",
    );
    let tools = Outside::new();
    tools.script("cargo", "echo fake cargo \"$@\"");
    let (mut script, home) = hermetic("script", p.root());
    write_user_config(home.path(), r#"{"allowed_commands": ["cargo"]}"#);
    script.env("PATH", format!("{}:{}", tools.str(), real_path()));
    let args = json!({ "command": "cargo test" }).to_string();
    metron_in_script(&mut script, &["tool", "run_command", &args]);
    let mut live = Live::start(script, home);
    live.wait_stdout("Run this command? [y/N]", 1);
    live.send("n\r");
    let run = live.finish();
    // Lines wider than the terminal are wrapped: read back whole.
    let shown = super::common::rejoined(&run.stdout.replace('\r', "")).join("\n") + "\n";
    let command_line = format!(
        "command: {}/cargo test\nsandbox: writes the project (not .git) and a temp dir; no network\n",
        tools.str()
    );
    let warning = "warning: this repository configures cargo: .cargo/config.toml line 2 sets `runner` (runner = \"tools/run\"); approving runs a program the repository chose\n";
    assert!(
        shown.contains(&format!("{command_line}{warning}")),
        "the warning follows the command: {shown}"
    );
    assert_eq!(run.code, 1, "{shown}");
}

#[cfg(target_os = "linux")]
#[test]
fn repl_never_offers_a_standing_approval_for_a_warned_command() {
    use super::common::{Live, exit_on_a_terminal, hermetic, metron_in_script};
    use super::fake_ollama::{FakeOllama, answer, call};
    if !super::common::script_available() {
        return skip(
            "repl_never_offers_a_standing_approval_for_a_warned_command",
            "util-linux `script` is not installed",
        );
    }
    let p = TestProject::git();
    p.file("rust-toolchain.toml", "[toolchain]\npath = \"tools\"\n");
    let tools = Outside::new();
    let runs = tools.path().join("runs");
    tools.script("cargo", &format!("echo ran >> {}", runs.display()));
    let user_config = format!(
        r#"{{"allowed_commands": ["cargo"], "command_writable_paths": ["{}"]}}"#,
        tools.str()
    );
    let build = || call("run_command", json!({"command": "cargo build"}), 10, 1);
    let fake = FakeOllama::start(vec![
        build(),
        answer("First.", 10, 1),
        build(),
        answer("Second.", 10, 1),
    ]);
    let (mut script, home) = hermetic("script", p.root());
    write_user_config(home.path(), &user_config);
    metron_in_script(&mut script, &[]);
    script
        .env("OLLAMA_HOST", fake.base_url())
        .env("PATH", format!("{}:{}", tools.str(), real_path()));
    let mut live = Live::start(script, home);
    live.wait_stdout("metron > ", 1);
    live.send("build\r");
    live.wait_stdout("Run this command? [y/N] ", 1);
    // `a` is not an answer here: the question is asked again, and nothing is granted.
    live.send("a\r");
    live.wait_stdout("not an answer: type y to go ahead or n to decline", 1);
    live.wait_stdout("Run this command? [y/N] ", 2);
    live.send("n\r");
    live.wait_stdout("Why not? A reason for the model (Return to skip): ", 1);
    live.send("\r");
    live.wait_stdout("First.", 1);
    live.wait_stdout_after("First.", "metron > ");
    live.send("again\r");
    live.wait_stdout("Run this command? [y/N] ", 3);
    live.send("y\r");
    live.wait_stdout("Second.", 1);
    live.wait_stdout_after("Second.", "metron > ");
    let run = exit_on_a_terminal(live);
    let out = &run.stdout;
    assert!(!out.contains("[y/N/a]"), "{out}");
    assert!(!out.contains("do not ask again"), "{out}");
    assert!(!out.contains("standing approval granted"), "{out}");
    assert_eq!(
        out.matches("warning: this repository configures cargo")
            .count(),
        2,
        "{out}"
    );
    let ran = std::fs::read_to_string(&runs).unwrap_or_default();
    assert_eq!(ran, "ran\n", "only the `y` ran it");
}

// ---- allowed_project_programs ----

fn project_policy(entries: &[&str]) -> CommandLimits {
    CommandLimits {
        allowed_project_programs: entries.iter().map(|s| (*s).to_owned()).collect(),
        ..policy(&[])
    }
}

#[test]
fn listed_project_programs_run_from_inside_the_project_with_a_warning() {
    let p = TestProject::new();
    write_script(&p.path(".venv/bin/pytest"), "echo pytest \"$@\"");
    write_script(&p.path("gradlew"), "echo gradle \"$@\"");
    let approver = Recorder::approving();
    let tb = toolbox(
        &p,
        project_policy(&[".venv/bin/pytest", "./gradlew test"]),
        &approver,
    );
    let (_, status) = tb
        .availability()
        .into_iter()
        .find(|(spec, _)| spec.name == "run_command")
        .expect("registered");
    assert!(
        status.is_ok(),
        "offered with only project programs: {status:?}"
    );
    let env = path_env(&real_path());
    assert_eq!(
        run(&tb, ".venv/bin/pytest -q", &env).as_deref(),
        Ok("$ .venv/bin/pytest -q\nexit status 0\npytest -q\n")
    );
    assert_eq!(
        run(&tb, "./gradlew test --offline", &env).as_deref(),
        Ok("$ ./gradlew test --offline\nexit status 0\ngradle test --offline\n")
    );
    assert!(run(&tb, "gradlew/ test", &env).is_ok());
    let root = p.root().canonicalize().expect("root");
    let seen = approver.seen();
    assert_eq!(
        seen[0][0],
        root.join(".venv/bin/pytest").to_str().expect("UTF-8")
    );
    assert_eq!(
        seen[1][..2],
        [
            root.join("gradlew").to_str().expect("UTF-8").to_owned(),
            "test".to_owned()
        ]
    );
    for warnings in approver.warned() {
        assert!(
            warnings.len() == 1
                && warnings[0].contains("is a program inside the project (allowed by your allowed_project_programs): the repository controls what it does"),
            "{warnings:?}"
        );
    }
}

#[test]
fn project_programs_must_be_listed_and_stay_inside_the_project() {
    let p = TestProject::new();
    let outside = Outside::new();
    let marker = outside.path().join("ran");
    let escape = outside.script("escape", &format!("touch {}", marker.display()));
    write_script(&p.path(".venv/bin/pytest"), "echo pytest");
    write_script(&p.path("gradlew"), "echo gradle");
    write_script(&p.path("tools/other"), "echo other");
    std::fs::write(p.path("tools/plain"), "not executable").expect("write");
    p.symlink(".venv/bin/escape", &escape);
    p.symlink("bin", outside.path());
    let approver = Recorder::approving();
    let tb = toolbox(
        &p,
        project_policy(&[
            ".venv/bin/pytest",
            "./gradlew test",
            ".venv/bin/escape",
            "bin/escape",
            "tools/plain",
            "tools/missing",
        ]),
        &approver,
    );
    let env = path_env(&real_path());
    for (command, why) in [
        ("./gradlew build", "is a path"),
        ("./gradlew", "is a path"),
        ("./gradlew testx", "is a path"),
        ("tools/other", "is a path"),
        (".venv/bin/../bin/pytest", "is a path"),
        ("./.venv/bin/../../gradlew test", "is a path"),
        (&format!("{}/gradlew test", p.root().display()), "is a path"),
        ("pytest", "is not an allowed command"),
        (
            ".venv/bin/escape",
            "leads outside the project through a symlink",
        ),
        ("bin/escape", "leads outside the project through a symlink"),
        ("tools/plain", "is not an executable file"),
        ("tools/missing", "cannot be found in the project"),
    ] {
        let text = refused(run(&tb, command, &env));
        assert!(text.contains(why), "{command}: {text}");
    }
    assert!(
        approver.seen().is_empty(),
        "refusals are never put to the user"
    );
    assert!(!marker.exists());
}

/// Approves, after swapping the project's `tools` directory for a symlink to `target`:
/// what a repository could do while the question waits.
#[derive(Debug)]
struct SwapWhileAsked {
    tools: PathBuf,
    target: PathBuf,
}

impl Approver for SwapWhileAsked {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        let aside = self.tools.with_file_name("tools.before");
        std::fs::rename(&self.tools, aside).expect("move tools aside");
        std::os::unix::fs::symlink(&self.target, &self.tools).expect("symlink tools");
        Decision::Approved
    }
}

#[test]
fn a_project_program_swapped_after_the_question_is_not_run() {
    let outside = Outside::new();
    let marker = outside.path().join("ran");
    let env = path_env(&real_path());
    for inside in [false, true] {
        let p = TestProject::new();
        write_script(&p.path("tools/run"), "echo approved");
        let target = if inside {
            write_script(&p.path("other/run"), &format!("touch {}", marker.display()));
            p.path("other")
        } else {
            outside.script("run", &format!("touch {}", marker.display()));
            outside.path().to_path_buf()
        };
        let tb = Toolbox::new(p.project(), Budgets::default())
            .with_limits(project_policy(&["tools/run"]))
            .with_approver(Box::new(SwapWhileAsked {
                tools: p.path("tools"),
                target,
            }));
        let text = refused(run(&tb, "tools/run", &env));
        let why = if inside {
            "changed after it was approved"
        } else {
            "leads outside the project through a symlink"
        };
        assert!(text.contains(why), "{inside}: {text}");
        assert!(!marker.exists(), "{inside}: the swapped-in program ran");
    }
}

#[test]
fn refusals_name_both_allowlists() {
    let p = TestProject::new();
    write_script(&p.path("gradlew"), "echo gradle");
    let approver = Recorder::approving();
    let env = path_env(&real_path());
    let listed =
        "project programs, run by the path as listed: `.venv/bin/pytest`, `./gradlew test`";

    // Only project programs: never an empty list.
    let tb = toolbox(
        &p,
        project_policy(&[".venv/bin/pytest", "./gradlew  test"]),
        &approver,
    );
    for command in ["pytest -x", "make", "./gradlew build", "/usr/bin/make"] {
        let text = refused(run(&tb, command, &env));
        assert!(
            text.contains(&format!(
                "Allowed prefixes (whole words): none by name on PATH; {listed}."
            )),
            "{command}: {text}"
        );
        assert!(!text.contains(": ."), "{command}: {text}");
    }

    // Both lists.
    let tb = toolbox(
        &p,
        CommandLimits {
            allowed_project_programs: vec![
                ".venv/bin/pytest".to_owned(),
                "./gradlew test".to_owned(),
            ],
            ..policy(&["go test", "cargo  clippy"])
        },
        &approver,
    );
    for command in ["make", "./gradlew build"] {
        let text = refused(run(&tb, command, &env));
        assert!(
            text.contains(&format!(
                "Allowed prefixes (whole words): `go test`, `cargo clippy` by name on PATH; {listed}."
            )),
            "{command}: {text}"
        );
    }

    // Only named commands: as before.
    let tb = toolbox(&p, policy(&["go test"]), &approver);
    let text = refused(run(&tb, "./gradlew test", &env));
    assert!(
        text.contains("Allowed prefixes (whole words): `go test`."),
        "{text}"
    );
    assert!(approver.seen().is_empty());
}

#[test]
fn cli_config_lists_both_allowlists_in_the_capabilities() {
    let p = TestProject::git();
    for (config, expected) in [
        (
            r#"{"allowed_project_programs": [".venv/bin/pytest"]}"#,
            "none by name on PATH; project programs, run by the path as listed: `.venv/bin/pytest`;",
        ),
        (
            r#"{"allowed_commands": ["go test"], "allowed_project_programs": ["./gradlew test"]}"#,
            "`go test` by name on PATH; project programs, run by the path as listed: `./gradlew test`;",
        ),
    ] {
        let m = metron(p.root()).stdin("/config\n");
        write_user_config(m.home(), config);
        let run = m.run();
        assert_eq!(run.code, 0, "{run:?}");
        let line = run
            .stdout
            .lines()
            .find(|l| l.trim_start().starts_with("run_command: "))
            .unwrap_or_else(|| panic!("no run_command line: {}", run.stdout));
        assert!(line.contains(expected), "{line}");
    }
}

#[test]
fn cli_project_programs_are_granted_only_by_the_users_own_config() {
    let p = TestProject::git();
    write_script(&p.path(".venv/bin/pytest"), "echo pytest \"$@\"");
    let args = r#"{"command":".venv/bin/pytest -x"}"#;
    p.file(
        ".metron.json",
        r#"{"allowed_project_programs": [".venv/bin/pytest"]}"#,
    );
    for allow_env in [false, true] {
        let mut m = metron(p.root()).args(["--yes", "tool", "run_command", args]);
        if allow_env {
            m = m.env("METRON_ALLOW_PROJECT_COMMANDS", "1");
        }
        let run = m.run();
        assert_eq!(run.code, 1, "{run:?}");
        assert!(run.stdout.starts_with("run_command is off"), "{run:?}");
        assert!(
            run.stderr.contains("ignoring `allowed_project_programs`"),
            "{run:?}"
        );
    }
    std::fs::remove_file(p.path(".metron.json")).expect("remove");

    let m = metron(p.root()).args(["--yes", "tool", "run_command", args]);
    write_user_config(
        m.home(),
        r#"{"allowed_project_programs": [".venv/bin/pytest"]}"#,
    );
    let run = m.run();
    assert_eq!(
        (run.code, run.stdout.as_str()),
        (0, "$ .venv/bin/pytest -x\nexit status 0\npytest -x\n"),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("warning: `.venv/bin/pytest` is a program inside the project"),
        "{run:?}"
    );

    for bad in ["/usr/bin/pytest", "pytest", "../x/bin/pytest", "./", " "] {
        let m = metron(p.root()).args(["--yes", "tool", "run_command", args]);
        write_user_config(
            m.home(),
            &json!({ "allowed_project_programs": [bad] }).to_string(),
        );
        let run = m.run();
        assert_eq!(run.code, 2, "{bad}: {run:?}");
        assert!(
            run.stderr.contains("allowed_project_programs"),
            "{bad}: {run:?}"
        );
    }
}

// ---- the sandbox at the question ----

#[test]
fn arguments_naming_an_output_or_a_place_outside_are_warned_so_no_standing_approval_covers_them() {
    let p = TestProject::new();
    let env = path_env(&real_path());
    let approver = Recorder::approving();
    let tb = toolbox(&p, policy(&["echo"]), &approver);
    for command in [
        "echo plain words",
        "echo --output=/tmp/metron-x",
        "echo -o out.txt",
        "echo ~/.metron/config.json",
        "echo ../../elsewhere",
        "echo /etc/passwd",
    ] {
        run(&tb, command, &env).expect("runs");
    }
    let warned = approver.warned();
    assert!(warned[0].is_empty(), "{warned:?}");
    for (n, warnings) in warned.iter().enumerate().skip(1) {
        assert!(
            warnings
                .iter()
                .any(|w| w.contains("names where the program writes, or a place outside")),
            "call {n} was not warned: {warned:?}"
        );
    }
}

#[test]
fn the_question_says_what_the_sandbox_allows_and_a_config_grant_shows_in_it() {
    #[derive(Debug, Clone, Default)]
    struct Lines(Arc<Mutex<Vec<String>>>);
    impl Approver for Lines {
        fn decide(&self, request: &Request<'_>) -> Decision {
            if let Request::Command { sandbox, .. } = request {
                self.0.lock().expect("lock").push((*sandbox).to_owned());
            }
            Decision::Approved
        }
    }
    let p = TestProject::git();
    let env = path_env(&real_path());
    let lines = Lines::default();
    let mut granted = policy(&["true", "git commit"]);
    granted.sandbox.network = vec!["true net".to_owned()];
    granted.sandbox.git_writes = vec!["git commit".to_owned()];
    let tb = Toolbox::new(p.project(), Budgets::default())
        .with_limits(granted)
        .with_approver(Box::new(lines.clone()));
    run(&tb, "true", &env).expect("runs");
    run(&tb, "true net", &env).expect("runs");
    let _ = run(&tb, "git commit --dry-run", &env);
    let seen = lines.0.lock().expect("lock").clone();
    assert!(seen[0].ends_with("a temp dir; no network"), "{seen:?}");
    assert!(
        seen[1].ends_with("network: allowed by your config"),
        "{seen:?}"
    );
    assert!(
        seen[2].contains("and .git, not its hooks or config"),
        "{seen:?}"
    );
}
