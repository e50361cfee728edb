//! A scripted, in-process stand-in for an Ollama server, so tests of the client and the
//! agent loop run without a model, a GPU or the network.
//!
//! - [`FakeOllama`]: one server on an ephemeral 127.0.0.1 port, stopped on drop; it records
//!   every request and answers `POST /api/chat` from a script of [`Reply`] values;
//! - [`FakeBuilder`]: the models it claims to have (`/api/tags`, `/api/show`), the version
//!   it reports and the chat script;
//! - [`Reply`] / [`Chunk`]: whole answers and the pieces of a streamed body, including the
//!   faults a real server or network produces (mid-stream error lines, truncated bodies,
//!   stalls, slow first bytes);
//! - free functions ([`text`], [`tool_calls`], [`done`], [`answer`], [`call`], ...) that
//!   build chunks shaped like a real server's, so tests read as a transcript.
//!
//! The HTTP side is a small HTTP/1.1 server on `std::net`, one thread per connection, with
//! keep-alive, `Content-Length` and chunked request bodies. [`FakeBuilder::tls`] puts a
//! TLS front (rustls, on std threads) before it, so the same protocol is spoken over https:
//! the front terminates TLS and relays the bytes to the plain server, whose behaviour is
//! unchanged. JSON it sends is written the way
//! Go's encoder writes it (struct field order for the known keys, `<`, `>` and `&` escaped
//! as `\u003c`...), so a client that only works with serde's formatting is caught too.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value, json};

/// How often blocked reads and sleeps look at the shutdown flag: the upper bound on how long
/// dropping a [`FakeOllama`] waits for a busy connection.
const POLL: Duration = Duration::from_millis(20);
/// How long [`Chunk::Hang`] holds a connection when the client never gives up.
const HANG_LIMIT: Duration = Duration::from_secs(60);
/// A request body larger than this is refused (413) instead of buffered.
const MAX_BODY: u64 = 256 << 20;
/// Longest request line or header line accepted.
const MAX_LINE: u64 = 64 << 10;
/// Most header lines accepted in one request.
const MAX_HEADERS: usize = 200;

/// The version `/api/version` reports unless [`FakeBuilder::version`] says otherwise.
pub const DEFAULT_VERSION: &str = "0.12.10";
/// The model a server has when the builder names none.
pub const DEFAULT_MODEL: &str = "qwen2.5-coder:7b";
/// Placeholder for a chunk's `"model"` field: the server replaces it with the `model` of the
/// request being answered, as Ollama echoes the request's spelling. The chunk builders use
/// it; a test that wants a mismatched model writes the name itself.
pub const MODEL_ECHO: &str = "\u{0}fake-ollama:echo-request-model\u{0}";

// ---------------------------------------------------------------------------------------
// Public API
// ---------------------------------------------------------------------------------------

/// A running fake server. Requests are served on background threads until it is dropped;
/// the drop closes the listener, cuts every open connection and joins all threads.
pub struct FakeOllama {
    addr: SocketAddr,
    shared: Arc<Shared>,
    acceptor: Option<JoinHandle<()>>,
    /// The TLS front clients connect to, when [`FakeBuilder::tls`] asked for one.
    front: Option<TlsFront>,
}

/// Configures a [`FakeOllama`] before it starts listening.
pub struct FakeBuilder {
    version: String,
    models: Vec<ModelSpec>,
    chat: Vec<Reply>,
    tls: Option<Arc<rustls::ServerConfig>>,
    openai: Option<OpenAiMode>,
    /// Extra routes of an OpenAI-compatible server: method, path, the JSON answer.
    extra: Vec<(&'static str, String, Value)>,
}

/// How the server behaves as an OpenAI-compatible one (see `fake_openai`).
#[derive(Clone, Debug, Default)]
pub struct OpenAiMode {
    /// The bearer key `/v1/*` requires; `None` accepts any request (llama-server's
    /// default), and LM Studio accepts any key.
    pub key: Option<String>,
}

/// One request as the server received it, for assertions on what the client sent.
#[derive(Clone, Debug)]
pub struct Recorded {
    /// The request method, e.g. `POST`.
    pub method: String,
    /// The request target exactly as sent (query string included), e.g. `/api/chat`.
    pub path: String,
    /// Header lines in arrival order, names lower-cased, values trimmed.
    pub headers: Vec<(String, String)>,
    /// The body parsed as JSON; `Null` when it was empty or not JSON.
    pub body: Value,
    /// The body bytes after removing any chunked transfer encoding.
    pub raw_body: Vec<u8>,
    /// When the whole request had arrived.
    pub at: std::time::Instant,
}

/// What the server does with one `POST /api/chat`.
#[derive(Clone, Debug)]
pub enum Reply {
    /// A streamed answer: 200 `application/x-ndjson`, chunked, each item written and flushed
    /// on its own. When the items run out without [`Chunk::End`], [`Chunk::Drop`] or
    /// [`Chunk::Hang`], the body is terminated cleanly.
    Stream(Vec<Chunk>),
    /// A `stream:false` answer: 200 `application/json; charset=utf-8`, one object.
    Json(Value),
    /// An error before any byte: the status with `{"error": message}` as JSON.
    Error(u16, String),
    /// Any status with a raw body and content type, for non-JSON errors (proxies, gin 404s).
    Raw(u16, &'static str, String),
    /// Waits before writing anything at all (not even the status line), then serves the
    /// inner reply: a model that is still loading.
    Delayed(Duration, Box<Reply>),
    /// Waits, writing nothing, until the test opens the [`Gate`], then serves the inner
    /// reply: the model "thinks" exactly until the test's event has happened.
    AfterGate(Gate, Box<Reply>),
    /// A redirect: this status (301, 302, 307, 308) with a `Location` header naming the
    /// second URL, and a short plain-text body, as a hostile or misconfigured proxy sends.
    Redirect(u16, String),
    /// This status with a body that never ends: the given text, then `x` in 64 KiB chunks
    /// until the client hangs up or the server is dropped, as a broken or hostile server
    /// sends (a client reading the body whole runs out of memory).
    Endless(u16, String),
}

/// One step of a [`Reply::Stream`] body.
#[derive(Clone, Debug)]
pub enum Chunk {
    /// One NDJSON line (the value plus `\n`) as its own HTTP chunk.
    Line(Value),
    /// These bytes as one HTTP chunk, e.g. half a JSON line to test re-assembly. An empty
    /// string is skipped: a zero-length chunk would end the body.
    Raw(String),
    /// Waits between chunks.
    Pause(Duration),
    /// Waits between chunks until the test opens the [`Gate`] (a key typed, a file edited),
    /// instead of for a fixed time that hopes the event happened.
    Gate(Gate),
    /// Ends the chunked body cleanly here (items after it are ignored), e.g. to end a stream
    /// that never sent a `done` line.
    End,
    /// Closes the connection mid-body, without the terminating chunk.
    Drop,
    /// Stops writing but keeps the connection open until the client closes it, the server is
    /// dropped, or 60 s pass.
    Hang,
}

/// A point a reply waits at until the test opens it ([`Reply::AfterGate`],
/// [`Chunk::Gate`]). Clones share the gate. The server gives up waiting when it is dropped,
/// or after 60 s.
#[derive(Clone, Debug, Default)]
pub struct Gate(Arc<AtomicBool>);

impl Gate {
    pub fn new() -> Gate {
        Gate::default()
    }

    /// Lets whatever waits at the gate go on.
    pub fn open(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    fn is_open(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

impl FakeOllama {
    /// Starts configuring a server.
    pub fn builder() -> FakeBuilder {
        FakeBuilder {
            version: DEFAULT_VERSION.to_string(),
            models: Vec::new(),
            chat: Vec::new(),
            tls: None,
            openai: None,
            extra: Vec::new(),
        }
    }

    /// The common case: the default model, and these chat replies served in order.
    pub fn start(chat: Vec<Reply>) -> FakeOllama {
        FakeOllama::builder().chat(chat).start()
    }

    /// The address clients connect to (the TLS front's, when there is one).
    pub fn addr(&self) -> SocketAddr {
        self.front.as_ref().map_or(self.addr, |front| front.addr)
    }

    /// `http://127.0.0.1:PORT` (`https://` with a TLS front), what a client is configured
    /// with.
    pub fn base_url(&self) -> String {
        let scheme = if self.front.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", self.addr())
    }

    /// `base_url` plus `/api/chat`.
    pub fn chat_url(&self) -> String {
        self.url("/api/chat")
    }

    /// `base_url` plus `path` (which starts with `/`).
    pub fn url(&self, path: &str) -> String {
        format!("{}{}", self.base_url(), path)
    }

    /// Every request received so far, in arrival order. A request is recorded once its body
    /// has been read, before its reply starts, so a request whose reply hangs is visible.
    pub fn requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests).clone()
    }

    /// The JSON bodies of the `POST /api/chat` requests, in order. Requests whose body was
    /// empty or not JSON are left out: they were refused and consumed no scripted reply.
    pub fn chat_bodies(&self) -> Vec<Value> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| r.method == "POST" && is_chat_path(route_path(&r.path)))
            .filter(|r| !r.body.is_null())
            .map(|r| r.body.clone())
            .collect()
    }

    /// The `/api/chat` requests received so far, in arrival order: what a test counts when
    /// metron also asks other endpoints (the REPL lists the models at start).
    pub fn chat_requests(&self) -> Vec<Recorded> {
        lock(&self.shared.requests)
            .iter()
            .filter(|r| is_chat_path(route_path(&r.path)))
            .cloned()
            .collect()
    }

    /// Waits until at least `n` `/api/chat` requests have been recorded; false if `timeout`
    /// passes first. Like [`FakeOllama::wait_for_requests`], for a client that also asks
    /// other endpoints.
    pub fn wait_for_chats(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.chat_requests().len() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// How many chat requests arrived after the script ran out (each got a 500).
    pub fn unexpected(&self) -> usize {
        self.shared.unexpected.load(Ordering::SeqCst)
    }

    /// How many scripted chat replies have not been served yet.
    pub fn remaining(&self) -> usize {
        lock(&self.shared.script).len()
    }

    /// Appends a reply to the chat script while the server runs, for tests that decide the
    /// next answer after seeing a request.
    pub fn push(&self, reply: Reply) {
        lock(&self.shared.script).push_back(reply);
    }

    /// Waits until at least `n` requests have been recorded; false if `timeout` passes first.
    /// For tests that must act while a reply is in progress (e.g. a hanging stream).
    pub fn wait_for_requests(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if lock(&self.shared.requests).len() >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }

    /// Waits until at least `n` streamed replies have reached their [`Chunk::Hang`], so
    /// everything before it was written and flushed and the client is waiting on the rest;
    /// false if `timeout` passes first. For tests that must act mid-reply.
    pub fn wait_for_hangs(&self, n: usize, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        loop {
            if self.shared.hangs.load(Ordering::SeqCst) >= n {
                return true;
            }
            if Instant::now() >= deadline {
                return false;
            }
            thread::sleep(Duration::from_millis(2));
        }
    }
}

impl Drop for FakeOllama {
    fn drop(&mut self) {
        if let Some(front) = self.front.take() {
            front.stop();
        }
        self.shared.shutdown.store(true, Ordering::SeqCst);
        // The accept loop blocks in accept(); a connection of our own wakes it up to see
        // the flag. Connection threads notice it within POLL, or at once when the acceptor
        // shuts their sockets down.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        if let Some(acceptor) = self.acceptor.take() {
            let _ = acceptor.join();
        }
    }
}

impl FakeBuilder {
    /// What `GET`/`HEAD /api/version` reports (default `0.12.10`), for version gates.
    pub fn version(mut self, v: &str) -> Self {
        self.version = v.to_string();
        self
    }

    /// A model the server has: listed by `/api/tags`; `/api/show` reports these capabilities
    /// and `model_info` with architecture `qwen3` and this `qwen3.context_length`. The
    /// template mentions `.Tools` exactly when `capabilities` holds `tools`.
    pub fn model(mut self, name: &str, capabilities: &[&str], context_length: u64) -> Self {
        let template = if capabilities.contains(&"tools") {
            TOOLS_TEMPLATE
        } else {
            PLAIN_TEMPLATE
        };
        let mut show = show_body(name, template, context_length);
        show["capabilities"] = json!(capabilities);
        self.models.push(ModelSpec::new(name, show));
        self
    }

    /// A model as a server older than v0.6.4 describes it: `/api/show` has no
    /// `capabilities` key, so a client must look at the template. `model_info` still says
    /// `qwen3` with a 32768 context.
    pub fn old_model(mut self, name: &str, template: &str) -> Self {
        let show = show_body(name, template, 32768);
        self.models.push(ModelSpec::new(name, show));
        self
    }

    /// A cloud model as Ollama 0.12 and later describe one: it supports tools, and both its
    /// `/api/tags` entry and its `/api/show` answer carry `remote_model` and `remote_host`
    /// (`https://ollama.com:443` for Ollama's own cloud): the real server passes its chat
    /// requests on to that host. This fake answers them itself, from the script.
    pub fn cloud_model(mut self, name: &str, remote_host: &str) -> Self {
        let remote_model = name.strip_suffix("-cloud").unwrap_or(name);
        let mut show = show_body(name, TOOLS_TEMPLATE, 262_144);
        show["capabilities"] = json!(["completion", "tools"]);
        show["remote_model"] = json!(remote_model);
        show["remote_host"] = json!(remote_host);
        let mut spec = ModelSpec::new(name, show);
        spec.tags_entry["remote_model"] = json!(remote_model);
        spec.tags_entry["remote_host"] = json!(remote_host);
        spec.tags_entry["size"] = json!(384);
        self.models.push(spec);
        self
    }

    /// A model whose `/api/show` answer is exactly `show`, for odd or missing fields
    /// (no `model_info`, another architecture, a context length of the wrong type...).
    pub fn model_with_show(mut self, name: &str, show: Value) -> Self {
        self.models.push(ModelSpec::new(name, show));
        self
    }

    /// Speaks OpenAI's Chat Completions instead of Ollama's API: `GET /v1/models` lists
    /// the models, `POST /v1/chat/completions` serves the script (a [`Reply::Stream`] as
    /// `text/event-stream`), and every `/api/*` route answers 404 as llama-server does.
    pub fn openai(mut self, mode: OpenAiMode) -> Self {
        self.openai = Some(mode);
        self
    }

    /// Answers `GET path` with `body` (a server's extra routes: llama-server's `/props`,
    /// LM Studio's `/api/v0/models/NAME`).
    pub fn get_json(mut self, path: &str, body: Value) -> Self {
        self.extra.push(("GET", path.to_owned(), body));
        self
    }

    /// Answers `POST path` with `body` and a 200, whatever was posted: llama-server's
    /// `/api/show` (for Ollama clients), LM Studio's 200 to every unknown route.
    pub fn post_json(mut self, path: &str, body: Value) -> Self {
        self.extra.push(("POST", path.to_owned(), body));
        self
    }

    /// Appends replies to the chat script, served in order to `POST /api/chat`.
    pub fn chat(mut self, replies: Vec<Reply>) -> Self {
        self.chat.extend(replies);
        self
    }

    /// Serves https instead of http: a TLS front with this certificate chain (leaf first)
    /// and key listens on the address clients are given, and relays to the plain server.
    pub fn tls(
        mut self,
        chain: Vec<rustls::pki_types::CertificateDer<'static>>,
        key: rustls::pki_types::PrivateKeyDer<'static>,
    ) -> Self {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("fake ollama: TLS protocol versions")
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .expect("fake ollama: the certificate and key go together");
        self.tls = Some(Arc::new(config));
        self
    }

    /// Binds an ephemeral port on 127.0.0.1 and starts serving.
    pub fn start(mut self) -> FakeOllama {
        if self.models.is_empty() {
            self = self.model(DEFAULT_MODEL, &["completion", "tools"], 32768);
        }
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake ollama: bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("fake ollama: local address");
        let shared = Arc::new(Shared {
            version: self.version,
            models: self.models,
            script: Mutex::new(self.chat.into()),
            requests: Mutex::new(Vec::new()),
            unexpected: AtomicUsize::new(0),
            hangs: AtomicUsize::new(0),
            shutdown: AtomicBool::new(false),
            openai: self.openai,
            extra: self.extra,
        });
        let for_thread = Arc::clone(&shared);
        let acceptor = thread::Builder::new()
            .name("fake-ollama-accept".to_string())
            .spawn(move || accept_loop(listener, for_thread))
            .expect("fake ollama: spawn the accept thread");
        let front = self.tls.map(|config| TlsFront::start(config, addr));
        FakeOllama {
            addr,
            shared,
            acceptor: Some(acceptor),
            front,
        }
    }
}

impl Recorded {
    /// The value of the first header called `name` (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

// ---------------------------------------------------------------------------------------
// Chunk and reply builders
// ---------------------------------------------------------------------------------------

/// A content delta, as streamed while the model writes its answer.
pub fn text(s: &str) -> Chunk {
    message_chunk(json!({"role": "assistant", "content": s}))
}

/// A thinking delta (`content` empty), as thinking models stream before answering.
pub fn thinking(s: &str) -> Chunk {
    message_chunk(json!({"role": "assistant", "content": "", "thinking": s}))
}

/// A `done:false` chunk carrying complete tool calls, modern style (v0.12.10+): each call has
/// an `id` `call_xxxxxxxx` and an always-present `function.index`.
pub fn tool_calls(calls: &[(&str, Value)]) -> Chunk {
    message_chunk(json!({
        "role": "assistant",
        "content": "",
        "tool_calls": calls_json(calls, CallStyle::Modern),
    }))
}

/// Like [`tool_calls`] as servers v0.4.7 to v0.12.5 send them: no `id`, and no `index` on the
/// first call (the zero was omitted).
pub fn tool_calls_without_ids(calls: &[(&str, Value)]) -> Chunk {
    message_chunk(json!({
        "role": "assistant",
        "content": "",
        "tool_calls": calls_json(calls, CallStyle::Legacy),
    }))
}

/// The final chunk: `done:true`, `done_reason:"stop"`, empty content, and the metrics
/// (durations in ns). A zero count is left out with its duration, as Go omits zero values.
pub fn done(prompt_eval_count: u64, eval_count: u64) -> Chunk {
    done_with_reason("stop", prompt_eval_count, eval_count)
}

/// Like [`done`] with another `done_reason`, e.g. `"length"` when output hit the limit.
pub fn done_with_reason(reason: &str, prompt_eval_count: u64, eval_count: u64) -> Chunk {
    Chunk::Line(final_object(
        json!({"role": "assistant", "content": ""}),
        reason,
        prompt_eval_count,
        eval_count,
    ))
}

/// A final chunk that carries the tool calls itself, as the v0.30 native path (and some
/// parsers) deliver them.
pub fn done_with_calls(calls: &[(&str, Value)], prompt_eval_count: u64, eval_count: u64) -> Chunk {
    Chunk::Line(final_object(
        json!({
            "role": "assistant",
            "content": "",
            "tool_calls": calls_json(calls, CallStyle::Modern),
        }),
        "stop",
        prompt_eval_count,
        eval_count,
    ))
}

/// The line a server sends when it fails after streaming has begun: `{"error": message}`.
pub fn error_line(message: &str) -> Chunk {
    Chunk::Line(json!({"error": message}))
}

/// A `done:false` chunk with any `message` object, for shapes the other builders do not make
/// (all calls at index 0, duplicate ids, `images: null`...).
pub fn message_chunk(message: Value) -> Chunk {
    Chunk::Line(json!({
        "model": MODEL_ECHO,
        "created_at": now_rfc3339(),
        "message": message,
        "done": false,
    }))
}

/// A whole streamed answer: `s` in several word-sized content chunks, then [`done`].
pub fn answer(s: &str, prompt: u64, eval: u64) -> Reply {
    let mut chunks: Vec<Chunk> = split_words(s).iter().map(|w| text(w)).collect();
    chunks.push(done(prompt, eval));
    Reply::Stream(chunks)
}

/// A whole streamed tool-call round: one [`tool_calls`] chunk with a single call, then
/// [`done`].
pub fn call(name: &str, args: Value, prompt: u64, eval: u64) -> Reply {
    Reply::Stream(vec![tool_calls(&[(name, args)]), done(prompt, eval)])
}

/// The `stream:false` counterpart of [`answer`]: one JSON object with the whole content.
pub fn json_answer(s: &str, prompt: u64, eval: u64) -> Reply {
    Reply::Json(final_object(
        json!({"role": "assistant", "content": s}),
        "stop",
        prompt,
        eval,
    ))
}

/// The `stream:false` counterpart of a tool-call round: every call in one object.
pub fn json_calls(calls: &[(&str, Value)], prompt: u64, eval: u64) -> Reply {
    Reply::Json(final_object(
        json!({
            "role": "assistant",
            "content": "",
            "tool_calls": calls_json(calls, CallStyle::Modern),
        }),
        "stop",
        prompt,
        eval,
    ))
}

/// A URL on 127.0.0.1 where nothing listens (a port bound and released at once), for
/// "connection refused" tests.
pub fn refused_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    drop(listener);
    format!("http://{addr}")
}

#[derive(Clone, Copy, PartialEq)]
enum CallStyle {
    /// `id` on every call, `index` always present.
    Modern,
    /// No `id`, `index` omitted when zero.
    Legacy,
}

fn calls_json(calls: &[(&str, Value)], style: CallStyle) -> Value {
    let list = calls
        .iter()
        .enumerate()
        .map(|(i, (name, args))| {
            let mut function = Map::new();
            if style == CallStyle::Modern || i > 0 {
                function.insert("index".into(), json!(i));
            }
            function.insert("name".into(), json!(name));
            function.insert("arguments".into(), args.clone());
            let mut call = Map::new();
            if style == CallStyle::Modern {
                call.insert("id".into(), json!(call_id()));
            }
            call.insert("function".into(), Value::Object(function));
            Value::Object(call)
        })
        .collect();
    Value::Array(list)
}

/// A `done:true` object with plausible metrics: 40 ms load, 0.25 ms per prompt token,
/// 20 ms per generated token.
fn final_object(message: Value, reason: &str, prompt: u64, eval: u64) -> Value {
    let load: u64 = 41_000_000;
    let prompt_ns = prompt * 250_000;
    let eval_ns = eval * 20_000_000;
    let mut o = Map::new();
    o.insert("model".into(), json!(MODEL_ECHO));
    o.insert("created_at".into(), json!(now_rfc3339()));
    o.insert("message".into(), message);
    o.insert("done".into(), json!(true));
    o.insert("done_reason".into(), json!(reason));
    o.insert(
        "total_duration".into(),
        json!(load + prompt_ns + eval_ns + 1_000_000),
    );
    o.insert("load_duration".into(), json!(load));
    if prompt > 0 {
        o.insert("prompt_eval_count".into(), json!(prompt));
        o.insert("prompt_eval_duration".into(), json!(prompt_ns));
    }
    if eval > 0 {
        o.insert("eval_count".into(), json!(eval));
        o.insert("eval_duration".into(), json!(eval_ns));
    }
    Value::Object(o)
}

/// Splits before each run of whitespace that follows a word: "Hello big world" becomes
/// "Hello", " big", " world", the way tokens usually arrive.
fn split_words(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut seen_word = false;
    for c in s.chars() {
        if c.is_whitespace() && seen_word {
            out.push(std::mem::take(&mut cur));
            seen_word = false;
        }
        if !c.is_whitespace() {
            seen_word = true;
        }
        cur.push(c);
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// `call_` plus 8 characters from `[a-z0-9]`, unique enough within a test run.
fn call_id() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let mut x = splitmix64(nanos ^ n.wrapping_mul(0x9E37_79B9_7F4A_7C15));
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut id = String::from("call_");
    for _ in 0..8 {
        id.push(ALPHABET[(x % 36) as usize] as char);
        x /= 36;
    }
    id
}

fn splitmix64(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

// ---------------------------------------------------------------------------------------
// Models
// ---------------------------------------------------------------------------------------

struct ModelSpec {
    name: String,
    show: Value,
    tags_entry: Value,
}

impl ModelSpec {
    fn new(name: &str, show: Value) -> ModelSpec {
        let tags_entry = json!({
            "name": name,
            "model": name,
            "modified_at": "2026-02-10T09:12:33.123456789-08:00",
            "size": 19_851_336_256u64,
            "digest": fake_digest(name),
            "details": details(),
        });
        ModelSpec {
            name: name.to_string(),
            show,
            tags_entry,
        }
    }
}

/// A chat template in Ollama's Go-template language that offers tools to the model.
const TOOLS_TEMPLATE: &str = "{{- if .System }}<|im_start|>system\n{{ .System }}\
{{- if .Tools }}\n\nYou may call these functions:\n<tools>\n{{- range .Tools }}\n{{ .Function }}\n\
{{- end }}\n</tools>{{ end }}<|im_end|>\n{{ end }}\
{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}\
<|im_start|>assistant\n";

/// The same template without any tool support.
const PLAIN_TEMPLATE: &str = "{{- if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}\
{{- range .Messages }}<|im_start|>{{ .Role }}\n{{ .Content }}<|im_end|>\n{{ end }}\
<|im_start|>assistant\n";

fn details() -> Value {
    json!({
        "parent_model": "",
        "format": "gguf",
        "family": "qwen3",
        "families": ["qwen3"],
        "parameter_size": "32.8B",
        "quantization_level": "Q4_K_M",
    })
}

fn show_body(name: &str, template: &str, context_length: u64) -> Value {
    json!({
        "modelfile": format!(
            "# Modelfile generated by \"ollama show\"\nFROM {name}\nTEMPLATE \"\"\"{template}\"\"\"\n"
        ),
        "parameters": "stop \"<|im_start|>\"\nstop \"<|im_end|>\"",
        "template": template,
        "details": details(),
        "model_info": {
            "general.architecture": "qwen3",
            "qwen3.context_length": context_length,
        },
        "modified_at": "2026-02-10T09:12:33.123456789-08:00",
    })
}

/// 64 hex digits derived from the name, stable across runs.
fn fake_digest(name: &str) -> String {
    (0..4u64)
        .map(|i| {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ i;
            for b in name.bytes() {
                h ^= u64::from(b);
                h = h.wrapping_mul(0x0100_0000_01b3);
            }
            format!("{:016x}", splitmix64(h))
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// Server
// ---------------------------------------------------------------------------------------

struct Shared {
    version: String,
    models: Vec<ModelSpec>,
    script: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Recorded>>,
    unexpected: AtomicUsize,
    /// Streamed replies that reached [`Chunk::Hang`].
    hangs: AtomicUsize,
    shutdown: AtomicBool,
    openai: Option<OpenAiMode>,
    extra: Vec<(&'static str, String, Value)>,
}

impl Shared {
    fn stopping(&self) -> bool {
        self.shutdown.load(Ordering::SeqCst)
    }

    /// Exact name, or `X:latest` when asked for `X`; case-insensitive like Ollama's lookup.
    fn find_model(&self, asked: &str) -> Option<&ModelSpec> {
        let with_tag = format!("{asked}:latest");
        self.models
            .iter()
            .find(|m| m.name.eq_ignore_ascii_case(asked) || m.name.eq_ignore_ascii_case(&with_tag))
    }

    /// Waits until `gate` is opened; false when the server stops first or 60 s pass.
    fn wait_at(&self, gate: &Gate) -> bool {
        let deadline = Instant::now() + HANG_LIMIT;
        while !gate.is_open() {
            if self.stopping() || Instant::now() >= deadline {
                return false;
            }
            thread::sleep(POLL.min(Duration::from_millis(2)));
        }
        true
    }

    /// Sleeps for `d` unless the server stops first; true when the full time passed.
    fn sleep(&self, d: Duration) -> bool {
        let deadline = Instant::now() + d;
        loop {
            if self.stopping() {
                return false;
            }
            let now = Instant::now();
            if now >= deadline {
                return true;
            }
            thread::sleep((deadline - now).min(POLL));
        }
    }
}

/// A poisoned lock only means a test thread panicked; the data is still fine to read.
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn accept_loop(listener: TcpListener, shared: Arc<Shared>) {
    let mut conns: Vec<(TcpStream, JoinHandle<()>)> = Vec::new();
    for incoming in listener.incoming() {
        if shared.stopping() {
            break;
        }
        let stream = match incoming {
            Ok(stream) => stream,
            Err(_) => {
                // Out of file descriptors or similar: back off instead of spinning.
                thread::sleep(POLL);
                continue;
            }
        };
        conns.retain(|(_, handle)| !handle.is_finished());
        let Ok(control) = stream.try_clone() else {
            continue;
        };
        let for_thread = Arc::clone(&shared);
        let spawned = thread::Builder::new()
            .name("fake-ollama-conn".to_string())
            .spawn(move || serve_connection(stream, &for_thread));
        if let Ok(handle) = spawned {
            conns.push((control, handle));
        }
    }
    drop(listener);
    close_all(conns);
}

/// Cuts every open connection (so blocked reads return) and waits for its thread: how both
/// accept loops end.
fn close_all(conns: Vec<(TcpStream, JoinHandle<()>)>) {
    for (control, _) in &conns {
        let _ = control.shutdown(Shutdown::Both);
    }
    for (_, handle) in conns {
        let _ = handle.join();
    }
}

// ---------------------------------------------------------------------------------------
// TLS front
// ---------------------------------------------------------------------------------------

/// How long one side of a relayed connection is waited on before the other is looked at.
const RELAY_POLL: Duration = Duration::from_millis(2);

/// A TLS listener that relays each connection, decrypted, to the plain server.
struct TlsFront {
    addr: SocketAddr,
    stopping: Arc<AtomicBool>,
    acceptor: JoinHandle<()>,
}

impl TlsFront {
    fn start(config: Arc<rustls::ServerConfig>, inner: SocketAddr) -> TlsFront {
        let listener = TcpListener::bind("127.0.0.1:0").expect("fake ollama: bind the TLS front");
        let addr = listener
            .local_addr()
            .expect("fake ollama: TLS front address");
        let stopping = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stopping);
        let acceptor = thread::Builder::new()
            .name("fake-ollama-tls-accept".to_string())
            .spawn(move || tls_accept_loop(listener, config, inner, &flag))
            .expect("fake ollama: spawn the TLS accept thread");
        TlsFront {
            addr,
            stopping,
            acceptor,
        }
    }

    fn stop(self) {
        self.stopping.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
        let _ = self.acceptor.join();
    }
}

fn tls_accept_loop(
    listener: TcpListener,
    config: Arc<rustls::ServerConfig>,
    inner: SocketAddr,
    stopping: &Arc<AtomicBool>,
) {
    let mut conns: Vec<(TcpStream, JoinHandle<()>)> = Vec::new();
    for incoming in listener.incoming() {
        if stopping.load(Ordering::SeqCst) {
            break;
        }
        let Ok(stream) = incoming else {
            thread::sleep(POLL);
            continue;
        };
        conns.retain(|(_, handle)| !handle.is_finished());
        let Ok(control) = stream.try_clone() else {
            continue;
        };
        let config = Arc::clone(&config);
        let flag = Arc::clone(stopping);
        let spawned = thread::Builder::new()
            .name("fake-ollama-tls-conn".to_string())
            .spawn(move || relay(stream, config, inner, &flag));
        if let Ok(handle) = spawned {
            conns.push((control, handle));
        }
    }
    drop(listener);
    close_all(conns);
}

/// Terminates TLS on `client` and relays bytes both ways to the plain server at `inner`
/// until either side closes. A handshake the client abandons (it rejected the certificate)
/// just ends the connection, as a real server's would.
fn relay(
    client: TcpStream,
    config: Arc<rustls::ServerConfig>,
    inner: SocketAddr,
    stopping: &AtomicBool,
) {
    let Ok(conn) = rustls::ServerConnection::new(config) else {
        return;
    };
    let Ok(mut plain) = TcpStream::connect(inner) else {
        return;
    };
    for socket in [&client, &plain] {
        let _ = socket.set_read_timeout(Some(RELAY_POLL));
        let _ = socket.set_write_timeout(Some(Duration::from_secs(10)));
        let _ = socket.set_nodelay(true);
    }
    let mut tls = rustls::StreamOwned::new(conn, client);
    let mut buf = vec![0; 64 << 10];
    while !stopping.load(Ordering::SeqCst) {
        match tls.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => {
                if plain.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
        match plain.read(&mut buf) {
            Ok(0) => {
                tls.conn.send_close_notify();
                let _ = tls.flush();
                break;
            }
            Ok(n) => {
                if tls.write_all(&buf[..n]).and_then(|()| tls.flush()).is_err() {
                    break;
                }
            }
            Err(e) if is_timeout(&e) => {}
            Err(_) => break,
        }
    }
    let _ = tls.sock.shutdown(Shutdown::Both);
    let _ = plain.shutdown(Shutdown::Both);
}

/// A socket reader that waits through read timeouts until data, EOF, or server shutdown,
/// so a `BufReader` on top behaves like a blocking reader that can still be interrupted.
struct Patient<'a> {
    stream: TcpStream,
    shared: &'a Shared,
}

impl Read for Patient<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            if self.shared.stopping() {
                return Err(io::Error::other("fake ollama is shutting down"));
            }
            match self.stream.read(buf) {
                Err(e) if is_timeout(&e) => continue,
                other => return other,
            }
        }
    }
}

fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// One client connection: its buffered reader, a handle to write with, and the server state.
struct Conn<'a> {
    reader: BufReader<Patient<'a>>,
    writer: TcpStream,
    shared: &'a Shared,
}

/// Whether a connection can carry another request after a response.
#[derive(PartialEq)]
enum After {
    KeepAlive,
    Close,
}

fn serve_connection(stream: TcpStream, shared: &Shared) {
    let _ = stream.set_read_timeout(Some(POLL));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
    let _ = stream.set_nodelay(true);
    let Ok(writer) = stream.try_clone() else {
        return;
    };
    let mut conn = Conn {
        reader: BufReader::new(Patient { stream, shared }),
        writer,
        shared,
    };
    loop {
        let request = match read_request(&mut conn) {
            Ok(Some(request)) => request,
            Ok(None) | Err(ReadError::Io(_)) => break,
            Err(ReadError::Bad(status, message)) => {
                let _ = conn.respond(
                    status,
                    "text/plain; charset=utf-8",
                    message.as_bytes(),
                    false,
                    true,
                );
                break;
            }
        };
        lock(&shared.requests).push(Recorded {
            method: request.method.clone(),
            path: request.target.clone(),
            headers: request.headers.clone(),
            body: serde_json::from_slice(&request.body).unwrap_or(Value::Null),
            raw_body: request.body.clone(),
            at: std::time::Instant::now(),
        });
        match route(&mut conn, &request) {
            Ok(After::KeepAlive) if !request.close => {}
            _ => break,
        }
    }
    // The acceptor holds a clone of this socket, so dropping ours would not close it.
    let _ = conn.writer.shutdown(Shutdown::Both);
}

struct Request {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
    /// The client asked to close after this response (or spoke HTTP/1.0 without keep-alive).
    close: bool,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn has_token(&self, name: &str, token: &str) -> bool {
        self.headers
            .iter()
            .filter(|(n, _)| n == name)
            .flat_map(|(_, v)| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case(token))
    }
}

enum ReadError {
    /// The connection failed or closed mid-request: nothing to answer.
    Io(io::Error),
    /// The request is malformed: answer with this status and message, then close.
    Bad(u16, String),
}

impl From<io::Error> for ReadError {
    fn from(e: io::Error) -> Self {
        ReadError::Io(e)
    }
}

fn bad(message: &str) -> ReadError {
    ReadError::Bad(400, message.to_string())
}

/// Reads one line without its CRLF/LF; `None` at EOF before any byte.
fn read_line(reader: &mut BufReader<Patient<'_>>) -> Result<Option<String>, ReadError> {
    let mut buf = Vec::new();
    let n = reader.by_ref().take(MAX_LINE).read_until(b'\n', &mut buf)?;
    if n == 0 {
        return Ok(None);
    }
    if buf.last() != Some(&b'\n') {
        if n as u64 >= MAX_LINE {
            return Err(bad("line too long"));
        }
        return Err(ReadError::Io(io::ErrorKind::UnexpectedEof.into()));
    }
    buf.pop();
    if buf.last() == Some(&b'\r') {
        buf.pop();
    }
    String::from_utf8(buf)
        .map(Some)
        .map_err(|_| bad("request line or header is not UTF-8"))
}

fn read_line_required(reader: &mut BufReader<Patient<'_>>) -> Result<String, ReadError> {
    read_line(reader)?.ok_or_else(|| ReadError::Io(io::ErrorKind::UnexpectedEof.into()))
}

/// Reads the next request; `None` when the client closed the connection between requests.
fn read_request(conn: &mut Conn<'_>) -> Result<Option<Request>, ReadError> {
    // Tolerate empty lines before a request line (RFC 9112 section 2.2).
    let line = loop {
        match read_line(&mut conn.reader)? {
            None => return Ok(None),
            Some(line) if line.is_empty() => continue,
            Some(line) => break line,
        }
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(bad("malformed request line"));
    };
    if !version.starts_with("HTTP/1.") {
        return Err(ReadError::Bad(
            505,
            "HTTP version not supported".to_string(),
        ));
    }
    let http10 = version == "HTTP/1.0";

    let mut headers = Vec::new();
    loop {
        let line = read_line_required(&mut conn.reader)?;
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(ReadError::Bad(431, "too many headers".to_string()));
        }
        let Some((name, value)) = line.split_once(':') else {
            return Err(bad("malformed header line"));
        };
        headers.push((name.trim().to_ascii_lowercase(), value.trim().to_string()));
    }

    let mut request = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
        close: false,
    };
    request.close = request.has_token("connection", "close")
        || (http10 && !request.has_token("connection", "keep-alive"));

    let chunked = request.has_token("transfer-encoding", "chunked");
    let length = match request.header("content-length") {
        Some(v) if !chunked => Some(v.parse::<u64>().map_err(|_| bad("bad Content-Length"))?),
        _ => None,
    };
    if length.is_some_and(|n| n > MAX_BODY) {
        return Err(ReadError::Bad(413, "request body too large".to_string()));
    }
    if (chunked || length.is_some_and(|n| n > 0)) && request.has_token("expect", "100-continue") {
        conn.writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
    }
    if chunked {
        request.body = read_chunked_body(&mut conn.reader)?;
    } else if let Some(n) = length {
        let mut body = vec![0; n as usize];
        conn.reader.read_exact(&mut body)?;
        request.body = body;
    }
    Ok(Some(request))
}

fn read_chunked_body(reader: &mut BufReader<Patient<'_>>) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line_required(reader)?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size = u64::from_str_radix(size, 16).map_err(|_| bad("bad chunk size"))?;
        if size == 0 {
            // Trailer fields, then the empty line that ends the message.
            while !read_line_required(reader)?.is_empty() {}
            return Ok(body);
        }
        if body.len() as u64 + size > MAX_BODY {
            return Err(ReadError::Bad(413, "request body too large".to_string()));
        }
        let start = body.len();
        body.resize(start + size as usize, 0);
        reader.read_exact(&mut body[start..])?;
        if !read_line_required(reader)?.is_empty() {
            return Err(bad("chunk data not followed by CRLF"));
        }
    }
}

/// The target without its query string, for routing.
fn route_path(target: &str) -> &str {
    target.split(['?', '#']).next().unwrap_or(target)
}

const JSON: &str = "application/json; charset=utf-8";
const PLAIN: &str = "text/plain; charset=utf-8";

/// Whether `path` is a chat route of either protocol.
fn is_chat_path(path: &str) -> bool {
    path == "/api/chat" || path == "/v1/chat/completions"
}

/// The routes of an OpenAI-compatible server: `/v1/models`, `/v1/chat/completions`, the
/// extra GET routes, and an OpenAI-shaped 404 for everything else (`/api/*` included).
fn route_openai(conn: &mut Conn<'_>, req: &Request, mode: &OpenAiMode) -> io::Result<After> {
    let shared = conn.shared;
    let path = route_path(&req.target);
    if let Some(key) = &mode.key
        && path.starts_with("/v1/")
        && req.header("authorization") != Some(&format!("Bearer {key}"))
    {
        let body = json!({"error": {"message": "Invalid API Key", "type": "authentication_error", "code": 401}});
        return conn.respond(401, JSON, go_json(&body).as_bytes(), false, req.close);
    }
    if let Some((_, _, body)) = shared
        .extra
        .iter()
        .find(|(method, p, _)| *method == req.method && p == path)
    {
        return conn.respond_json(200, body, false, req.close);
    }
    match path {
        "/v1/models" if req.method == "GET" => {
            let data: Vec<Value> = shared
                .models
                .iter()
                .map(|m| json!({"id": m.name, "object": "model", "owned_by": "fake", "created": 1}))
                .collect();
            conn.respond_json(
                200,
                &json!({"object": "list", "data": data}),
                false,
                req.close,
            )
        }
        "/v1/chat/completions" if req.method == "POST" => chat(conn, req),
        _ => {
            let body = json!({"error": {"code": 404, "message": "File Not Found", "type": "not_found_error"}});
            conn.respond(404, JSON, go_json(&body).as_bytes(), false, req.close)
        }
    }
}

fn route(conn: &mut Conn<'_>, req: &Request) -> io::Result<After> {
    let shared = conn.shared;
    if let Some(mode) = &shared.openai {
        return route_openai(conn, req, mode);
    }
    let head = req.method == "HEAD";
    let get = req.method == "GET" || head;
    let post = req.method == "POST";
    match route_path(&req.target) {
        "/" if get => conn.respond(200, PLAIN, b"Ollama is running", head, req.close),
        "/api/version" if get => {
            let body = json!({"version": shared.version});
            conn.respond_json(200, &body, head, req.close)
        }
        "/api/tags" if get => {
            let models: Vec<Value> = shared.models.iter().map(|m| m.tags_entry.clone()).collect();
            conn.respond_json(200, &json!({"models": models}), head, req.close)
        }
        "/api/ps" if get => {
            let models: Vec<Value> = shared.models.iter().map(running_entry).collect();
            conn.respond_json(200, &json!({"models": models}), head, req.close)
        }
        "/api/show" if post => show(conn, req),
        "/api/chat" if post => chat(conn, req),
        "/" | "/api/version" | "/api/tags" | "/api/ps" => not_allowed(conn, req, "GET, HEAD"),
        "/api/show" | "/api/chat" => not_allowed(conn, req, "POST"),
        _ => conn.respond(404, "text/plain", b"404 page not found", head, req.close),
    }
}

fn not_allowed(conn: &mut Conn<'_>, req: &Request, allow: &str) -> io::Result<After> {
    let head = conn.head(405, "text/plain", Some(22), req.close, &[("Allow", allow)]);
    conn.writer.write_all(head.as_bytes())?;
    if req.method != "HEAD" {
        conn.writer.write_all(b"405 method not allowed")?;
    }
    Ok(if req.close {
        After::Close
    } else {
        After::KeepAlive
    })
}

fn running_entry(m: &ModelSpec) -> Value {
    let mut entry = m.tags_entry.clone();
    let context = m
        .show
        .pointer("/model_info/qwen3.context_length")
        .cloned()
        .unwrap_or(json!(4096));
    entry["expires_at"] = json!("2026-02-10T09:17:33.123456789-08:00");
    entry["size_vram"] = entry["size"].clone();
    entry["context_length"] = context;
    entry
}

/// Parses a JSON request body the way Ollama's handlers do, or gives the error to send.
fn decode_body(body: &[u8], go_type: &str) -> Result<Map<String, Value>, String> {
    if body.is_empty() {
        return Err("missing request body".to_string());
    }
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(Value::Null) => Ok(Map::new()),
        Ok(other) => {
            let kind = match other {
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                _ => "array",
            };
            Err(format!(
                "json: cannot unmarshal {kind} into Go value of type {go_type}"
            ))
        }
        Err(e) => Err(decoder_message(body, &e)),
    }
}

/// Something close to what Go's `encoding/json` says about bad input.
fn decoder_message(body: &[u8], e: &serde_json::Error) -> String {
    let first = body.iter().copied().find(|b| !b.is_ascii_whitespace());
    match first {
        None => "missing request body".to_string(),
        Some(b) if !(b"{[\"-tfn".contains(&b) || b.is_ascii_digit()) => {
            let c = char::from(b);
            format!("invalid character '{c}' looking for beginning of value")
        }
        _ if e.is_eof() => "unexpected EOF".to_string(),
        _ => format!("invalid JSON: {e}"),
    }
}

fn show(conn: &mut Conn<'_>, req: &Request) -> io::Result<After> {
    let body = match decode_body(&req.body, "api.ShowRequest") {
        Ok(body) => body,
        Err(message) => return conn.respond_error(400, &message, req.close),
    };
    let asked = ["model", "name"]
        .iter()
        .filter_map(|k| body.get(*k).and_then(Value::as_str))
        .find(|s| !s.is_empty());
    let Some(asked) = asked else {
        return conn.respond_error(400, "model is required", req.close);
    };
    match conn.shared.find_model(asked) {
        Some(model) => conn.respond_json(200, &model.show, false, req.close),
        None => conn.respond_error(404, &format!("model '{asked}' not found"), req.close),
    }
}

fn chat(conn: &mut Conn<'_>, req: &Request) -> io::Result<After> {
    let body = match decode_body(&req.body, "api.ChatRequest") {
        Ok(body) => body,
        Err(message) => return conn.respond_error(400, &message, req.close),
    };
    let model = body
        .get("model")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let next = lock(&conn.shared.script).pop_front();
    let Some(reply) = next else {
        conn.shared.unexpected.fetch_add(1, Ordering::SeqCst);
        return conn.respond_error(500, "fake ollama: no scripted reply left", req.close);
    };
    serve_reply(conn, reply, &model, req.close)
}

fn serve_reply(conn: &mut Conn<'_>, reply: Reply, model: &str, close: bool) -> io::Result<After> {
    match reply {
        Reply::Json(mut value) => {
            echo_model(&mut value, model);
            conn.respond_json(200, &value, false, close)
        }
        Reply::Error(status, message) => conn.respond_error(status, &message, close),
        Reply::Raw(status, content_type, body) => {
            conn.respond(status, content_type, body.as_bytes(), false, close)
        }
        Reply::Redirect(status, location) => {
            let body = format!("moved to {location}");
            let mut out = conn
                .head(
                    status,
                    "text/plain; charset=utf-8",
                    Some(body.len()),
                    close,
                    &[("Location", &location)],
                )
                .into_bytes();
            out.extend_from_slice(body.as_bytes());
            conn.writer.write_all(&out)?;
            conn.writer.flush()?;
            Ok(if close {
                After::Close
            } else {
                After::KeepAlive
            })
        }
        Reply::Delayed(delay, inner) => {
            if !conn.shared.sleep(delay) {
                return Ok(After::Close);
            }
            serve_reply(conn, *inner, model, close)
        }
        Reply::AfterGate(gate, inner) => {
            if !conn.shared.wait_at(&gate) {
                return Ok(After::Close);
            }
            serve_reply(conn, *inner, model, close)
        }
        Reply::Stream(chunks) => stream(conn, chunks, model, close),
        Reply::Endless(status, start) => endless(conn, status, &start),
    }
}

fn stream(conn: &mut Conn<'_>, chunks: Vec<Chunk>, model: &str, close: bool) -> io::Result<After> {
    let kind = if conn.shared.openai.is_some() {
        "text/event-stream"
    } else {
        "application/x-ndjson"
    };
    let head = conn.head(200, kind, None, close, &[]);
    conn.writer.write_all(head.as_bytes())?;
    conn.writer.flush()?;
    for chunk in chunks {
        match chunk {
            Chunk::Line(mut value) => {
                echo_model(&mut value, model);
                let mut line = go_json(&value);
                line.push('\n');
                write_chunk(&mut conn.writer, line.as_bytes())?;
            }
            Chunk::Raw(bytes) => {
                if !bytes.is_empty() {
                    write_chunk(&mut conn.writer, bytes.as_bytes())?;
                }
            }
            Chunk::Pause(delay) => {
                if !conn.shared.sleep(delay) {
                    return Ok(After::Close);
                }
            }
            Chunk::Gate(gate) => {
                if !conn.shared.wait_at(&gate) {
                    return Ok(After::Close);
                }
            }
            Chunk::End => break,
            Chunk::Drop => {
                let _ = conn.writer.shutdown(Shutdown::Both);
                return Ok(After::Close);
            }
            Chunk::Hang => {
                conn.shared.hangs.fetch_add(1, Ordering::SeqCst);
                hang(conn);
                return Ok(After::Close);
            }
        }
    }
    conn.writer.write_all(b"0\r\n\r\n")?;
    conn.writer.flush()?;
    Ok(if close {
        After::Close
    } else {
        After::KeepAlive
    })
}

fn write_chunk(w: &mut TcpStream, data: &[u8]) -> io::Result<()> {
    let mut buf = format!("{:x}\r\n", data.len()).into_bytes();
    buf.extend_from_slice(data);
    buf.extend_from_slice(b"\r\n");
    w.write_all(&buf)?;
    w.flush()
}

/// Holds the connection open, writing nothing, until the client closes it, the server
/// stops, or HANG_LIMIT passes. Whatever the client sends meanwhile is discarded.
fn hang(conn: &mut Conn<'_>) {
    let deadline = Instant::now() + HANG_LIMIT;
    let stream = &mut conn.reader.get_mut().stream;
    let mut buf = [0u8; 4096];
    while Instant::now() < deadline && !conn.shared.stopping() {
        match stream.read(&mut buf) {
            Ok(0) => return,
            Ok(_) => {}
            Err(e) if is_timeout(&e) => {}
            Err(_) => return,
        }
    }
}

fn echo_model(value: &mut Value, model: &str) {
    if let Some(slot) = value.get_mut("model")
        && slot.as_str() == Some(MODEL_ECHO)
    {
        *slot = json!(model);
    }
}

impl Conn<'_> {
    /// The status line and headers of a response; `length: None` means a chunked body.
    fn head(
        &self,
        status: u16,
        content_type: &str,
        length: Option<usize>,
        close: bool,
        extra: &[(&str, &str)],
    ) -> String {
        let mut head = format!(
            "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nDate: {}\r\n",
            reason_phrase(status),
            http_date()
        );
        match length {
            Some(n) => head.push_str(&format!("Content-Length: {n}\r\n")),
            None => head.push_str("Transfer-Encoding: chunked\r\n"),
        }
        for (name, value) in extra {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
        if close {
            head.push_str("Connection: close\r\n");
        }
        head.push_str("\r\n");
        head
    }

    /// A complete response with a `Content-Length` body (headers only for HEAD).
    fn respond(
        &mut self,
        status: u16,
        content_type: &str,
        body: &[u8],
        head_only: bool,
        close: bool,
    ) -> io::Result<After> {
        let mut out = self
            .head(status, content_type, Some(body.len()), close, &[])
            .into_bytes();
        if !head_only {
            out.extend_from_slice(body);
        }
        self.writer.write_all(&out)?;
        self.writer.flush()?;
        Ok(if close {
            After::Close
        } else {
            After::KeepAlive
        })
    }

    fn respond_json(
        &mut self,
        status: u16,
        body: &Value,
        head_only: bool,
        close: bool,
    ) -> io::Result<After> {
        let text = go_json(body);
        self.respond(status, JSON, text.as_bytes(), head_only, close)
    }

    fn respond_error(&mut self, status: u16, message: &str, close: bool) -> io::Result<After> {
        self.respond_json(status, &json!({"error": message}), false, close)
    }
}

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        204 => "No Content",
        301 => "Moved Permanently",
        302 => "Found",
        307 => "Temporary Redirect",
        308 => "Permanent Redirect",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        502 => "Bad Gateway",
        503 => "Service Unavailable",
        504 => "Gateway Timeout",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

// ---------------------------------------------------------------------------------------
// Go-style JSON and time formatting
// ---------------------------------------------------------------------------------------

/// Field order of Ollama's chat response structs (chunk, message, tool call); other keys,
/// such as those of `/api/tags` and `/api/show`, follow alphabetically.
const GO_FIELD_ORDER: &[&str] = &[
    "model",
    "remote_model",
    "remote_host",
    "created_at",
    "message",
    "role",
    "content",
    "thinking",
    "images",
    "tool_calls",
    "id",
    "function",
    "index",
    "name",
    "arguments",
    "done",
    "done_reason",
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
];

/// Serializes like Go's `json.Marshal` of Ollama's chat structs: their fields in struct
/// order, `<`, `>`, `&`, U+2028 and U+2029 escaped. Tool arguments (a Go map) keep sorted
/// keys. Public so a test can build the exact bytes of a line for a [`Chunk::Raw`].
pub fn go_json(value: &Value) -> String {
    let mut out = String::new();
    write_go(value, &mut out, true);
    let mut escaped = String::with_capacity(out.len());
    for c in out.chars() {
        // These characters can only occur inside string literals here, so escaping them
        // after serialization is safe.
        match c {
            '<' => escaped.push_str("\\u003c"),
            '>' => escaped.push_str("\\u003e"),
            '&' => escaped.push_str("\\u0026"),
            '\u{2028}' => escaped.push_str("\\u2028"),
            '\u{2029}' => escaped.push_str("\\u2029"),
            c => escaped.push(c),
        }
    }
    escaped
}

fn write_go(value: &Value, out: &mut String, struct_order: bool) {
    match value {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            if struct_order {
                keys.sort_by_key(|k| {
                    let rank = GO_FIELD_ORDER.iter().position(|f| f == k);
                    (rank.unwrap_or(usize::MAX), k.as_str())
                });
            } else {
                keys.sort();
            }
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(key.clone()).to_string());
                out.push(':');
                write_go(&map[key], out, struct_order && key != "arguments");
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_go(item, out, struct_order);
            }
            out.push(']');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}

/// Now as RFC 3339 in UTC with Go's trimmed fraction, e.g. `2026-03-01T10:00:00.1234Z`.
/// The fraction is never empty, so every chunk shows one.
fn now_rfc3339() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let secs = now.as_secs();
    let nanos = now.subsec_nanos().max(1);
    let (y, mo, d) = civil_from_days((secs / 86_400) as i64);
    let rem = secs % 86_400;
    let fraction = format!("{nanos:09}");
    format!(
        "{y:04}-{mo:02}-{d:02}T{:02}:{:02}:{:02}.{}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        fraction.trim_end_matches('0')
    )
}

/// The `Date` header value, e.g. `Sun, 01 Mar 2026 10:00:00 GMT`.
fn http_date() -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    let days = secs / 86_400;
    let (y, mo, d) = civil_from_days(days as i64);
    let rem = secs % 86_400;
    format!(
        "{}, {d:02} {} {y:04} {:02}:{:02}:{:02} GMT",
        DAYS[(days % 7) as usize],
        MONTHS[(mo - 1) as usize],
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Year, month, day of a count of days since 1970-01-01 (proleptic Gregorian calendar).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = (if mp < 10 { mp + 3 } else { mp - 9 }) as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

/// Writes `status` and a chunked body that starts with `start` and never ends, until a
/// write fails (the client hung up) or the server stops. The connection is closed after.
fn endless(conn: &mut Conn<'_>, status: u16, start: &str) -> io::Result<After> {
    let head = conn.head(status, JSON, None, true, &[]);
    conn.writer.write_all(head.as_bytes())?;
    if !start.is_empty() {
        write_chunk(&mut conn.writer, start.as_bytes())?;
    }
    let filler = vec![b'x'; 64 << 10];
    while !conn.shared.stopping() {
        if write_chunk(&mut conn.writer, &filler).is_err() {
            break;
        }
    }
    Ok(After::Close)
}
