//! Reading lines from the person, on a thread of its own.
//!
//! The session waits for a line *and* for Ctrl-C at the same time, so the blocking read
//! happens on this thread and the answer comes back through a channel. On a terminal the
//! line editor (rustyline) gives editing and history: the lines typed at the prompt, which
//! [`HistoryFile`] keeps between sessions unless `save_input_history` is off. In its raw
//! mode Ctrl-C arrives as a key, not a signal, and the editor tells whether anything had
//! been typed, so the session can clear a line quietly and explain how to quit on an empty
//! one. Otherwise lines are read from stdin as they come, which is how scripts and tests
//! drive the REPL, and nothing is kept.
//!
//! Approval questions are read through the same thread, so a question and the prompt
//! never compete for stdin; their answers are never kept in the history, and what was
//! typed before a question appeared is discarded rather than taken as its answer.
//!
//! At the prompt, Tab completes (see [`complete`](super::complete)), and Alt-Enter or
//! Ctrl-J put a line break into the request instead of sending it (Enter sends); a
//! bracketed paste keeps its line breaks too. The request reaches the model, and the
//! history, with its line breaks. A line typed ahead still ends with Return, not with
//! the line feed the terminal would make of it ([`ReturnKept`]).

use std::cell::Cell;
use std::io::BufRead;
use std::sync::Mutex;
use std::sync::mpsc;

use rustyline::completion::{Completer, Pair};
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::DefaultHistory;
use rustyline::validate::Validator;
use rustyline::{Cmd, CompletionType, EventHandler, KeyCode, KeyEvent, Modifiers};

use super::complete::{Completion, Sources};
use super::history::{HistoryFile, MAX_ENTRIES};

/// What one read produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line, without its newline.
    Text(String),
    /// Ctrl-C at the line editor with nothing but blanks typed.
    Interrupted,
    /// Ctrl-C at the line editor with text typed: the text is dropped, as a shell does.
    Cleared,
    /// End of input (Ctrl-D).
    Eof,
}

/// The history the line editor starts with, and where it saves new entries.
#[derive(Debug, Default)]
pub(crate) struct InputHistory {
    /// Saved entries, oldest first.
    pub(crate) entries: Vec<String>,
    /// Where each new entry is appended; `None` keeps this session's lines in memory only.
    pub(crate) file: Option<HistoryFile>,
}

/// What the reading thread is asked to do, in order.
#[derive(Debug)]
enum Request {
    /// Read one line.
    Ask(Ask),
    /// Take this history (sent once, before the first prompt).
    Keep(InputHistory),
    /// Complete with these sources (sent once, before the first prompt).
    Complete(Sources),
}

/// Where an answer goes: an async waiter (the prompt) or a blocked one (an approval
/// question asked from inside a tool).
enum ReplyTo {
    Async(tokio::sync::oneshot::Sender<Line>),
    Blocking(mpsc::Sender<Line>),
}

struct Ask {
    prompt: String,
    /// A line for the prompt (kept in the history); false for a question's answer
    /// (never kept, and only what is typed after the question appeared counts).
    remember: bool,
    reply: ReplyTo,
}

/// A handle on the reading thread.
#[derive(Debug)]
pub(crate) struct Input {
    asks: Mutex<mpsc::Sender<Request>>,
    /// Held while the session lasts, on a terminal.
    _return_kept: Option<ReturnKept>,
}

/// The line editor's helper: it completes at the prompt, and it watches the line, since
/// rustyline reports Ctrl-C as an error that drops the buffer, so the last line it asked
/// for a hint about is the only way to know what the press cleared. Its only hint is
/// [`LinesHint`]; it never offers a colour.
#[derive(Debug, Default)]
struct LineWatch {
    /// Whether the line on screen holds more than blanks.
    typed: Cell<bool>,
    /// Whether this read is at the prompt: an approval question's answer completes
    /// nothing.
    at_prompt: Cell<bool>,
    /// What Tab offers, once the session has said where to look.
    completion: Option<Completion>,
}

/// Shown after a request of more than one line: rustyline draws no prompt on the lines
/// after the first (they start at the left edge), so this says that they all belong to
/// the one request, and that Enter sends it. Right arrow never takes it into the line.
#[derive(Debug)]
struct LinesHint(String);

impl rustyline::hint::Hint for LinesHint {
    fn display(&self) -> &str {
        &self.0
    }

    fn completion(&self) -> Option<&str> {
        None
    }
}

impl Hinter for LineWatch {
    type Hint = LinesHint;

    /// Called on every change to the line (and when a read starts, with it empty).
    fn hint(&self, line: &str, _pos: usize, _ctx: &rustyline::Context<'_>) -> Option<LinesHint> {
        self.typed.set(!line.trim().is_empty());
        let lines = line.lines().count() + usize::from(line.ends_with('\n'));
        (self.at_prompt.get() && lines > 1)
            .then(|| LinesHint(format!("  ({lines} lines; Enter sends them all)")))
    }
}

impl Completer for LineWatch {
    type Candidate = Pair;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<Pair>)> {
        match &self.completion {
            Some(completion) if self.at_prompt.get() => Ok(completion.candidates(line, pos)),
            _ => Ok((pos, Vec::new())),
        }
    }
}

impl Highlighter for LineWatch {}

impl Validator for LineWatch {}

impl rustyline::Helper for LineWatch {}

/// The line editor as the REPL uses it.
type Editor = rustyline::Editor<LineWatch, DefaultHistory>;

/// Keeps Return a carriage return on the terminal for the whole session, and puts the
/// terminal back as it was when dropped.
///
/// Between two reads (a reply streams) the terminal is in its ordinary mode, which by
/// default turns Return into a line feed, the very byte Ctrl-J sends. A line typed ahead
/// would then reach the line editor ending in Ctrl-J, which starts a new line instead of
/// sending it. With that translation off, a typed-ahead Return stays Return. Nothing else
/// reads the terminal between reads (commands run with no input), so nothing else sees
/// the difference.
#[derive(Debug)]
struct ReturnKept;

impl ReturnKept {
    /// Turns the translation off when stdin is a terminal that has it on; `None` when
    /// there is nothing to undo, or when the line editor will read whole lines from the
    /// terminal's own line discipline (see [`editor_reads_lines`]), where Return must
    /// stay the line feed that ends a line.
    fn start() -> Option<ReturnKept> {
        if editor_reads_lines(std::env::var("TERM").ok().as_deref()) {
            return None;
        }
        let stdin = std::io::stdin();
        let mut modes = rustix::termios::tcgetattr(&stdin).ok()?;
        if !modes
            .input_modes
            .contains(rustix::termios::InputModes::ICRNL)
        {
            return None;
        }
        modes.input_modes.remove(rustix::termios::InputModes::ICRNL);
        rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &modes).ok()?;
        Some(ReturnKept)
    }
}

/// Whether rustyline treats the terminal `term` names as one it cannot drive and falls
/// back to reading whole lines (its list of unsupported terminals).
fn editor_reads_lines(term: Option<&str>) -> bool {
    term.is_some_and(|term| {
        ["dumb", "cons25", "emacs"]
            .iter()
            .any(|unsupported| term.eq_ignore_ascii_case(unsupported))
    })
}

impl Drop for ReturnKept {
    fn drop(&mut self) {
        let stdin = std::io::stdin();
        if let Ok(mut modes) = rustix::termios::tcgetattr(&stdin) {
            modes.input_modes.insert(rustix::termios::InputModes::ICRNL);
            let _ =
                rustix::termios::tcsetattr(&stdin, rustix::termios::OptionalActions::Now, &modes);
        }
    }
}

/// A line editor that keeps [`MAX_ENTRIES`] entries and leaves out a line that starts with
/// a space (the shell convention), completes as a shell does (the common part at once, the
/// choices on a second Tab), and takes Alt-Enter and Ctrl-J as a line break, or `None`
/// when the terminal cannot have one.
fn editor() -> Option<Editor> {
    let config = rustyline::Config::builder()
        .max_history_size(MAX_ENTRIES)
        .ok()?
        .history_ignore_space(true)
        .auto_add_history(false)
        .completion_type(CompletionType::List)
        .build();
    let mut editor = Editor::with_config(config).ok()?;
    editor.set_helper(Some(LineWatch::default()));
    // Terminals send Alt-Enter as Escape then Return. Ctrl-J is a line feed, which
    // rustyline tells apart from Return (a carriage return); see [`ReturnKept`] for the
    // keys typed while no line is read.
    for key in [
        KeyEvent(KeyCode::Enter, Modifiers::ALT),
        KeyEvent::ctrl('J'),
    ] {
        editor.bind_sequence(key, EventHandler::Simple(Cmd::Newline));
    }
    Some(editor)
}

impl std::fmt::Debug for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask").field("prompt", &self.prompt).finish()
    }
}

impl Input {
    /// Starts the reading thread: a line editor when `terminal`, plain stdin otherwise.
    pub(crate) fn spawn(terminal: bool) -> Input {
        let (asks, receiver) = mpsc::channel::<Request>();
        std::thread::spawn(move || {
            let mut editor = if terminal { editor() } else { None };
            let mut file = None;
            for request in receiver {
                let ask = match request {
                    Request::Ask(ask) => ask,
                    Request::Keep(history) => {
                        if let Some(editor) = editor.as_mut() {
                            for entry in &history.entries {
                                let _ = editor.add_history_entry(entry.as_str());
                            }
                            file = history.file;
                        }
                        continue;
                    }
                    Request::Complete(sources) => {
                        if let Some(watch) = editor.as_mut().and_then(|e| e.helper_mut()) {
                            watch.completion = Some(Completion::new(sources));
                        }
                        continue;
                    }
                };
                // A question's answer must be typed after the question appeared: keys
                // typed while the reply streamed (at a question the model's text
                // imitated, say) are thrown away, not taken as the answer. Lines typed
                // ahead for the prompt are kept, as a shell keeps them.
                if !ask.remember {
                    crate::frontend::ask::discard_typed_ahead();
                }
                let line = match editor.as_mut() {
                    Some(editor) => read_edited(editor, &ask, &mut file),
                    None => read_plain(),
                };
                match ask.reply {
                    ReplyTo::Async(sender) => {
                        let _ = sender.send(line);
                    }
                    ReplyTo::Blocking(sender) => {
                        let _ = sender.send(line);
                    }
                }
            }
        });
        Input {
            asks: Mutex::new(asks),
            _return_kept: if terminal { ReturnKept::start() } else { None },
        }
    }

    /// Gives the line editor the saved `history` and the file to save to. Without a line
    /// editor (stdin is not a terminal) it is dropped: a script's lines are not kept.
    pub(crate) fn keep(&self, history: InputHistory) {
        let asks = self
            .asks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = asks.send(Request::Keep(history));
    }

    /// Gives the line editor what Tab completes from. Without a line editor it is dropped.
    pub(crate) fn complete_with(&self, sources: Sources) {
        let asks = self
            .asks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let _ = asks.send(Request::Complete(sources));
    }

    /// Reads a line at the session prompt; the line goes into the editor's history.
    pub(crate) async fn read(&self, prompt: &str) -> Line {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        if !self.send(prompt, true, ReplyTo::Async(sender)) {
            return Line::Eof;
        }
        receiver.await.unwrap_or(Line::Eof)
    }

    /// Reads an answer to a question the session asks itself (not a tool's), without
    /// blocking the runtime; the answer is not kept in history.
    pub(crate) async fn answer(&self, prompt: &str) -> Line {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        if !self.send(prompt, false, ReplyTo::Async(sender)) {
            return Line::Eof;
        }
        receiver.await.unwrap_or(Line::Eof)
    }

    /// Reads an answer to a question, blocking the calling thread (a tool waiting for
    /// approval); the answer is not kept in history.
    pub(crate) fn read_blocking(&self, prompt: &str) -> Line {
        let (sender, receiver) = mpsc::channel();
        if !self.send(prompt, false, ReplyTo::Blocking(sender)) {
            return Line::Eof;
        }
        receiver.recv().unwrap_or(Line::Eof)
    }

    fn send(&self, prompt: &str, remember: bool, reply: ReplyTo) -> bool {
        let asks = self
            .asks
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        asks.send(Request::Ask(Ask {
            prompt: prompt.to_owned(),
            remember,
            reply,
        }))
        .is_ok()
    }
}

/// Reads one line with the editor. A line read at the prompt goes into the history, and
/// into `file` when the editor kept it (not blank, not starting with a space, not the
/// same as the entry before); `file` becomes `None` once saving fails.
fn read_edited(editor: &mut Editor, ask: &Ask, file: &mut Option<HistoryFile>) -> Line {
    use rustyline::error::ReadlineError;
    if let Some(watch) = editor.helper() {
        watch.at_prompt.set(ask.remember);
    }
    match editor.readline(&ask.prompt) {
        Ok(line) => {
            if ask.remember
                && !line.trim().is_empty()
                && editor.add_history_entry(line.as_str()).unwrap_or(false)
            {
                *file = file.take().and_then(|f| f.append(&line));
            }
            Line::Text(line)
        }
        Err(ReadlineError::Interrupted) => {
            if editor.helper().is_some_and(|watch| watch.typed.get()) {
                Line::Cleared
            } else {
                Line::Interrupted
            }
        }
        Err(_) => Line::Eof,
    }
}

fn read_plain() -> Line {
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => Line::Eof,
        Ok(_) => {
            let trimmed = line.strip_suffix('\n').unwrap_or(&line);
            let trimmed = trimmed.strip_suffix('\r').unwrap_or(trimmed);
            Line::Text(trimmed.to_owned())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_terminals_rustyline_cannot_drive_read_whole_lines() {
        for term in ["dumb", "DUMB", "cons25", "emacs"] {
            assert!(editor_reads_lines(Some(term)), "{term}");
        }
        for term in [None, Some("xterm-256color"), Some("screen"), Some("")] {
            assert!(!editor_reads_lines(term), "{term:?}");
        }
    }
}
