//! Cases on command admission: run_command outside the allowlist, shell metacharacters
//! after an allowed program, an allowed program that the repository configures (cargo's
//! toolchain file, a Makefile's `SHELL`, npm's config), and Ctrl-C while a command runs with
//! a patch waiting. What an admitted command can reach is in [`super::sandbox`].

use serde_json::json;

use super::*;
use crate::suite::common::{Live, Run, greet_patch, script_available};
use crate::suite::fake_ollama::{FakeOllama, Reply, answer, call, done, tool_calls};

cases! {
    "run_command outside the allowlist" => command_outside_the_allowlist: run_command_outside_the_allowlist;
    "run_command with shell metacharacters" => shell_metacharacters_after_an_allowed_program: run_command_with_shell_metacharacters;
    "Ctrl-C during a command, a patch queued" => ctrl_c_during_a_command_with_a_patch_waiting: ctrl_c_during_a_command_with_a_patch_queued;
    "repository-configured cargo at the question" => cargo_configured_by_the_repository: a_repository_configured_cargo_at_the_question;
    "repository-configured make and npm" => make_and_npm_configured_by_the_repository: repository_configured_make_and_npm;
}

/// run_command outside the allowlist (`echo` only), with `--yes`.
pub(super) fn run_command_outside_the_allowlist() -> Verdict {
    let commands = [
        "touch pwned",
        "/usr/bin/touch pwned",
        "./echo pwned",
        "env touch pwned",
        "sh -c 'touch pwned'",
        "echoo pwned",
    ];
    let (m, run, fake) = with_only_echo_allowed(&commands);
    assert_all_refused(&fake, commands.len(), &run);
    Verdict::Measured(m)
}

/// Runs `commands` as the model's calls through `metron -p --yes` with only `echo`
/// allowed, measuring what they did; the run must end with an answer.
pub(super) fn with_only_echo_allowed(commands: &[&str]) -> (Measured, Run, FakeOllama) {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["echo"]}"#);
    let calls = commands
        .iter()
        .map(|c| ("run_command", json!({"command": c})))
        .collect();
    let fake = FakeOllama::start(script(calls));
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "run these", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    (m, run, fake)
}

/// Shell metacharacters after an allowed program, with `--yes`: there is no shell, so
/// `echo` runs and prints them, and nothing else happens.
pub(super) fn run_command_with_shell_metacharacters() -> Verdict {
    let commands = [
        "echo hi; touch pwned",
        "echo $(touch pwned)",
        "echo `touch pwned`",
        "echo hi > pwned",
        "echo hi | tee pwned",
        "echo hi && touch pwned",
        "echo hi\ntouch pwned",
        "echo ~/pwned $HOME/pwned",
    ];
    let (m, _run, fake) = with_only_echo_allowed(&commands);
    let results = tool_results(&fake);
    assert_eq!(results.len(), commands.len(), "{results:#?}");
    // Those that ran printed their metacharacters literally; the rest were refused.
    let mut ran = 0;
    for (command, result) in commands.iter().zip(&results) {
        if is_refusal(result) {
            continue;
        }
        ran += 1;
        // echo joins its arguments with single spaces (the newline split words too).
        let printed = command
            .split_whitespace()
            .skip(1)
            .collect::<Vec<_>>()
            .join(" ");
        assert!(
            result.contains(&format!("\n{printed}\n")),
            "{command:?} did not print its arguments literally: {result}"
        );
    }
    assert!(
        ran >= 5,
        "only {ran} of the echo commands ran: {results:#?}"
    );
    Verdict::Measured(m)
}

/// Ctrl-C while an approved command runs, with a patch next in the same reply and
/// `--yes`: the command's process group is killed at once and the patch is refused.
#[cfg(not(target_os = "linux"))]
pub(super) fn ctrl_c_during_a_command_with_a_patch_queued() -> Verdict {
    Verdict::Skipped("finding the command's process needs Linux /proc".into())
}

/// On Linux: the case described above.
#[cfg(target_os = "linux")]
pub(super) fn ctrl_c_during_a_command_with_a_patch_queued() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["sleep"], "command_timeout_seconds": 60}"#);
    let fake = FakeOllama::start(vec![
        Reply::Stream(vec![
            tool_calls(&[
                ("run_command", json!({"command": "sleep 45"})),
                ("apply_patch", json!({"diff": greet_patch()})),
            ]),
            done(100, 10),
        ]),
        answer("Never asked.", 200, 3),
    ]);
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["--yes", "-p", "wait, then patch"])
            .env("OLLAMA_HOST", fake.base_url());
        let live = Live::start(command, home);
        live.wait_for_child("sleep");
        live.interrupt();
        run = Some(live.finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 130, "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 1, "{run:?}");
    Verdict::Measured(m)
}

/// An allowed `cargo` whose toolchain the repository points at a directory inside
///      the project: the question on a terminal warns before the person answers (no).
pub(super) fn a_repository_configured_cargo_at_the_question() -> Verdict {
    if !script_available() {
        return Verdict::Skipped("util-linux `script` is not installed".to_owned());
    }
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["cargo"]}"#);
    let path = fake_program(&fx, "cargo");
    fx.write(
        "rust-toolchain.toml",
        format!("[toolchain]\npath = \"{}/tools\"\n", fx.root().display()),
    );
    fx.write("tools/bin/cargo", "#!/bin/sh\ntouch pwned\n");
    let fake = FakeOllama::start(vec![
        call("run_command", json!({"command": "cargo build"}), 100, 20),
        answer("Finished.", 150, 9),
    ]);
    let mut shown = String::new();
    let m = measure(&fx, || {
        let (mut command, home) = fx.command("script");
        metron_in_script(&mut command, &[]);
        command
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        let mut live = Live::start(command, home);
        live.wait_stdout("metron > ", 1);
        live.send("build it\r");
        live.wait_stdout("Run this command? [y/N", 1);
        shown = live.stdout();
        decline_and_exit(live);
        (Expect::nothing().typed(&["build it", "/exit"]), Some(&fake))
    });
    assert!(
        shown.contains("this repository configures cargo: rust-toolchain.toml line 2 sets `path`"),
        "no warning at the question:\n{shown}"
    );
    Verdict::Measured(m)
}

/// `make` with a Makefile that sets `SHELL`, and `npm` with an `.npmrc` that sets
///      `script-shell`, in `-p` without `--yes` (nobody to ask): refused, and the
///      warning reaches stderr.
pub(super) fn repository_configured_make_and_npm() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"allowed_commands": ["make", "npm"]}"#);
    let path = fake_program(&fx, "make");
    fake_program(&fx, "npm");
    fx.write("Makefile", "SHELL := ./tools/sh\nall:\n\t@true\n");
    fx.write(".npmrc", "script-shell=./tools/sh\n");
    let fake = FakeOllama::start(script(vec![
        ("run_command", json!({"command": "make all"})),
        ("run_command", json!({"command": "npm test"})),
    ]));
    let mut run = None;
    let m = measure(&fx, || {
        let (mut command, home) = fx.command(env!("CARGO_BIN_EXE_metron"));
        command
            .args(["-p", "build and test"])
            .env("OLLAMA_HOST", fake.base_url())
            .env("PATH", &path);
        run = Some(Live::start(command, home).finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_all_refused(&fake, 2, &run);
    for warned in ["configures make: Makefile", "configures npm: .npmrc"] {
        assert!(
            run.stderr.contains(warned),
            "no {warned:?} warning: {run:?}"
        );
    }
    Verdict::Measured(m)
}
