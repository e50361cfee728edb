//! What can go wrong talking to Ollama, each phrased so a person knows what to do next.

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
        "Ollama at {url} closed the connection before answering ({reason}); it may have crashed or run out of memory loading the model, so check its log and try again"
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
    /// The server's queue is full (HTTP 503).
    #[error("Ollama is busy ({message}); try again in a moment")]
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
        "the model failed mid-reply: {0}; try again, and check the Ollama server's log if it happens again"
    )]
    MidStream(String),
    /// The stream ended (or the connection dropped) without the final `done` line.
    #[error(
        "the reply ended before it was complete (no final `done` line); the Ollama server may have crashed or restarted, so check its log and try again"
    )]
    Truncated,
    /// Nothing arrived for `timeout_seconds`.
    #[error(
        "Ollama was silent for {seconds} s {phase}, so metron gave up; if your hardware needs longer to load the model or produce the first token, raise `timeout_seconds`"
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
        "the server at {url} sent more than {} for {path}, far more than Ollama sends, so metron stopped reading; check that `endpoint` (or OLLAMA_HOST) points at an Ollama server, and check that server's log",
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
    /// A line that is not Ollama's protocol.
    #[error(
        "Ollama sent something that is not its chat protocol: {0}; check that `endpoint` (or OLLAMA_HOST) points at an Ollama server, and run `metron --doctor`"
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
        let overflow = lower.contains("context")
            && ["exceed", "longer", "too long", "too large"]
                .iter()
                .any(|w| lower.contains(w));
        if matches!(status, 400 | 500) && overflow {
            return OllamaError::ContextOverflow { message };
        }
        OllamaError::Http { status, message }
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
    let text = parsed.as_ref().and_then(|v| {
        let error = v.get("error")?;
        error
            .as_str()
            .or_else(|| error.get("message")?.as_str())
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
    fn openai_shaped_errors_are_read_too() {
        assert_eq!(error_text(r#"{"error":{"message":"bad"}}"#), "bad");
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
