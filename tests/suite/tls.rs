//! https endpoints, through the real binary against the fake Ollama behind a TLS front,
//! with a CA generated here: trusted through SSL_CERT_FILE, refused without it (naming the
//! certificate problem and the variable), and a bad SSL_CERT_FILE caught before any
//! request. Every run removes SSL_CERT_FILE unless the test sets it, so the machine's own
//! value never leaks in.

use std::path::{Path, PathBuf};

use rcgen::{BasicConstraints, CertificateParams, DnType, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};

use super::common::{Metron, Run, TestProject, greet_project, greet_session, metron};
use super::fake_ollama::{FakeOllama, answer};

/// A throwaway CA, its PEM file, and what it signs.
pub(super) struct Pki {
    ca: Issuer<'static, KeyPair>,
    /// The CA certificate as PEM, in a temporary directory.
    pub(super) ca_file: PathBuf,
    dir: tempfile::TempDir,
}

impl Pki {
    pub(super) fn new(name: &str) -> Pki {
        let mut params = CertificateParams::new(Vec::<String>::new()).expect("CA params");
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.distinguished_name.push(DnType::CommonName, name);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let key = KeyPair::generate().expect("CA key");
        let certificate = params.self_signed(&key).expect("CA certificate");
        let dir = tempfile::tempdir().expect("temp dir");
        let ca_file = dir.path().join("ca.pem");
        std::fs::write(&ca_file, certificate.pem()).expect("write the CA file");
        Pki {
            ca: Issuer::new(params, key),
            ca_file,
            dir,
        }
    }

    /// A file in this PKI's temporary directory holding `contents`.
    fn file(&self, name: &str, contents: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        std::fs::write(&path, contents).expect("write a file");
        path
    }

    /// A fake Ollama over https whose certificate, signed by this CA, names `names` and
    /// ends at `not_after` (a year from now when `None`).
    pub(super) fn server(&self, names: &[&str], expired: bool) -> FakeOllama {
        let mut params =
            CertificateParams::new(names.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>())
                .expect("server params");
        params.distinguished_name.push(DnType::CommonName, names[0]);
        if expired {
            params.not_before = rcgen::date_time_ymd(2020, 1, 1);
            params.not_after = rcgen::date_time_ymd(2021, 1, 1);
        }
        let key = KeyPair::generate().expect("server key");
        let certificate = params
            .signed_by(&key, &self.ca)
            .expect("server certificate");
        let chain = vec![CertificateDer::from(certificate.der().to_vec())];
        let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der()));
        FakeOllama::builder()
            .chat(greet_session("Greet now returns \"hola\" (greet.go:5)."))
            .tls(chain, key)
            .start()
    }
}

/// `https://localhost:PORT` for `fake`: the name the certificate is checked against is
/// `localhost`, while metron connects to the loopback address itself.
fn localhost_url(fake: &FakeOllama) -> String {
    format!("https://localhost:{}", fake.addr().port())
}

/// `metron ARGS` in `dir` against `url`, with SSL_CERT_FILE as given (removed for `None`).
fn run(dir: &Path, url: &str, cert_file: Option<&Path>, args: &[&str]) -> Run {
    let m: Metron = metron(dir).args(args).env("OLLAMA_HOST", url);
    match cert_file {
        Some(file) => m.env("SSL_CERT_FILE", file),
        None => m.env_remove("SSL_CERT_FILE"),
    }
    .run()
}

/// The first doctor row with this status and name.
#[track_caller]
fn row<'a>(run: &'a Run, status: &str, name: &str) -> &'a str {
    run.stdout
        .lines()
        .find(|line| {
            line.strip_prefix(status)
                .and_then(|rest| rest.trim_start().strip_prefix(name))
                .is_some_and(|rest| rest.starts_with(' '))
        })
        .unwrap_or_else(|| panic!("no `{status} {name}` row in:\n{}", run.stdout))
}

#[test]
fn https_with_the_ca_in_ssl_cert_file_runs_a_turn() {
    let pki = Pki::new("metron test CA");
    let fake = pki.server(&["localhost", "127.0.0.1"], false);
    let p = greet_project();
    let url = localhost_url(&fake);
    let done = run(
        p.root(),
        &url,
        Some(&pki.ca_file),
        &["-p", "make Greet return \"hola\"", "--yes"],
    );
    assert_eq!(done.code, 0, "{done:?}");
    assert_eq!(done.stdout, "Greet now returns \"hola\" (greet.go:5).\n");
    assert_eq!(fake.chat_bodies().len(), 4, "every round went over TLS");
    // localhost is still this machine: no remote-endpoint notice.
    assert!(!done.stderr.contains("another host"), "{done:?}");
}

#[test]
fn the_doctor_says_which_roots_an_https_endpoint_trusts() {
    let pki = Pki::new("metron test CA");
    // By address this time: the certificate names 127.0.0.1 too.
    let fake = pki.server(&["localhost", "127.0.0.1"], false);
    let p = TestProject::git();
    let doctor = run(
        p.root(),
        &fake.base_url(),
        Some(&pki.ca_file),
        &["--doctor"],
    );
    let tls = row(&doctor, "ok", "tls");
    let builtin: usize = tls
        .split("trusts the ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no root count in {tls:?}"));
    assert!(
        builtin > 100,
        "the built-in root store is nearly empty: {tls}"
    );
    assert!(
        tls.contains("plus 1 certificate from SSL_CERT_FILE"),
        "{tls}"
    );
    assert!(row(&doctor, "ok", "ollama").contains("https://127.0.0.1:"));

    // Plain http has no trust line.
    let plain = FakeOllama::start(vec![]);
    let doctor = run(
        p.root(),
        &plain.base_url(),
        Some(&pki.ca_file),
        &["--doctor"],
    );
    assert!(!doctor.stdout.contains(" tls "), "{}", doctor.stdout);
}

#[test]
fn an_unknown_ca_names_the_problem_and_ssl_cert_file() {
    let pki = Pki::new("metron test CA");
    let fake = pki.server(&["localhost", "127.0.0.1"], false);
    let p = TestProject::git();
    let url = localhost_url(&fake);
    let refused = run(p.root(), &url, None, &["-p", "hello"]);
    // Like an unreachable server: the turn failed, the configuration is fine.
    assert_eq!(refused.code, 1, "{refused:?}");
    assert_eq!(refused.stdout, "", "{refused:?}");
    assert!(
        refused
            .stderr
            .contains("not signed by a known authority (UnknownIssuer)"),
        "{refused:?}"
    );
    assert!(
        refused
            .stderr
            .contains("point SSL_CERT_FILE at that CA's PEM file"),
        "{refused:?}"
    );
    assert!(fake.chat_bodies().is_empty(), "nothing was sent");

    let doctor = run(p.root(), &url, None, &["--doctor"]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    assert!(row(&doctor, "fail", "ollama").contains("UnknownIssuer"));
    assert!(doctor.stdout.contains("SSL_CERT_FILE"), "{}", doctor.stdout);

    // Another CA in SSL_CERT_FILE does not help, and the message says so.
    let other = Pki::new("another test CA");
    let refused = run(p.root(), &url, Some(&other.ca_file), &["-p", "hello"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("did not sign it either"),
        "{refused:?}"
    );

    // A CA of the same name with another key (one that was regenerated) is named too.
    let twin = Pki::new("metron test CA");
    let refused = run(p.root(), &url, Some(&twin.ca_file), &["-p", "hello"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("(BadSignature)"), "{refused:?}");
    assert!(refused.stderr.contains("regenerated"), "{refused:?}");
}

#[test]
fn an_expired_certificate_and_a_wrong_name_are_named() {
    let pki = Pki::new("metron test CA");
    let p = TestProject::git();
    let expired = pki.server(&["localhost"], true);
    let refused = run(
        p.root(),
        &localhost_url(&expired),
        Some(&pki.ca_file),
        &["-p", "hello"],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("has expired (Expired)"),
        "{refused:?}"
    );

    let elsewhere = pki.server(&["gpu-box.example"], false);
    let refused = run(
        p.root(),
        &localhost_url(&elsewhere),
        Some(&pki.ca_file),
        &["-p", "hello"],
    );
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(refused.stderr.contains("NotValidForName"), "{refused:?}");
    assert!(refused.stderr.contains("gpu-box.example"), "{refused:?}");
}

#[test]
fn https_to_a_plain_http_server_says_to_check_the_scheme() {
    let plain = FakeOllama::start(vec![answer("never", 1, 1)]);
    let p = TestProject::git();
    let url = format!("https://localhost:{}", plain.addr().port());
    let refused = run(p.root(), &url, None, &["-p", "hello"]);
    assert_eq!(refused.code, 1, "{refused:?}");
    assert!(
        refused.stderr.contains("speaks https on this port"),
        "{refused:?}"
    );
}

#[test]
fn a_bad_ssl_cert_file_is_a_configuration_error_naming_the_file() {
    let pki = Pki::new("metron test CA");
    let fake = pki.server(&["localhost"], false);
    let p = TestProject::git();
    let url = localhost_url(&fake);
    let missing = pki.dir.path().join("no-such-ca.pem");
    let not_pem = pki.file("notes.txt", "this is not a certificate\n");
    let key_only = pki.file(
        "key.pem",
        &KeyPair::generate().expect("key").serialize_pem(),
    );
    for (file, why) in [
        (&missing, "cannot read it"),
        (&not_pem, "holds no certificate"),
        (&key_only, "holds no certificate"),
    ] {
        let refused = run(p.root(), &url, Some(file), &["-p", "hello"]);
        assert_eq!(refused.code, 2, "{file:?}: {refused:?}");
        let named = format!("SSL_CERT_FILE={}", file.display());
        assert!(refused.stderr.contains(&named), "{refused:?}");
        assert!(refused.stderr.contains(why), "{refused:?}");
        assert!(
            refused
                .stderr
                .contains("unset it to trust only the built-in roots"),
            "{refused:?}"
        );

        let doctor = run(p.root(), &url, Some(file), &["--doctor"]);
        assert_eq!(doctor.code, 1, "{}", doctor.stdout);
        assert!(
            row(&doctor, "fail", "ollama").contains(&named),
            "{}",
            doctor.stdout
        );
    }
    assert!(fake.requests().is_empty(), "nothing was sent");

    // An http endpoint never reads SSL_CERT_FILE: a broken value meant for other tools
    // does not stop it.
    let plain = FakeOllama::start(vec![answer("fine", 1, 1)]);
    let done = run(
        p.root(),
        &plain.base_url(),
        Some(&missing),
        &["-p", "hello"],
    );
    assert_eq!(done.code, 0, "{done:?}");
}
