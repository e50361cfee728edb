//! Where code goes: the route to the model endpoint, and what metron says or refuses
//! because of it.
//!
//! Every tool result (file slices, search results, command output) is sent to the model
//! endpoint. When that endpoint is this machine the code stays here; when it is another
//! host, the session says so once, before its first request ([`notice`]), or does not start
//! at all when the configuration says `remote_endpoint: "refuse"` ([`check`]).
//!
//! "This machine" means what [`config::is_local`] recognises: `localhost` and loopback
//! addresses. A host name that happens to resolve to this machine counts as another host
//! (the check never resolves names), and an SSH tunnel to a remote server on a local port
//! looks local (nothing here can see through it).
//!
//! The model can leave this machine too: Ollama 0.12 and later proxy a cloud model
//! (`qwen3-coder:480b-cloud`) to ollama.com, and mark it with `remote_host` in `/api/show`.
//! Such a model is a remote endpoint of its own ([`model_check`]): announced, refused under
//! `refuse`, and recorded in `session_start`. The server's mark decides, not the name: a
//! `-cloud` suffix on a model the server does not mark is a local model (Ollama only proxies
//! what it marks), and a marked model is remote whatever it is called. When the server
//! cannot say (`/api/show` fails or does not answer in time), the place is unknown, which
//! is not local: under `refuse` the session does not start; under `warn` it goes on
//! (the chat request will meet the same server, and a cloud model is always described).
//!
//! Everything here is pure: it decides and words, and the session prints.

use crate::config::{self, Config, Loaded, RemoteEndpoint, Source};

/// Where requests to the model go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Route {
    /// To this machine.
    Local,
    /// To another host.
    Remote {
        /// `host:port`, as the client connects to it, without any credentials in the URL.
        host: String,
    },
}

/// The route to a normalised endpoint (see [`config::normalize_endpoint`]).
pub(crate) fn route(endpoint: &str) -> Route {
    if config::is_local(endpoint) {
        return Route::Local;
    }
    let host = config::host_and_port(endpoint).unwrap_or_else(|| fallback_host(endpoint));
    Route::Remote { host }
}

/// The authority of something that is not a URL the client can parse, minus credentials
/// (such an endpoint never works, but it must still be named without leaking a password).
fn fallback_host(endpoint: &str) -> String {
    let rest = endpoint
        .split_once("://")
        .map_or(endpoint, |(_, rest)| rest);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    authority
        .rsplit_once('@')
        .map_or(authority, |(_, host)| host)
        .to_owned()
}

/// The route of `config`'s endpoint, or the reason the session must not start: the
/// endpoint is another host and `remote_endpoint` is `refuse`. The message is one line,
/// without the `metron: ` prefix.
#[cfg(test)]
pub(crate) fn check(config: &Config) -> Result<Route, String> {
    decide(config, None)
}

/// [`check`], with the message also saying where the endpoint and the refusal came from
/// (which file or environment variable).
pub(crate) fn check_loaded(loaded: &Loaded) -> Result<Route, String> {
    decide(
        &loaded.config,
        Some((
            loaded.source(crate::config::Key::endpoint),
            loaded.source(crate::config::Key::remote_endpoint),
        )),
    )
}

fn decide(config: &Config, sources: Option<(&Source, &Source)>) -> Result<Route, String> {
    let route = route(&config.endpoint);
    match (&route, config.remote_endpoint) {
        (Route::Remote { host }, RemoteEndpoint::Refuse) => Err(refusal(host, sources)),
        _ => Ok(route),
    }
}

fn refusal(host: &str, sources: Option<(&Source, &Source)>) -> String {
    let host = visible(host);
    let (endpoint_from, refuse_from) = match sources {
        Some((endpoint, refuse)) => (format!(" (from {endpoint})"), format!(" (from {refuse})")),
        None => (String::new(), String::new()),
    };
    format!(
        "refusing to send code to {host}{endpoint_from}, which is not this machine: `remote_endpoint` is \"refuse\"{refuse_from}; \
         use an Ollama server on this machine (unset OLLAMA_HOST or `endpoint`), \
         or set `remote_endpoint` to \"warn\" in your own config (~/.metron/config.json) if you trust {host}"
    )
}

/// Where the server says a model runs, from its `/api/show` answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ModelPlace {
    /// On the server itself (no `remote_host` in its description).
    Server,
    /// Proxied to another host (the `remote_host` the server reports: ollama.com for a
    /// cloud model), which receives everything the chat request carries.
    Remote {
        /// `host:port` of that host, as the server names it, without credentials.
        host: String,
    },
    /// The server did not say (it failed to answer, or not in time): why.
    Unknown {
        /// The failure, for the refusal's message.
        reason: String,
    },
}

impl ModelPlace {
    /// The place a `remote_host` value (or its absence) names.
    pub(crate) fn from_remote_host(remote_host: Option<&str>) -> ModelPlace {
        match remote_host.map(str::trim).filter(|h| !h.is_empty()) {
            None => ModelPlace::Server,
            Some(host) => ModelPlace::Remote {
                host: config::host_and_port(host).unwrap_or_else(|| fallback_host(host)),
            },
        }
    }
}

/// What the session does about where `model` runs (see [`ModelPlace`]): `Ok` with the
/// remote host to announce (or `None`), or the one-line refusal when `remote_endpoint` is
/// `refuse` and the model runs elsewhere or nobody can say where.
/// `model_from` is the layer that chose it (`/model` for a switch in the session).
pub(crate) fn model_check(
    loaded: &Loaded,
    model: &str,
    model_from: &Source,
    place: &ModelPlace,
) -> Result<Option<String>, String> {
    let refuse = loaded.config.remote_endpoint == RemoteEndpoint::Refuse;
    let refuse_from = loaded.source(crate::config::Key::remote_endpoint);
    let model = visible(model);
    match place {
        ModelPlace::Server => Ok(None),
        ModelPlace::Remote { host } if refuse => Err(format!(
            "refusing to send code to {host}: the model {model} (from {model_from}) is a cloud model that the Ollama server passes on to {host}, which is not this machine, and `remote_endpoint` is \"refuse\" (from {refuse_from}); choose a model installed on this machine (`ollama list`; --model NAME or OLLAMA_MODEL override a project's choice), or set `remote_endpoint` to \"warn\" in your own config (~/.metron/config.json) if you trust {host}",
            host = visible(host)
        )),
        ModelPlace::Remote { host } => Ok(Some(host.clone())),
        ModelPlace::Unknown { reason } if refuse => Err(format!(
            "refusing to start: the Ollama server did not say where the model {model} (from {model_from}) runs ({reason}), and `remote_endpoint` is \"refuse\" (from {refuse_from}), so a cloud model cannot be ruled out; check that Ollama is running and that `ollama show {model}` works, then start metron again",
            reason = visible(reason)
        )),
        ModelPlace::Unknown { .. } => Ok(None),
    }
}

/// The one line printed on stderr before the first request when the model runs at `host`,
/// another machine, though the endpoint may be this one. No colour, no newline at the end.
pub(crate) fn model_notice(model: &str, host: &str) -> String {
    format!(
        "metron: note: the model {} is a cloud model: the Ollama server passes every request on to {}, so code the tools read (file slices, search results, command output) will be sent there, which is not this machine",
        visible(model),
        visible(host)
    )
}

/// The warning when the key in [`ollama::API_KEY_VAR`](crate::ollama::API_KEY_VAR) must
/// not be sent: the endpoint was chosen by the repository's `.metron.json`, not by the
/// person (their own file, `OLLAMA_HOST`, `--set`), and `key_set` says there is a key to
/// withhold. A project may point at a local server, but whatever listens on that port
/// (another user's process, a tunnel) must not receive a credential meant for the
/// person's own server. `None` when the key may go.
pub(crate) fn key_withheld(loaded: &Loaded, key_set: bool) -> Option<String> {
    let Source::File(path) = loaded.source(config::Key::endpoint) else {
        return None;
    };
    let by_project = loaded.trust_of(path) == Some(config::ConfigTrust::Project);
    // Only an OpenAI-compatible endpoint is ever sent a key.
    let takes_key = crate::ollama::ServerKind::of_endpoint(&loaded.config.endpoint)
        == crate::ollama::ServerKind::OpenAi;
    (key_set && by_project && takes_key).then(|| {
        format!(
            "not sending {} to {}: that endpoint comes from the project's {}, and a key goes only to a server you chose; if the server is yours, set OLLAMA_HOST or `endpoint` in your own config (~/.metron/config.json) to it",
            crate::ollama::API_KEY_VAR,
            visible(&config::shown_endpoint(&loaded.config.endpoint)),
            visible(&path.display().to_string())
        )
    })
}

/// The one line printed on stderr before the first request of a session whose endpoint is
/// `host`, another machine. No colour, no newline at the end.
pub(crate) fn notice(host: &str) -> String {
    format!(
        "metron: note: code the tools read (file slices, search results, command output) will be sent to {}, which is not this machine",
        visible(host)
    )
}

/// `text` on one line and harmless to a terminal, so a configured host or model name (or
/// one the server reports) cannot drive the terminal or break the one line into several.
fn visible(text: &str) -> String {
    crate::display::one_line_safe(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn config(endpoint: &str, policy: RemoteEndpoint) -> Config {
        Config {
            endpoint: config::normalize_endpoint(endpoint).expect("a usable endpoint"),
            remote_endpoint: policy,
            ..Config::default()
        }
    }

    #[test]
    fn routes() {
        assert_eq!(route(&Config::default().endpoint), Route::Local);
        for local in [
            "localhost:9",
            "127.0.0.1",
            "0.0.0.0",
            "[::1]:1",
            "127.0.0.2",
        ] {
            let endpoint = config::normalize_endpoint(local).expect("usable");
            assert_eq!(route(&endpoint), Route::Local, "{local}");
        }
        let remote = |raw: &str| route(&config::normalize_endpoint(raw).expect("usable"));
        assert_eq!(
            remote("gpu-box"),
            Route::Remote {
                host: "gpu-box:11434".to_owned()
            }
        );
        assert_eq!(
            remote("http://10.0.0.5:8080/ollama"),
            Route::Remote {
                host: "10.0.0.5:8080".to_owned()
            }
        );
    }

    #[test]
    fn credentials_are_never_part_of_the_host() {
        assert_eq!(
            route("http://me:hunter2@gpu-box:11434/api/chat"),
            Route::Remote {
                host: "gpu-box:11434".to_owned()
            }
        );
        assert_eq!(fallback_host("http://me:hunter2@gpu box:1/x"), "gpu box:1");
        assert_eq!(fallback_host("weird"), "weird");
    }

    #[test]
    fn only_remote_under_refuse_is_refused() {
        assert_eq!(
            check(&config("localhost", RemoteEndpoint::Refuse)),
            Ok(Route::Local)
        );
        assert_eq!(
            check(&config("gpu-box:9", RemoteEndpoint::Warn)),
            Ok(Route::Remote {
                host: "gpu-box:9".to_owned()
            })
        );
        let refused = check(&config("gpu-box:9", RemoteEndpoint::Refuse)).unwrap_err();
        assert!(refused.contains("gpu-box:9"), "{refused}");
        assert!(
            refused.contains("`remote_endpoint` is \"refuse\""),
            "{refused}"
        );
        assert!(refused.contains("unset OLLAMA_HOST"), "{refused}");
        assert!(refused.contains("your own config"), "{refused}");
        assert!(!refused.contains('\n'), "{refused}");
        assert!(!refused.starts_with("metron:"), "{refused}");
    }

    #[test]
    fn check_loaded_names_the_sources() {
        let mut loaded = Loaded {
            config: config("gpu-box:9", RemoteEndpoint::Warn),
            files: Vec::new(),
            sources: [("endpoint", Source::Env("OLLAMA_HOST"))]
                .into_iter()
                .collect(),
            warnings: Vec::new(),
            disabled_by: Default::default(),
            replaced_model: None,
        };
        assert_eq!(
            check_loaded(&loaded),
            Ok(Route::Remote {
                host: "gpu-box:9".to_owned()
            })
        );
        loaded.config.remote_endpoint = RemoteEndpoint::Refuse;
        loaded.sources.insert(
            "remote_endpoint",
            Source::File(PathBuf::from("home/.metron/config.json")),
        );
        let refused = check_loaded(&loaded).unwrap_err();
        assert!(
            refused.contains("gpu-box:9 (from $OLLAMA_HOST)"),
            "{refused}"
        );
        assert!(
            refused.contains("\"refuse\" (from home/.metron/config.json)"),
            "{refused}"
        );
    }

    const DEFAULT_FROM: &Source = &Source::Default;

    fn loaded(policy: RemoteEndpoint) -> Loaded {
        let mut loaded = Loaded::defaults();
        loaded.config.remote_endpoint = policy;
        loaded
    }

    #[test]
    fn the_server_mark_decides_where_a_model_runs() {
        assert_eq!(ModelPlace::from_remote_host(None), ModelPlace::Server);
        assert_eq!(ModelPlace::from_remote_host(Some(" ")), ModelPlace::Server);
        assert_eq!(
            ModelPlace::from_remote_host(Some("https://ollama.com:443")),
            ModelPlace::Remote {
                host: "ollama.com:443".to_owned()
            }
        );
        assert_eq!(
            ModelPlace::from_remote_host(Some("https://me:pw@ollama.com")),
            ModelPlace::Remote {
                host: "ollama.com:443".to_owned()
            }
        );
        assert_eq!(
            ModelPlace::from_remote_host(Some("not a url")),
            ModelPlace::Remote {
                host: "not a url".to_owned()
            }
        );
    }

    #[test]
    fn a_cloud_model_is_announced_or_refused_like_a_remote_endpoint() {
        let cloud = ModelPlace::Remote {
            host: "ollama.com:443".to_owned(),
        };
        let warn = loaded(RemoteEndpoint::Warn);
        assert_eq!(
            model_check(&warn, "m-cloud", DEFAULT_FROM, &cloud),
            Ok(Some("ollama.com:443".to_owned()))
        );
        assert_eq!(
            model_check(&warn, "m", DEFAULT_FROM, &ModelPlace::Server),
            Ok(None)
        );
        let unknown = ModelPlace::Unknown {
            reason: "timed out".to_owned(),
        };
        assert_eq!(model_check(&warn, "m", DEFAULT_FROM, &unknown), Ok(None));

        let refuse = loaded(RemoteEndpoint::Refuse);
        assert_eq!(
            model_check(&refuse, "m", DEFAULT_FROM, &ModelPlace::Server),
            Ok(None)
        );
        let refused = model_check(&refuse, "m-cloud", DEFAULT_FROM, &cloud).unwrap_err();
        for part in ["ollama.com:443", "m-cloud", "\"refuse\"", "--model NAME"] {
            assert!(refused.contains(part), "{part}: {refused}");
        }
        let refused = model_check(&refuse, "m\nforged", DEFAULT_FROM, &unknown).unwrap_err();
        assert!(refused.contains("timed out"), "{refused}");
        assert!(refused.contains("ollama show"), "{refused}");
        assert!(!refused.contains('\n'), "{refused}");

        let notice = model_notice("m\nx", "ollama.com:443");
        assert!(
            notice.starts_with("metron: note: the model m\\u{a}x"),
            "{notice}"
        );
        assert!(notice.contains("ollama.com:443"), "{notice}");
    }

    #[test]
    fn the_notice_is_one_plain_line() {
        let line = notice("gpu-box:11434");
        assert_eq!(
            line,
            "metron: note: code the tools read (file slices, search results, command output) will be sent to gpu-box:11434, which is not this machine"
        );
        let hostile = notice("evil\n\x1b[2Jhost:1");
        assert!(
            !hostile.contains('\n') && !hostile.contains('\x1b'),
            "{hostile:?}"
        );
        assert!(
            hostile.contains("evil\\u{a}\\u{1b}[2Jhost:1"),
            "{hostile:?}"
        );
    }
}
