//! Metron on a pseudo-terminal, through util-linux `script`: the approval questions are
//! asked, and Ctrl-C and Ctrl-D are keys the terminal turns into what a person's would.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use super::{Live, PATIENCE, Run, TestProject, hermetic};
use crate::suite::fake_ollama::FakeOllama;

/// True when util-linux `script` can give metron a pseudo-terminal.
pub fn script_available() -> bool {
    cfg!(target_os = "linux")
        && Command::new("script")
            .arg("--version")
            .stdin(Stdio::null())
            .output()
            .is_ok_and(|o| {
                o.status.success() && String::from_utf8_lossy(&o.stdout).contains("util-linux")
            })
}

/// Quotes `s` for a POSIX shell.
fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Starts metron in `p` on a pseudo-terminal (stdin, stdout and stderr all the terminal,
/// so everything shows up on the [`Live`]'s stdout), against `fake`.
pub fn on_a_terminal(p: &TestProject, fake: &FakeOllama) -> Live {
    let (command, home) = terminal_command(p, fake);
    Live::start(command, home)
}

/// Like [`on_a_terminal`], but with `home` as HOME and METRON_CONFIG_DIR, so that what one
/// session keeps in the user's `.metron` directory (the input history) is there for the
/// next. The test owns `home` and keeps it alive across the sessions.
pub fn on_a_terminal_at_home(p: &TestProject, fake: &FakeOllama, home: &Path) -> Live {
    let (mut command, unused) = terminal_command(p, fake);
    command.env("HOME", home).env("METRON_CONFIG_DIR", home);
    Live::start(command, unused)
}

/// `script` running metron in `p` against `fake`, with a fresh HOME (returned).
fn terminal_command(p: &TestProject, fake: &FakeOllama) -> (Command, tempfile::TempDir) {
    let (mut command, home) = hermetic("script", p.root());
    metron_in_script(&mut command, &[]);
    command.env("OLLAMA_HOST", fake.base_url());
    (command, home)
}

/// Makes `script` (a `Command` for the `script` program) run `metron ARGS` on a
/// pseudo-terminal, as a person's terminal would: `TERM=xterm`, no colour.
pub fn metron_in_script(script: &mut Command, args: &[&str]) {
    // `script` runs the command through `$SHELL -c`. `exec` makes metron the terminal's
    // only process: a shell left waiting (dash does not exec a lone command) gets every
    // Ctrl-C too, and dash then exits 130 after metron has exited 0. SHELL is fixed so
    // that a developer's login shell and CI's behave alike.
    script_runs(script, &metron_line(args));
}

/// Makes `script` run the shell `line` on a pseudo-terminal, as [`metron_in_script`] says.
fn script_runs(script: &mut Command, line: &str) {
    script
        .args(["-qec", line, "/dev/null"])
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm")
        .env("NO_COLOR", "1");
}

/// Starts `metron ARGS` in `p` against `fake` on a pseudo-terminal `columns` wide (set
/// with `stty` before metron starts, so the width metron reads is the one asked for, not
/// whatever `script` was given), with `env` set on top of the hermetic environment.
pub fn on_a_terminal_of_width(
    p: &TestProject,
    fake: &FakeOllama,
    columns: u16,
    args: &[&str],
    env: &[(&str, &std::ffi::OsStr)],
) -> Live {
    let (mut command, home) = hermetic("script", p.root());
    let line = format!("stty cols {columns} rows 24 && {}", metron_line(args));
    script_runs(&mut command, &line);
    command.env("OLLAMA_HOST", fake.base_url());
    for (key, value) in env {
        command.env(key, value);
    }
    Live::start(command, home)
}

/// Starts metron in `p` against `fake` on a pseudo-terminal, and runs the shell `after`
/// on the same terminal once metron has exited (to see what metron left behind).
pub fn on_a_terminal_then(p: &TestProject, fake: &FakeOllama, after: &str) -> Live {
    let (mut command, home) = hermetic("script", p.root());
    let metron = metron_line(&[]);
    let metron = metron.strip_prefix("exec ").unwrap_or(&metron);
    script_runs(&mut command, &format!("{metron}; {after}"));
    command.env("OLLAMA_HOST", fake.base_url());
    Live::start(command, home)
}

/// What a terminal showed, as the rows a person reads: escape sequences (the line
/// editor's, colour) removed, carriage returns dropped.
pub fn terminal_rows(shown: &str) -> Vec<String> {
    let mut text = String::with_capacity(shown.len());
    let mut chars = shown.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\x1b' => match chars.next() {
                // CSI: parameters up to a final byte in @..~.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ST.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\x07' || (c == '\x1b' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => text.push(c),
        }
    }
    text.lines().map(str::to_owned).collect()
}

/// Asserts that no row is wider than `columns` (every character here takes one column:
/// the tests print ASCII and metron's marks).
#[track_caller]
pub fn assert_rows_fit(rows: &[String], columns: usize, what: &str) {
    for row in rows {
        assert!(
            row.chars().count() <= columns,
            "{what}: a row of {} columns on a terminal of {columns}: {row:?}\n{}",
            row.chars().count(),
            rows.join("\n")
        );
    }
}

/// Rows read back as the lines they were wrapped from: each row trimmed and joined to the
/// next with one space. A word broken across rows shows up split in two, so a sentence
/// of single spaces is found in this text only if no word of it was broken.
pub fn unwrapped(rows: &[String]) -> String {
    rows.iter()
        .map(|row| row.trim())
        .filter(|row| !row.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
}

/// The shell line `script` runs: `exec metron ARGS`, each quoted.
fn metron_line(args: &[&str]) -> String {
    let mut line = format!("exec {}", shell_quote(env!("CARGO_BIN_EXE_metron")));
    for arg in args {
        line.push(' ');
        line.push_str(&shell_quote(arg));
    }
    line
}

/// The lines metron printed, from what a terminal showed (carriage returns already
/// removed): a row that starts with two spaces continues the row above, as metron wraps
/// its messages, and is joined to it with one space. For finding a whole message in a
/// session's output; an indented item of a list is joined to its heading too.
pub fn rejoined(shown: &str) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    for row in shown.lines() {
        match lines.last_mut() {
            Some(last) if row.starts_with("  ") => {
                last.push(' ');
                last.push_str(row.trim_start());
            }
            _ => lines.push(row.to_owned()),
        }
    }
    lines
}

/// Waits until the session on the terminal has exited on its own (Ctrl-D, `/exit`), and
/// returns what the terminal showed with carriage returns removed.
pub fn wait_for_exit(mut live: Live, what: &str) -> Run {
    let deadline = Instant::now() + PATIENCE;
    while !live.exited() {
        assert!(
            Instant::now() < deadline,
            "{what} did not quit\n{}",
            live.stdout()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut run = live.finish();
    run.stdout = run.stdout.replace('\r', "");
    run
}

/// Quits the session on the terminal with `/exit` (not end of input, which would also
/// quit), and returns what the terminal showed with carriage returns removed.
pub fn exit_on_a_terminal(mut live: Live) -> Run {
    live.send("/exit\r");
    wait_for_exit(live, "/exit")
}
