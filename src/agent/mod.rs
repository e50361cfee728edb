//! The agent loop: one user line in, one answer out, with tools in between.
//!
//! A turn appends the user's line, then makes at most `max_turns` model round trips. Each
//! reply is appended to history; if it asks for tools, each call runs in order and its
//! result goes back as a `tool` message, then the model is asked again. A reply without
//! tool calls ends the turn, and history is compacted (see [`history`]).
//!
//! Policy sits between the model's call and the tool: a tool that was not advertised is
//! refused before it runs; the same call with identical arguments a third time in one
//! turn is refused instead of run; refusals and tool failures go back to the model as
//! text so it can recover. Only model failures (unreachable, mid-stream error, silence)
//! and running out of round trips end a turn with an error.
//!
//! Tools run off the async thread (`spawn_blocking`), so the runtime stays free while a
//! command runs or a question waits: the front end keeps drawing its indicator. Ctrl-C is
//! the session's [`CancelToken`](crate::authority::CancelToken): a running command is
//! killed, a question declined, a write not started; the calls left in the reply are
//! refused by policy, a model request in flight is abandoned, and the turn closes itself
//! with [`TurnError::Interrupted`] before the model is asked again. Dropping the turn's
//! future also cancels it between awaits; [`Agent::interrupted`] then closes the turn.

pub(crate) mod history;
pub(crate) mod landing;
pub(crate) mod ledger;
pub(crate) mod outcome;
pub mod prompt;
pub(crate) mod record;
pub(crate) mod stale;
pub(crate) mod text_calls;
pub(crate) mod think_tags;
pub(crate) mod truncation;
pub(crate) mod window;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use serde_json::value::RawValue;

use crate::authority::policy::{CallPolicy, Rule, WithdrawalReason};
use crate::config::Config;
use crate::instructions::Instructions;
use crate::ollama::wire::{ChatRequest, Message, Options, Role, ToolCall};
use crate::ollama::{Client, Delta, OllamaError, Reply};
use crate::tools::{ToolError, ToolResult, ToolSpec, Toolbox};

use crate::authority::policy::Withdrawn;
pub use history::{Compaction, History, REDACTED_SLICE};
use ledger::Stop;
pub use ledger::{Event, Latency, Ledger, TurnStatus};
use outcome::Evidence;
pub use record::{
    CallOutcome, CommandRun, Entry, FileDelta, NotDone, PolicyDecision, SandboxEvent,
};
pub(crate) use truncation::PromptCut;

/// Anything that answers chat requests: the real [`Client`], or a scripted model in tests
/// and benches.
pub trait Model {
    /// Sends one request; `on_delta` sees the reply text as it arrives.
    fn chat(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> impl Future<Output = Result<Reply, OllamaError>>;
}

impl Model for Client {
    fn chat(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> impl Future<Output = Result<Reply, OllamaError>> {
        Client::chat(self, request, on_delta)
    }
}

/// Where a session's history goes as it changes, so it can be resumed (the session
/// file, `crate::sessions`). Defined here so the loop does not depend on how it is kept.
pub(crate) trait Saver: std::fmt::Debug {
    /// Saves what changed in `history` since the last call; returns the one warning to
    /// show when saving stops.
    fn sync(&mut self, history: &History) -> Option<String>;
    /// Saves a switch of model; the warning when saving stops.
    fn model(&mut self, model: &str) -> Option<String>;
    /// Saves a claim about the project (a file written or read, a command passed), so a
    /// resumed session can check it; the warning when saving stops.
    fn fact(&mut self, fact: &stale::Fact) -> Option<String>;
}

/// What the person sees of a turn while it runs. Every method has a quiet default so a
/// test or a script implements only what it needs.
pub trait Observer {
    /// A model request is about to be sent (start a "waiting" indicator).
    fn model_call_started(&mut self) {}
    /// A piece of the reply arrived.
    fn delta(&mut self, _delta: Delta<'_>) {}
    /// The reply is complete (or failed).
    fn model_call_finished(&mut self) {}
    /// A tool call is about to run (`[executing: TOOL]`).
    fn tool_started(&mut self, _call: &ToolCall) {}
    /// The model wrote `count` tool calls as reply text; they are run as calls.
    fn calls_from_text(&mut self, _count: usize) {}
    /// A tool hit an environment fault (the model is told too).
    fn tool_fault(&mut self, _call: &ToolCall, _message: &str) {}
    /// A ledger event (printed as JSON Lines by `--json`).
    fn event(&mut self, _event: &Event) {}
    /// Something the person should know that is not part of the turn (the session file
    /// stopped saving).
    fn warning(&mut self, _text: &str) {}
}

/// The settings the loop needs, taken from [`Config`].
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// The model to ask.
    pub model: String,
    /// Sampling options and the fixed context window.
    pub options: Options,
    /// Stream replies.
    pub stream: bool,
    /// Round trips per user turn.
    pub max_turns: usize,
    /// Tool output above this many bytes is purged after the turn (file slices).
    pub compact_threshold_bytes: usize,
    /// Messages kept after a turn, beyond the system prompt.
    pub max_history_messages: usize,
    /// Tools the user withholds.
    pub disabled_tools: Vec<String>,
}

impl Settings {
    /// Reads the loop's settings out of the effective configuration.
    pub fn from_config(config: &Config) -> Settings {
        let size = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        Settings {
            model: config.model.clone(),
            options: Options {
                num_ctx: config.num_ctx,
                num_predict: config.max_output_tokens,
                temperature: config.temperature,
                top_p: config.top_p,
            },
            stream: config.stream,
            max_turns: size(config.max_turns),
            compact_threshold_bytes: size(config.compact_threshold_bytes),
            max_history_messages: size(config.max_history_messages),
            disabled_tools: config.disabled_tools.clone(),
        }
    }
}

/// Why a turn ended without an answer.
#[derive(Debug, thiserror::Error)]
pub enum TurnError {
    /// The model could not be asked or failed while answering.
    #[error(transparent)]
    Model(#[from] OllamaError),
    /// `max_turns` round trips were used without a final answer.
    #[error(
        "max turns exceeded: the model made {limit} round trips without finishing; ask for a smaller step, or raise `max_turns`"
    )]
    MaxTurns {
        /// The limit.
        limit: usize,
    },
    /// Ctrl-C reached a tool (a running command, an approval question) and the turn
    /// stopped before asking the model again; it is already closed in history.
    #[error("interrupted")]
    Interrupted,
    /// The server refused the prompt as longer than the context window, and again after
    /// metron trimmed history (or there was nothing left to trim). Built here, not in
    /// the model client, because only the session knows where its window came from: once
    /// it is the model's trained length, raising `num_ctx` changes nothing.
    #[error(
        "the conversation no longer fits the model's context window ({message}); {window}; {remedy}"
    )]
    ContextOverflow {
        /// The server's text.
        message: String,
        /// The session's window and where it came from, as the banner says it.
        window: String,
        /// The next step: "use /reset, or" what would make the window larger
        /// (`num_ctx`, another model, or the server's own setting), or, when the reply's
        /// reserved share alone fills the window, a smaller `max_output_tokens`.
        remedy: String,
    },
}

/// What a completed turn cost, for the footer under each reply.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TurnReport {
    /// The final answer.
    pub answer: String,
    /// `ok`, `incomplete` (a proposed patch did not land) or `error` (the answer was
    /// empty), as `turn_end` says it.
    pub status: TurnStatus,
    /// Prompt tokens of the last round trip: what the context now holds.
    pub prompt_tokens: u64,
    /// Of those, the ones Ollama served from its cache, when it says.
    pub cached_tokens: Option<u64>,
    /// Tokens generated over all round trips.
    pub generated_tokens: u64,
    /// Tool calls made (including refused ones).
    pub tool_calls: usize,
    /// Model round trips.
    pub round_trips: usize,
    /// Time spent waiting for the model.
    pub model_time: Duration,
    /// Time to the first token of the first round trip.
    pub first_token: Option<Duration>,
    /// Time spent in tools (approval questions included).
    pub tool_time: Duration,
    /// What compaction did after the turn.
    pub compaction: Compaction,
    /// A reply of this turn stopped at `max_output_tokens` (`done_reason: length`), so
    /// its text or tool call may be cut short.
    pub hit_output_limit: bool,
    /// Where the time went: first tokens, generation, tools, the person's approvals.
    pub latency: Latency,
    /// A reply of this turn came without token counts, so the counts above are not the
    /// turn's and the footer says "unknown" rather than a confident 0.
    pub usage_missing: bool,
    /// The last round trip of this turn whose prompt Ollama probably cut to fit
    /// `num_ctx` (silently: the model may have lost its instructions and tools).
    pub prompt_truncated: Option<PromptCut>,
}

/// A conversation with a model, over one project's tools.
#[derive(Debug)]
pub struct Agent<M> {
    model: M,
    toolbox: Arc<Toolbox>,
    settings: Settings,
    history: History,
    offered: Vec<&'static ToolSpec>,
    policy: CallPolicy,
    tool_definitions: Option<Box<RawValue>>,
    open_turn: Option<OpenTurn>,
    ledger: Ledger,
    /// What the model must be told before the person's next line (an `/undo`).
    notes_for_model: Vec<String>,
    /// Every tool result of the session, so a reply quoting one is never run as a call.
    shown: text_calls::Shown,
    /// The project's instructions, sent after the system prompt on every request.
    instructions: Instructions,
    /// Where history is saved as it changes, so the session can be resumed.
    log: Option<Box<dyn Saver>>,
    /// What the session's calls claim about the files, checked before each turn.
    facts: Vec<stale::Fact>,
    /// The context window, fixed for the session's model (`settings.options.num_ctx` is
    /// its effective value).
    window: window::Window,
    /// The server refuses an over-long prompt when asked to (`truncate: false`, Ollama
    /// 0.12.4 and later), so every request asks it to. A refusal from any server is
    /// trimmed and retried once (`trim_for_overflow`) whether or not this is set.
    refuses_overflow: bool,
}

/// Bookkeeping for the turn in progress, so an interrupted or failed turn can be closed.
#[derive(Debug, Clone)]
struct OpenTurn {
    /// The turn's number in the ledger.
    turn: u32,
    /// History length before the user's line.
    start: usize,
    /// Tool calls that ran (their effects cannot be undone by dropping history).
    tools_run: usize,
    /// What the turn has cost so far (kept here so an interrupted turn can report it).
    report: TurnReport,
}

impl<M: Model> Agent<M> {
    /// An agent over `toolbox`, offering every tool that can run and is not disabled.
    pub fn new(model: M, toolbox: Toolbox, settings: Settings) -> Agent<M> {
        let mut offered = Vec::new();
        let mut withdrawn = Vec::new();
        for (spec, available) in toolbox.availability() {
            let reason = if settings.disabled_tools.iter().any(|d| d == spec.name) {
                Err(WithdrawalReason::Disabled)
            } else {
                available.map_err(WithdrawalReason::Unavailable)
            };
            match reason {
                Ok(()) => offered.push(spec),
                Err(reason) => withdrawn.push(Withdrawn {
                    name: spec.name,
                    reason,
                }),
            }
        }
        let names = offered.iter().map(|spec| spec.name).collect();
        let window = window::Window::new(settings.options.num_ctx, None);
        Agent {
            model,
            tool_definitions: prompt::raw_tool_definitions(&offered),
            toolbox: Arc::new(toolbox),
            settings,
            history: History::new(prompt::SYSTEM_PROMPT),
            offered,
            policy: CallPolicy::new(names, withdrawn),
            open_turn: None,
            ledger: Ledger::default(),
            notes_for_model: Vec::new(),
            shown: text_calls::Shown::default(),
            instructions: Instructions::off(),
            log: None,
            facts: Vec::new(),
            window,
            refuses_overflow: false,
        }
    }

    /// Fixes the session's context window: every request from now on carries its
    /// effective `num_ctx`. Called once at start and once per change of model, never per
    /// request (a different `num_ctx` makes Ollama reload the model).
    pub(crate) fn set_window(&mut self, window: window::Window) {
        self.settings.options.num_ctx = window.effective();
        self.window = window;
    }

    /// The session's context window.
    pub(crate) fn window(&self) -> window::Window {
        self.window
    }

    /// Whether the server honours `truncate: false` (from its `/api/version`): the loop
    /// then sends it, and trims history itself when a prompt is refused.
    pub(crate) fn set_refuses_overflow(&mut self, refuses: bool) {
        self.refuses_overflow = refuses;
    }

    /// Sends `instructions` after the system prompt, in the same message, from the first
    /// request on. They go in the system message, after metron's rules; nothing changes
    /// it later (a trim's note goes with the person's line), so every request of the
    /// session starts with the same bytes and Ollama's prompt cache keeps them.
    pub(crate) fn with_instructions(mut self, instructions: Instructions) -> Agent<M> {
        self.history = History::new(&format!(
            "{}{}",
            prompt::SYSTEM_PROMPT,
            instructions.block()
        ));
        self.instructions = instructions;
        self
    }

    /// The instructions sent with every request.
    pub(crate) fn instructions(&self) -> &Instructions {
        &self.instructions
    }

    /// What every request carries before the conversation: the system prompt with the
    /// instructions, and the tool definitions.
    pub(crate) fn fixed_prompt(&self) -> FixedPrompt {
        FixedPrompt {
            system_prompt: prompt::SYSTEM_PROMPT.len(),
            instructions: self.instructions.block().len(),
            tools: self.schema_bytes(),
        }
    }

    /// Saves this session to `log` from now on (what history holds now is saved with the
    /// next change).
    pub(crate) fn save_to(&mut self, log: Box<dyn Saver>) {
        self.log = Some(log);
    }

    /// Takes up a saved session's history as it was last sent (`messages`, after
    /// `dropped` were trimmed), so the next request carries the same prefix.
    /// `facts` are what its calls claimed about the files, checked at the first turn.
    pub(crate) fn restore(
        &mut self,
        messages: Vec<Message>,
        dropped: usize,
        facts: Vec<stale::Fact>,
    ) {
        // The system message is this run's (metron's rules and the instructions as they
        // are now), never the file's: see `History::restored`.
        let system = format!("{}{}", prompt::SYSTEM_PROMPT, self.instructions.block());
        self.history = History::restored(&system, messages, dropped);
        // Tool results shown before the resume are still results: a reply quoting a call
        // written in one (an injected file) must not be run as a call.
        for message in self.history.messages() {
            if message.role == Role::Tool {
                self.shown.record(&message.content);
            }
        }
        // The ledger is not restored, so its call numbers mean nothing here.
        self.facts.clear();
        for fact in facts {
            stale::remember(&mut self.facts, stale::Fact { call: 0, ..fact });
        }
    }

    /// Closes a restored history that ends on the person's line, a call or a result the
    /// model never answered (metron was killed during the turn), as an interrupted turn
    /// would be, so the next request does not read as the model's turn still running.
    /// Called once the session log is attached, so the closing message is saved too and
    /// a later resume does not send two requests in a row. Returns a warning when the
    /// save failed.
    pub(crate) fn close_unanswered(&mut self) -> Option<String> {
        let unanswered = self.history.messages().last().is_some_and(|m| {
            m.role == Role::User
                || m.role == Role::Tool
                || (m.role == Role::Assistant && !m.tool_calls.is_empty())
        });
        if !unanswered {
            return None;
        }
        self.history
            .push(Message::new(Role::Assistant, RESUMED_UNANSWERED));
        self.save()
    }

    /// The tools offered to the model, in order.
    pub fn offered(&self) -> &[&'static ToolSpec] {
        &self.offered
    }

    /// The tools withheld, with the reason.
    pub(crate) fn withdrawn(&self) -> &[Withdrawn] {
        self.policy.withdrawn()
    }

    /// Bytes of the tool definitions sent with every request.
    pub(crate) fn schema_bytes(&self) -> usize {
        self.tool_definitions
            .as_ref()
            .map_or(0, |raw| raw.get().len())
    }

    /// The conversation so far.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// The tools and the project they work on.
    pub fn toolbox(&self) -> &Toolbox {
        &self.toolbox
    }

    /// The session's ledger (`/ledger`, `/context`).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Clears the conversation, keeping the system prompt. Returns the warning to show
    /// if saving the session stopped.
    pub(crate) fn reset(&mut self) -> Option<String> {
        self.history.reset();
        self.open_turn = None;
        self.save()
    }

    /// Saves what changed in history since the last save; the warning when saving stops.
    fn save(&mut self) -> Option<String> {
        self.log.as_mut()?.sync(&self.history)
    }

    /// [`Agent::save`], with its warning shown through `observer`.
    fn save_seen(&mut self, observer: &mut dyn Observer) {
        if let Some(warning) = self.save() {
            observer.warning(&warning);
        }
    }

    /// Runs one user turn to its answer.
    pub async fn turn(
        &mut self,
        line: &str,
        observer: &mut dyn Observer,
    ) -> Result<TurnReport, TurnError> {
        let turn = self.ledger.start_turn(line);
        self.toolbox.authority().start_turn();
        self.policy.start_turn();
        let cancel = self.toolbox.authority().cancel_token().clone();
        observer.event(&Event::TurnStart {
            turn,
            prompt: line.to_owned(),
        });
        self.open_turn = Some(OpenTurn {
            turn,
            start: self.history.len(),
            tools_run: 0,
            report: TurnReport::default(),
        });
        // Claims of earlier calls that the files no longer bear out: told once, to both.
        if let Some(note) = stale::check(self.toolbox.project(), &mut self.facts) {
            observer.warning(&note);
            self.notes_for_model
                .push(format!("(Note from metron: {note}.)"));
        }
        // Messages were trimmed and no line the model still has says so: told with this
        // line, not in the system message, which stays byte for byte the same all session
        // so the server's prompt cache keeps it. Decided from history itself, so a
        // session resumed after a trim tells it just as an unbroken one would.
        if self.history.dropped() > 0
            && !self
                .history
                .messages()
                .iter()
                .any(|m| m.role == Role::User && m.content.contains(prompt::DROPPED_NOTE))
        {
            self.notes_for_model.push(prompt::DROPPED_NOTE.to_owned());
        }
        // What happened since the model last looked (an /undo) comes first, so it never
        // goes on believing in a patch the person reverted.
        let message = if self.notes_for_model.is_empty() {
            line.to_owned()
        } else {
            let notes = std::mem::take(&mut self.notes_for_model);
            format!("{}\n\n{line}", notes.join("\n"))
        };
        self.history.push(Message::new(Role::User, message));
        self.save_seen(observer);
        let mut report = TurnReport::default();
        for round in 1..=self.settings.max_turns {
            if round > 1 && self.cancelled_by_user() {
                // The tools saw Ctrl-C. Stop here rather than send their results to the
                // model, which the front end's cancellation would only catch afterwards.
                self.interrupted(observer);
                return Err(TurnError::Interrupted);
            }
            // A prompt the server refuses as too long is trimmed (see `history::overflow`)
            // and sent once more; a second refusal ends the turn.
            let mut trimmed = false;
            let (reply, sent_bytes) = loop {
                let sent_bytes = self.history.carried_bytes() + self.schema_bytes();
                // Ctrl-C abandons a request in flight; the turn closes itself below.
                let reply = tokio::select! {
                    biased;
                    () = cancel.cancelled() => None,
                    reply = self.ask_model(observer) => Some(reply),
                };
                match reply {
                    // Trimming cannot help when the reply's own share fills the window.
                    Some(Err(OllamaError::ContextOverflow { message }))
                        if !trimmed && !history::overflow::output_fills_window(&message) =>
                    {
                        trimmed = true;
                        if self.trim_for_overflow(turn, round, &message, sent_bytes, observer) {
                            continue;
                        }
                        break (
                            Some(Err(OllamaError::ContextOverflow { message })),
                            sent_bytes,
                        );
                    }
                    reply => break (reply, sent_bytes),
                }
            };
            let reply = match reply {
                None => {
                    observer.model_call_finished();
                    self.interrupted(observer);
                    return Err(TurnError::Interrupted);
                }
                Some(Ok(reply)) => reply,
                Some(Err(error)) => {
                    let error = match error {
                        OllamaError::ContextOverflow { message } => TurnError::ContextOverflow {
                            remedy: if history::overflow::output_fills_window(&message) {
                                OUTPUT_FILLS_WINDOW.to_owned()
                            } else {
                                format!("use /reset, or {}", self.window.remedy())
                            },
                            message,
                            window: self.window.line(),
                        },
                        error => TurnError::Model(error),
                    };
                    let message = error.to_string();
                    self.close_turn_early(
                        &format!("(the turn failed: {message})"),
                        observer,
                        Stop::ModelFailed,
                        Some(message),
                    );
                    return Err(error);
                }
            };
            report.round_trips += 1;
            report.prompt_tokens = reply.prompt_tokens;
            report.cached_tokens = reply.cached_tokens;
            report.generated_tokens = report
                .generated_tokens
                .saturating_add(reply.generated_tokens);
            report.model_time += reply.elapsed;
            // Both parts in whole milliseconds of the reply's own `duration_ms`, so they add
            // up to it (rounding each part separately loses up to a millisecond per reply).
            let first = ledger::ms(reply.first_token.unwrap_or(reply.elapsed));
            let total = ledger::ms(reply.elapsed);
            report.latency.first_token_ms += first.min(total);
            report.latency.generation_ms += total.saturating_sub(first);
            if report.first_token.is_none() {
                report.first_token = reply.first_token;
            }
            report.hit_output_limit |= reply.done_reason.as_deref() == Some("length");
            report.usage_missing |= reply.usage_missing;
            // Without counts there is nothing to compare the estimate with; and only Ollama
            // cuts silently to a `num_ctx` metron set (an OpenAI-compatible server's window
            // is its own, and it refuses what does not fit).
            let prompt_truncated = (!reply.usage_missing
                && self.window.kind == crate::ollama::ServerKind::Ollama)
                .then(|| {
                    truncation::suspect(
                        sent_bytes,
                        reply.prompt_tokens,
                        self.settings.options.num_ctx,
                    )
                })
                .flatten();
            if prompt_truncated.is_some() {
                report.prompt_truncated = prompt_truncated;
            }
            let mut content = reply.content;
            let mut thinking = reply.thinking;
            if let Some((reasoning, rest)) = think_tags::split(&content) {
                if thinking.is_empty() {
                    thinking = reasoning.to_owned();
                }
                content = rest.to_owned();
            }
            let mut calls = reply.tool_calls;
            let mut calls_from_text = 0;
            // A reply cut at max_output_tokens, or still inside an unclosed `<think>`,
            // holds drafts, not requests.
            let complete = reply.done_reason.as_deref() != Some("length")
                && !think_tags::starts_unclosed(&content);
            if calls.is_empty()
                && complete
                && let Some(recovered) = text_calls::recover(
                    &content,
                    |name| self.offered.iter().any(|spec| spec.name == name),
                    &self.shown,
                )
            {
                calls_from_text = recovered.calls.len();
                calls = recovered.calls;
                content = recovered.text;
                observer.calls_from_text(calls_from_text);
            }
            self.history.make_ids_unique(&mut calls);
            observer.event(&Event::ModelReply {
                turn,
                round,
                prompt_tokens: reply.prompt_tokens,
                prompt_cached_tokens: reply.cached_tokens,
                generated_tokens: reply.generated_tokens,
                tool_calls: calls.len(),
                first_token_ms: reply.first_token.map(ledger::ms),
                duration_ms: ledger::ms(reply.elapsed),
                done_reason: reply.done_reason.clone(),
                calls_from_text,
                tokens_unreported: reply.usage_missing,
                prompt_truncated,
            });
            self.history.push(Message {
                thinking: (!thinking.is_empty()).then_some(thinking),
                tool_calls: calls.iter().map(sendable_call).collect(),
                ..Message::new(Role::Assistant, content.clone())
            });
            self.save_seen(observer);
            if calls.is_empty() {
                report.answer = content;
                report.compaction = self.compact();
                self.save_seen(observer);
                self.open_turn = None;
                let (stop, error) = if report.answer.trim().is_empty() {
                    (Stop::EmptyAnswer, Some(EMPTY_ANSWER.to_owned()))
                } else {
                    (Stop::Answered, None)
                };
                report.status = self.end_turn(turn, stop, &report, error, observer);
                return Ok(report);
            }
            for call in &calls {
                observer.tool_started(call);
                let started = Instant::now();
                let (text, approval_wait) = self.run_call(turn, call, observer).await;
                let spent = started.elapsed();
                report.latency.approval_ms += ledger::ms(approval_wait);
                report.latency.tools_ms += ledger::ms(spent.saturating_sub(approval_wait));
                report.tool_time += spent;
                self.shown.record(&text);
                self.history.push(Message::tool_result(call, text));
                self.save_seen(observer);
                report.tool_calls += 1;
                if let Some(open) = &mut self.open_turn {
                    open.tools_run += 1;
                    open.report = report.clone();
                }
            }
        }
        if self.cancelled_by_user() {
            self.interrupted(observer);
            return Err(TurnError::Interrupted);
        }
        let limit = self.settings.max_turns;
        let error = TurnError::MaxTurns { limit };
        self.close_turn_early(
            &format!("(stopped: max turns exceeded after {limit} round trips)"),
            observer,
            Stop::MaxTurns,
            Some(error.to_string()),
        );
        Err(error)
    }

    /// Trims history after the server refused the prompt of round `round` (`sent_bytes`
    /// bytes) as longer than the context window, by the policy of `history::overflow`,
    /// and tells the person (a warning), the model (a note at the end of the last
    /// message, `History::add_note`: the system message stays byte for byte what it was,
    /// so the server's prompt cache keeps it) and the ledger. Returns false when nothing could be dropped: the same prompt
    /// would be refused again.
    fn trim_for_overflow(
        &mut self,
        turn: u32,
        round: usize,
        refusal: &str,
        sent_bytes: usize,
        observer: &mut dyn Observer,
    ) -> bool {
        let Some(start) = self.open_turn.as_ref().map(|open| open.start) else {
            return false;
        };
        let kept = |m: Option<&Message>| m.map_or(0, Message::carried_bytes);
        let droppable = self.history.carried_bytes().saturating_sub(
            kept(self.history.messages().first()) + kept(self.history.messages().get(start)),
        );
        let want = history::overflow::bytes_to_free(refusal, sent_bytes, droppable);
        let Some(trim) = self.history.trim_to_fit(start, want) else {
            return false;
        };
        if let Some(open) = &mut self.open_turn {
            open.start = open.start.saturating_sub(trim.messages_dropped);
        }
        let what = trim_words(trim);
        self.history.add_note(&format!(
            "(Note from metron: the conversation no longer fit the context window, so metron dropped {what}; call the tools again for anything you still need from them.)"
        ));
        self.save_seen(observer);
        let line = format!(
            "the conversation no longer fit the context window ({} tokens): dropped {what} ({} bytes) and asked again",
            self.settings.options.num_ctx, trim.bytes_freed
        );
        self.ledger.record_note(turn, line.clone());
        observer.event(&Event::HistoryTrimmed {
            turn,
            round,
            refusal: refusal.to_owned(),
            results_dropped: trim.results_dropped,
            messages_dropped: trim.messages_dropped,
            bytes_freed: trim.bytes_freed,
        });
        observer.warning(&line);
        true
    }

    /// Closes a turn whose future was dropped (Ctrl-C): history stays valid for the next
    /// request, the model is told the turn was interrupted, and the ledger says so.
    pub fn interrupted(&mut self, observer: &mut dyn Observer) {
        self.close_turn_early(
            "(interrupted by the user before answering)",
            observer,
            Stop::Interrupted,
            Some("interrupted by the user (Ctrl-C)".to_owned()),
        );
    }

    /// Ctrl-C reached this turn's tools: at an approval question, or while a command
    /// ran. The calls left in the reply must not run (a standing approval or `--yes`
    /// would otherwise let them through), and nothing more goes to the model.
    fn cancelled_by_user(&self) -> bool {
        self.toolbox.authority().turn_cancelled()
    }

    async fn ask_model(&self, observer: &mut dyn Observer) -> Result<Reply, OllamaError> {
        let request = ChatRequest {
            model: &self.settings.model,
            messages: self.history.messages(),
            tools: self.tool_definitions.as_deref(),
            stream: self.settings.stream,
            options: self.settings.options,
            truncate: self.refuses_overflow.then_some(false),
        };
        observer.model_call_started();
        let reply = self
            .model
            .chat(&request, &mut |delta| observer.delta(delta))
            .await;
        observer.model_call_finished();
        reply
    }

    /// Policy, then execution: the text the model gets back for one call, and how long
    /// the person took to approve it. Every stage goes into the ledger and out as events.
    async fn run_call(
        &mut self,
        turn: u32,
        call: &ToolCall,
        observer: &mut dyn Observer,
    ) -> (String, Duration) {
        let name = call.function.name.as_str();
        let call_id = call.id.clone();
        observer.event(&Event::ToolProposed {
            turn,
            call_id: call_id.clone(),
            tool: name.to_owned(),
            arguments: call.function.arguments.clone(),
        });
        // `"10"` and `10` are the same call once the tool converts them.
        let canonical = crate::tools::coerce_to_schema(name, &call.function.arguments);
        let arguments = canonical.as_ref().unwrap_or(&call.function.arguments);
        let cancelled = self.cancelled_by_user();
        let policy = self.policy.check(name, &arguments.to_string(), cancelled);
        let rule = match &policy {
            Ok(()) => Rule::Offered,
            Err(refusal) => refusal.rule.clone(),
        };
        let allowed = rule.allows();
        observer.event(&Event::Decision {
            call_id: call_id.clone(),
            allowed,
            rule: rule.clone(),
        });
        let mut account = None;
        let (text, outcome) = match policy {
            Err(refusal) => (refusal.text, CallOutcome::Refused),
            Ok(()) => match self.call_tool(name, call.function.arguments.clone()).await {
                Ok(result) => {
                    account = Some(result.account);
                    match result.text {
                        text if text.is_empty() => ("(no output)".to_owned(), CallOutcome::Ok),
                        text => (text, CallOutcome::Ok),
                    }
                }
                Err(ToolError::BadArguments(text)) => (text, CallOutcome::Error),
                Err(ToolError::Refused(text) | ToolError::Conflict { message: text, .. }) => {
                    (text, CallOutcome::Refused)
                }
                Err(ToolError::Fault(text)) => {
                    observer.tool_fault(call, &text);
                    (format!("{name} failed: {text}"), CallOutcome::Fault)
                }
            },
        };
        let journal = self.toolbox.authority().take_journal();
        let wrote = journal
            .effects
            .iter()
            .any(|e| matches!(e, crate::authority::journal::Effect::Wrote { .. }));
        let mut waited = Duration::ZERO;
        for approval in &journal.approvals {
            waited += approval.waited;
            observer.event(&ledger::approval_event(&call_id, approval));
        }
        for effect in &journal.effects {
            observer.event(&ledger::effect_event(&call_id, effect));
        }
        let summary = outcome::describe(
            name,
            &call.function.arguments,
            &rule,
            outcome,
            account.as_ref(),
            &text,
            &journal,
        );
        observer.event(&Event::ToolResult {
            call_id: call_id.clone(),
            tool: name.to_owned(),
            outcome,
            bytes: text.len(),
            summary: summary.text.clone(),
            failed: summary.failed,
            output_tail: summary.tail.clone(),
        });
        self.ledger.record(Entry {
            turn,
            call_id,
            tool: name.to_owned(),
            arguments: call.function.arguments.clone(),
            policy: PolicyDecision { allowed, rule },
            approvals: journal.approvals,
            effects: journal.effects,
            outcome,
            reported: text.lines().next().unwrap_or("").to_owned(),
            reported_bytes: text.len(),
            result: text.clone(),
            summary,
        });
        let number = self.ledger.entries().len();
        if wrote {
            // The ledger's number for this call, so /undo can name it.
            self.toolbox.authority().number_newest_applied(number);
        }
        self.record_facts(number, observer);
        (text, waited)
    }

    /// The claims ledger entry `number` makes about the project: the files it wrote (their
    /// content after), the file it read (hashed now, bounded by `stale::MAX_HASH_BYTES`),
    /// the command that passed.
    fn record_facts(&mut self, number: usize, observer: &mut dyn Observer) {
        let Some(entry) = self.ledger.entries().last() else {
            return;
        };
        let mut facts = Vec::new();
        for effect in &entry.effects {
            match effect {
                crate::authority::journal::Effect::Wrote { files } => {
                    for file in files {
                        facts.push(stale::Fact::now(
                            stale::Claim::Wrote,
                            file.path.clone(),
                            file.after.as_ref().map(ToString::to_string),
                            number,
                        ));
                    }
                }
                crate::authority::journal::Effect::Ran {
                    exit: crate::authority::journal::Exit::Code(0),
                    ..
                } => {
                    if let Some(command) = entry.arguments["command"].as_str() {
                        facts.push(stale::Fact::now(
                            stale::Claim::Passed,
                            command.to_owned(),
                            None,
                            number,
                        ));
                    }
                }
                _ => {}
            }
        }
        if entry.tool == "view_slice"
            && entry.outcome == CallOutcome::Ok
            && let Some(path) = entry.arguments["path"].as_str()
            && let Ok(hash) = stale::hash_now(self.toolbox.project(), path)
        {
            facts.push(stale::Fact::now(
                stale::Claim::Read,
                path.to_owned(),
                hash,
                number,
            ));
        }
        for fact in facts {
            if let Some(log) = self.log.as_mut()
                && let Some(warning) = log.fact(&fact)
            {
                observer.warning(&warning);
            }
            stale::remember(&mut self.facts, fact);
        }
    }

    /// Lines for `/ledger`: each claim found stale, by call.
    pub(crate) fn stale_lines(&self) -> Vec<String> {
        self.facts
            .iter()
            .filter(|f| f.stale)
            .map(|f| {
                let call = match f.call {
                    0 => "an earlier session".to_owned(),
                    n => format!("call {n}"),
                };
                let claim = match f.claim {
                    stale::Claim::Wrote => format!("wrote {}", f.subject),
                    stale::Claim::Read => format!("read {}", f.subject),
                    stale::Claim::Passed => format!("`{}` passed", f.subject),
                };
                format!("stale: {call}: {claim}; the files have changed since")
            })
            .collect()
    }

    /// Runs a tool off the async thread, so the runtime stays free while it works (the
    /// front end keeps drawing, Ctrl-C is seen). A panic inside it (a bug) becomes a fault
    /// for this call, so the call still gets its result, approval and effect events, and
    /// its ledger entry, from what the journal recorded before the panic, and the session
    /// goes on.
    async fn call_tool(&self, name: &str, arguments: Value) -> Result<ToolResult, ToolError> {
        let toolbox = Arc::clone(&self.toolbox);
        let name = name.to_owned();
        let task = tokio::task::spawn_blocking(move || toolbox.run(&name, arguments));
        match task.await {
            Ok(result) => result,
            Err(error) => {
                let why = match error.try_into_panic() {
                    Ok(panic) => panic
                        .downcast_ref::<&str>()
                        .map(|s| (*s).to_owned())
                        .or_else(|| panic.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".to_owned()),
                    Err(error) => error.to_string(),
                };
                Err(ToolError::Fault(format!("internal error in metron: {why}")))
            }
        }
    }

    /// Ends a turn that produced no answer. When no tool ran, the turn is undone (the
    /// person can simply retry); otherwise its effects are real, so history keeps the
    /// calls and a note saying how the turn ended.
    fn close_turn_early(
        &mut self,
        note: &str,
        observer: &mut dyn Observer,
        stop: Stop,
        error: Option<String>,
    ) {
        let Some(open) = self.open_turn.take() else {
            return;
        };
        self.end_turn(open.turn, stop, &open.report, error, observer);
        // A turn that failed before any tool ran is undone: the person sees the error
        // and sends the line again. One they cancelled keeps their line, closed by the
        // note, so that "go on" afterwards has something to go on with.
        if open.tools_run == 0 && stop != Stop::Interrupted {
            self.history.truncate(open.start);
            self.save_seen(observer);
            return;
        }
        let note = if open.tools_run == 0 {
            CANCELLED_BEFORE_ANSWER
        } else {
            note
        };
        self.history.push(Message::new(Role::Assistant, note));
        self.compact();
        self.save_seen(observer);
    }

    /// Records the end of a turn in the ledger, emits its event, and returns its status:
    /// how it `stop`ped, weighed against whether its proposed patches landed.
    fn end_turn(
        &mut self,
        turn: u32,
        stop: Stop,
        report: &TurnReport,
        error: Option<String>,
        observer: &mut dyn Observer,
    ) -> TurnStatus {
        let evidence = Evidence::of(self.ledger.entries().iter().filter(|e| e.turn == turn));
        let status = stop.status(landing::all_landed(&evidence.patches_not_applied));
        self.ledger.end_turn(stop, status);
        observer.event(&Event::TurnEnd {
            turn,
            status,
            answer: (stop == Stop::Answered).then(|| report.answer.clone()),
            error,
            prompt_tokens: report.prompt_tokens,
            generated_tokens: report.generated_tokens,
            tool_calls: report.tool_calls,
            round_trips: report.round_trips,
            latency: report.latency,
            files_changed: evidence.files_changed,
            patches_not_applied: evidence.patches_not_applied,
            commands: evidence.commands,
        });
        status
    }

    fn compact(&mut self) -> Compaction {
        self.history.compact(
            self.settings.compact_threshold_bytes,
            self.settings.max_history_messages,
        )
    }
}

/// The bytes every request carries before the conversation, part by part: the fixed
/// overhead `/config`, `/context` and the doctor show.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FixedPrompt {
    /// metron's system prompt.
    pub(crate) system_prompt: usize,
    /// The project's instructions, as sent (with their frame).
    pub(crate) instructions: usize,
    /// The tool definitions.
    pub(crate) tools: usize,
}

impl FixedPrompt {
    /// All of it.
    pub(crate) fn total(self) -> usize {
        self.system_prompt + self.instructions + self.tools
    }

    /// One line: `3110 bytes (~778 tokens) on every request: system prompt 520,
    /// instructions 2100, tool definitions 490`.
    pub(crate) fn line(self) -> String {
        format!(
            "{} bytes (~{} tokens) on every request: system prompt {}, instructions {}, tool definitions {}",
            self.total(),
            prompt::approx_tokens(self.total()),
            self.system_prompt,
            self.instructions,
            self.tools
        )
    }
}

/// Closes a turn the person cancelled (Ctrl-C) before the model answered and before any
/// tool ran: their line stays in history, and this tells the model it went unanswered.
const CANCELLED_BEFORE_ANSWER: &str = "(cancelled by the user before an answer)";

/// What a trim dropped, in words: `2 earlier tool results and 8 earlier messages`.
fn trim_words(trim: history::overflow::Trim) -> String {
    let mut parts = Vec::new();
    if trim.results_dropped > 0 {
        parts.push(crate::tools::count(
            trim.results_dropped,
            "earlier tool result",
            "earlier tool results",
        ));
    }
    if trim.messages_dropped > 0 {
        parts.push(crate::tools::count(
            trim.messages_dropped,
            "earlier message",
            "earlier messages",
        ));
    }
    parts.join(" and ")
}

/// Closes a saved turn that was never answered (metron was killed during it).
const RESUMED_UNANSWERED: &str =
    "(metron stopped before answering this; the session was resumed later)";

/// `turn_end.error` for a reply with neither tool calls nor text.
/// The remedy when the server says `max_tokens` alone fills its window.
const OUTPUT_FILLS_WINDOW: &str = "the room reserved for the reply alone fills the window, so no trim or /reset helps: lower `max_output_tokens` well below the window";

const EMPTY_ANSWER: &str = "the model's answer was empty (the server may have dropped a tool call it could not parse); rephrase the request, or try another model";

/// A call as it goes back into history: Ollama rejects arguments that are not an object.
fn sendable_call(call: &ToolCall) -> ToolCall {
    let mut call = call.clone();
    if !call.function.arguments.is_object() {
        call.function.arguments = Value::Object(Default::default());
    }
    call
}

impl<M> Agent<M> {
    /// `/undo`: reverts the newest patch of this session if every file it touched still
    /// holds what metron wrote; records it in the ledger as the person's effect, and tells
    /// the model at the start of the next turn. Returns what to print, or why not.
    pub(crate) fn undo(&mut self) -> Result<String, String> {
        let undone = self.toolbox.undo()?;
        let which = undone.patch.call.map_or_else(
            || "a patch".to_owned(),
            |n| format!("the patch of call {n}"),
        );
        let paths: Vec<String> = undone.files.iter().map(|f| f.path.clone()).collect();
        self.notes_for_model.push(format!(
            "(Note from metron: since your last answer the user ran /undo and reverted {which}: {} {} back to the content before it. Read before patching again.)",
            paths.join(", "),
            if paths.len() == 1 { "is" } else { "are" }
        ));
        let effect = crate::authority::journal::Effect::Wrote {
            files: undone.files,
        };
        let shown = ledger::describe_effect(&effect);
        self.ledger
            .record_by_person(format!("/undo of {which}"), effect);
        Ok(format!("undid {which}: {shown}"))
    }

    /// `/diff`: this session's writes as one unified diff, from each file's content before
    /// metron's first write to its content now.
    pub(crate) fn session_diff(&self) -> Result<Vec<u8>, String> {
        self.toolbox.session_diff()
    }

    /// Drops the symbol index and walks the tree again (`/tags`); returns how many source
    /// files it knows, per language found.
    pub(crate) fn rebuild_symbols(&self) -> Vec<(&'static str, usize)> {
        self.toolbox.symbols().rebuild()
    }

    /// Asks `model` from the next request on (`/model NAME`). History, ledger and tools
    /// are kept, so the conversation carries over to the new model.
    /// Returns the warning to show if saving the session stopped.
    pub(crate) fn set_model(&mut self, model: String) -> Option<String> {
        let warning = self.log.as_mut().and_then(|log| log.model(&model));
        self.settings.model = model;
        warning
    }
}
