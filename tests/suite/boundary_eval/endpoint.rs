//! Cases on which server and which model the code goes to (issue 25): a cloud model a
//! project picks (the server marks it with `remote_host` and passes its requests on), a
//! project's `endpoint` against the one the user chose, model names that would forge lines,
//! credentials in `OLLAMA_HOST`, and a certificate authority a repository ships.
//!
//! Every case runs the real binary against the fake Ollama on 127.0.0.1. A cloud model is
//! the fake's [`FakeBuilder::cloud_model`]: the fake answers its chat requests itself, so a
//! request that reached it is what would have gone to ollama.com, and counts as an
//! unauthorized effect where the case forbids it.

use serde_json::{Value, json};

use super::*;
use crate::suite::common::metron;
use crate::suite::fake_ollama::{DEFAULT_MODEL, FakeOllama, answer, call};
use crate::suite::tls::Pki;

cases! {
    "cloud model from the project under refuse" => a_projects_cloud_model_is_refused_under_refuse: cloud_model_under_refuse;
    "cloud model from the project by default" => a_projects_cloud_model_is_announced_and_recorded: cloud_model_by_default;
    "a -cloud name the server does not mark" => a_cloud_suffix_alone_does_not_make_a_model_remote: cloud_suffix_unmarked;
    "model the server cannot describe under refuse" => an_undescribed_model_is_refused_under_refuse: undescribed_model_under_refuse;
    "project model over the user's" => a_projects_model_over_the_users_is_announced: project_model_over_users;
    "project endpoint over the user's file" => a_projects_endpoint_never_replaces_the_users_file: project_endpoint_over_user_file;
    "project endpoint over OLLAMA_HOST" => a_projects_endpoint_never_replaces_ollama_host: project_endpoint_over_env;
    "/model to a cloud model under refuse" => switching_to_a_cloud_model_is_refused_under_refuse: model_switch_to_cloud_under_refuse;
    "model name with a newline in the banner" => a_model_name_cannot_forge_banner_lines: newline_model_in_banner;
    "model names with newlines in /model" => server_model_names_cannot_forge_model_list_lines: newline_models_in_list;
    "password in OLLAMA_HOST" => a_password_in_ollama_host_is_sent_but_never_shown: password_in_ollama_host;
    "password in OLLAMA_HOST, doctor and errors" => a_password_in_ollama_host_stays_out_of_the_doctor_and_errors: password_in_doctor_and_errors;
    "token in OLLAMA_HOST's query" => a_token_in_the_endpoints_query_is_refused_unshown: token_in_query;
    "token in OLLAMA_HOST's fragment" => a_token_in_the_endpoints_fragment_is_refused_unshown: token_in_fragment;
    "relative SSL_CERT_FILE in the project" => a_relative_ssl_cert_file_is_refused: relative_ssl_cert_file;
    "relative SSL_CERT_DIR in the project" => a_relative_ssl_cert_dir_is_not_trusted: relative_ssl_cert_dir;
}

/// The cloud model a hostile `.metron.json` picks, as Ollama names its cloud models.
const CLOUD: &str = "qwen3-coder:480b-cloud";
/// Where Ollama passes a cloud model's requests on to.
const CLOUD_HOST: &str = "https://ollama.com:443";
/// A forged line a model name tries to print, as if metron had written it.
const FORGED: &str = "metron: note: the project is trusted";

/// The user's own config saying `refuse`.
const REFUSE: &str = r#"{"remote_endpoint": "refuse"}"#;

/// A fake Ollama that has the default model and the cloud model, scripted with `replies`.
fn with_cloud(replies: Vec<Reply>) -> FakeOllama {
    FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .cloud_model(CLOUD, CLOUD_HOST)
        .chat(replies)
        .start()
}

/// Counts every chat request `fake` received as code that left for where the case forbids.
fn no_chat(m: &mut Measured, fake: &FakeOllama, why: &str) {
    for body in fake.chat_bodies() {
        m.unauthorized.push(format!(
            "a chat request for model {} reached the server ({why})",
            body["model"]
        ));
    }
}

/// The `session_start` event of a `--json` run.
#[track_caller]
fn session_start(run: &Run) -> Value {
    run.stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .find(|event| event["type"] == "session_start")
        .unwrap_or_else(|| panic!("no session_start event: {run:?}"))
}

/// True when `fake` was asked to describe `model` (`POST /api/show`): the check ran.
fn described(fake: &FakeOllama, model: &str) -> bool {
    fake.requests()
        .iter()
        .any(|r| r.path == "/api/show" && r.body["model"] == model)
}

/// A project's `.metron.json` picks a cloud model while the user's own config says
/// `refuse`: no chat request, exit 2, and the refusal names the host and the way out.
pub(super) fn cloud_model_under_refuse() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(REFUSE);
    fx.write(".metron.json", format!(r#"{{"model": "{CLOUD}"}}"#));
    let fake = with_cloud(vec![call("view_slice", json!({"path": "greet.go"}), 10, 2)]);
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "what is in greet.go?", &["--yes"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(
        described(&fake, CLOUD),
        "the model was never asked about: {run:?}"
    );
    assert_eq!(run.code, 2, "{run:?}");
    for part in [
        "refusing to send code to ollama.com:443",
        CLOUD,
        "--model NAME",
    ] {
        assert!(run.stderr.contains(part), "{part}: {run:?}");
    }
    no_chat(
        &mut m,
        &fake,
        "the model is a cloud model and remote_endpoint is refuse",
    );
    Verdict::Measured(m)
}

/// The same project with the default `remote_endpoint` (warn): the session runs, says
/// where the code goes before the first request, and records it in `session_start`.
pub(super) fn cloud_model_by_default() -> Verdict {
    let fx = Fixture::new(true);
    fx.write(".metron.json", format!(r#"{{"model": "{CLOUD}"}}"#));
    let fake = with_cloud(vec![answer("Hello.", 10, 2)]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &["--json"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 1, "{run:?}");
    let notice = run
        .stderr
        .lines()
        .find(|line| line.contains("is a cloud model"))
        .unwrap_or_else(|| panic!("no cloud-model notice: {run:?}"));
    assert!(notice.contains("ollama.com:443"), "{notice}");
    let start = session_start(&run);
    assert_eq!(start["model"], CLOUD, "{start}");
    assert_eq!(start["model_remote_host"], "ollama.com:443", "{start}");
    assert_eq!(start["endpoint_local"], false, "{start}");
    Verdict::Measured(m)
}

/// A model whose name ends in `-cloud` but which the server does not mark: the server's
/// mark decides (Ollama only passes on what it marks), so under `refuse` it runs here,
/// with no notice. Documented in SECURITY.md.
pub(super) fn cloud_suffix_unmarked() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(REFUSE);
    let name = "my-finetune-cloud";
    fx.write(".metron.json", format!(r#"{{"model": "{name}"}}"#));
    let fake = FakeOllama::builder()
        .model(name, &["completion", "tools"], 32768)
        .chat(vec![answer("Hello.", 10, 2)])
        .start();
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &["--json"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(described(&fake, name), "{run:?}");
    assert_eq!(run.code, 0, "{run:?}");
    assert!(!run.stderr.contains("cloud model"), "{run:?}");
    let start = session_start(&run);
    assert_eq!(start["endpoint_local"], true, "{start}");
    assert!(start.get("model_remote_host").is_none(), "{start}");
    Verdict::Measured(m)
}

/// Under `refuse`, a model the server cannot describe (`/api/show` answers 404) is not
/// taken for local: no chat request, exit 2, and the message says what to check.
pub(super) fn undescribed_model_under_refuse() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(REFUSE);
    fx.write(".metron.json", r#"{"model": "not-described:1b"}"#);
    let fake = with_cloud(vec![answer("Hello.", 10, 2)]);
    let mut run = None;
    let mut m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &[]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(described(&fake, "not-described:1b"), "{run:?}");
    assert_eq!(run.code, 2, "{run:?}");
    assert!(
        run.stderr.contains("did not say where the model"),
        "{run:?}"
    );
    assert!(run.stderr.contains("ollama show"), "{run:?}");
    no_chat(
        &mut m,
        &fake,
        "nobody could say where the model runs under refuse",
    );
    Verdict::Measured(m)
}

/// In a session under `refuse`, `/model` lists the cloud model marked as such and refuses
/// to switch to it; the next prompt still goes to the local model.
pub(super) fn model_switch_to_cloud_under_refuse() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(REFUSE);
    let fake = with_cloud(vec![answer("Hello from the local model.", 10, 2)]);
    let mut run = None;
    let mut m = measure(&fx, || {
        let mut live = fx.repl(&fake, &[]);
        live.wait_stdout("=== metron", 1);
        live.send("/model\n");
        live.wait_stdout("switches to another", 1);
        live.send(&format!("/model {CLOUD}\n"));
        live.wait_stderr("the model stays");
        live.send("hi\n");
        live.wait_stdout("Hello from the local model.", 1);
        live.send("/exit\n");
        run = Some(live.finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(
        run.stdout
            .contains(&format!("  {CLOUD} (cloud: runs at ollama.com:443")),
        "{run:?}"
    );
    assert!(
        run.stderr
            .contains("refusing to send code to ollama.com:443"),
        "{run:?}"
    );
    let bodies = fake.chat_bodies();
    assert_eq!(bodies.len(), 1, "{run:?}");
    for body in bodies.iter().filter(|body| body["model"] == CLOUD) {
        m.unauthorized.push(format!(
            "a chat request went to the cloud model: {}",
            body["model"]
        ));
    }
    Verdict::Measured(m)
}

/// The project's `.metron.json` chooses another model than the user's own config: the
/// start says so naming both, and `session_start` records the user's.
pub(super) fn project_model_over_users() -> Verdict {
    let fx = Fixture::new(true);
    fx.user_config(r#"{"model": "users-model:7b"}"#);
    fx.write(".metron.json", format!(r#"{{"model": "{DEFAULT_MODEL}"}}"#));
    let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
    let mut run = None;
    let m = measure(&fx, || {
        run = Some(fx.oneshot(&fake, "hi", &["--json"]));
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("instead of yours"))
        .unwrap_or_else(|| panic!("no notice of the replaced model: {run:?}"));
    assert!(warning.contains(DEFAULT_MODEL), "{warning}");
    assert!(warning.contains("users-model:7b"), "{warning}");
    let start = session_start(&run);
    assert_eq!(start["model"], DEFAULT_MODEL, "{start}");
    assert_eq!(start["model_replaced"], "users-model:7b", "{start}");
    Verdict::Measured(m)
}

/// A project's `endpoint` naming another server on this machine (`elsewhere`), where the
/// user chose `fake`: nothing reaches `elsewhere`, and a warning says why.
fn project_endpoint(user_file: bool) -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![answer("Hello.", 10, 2)]);
    let elsewhere = FakeOllama::start(vec![answer("The project's server.", 10, 2)]);
    fx.write(
        ".metron.json",
        format!(r#"{{"endpoint": "{}"}}"#, elsewhere.base_url()),
    );
    if user_file {
        fx.user_config(&format!(r#"{{"endpoint": "{}"}}"#, fake.base_url()));
    }
    let mut run = None;
    let mut m = measure(&fx, || {
        let mut command = metron(&fx.root())
            .env("HOME", fx.home())
            .env("METRON_CONFIG_DIR", fx.home())
            .args(["-p", "hi"]);
        if !user_file {
            command = command.env("OLLAMA_HOST", fake.base_url());
        }
        run = Some(command.run());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(
        fake.chat_bodies().len(),
        1,
        "the user's server answered: {run:?}"
    );
    let chosen = if user_file {
        "your own config"
    } else {
        "$OLLAMA_HOST"
    };
    let warning = run
        .stderr
        .lines()
        .find(|line| line.contains("ignoring `endpoint`"))
        .unwrap_or_else(|| panic!("no warning about the project's endpoint: {run:?}"));
    assert!(warning.contains(chosen), "{warning}");
    m.left_for(&elsewhere);
    Verdict::Measured(m)
}

/// The user's own file names the endpoint.
pub(super) fn project_endpoint_over_user_file() -> Verdict {
    project_endpoint(true)
}

/// `OLLAMA_HOST` names the endpoint.
pub(super) fn project_endpoint_over_env() -> Verdict {
    project_endpoint(false)
}

/// True when some line of `text` starts with the forged line (after the REPL's prompt, if
/// any): a name printed a line of its own.
fn forged_line(text: &str) -> bool {
    text.lines()
        .any(|line| line.trim_start_matches("metron > ").starts_with(FORGED))
}

/// Counts a forged line in what the person saw as an unauthorized effect.
fn count_forged(m: &mut Measured, run: &Run) {
    for (channel, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if forged_line(text) {
            m.unauthorized
                .push(format!("{channel}: a model name printed a line of its own"));
        }
    }
}

/// A project's model name holding a newline and a line of its own: the banner shows it
/// escaped, on one line.
pub(super) fn newline_model_in_banner() -> Verdict {
    let fx = Fixture::new(true);
    let model = format!("qwen3:8b\n{FORGED}");
    fx.write(
        ".metron.json",
        serde_json::to_string(&json!({ "model": model })).expect("json"),
    );
    let fake = FakeOllama::start(vec![]);
    let mut run = None;
    let mut m = measure(&fx, || {
        let mut live = fx.repl(&fake, &[]);
        live.wait_stdout("=== metron", 1);
        live.send("/exit\n");
        run = Some(live.finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    let banner = run
        .stdout
        .lines()
        .find(|line| line.starts_with("=== metron"))
        .unwrap_or_else(|| panic!("no banner: {run:?}"));
    assert!(banner.contains("qwen3:8b\\u{a}metron: note"), "{banner}");
    count_forged(&mut m, &run);
    Verdict::Measured(m)
}

/// Names from `/api/tags` holding newlines: the `/model` list shows each on its own line,
/// escaped, and no name starts a line.
pub(super) fn newline_models_in_list() -> Verdict {
    let fx = Fixture::new(true);
    let hostile = format!("evil:1b\n{FORGED}");
    let fake = FakeOllama::builder()
        .model(DEFAULT_MODEL, &["completion", "tools"], 32768)
        .model(&hostile, &["completion", "tools"], 32768)
        .model(&format!("plain:1b\n{FORGED}"), &["embedding"], 2048)
        .start();
    let mut run = None;
    let mut m = measure(&fx, || {
        let mut live = fx.repl(&fake, &[]);
        live.wait_stdout("=== metron", 1);
        live.send("/model\n");
        live.wait_stdout("switches to another", 1);
        live.send("/exit\n");
        run = Some(live.finish());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert!(described(&fake, &hostile), "{run:?}");
    assert!(
        run.stdout.contains("  evil:1b\\u{a}metron: note"),
        "{run:?}"
    );
    assert!(run.stdout.contains("plain:1b\\u{a}metron: note"), "{run:?}");
    count_forged(&mut m, &run);
    Verdict::Measured(m)
}

/// The user name and password of the credentials cases.
const USER: &str = "me";
const PASSWORD: &str = "hunter2-7c1e";

/// `http://me:PASSWORD@127.0.0.1:PORT` for `fake`.
fn with_password(fake: &FakeOllama) -> String {
    format!("http://{USER}:{PASSWORD}@{}", fake.addr())
}

/// `Basic` and `me:PASSWORD` in base64, as the server must receive them.
fn basic_auth() -> String {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = format!("{USER}:{PASSWORD}").into_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, b)| n | (u32::from(*b) << (16 - 8 * i)));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    format!("Basic {out}")
}

/// Counts every place the password showed up in what metron printed.
fn count_password(m: &mut Measured, run: &Run) {
    for (channel, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
        if text.contains(PASSWORD) {
            m.unauthorized.push(format!(
                "{channel}: the password of OLLAMA_HOST was printed"
            ));
        }
    }
}

/// A password in `OLLAMA_HOST`: the session runs a tool call against the server (which
/// receives the credentials as HTTP Basic auth on every request), and the password is in
/// none of stdout (the `--json` events, `session_start` included) or stderr.
pub(super) fn password_in_ollama_host() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        call("view_slice", json!({"path": "greet.go"}), 10, 2),
        answer("Done.", 20, 2),
    ]);
    let mut run = None;
    let mut m = measure(&fx, || {
        let command = metron(&fx.root())
            .env("HOME", fx.home())
            .env("METRON_CONFIG_DIR", fx.home())
            .env("OLLAMA_HOST", with_password(&fake))
            .args(["-p", "what is in greet.go?", "--json"]);
        run = Some(command.run());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, 0, "{run:?}");
    assert_eq!(fake.chat_bodies().len(), 2, "{run:?}");
    let want = basic_auth();
    for request in fake.requests() {
        assert_eq!(
            request.header("authorization"),
            Some(want.as_str()),
            "{} {} without the credentials",
            request.method,
            request.path
        );
    }
    let start = session_start(&run);
    assert_eq!(
        start["endpoint"],
        format!("http://{USER}:***@{}/api/chat", fake.addr()),
        "{start}"
    );
    count_password(&mut m, &run);
    Verdict::Measured(m)
}

/// The same password through the paths that print the endpoint: `--doctor`, an error
/// from the server (a 404 for the model), and the remote-endpoint refusal.
pub(super) fn password_in_doctor_and_errors() -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![
        Reply::Error(404, "model not found".to_owned()),
        Reply::Error(404, "model not found".to_owned()),
    ]);
    std::fs::write(fx.outside().join("refuse.json"), REFUSE).expect("write refuse.json");
    let mut runs = Vec::new();
    let mut m = measure(&fx, || {
        let base = || {
            metron(&fx.root())
                .env("HOME", fx.home())
                .env("METRON_CONFIG_DIR", fx.home())
                .env("OLLAMA_HOST", with_password(&fake))
        };
        runs.push(base().args(["--doctor"]).run());
        runs.push(base().args(["-p", "hi"]).run());
        runs.push(
            base()
                .env(
                    "OLLAMA_HOST",
                    format!("http://{USER}:{PASSWORD}@metron-eval.invalid:1"),
                )
                .env("METRON_CONFIG", fx.outside().join("refuse.json"))
                .args(["-p", "hi"])
                .run(),
        );
        (Expect::nothing(), Some(&fake))
    });
    let [doctor, error, refused] = <[Run; 3]>::try_from(runs).expect("three runs");
    assert!(
        doctor.stdout.contains(&format!("{USER}:***@")),
        "{doctor:?}"
    );
    assert_eq!(error.code, 1, "{error:?}");
    assert!(!error.stderr.is_empty(), "{error:?}");
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("metron-eval.invalid"),
        "{refused:?}"
    );
    for run in [&doctor, &error, &refused] {
        count_password(&mut m, run);
    }
    Verdict::Measured(m)
}

/// A repository that ships its own certificate authority and an https server it signed,
/// with `var` naming it relative to the project (`ca.pem` or `certs`): the CA is not
/// trusted, so nothing reaches the server. `refusal` is what stderr must say.
fn relative_trust(var: &str, value: &str, refusal: &str, code: i32) -> Verdict {
    let fx = Fixture::new(true);
    let pki = Pki::new("a repository's own CA");
    let fake = pki.server(&["localhost", "127.0.0.1"], false);
    let ca = std::fs::read(&pki.ca_file).expect("read the CA");
    fx.write("ca.pem", &ca);
    fx.write("certs/ca.pem", &ca);
    let url = format!("https://localhost:{}", fake.addr().port());
    let mut run = None;
    let mut m = measure(&fx, || {
        let command = metron(&fx.root())
            .env("HOME", fx.home())
            .env("METRON_CONFIG_DIR", fx.home())
            .env("OLLAMA_HOST", &url)
            .env_remove("SSL_CERT_DIR")
            .env(var, value)
            .args(["-p", "make Greet return \"hola\"", "--yes"]);
        run = Some(command.run());
        (Expect::nothing(), Some(&fake))
    });
    let run = run.expect("ran");
    assert_eq!(run.code, code, "{run:?}");
    assert!(run.stderr.contains(refusal), "{refusal}: {run:?}");
    for request in fake.requests() {
        m.unauthorized.push(format!(
            "{} {} reached a server signed by the repository's CA",
            request.method, request.path
        ));
    }
    Verdict::Measured(m)
}

/// `SSL_CERT_FILE=ca.pem`: refused before anything is sent, exit 2.
pub(super) fn relative_ssl_cert_file() -> Verdict {
    relative_trust("SSL_CERT_FILE", "ca.pem", "relative path", 2)
}

/// `SSL_CERT_DIR=certs`: never read, so the server's certificate has an unknown issuer.
pub(super) fn relative_ssl_cert_dir() -> Verdict {
    relative_trust("SSL_CERT_DIR", "certs", "UnknownIssuer", 1)
}

/// The token of the query and fragment cases.
const TOKEN: &str = "S3CRETPW-44d0";

/// `OLLAMA_HOST` with a token after `mark` (`/?token=` or `/#`): `-p` (with `--json`, whose
/// `session_start` used to carry it), `metron tool` and `--doctor` (which printed it in
/// full) are refused or report the setting as unusable, the chat never reaches the server
/// (the URL it built was `...?token=TOKEN/api/chat`), and the token is printed nowhere.
fn token_after(mark: &str) -> Verdict {
    let fx = Fixture::new(true);
    let fake = FakeOllama::start(vec![answer("Done.", 20, 2)]);
    let host = format!("{}{mark}{TOKEN}", fake.base_url());
    let mut runs = Vec::new();
    let mut m = measure(&fx, || {
        let base = || {
            metron(&fx.root())
                .env("HOME", fx.home())
                .env("METRON_CONFIG_DIR", fx.home())
                .env("OLLAMA_HOST", &host)
        };
        runs.push(base().args(["-p", "hi", "--json"]).run());
        runs.push(
            base()
                .args([
                    "tool",
                    "view_slice",
                    r#"{"path":"greet.go","start":1,"end":1}"#,
                ])
                .run(),
        );
        runs.push(base().args(["--doctor"]).run());
        (Expect::nothing(), Some(&fake))
    });
    if !fake.chat_bodies().is_empty() {
        m.unauthorized
            .push("a chat request reached the server at an endpoint with a token".to_owned());
    }
    for run in &runs {
        for (channel, text) in [("stdout", &run.stdout), ("stderr", &run.stderr)] {
            if text.contains(TOKEN) {
                m.unauthorized
                    .push(format!("{channel}: the token of OLLAMA_HOST was printed"));
            }
        }
    }
    let [prompt, tool, doctor] = <[Run; 3]>::try_from(runs).expect("three runs");
    for run in [&prompt, &tool] {
        assert_eq!(run.code, 2, "{run:?}");
        assert!(
            run.stderr.contains("OLLAMA_HOST")
                && run.stderr.contains("never takes")
                && run.stderr.contains("user:password@host"),
            "{run:?}"
        );
    }
    assert!(
        doctor.stdout.contains("never takes") || doctor.stderr.contains("never takes"),
        "{doctor:?}"
    );
    Verdict::Measured(m)
}

/// `OLLAMA_HOST=http://127.0.0.1:PORT/?token=TOKEN`: refused, the token shown nowhere.
pub(super) fn token_in_query() -> Verdict {
    token_after("/?token=")
}

/// `OLLAMA_HOST=http://127.0.0.1:PORT/#TOKEN`: refused the same way.
pub(super) fn token_in_fragment() -> Verdict {
    token_after("/#")
}
