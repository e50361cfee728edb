//! What can go wrong talking to the model server (Ollama or OpenAI-compatible), each phrased so a person knows what to do next.

/// A failed model call. The text of each variant ends with the next step to take.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OllamaError {
    /// Nothing answered at the endpoint (connection refused, no route, DNS).
    #[error(
        "cannot reach Ollama at {url} ({reason}); start it with `ollama serve`, or point OLLAMA_HOST or `endpoint` at a running server"
    )]
    Unreachable {
        /// The URL that was tried.
        url: String,
        /// The transport's reason.
        reason: String,
    },
    /// Something accepted the connection but closed it without answering: typically
    /// Ollama crashing (or being killed for memory) while it loads the model.
    #[error(
        "the model server at {url} closed the connection before answering ({reason}); it may have crashed or run out of memory loading the model, so check its log and try again"
    )]
    HungUp {
        /// The server.
        url: String,
        /// The transport's reason.
        reason: String,
    },
    /// The endpoint cannot be used (the HTTP client cannot be built for it).
    #[error("cannot use endpoint {url}: {reason}")]
    BadEndpoint {
        /// The endpoint.
        url: String,
        /// Why.
        reason: String,
    },
    /// `SSL_CERT_FILE` names a file that cannot be read, or that holds no certificate.
    #[error(
        "cannot use SSL_CERT_FILE={file}: {reason}; point SSL_CERT_FILE at a PEM file of CA certificates (`-----BEGIN CERTIFICATE-----` blocks), or unset it to trust only the built-in roots"
    )]
    CertFile {
        /// The file, as the variable names it.
        file: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The TLS handshake with an https endpoint failed, most often on its certificate.
    #[error("cannot connect securely to {url}: {problem}")]
    Tls {
        /// The server.
        url: String,
        /// What failed, and the next step.
        problem: super::tls_problem::TlsProblem,
    },
    /// The model is not installed on the server (HTTP 404).
    #[error(
        "model `{model}` is not installed on the Ollama server at {host}; run `ollama pull {model}`, or choose one that `ollama list` shows (`/model NAME` in the session, `metron --model NAME`, or `model` / OLLAMA_MODEL); `metron --doctor` checks the setup"
    )]
    ModelNotFound {
        /// The model that was asked for.
        model: String,
        /// The server.
        host: String,
    },
    /// The model's template has no tool support (HTTP 400), so it cannot call metron's tools.
    #[error(
        "model `{model}` does not support tools, so it cannot drive metron (it would never see your code); pick a model whose `ollama show` lists the `tools` capability (qwen2.5-coder, qwen3, llama3.1 and others) and choose it (`/model NAME` in the session, `metron --model NAME`, or `model` / OLLAMA_MODEL); `metron --doctor` checks it"
    )]
    NoToolSupport {
        /// The model that was asked for.
        model: String,
    },
    /// The server answered with a redirect (HTTP 3xx), which metron never follows: following
    /// it would send the conversation, code included, to an address the `remote_endpoint`
    /// check never saw.
    #[error(
        "the server at {url} answered HTTP {status}, a redirect to {location}, which metron does not follow (it would send your code to an address it has not checked); if that address is the Ollama server you mean, point OLLAMA_HOST or `endpoint` at it directly"
    )]
    Redirected {
        /// The server that redirected.
        url: String,
        /// The 3xx status.
        status: u16,
        /// The `Location` it named, control characters escaped.
        location: String,
    },
    /// The server's queue is full (HTTP 503), Ollama or OpenAI-compatible.
    #[error("the model server is busy ({message}); try again in a moment")]
    Busy {
        /// The server's text.
        message: String,
    },
    /// The prompt does not fit the context window and the server refused it.
    #[error(
        "the conversation no longer fits the model's context window ({message}); use /reset, or raise `num_ctx`"
    )]
    ContextOverflow {
        /// The server's text.
        message: String,
    },
    /// Any other HTTP error status.
    #[error(
        "Ollama answered HTTP {status}: {message}; check the Ollama server's log, and run `metron --doctor` to check the setup"
    )]
    Http {
        /// The status code.
        status: u16,
        /// The `error` text of the body, or the body itself.
        message: String,
    },
    /// The server reported an error after the reply had started.
    #[error(
        "the model failed mid-reply: {0}; try again, and check the model server's log if it happens again"
    )]
    MidStream(String),
    /// The stream ended (or the connection dropped) without the final `done` line.
    #[error(
        "the reply ended before it was complete (the server never marked it done); the model server may have crashed or restarted, so check its log and try again"
    )]
    Truncated,
    /// Nothing arrived for `timeout_seconds`.
    #[error(
        "the model server was silent for {seconds} s {phase}, so metron gave up; if your hardware needs longer to load the model or produce the first token, raise `timeout_seconds`"
    )]
    IdleTimeout {
        /// The configured watchdog.
        seconds: u64,
        /// "before answering" or "in the middle of the reply".
        phase: &'static str,
    },
    /// A JSON answer longer than metron reads (see `body::JSON_BODY_BYTES`): a broken
    /// server, or something that is not Ollama, sending without end.
    #[error(
        "the server at {url} sent more than {} for {path}, far more than a model server sends, so metron stopped reading; check that `endpoint` (or OLLAMA_HOST) points at Ollama or at an OpenAI-compatible server's `/v1`, and check that server's log",
        super::body::human(*.limit)
    )]
    TooLarge {
        /// The server.
        url: String,
        /// The endpoint that was asked (`/api/tags`).
        path: String,
        /// The bound it passed, in bytes.
        limit: usize,
    },
    /// Nothing answered at an OpenAI-compatible endpoint (connection refused, no route, DNS).
    #[error(
        "cannot reach the model server at {url} ({reason}); start it (llama-server, LM Studio, vLLM), or point OLLAMA_HOST or `endpoint` at a running server"
    )]
    ServerUnreachable {
        /// The URL that was tried.
        url: String,
        /// The transport's reason.
        reason: String,
    },
    /// An OpenAI-compatible server wants a key and none was set (HTTP 401/403).
    #[error(
        "the model server at {url} needs a key (HTTP {status}: {message}); set {} to the key the server was started with (its `--api-key`) and run metron again; metron never reads a key from a config file",
        super::API_KEY_VAR
    )]
    KeyNeeded {
        /// The server.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's text.
        message: String,
    },
    /// An OpenAI-compatible server wants a key, and the one set was withheld because a
    /// project's config chose the endpoint (HTTP 401/403).
    #[error(
        "the model server at {url} needs a key (HTTP {status}: {message}), and {} is set but was not sent: the endpoint comes from the project's .metron.json; if the server is yours, set OLLAMA_HOST or `endpoint` in your own config (~/.metron/config.json) to it",
        super::API_KEY_VAR
    )]
    KeyWithheld {
        /// The server.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's text.
        message: String,
    },
    /// An OpenAI-compatible server refused the key that was sent (HTTP 401/403).
    #[error(
        "the model server at {url} refused the key in {} (HTTP {status}: {message}); set it to the key the server was started with (its `--api-key`), or unset it if the server needs none",
        super::API_KEY_VAR
    )]
    KeyRefused {
        /// The server.
        url: String,
        /// 401 or 403.
        status: u16,
        /// The server's text.
        message: String,
    },
    /// vLLM refuses requests with tools unless it was started to parse tool calls.
    #[error(
        "the model server refused metron's tools ({message}); start vLLM with `--enable-auto-tool-choice --tool-call-parser NAME` (the parser for your model, such as `hermes` for Qwen), then run metron again"
    )]
    ToolChoiceOff {
        /// The server's text.
        message: String,
    },
    /// An OpenAI-compatible server does not serve the model (HTTP 404).
    #[error(
        "model `{model}` is not served by the model server at {host}; choose one it lists (`/model` in a session, or `metron --doctor`), then use `/model NAME`, `metron --model NAME`, or `model` / OLLAMA_MODEL"
    )]
    NotServed {
        /// The model that was asked for.
        model: String,
        /// The server.
        host: String,
    },
    /// Any other HTTP error status from an OpenAI-compatible server.
    #[error(
        "the model server answered HTTP {status}: {message}; check the server's log, and run `metron --doctor` to check the setup"
    )]
    ServerHttp {
        /// The status code.
        status: u16,
        /// The server's text, or the body itself.
        message: String,
    },
    /// Something that is not the server kind's chat protocol (NDJSON or SSE).
    #[error(
        "the server sent something that is not the chat protocol metron expects: {0}; check that `endpoint` (or OLLAMA_HOST) points at Ollama or at an OpenAI-compatible server's `/v1`, and run `metron --doctor`"
    )]
    Protocol(String),
}

impl OllamaError {
    /// Reads an error response: the status and body text, as Ollama (or a proxy) sent them.
    pub(crate) fn from_status(status: u16, body: &str, model: &str, host: &str) -> OllamaError {
        // The model name may come from a project's `.metron.json`: on one line in the
        // message, so it cannot print lines of its own (the printer escapes the rest).
        let model = model.escape_debug().to_string();
        let model = model.as_str();
        let message = error_text(body);
        let lower = message.to_ascii_lowercase();
        if status == 404 && lower.contains("not found") && lower.contains("model") {
            return OllamaError::ModelNotFound {
                model: model.to_owned(),
                host: host.to_owned(),
            };
        }
        if status == 400 && lower.contains("does not support tools") {
            return OllamaError::NoToolSupport {
                model: model.to_owned(),
            };
        }
        if status == 503 {
            return OllamaError::Busy { message };
        }
        if matches!(status, 400 | 500) && is_overflow(body, &lower) {
            return OllamaError::ContextOverflow { message };
        }
        OllamaError::Http { status, message }
    }
}

impl OllamaError {
    /// An error the server sent inside its stream (an SSE `error` event): a prompt too
    /// long for the window is a [`OllamaError::ContextOverflow`], so the turn trims and
    /// retries as it does for a refusal by status, and anything else failed mid-reply.
    pub(crate) fn from_stream_error(body: &str) -> OllamaError {
        let message = error_text(body);
        if is_overflow(body, &message.to_ascii_lowercase()) {
            OllamaError::ContextOverflow { message }
        } else {
            OllamaError::MidStream(message)
        }
    }
}

/// Whether an error body says the prompt does not fit the context window: in words
/// (Ollama, llama-server's "exceeds the available context size", OpenAI's "maximum
/// context length"), or by code (`context_length_exceeded`, llama-server's
/// `exceed_context_size_error` type).
fn is_overflow(body: &str, lower: &str) -> bool {
    let worded = lower.contains("context")
        && [
            "exceed",
            "longer",
            "too long",
            "too large",
            "maximum context length",
        ]
        .iter()
        .any(|w| lower.contains(w));
    let coded = serde_json::from_str::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            let error = v.get("error")?;
            let field = |key| error.get(key).and_then(serde_json::Value::as_str);
            Some(
                field("code") == Some("context_length_exceeded")
                    || field("type") == Some("exceed_context_size_error"),
            )
        })
        .unwrap_or(false);
    worded || coded
}

impl OllamaError {
    /// Reads an error response of an OpenAI-compatible server. `key_sent` says whether
    /// `Authorization` carried a key, which decides the advice for a 401/403.
    pub(crate) fn from_openai_status(
        status: u16,
        body: &str,
        model: &str,
        host: &str,
        key_sent: bool,
    ) -> OllamaError {
        let model = model.escape_debug().to_string();
        let message = error_text(body);
        let lower = message.to_ascii_lowercase();
        let url = host.to_owned();
        match status {
            401 | 403 if key_sent => {
                return OllamaError::KeyRefused {
                    url,
                    status,
                    message,
                };
            }
            401 | 403 if super::kind::api_key_withheld() => {
                return OllamaError::KeyWithheld {
                    url,
                    status,
                    message,
                };
            }
            401 | 403 => {
                return OllamaError::KeyNeeded {
                    url,
                    status,
                    message,
                };
            }
            _ => {}
        }
        if lower.contains("enable-auto-tool-choice") {
            return OllamaError::ToolChoiceOff { message };
        }
        if matches!(status, 400 | 413 | 500) && is_overflow(body, &lower) {
            return OllamaError::ContextOverflow { message };
        }
        if status == 404
            && lower.contains("model")
            && (lower.contains("not found") || lower.contains("does not exist"))
        {
            return OllamaError::NotServed { model, host: url };
        }
        if status == 503 {
            return OllamaError::Busy { message };
        }
        OllamaError::ServerHttp { status, message }
    }
}

/// The most bytes of a body that is not Ollama's JSON error (a proxy's HTML page) quoted in
/// a message: enough to recognise it, not a page of markup on the terminal.
pub(crate) const RAW_BODY_QUOTED: usize = 300;

/// The human text of an error body. The server's own message (`{"error": "..."}`,
/// `{"error": {"message": ...}}`) is a reason, often with its remedy at the end ("... than
/// is available (15.2 GiB)"), so it is kept whole: its bound is the
/// [`ERROR_BODY_BYTES`](super::body::ERROR_BODY_BYTES) read of the body. A raw body (gin's
/// plain-text 404, a proxy's HTML) is quoted up to [`RAW_BODY_QUOTED`] bytes, saying how
/// much more there was.
pub(crate) fn error_text(body: &str) -> String {
    let parsed: Option<serde_json::Value> = serde_json::from_str(body).ok();
    // `{"error": "..."}` (Ollama), `{"error": {"message": ...}}` (OpenAI, llama-server),
    // `{"message": ...}` at the top (vLLM).
    let text = parsed.as_ref().and_then(|v| {
        let error = v.get("error");
        error
            .and_then(|e| e.as_str().or_else(|| e.get("message")?.as_str()))
            .or_else(|| v.get("message")?.as_str())
            .map(str::to_owned)
    });
    if let Some(text) = text.filter(|text| !text.trim().is_empty()) {
        return text;
    }
    let raw = body.trim();
    if raw.is_empty() {
        return "(empty body)".to_owned();
    }
    quoted_start(raw, RAW_BODY_QUOTED)
}

/// The start of `text` that is not a reason but a quote of what the server sent (a raw
/// body, a line that is not Ollama's protocol): at most `max` bytes on a character
/// boundary, and when there was more, a note of how much, so the cut is never taken for
/// the end.
pub(crate) fn quoted_start(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!(
        "{} [{} more bytes not shown]",
        &text[..end],
        text.len() - end
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_actionable_errors() {
        let forged =
            OllamaError::from_status(404, r#"{"error":"model 'x' not found"}"#, "x\nforged", "h");
        assert!(!forged.to_string().contains('\n'), "{forged}");
        let e = OllamaError::from_status(404, r#"{"error":"model 'x' not found"}"#, "x", "h");
        assert!(matches!(e, OllamaError::ModelNotFound { .. }), "{e:?}");
        assert!(e.to_string().contains("ollama pull x"));
        let e = OllamaError::from_status(
            400,
            r#"{"error":"registry.ollama.ai/library/gemma3:4b does not support tools"}"#,
            "gemma3:4b",
            "h",
        );
        assert!(matches!(e, OllamaError::NoToolSupport { .. }), "{e:?}");
        let e = OllamaError::from_status(503, r#"{"error":"server busy"}"#, "x", "h");
        assert!(matches!(e, OllamaError::Busy { .. }), "{e:?}");
        let e = OllamaError::from_status(
            400,
            r#"{"error":"request (9000 tokens) exceeds the available context size (4096 tokens)"}"#,
            "x",
            "h",
        );
        assert!(matches!(e, OllamaError::ContextOverflow { .. }), "{e:?}");
        let e = OllamaError::from_status(404, "404 page not found", "x", "h");
        assert!(
            matches!(&e, OllamaError::Http { status: 404, message } if message == "404 page not found"),
            "{e:?}"
        );
    }

    #[test]
    fn openai_statuses_map_to_actionable_errors() {
        let map =
            |status, body: &str, key| OllamaError::from_openai_status(status, body, "m", "h", key);
        let e = map(401, r#"{"error":{"message":"Invalid API Key"}}"#, false);
        assert!(matches!(e, OllamaError::KeyNeeded { .. }), "{e:?}");
        assert!(e.to_string().contains("METRON_API_KEY"), "{e}");
        let e = map(403, "forbidden", true);
        assert!(matches!(e, OllamaError::KeyRefused { .. }), "{e:?}");
        let e = map(
            400,
            r#"{"object":"error","message":"\"auto\" tool choice requires --enable-auto-tool-choice and --tool-call-parser to be set","type":"BadRequestError","code":400}"#,
            false,
        );
        assert!(matches!(e, OllamaError::ToolChoiceOff { .. }), "{e:?}");
        let e = map(
            400,
            r#"{"error":{"message":"This model's maximum context length is 4096 tokens.","code":"context_length_exceeded"}}"#,
            false,
        );
        assert!(matches!(e, OllamaError::ContextOverflow { .. }), "{e:?}");
        let e = map(
            400,
            r#"{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}}"#,
            false,
        );
        assert!(matches!(e, OllamaError::ContextOverflow { .. }), "{e:?}");
        let e = map(404, r#"{"message":"The model `m` does not exist."}"#, false);
        assert!(matches!(e, OllamaError::NotServed { .. }), "{e:?}");
        let e = map(500, r#"{"error":{"message":"oops"}}"#, false);
        assert!(
            e.to_string()
                .starts_with("the model server answered HTTP 500: oops"),
            "{e}"
        );
    }

    #[test]
    fn openai_shaped_errors_are_read_too() {
        assert_eq!(error_text(r#"{"error":{"message":"bad"}}"#), "bad");
        assert_eq!(error_text(r#"{"message":"vllm"}"#), "vllm");
        assert_eq!(error_text(""), "(empty body)");
    }

    #[test]
    fn the_servers_message_is_whole_and_a_raw_body_says_what_was_left_out() {
        let reason = format!(
            "llama runner process has terminated: {}model requires more system memory (23.4 GiB) than is available (15.2 GiB)",
            "error loading model: ".repeat(20)
        );
        assert!(reason.len() > RAW_BODY_QUOTED);
        let body = serde_json::json!({ "error": reason }).to_string();
        assert_eq!(error_text(&body), reason);
        let page = format!("<html>{}</html>", "<p>bad gateway</p>".repeat(40));
        let quoted = error_text(&page);
        assert!(quoted.starts_with("<html><p>bad gateway</p>"), "{quoted}");
        assert!(
            quoted.ends_with(&format!(
                "[{} more bytes not shown]",
                page.len() - RAW_BODY_QUOTED
            )),
            "{quoted}"
        );
        assert_eq!(quoted_start("é", 1), " [2 more bytes not shown]");
        assert_eq!(quoted_start("abc", 3), "abc");
    }
}
