//! What the person sees while a turn runs: the reply as it streams, `[executing: TOOL]`
//! for each call, a waiting indicator until the first token, and the cost footer.
//!
//! Reply text goes to stdout; everything about the process (tool lines, the indicator,
//! the footer, warnings) goes to stderr, so in one-shot mode stdout is only the answer.
//! There, the text of a round that turns out to call tools ("Let me look at greet.go.")
//! is not the answer, so it is shown on stderr before the round's tool lines. On a
//! terminal that takes colour the reply's Markdown is rendered as it streams
//! ([`markdown`]); elsewhere it is the model's text.
//!
//! Nothing metron says is cut: on a terminal its lines are wrapped at spaces ([`wrap`]),
//! with continuation lines indented, so a reason arrives whole with its remedy. Two kinds
//! of line are still fitted to one row with `…`, because they are not reasons: the last
//! lines of a command's output under its outcome line (output, shown whole by `/show N`),
//! and the elapsed-time line of a running command (redrawn in place, so it must be one
//! row).

mod markdown;
mod wrap;

use std::borrow::Cow;
use std::cell::RefCell;
use std::ffi::OsString;
use std::io::{IsTerminal, Write};
use std::rc::Rc;
use std::time::{Duration, Instant};

use crate::agent::landing::all_landed;
use crate::agent::outcome::evidence_line;
use crate::agent::window::Window;
use crate::agent::{Event, Latency, Observer, TurnReport};
use crate::ollama::Delta;
use crate::ollama::wire::ToolCall;

use markdown::Markdown;
pub(crate) use wrap::{HANG, columns, wrap, wrapped_for};

/// The [`Observer`] for a person at a terminal (or a script reading stdout).
#[derive(Debug)]
pub(crate) struct Display {
    stream_text: bool,
    sanitize: bool,
    at_line_start: bool,
    /// One-shot mode: the current round's text, held until it is known whether it is the
    /// answer (the caller prints it) or the preamble of a tool round (shown on stderr).
    round_text: String,
    spinner: Rc<RefCell<Spinner>>,
    /// `--json`: ledger events go to stdout as JSON Lines.
    json: bool,
    /// One-shot mode: the turn's evidence line is held here at `turn_end`, to be printed
    /// last ([`Display::print_evidence`]), after the footer and the answer.
    evidence: Option<Held>,
    /// Streamed reply text rendered from Markdown, on a terminal that takes colour
    /// ([`markdown`]); `None` prints the model's text as it is.
    markdown: Option<Markdown>,
}

/// Where the turn's evidence line goes.
#[derive(Debug)]
enum Held {
    /// Held, not yet known.
    Waiting,
    /// The line, and whether it reports a failure.
    Line(String, bool),
}

impl Display {
    /// A display for the REPL (`stream_text`: reply text printed as it arrives) or for
    /// one-shot mode (the caller prints the final answer).
    pub(crate) fn new(stream_text: bool, model: &str) -> Display {
        Display {
            stream_text,
            sanitize: std::io::stdout().is_terminal(),
            at_line_start: true,
            round_text: String::new(),
            spinner: Rc::new(RefCell::new(Spinner::new(
                std::io::stderr().is_terminal(),
                model,
            ))),
            json: false,
            evidence: None,
            markdown: (stream_text && renders_markdown())
                .then(|| Markdown::new(columns(Stream::Stdout))),
        }
    }

    /// Holds the turn's evidence line back until [`Display::print_evidence`] (`-p`): what
    /// the journal says happened comes after the model's final words, so a person or a
    /// CI log reading from the bottom sees the evidence, not the claim, last.
    pub(crate) fn with_evidence_last(mut self) -> Display {
        self.evidence = Some(Held::Waiting);
        self
    }

    /// Prints the evidence line held back by [`Display::with_evidence_last`], if the
    /// turn had one.
    pub(crate) fn print_evidence(&mut self) {
        if let Some(Held::Line(line, failed)) = self.evidence.take() {
            eprintln!("{}", Style::for_stderr().status(&line, failed));
        }
    }

    /// Prints every ledger event on stdout as one JSON object per line (`-p --json`).
    pub(crate) fn with_json_events(mut self) -> Display {
        self.json = true;
        self.markdown = None;
        self
    }

    /// Prints one event as a JSON line on stdout.
    pub(crate) fn print_event(&mut self, event: &Event) {
        if let Some(line) = event_line(event) {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    }

    /// The waiting indicator, shared with the code that redraws it on a timer.
    pub(crate) fn spinner(&self) -> Rc<RefCell<Spinner>> {
        Rc::clone(&self.spinner)
    }

    /// Ends a partly printed line, so what follows starts on its own line.
    pub(crate) fn finish_line(&mut self) {
        self.finish_markdown();
        if !self.at_line_start {
            println!();
            self.at_line_start = true;
        }
    }

    /// Before a tool line: stops the spinner, ends the streamed line, and shows on stderr
    /// the text of this round that was held back (one-shot mode keeps stdout for the
    /// answer).
    fn show_round_text(&mut self) {
        self.spinner.borrow_mut().stop();
        self.finish_line();
        let said = std::mem::take(&mut self.round_text);
        if !said.trim().is_empty() {
            let said = if std::io::stderr().is_terminal() {
                terminal_safe(&said)
            } else {
                marks_escaped(&said)
            };
            eprintln!("{}", said.trim_end_matches('\n'));
        }
    }

    /// A call's outcome line on stderr, marked as metron's, failures in colour, with a
    /// command's last lines of output dimmed beneath it.
    fn show_outcome(&mut self, summary: &str, failed: bool, tail: &[String]) {
        self.spinner.borrow_mut().stop();
        self.finish_line();
        let style = Style::for_stderr();
        let mut err = std::io::stderr().lock();
        let _ = writeln!(err, "{}", style.status(summary, failed));
        for line in tail {
            let line = format!("  | {line}");
            let _ = writeln!(
                err,
                "{}",
                style.paint(&fit(&line, style.width), false, true)
            );
        }
    }

    /// Shows the rest of a rendered reply: the end of a reply ends its last line and any
    /// fence the model left open.
    fn finish_markdown(&mut self) {
        if let Some(markdown) = &mut self.markdown {
            let tail = markdown.finish();
            self.write_rendered(&tail);
        }
    }

    /// Writes text rendered by [`Markdown`] (already safe: its only escapes are its
    /// styles) on stdout.
    fn write_rendered(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.at_line_start = text.ends_with('\n');
    }

    /// Prints text on stdout, made safe for a terminal when it is one.
    pub(crate) fn print(&mut self, text: &str) {
        if text.is_empty() {
            return;
        }
        let text = if self.sanitize {
            terminal_safe(text)
        } else {
            marks_escaped(text)
        };
        let mut out = std::io::stdout().lock();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
        self.at_line_start = text.ends_with('\n');
    }
}

impl Observer for Display {
    fn model_call_started(&mut self) {
        self.round_text.clear();
        self.spinner.borrow_mut().start();
    }

    fn delta(&mut self, delta: Delta<'_>) {
        match delta {
            Delta::Content(text) => {
                self.spinner.borrow_mut().stop();
                if let Some(markdown) = &mut self.markdown {
                    let shown = markdown.push(text);
                    self.write_rendered(&shown);
                } else if self.stream_text {
                    self.print(text);
                } else {
                    self.round_text.push_str(text);
                }
            }
            Delta::Thinking(_) => self.spinner.borrow_mut().thinking = true,
            Delta::ToolCalls => {}
        }
    }

    fn model_call_finished(&mut self) {
        self.spinner.borrow_mut().stop();
        self.finish_markdown();
    }

    fn calls_from_text(&mut self, count: usize) {
        self.show_round_text();
        let calls = if count == 1 {
            "a tool call"
        } else {
            "tool calls"
        };
        print_wrapped(
            Stream::Stderr,
            &format!(
                "[the model wrote {calls} as text; metron treats it as a request, checked like any other]"
            ),
            HANG,
        );
    }

    fn tool_started(&mut self, call: &ToolCall) {
        self.show_round_text();
        eprintln!("[executing: {}]", terminal_safe(&call.function.name));
    }

    fn event(&mut self, event: &Event) {
        if self.json {
            self.print_event(event);
        }
        match event {
            Event::ToolResult {
                summary,
                failed,
                output_tail,
                ..
            } => self.show_outcome(summary, *failed, output_tail),
            Event::TurnEnd {
                files_changed,
                patches_not_applied,
                commands,
                ..
            } => {
                if let Some(line) = evidence_line(files_changed, patches_not_applied, commands) {
                    self.spinner.borrow_mut().stop();
                    self.finish_line();
                    // A patch replaced by one that landed is no failure (`agent::landing`).
                    let failed = !all_landed(patches_not_applied)
                        || commands.iter().any(|c| c.exit_code != Some(0));
                    if let Some(held) = &mut self.evidence {
                        *held = Held::Line(line, failed);
                    } else {
                        let style = Style::for_stderr();
                        eprintln!("{}", style.status(&line, failed));
                    }
                }
            }
            _ => {}
        }
    }

    fn tool_fault(&mut self, call: &ToolCall, message: &str) {
        print_wrapped(
            Stream::Stderr,
            &format!(
                "metron: warning: {} failed: {}",
                terminal_safe(&call.function.name),
                terminal_safe(message)
            ),
            HANG,
        );
    }

    fn warning(&mut self, text: &str) {
        self.show_round_text();
        print_wrapped(
            Stream::Stderr,
            &format!("metron: {}", terminal_safe(text)),
            HANG,
        );
    }
}

/// Whether the model's Markdown is rendered on stdout: only on a terminal that takes
/// colour ([`colour_for`]: not under `NO_COLOR` or `TERM=dumb`). A pipe gets the model's
/// bytes, the most faithful form of the answer for another tool.
pub(crate) fn renders_markdown() -> bool {
    colour_for(Stream::Stdout)
}

/// `answer`, a whole reply, rendered from Markdown for stdout (`-p` on a terminal that
/// takes colour, [`renders_markdown`]), with a final newline.
pub(crate) fn rendered_answer(answer: &str) -> String {
    let mut markdown = Markdown::new(columns(Stream::Stdout));
    let mut shown = markdown.push(answer);
    shown.push_str(&markdown.finish());
    if !shown.ends_with('\n') {
        shown.push('\n');
    }
    shown
}

/// Writes `text`, one of metron's own messages, and a newline on `stream`: on a terminal
/// wrapped at spaces to its width with continuation lines indented by `hang` ([`wrap`]),
/// elsewhere as it is. Every part of `text` that metron did not write must already be
/// made safe ([`terminal_safe`], [`one_line_safe`]): the escapes are what is measured. A
/// closed stream is not an error here: there is nobody left to tell.
pub(crate) fn print_wrapped(stream: Stream, text: &str, hang: usize) {
    let text = wrapped_for(stream, text, hang);
    let _ = match stream {
        Stream::Stdout => {
            let mut out = std::io::stdout().lock();
            writeln!(out, "{text}").and_then(|()| out.flush())
        }
        Stream::Stderr => writeln!(std::io::stderr().lock(), "{text}"),
    };
}

/// An output stream, for [`colour_for`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stream {
    Stdout,
    Stderr,
}

/// Whether output on `stream` may be coloured. Every coloured output asks this, so `NO_COLOR`
/// or `TERM=dumb` turns colour off everywhere at once (it used to be decided in four
/// places, two of which ignored `TERM`).
pub(crate) fn colour_for(stream: Stream) -> bool {
    let terminal = match stream {
        Stream::Stdout => std::io::stdout().is_terminal(),
        Stream::Stderr => std::io::stderr().is_terminal(),
    };
    colour_when(terminal, |name| std::env::var_os(name))
}

/// The rule, apart from the process: colour only on a terminal, unless `NO_COLOR` is set
/// to anything but the empty string (no-color.org) or `TERM` is `dumb` (a terminal that
/// shows escape codes as text).
fn colour_when(terminal: bool, var: impl Fn(&str) -> Option<OsString>) -> bool {
    terminal
        && var("NO_COLOR").is_none_or(|v| v.is_empty())
        && var("TERM").is_none_or(|t| t != "dumb")
}

/// How lines on stderr are drawn: colour ([`colour_for`]) and the width they must fit (a
/// terminal's columns).
#[derive(Debug, Clone, Copy)]
struct Style {
    colour: bool,
    width: Option<usize>,
}

impl Style {
    fn for_stderr() -> Style {
        Style {
            colour: colour_for(Stream::Stderr),
            width: columns(Stream::Stderr),
        }
    }

    /// The line made safe for a terminal, red when it reports a failure, dim when it is
    /// detail.
    fn paint(self, line: &str, failed: bool, dim: bool) -> String {
        let line = terminal_safe(line);
        match (self.colour, failed, dim) {
            (true, true, _) => format!("\x1b[31m{line}\x1b[0m"),
            (true, false, true) => format!("\x1b[2m{line}\x1b[0m"),
            _ => line.into_owned(),
        }
    }

    /// One of metron's status lines: [`STATUS_MARK`], then `text` made safe (so every mark
    /// or control character in it, the model's commands and paths, is escaped), wrapped
    /// to the width at spaces and painted line by line. Continuation lines are indented
    /// under the text, two spaces: none starts with the mark, or at the first column,
    /// whatever the text holds, so only the first line reads as a new status line.
    fn status(self, text: &str, failed: bool) -> String {
        let safe = terminal_safe(text);
        let body = match self.width {
            Some(width) => Cow::Owned(wrap(&safe, width.saturating_sub(2), 0)),
            None => safe,
        };
        let mut out = String::with_capacity(body.len() + 8);
        for (n, line) in body.split('\n').enumerate() {
            if n == 0 {
                out.push(STATUS_MARK);
                out.push(' ');
            } else {
                out.push_str("\n  ");
            }
            out.push_str(&self.paint(line, failed, false));
        }
        out
    }
}

/// The line cut to `width` terminal columns (ending in `…`) when it is wider. Only for
/// what is not a reason and must stay one row: a line of a command's output under its
/// outcome line (the whole output is in `/show N`) and the redrawn elapsed-time line.
/// Columns, not characters: a CJK character or an emoji takes two. One pass measures and
/// finds the cut alike; a control character, which [`terminal_safe`] spells out, counts
/// one.
fn fit(line: &str, width: Option<usize>) -> Cow<'_, str> {
    use unicode_width::UnicodeWidthChar;
    let Some(width) = width else {
        return Cow::Borrowed(line);
    };
    let mut used = 0;
    // Where the kept text ends if the line turns out too wide: room is left for `…`.
    let mut cut = None;
    for (at, c) in line.char_indices() {
        used += c.width().unwrap_or(1);
        if cut.is_none() && used >= width {
            cut = Some(at);
        }
        if used > width {
            let kept = &line[..cut.unwrap_or(at)];
            return Cow::Owned(format!("{kept}…"));
        }
    }
    Cow::Borrowed(line)
}

/// One event as one JSON line, without its newline. serde_json escapes only the C0
/// control characters; the C1 controls (U+0085 among them) and the line and paragraph
/// separators U+2028 and U+2029 are escaped too, because common line splitters (Python's
/// `str.splitlines`, JavaScript's line terminators) break lines at them, and a terminal
/// would obey them. Outside strings JSON is ASCII, so every such character is inside a
/// string, where `\uXXXX` means the same character.
pub(crate) fn event_line(event: &Event) -> Option<String> {
    let line = serde_json::to_string(event).ok()?;
    let escape = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}');
    if !line.chars().any(escape) {
        return Some(line);
    }
    let mut out = String::with_capacity(line.len() + 16);
    for c in line.chars() {
        if escape(c) {
            out.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Some(out)
}

/// "Waiting for the model" on stderr, with the seconds elapsed, until the first token.
#[derive(Debug)]
pub(crate) struct Spinner {
    enabled: bool,
    model: String,
    waiting_since: Option<Instant>,
    thinking: bool,
    shown: bool,
    frame: usize,
}

/// Below this wait, no indicator is drawn (it would only flicker).
const SPINNER_DELAY: Duration = Duration::from_millis(300);
const FRAMES: [char; 4] = ['|', '/', '-', '\\'];

impl Spinner {
    /// An indicator drawn only when `enabled` (stderr is a terminal).
    pub(crate) fn new(enabled: bool, model: &str) -> Spinner {
        Spinner {
            enabled,
            model: model.to_owned(),
            waiting_since: None,
            thinking: false,
            shown: false,
            frame: 0,
        }
    }

    /// A model request was sent.
    pub(crate) fn start(&mut self) {
        self.waiting_since = Some(Instant::now());
        self.thinking = false;
    }

    /// The wait is over: erase the indicator.
    pub(crate) fn stop(&mut self) {
        self.waiting_since = None;
        self.clear();
    }

    /// Redraws the indicator, if the wait has lasted long enough to be worth showing.
    pub(crate) fn draw(&mut self) {
        let Some(since) = self.waiting_since else {
            return;
        };
        let waited = since.elapsed();
        if !self.enabled || waited < SPINNER_DELAY {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let what = if self.thinking {
            "thinking"
        } else {
            "waiting for"
        };
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r\x1b[2K{} {what} {} · {}s",
            FRAMES[self.frame],
            // The model may be named by a repository's `.metron.json`.
            one_line_safe(&self.model),
            waited.as_secs()
        );
        let _ = err.flush();
        self.shown = true;
    }

    /// Redraws the elapsed-time line of an approved command that is running:
    /// `running go test ./... 12 s (Ctrl-C stops it)`, cut to the terminal's width.
    pub(crate) fn draw_running(&mut self, label: &str, elapsed: Duration) {
        if !self.enabled || elapsed < SPINNER_DELAY {
            return;
        }
        self.frame = (self.frame + 1) % FRAMES.len();
        let line = running_line(FRAMES[self.frame], label, elapsed);
        let width = Style::for_stderr().width;
        let mut err = std::io::stderr().lock();
        let _ = write!(err, "\r\x1b[2K{}", terminal_safe(&fit(&line, width)));
        let _ = err.flush();
        self.shown = true;
    }

    /// Erases the indicator line if it is drawn.
    pub(crate) fn clear(&mut self) {
        if self.shown {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
            self.shown = false;
        }
    }
}

/// The elapsed-time line of a running command.
fn running_line(frame: char, label: &str, elapsed: Duration) -> String {
    format!(
        "{frame} running {label} {} s (Ctrl-C stops it)",
        elapsed.as_secs()
    )
}

/// Columns the footer fits in: a terminal's classic width, whatever the terminal's own.
const FOOTER_WIDTH: usize = 80;

/// The cost lines under a reply (the tokens, the share of `num_ctx` the prompt used, and
/// where the time went: on one line when that fits in 80 columns, else on two), then a
/// warning once the prompt nears the context window.
pub(crate) fn footer(report: &TurnReport, window: Window) -> Vec<String> {
    let num_ctx = window.effective();
    let calls = match report.tool_calls {
        1 => "1 tool call".to_owned(),
        n => format!("{n} tool calls"),
    };
    let cached = report
        .cached_tokens
        .map(|cached| format!(" ({cached} cached)"))
        .unwrap_or_default();
    let share = match num_ctx {
        0 => String::new(),
        _ => format!(" · {}% of num_ctx", percent(report.prompt_tokens, num_ctx)),
    };
    let tokens = if report.usage_missing {
        format!("[tokens unknown (the server sent no counts) · {calls}]")
    } else {
        format!(
            "[{} prompt{cached} / {} generated tokens · {calls}{share}]",
            report.prompt_tokens, report.generated_tokens,
        )
    };
    let time = latency_text(&report.latency);
    let mut lines = if tokens.chars().count() + 1 + time.chars().count() <= FOOTER_WIDTH {
        vec![format!("{tokens} {time}")]
    } else {
        vec![tokens, time]
    };
    if report.hit_output_limit {
        lines.push(
            "warning: a reply stopped at max_output_tokens, so it may be cut short; ask for a smaller step, or raise max_output_tokens".to_owned(),
        );
    }
    if report.answer.trim().is_empty() {
        lines.push(
            "warning: the model's answer was empty (the server may have dropped a tool call it could not parse); rephrase the request, or try another model".to_owned(),
        );
    }
    if let Some(cut) = report.prompt_truncated {
        lines.push(format!(
            "warning: Ollama probably cut the prompt to fit num_ctx ({} tokens): metron sent at least {} tokens and Ollama evaluated {}, so the model may have lost its instructions and tools; /reset, or raise num_ctx",
            cut.num_ctx, cut.estimated_tokens, cut.evaluated_tokens
        ));
    } else if !report.usage_missing
        && num_ctx > 0
        && u128::from(report.prompt_tokens) * 10 > u128::from(num_ctx) * 8
    {
        lines.push(format!(
            "warning: the prompt is at {}% of num_ctx ({num_ctx} tokens); the next turn starts losing room: /reset, or {}",
            percent(report.prompt_tokens, num_ctx),
            window.remedy()
        ));
    }
    lines
}

/// `part` as a whole percentage of `whole` (not 0), in arithmetic no count a server
/// reports can overflow.
fn percent(part: u64, whole: u64) -> u128 {
    u128::from(part) * 100 / u128::from(whole.max(1))
}

/// Where a turn's time went: `[model 2.4 s (first token 0.8 s) · tools 0.1 s · approval
/// 3.0 s]`; the generating time is the difference.
pub(crate) fn latency_text(latency: &Latency) -> String {
    let s = |ms: u64| format!("{:.1} s", ms as f64 / 1000.0);
    format!(
        "[model {} (first token {}) · tools {} · approval {}]",
        s(latency.first_token_ms + latency.generation_ms),
        s(latency.first_token_ms),
        s(latency.tools_ms),
        s(latency.approval_ms)
    )
}

/// The mark metron's own approval questions start with. Every text the person did not
/// type goes through [`terminal_safe`], which shows this character as an escape, so a
/// model (or a file, or a tool's output) cannot print a line that starts like a real
/// question: a line beginning with it was written by metron.
pub(crate) const QUESTION_MARK: char = '\u{276f}';

/// The mark metron's own status lines start with: a call's outcome line and a turn's
/// evidence line. Like [`QUESTION_MARK`], it is escaped in every text metron did not write
/// (on a terminal by [`terminal_safe`], elsewhere by [`marks_escaped`]), so a model
/// that prints `apply_patch → wrote greet.go (+1 -1)` cannot pass it off as metron's.
pub(crate) const STATUS_MARK: char = '\u{25aa}';

/// Whether a character must be shown as an escape rather than sent to the terminal: the
/// C0 and C1 controls except newline and tab (ESC, and CSI U+009B and OSC U+009D, which
/// some terminals obey as one character), DEL, the bidirectional-format characters
/// (U+061C, U+200E, U+200F, U+202A..U+202E, U+2066..U+2069, which reorder what is read:
/// "Trojan Source"), the line and paragraph separators, and metron's own marks
/// ([`QUESTION_MARK`], [`STATUS_MARK`]). One rule
/// for every path, so no view is laxer than another.
pub(crate) fn needs_escape(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(
            c,
            '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                | '\u{2028}'
                | '\u{2029}'
        )
        || is_mark(c)
}

fn is_mark(c: char) -> bool {
    c == QUESTION_MARK || c == STATUS_MARK
}

/// Text that is not going to a terminal (a pipe, a CI log) with only metron's marks
/// escaped: the bytes are otherwise the model's, but no line can start like one of
/// metron's questions or status lines.
pub(crate) fn marks_escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_mark) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if is_mark(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// Text made harmless for a terminal: every character [`needs_escape`] names is shown
/// as `\u{..}` instead of being obeyed. Used by every path that prints text the person
/// did not type (model text, tool names, arguments and results, file content, config
/// values, server answers).
pub(crate) fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if needs_escape(c) {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// `text` kept on one line and made harmless the same way: [`terminal_safe`], and a newline
/// shown as `\u{a}`, a tab as a space. For names that are printed inside a line of metron's
/// own (a model name from a repository's `.metron.json` or from the server's `/api/tags`,
/// a server's version string): a newline in one would otherwise start a line that looks
/// like metron wrote it.
pub(crate) fn one_line_safe(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\t' => out.push(' '),
            '\n' => out.push_str("\\u{a}"),
            c => out.push_str(&terminal_safe(c.encode_utf8(&mut [0; 4]))),
        }
    }
    out
}

/// Bytes that may not be UTF-8 (a diff's context lines are the file's bytes) made
/// harmless for a terminal: valid text as [`terminal_safe`] shows it, every byte that is
/// not part of valid UTF-8 as `\xNN`, so no raw C1 byte (0x9b is CSI to some terminals)
/// reaches the terminal either.
pub(crate) fn terminal_safe_bytes(bytes: &[u8]) -> Cow<'_, str> {
    if let Ok(text) = std::str::from_utf8(bytes) {
        return terminal_safe(text);
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        out.push_str(&terminal_safe(chunk.valid()));
        for byte in chunk.invalid() {
            out.push_str(&format!("\\x{byte:02x}"));
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_running_command_says_what_for_how_long_and_how_to_stop_it() {
        assert_eq!(
            running_line('|', "go test ./...", Duration::from_millis(12_400)),
            "| running go test ./... 12 s (Ctrl-C stops it)"
        );
    }

    #[test]
    fn colour_only_on_a_terminal_that_wants_it() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(key, _)| *key == name)
                    .map(|(_, value)| OsString::from(value))
            }
        };
        assert!(colour_when(true, env(&[])));
        assert!(colour_when(true, env(&[("TERM", "xterm-256color")])));
        // An empty NO_COLOR is unset (no-color.org).
        assert!(colour_when(true, env(&[("NO_COLOR", "")])));
        assert!(!colour_when(true, env(&[("NO_COLOR", "1")])));
        assert!(!colour_when(true, env(&[("NO_COLOR", "0")])));
        assert!(!colour_when(true, env(&[("TERM", "dumb")])));
        assert!(!colour_when(false, env(&[])));
        assert!(!colour_when(false, env(&[("TERM", "xterm")])));
    }

    #[test]
    fn lines_fit_the_width_and_failures_stand_out() {
        assert_eq!(fit("abcdef", Some(4)), "abc…");
        assert_eq!(fit("abcd", Some(4)), "abcd");
        assert_eq!(fit("abcdef", None), "abcdef");
        // Wide characters take two columns each.
        assert_eq!(fit("日本語のパス", Some(7)), "日本語…");
        assert_eq!(fit("日本語", Some(6)), "日本語");
        let colour = Style {
            colour: true,
            width: Some(80),
        };
        assert_eq!(colour.paint("x", true, false), "\x1b[31mx\x1b[0m");
        assert_eq!(colour.paint("x", false, true), "\x1b[2mx\x1b[0m");
        assert_eq!(colour.paint("x", false, false), "x");
        let plain = Style {
            colour: false,
            width: None,
        };
        assert_eq!(plain.paint("x", true, false), "x");
        // Escapes in a tool's arguments never reach the terminal as escapes.
        assert!(!plain.paint("a\x1b[2Jb", false, false).contains('\x1b'));
    }

    #[test]
    fn footer_counts_fits_80_columns_and_warns_past_80_percent() {
        let report = TurnReport {
            answer: "done".into(),
            prompt_tokens: 1240,
            generated_tokens: 89,
            tool_calls: 3,
            ..TurnReport::default()
        };
        assert_eq!(
            footer(&report, Window::new(16384, None)),
            vec![
                "[1240 prompt / 89 generated tokens · 3 tool calls · 7% of num_ctx]",
                "[model 0.0 s (first token 0.0 s) · tools 0.0 s · approval 0.0 s]",
            ]
        );
        // Ollama's cached count, when it reports one.
        let cached = TurnReport {
            answer: "done".into(),
            prompt_tokens: 1240,
            cached_tokens: Some(1100),
            generated_tokens: 89,
            tool_calls: 3,
            latency: Latency {
                first_token_ms: 123_456,
                generation_ms: 987_654,
                tools_ms: 45_678,
                approval_ms: 99_999,
            },
            ..TurnReport::default()
        };
        let lines = footer(&cached, Window::new(16384, None));
        assert_eq!(
            lines[0],
            "[1240 prompt (1100 cached) / 89 generated tokens · 3 tool calls · 7% of num_ctx]"
        );
        for line in &lines {
            assert!(
                line.chars().count() <= 80,
                "{} columns: {line}",
                line.chars().count()
            );
        }
        let full = TurnReport {
            answer: "done".into(),
            prompt_tokens: 14000,
            tool_calls: 1,
            ..TurnReport::default()
        };
        let lines = footer(&full, Window::new(16384, None));
        assert!(
            lines[0]
                .starts_with("[14000 prompt / 0 generated tokens · 1 tool call · 85% of num_ctx]")
        );
        assert!(lines[2].contains("85% of num_ctx"), "{lines:?}");
    }

    #[test]
    fn footer_takes_counts_at_the_top_of_their_range() {
        let report = TurnReport {
            answer: "done".into(),
            prompt_tokens: u64::MAX,
            generated_tokens: u64::MAX,
            ..TurnReport::default()
        };
        let lines = footer(&report, Window::new(u64::MAX, None));
        assert!(lines[0].contains("100% of num_ctx"), "{lines:?}");
        assert!(
            lines.iter().any(|l| l.contains("the prompt is at 100%")),
            "{lines:?}"
        );
    }

    #[test]
    fn footer_says_unknown_when_the_server_sent_no_counts() {
        let report = TurnReport {
            answer: "done".into(),
            tool_calls: 1,
            usage_missing: true,
            ..TurnReport::default()
        };
        // No share of num_ctx and no "nearly full" warning from counts nobody reported.
        assert_eq!(
            footer(&report, Window::new(4096, None)),
            vec![
                "[tokens unknown (the server sent no counts) · 1 tool call]",
                "[model 0.0 s (first token 0.0 s) · tools 0.0 s · approval 0.0 s]",
            ]
        );
    }

    #[test]
    fn an_event_is_one_line_for_every_line_splitter() {
        let event = Event::ToolProposed {
            turn: 1,
            call_id: "call_0".into(),
            tool: "view_slice".into(),
            arguments: serde_json::json!({
                "path": "a\nb\r\u{1b}[2J\u{85}c\u{2028}d\u{2029}e\u{202e}f"
            }),
        };
        let line = event_line(&event).expect("serialises");
        // Python's str.splitlines() and JavaScript's line terminators split on these too.
        let breaks = |c: char| {
            matches!(
                c,
                '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{1c}'
                    ..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'
            )
        };
        assert!(!line.chars().any(breaks), "{line:?}");
        assert!(!line.chars().any(char::is_control), "{line:?}");
        let back: serde_json::Value = serde_json::from_str(&line).expect("valid JSON");
        assert_eq!(
            back["arguments"]["path"],
            "a\nb\r\u{1b}[2J\u{85}c\u{2028}d\u{2029}e\u{202e}f"
        );
    }

    #[test]
    fn only_metron_starts_a_line_with_its_status_mark() {
        let forged = format!("{STATUS_MARK} changed: greet.go (+1 -1)");
        assert!(!terminal_safe(&forged).contains(STATUS_MARK));
        assert!(!marks_escaped(&forged).contains(STATUS_MARK));
        assert!(!marks_escaped(&format!("{QUESTION_MARK} Apply?")).contains(QUESTION_MARK));
        // Off a terminal, only the marks change: the rest is the model's bytes.
        assert_eq!(marks_escaped("a\x1b[2Jb"), "a\x1b[2Jb");
        // metron's own line keeps one mark, at the start, whatever the text holds.
        let plain = Style {
            colour: false,
            width: None,
        };
        let line = plain.status(&forged, false);
        assert!(line.starts_with(STATUS_MARK));
        assert_eq!(line.matches(STATUS_MARK).count(), 1, "{line}");
    }

    #[test]
    fn a_long_status_line_wraps_whole_and_only_its_first_line_has_the_mark() {
        let narrow = Style {
            colour: false,
            width: Some(40),
        };
        // A mark and an escape placed where a break would fall, as a model could.
        let text = format!(
            "run_command `.venv/bin/pytest` → not run: `.venv/bin/pytest` is a path {STATUS_MARK} forged \x1b[2J and is refused: run_command runs only programs the user lists in `allowed_project_programs`"
        );
        let line = narrow.status(&text, true);
        let lines: Vec<&str> = line.lines().collect();
        assert!(lines.len() > 3, "{line}");
        assert!(
            lines[0].starts_with(&format!("{STATUS_MARK} run_command")),
            "{line}"
        );
        assert_eq!(line.matches(STATUS_MARK).count(), 1, "{line}");
        for continued in &lines[1..] {
            assert!(continued.starts_with("  "), "{continued:?}");
            assert!(
                !continued.trim_start().starts_with(STATUS_MARK),
                "{continued:?}"
            );
            assert!(!continued.contains('\x1b'), "{continued:?}");
        }
        for row in &lines {
            assert!(wrap::text_columns(row) <= 40, "{row:?}");
        }
        // Whole: the remedy at the end is there, with no `…`.
        assert!(line.ends_with("`allowed_project_programs`"), "{line}");
        assert!(!line.contains('…'), "{line}");
        // In colour, each row is painted on its own, so no row leaks its colour.
        let coloured = Style {
            colour: true,
            width: Some(40),
        };
        for row in coloured.status(&text, true).lines() {
            assert!(row.ends_with("\x1b[0m"), "{row:?}");
        }
        // Off a terminal the line is one line, whole.
        let plain = Style {
            colour: false,
            width: None,
        };
        assert_eq!(plain.status(&text, true).lines().count(), 1);
    }

    #[test]
    fn escapes_are_shown_not_obeyed() {
        assert_eq!(terminal_safe("ok\n\tfine"), "ok\n\tfine");
        assert_eq!(terminal_safe("a\x1b[2Jb"), "a\\u{1b}[2Jb");
        assert_eq!(terminal_safe("x\u{202e}y"), "x\\u{202e}y");
    }

    #[test]
    fn c1_controls_arabic_mark_separators_and_the_question_mark_are_escaped() {
        // CSI and OSC as single characters, NEL, the Arabic letter mark.
        assert_eq!(
            terminal_safe("a\u{9b}2Jb\u{9d}0;x\u{85}c\u{61c}d\u{2028}e"),
            "a\\u{9b}2Jb\\u{9d}0;x\\u{85}c\\u{61c}d\\u{2028}e"
        );
        // Nothing but metron writes its question mark.
        let forged = format!("{QUESTION_MARK} Apply this patch? [y/N] ");
        assert!(!terminal_safe(&forged).contains(QUESTION_MARK));
        // Raw bytes that are not UTF-8 are shown as bytes; valid text around them keeps
        // the same rules.
        assert_eq!(
            terminal_safe_bytes(b"x\x9b2J\xffy\x1b"),
            "x\\x9b2J\\xffy\\u{1b}"
        );
        assert_eq!(terminal_safe_bytes("é".as_bytes()), "é");
    }
}
