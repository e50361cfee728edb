//! Approval questions at the terminal: the front ends own the terminal, so the approvers
//! that ask a person live here, and the authority layer only sees their [`Approver`]
//! answers.
//!
//! Every question shows exactly what will happen (the canonical diff, or the resolved
//! argv), with control and bidirectional-format characters made visible, and only an
//! explicit yes approves. Ctrl-C at a question declines and cancels the turn.

use std::io::{IsTerminal, Write};

use std::sync::Mutex;

use crate::authority::CancelToken;
use crate::authority::approval::{
    ApproveAll, Approver, Decision, NobodyToAsk, Request, decision_for,
};

/// Asks on the terminal: the request on stderr, the answer read from stdin.
#[derive(Debug)]
pub(crate) struct AskOnTerminal {
    /// Serialises questions, so two never interleave.
    lock: Mutex<()>,
    /// The session's Ctrl-C: a press declines the question.
    cancel: CancelToken,
    /// Colour the diff (stderr is a terminal that supports it, and NO_COLOR is unset).
    color: bool,
}

impl AskOnTerminal {
    /// An approver that asks the person at this terminal.
    pub(crate) fn new(cancel: CancelToken) -> AskOnTerminal {
        AskOnTerminal {
            lock: Mutex::new(()),
            cancel,
            color: stderr_supports_color(),
        }
    }
}

impl Approver for AskOnTerminal {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if self.cancel.is_cancelled() {
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
            if self.cancel.is_cancelled() {
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
                Decision::Declined(None)
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
pub(crate) fn show_request(request: &Request<'_>, color: bool, offer_standing: bool) -> String {
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

/// The session's approver, chosen in one place for every front end: `--yes` approves
/// everything; a front end with a person at a terminal passes its way of asking; anything
/// else fails closed (nobody can answer).
pub(crate) fn approver(yes: bool, ask: Option<Box<dyn Approver>>) -> Box<dyn Approver> {
    if yes {
        Box::new(ApproveAll)
    } else {
        ask.unwrap_or_else(|| Box::new(NobodyToAsk))
    }
}

/// True when stderr is a terminal that understands colour and the user has not opted out.
pub(crate) fn stderr_supports_color() -> bool {
    std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
        && std::env::var("TERM").map_or(true, |t| t != "dumb")
}

/// The diff as shown: added lines green, removed red, hunk headers cyan, when colour is on.
/// Control characters from the model's text are made visible so they cannot drive the
/// terminal.
pub(crate) fn render_diff(diff: &[u8], color: bool) -> Vec<u8> {
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
}
