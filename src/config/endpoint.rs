//! Turning what users type for `OLLAMA_HOST` or `endpoint` into one chat URL.
//!
//! People paste the server's bind address (`0.0.0.0`), a bare host, `host:port`, or a full
//! URL copied from another tool. All of them should reach the same server the official
//! Ollama clients would reach, so this follows their port rules: no scheme means
//! `http` on 11434; an explicit scheme without a port means that scheme's own port.

const DEFAULT_PORT: u16 = 11434;
/// The path a normalised Ollama endpoint ends in.
pub(crate) const CHAT_PATH: &str = "/api/chat";
/// The path a normalised Chat Completions endpoint ends in (see `ollama::ServerKind`,
/// which reads the kind from it).
pub(crate) const OPENAI_CHAT_PATH: &str = "/v1/chat/completions";

/// Normalises an endpoint into `scheme://host:port/path`, adding `/api/chat` when the
/// path is missing (Ollama), or ending it in `/v1/chat/completions` when it ends in `/v1`
/// (an OpenAI-compatible server). Returns a sentence saying what is wrong when it cannot be used.
pub fn normalize_endpoint(raw: &str) -> Result<String, String> {
    let trimmed = raw.trim().trim_matches(|c| c == '"' || c == '\'').trim();
    if trimmed.is_empty() {
        return Err("is empty; expected a host such as localhost:11434".to_owned());
    }
    let (scheme, rest, explicit_scheme) = match trimmed.split_once("://") {
        Some((scheme, rest)) => (scheme.to_ascii_lowercase(), rest, true),
        None => ("http".to_owned(), trimmed, false),
    };
    // Ollama's endpoints take no query and no fragment. One there is most likely a token
    // (`?token=...`): it would be shown wherever the endpoint is (`--doctor`,
    // `session_start`), where only userinfo is masked, and it would end up before
    // `/api/chat`. So it is refused, without repeating what follows the `?` or `#`.
    if let Some(at) = rest.find(['?', '#']) {
        let (kind, mark) = if rest[at..].starts_with('?') {
            ("a query", '?')
        } else {
            ("a fragment", '#')
        };
        return Err(format!(
            "has {kind} (`{mark}***`), which an Ollama endpoint never takes; remove everything from the `{mark}` on, and if the server needs a password or token, write it as user:password@host, which metron masks wherever it shows the endpoint"
        ));
    }
    let default_port = match (scheme.as_str(), explicit_scheme) {
        (_, false) => DEFAULT_PORT,
        ("http", true) => 80,
        ("https", true) => 443,
        _ => {
            return Err(format!(
                "uses scheme `{scheme}`; only http and https are supported"
            ));
        }
    };
    let (authority, path) = match rest.find('/') {
        Some(i) => rest.split_at(i),
        None => (rest, ""),
    };
    // `user:password@host:port`: the credentials are split off first, or their `:` would
    // make the whole authority look like a bare IPv6 address. They stay in the URL (the
    // client sends them as HTTP Basic auth to this host only); [`shown`] hides them.
    let (userinfo, authority) = match authority.rsplit_once('@') {
        Some((userinfo, host)) => (format!("{userinfo}@"), host),
        None => (String::new(), authority),
    };
    let (host, port) = split_host_port(authority)?;
    let host = match host.as_str() {
        "" | "0.0.0.0" => "127.0.0.1".to_owned(),
        "[::]" => "[::1]".to_owned(),
        _ => host,
    };
    let port = port.unwrap_or(default_port);
    let path = path.trim_end_matches('/');
    // `/v1` (what llama-server, LM Studio and vLLM print) or the full Chat Completions
    // path: that protocol (see `ollama::ServerKind`), at its one canonical path.
    let openai = path
        .strip_suffix(OPENAI_CHAT_PATH)
        .or_else(|| path.strip_suffix("/v1"));
    let path = if let Some(base) = openai {
        format!("{base}{OPENAI_CHAT_PATH}")
    } else if path.ends_with(CHAT_PATH) {
        path.to_owned()
    } else {
        let base = path.strip_suffix("/api").unwrap_or(path);
        format!("{base}{CHAT_PATH}")
    };
    Ok(format!("{scheme}://{userinfo}{host}:{port}{path}"))
}

/// `endpoint` as it may be printed (notices, errors, `--doctor`, `/config`, `session_start`):
/// a password written into it (`http://me:secret@host`) becomes `***`, so it never reaches
/// a terminal, a log or a CI transcript. The user name stays: it says which account is used.
pub(crate) fn shown(endpoint: &str) -> String {
    let (scheme, rest) = match endpoint.split_once("://") {
        Some((scheme, rest)) => (format!("{scheme}://"), rest),
        None => (String::new(), endpoint),
    };
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or(userinfo, |(user, _)| user);
            let hidden = if userinfo.contains(':') { ":***" } else { "" };
            format!("{scheme}{user}{hidden}@{host}{tail}")
        }
        None => endpoint.to_owned(),
    }
}

/// The credentials written into an endpoint's URL, decoded, and the URL without them: the
/// client sends them itself as HTTP Basic auth, so no URL it keeps (and no error naming
/// one) holds the password. `None` for the credentials when there are none.
pub(crate) fn split_credentials(endpoint: &str) -> (String, Option<Credentials>) {
    let Ok(mut url) = reqwest::Url::parse(endpoint) else {
        return (endpoint.to_owned(), None);
    };
    if url.username().is_empty() && url.password().is_none() {
        return (endpoint.to_owned(), None);
    }
    let decode = |text: &str| percent_decode(text);
    let credentials = Credentials {
        user: decode(url.username()),
        password: url.password().map(decode),
    };
    // Cannot fail on a URL with a host, which every normalised http(s) endpoint has.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    (url.to_string(), Some(credentials))
}

/// A user name and password for HTTP Basic auth, from the endpoint's URL.
#[derive(Clone, PartialEq, Eq)]
pub(crate) struct Credentials {
    /// The user name (may be empty: `http://:token@host`).
    pub(crate) user: String,
    /// The password, when the URL has one.
    pub(crate) password: Option<String>,
}

impl std::fmt::Debug for Credentials {
    /// Never the password: a `{:?}` in a log must not leak it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .finish()
    }
}

/// `%XX` escapes decoded (as URLs write reserved characters of a user name or password);
/// anything that is not a valid escape, or not UTF-8 afterwards, is kept as written.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| text.to_owned())
}

/// Splits `host[:port]`, accepting bracketed and bare IPv6 addresses.
fn split_host_port(authority: &str) -> Result<(String, Option<u16>), String> {
    let parse_port = |p: &str| {
        p.parse::<u16>()
            .map_err(|_| format!("has port `{p}`, which is not a number from 0 to 65535"))
    };
    if let Some(inner) = authority.strip_prefix('[') {
        let (addr, after) = inner
            .split_once(']')
            .ok_or_else(|| format!("has an unclosed `[` in `{authority}`"))?;
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => return Err(format!("has unexpected text after `]` in `{authority}`")),
        };
        return Ok((format!("[{addr}]"), port));
    }
    if authority.matches(':').count() > 1 {
        // A bare IPv6 address such as `::1`: it cannot carry a port without brackets.
        return Ok((format!("[{authority}]"), None));
    }
    match authority.rsplit_once(':') {
        Some((host, port)) => Ok((host.to_owned(), Some(parse_port(port)?))),
        None => Ok((authority.to_owned(), None)),
    }
}

/// True when the endpoint's host is this machine, so code sent to it stays here.
///
/// The host is read with the same URL parser the HTTP client uses, so it is the host the
/// client would connect to (credentials, a fragment or a query cannot disguise it). Only
/// `localhost` and loopback addresses count; anything else, including a name that happens
/// to resolve to this machine, is treated as another host.
pub fn is_local(endpoint: &str) -> bool {
    host_of(endpoint).is_some_and(|host| {
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        bare.eq_ignore_ascii_case("localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    })
}

/// The host the client would connect to (IPv6 in brackets), without credentials or port.
fn host_of(endpoint: &str) -> Option<String> {
    let url = reqwest::Url::parse(endpoint).ok()?;
    url.host_str().map(str::to_owned)
}

/// `host:port` of an endpoint, as the client would connect to it, without any credentials
/// written into the URL; `None` when it is not a URL with a host.
pub(crate) fn host_and_port(endpoint: &str) -> Option<String> {
    let url = reqwest::Url::parse(endpoint).ok()?;
    let host = url.host_str()?;
    Some(match url.port_or_known_default() {
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms_users_type() {
        let cases = [
            ("localhost", "http://localhost:11434/api/chat"),
            ("example.com:8080", "http://example.com:8080/api/chat"),
            ("0.0.0.0", "http://127.0.0.1:11434/api/chat"),
            ("0.0.0.0:11434", "http://127.0.0.1:11434/api/chat"),
            (":8080", "http://127.0.0.1:8080/api/chat"),
            ("::1", "http://[::1]:11434/api/chat"),
            ("[::1]:1337", "http://[::1]:1337/api/chat"),
            ("http://1.2.3.4", "http://1.2.3.4:80/api/chat"),
            (
                "https://example.com/ollama",
                "https://example.com:443/ollama/api/chat",
            ),
            ("http://host:1/api/chat", "http://host:1/api/chat"),
            ("http://host:1/api/", "http://host:1/api/chat"),
            ("http://host:1/v1", "http://host:1/v1/chat/completions"),
            (
                "localhost:8080/v1/",
                "http://localhost:8080/v1/chat/completions",
            ),
            (
                "http://host:1/v1/chat/completions",
                "http://host:1/v1/chat/completions",
            ),
            (
                "https://h/proxy/v1/chat/completions/",
                "https://h:443/proxy/v1/chat/completions",
            ),
            ("http://host:1/api", "http://host:1/api/chat"),
            (" 'localhost:9' ", "http://localhost:9/api/chat"),
        ];
        for (raw, want) in cases {
            assert_eq!(
                normalize_endpoint(raw).as_deref(),
                Ok(want),
                "input {raw:?}"
            );
        }
    }

    #[test]
    fn rejects_what_cannot_be_used() {
        assert!(normalize_endpoint("").is_err());
        assert!(normalize_endpoint("ftp://x").is_err());
        assert!(normalize_endpoint("host:99999").is_err());
        assert!(normalize_endpoint("[::1").is_err());
    }

    #[test]
    fn a_query_or_fragment_is_refused_without_echoing_it() {
        for raw in [
            "http://127.0.0.1:8080/?token=S3CRETPW",
            "http://127.0.0.1:8080?token=S3CRETPW",
            "127.0.0.1:8080/api/chat?token=S3CRETPW",
            "https://host/#S3CRETPW",
            "host?S3CRETPW",
        ] {
            let error = normalize_endpoint(raw).expect_err(raw);
            assert!(!error.contains("S3CRETPW"), "{raw}: {error}");
            assert!(error.contains("user:password@host"), "{raw}: {error}");
        }
    }

    #[test]
    fn locality() {
        assert!(is_local("http://localhost:11434/api/chat"));
        assert!(is_local("http://127.0.0.2:1/api/chat"));
        assert!(is_local("http://[::1]:1/api/chat"));
        assert!(!is_local("http://10.0.0.5:11434/api/chat"));
        assert!(!is_local("https://example.com:443/api/chat"));
        assert!(is_local("http://LOCALHOST:1/api/chat"));
        assert!(is_local("http://user:pw@localhost:1/api/chat"));
        assert!(!is_local("http://localhost@example.com:1/api/chat"));
        assert!(!is_local("http://localhost.example.com:1/api/chat"));
        assert!(!is_local("not a url"));
    }

    #[test]
    fn https_does_not_make_a_remote_endpoint_local() {
        // TLS protects the network path, not where the code ends up: a remote server over
        // https is still another host, disclosed and subject to `remote_endpoint`.
        assert!(!is_local("https://gpu-box.example:443/api/chat"));
        assert!(!is_local("https://10.0.0.5:11434/api/chat"));
        assert!(is_local("https://localhost:11434/api/chat"));
        assert!(is_local("https://127.0.0.1:8443/api/chat"));
        assert_eq!(
            normalize_endpoint("HTTPS://gpu-box.example").as_deref(),
            Ok("https://gpu-box.example:443/api/chat")
        );
    }

    #[test]
    fn credentials_are_userinfo_not_an_ipv6_address() {
        let endpoint = normalize_endpoint("http://me:hunter2@gpu-box:8080").expect("usable");
        assert_eq!(endpoint, "http://me:hunter2@gpu-box:8080/api/chat");
        assert_eq!(host_and_port(&endpoint).as_deref(), Some("gpu-box:8080"));
        assert_eq!(
            normalize_endpoint("me:pw@localhost").as_deref(),
            Ok("http://me:pw@localhost:11434/api/chat")
        );
        assert_eq!(
            normalize_endpoint("http://tok@[::1]:9").as_deref(),
            Ok("http://tok@[::1]:9/api/chat")
        );
        assert!(is_local("http://me:pw@localhost:11434/api/chat"));
    }

    #[test]
    fn shown_hides_the_password_and_keeps_the_rest() {
        assert_eq!(
            shown("http://me:hunter2@gpu-box:8080/api/chat"),
            "http://me:***@gpu-box:8080/api/chat"
        );
        assert_eq!(shown("http://tok@h:1/api/chat"), "http://tok@h:1/api/chat");
        assert_eq!(shown("http://h:1/api/chat"), "http://h:1/api/chat");
        assert_eq!(shown("a:b@c:d@h:1/x"), "a:***@h:1/x");
        assert!(!shown("http://u:p@ss@h:1/").contains("p@ss"));
    }

    #[test]
    fn credentials_leave_the_url_decoded() {
        let (url, credentials) = split_credentials("http://me:p%40ss%3Aw@h:1/api/chat");
        assert_eq!(url, "http://h:1/api/chat");
        let credentials = credentials.expect("credentials");
        assert_eq!(credentials.user, "me");
        assert_eq!(credentials.password.as_deref(), Some("p@ss:w"));
        assert!(!format!("{credentials:?}").contains("p@ss"));
        assert_eq!(
            split_credentials("http://h:1/api/chat"),
            ("http://h:1/api/chat".to_owned(), None)
        );
        assert_eq!(percent_decode("a%2"), "a%2");
        assert_eq!(percent_decode("%zz%41"), "%zzA");
    }

    #[test]
    fn host_and_port_is_what_the_client_connects_to() {
        let cases = [
            ("http://localhost:11434/api/chat", "localhost:11434"),
            ("http://user:secret@gpu-box:9/api/chat", "gpu-box:9"),
            ("http://[::1]:1/api/chat", "[::1]:1"),
            ("https://Example.COM:443/x/api/chat", "example.com:443"),
        ];
        for (endpoint, want) in cases {
            assert_eq!(host_and_port(endpoint).as_deref(), Some(want), "{endpoint}");
        }
        assert_eq!(host_and_port("nonsense"), None);
    }
}
