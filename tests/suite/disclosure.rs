//! Disclosure through the real binary: a remote endpoint is announced once, before the
//! first request; `remote_endpoint: "refuse"` stops metron before anything is sent; a
//! local endpoint says nothing; a project's file cannot lift the user's refusal.
//!
//! A remote endpoint is hard to fake hermetically. The notice tests need a host name that
//! `/etc/hosts` maps to 127.0.0.1 (so no DNS is asked) but that metron does not treat as
//! local (it only trusts `localhost` and loopback addresses): usually the machine's own
//! host name. Without one they say SKIP, in CI too (a container rarely has one). The
//! refusal tests use an `.invalid` host (RFC 2606: it never resolves), because a refused
//! endpoint is never contacted.
//!
//! The notice and the refusal are printed by the session, so these tests also say SKIP
//! while that wiring is missing (a run that neither prints the notice nor refuses); under
//! `CI=true` a missing wiring fails instead, since the wiring exists.

use std::net::{IpAddr, Ipv4Addr, ToSocketAddrs};
use std::path::Path;

use serde_json::json;

use super::common::{Metron, Run, TestProject, metron, skip, skip_live};
use super::fake_ollama::{FakeOllama, Reply, answer, call};

/// The start of the notice line, as `metron::disclosure::notice` words it.
const NOTICE: &str = "metron: note: code the tools read";

/// A host that is refused; it never resolves, so nothing could reach it anyway.
const REFUSED_HOST: &str = "metron-disclosure.invalid";

/// `run` with the user's own config (`~/.metron/config.json` in the run's temporary HOME)
/// holding `json`.
pub(super) fn with_user_file(run: Metron, json: &str) -> Metron {
    let dir = run.home().join(".metron");
    std::fs::create_dir_all(&dir).expect("mkdir ~/.metron");
    std::fs::write(dir.join("config.json"), json).expect("write the user config");
    run
}

/// A name for this machine that resolves to 127.0.0.1 through `/etc/hosts` (no network)
/// and that metron counts as another host: the host name first, then any other alias.
pub(super) fn loopback_alias() -> Option<String> {
    let hosts = std::fs::read_to_string("/etc/hosts").ok()?;
    let mut names: Vec<String> = Vec::new();
    for line in hosts.lines() {
        let line = line.split('#').next().unwrap_or("");
        let mut fields = line.split_whitespace();
        if fields.next().and_then(|a| a.parse::<IpAddr>().ok())
            != Some(IpAddr::V4(Ipv4Addr::LOCALHOST))
        {
            continue;
        }
        names.extend(fields.map(str::to_owned));
    }
    let hostname = std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|h| h.trim().to_owned())
        .or_else(|| std::env::var("HOSTNAME").ok());
    if let Some(hostname) = hostname
        && let Some(at) = names.iter().position(|n| *n == hostname)
    {
        let name = names.remove(at);
        names.insert(0, name);
    }
    names.into_iter().find(|name| {
        let endpoint = format!("http://{name}:1/api/chat");
        !metron::config::is_local(&endpoint)
            && (name.as_str(), 1)
                .to_socket_addrs()
                .is_ok_and(|mut addrs| addrs.any(|a| a.ip() == IpAddr::V4(Ipv4Addr::LOCALHOST)))
    })
}

/// `metron -p PROMPT --yes` in `dir` with the user's config pointing at `endpoint`.
fn oneshot_at(dir: &Path, endpoint: &str, extra_json: &str) -> Run {
    let json = format!(r#"{{"endpoint": "{endpoint}"{extra_json}}}"#);
    with_user_file(metron(dir).args(["-p", "what is here?", "--yes"]), &json).run()
}

pub(super) fn notices(run: &Run) -> Vec<&str> {
    run.stderr
        .lines()
        .filter(|line| line.starts_with(NOTICE))
        .collect()
}

#[test]
fn a_remote_endpoint_is_announced_once_before_the_first_request() {
    const TEST: &str = "a_remote_endpoint_is_announced_once_before_the_first_request";
    let Some(alias) = loopback_alias() else {
        // CI containers map only `localhost` to 127.0.0.1, so this may skip there too.
        skip_live(
            TEST,
            "no name in /etc/hosts maps to 127.0.0.1 without being `localhost`",
        );
        return;
    };
    let p = TestProject::git();
    p.file("README.md", "hello\n");
    let fake = FakeOllama::start(vec![
        call("list_files", json!({}), 10, 2),
        answer("A README.", 20, 3),
    ]);
    let port = fake.addr().port();
    let run = oneshot_at(p.root(), &format!("http://{alias}:{port}"), "");
    if notices(&run).is_empty() && run.code == 0 {
        skip(
            TEST,
            "the session does not print the disclosure notice yet (session.rs wiring)",
        );
        return;
    }
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "A README.\n", "{run:?}");
    let lines = notices(&run);
    assert_eq!(lines.len(), 1, "one notice for two requests: {run:?}");
    assert_eq!(
        lines[0],
        format!(
            "metron: note: code the tools read (file slices, search results, command output) will be sent to {alias}:{port}, which is not this machine"
        )
    );
    assert!(!lines[0].contains('\x1b'), "{run:?}");
    // Before anything the model said, and before the first tool ran.
    let at = run.stderr.find(NOTICE).unwrap_or(usize::MAX);
    if let Some(tool) = run.stderr.find("list_files") {
        assert!(at < tool, "the notice came late: {run:?}");
    }
    assert_eq!(fake.chat_bodies().len(), 2);
}

#[test]
fn a_local_endpoint_says_nothing() {
    let p = TestProject::git();
    let fake = FakeOllama::start(vec![answer("Fine.", 10, 2)]);
    let run = oneshot_at(
        p.root(),
        &fake.base_url(),
        r#", "remote_endpoint": "refuse""#,
    );
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(run.stdout, "Fine.\n");
    assert!(notices(&run).is_empty(), "{run:?}");
    assert!(!run.stderr.contains("refus"), "{run:?}");
}

#[test]
fn refuse_stops_before_anything_is_sent() {
    const TEST: &str = "refuse_stops_before_anything_is_sent";
    let p = TestProject::git();
    let run = oneshot_at(
        p.root(),
        &format!("http://{REFUSED_HOST}:11434"),
        r#", "remote_endpoint": "refuse""#,
    );
    if run.code != 2 && !run.stderr.contains("remote_endpoint") {
        skip(
            TEST,
            "the session does not check `remote_endpoint` yet (session.rs wiring)",
        );
        return;
    }
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("remote_endpoint"))
        .unwrap_or_else(|| panic!("no refusal: {run:?}"));
    assert!(line.starts_with("metron: "), "{line}");
    assert!(line.contains(&format!("{REFUSED_HOST}:11434")), "{line}");
    assert!(line.contains("\"refuse\""), "{line}");
    assert!(line.contains("your own config"), "{line}");
    assert!(
        notices(&run).is_empty(),
        "refused, so nothing is announced: {run:?}"
    );
}

#[test]
fn a_project_file_cannot_lift_the_users_refusal() {
    const TEST: &str = "a_project_file_cannot_lift_the_users_refusal";
    let p = TestProject::git();
    p.file(
        ".metron.json",
        r#"{"remote_endpoint": "warn", "max_turns": 3}"#,
    );
    let run = with_user_file(
        metron(p.root())
            .args(["-p", "hi"])
            .env("OLLAMA_HOST", format!("http://{REFUSED_HOST}:11434")),
        r#"{"remote_endpoint": "refuse"}"#,
    )
    .run();
    if run.code != 2 && !run.stderr.contains("remote_endpoint") {
        skip(
            TEST,
            "the session does not check `remote_endpoint` yet (session.rs wiring)",
        );
        return;
    }
    assert_eq!(run.code, 2, "{run:?}");
    // The project's looser `warn` is ignored with a warning first; then the refusal.
    assert!(
        run.stderr
            .contains("warning: ignoring `remote_endpoint` \"warn\""),
        "{run:?}"
    );
    let line = run
        .stderr
        .lines()
        .find(|l| l.contains("remote_endpoint") && !l.contains("warning: ignoring"))
        .unwrap_or_else(|| panic!("no refusal: {run:?}"));
    assert!(line.contains("$OLLAMA_HOST"), "{line}");
    assert!(line.contains(".metron/config.json"), "{line}");
}

#[test]
fn an_unknown_policy_is_a_config_error() {
    let p = TestProject::git();
    let run = with_user_file(
        metron(p.root()).args(["-p", "hi"]),
        r#"{"remote_endpoint": "allow"}"#,
    )
    .run();
    assert_eq!(run.code, 2, "{run:?}");
    assert!(run.stderr.contains(r#"`remote_endpoint` from "#), "{run:?}");
    assert!(
        run.stderr
            .contains(r#"must be "warn" or "refuse", got "allow""#),
        "{run:?}"
    );
}

/// A redirect is an error naming its target, never followed: following it re-sent the
/// whole chat body (the code the tools read) to the `Location`, past the
/// `remote_endpoint` check, which only ever sees the configured endpoint.
#[test]
fn a_redirect_is_refused_and_the_second_server_receives_nothing() {
    let p = TestProject::git();
    p.file("secret.txt", "the code\n");
    let second = FakeOllama::start(vec![answer("Followed the redirect.", 10, 2)]);
    let first = FakeOllama::start(vec![Reply::Redirect(307, second.chat_url())]);
    let run = oneshot_at(
        p.root(),
        &first.base_url(),
        r#", "remote_endpoint": "refuse""#,
    );
    assert_eq!(run.code, 1, "{run:?}");
    assert!(run.stdout.is_empty(), "{run:?}");
    assert!(
        second.requests().is_empty(),
        "the redirect target received {:?}",
        second.requests()
    );
    assert_eq!(first.chat_bodies().len(), 1, "{run:?}");
    assert!(run.stderr.contains("HTTP 307"), "{run:?}");
    assert!(
        run.stderr.contains(&second.chat_url()),
        "names the Location: {run:?}"
    );
    assert!(
        run.stderr.contains("point OLLAMA_HOST or `endpoint` at it"),
        "says what to do: {run:?}"
    );
}
