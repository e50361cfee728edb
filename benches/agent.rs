//! Criterion bench for metron's own work per model round trip, against an in-process fake
//! model, so nothing but metron's code is timed.
//!
//! The target: building the request, parsing the stream, running a view_slice and
//! compaction take under 1 ms per round trip at the median with a 40-message history.
//!
//! The fake model does, for every request, what the real client does with its bytes: it
//! serialises the request with `serde_json::to_vec` (the body the client would send), and
//! builds the reply by feeding canned NDJSON lines, shaped like a real Ollama stream, one
//! line per read through the client's stream parser (what the client does with the body it
//! receives). Only the network and the model are missing. A turn is two round trips: the
//! model first asks for a view_slice of a real 120-line file in a temp project, and after
//! the tool result it streams a 60-chunk answer; then the turn ends with compaction.
//!
//! Groups:
//!
//! - `round_trip`: whole turns through `Agent::turn`. Each iteration runs one turn of two
//!   round trips and criterion is handed half the time, so the reported time is **per
//!   round trip** (request building and stream parsing twice, one view_slice and one
//!   compaction per turn, all halved).
//!   - `40_messages`: the steady state of a long session: `max_history_messages = 40`,
//!     the history holds 28 to 40 messages before each turn, the turn adds 4 and
//!     compaction redacts the new slice, and every fourth turn trims the oldest exchanges
//!     back to 28 (three quarters of the limit, see `History::trim`). No setup between
//!     iterations.
//!   - `40_messages_no_trim`: `max_history_messages = 60`; a fresh agent whose history
//!     holds 40 messages is built before every iteration (not timed), so compaction only
//!     redacts.
//! - The pieces, each measured alone:
//!   - `build_request/40_messages`: `serde_json::to_vec` of a request carrying 40
//!     messages (and the system prompt) and the 5 advertised tool definitions;
//!   - `build_request/43_messages_with_slice`: the turn's second request, which still
//!     carries the 120-line slice;
//!   - `parse_stream/60_chunks`: the 60-line streamed answer; `parse_stream/tool_call`:
//!     the 3-line reply asking for view_slice;
//!   - `view_slice/120_lines`: the tool call through `Toolbox::call`;
//!   - `outcome/view_slice_line`: the person's outcome line for the 120-line view_slice
//!     (added to every call); `outcome/turn_evidence`: the evidence of a turn, read from
//!     the ledger (added to every turn's end);
//!   - `compaction/40_messages`: compacting the history right after a turn (44 messages,
//!     one fresh slice and reasoning to drop), without and with trimming.
//!
//! The machine the numbers were taken on is shared (2 cores) and noisy; read the pieces
//! against each other and against the 1 ms budget, not as absolute truths.
//!
//! ```sh
//! cargo bench --bench agent -- --warm-up-time 1 --measurement-time 3
//! ```

mod support;

use std::cell::Cell;
use std::hint::black_box;
use std::path::Path;
use std::rc::Rc;
use std::time::{Duration, Instant};

use criterion::BatchSize;
use metron::agent::{Agent, History, Model, Observer, Settings, prompt};
use metron::config::Config;
use metron::ollama::wire::{ChatRequest, FunctionCall, Message, Role, ToolCall};
use metron::ollama::{Delta, OllamaError, Reply};
use metron::project::Project;
use metron::tools::{Budgets, Toolbox};
use serde_json::json;
use serde_json::value::RawValue;
use tokio::runtime::Runtime;

/// The file the model views, relative to the project root.
const SLICE_PATH: &str = "src/server.rs";
/// Its length: the default `max_slice_lines`, viewed whole.
const SLICE_LINES: usize = 120;
/// Exchanges (user, assistant call, tool result, answer) that fill the history to 40.
const PRIMING_TURNS: usize = 10;
/// The model name echoed in every chunk.
const MODEL: &str = "qwen2.5-coder:32b";

fn main() {
    let mut c = support::criterion(Duration::from_secs(3));

    let dir = tempfile::Builder::new()
        .prefix("metron-bench-agent-")
        .tempdir()
        .expect("temp dir");
    let root = dir.path();
    write_project(root);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("tokio runtime");

    // Sanity checks, and the byte counts the report should quote.
    let request_bytes = Rc::new(Cell::new([0; 2]));
    let mut steady = primed_agent(root, 40, &runtime, Rc::clone(&request_bytes));
    assert_eq!(steady.history().messages().len(), 1 + 4 * PRIMING_TURNS);
    let mut observer = Counting::default();
    let report = runtime
        .block_on(steady.turn("and where is it called?", &mut observer))
        .expect("a turn against the fake model");
    assert_eq!((report.round_trips, report.tool_calls), (2, 1));
    assert_eq!(report.compaction.slices_redacted, 1);
    // Over the limit, compaction trims to three quarters of it (30), cutting before a
    // user message: four exchanges go.
    assert_eq!(report.compaction.messages_dropped, 16);
    assert_eq!(
        steady.history().messages().len(),
        1 + 4 * (PRIMING_TURNS - 3)
    );
    assert_eq!(steady.offered().len(), 5, "the five tools of a git project");
    eprintln!(
        "history: {} messages after the system prompt, {} bytes carried; tool definitions {} bytes; request bodies {} and {} bytes; answer {} bytes",
        steady.history().messages().len() - 1,
        steady.history().carried_bytes(),
        prompt::tool_definitions(steady.offered()).len(),
        request_bytes.get()[0],
        request_bytes.get()[1],
        observer.content_bytes,
    );

    let mut group = c.benchmark_group("round_trip");
    group.bench_function("40_messages", |b| {
        b.iter_custom(|iters| {
            let started = Instant::now();
            for _ in 0..iters {
                let report = runtime
                    .block_on(steady.turn("and where is it called?", &mut Counting::default()));
                black_box(report.expect("turn"));
            }
            started.elapsed() / 2
        });
    });
    group.bench_function("40_messages_no_trim", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let mut agent = primed_agent(root, 60, &runtime, Rc::default());
                let started = Instant::now();
                let report = runtime
                    .block_on(agent.turn("and where is it called?", &mut Counting::default()));
                total += started.elapsed();
                black_box(report.expect("turn"));
            }
            total / 2
        });
    });
    group.finish();
    let len = steady.history().messages().len();
    assert!((1 + 28..=1 + 40).contains(&len), "{len} messages");

    // The pieces.
    let tools = RawValue::from_string(prompt::tool_definitions(steady.offered()))
        .expect("tool definitions");
    let settings = Settings::from_config(&bench_config(40));
    let request = |messages| ChatRequest {
        model: &settings.model,
        messages,
        tools: Some(&tools),
        stream: settings.stream,
        options: settings.options,
        truncate: None,
    };
    let history = steady.history().clone();
    let slice = steady
        .toolbox()
        .call("view_slice", view_slice_arguments())
        .expect("view_slice");
    let mut in_turn = history.clone();
    push_exchange(&mut in_turn, &slice, false);
    let mut group = c.benchmark_group("build_request");
    group.bench_function("40_messages", |b| {
        let request = request(history.messages());
        b.iter(|| serde_json::to_vec(black_box(&request)).expect("serialise"));
    });
    group.bench_function("43_messages_with_slice", |b| {
        let request = request(in_turn.messages());
        b.iter(|| serde_json::to_vec(black_box(&request)).expect("serialise"));
    });
    group.finish();

    let stream = Stream::new();
    let mut group = c.benchmark_group("parse_stream");
    group.bench_function("60_chunks", |b| {
        b.iter(|| parse(black_box(&stream.answer), "call_m2", &mut |_| {}));
    });
    group.bench_function("tool_call", |b| {
        b.iter(|| parse(black_box(&stream.tool_call), "call_m1", &mut |_| {}));
    });
    group.finish();

    let mut group = c.benchmark_group("view_slice");
    group.bench_function("120_lines", |b| {
        // The agent hands the tool a clone of the call's arguments; so does this.
        let (toolbox, arguments) = (steady.toolbox(), view_slice_arguments());
        b.iter(|| toolbox.call("view_slice", black_box(arguments.clone())));
    });
    group.finish();

    // What the person sees: the outcome line of every call (here the 120-line slice, the
    // longest result a call returns in this session) and the evidence of every turn.
    let turns = steady.ledger().entries().last().map_or(0, |e| e.turn);
    let mut group = c.benchmark_group("outcome");
    group.bench_function("view_slice_line", |b| {
        let arguments = view_slice_arguments();
        let result = metron::testing::run_tool(steady.toolbox(), "view_slice", arguments.clone())
            .expect("view_slice");
        b.iter(|| metron::testing::outcome_line("view_slice", &arguments, black_box(&result)));
    });
    group.bench_function("turn_evidence", |b| {
        b.iter(|| metron::testing::evidence_line(black_box(steady.ledger()), turns));
    });
    group.finish();

    let mut after_turn = history.clone();
    push_exchange(&mut after_turn, &slice, true);
    let mut group = c.benchmark_group("compaction");
    for (name, max_messages) in [("40_messages", 60), ("40_messages_trim", 40)] {
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || after_turn.clone(),
                |h| h.compact(settings.compact_threshold_bytes, max_messages),
                BatchSize::SmallInput,
            );
        });
    }
    group.finish();

    c.final_summary();
}

/// An agent over the project whose history holds `4 * PRIMING_TURNS` messages, the way a
/// session gets there: by running turns.
fn primed_agent(
    root: &Path,
    max_history_messages: u64,
    runtime: &Runtime,
    request_bytes: Rc<Cell<[usize; 2]>>,
) -> Agent<FakeModel> {
    let config = bench_config(max_history_messages);
    let project = Project::open(root, true).expect("open the project");
    let toolbox = Toolbox::new(project, Budgets::from_config(&config));
    let mut agent = Agent::new(
        FakeModel::new(request_bytes),
        toolbox,
        Settings::from_config(&config),
    );
    for n in 0..PRIMING_TURNS {
        let line = format!("question {n}: what does the handler in {SLICE_PATH} do with errors?");
        runtime
            .block_on(agent.turn(&line, &mut Counting::default()))
            .expect("a priming turn");
    }
    agent
}

/// The configuration every agent here runs with.
fn bench_config(max_history_messages: u64) -> Config {
    Config {
        model: MODEL.to_owned(),
        max_history_messages,
        ..Config::default()
    }
}

/// What the model is asked for.
fn view_slice_arguments() -> serde_json::Value {
    json!({"path": SLICE_PATH, "start": 1, "end": SLICE_LINES})
}

/// Appends one exchange as a turn leaves it before compaction: the question, the call
/// (with reasoning), the slice and, when `answered`, the answer.
fn push_exchange(history: &mut History, slice: &str, answered: bool) {
    let call = ToolCall {
        id: "call_x1y2z3w4".to_owned(),
        function: FunctionCall {
            index: 0,
            name: "view_slice".to_owned(),
            arguments: view_slice_arguments(),
        },
    };
    history.push(Message::new(Role::User, "and where is it called?"));
    history.push(Message {
        thinking: Some(THINKING.to_owned()),
        tool_calls: vec![call.clone()],
        ..Message::new(Role::Assistant, "")
    });
    history.push(Message::tool_result(&call, slice));
    if answered {
        history.push(Message::new(Role::Assistant, ANSWER));
    }
}

/// The model's reasoning before it calls the tool.
const THINKING: &str = "The handler is in src/server.rs; I should view it before answering.";

/// The final answer, streamed as 59 content chunks and a done line.
const ANSWER: &str = "The handler in src/server.rs:42 maps every error to a status code \
through `status_for` and logs it once with the request id before replying; parse errors \
become 400, a missing record 404, and anything else 500 with a generic body, so nothing \
internal leaks to the client. It is called from `route` in src/router.rs:17 for every \
request kind, and from the retry loop in src/worker.rs:88, which resends only on 500.";

/// Canned NDJSON replies, one line per network read, shaped like Ollama's (see the
/// project's `ollama-api.md`, section 2.2).
struct Stream {
    /// Reasoning, one complete view_slice call, then `done`.
    tool_call: Vec<Vec<u8>>,
    /// The answer in 59 content chunks, then `done`: 60 chunks.
    answer: Vec<Vec<u8>>,
}

impl Stream {
    fn new() -> Stream {
        let mut n = 0;
        let mut line = |message: serde_json::Value, done: bool| {
            n += 1;
            let mut chunk = json!({
                "model": MODEL,
                "created_at": format!("2026-03-01T10:00:{:02}.{n:03}Z", n / 10),
                "message": message,
                "done": done,
            });
            if done {
                let extra = json!({
                    "done_reason": "stop",
                    "total_duration": 912_000_000_u64,
                    "load_duration": 41_000_000_u64,
                    "prompt_eval_count": 3110,
                    "prompt_eval_duration": 120_000_000_u64,
                    "eval_count": 60,
                    "eval_duration": 700_000_000_u64,
                });
                for (key, value) in extra.as_object().into_iter().flatten() {
                    chunk[key] = value.clone();
                }
            }
            let mut bytes = serde_json::to_vec(&chunk).expect("a chunk");
            bytes.push(b'\n');
            bytes
        };
        let tool_call = vec![
            line(
                json!({"role": "assistant", "content": "", "thinking": THINKING}),
                false,
            ),
            line(
                json!({"role": "assistant", "content": "", "tool_calls": [{
                    "id": "call_x1y2z3w4",
                    "function": {"index": 0, "name": "view_slice", "arguments": view_slice_arguments()},
                }]}),
                false,
            ),
            line(json!({"role": "assistant", "content": ""}), true),
        ];
        let mut answer: Vec<Vec<u8>> = token_pieces(ANSWER, 59)
            .into_iter()
            .map(|piece| line(json!({"role": "assistant", "content": piece}), false))
            .collect();
        answer.push(line(json!({"role": "assistant", "content": ""}), true));
        assert_eq!(answer.len(), 60);
        Stream { tool_call, answer }
    }
}

/// Splits `text` into `count` pieces at word boundaries, like a model's tokens.
fn token_pieces(text: &str, count: usize) -> Vec<String> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    assert!(words.len() >= count, "{} words", words.len());
    let mut pieces: Vec<String> = words[..count - 1].iter().map(|w| (*w).to_owned()).collect();
    pieces.push(words[count - 1..].concat());
    pieces
}

/// Runs `lines` through a parser, one read per line, the way the client does.
fn parse(lines: &[Vec<u8>], prefix: &str, on_delta: &mut dyn FnMut(Delta<'_>)) -> Reply {
    metron::testing::parse_stream(lines, prefix, on_delta).expect("a valid, complete stream")
}

/// The in-process model: serialises every request exactly as the real client does, then
/// answers from canned NDJSON through the real stream parser. A request whose last
/// message is a tool result gets the answer; any other gets the view_slice call.
struct FakeModel {
    stream: Stream,
    replies: Cell<u64>,
    /// Sizes of the latest request bodies (before and after a tool result), for the
    /// report.
    request_bytes: Rc<Cell<[usize; 2]>>,
}

impl FakeModel {
    fn new(request_bytes: Rc<Cell<[usize; 2]>>) -> FakeModel {
        FakeModel {
            stream: Stream::new(),
            replies: Cell::new(0),
            request_bytes,
        }
    }
}

impl Model for FakeModel {
    fn chat(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> impl Future<Output = Result<Reply, OllamaError>> {
        let body = serde_json::to_vec(request)
            .map_err(|e| OllamaError::Protocol(format!("cannot encode the request: {e}")));
        let reply = body.map(|body| {
            let seq = self.replies.get() + 1;
            self.replies.set(seq);
            let after_tool = request
                .messages
                .last()
                .is_some_and(|m| m.role == Role::Tool);
            let mut sizes = self.request_bytes.get();
            sizes[usize::from(after_tool)] = body.len();
            self.request_bytes.set(sizes);
            black_box(body);
            let lines = if after_tool {
                &self.stream.answer
            } else {
                &self.stream.tool_call
            };
            parse(lines, &format!("call_m{seq}"), on_delta)
        });
        std::future::ready(reply)
    }
}

/// Stands in for the display: takes every delta, prints nothing.
#[derive(Default)]
struct Counting {
    content_bytes: usize,
}

impl Observer for Counting {
    fn delta(&mut self, delta: Delta<'_>) {
        if let Delta::Content(text) = delta {
            self.content_bytes += text.len();
        }
    }
}

/// A small git project holding the 120-line file the model views.
fn write_project(root: &Path) {
    std::fs::create_dir_all(root.join(".git")).expect("mark the project as a git work tree");
    std::fs::create_dir_all(root.join("src")).expect("mkdir src");
    let mut text = String::new();
    for n in 0..SLICE_LINES {
        text.push_str(&match n % 6 {
            0 => format!("/// Handles request kind {n}, mapping each error to a status.\n"),
            1 => format!("pub fn handle_{n}(request: &Request) -> Result<Response, Error> {{\n"),
            2 => format!(
                "    let record = store.lookup(request.id()).map_err(Error::from)?; // {n}\n"
            ),
            3 => "    log::debug!(\"handled {} in {:?}\", request.id(), started.elapsed());\n"
                .to_owned(),
            4 => "    Ok(Response::json(&record))\n".to_owned(),
            _ => "}\n".to_owned(),
        });
    }
    std::fs::write(root.join(SLICE_PATH), text).expect("write the file");
}
