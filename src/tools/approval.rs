//! Asking the person before anything changes.
//!
//! Tools that write or execute describe what they are about to do as a [`Request`] and
//! hand it to the session's [`Approver`]. Only an explicit yes approves: `n`, a bare
//! Return, end of input, and "nobody can answer here" all decline, and the decline goes
//! back to the model as text so it explains rather than retries.

use std::io::{IsTerminal, Write};
use std::sync::Mutex;

pub use super::journal::ApprovalSource;

/// Something a tool wants to do, as shown to the person.
#[derive(Debug)]
pub enum Request<'a> {
    /// Apply a patch.
    Patch {
        /// One line per file: what changes (`M src/a.go (+3 -1)`).
        summary: &'a str,
        /// The exact patch that will be applied, after repair.
        diff: &'a [u8],
        /// Every path the patch writes or removes (the scope of a standing approval).
        files: &'a [String],
    },
    /// Run a program.
    Command {
        /// The program, resolved to an absolute path, then its arguments.
        argv: &'a [String],
        /// The `allowed_commands` entry that admitted it (the scope of a standing
        /// approval).
        prefix: &'a str,
    },
}

impl Request<'_> {
    /// What a standing approval for this request covers, in words.
    pub fn standing_scope(&self) -> String {
        match self {
            Request::Patch { .. } => {
                "patches that touch only files already approved in this session".to_owned()
            }
            Request::Command { prefix, .. } => {
                format!("commands starting with `{prefix}` (allowlisted), in this session")
            }
        }
    }
}

/// The person's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Go ahead.
    Approved,
    /// Go ahead, and do not ask again in this session for requests of the same scope
    /// (the person answered `a`; see [`Request::standing_scope`]).
    ApprovedForSession,
    /// The person said no (or pressed Return, or closed the input).
    Declined,
    /// The person pressed Ctrl-C at the question: no, and the turn is cancelled, so no
    /// other call of it may run (see [`super::Toolbox::turn_cancelled`]).
    Interrupted,
    /// Nobody can answer (not a terminal, and `--yes` not given); the text says how to
    /// allow it.
    Unanswerable(String),
}

/// Decides whether a write or an execution may go ahead.
pub trait Approver: Send + Sync + std::fmt::Debug {
    /// Shows the request and returns the decision.
    fn decide(&self, request: &Request<'_>) -> Decision;

    /// Who decides, for the ledger.
    fn source(&self) -> ApprovalSource {
        ApprovalSource::Person
    }
}

/// Approves everything: `--yes`, or `auto_approve_patches` from a trusted config.
#[derive(Debug, Default)]
pub struct ApproveAll;

impl Approver for ApproveAll {
    fn decide(&self, _request: &Request<'_>) -> Decision {
        Decision::Approved
    }

    fn source(&self) -> ApprovalSource {
        ApprovalSource::YesFlag
    }
}

/// Declines everything because nobody can be asked; the default when stdin is not a
/// terminal, so scripts fail closed.
#[derive(Debug, Default)]
pub struct NobodyToAsk;

impl Approver for NobodyToAsk {
    fn decide(&self, request: &Request<'_>) -> Decision {
        let what = match request {
            Request::Patch { .. } => "applying a patch",
            Request::Command { .. } => "running a command",
        };
        Decision::Unanswerable(format!(
            "{what} needs the user's approval, and nobody can answer here (one-shot mode, or input that is not a terminal); the user can rerun with --yes to allow it"
        ))
    }

    fn source(&self) -> ApprovalSource {
        ApprovalSource::Nobody
    }
}

/// Asks on the terminal: the request on stderr, the answer read from stdin.
#[derive(Debug)]
pub struct AskOnTerminal {
    /// Serialises questions, so two never interleave.
    lock: Mutex<()>,
    /// Colour the diff (stderr is a terminal that supports it, and NO_COLOR is unset).
    color: bool,
}

impl AskOnTerminal {
    /// An approver that asks the person at this terminal.
    pub fn new() -> AskOnTerminal {
        AskOnTerminal {
            lock: Mutex::new(()),
            color: stderr_supports_color(),
        }
    }
}

impl Default for AskOnTerminal {
    fn default() -> Self {
        AskOnTerminal::new()
    }
}

impl Approver for AskOnTerminal {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if crate::interrupt::pressed() {
            return Decision::Interrupted;
        }
        let _guard = self
            .lock
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let question = show_request(request, self.color, false);
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "{question}");
        let _ = err.flush();
        // Ctrl-C is caught (so a command or a write is never torn), which means it no
        // longer ends metron at a question: wait for a line while watching for it.
        while !line_ready() {
            if crate::interrupt::pressed() {
                let _ = writeln!(err);
                return Decision::Interrupted;
            }
        }
        // Read the descriptor itself, not through std's buffered stdin: bytes left in
        // that buffer would be invisible to the poll above. A terminal in line mode
        // hands over one line per read; only its start matters for the answer.
        let mut answer = [0u8; 256];
        match rustix::io::read(std::io::stdin(), &mut answer) {
            Ok(0) | Err(_) => {
                let _ = writeln!(err);
                Decision::Declined
            }
            Ok(n) => decision_for(&String::from_utf8_lossy(&answer[..n]), false),
        }
    }
}

/// Waits up to a tenth of a second for stdin to have a line (a terminal in its usual
/// line mode is readable once Enter is pressed) or to end. On an error it says yes, so
/// the read that follows reports it.
fn line_ready() -> bool {
    use rustix::event::{PollFd, PollFlags, Timespec, poll};
    let stdin = std::io::stdin();
    let mut fds = [PollFd::new(&stdin, PollFlags::IN)];
    let tenth = Timespec {
        tv_sec: 0,
        tv_nsec: 100_000_000,
    };
    match poll(&mut fds, Some(&tenth)) {
        Ok(ready) => ready > 0,
        Err(rustix::io::Errno::INTR) => false,
        Err(_) => true,
    }
}

/// Prints what a request would do on stderr and returns the question to ask about it.
/// Shared by every approver that asks a person, so all questions look the same.
/// `offer_standing` adds the `a` answer (a session-long approval of this scope).
pub fn show_request(request: &Request<'_>, color: bool, offer_standing: bool) -> String {
    let mut err = std::io::stderr().lock();
    let question = match request {
        Request::Patch { summary, diff, .. } => {
            let _ = err.write_all(&render_diff(diff, color));
            let _ = writeln!(err, "{summary}");
            "Apply this patch?"
        }
        Request::Command { argv, .. } => {
            let _ = writeln!(err, "command: {}", argv.join(" "));
            "Run this command?"
        }
    };
    if offer_standing {
        let _ = writeln!(
            err,
            "(a = yes, and do not ask again for {})",
            request.standing_scope()
        );
        format!("{question} [y/N/a] ")
    } else {
        format!("{question} [y/N] ")
    }
}

/// Reads a typed answer: only an explicit yes approves; `a` approves for the session when
/// that was offered.
pub fn decision_for(answer: &str, offer_standing: bool) -> Decision {
    match answer.trim() {
        "y" | "Y" | "yes" | "Yes" | "YES" => Decision::Approved,
        "a" | "A" if offer_standing => Decision::ApprovedForSession,
        _ => Decision::Declined,
    }
}

/// The approver for `metron tool` and one-shot runs: `--yes` approves everything; a
/// terminal on stdin gets asked; anything else fails closed.
pub fn for_this_process(yes: bool) -> Box<dyn Approver> {
    if yes {
        Box::new(ApproveAll)
    } else if std::io::stdin().is_terminal() {
        Box::new(AskOnTerminal::new())
    } else {
        Box::new(NobodyToAsk)
    }
}

/// True when stderr is a terminal that understands colour and the user has not opted out.
pub fn stderr_supports_color() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// The diff as shown: added lines green, removed red, hunk headers cyan, when colour is on.
/// Control characters from the model's text are made visible so they cannot drive the
/// terminal.
pub fn render_diff(diff: &[u8], color: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(diff.len() + 64);
    for line in diff.split_inclusive(|&b| b == b'\n') {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let paint = match body.first() {
            _ if !color => None,
            Some(b'+') if !body.starts_with(b"+++ ") => Some("\x1b[32m"),
            Some(b'-') if !body.starts_with(b"--- ") => Some("\x1b[31m"),
            Some(b'@') => Some("\x1b[36m"),
            Some(b'd') if body.starts_with(b"diff --git ") => Some("\x1b[1m"),
            _ => None,
        };
        if let Some(code) = paint {
            out.extend_from_slice(code.as_bytes());
        }
        let mut rest = body;
        while let Some((&byte, after)) = rest.split_first() {
            // Bidirectional-format characters (U+200E, U+200F, U+202A..U+202E,
            // U+2066..U+2069, three bytes each in UTF-8) would reorder what the person
            // reads, so the diff shown could differ from the one applied ("Trojan Source").
            if let Some(c) = bidi_format_char(rest) {
                out.extend_from_slice(format!("\\u{{{:04x}}}", u32::from(c)).as_bytes());
                rest = &rest[3..];
                continue;
            }
            match byte {
                b'\t' => out.push(b'\t'),
                b'\r' => out.extend_from_slice(b"\\r"),
                0..=0x1f | 0x7f => out.extend_from_slice(format!("\\x{byte:02x}").as_bytes()),
                _ => out.push(byte),
            }
            rest = after;
        }
        if paint.is_some() {
            out.extend_from_slice(b"\x1b[0m");
        }
        out.push(b'\n');
    }
    out
}

/// The bidirectional-format character `bytes` starts with, if any.
fn bidi_format_char(bytes: &[u8]) -> Option<char> {
    let c = std::str::from_utf8(bytes.get(..3)?).ok()?.chars().next()?;
    matches!(c, '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        .then_some(c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_diff_is_unchanged_except_control_characters() {
        let diff = b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\x1b[2J\n+b\r\n";
        let shown = render_diff(diff, false);
        assert_eq!(
            shown,
            b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\\x1b[2J\n+b\\r\n".to_vec()
        );
    }

    #[test]
    fn bidirectional_overrides_are_shown_not_obeyed() {
        let diff = "+let admin = false; // \u{202e}{ x\u{2066}\n é\n".as_bytes();
        let shown = String::from_utf8(render_diff(diff, false)).unwrap_or_default();
        assert_eq!(shown, "+let admin = false; // \\u{202e}{ x\\u{2066}\n é\n");
    }

    #[test]
    fn colour_marks_added_and_removed_lines() {
        let shown = String::from_utf8(render_diff(b"-a\n+b\n ctx\n", true)).unwrap_or_default();
        assert!(shown.contains("\x1b[31m-a\x1b[0m"), "{shown:?}");
        assert!(shown.contains("\x1b[32m+b\x1b[0m"), "{shown:?}");
        assert!(shown.contains("\n ctx\n"), "{shown:?}");
    }

    #[test]
    fn nobody_to_ask_declines_and_says_how_to_allow() {
        let argv = vec!["/usr/bin/go".to_owned()];
        match NobodyToAsk.decide(&Request::Command {
            argv: &argv,
            prefix: "go",
        }) {
            Decision::Unanswerable(text) => assert!(text.contains("--yes"), "{text}"),
            other => panic!("expected Unanswerable, got {other:?}"),
        }
    }
}
