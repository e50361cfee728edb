//! `metron completions SHELL`: the scripts offer the tool names after `metron tool`.
//!
//! The names come from the tool registry through the binary; bash's script is also run in
//! a real bash, as the shell runs it on TAB, to see the candidates it offers.

use std::process::{Command, Stdio};

use metron::tools::REGISTRY;

use super::common::{TestProject, metron, skip};

fn tool_names() -> Vec<&'static str> {
    REGISTRY.iter().map(|spec| spec.name).collect()
}

/// The script `metron completions SHELL` prints.
fn script(shell: &str) -> String {
    let p = TestProject::new();
    let run = metron(p.root()).args(["completions", shell]).run();
    assert_eq!(run.code, 0, "{shell}: {run:?}");
    assert_eq!(run.stderr, "", "{shell}: {run:?}");
    run.stdout
}

/// The line of `script` that contains `marker`, for a message that shows where to look.
fn line_with<'a>(script: &'a str, marker: &str) -> &'a str {
    script
        .lines()
        .find(|line| line.contains(marker))
        .unwrap_or_else(|| panic!("no line with {marker:?}:\n{script}"))
}

#[test]
fn the_bash_script_lists_the_tool_names_for_tool() {
    let script = script("bash");
    // The words of the case for `metron tool` (not `metron help tool`).
    let opts = script
        .lines()
        .skip_while(|line| line.trim() != "metron__subcmd__tool)")
        .find(|line| line.contains("opts="))
        .unwrap_or_else(|| panic!("no case for `metron tool`:\n{script}"));
    for name in tool_names() {
        assert!(
            opts.split(['"', ' ']).any(|word| word == name),
            "{name}: {opts}"
        );
    }
}

#[test]
fn the_zsh_script_lists_the_tool_names_for_tool() {
    let script = script("zsh");
    let names = format!(":({})'", tool_names().join(" "));
    let line = line_with(&script, "':name -- ");
    assert!(line.ends_with(&format!("{names} \\")), "{line}");
}

#[test]
fn the_fish_script_lists_the_tool_names_for_tool() {
    let script = script("fish");
    let names = tool_names().join(" ");
    let line = line_with(&script, "__fish_metron_using_subcommand tool; and not");
    assert!(
        line.ends_with(&format!(
            "__fish_seen_subcommand_from {names}\" -f -a \"{names}\""
        )),
        "{line}"
    );
}

/// The candidates bash offers for the command line `words` (the last one being completed),
/// from `script`, found by calling the completion function as bash does on TAB.
fn bash_candidates(script: &str, words: &[&str]) -> Vec<String> {
    let dir = tempfile::Builder::new()
        .prefix("metron-completion-")
        .tempdir()
        .expect("temp dir");
    let path = dir.path().join("metron.bash");
    std::fs::write(&path, script).expect("write the script");
    let driver = r#"
source "$1" || exit 3
shift
COMP_WORDS=("$@")
COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
COMP_LINE="${COMP_WORDS[*]}"
COMP_POINT=${#COMP_LINE}
previous=""
(( COMP_CWORD > 0 )) && previous="${COMP_WORDS[COMP_CWORD-1]}"
_metron metron "${COMP_WORDS[COMP_CWORD]}" "$previous"
printf '%s\n' "${COMPREPLY[@]}"
"#;
    let output = Command::new("bash")
        .args(["--norc", "--noprofile", "-c", driver, "bash"])
        .arg(&path)
        .args(words)
        .stdin(Stdio::null())
        .output()
        .expect("run bash");
    assert!(
        output.status.success(),
        "bash failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| !line.is_empty())
        .map(str::to_owned)
        .collect()
}

fn bash_available() -> bool {
    Command::new("bash")
        .args(["-c", "true"])
        .stdin(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
fn bash_completes_tool_names_after_metron_tool() {
    if !bash_available() {
        skip(
            "bash_completes_tool_names_after_metron_tool",
            "bash is not installed",
        );
        return;
    }
    let script = script("bash");
    let all = bash_candidates(&script, &["metron", "tool", ""]);
    for name in tool_names() {
        assert!(all.iter().any(|c| c == name), "{name}: {all:?}");
    }
    assert_eq!(
        bash_candidates(&script, &["metron", "tool", "se"]),
        ["search_text"]
    );
    // With a global flag before the subcommand.
    assert_eq!(
        bash_candidates(&script, &["metron", "--yes", "tool", "ap"]),
        ["apply_patch"]
    );
    // The subcommand itself completes too, `man` among them.
    let subcommands = bash_candidates(&script, &["metron", "m"]);
    assert_eq!(subcommands, ["man"]);
}
