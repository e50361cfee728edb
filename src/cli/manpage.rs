//! The manual page, `metron.1`, generated from the clap definition plus the parts clap does
//! not know: the session's slash commands, exit codes, environment and files.
//!
//! The options and subcommands come from the same [`clap::Command`] as `--help` and the
//! completions, the slash commands from the REPL's own table, and the environment and
//! files from the table `--help` shows, so the page cannot drift from the code it
//! documents. Release archives ship the page (`man/metron.1`); it is
//! printed by the `metron man` subcommand.

use clap_mangen::Man;
use clap_mangen::roff::{Roff, bold, italic, roman};

use super::environment::{FILES, LAYERS, VARIABLES};
use crate::frontend::Exit;

/// Every exit code, in the order the page lists them.
const EXITS: [Exit; 5] = [
    Exit::Success,
    Exit::Failure,
    Exit::Usage,
    Exit::Incomplete,
    Exit::Interrupted,
];

/// What `code` tells the shell, for the EXIT STATUS section.
fn exit_meaning(code: Exit) -> &'static str {
    match code {
        Exit::Success => {
            "Success: the request was answered (with -p: and every patch the model proposed landed, or was replaced by a later patch that landed), the tool produced a result (including \"No matches found.\"), or --doctor found the setup complete."
        }
        Exit::Failure => {
            "The operation failed or was refused; for --doctor, the setup is incomplete."
        }
        Exit::Usage => "A usage or configuration error.",
        Exit::Incomplete => {
            "With -p: the model answered, but a patch it proposed had still not landed when the turn ended (declined, refused without --yes, stale, not matching), whatever the answer says."
        }
        Exit::Interrupted => {
            "Interrupted by Ctrl-C. For `metron tool apply_patch`, a write that Ctrl-C came too late to stop is reported as done, 0."
        }
    }
}

/// The preamble every roff rendering starts with (it makes `'` print as an apostrophe);
/// the page needs it once.
const PREAMBLE: &str = ".ie \\n(.g .ds Aq \\(aq\n.el .ds Aq '\n";

/// The whole page in roff, for `command` (the top-level clap command).
pub(super) fn render(command: clap::Command) -> std::io::Result<String> {
    let man = Man::new(command.clone());
    let mut out = Vec::new();
    man.render_title(&mut out)?;
    man.render_name_section(&mut out)?;
    man.render_synopsis_section(&mut out)?;
    man.render_description_section(&mut out)?;
    man.render_options_section(&mut out)?;
    out.extend_from_slice(extra_sections(&command).render().as_bytes());
    man.render_version_section(&mut out)?;
    // roff output is UTF-8 built from our own strings; lossy only guards against a help
    // text that ever held something else.
    let page = String::from_utf8_lossy(&out);
    // Each section rendered alone repeats the preamble; keep the first.
    let mut parts = page.split(PREAMBLE);
    let mut text = parts.next().unwrap_or_default().to_owned();
    text.push_str(PREAMBLE);
    text.extend(parts);
    Ok(text)
}

/// COMMANDS, SLASH COMMANDS, EXIT STATUS, ENVIRONMENT, FILES and SEE ALSO.
fn extra_sections(command: &clap::Command) -> Roff {
    let mut roff = Roff::new();
    // clap_mangen's own section points at one page per subcommand; metron ships one page.
    roff.control("SH", ["COMMANDS"]);
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set()) {
        let operands: Vec<String> = sub
            .get_positionals()
            .map(|arg| {
                let name = arg.get_id().as_str().to_uppercase();
                if arg.is_required_set() {
                    name
                } else {
                    format!("[{name}]")
                }
            })
            .collect();
        roff.control("TP", []);
        roff.text([
            bold(format!("metron {}", sub.get_name())),
            roman(format!(" {}", operands.join(" "))),
        ]);
        let about = sub.get_long_about().or(sub.get_about());
        roff.text([roman(about.map(ToString::to_string).unwrap_or_default())]);
    }

    roff.control("SH", ["SLASH COMMANDS"]);
    roff.text([roman(
        "In the interactive session (metron with no arguments), these lines are handled by metron and never sent to the model:",
    )]);
    for command in crate::repl::COMMANDS {
        roff.control("TP", []);
        roff.text([bold(command.usage())]);
        roff.text([roman(command.help)]);
    }
    roff.control("PP", []);
    roff.text([roman(crate::repl::NOTES.join(" "))]);

    roff.control("SH", ["EXIT STATUS"]);
    for code in EXITS {
        roff.control("TP", []);
        roff.text([bold((code as u8).to_string())]);
        roff.text([roman(exit_meaning(code))]);
    }

    roff.control("SH", ["ENVIRONMENT"]);
    for variable in VARIABLES {
        roff.control("TP", []);
        roff.text([bold(variable.name)]);
        roff.text([roman(variable.meaning)]);
    }

    roff.control("SH", ["FILES"]);
    for (path, meaning) in FILES {
        roff.control("TP", []);
        roff.text([italic(*path)]);
        roff.text([roman(*meaning)]);
    }
    roff.control("PP", []);
    roff.text([roman(LAYERS)]);

    roff.control("SH", ["SEE ALSO"]);
    roff.text([roman(
        "metron tool --help lists the tools and their arguments. ollama(1).",
    )]);
    roff
}
