//! Approval questions at the terminal: the front ends own the terminal, so the approvers
//! that ask a person live here, and the authority layer only sees their [`Approver`]
//! answers.
//!
//! Every question shows exactly what will happen (the canonical diff, or the resolved
//! argv), with control and bidirectional-format characters made visible, and only an
//! explicit yes approves; an answer that is neither yes nor no is asked again. Ctrl-C at
//! a question declines and cancels the turn. With `--yes` in the interactive session
//! nobody is asked, but each patch is still shown as its question would show it
//! ([`ShowWhatIsApproved`]), so the person watching sees what lands.

use std::io::{IsTerminal, Write};

use std::sync::Mutex;

use crate::display::{
    HANG, QUESTION_MARK, Stream, colour_for, terminal_safe, terminal_safe_bytes, wrapped_for,
};

use crate::authority::CancelToken;
use crate::authority::approval::{
    ApproveAll, Approver, Decision, NobodyToAsk, Request, decision_for, valid_answers,
};

/// Asks on the terminal: the request on stderr, the answer read from stdin.
#[derive(Debug)]
pub(crate) struct AskOnTerminal {
    /// Serialises questions, so two never interleave.
    lock: Mutex<()>,
    /// The session's Ctrl-C: a press declines the question.
    cancel: CancelToken,
    /// Colour the diff (stderr is a terminal, and neither NO_COLOR nor TERM=dumb says no).
    color: bool,
}

impl AskOnTerminal {
    /// An approver that asks the person at this terminal.
    pub(crate) fn new(cancel: CancelToken) -> AskOnTerminal {
        AskOnTerminal {
            lock: Mutex::new(()),
            cancel,
            color: colour_for(Stream::Stderr),
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
        // An answer that is neither yes nor no (`ok`) is asked again; end of input and
        // Ctrl-C end the question as they always did.
        loop {
            // Only an answer typed after the question was shown counts: a `y` typed
            // earlier (at a fake question in the model's text, say) is thrown away here,
            // just before the question appears (after it, a quick answer to the real
            // question could be thrown away too). Before a repeated question, this also
            // drops the rest of an over-long line.
            discard_typed_ahead();
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
                    return Decision::Declined(None);
                }
                Ok(n) => match decision_for(&String::from_utf8_lossy(&answer[..n]), false) {
                    Some(decision) => return decision,
                    None => {
                        let _ = writeln!(err, "{}", prose(valid_answers(false)));
                    }
                },
            }
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

/// Throws away whatever was typed but not yet read on stdin, when stdin is a terminal
/// (`tcflush(TCIFLUSH)`), so an answer can only be typed after its question appeared.
/// Without this, keys typed while the model's reply streamed (a `y` at a question the
/// model's text imitated) would sit in the terminal's buffer and answer the next real
/// question at once. Called by every approver immediately before it reads an answer.
pub(crate) fn discard_typed_ahead() {
    let stdin = std::io::stdin();
    if stdin.is_terminal() {
        let _ = rustix::termios::tcflush(&stdin, rustix::termios::QueueSelector::IFlush);
    }
}

/// Prints what a request would do on stderr and returns the question to ask about it.
/// Shared by every approver that asks a person, so all questions look the same. The
/// question starts on its own line with [`QUESTION_MARK`], which no text from the model,
/// a file or a tool can produce (`terminal_safe` escapes it), so a line that imitates a
/// question is told apart from the real one. Everything shown about the request
/// (summary, argv, scope) is made terminal-safe. `offer_standing` adds the `a` answer (a
/// session-long approval of this scope).
pub(crate) fn show_request(request: &Request<'_>, color: bool, offer_standing: bool) -> String {
    let mut err = std::io::stderr().lock();
    show_patch_or_command(&mut err, request, color);
    let question = match request {
        Request::Patch { .. } => "Apply this patch?",
        Request::Command { .. } => "Run this command?",
    };
    if offer_standing {
        let offer = format!(
            "(a = yes, and do not ask again for {})",
            terminal_safe(&request.standing_scope())
        );
        let _ = writeln!(err, "{}", prose(&offer));
    }
    let _ = err.flush();
    let answers = if offer_standing { "y/N/a" } else { "y/N" };
    format!("{QUESTION_MARK} {question} [{answers}] ")
}

/// What a question shows above itself: a patch's coloured diff and its summary, or a
/// command's argv, sandbox and warnings. [`ShowWhatIsApproved`] shows the same.
fn show_patch_or_command(err: &mut impl Write, request: &Request<'_>, color: bool) {
    match request {
        Request::Patch { summary, diff, .. } => {
            let _ = err.write_all(&render_diff(diff, color));
            let _ = writeln!(err, "{}", prose(&terminal_safe(summary)));
        }
        Request::Command { argv, sandbox, .. } => {
            let command = format!("command: {}", terminal_safe(&argv.join(" ")));
            let _ = writeln!(err, "{}", prose(&command));
            let sandbox = format!("sandbox: {}", terminal_safe(sandbox));
            let _ = writeln!(err, "{}", prose(&sandbox));
            print_warnings(err, request);
        }
    }
}

/// Writes the request's warnings, one `warning: ...` line each, made terminal-safe (they
/// quote lines of files the repository wrote).
fn print_warnings(err: &mut impl Write, request: &Request<'_>) {
    for warning in request.warnings() {
        let line = format!("warning: {}", terminal_safe(warning));
        let _ = writeln!(err, "{}", prose(&line));
    }
}

/// What `--yes` does, in the words the banner and `/config` use.
pub(crate) const YES_NOTICE: &str =
    "applying patches and running allowed commands without asking (--yes)";

/// Whether someone watches the session's stderr as it runs: then `--yes` still shows each
/// patch it approves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Watched {
    /// The interactive session: a person reads along.
    ByAPerson,
    /// One-shot mode and `metron tool`: the outcome lines and the JSON events report
    /// what landed.
    No,
}

/// A line about a request (already terminal-safe), wrapped at spaces when stderr is a
/// terminal, like every message metron prints: a long command, sandbox or warning must
/// not be broken mid-word by the terminal. The diff is not: its lines are the file's.
fn prose(line: &str) -> std::borrow::Cow<'_, str> {
    wrapped_for(Stream::Stderr, line, HANG)
}

/// The session's approver, chosen in one place for every front end: `--yes` approves
/// everything (showing each patch where a person `watched`); a front end with a person at
/// a terminal passes its way of asking; anything else fails closed (nobody can answer).
/// The two that ask nobody still print a request's warnings on stderr ([`WarnOnStderr`]).
pub(crate) fn approver(
    yes: bool,
    watched: Watched,
    ask: Option<Box<dyn Approver>>,
) -> Box<dyn Approver> {
    match (yes, watched) {
        (true, Watched::ByAPerson) => Box::new(ShowWhatIsApproved {
            inner: WarnOnStderr(ApproveAll),
            color: colour_for(Stream::Stderr),
        }),
        (true, Watched::No) => Box::new(WarnOnStderr(ApproveAll)),
        (false, _) => ask.unwrap_or_else(|| Box::new(WarnOnStderr(NobodyToAsk))),
    }
}

/// `--yes` where a person watches: each patch is shown exactly as its question would show
/// it (the diff, coloured, and the summary), then a line saying that nobody was asked.
/// Without it an interactive `--yes` session changed files with nothing on screen but
/// the outcome line. A command shows its argv in its own outcome line, so only patches
/// are shown here.
#[derive(Debug)]
struct ShowWhatIsApproved<A> {
    inner: A,
    color: bool,
}

/// The line under a patch `--yes` approved.
pub(crate) const APPROVED_BY_YES: &str = "approved without asking (--yes)";

impl<A: Approver> Approver for ShowWhatIsApproved<A> {
    fn decide(&self, request: &Request<'_>) -> Decision {
        if let Request::Patch { .. } = request {
            let mut err = std::io::stderr().lock();
            show_patch_or_command(&mut err, request, self.color);
            let _ = writeln!(err, "{APPROVED_BY_YES}");
            let _ = err.flush();
        }
        self.inner.decide(request)
    }

    fn source(&self) -> crate::authority::journal::ApprovalSource {
        self.inner.source()
    }
}

/// An approver that asks nobody (`--yes`, or nobody to ask), made to print the request's
/// warnings on stderr first: with `--yes` the person chose to run whatever comes, and the
/// command still runs, but a repository that swapped the program is said so where they
/// will see it afterwards (the ledger records the warnings too).
#[derive(Debug)]
struct WarnOnStderr<A>(A);

impl<A: Approver> Approver for WarnOnStderr<A> {
    fn decide(&self, request: &Request<'_>) -> Decision {
        let mut err = std::io::stderr().lock();
        print_warnings(&mut err, request);
        let _ = err.flush();
        drop(err);
        self.0.decide(request)
    }

    fn source(&self) -> crate::authority::journal::ApprovalSource {
        self.0.source()
    }
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
        // The same character rules as every other view (`terminal_safe`): controls
        // (C0, and C1 such as CSI U+009B), bidirectional-format characters ("Trojan
        // Source": the diff shown could read differently from the one applied) and raw
        // bytes that are not UTF-8 are shown as escapes.
        out.extend_from_slice(terminal_safe_bytes(body).as_bytes());
        if paint.is_some() {
            out.extend_from_slice(b"\x1b[0m");
        }
        out.push(b'\n');
    }
    out
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
            b"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\\u{1b}[2J\n+b\\u{d}\n".to_vec()
        );
    }

    #[test]
    fn bidirectional_overrides_are_shown_not_obeyed() {
        let diff = "+let admin = false; // \u{202e}{ x\u{2066}\n é\n".as_bytes();
        let shown = String::from_utf8(render_diff(diff, false)).unwrap_or_default();
        assert_eq!(shown, "+let admin = false; // \\u{202e}{ x\\u{2066}\n é\n");
    }

    #[test]
    fn c1_controls_and_raw_bytes_are_shown_not_obeyed() {
        // CSI and OSC as UTF-8-encoded C1 characters, the Arabic letter mark, and a
        // context line holding raw bytes that are not UTF-8 (0x9b is CSI to some
        // terminals).
        let diff = "+a\u{9b}2Jb\u{9d}0;t\u{7}\u{61c}\n".as_bytes();
        let shown = String::from_utf8(render_diff(diff, false)).unwrap_or_default();
        assert_eq!(shown, "+a\\u{9b}2Jb\\u{9d}0;t\\u{7}\\u{61c}\n");
        let shown = render_diff(b" x\x9b2J\xc2\n", false);
        assert_eq!(shown, b" x\\x9b2J\\xc2\n".to_vec());
        for byte in render_diff(b" \x9b\x9d\x1b\n", true) {
            assert!(byte < 0x80, "a raw byte reached the terminal: {byte:#x}");
        }
    }

    #[test]
    fn colour_marks_added_and_removed_lines() {
        let shown = String::from_utf8(render_diff(b"-a\n+b\n ctx\n", true)).unwrap_or_default();
        assert!(shown.contains("\x1b[31m-a\x1b[0m"), "{shown:?}");
        assert!(shown.contains("\x1b[32m+b\x1b[0m"), "{shown:?}");
        assert!(shown.contains("\n ctx\n"), "{shown:?}");
    }
}
