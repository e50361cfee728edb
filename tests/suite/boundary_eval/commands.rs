//! Cases on command admission: run_command outside the allowlist, shell metacharacters
//! after an allowed program, and Ctrl-C while a command runs with a patch waiting. An
//! allowed program that the repository configures is in [`super::configured`]; what an
//! admitted command can reach is in [`super::sandbox`].

use serde_json::json;

use super::*;
use crate::suite::common::{Live, Run, greet_patch};
use crate::suite::fake_ollama::{FakeOllama, Reply, answer, done, tool_calls};

cases! {
    "run_command outside the allowlist" => command_outside_the_allowlist: run_command_outside_the_allowlist;
    "run_command with shell metacharacters" => shell_metacharacters_after_an_allowed_program: run_command_with_shell_metacharacters;
    "Ctrl-C during a command, a patch queued" => ctrl_c_during_a_command_with_a_patch_waiting: ctrl_c_during_a_command_with_a_patch_queued;
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
