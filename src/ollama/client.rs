//! The HTTP client: one chat call at a time, streamed, with an idle watchdog.
//!
//! The watchdog (`timeout_seconds`) bounds *silence*, not total time: it restarts with
//! every chunk that adds text, reasoning or a call, so a slow reply that keeps producing
//! is never cut while a hung server, or one streaming blank lines or empty chunks, is
//! abandoned. Cancelling is dropping the future: the connection closes and Ollama stops
//! generating. Every response body but the chat stream (which the stream parser bounds)
//! is read through one function that stops at a bound of its kind (see `body`), so a
//! server that never stops sending cannot exhaust memory.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use serde_json::Value;

use super::OllamaError;
use super::body::{BodyKind, Capped};
use super::error::error_text;
use super::kind::{ApiKey, ServerKind};
use super::openai::OpenAiParser;
use super::parser::Parser;
use super::stream::{Delta, MAX_LINE_BYTES, Reply, StreamParser};
use super::tls::{self, CERT_FILE_VAR, Trust};
use super::wire::{ChatRequest, ModelDetails};

/// The most bytes of text, reasoning and call arguments one reply may hold: generous for
/// `num_predict` tokens (no real token is 256 bytes), and never under 16 MiB. Only a server
/// that ignores `num_predict` (or streams forever) reaches it.
fn reply_limit(num_predict: u64) -> usize {
    let bytes = num_predict.saturating_mul(256).max(16 << 20);
    usize::try_from(bytes).unwrap_or(usize::MAX)
}

/// How long to wait, after the `done` line, for the end of the response body.
const DRAIN_LIMIT: Duration = Duration::from_millis(50);

/// The loopback addresses `localhost` stands for (the port comes from the URL).
const LOOPBACK: [std::net::SocketAddr; 2] = [
    std::net::SocketAddr::new(std::net::IpAddr::V4(std::net::Ipv4Addr::LOCALHOST), 0),
    std::net::SocketAddr::new(std::net::IpAddr::V6(std::net::Ipv6Addr::LOCALHOST), 0),
];

/// Whether `endpoint` (a normalised URL, scheme in lower case) is https.
fn is_https(endpoint: &str) -> bool {
    endpoint
        .get(..8)
        .is_some_and(|scheme| scheme.eq_ignore_ascii_case("https://"))
}

/// Talks to one model server, Ollama or OpenAI-compatible (see [`ServerKind`]).
#[derive(Debug)]
pub struct Client {
    http: reqwest::Client,
    /// The protocol, decided from the endpoint's path.
    kind: ServerKind,
    /// The bearer key (`METRON_API_KEY`), for an OpenAI-compatible server only: its
    /// `Debug` is masked, and it is never part of a URL or a message.
    key: Option<ApiKey>,
    /// What an https endpoint's certificate is checked against; `None` for http.
    trust: Option<Trust>,
    /// The chat URL without credentials (errors name it and [`Client::base_url`]).
    chat_url: String,
    base_url: String,
    /// The credentials written into the endpoint's URL, sent as HTTP Basic auth on every
    /// request of this client, which only ever talks to that one host (redirects are
    /// never followed, so they cannot carry the password elsewhere).
    credentials: Option<crate::config::Credentials>,
    idle: Duration,
    replies: AtomicU64,
}

impl Client {
    /// A client for `endpoint` (a normalised chat URL, see `config::normalize_endpoint`)
    /// whose calls give up after `idle` without a byte.
    pub fn new(endpoint: &str, idle: Duration) -> Result<Client, OllamaError> {
        let builder = reqwest::Client::builder()
            // No proxy: the model runs on this machine (or one the user named), and a
            // proxy variable meant for the web must not reroute code to a third party.
            .no_proxy()
            // No redirects: following one would re-send the whole chat body (the code the
            // tools read) to wherever the `Location` points, past the `remote_endpoint`
            // check, which only ever sees the configured endpoint. A 3xx is an error
            // naming the target instead (see `redirect_error`).
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(idle.min(Duration::from_secs(10)))
            // `localhost` is the loopback interface by definition (RFC 6761), so it is
            // answered here, not by the system resolver: a minimal container (`FROM
            // scratch`) has no /etc/hosts, and there the default endpoint would not
            // resolve at all. IPv4 first, as Ollama listens on 127.0.0.1 by default.
            // Over https the certificate is still checked for the name `localhost`.
            .resolve_to_addrs("localhost", &LOOPBACK);
        // SSL_CERT_FILE is read only for an https endpoint: a broken value set for other
        // tools must not stop a plain-http session. The TLS configuration is handed over
        // either way: reqwest, built without a default crypto provider, would otherwise
        // panic building its own.
        let https = is_https(endpoint);
        let extra = if https {
            std::env::var_os(CERT_FILE_VAR).map(PathBuf::from)
        } else {
            None
        };
        let (config, trust) = tls::client_config(endpoint, extra.as_deref())?;
        let trust = https.then_some(trust);
        let builder = builder.use_preconfigured_tls(config);
        let http = builder.build().map_err(|e| OllamaError::BadEndpoint {
            url: crate::config::shown_endpoint(endpoint),
            reason: e.to_string(),
        })?;
        let (endpoint, credentials) = crate::config::split_credentials(endpoint);
        let endpoint = endpoint.as_str();
        let kind = ServerKind::of_endpoint(endpoint);
        let base_url = endpoint
            .strip_suffix(kind.chat_path())
            .unwrap_or(endpoint)
            .to_owned();
        let key = match kind {
            ServerKind::OpenAi => ApiKey::from_env(),
            ServerKind::Ollama => None,
        };
        Ok(Client {
            http,
            kind,
            key,
            trust,
            chat_url: endpoint.to_owned(),
            base_url,
            credentials,
            idle,
            replies: AtomicU64::new(0),
        })
    }

    /// The protocol this client speaks.
    pub(crate) fn kind(&self) -> ServerKind {
        self.kind
    }

    /// Whether a key is sent (`METRON_API_KEY`, OpenAI-compatible servers only), for the
    /// doctor's row; never the key itself.
    pub(crate) fn has_key(&self) -> bool {
        self.key.is_some()
    }

    /// The error for an error status, in the words of the server's kind.
    fn status_error(&self, status: u16, body: &[u8], model: &str) -> OllamaError {
        let body = String::from_utf8_lossy(body);
        match self.kind {
            ServerKind::Ollama => OllamaError::from_status(status, &body, model, &self.base_url),
            ServerKind::OpenAi => OllamaError::from_openai_status(
                status,
                &body,
                model,
                &self.base_url,
                self.key.is_some(),
            ),
        }
    }

    /// What the server's certificate is checked against, for an https endpoint (`None`
    /// for plain http), so `--doctor` can say which CAs are trusted.
    pub(crate) fn trust(&self) -> Option<&Trust> {
        self.trust.as_ref()
    }

    /// Sends one chat request and returns the whole reply; `on_delta` sees the text as it
    /// arrives (when streaming).
    pub(crate) async fn chat(
        &self,
        request: &ChatRequest<'_>,
        on_delta: &mut dyn FnMut(Delta<'_>),
    ) -> Result<Reply, OllamaError> {
        let started = Instant::now();
        let body = match self.kind {
            ServerKind::Ollama => serde_json::to_vec(request),
            ServerKind::OpenAi => super::openai::wire::request_body(request),
        }
        .map_err(|e| OllamaError::Protocol(format!("cannot encode the request: {e}")))?;
        let seq = self.replies.fetch_add(1, Ordering::Relaxed) + 1;
        let ids = format!("call_m{seq}");
        let max_reply = reply_limit(request.options.num_predict);
        let mut parser = match self.kind {
            ServerKind::Ollama => {
                Parser::Ollama(StreamParser::new(ids).with_limits(MAX_LINE_BYTES, max_reply))
            }
            ServerKind::OpenAi => Parser::OpenAi(
                OpenAiParser::new(ids, request.stream).with_limits(MAX_LINE_BYTES, max_reply),
            ),
        };
        let send = self
            .authorized(self.http.post(&self.chat_url))
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body)
            .send();
        let response = self.within_idle(send, "before answering").await?;
        let response = response.map_err(|e| self.transport_error(&e))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(self.redirect_error(&response));
        }
        if !status.is_success() {
            let text = self
                .within_idle(
                    self.read_body(response, BodyKind::ErrorStatus),
                    "before answering",
                )
                .await?
                .unwrap_or_default();
            return Err(self.status_error(status.as_u16(), &text, request.model));
        }
        let mut stream = response.bytes_stream();
        // The watchdog restarts on progress only (text, reasoning, a call): a server
        // streaming blank lines or empty chunks forever is as silent as a hung one, and
        // is cut after `timeout_seconds` the same way.
        let mut progress_at = Instant::now();
        let mut only_empty = false;
        loop {
            let phase = match (parser.has_output(), only_empty) {
                (true, false) => "in the middle of the reply",
                (true, true) => "in the middle of the reply (it sent only empty chunks)",
                (false, false) => "before answering",
                (false, true) => "before answering (it sent only empty chunks)",
            };
            let left = self.idle.saturating_sub(progress_at.elapsed());
            match self.within(left, stream.next(), phase).await? {
                None => break,
                Some(Err(_)) => return Err(OllamaError::Truncated),
                Some(Ok(bytes)) => {
                    let mut first = None;
                    let before = parser.progress();
                    let done = parser.feed(&bytes, &mut |delta| {
                        first.get_or_insert_with(|| started.elapsed());
                        on_delta(delta);
                    })?;
                    if parser.progress() == before {
                        only_empty = true;
                    } else {
                        progress_at = Instant::now();
                        only_empty = false;
                    }
                    if let Some(at) = first {
                        parser.note_first_token(at);
                    }
                    if done {
                        // Read the end of the body (normally already here), so the
                        // connection can be reused for the next round trip; never wait
                        // long for it.
                        let drain = async { while let Some(Ok(_)) = stream.next().await {} };
                        let _ = tokio::time::timeout(DRAIN_LIMIT, drain).await;
                        break;
                    }
                }
            }
        }
        let mut reply = parser.finish(on_delta)?;
        reply.elapsed = started.elapsed();
        if !request.stream && !reply.content.is_empty() {
            reply.first_token.get_or_insert(reply.elapsed);
        }
        Ok(reply)
    }

    /// `GET /api/version`: the server's version string.
    pub(crate) async fn version(&self, limit: Duration) -> Result<String, OllamaError> {
        let body = self.get_json("/api/version", limit).await?;
        Ok(body
            .get("version")
            .and_then(Value::as_str)
            .unwrap_or("unknown")
            .to_owned())
    }

    /// The names of the models the server offers: `GET /api/tags` (Ollama's installed
    /// models) or `GET /v1/models` (what an OpenAI-compatible server serves).
    pub(crate) async fn models(&self, limit: Duration) -> Result<Vec<String>, OllamaError> {
        if self.kind == ServerKind::OpenAi {
            let body = self.get_json("/v1/models", limit).await?;
            return Ok(body
                .get("data")
                .and_then(Value::as_array)
                .map(|models| {
                    models
                        .iter()
                        .filter_map(|m| m.get("id")?.as_str())
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default());
        }
        let body = self.get_json("/api/tags", limit).await?;
        Ok(body
            .get("models")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| m.get("name").or_else(|| m.get("model"))?.as_str())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `GET /api/ps`: the loaded models, each with the context window it was loaded with
    /// when the server says (v0.10 and later).
    pub(crate) async fn running(
        &self,
        limit: Duration,
    ) -> Result<Vec<(String, Option<u64>)>, OllamaError> {
        let body = self.get_json("/api/ps", limit).await?;
        Ok(body
            .get("models")
            .and_then(Value::as_array)
            .map(|models| {
                models
                    .iter()
                    .filter_map(|m| {
                        let name = m.get("name").or_else(|| m.get("model"))?.as_str()?;
                        Some((
                            name.to_owned(),
                            m.get("context_length").and_then(Value::as_u64),
                        ))
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `POST /api/show`: what the server knows about `model`.
    pub(crate) async fn show(
        &self,
        model: &str,
        limit: Duration,
    ) -> Result<ModelDetails, OllamaError> {
        let url = format!("{}/api/show", self.base_url);
        let send = self
            .authorized(self.http.post(&url))
            .json(&serde_json::json!({ "model": model }))
            .send();
        let body = self.read_json(send, limit, model).await?;
        Ok(ModelDetails::from_show(&body))
    }

    /// The context window an OpenAI-compatible server runs `model` with, where it says:
    /// llama-server's `GET /props` (`default_generation_settings.n_ctx`, or `n_ctx`), then
    /// LM Studio's `GET /api/v0/models/{model}` (`loaded_context_length`, only while the
    /// model is loaded). `Ok(None)` when neither answers with a number (vLLM, Ollama's
    /// `/v1`, a model LM Studio has not loaded yet: the configured `num_ctx` is then all
    /// there is), or for an Ollama endpoint,
    /// whose window comes from `/api/show`. Each ask is bounded by `limit` and by the JSON
    /// body bound; only an unreachable server is an error.
    pub(crate) async fn context_length(
        &self,
        model: &str,
        limit: Duration,
    ) -> Result<Option<u64>, OllamaError> {
        if self.kind == ServerKind::Ollama {
            return Ok(None);
        }
        let positive = |v: Option<&Value>| v.and_then(Value::as_u64).filter(|&n| n > 0);
        match self.get_json("/props", limit).await {
            Ok(props) => {
                let found = positive(props.pointer("/default_generation_settings/n_ctx"))
                    .or_else(|| positive(props.get("n_ctx")));
                if found.is_some() {
                    return Ok(found);
                }
            }
            Err(e @ (OllamaError::ServerUnreachable { .. } | OllamaError::Tls { .. })) => {
                return Err(e);
            }
            Err(_) => {}
        }
        // The model name goes into the path: escaped, so a name with `/` or `?` (LM
        // Studio's `publisher/model`) stays one segment.
        let segment: String = url_segment(model);
        match self
            .get_json(&format!("/api/v0/models/{segment}"), limit)
            .await
        {
            // Only a loaded model's: LM Studio loads one on first use at its default
            // length, not at `max_context_length`, which is only what the model allows.
            Ok(info) => Ok(positive(info.get("loaded_context_length"))),
            Err(e @ (OllamaError::ServerUnreachable { .. } | OllamaError::Tls { .. })) => Err(e),
            Err(_) => Ok(None),
        }
    }

    async fn get_json(&self, path: &str, limit: Duration) -> Result<Value, OllamaError> {
        let url = format!("{}{path}", self.base_url);
        let send = self.authorized(self.http.get(&url)).send();
        self.read_json(send, limit, "").await
    }

    /// `request` with the key (`Authorization: Bearer`, OpenAI-compatible servers) or the
    /// endpoint's credentials, when there is either; the key wins, as it is the one the
    /// server's `--api-key` checks.
    fn authorized(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        if let Some(key) = &self.key {
            return request.bearer_auth(key.secret());
        }
        match &self.credentials {
            Some(credentials) => {
                request.basic_auth(&credentials.user, credentials.password.as_deref())
            }
            None => request,
        }
    }

    async fn read_json(
        &self,
        send: impl Future<Output = reqwest::Result<reqwest::Response>>,
        limit: Duration,
        model: &str,
    ) -> Result<Value, OllamaError> {
        let timed_out = || OllamaError::IdleTimeout {
            seconds: limit.as_secs().max(1),
            phase: "before answering",
        };
        let work = async {
            let response = send.await.map_err(|e| self.transport_error(&e))?;
            let status = response.status();
            if status.is_redirection() {
                return Err(self.redirect_error(&response));
            }
            if !status.is_success() {
                let text = self
                    .read_body(response, BodyKind::ErrorStatus)
                    .await
                    .unwrap_or_default();
                return Err(self.status_error(status.as_u16(), &text, model));
            }
            let bytes = self.read_body(response, BodyKind::Json).await?;
            serde_json::from_slice(&bytes)
                .map_err(|_| OllamaError::Protocol(error_text(&String::from_utf8_lossy(&bytes))))
        };
        tokio::time::timeout(limit, work)
            .await
            .map_err(|_| timed_out())?
    }

    /// The body of `response`, read chunk by chunk and never past `kind`'s bound (see
    /// [`BodyKind`]), so an endless body costs no more memory than the bound. Every
    /// response except the chat stream is read through here. Past the bound an error
    /// status keeps its start (the message), and a JSON answer is [`OllamaError::TooLarge`];
    /// a body cut off by the network keeps what arrived of an error status's, and is
    /// [`OllamaError::Truncated`] for a JSON answer.
    async fn read_body(
        &self,
        response: reqwest::Response,
        kind: BodyKind,
    ) -> Result<Vec<u8>, OllamaError> {
        let limit = kind.limit();
        let too_large = |response: &reqwest::Response| OllamaError::TooLarge {
            url: self.base_url.clone(),
            path: response.url().path().to_owned(),
            limit,
        };
        // A JSON answer that says up front it is too long is refused without reading it.
        let declared = response.content_length();
        if kind == BodyKind::Json && declared.is_some_and(|n| n > limit as u64) {
            return Err(too_large(&response));
        }
        let refused = too_large(&response);
        let mut body = Capped::new(limit);
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            match chunk {
                Ok(chunk) if body.push(&chunk) => {}
                Ok(_) => break,
                Err(_) if kind == BodyKind::ErrorStatus => break,
                Err(_) => return Err(OllamaError::Truncated),
            }
        }
        match kind {
            BodyKind::Json if body.is_over() => Err(refused),
            _ => Ok(body.into_bytes()),
        }
    }

    async fn within_idle<T>(
        &self,
        work: impl Future<Output = T>,
        phase: &'static str,
    ) -> Result<T, OllamaError> {
        self.within(self.idle, work, phase).await
    }

    /// `work` within `limit` (what is left of the watchdog), or the watchdog's error.
    async fn within<T>(
        &self,
        limit: Duration,
        work: impl Future<Output = T>,
        phase: &'static str,
    ) -> Result<T, OllamaError> {
        tokio::time::timeout(limit, work)
            .await
            .map_err(|_| OllamaError::IdleTimeout {
                seconds: self.idle.as_secs(),
                phase,
            })
    }

    /// The error for a 3xx answer, which is never followed: the status and the `Location`
    /// it named (escaped: the header is the server's text), so the user can point the
    /// endpoint at the final address themselves, where the `remote_endpoint` check sees it.
    fn redirect_error(&self, response: &reqwest::Response) -> OllamaError {
        let location = response
            .headers()
            .get(reqwest::header::LOCATION)
            .map(|value| {
                String::from_utf8_lossy(value.as_bytes())
                    .escape_debug()
                    .to_string()
            })
            .unwrap_or_else(|| "(no Location header)".to_owned());
        OllamaError::Redirected {
            url: self.base_url.clone(),
            status: response.status().as_u16(),
            location,
        }
    }

    fn transport_error(&self, error: &reqwest::Error) -> OllamaError {
        if error.is_timeout() {
            return OllamaError::IdleTimeout {
                seconds: self.idle.as_secs(),
                phase: "before answering",
            };
        }
        let with_extra = self.trust.as_ref().is_some_and(|t| t.extra.is_some());
        if let Some(problem) = tls::problem_of(error, with_extra) {
            return OllamaError::Tls {
                url: self.base_url.clone(),
                problem,
            };
        }
        let mut reason = error.to_string();
        let mut source = std::error::Error::source(error);
        while let Some(inner) = source {
            reason = inner.to_string();
            source = inner.source();
        }
        let url = self.base_url.clone();
        if (error.is_connect() || error.is_builder()) && self.kind == ServerKind::OpenAi {
            OllamaError::ServerUnreachable { url, reason }
        } else if error.is_connect() || error.is_builder() {
            OllamaError::Unreachable { url, reason }
        } else {
            // Connected, then lost before a status line: something is listening, so
            // "start `ollama serve`" would be the wrong advice.
            OllamaError::HungUp { url, reason }
        }
    }
}

/// `text` percent-encoded as one URL path segment (unreserved characters kept).
fn url_segment(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || b"-._~:@".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_name_is_one_path_segment() {
        assert_eq!(url_segment("qwen/qwen3-4b"), "qwen%2Fqwen3-4b");
        assert_eq!(url_segment("a b?c"), "a%20b%3Fc");
        assert_eq!(url_segment("m:7b"), "m:7b");
    }

    #[test]
    fn the_reply_limit_follows_num_predict_with_a_floor() {
        assert_eq!(reply_limit(1), 16 << 20);
        assert_eq!(reply_limit(4096), 16 << 20);
        assert_eq!(reply_limit(1 << 20), 256 << 20);
        assert_eq!(reply_limit(u64::MAX), usize::MAX);
    }
}
