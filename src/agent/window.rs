//! The context window a session asks for, fixed once per model.
//!
//! Ollama reloads a model whenever `num_ctx` changes, and clamps a request's `num_ctx` to
//! the model's trained length anyway. Asking for more than the model was trained on buys
//! nothing and misleads every figure computed from it (the footer's share, the truncation
//! suspicion). So the session asks for the smaller of the configured value and the trained
//! length `/api/show` reports, decides it once at start (and again only when the model
//! changes), and sends the same value on every request.
//!
//! An OpenAI-compatible server is different: it fixed its window when it started
//! (llama-server's `-c`, LM Studio's context length) and takes no `num_ctx`, so when it
//! says what that window is, that is the session's window, whatever the configuration says.
//!
//! Whether the server can refuse an over-long prompt instead of cutting it silently
//! (`truncate: false`, Ollama 0.12.4 and later) is decided here too, from `/api/version`.

use crate::ollama::ServerKind;

/// The window of one session's model: what the configuration asked for and what the
/// server says the model was trained on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Window {
    /// The kind of server: only Ollama takes `num_ctx`, so only there does raising it
    /// make the window larger.
    pub(crate) kind: ServerKind,
    /// `num_ctx` from the configuration.
    pub(crate) configured: u64,
    /// The model's trained context length (`model_info.<arch>.context_length`), when the
    /// server reported a usable one.
    pub(crate) trained: Option<u64>,
    /// An OpenAI-compatible server's own window, when it reported one.
    pub(crate) served: Option<u64>,
}

/// What decided a session's window, which decides what can make it larger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DecidedBy {
    /// `num_ctx`, sent to Ollama: raising it helps.
    Configured,
    /// `num_ctx`, taken as the window of an OpenAI-compatible server that did not report
    /// its own: raising it moves metron's trimming, not the server's window, so only a
    /// server restarted with a larger window (and `num_ctx` set to match) helps.
    Assumed,
    /// The model's trained length: only another model helps.
    Trained,
    /// The server's own window: only restarting the server with a larger one helps.
    Server,
}

/// The largest window a server's own report is believed for: 2^32 tokens, thousands of
/// times any model's, and small enough that sums and products of token counts stay
/// far from overflow.
pub(crate) const MAX_SERVED_WINDOW: u64 = 1 << 32;

impl Window {
    /// The window for a model the server describes as trained on `trained` tokens (a
    /// missing or zero length means the server did not say).
    pub(crate) fn new(configured: u64, trained: Option<u64>) -> Window {
        Window {
            kind: ServerKind::Ollama,
            configured,
            trained: trained.filter(|&t| t > 0),
            served: None,
        }
    }

    /// This window on a server of `kind`.
    pub(crate) fn on(self, kind: ServerKind) -> Window {
        Window { kind, ..self }
    }

    /// This window for another model, trained on `trained` tokens: the configuration,
    /// the server and its own window stay.
    pub(crate) fn for_model(self, trained: Option<u64>) -> Window {
        Window {
            trained: trained.filter(|&t| t > 0),
            ..self
        }
    }

    /// This window on a server that reported its own window of `served` tokens (a zero
    /// or missing one means it did not say, and the configuration stands; so does one
    /// past [`MAX_SERVED_WINDOW`], which is a broken server, not a model).
    pub(crate) fn with_served(self, served: Option<u64>) -> Window {
        Window {
            served: served.filter(|&s| s > 0 && s <= MAX_SERVED_WINDOW),
            ..self
        }
    }

    /// The window every request of the session is measured against, and (on Ollama)
    /// carries as `num_ctx`.
    pub(crate) fn effective(self) -> u64 {
        if let Some(served) = self.served {
            return served;
        }
        match self.trained {
            Some(trained) if trained < self.configured => trained,
            _ => self.configured,
        }
    }

    /// What decided the window.
    pub(crate) fn decided_by(self) -> DecidedBy {
        if self.served.is_some() {
            DecidedBy::Server
        } else if self.effective() < self.configured {
            DecidedBy::Trained
        } else if self.kind == ServerKind::OpenAi {
            DecidedBy::Assumed
        } else {
            DecidedBy::Configured
        }
    }

    /// Whether the model's trained length, not the configuration, decided the window.
    pub(crate) fn clamped(self) -> bool {
        self.decided_by() == DecidedBy::Trained
    }

    /// What would make the window larger, as the end of "use /reset, or ...".
    pub(crate) fn remedy(self) -> &'static str {
        match self.decided_by() {
            DecidedBy::Configured => "raise `num_ctx`",
            DecidedBy::Assumed => {
                "restart the model server with a larger context window and set `num_ctx` to match (the server does not report its window, so metron takes `num_ctx` as it)"
            }
            DecidedBy::Trained => "choose a model trained on a longer context",
            DecidedBy::Server => {
                "restart the model server with a larger context window (llama-server's `-c`, LM Studio's context length)"
            }
        }
    }

    /// One line for the banner, `/config` and `/context`:
    /// `context 4096 tokens (the model's trained length; num_ctx 16384 configured)`.
    pub(crate) fn line(self) -> String {
        let effective = self.effective();
        if self.served.is_some() {
            return format!(
                "context {effective} tokens (the model server's own window; num_ctx is not sent to it)"
            );
        }
        if self.clamped() {
            return format!(
                "context {effective} tokens (the model's trained length; num_ctx {} configured)",
                self.configured
            );
        }
        if self.decided_by() == DecidedBy::Assumed {
            return format!(
                "context {effective} tokens (num_ctx, assumed: the model server did not report its own window, and num_ctx is not sent to it)"
            );
        }
        match self.trained {
            Some(trained) => {
                format!("context {effective} tokens (num_ctx; the model was trained on {trained})")
            }
            None => format!(
                "context {effective} tokens (num_ctx; the server did not report the model's trained length)"
            ),
        }
    }
}

/// The first Ollama version that honours `truncate: false` (an over-long prompt is then
/// refused with a 400 instead of cut silently).
const TRUNCATE_SINCE: (u64, u64, u64) = (0, 12, 4);

/// Whether a server reporting `version` (`/api/version`) honours `truncate: false`. An
/// unknown or unreadable version does not: sending the field to an older server is
/// harmless, but believing it was honoured would switch off the detection of silent cuts
/// (`truncation`), which older servers still need.
pub(crate) fn refuses_overflow(version: Option<&str>) -> bool {
    version
        .and_then(parse_version)
        .is_some_and(|v| v >= TRUNCATE_SINCE)
}

/// `major.minor.patch` out of a version string as servers report it: an optional `v`,
/// and anything after the patch number (`-rc2`, `+build`) ignored. A pre-release of the
/// version that introduced a feature is taken as that version: the field exists from its
/// first release candidate on. `None` for anything else.
fn parse_version(text: &str) -> Option<(u64, u64, u64)> {
    let text = text.trim();
    let text = text.strip_prefix(['v', 'V']).unwrap_or(text);
    let mut parts = text.splitn(3, '.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    let rest = parts.next()?;
    let digits = rest
        .find(|c: char| !c.is_ascii_digit())
        .map_or(rest, |end| &rest[..end]);
    let patch = digits.parse().ok()?;
    Some((major, minor, patch))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_servers_own_window_decides_whatever_num_ctx_and_training_say() {
        let window = Window::new(16384, Some(8192)).with_served(Some(2048));
        assert_eq!(window.effective(), 2048);
        assert_eq!(window.decided_by(), DecidedBy::Server);
        assert!(!window.clamped());
        assert!(window.remedy().starts_with("restart the model server"));
        assert!(window.line().contains("the model server's own window"));
        // Larger than num_ctx too: num_ctx is not sent to such a server.
        assert_eq!(
            Window::new(4096, None).with_served(Some(32768)).effective(),
            32768
        );
        // A zero, missing or absurd window leaves the configuration in charge.
        assert_eq!(
            Window::new(4096, None)
                .with_served(Some(MAX_SERVED_WINDOW))
                .effective(),
            MAX_SERVED_WINDOW
        );
        for served in [None, Some(0), Some(MAX_SERVED_WINDOW + 1), Some(u64::MAX)] {
            let window = Window::new(4096, None).with_served(served);
            assert_eq!(window.effective(), 4096);
            assert_eq!(window.remedy(), "raise `num_ctx`");
        }
        assert_eq!(
            Window::new(16384, Some(4096)).remedy(),
            "choose a model trained on a longer context"
        );
        // An OpenAI-compatible server that did not say: num_ctx is only an assumption.
        let assumed = Window::new(4096, None).on(ServerKind::OpenAi);
        assert_eq!(assumed.decided_by(), DecidedBy::Assumed);
        assert!(
            !assumed.remedy().starts_with("raise"),
            "{}",
            assumed.remedy()
        );
        assert!(assumed.line().contains("assumed"), "{}", assumed.line());
        // A new model keeps the server, its window and the configuration.
        let served = Window::new(4096, Some(8192))
            .on(ServerKind::OpenAi)
            .with_served(Some(2048))
            .for_model(Some(1024));
        assert_eq!(
            (served.kind, served.served, served.trained),
            (ServerKind::OpenAi, Some(2048), Some(1024))
        );
    }

    #[test]
    fn the_window_is_the_smaller_of_configured_and_trained() {
        let clamped = Window::new(16384, Some(4096));
        assert_eq!(clamped.effective(), 4096);
        assert!(clamped.clamped());
        assert_eq!(
            clamped.line(),
            "context 4096 tokens (the model's trained length; num_ctx 16384 configured)"
        );
        let fits = Window::new(8192, Some(32768));
        assert_eq!(fits.effective(), 8192);
        assert!(!fits.clamped());
        assert!(fits.line().starts_with("context 8192 tokens (num_ctx;"));
        let equal = Window::new(4096, Some(4096));
        assert_eq!(equal.effective(), 4096);
        assert!(!equal.clamped());
        for unknown in [None, Some(0)] {
            let w = Window::new(16384, unknown);
            assert_eq!(w.effective(), 16384);
            assert!(w.line().contains("did not report"), "{}", w.line());
        }
    }

    #[test]
    fn versions_are_read_robustly() {
        assert_eq!(parse_version("0.12.4"), Some((0, 12, 4)));
        assert_eq!(parse_version("v0.12.10"), Some((0, 12, 10)));
        assert_eq!(parse_version(" 0.13.0-rc2 "), Some((0, 13, 0)));
        assert_eq!(parse_version("1.0.0+abc"), Some((1, 0, 0)));
        for bad in [
            "", "unknown", "0.12", "0.x.1", "0.12.", "-1.2.3", "0.12.rc1",
        ] {
            assert_eq!(parse_version(bad), None, "{bad}");
        }
        // Numbers too large for u64 are unreadable, not a panic.
        assert_eq!(parse_version("99999999999999999999999.1.1"), None);
    }

    #[test]
    fn truncate_false_is_sent_from_0_12_4_on_and_never_on_doubt() {
        for yes in ["0.12.4", "0.12.10", "0.13.0", "1.0.0", "v0.12.4-rc1"] {
            assert!(refuses_overflow(Some(yes)), "{yes}");
        }
        for no in ["0.12.3", "0.11.99", "0.6.7", "unknown", "", "0.12"] {
            assert!(!refuses_overflow(Some(no)), "{no}");
        }
        assert!(!refuses_overflow(None));
    }
}
