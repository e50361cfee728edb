//! Reading lines from the person, on a thread of its own.
//!
//! The session waits for a line *and* for Ctrl-C at the same time, so the blocking read
//! happens on this thread and the answer comes back through a channel. On a terminal the
//! line editor (rustyline) gives editing and in-session history (never written to disk);
//! in its raw mode Ctrl-C arrives as a key, not a signal. Otherwise lines are read from
//! stdin as they come, which is how scripts and tests drive the REPL.
//!
//! Approval questions are read through the same thread, so a question and the prompt
//! never compete for stdin.

use std::io::BufRead;
use std::sync::Mutex;
use std::sync::mpsc;

/// What one read produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Line {
    /// A line, without its newline.
    Text(String),
    /// Ctrl-C at the line editor.
    Interrupted,
    /// End of input (Ctrl-D).
    Eof,
}

/// Where an answer goes: an async waiter (the prompt) or a blocked one (an approval
/// question asked from inside a tool).
enum ReplyTo {
    Async(tokio::sync::oneshot::Sender<Line>),
    Blocking(mpsc::Sender<Line>),
}

struct Ask {
    prompt: String,
    remember: bool,
    reply: ReplyTo,
}

/// A handle on the reading thread.
#[derive(Debug)]
pub(crate) struct Input {
    asks: Mutex<mpsc::Sender<Ask>>,
}

impl std::fmt::Debug for Ask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Ask").field("prompt", &self.prompt).finish()
    }
}

impl Input {
    /// Starts the reading thread: a line editor when `terminal`, plain stdin otherwise.
    pub(crate) fn spawn(terminal: bool) -> Input {
        let (asks, receiver) = mpsc::channel::<Ask>();
        std::thread::spawn(move || {
            let mut editor = if terminal {
                rustyline::DefaultEditor::new().ok()
            } else {
                None
            };
            for ask in receiver {
                let line = match editor.as_mut() {
                    Some(editor) => read_edited(editor, &ask),
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
        }
    }

    /// Reads a line at the session prompt; the line goes into the editor's history.
    pub(crate) async fn read(&self, prompt: &str) -> Line {
        let (sender, receiver) = tokio::sync::oneshot::channel();
        if !self.send(prompt, true, ReplyTo::Async(sender)) {
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
        asks.send(Ask {
            prompt: prompt.to_owned(),
            remember,
            reply,
        })
        .is_ok()
    }
}

fn read_edited(editor: &mut rustyline::DefaultEditor, ask: &Ask) -> Line {
    use rustyline::error::ReadlineError;
    match editor.readline(&ask.prompt) {
        Ok(line) => {
            if ask.remember && !line.trim().is_empty() {
                let _ = editor.add_history_entry(line.as_str());
            }
            Line::Text(line)
        }
        Err(ReadlineError::Interrupted) => Line::Interrupted,
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
