//! Shell completion: the scripts `metron completions SHELL` prints, with the tool names
//! offered after `metron tool`.
//!
//! clap_complete writes the scripts from the same definition as `--help`; it completes a
//! positional argument's words from the argument's possible values. `metron tool NAME`
//! takes any word, so that a misspelt tool gets metron's own error, which lists the tools
//! (clap's would not say what the tools are for); [`ToolName`] therefore accepts every
//! word but reports the registry's names as its possible values, so bash and zsh complete
//! them and `-h` lists them, from [`tools::REGISTRY`], the one list of tools. clap_complete's
//! fish script completes no positional argument at all, so [`script`] adds the line fish
//! needs.

use std::ffi::OsStr;

use clap::builder::{PossibleValue, StringValueParser, TypedValueParser};
use clap_complete::Shell;

use crate::tools;

/// The value parser of `metron tool NAME`: any word is accepted (run_tool refuses an
/// unknown one, naming the tools), and the tools are its possible values.
#[derive(Debug, Clone, Copy)]
pub(super) struct ToolName;

impl TypedValueParser for ToolName {
    type Value = String;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<String, clap::Error> {
        StringValueParser::new().parse_ref(cmd, arg, value)
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(
            tools::REGISTRY
                .iter()
                .map(|spec| PossibleValue::new(spec.name)),
        ))
    }
}

/// The completion script for `shell`, for `command` (the top-level clap command, named
/// `metron`).
pub(super) fn script(shell: Shell, command: &mut clap::Command) -> String {
    let mut script = Vec::new();
    clap_complete::generate(shell, command, "metron", &mut script);
    // clap_complete writes UTF-8 built from our own help strings.
    let mut text = String::from_utf8_lossy(&script).into_owned();
    if shell == Shell::Fish {
        text.push_str(&fish_tool_names());
    }
    text
}

/// The fish line that offers the tool names as the first word after `metron tool`, and
/// nothing once one is there (the next word is a JSON object). It uses the helper the
/// generated script defines, which skips options (`metron --yes tool ...`).
fn fish_tool_names() -> String {
    let names = tools::names();
    format!(
        "complete -c metron -n \"__fish_metron_using_subcommand tool; and not __fish_seen_subcommand_from {}\" -f -a \"{}\"\n",
        names.join(" "),
        names.join(" ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tool_is_a_possible_value_and_any_word_still_parses() {
        let offered: Vec<String> = ToolName
            .possible_values()
            .into_iter()
            .flatten()
            .map(|value| value.get_name().to_owned())
            .collect();
        assert_eq!(offered, tools::names());
        // An unknown name reaches run_tool, whose error lists the tools.
        let command = clap::Command::new("metron");
        assert_eq!(
            ToolName
                .parse_ref(&command, None, OsStr::new("list_file"))
                .ok(),
            Some("list_file".to_owned())
        );
    }

    #[test]
    fn the_fish_line_offers_every_tool_after_tool_only() {
        let line = fish_tool_names();
        assert!(
            line.starts_with(
                "complete -c metron -n \"__fish_metron_using_subcommand tool; and not __fish_seen_subcommand_from list_files "
            ),
            "{line}"
        );
        for name in tools::names() {
            assert_eq!(line.matches(name).count(), 2, "{name}: {line}");
        }
    }
}
