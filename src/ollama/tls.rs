//! Which servers an https endpoint may be: the trust store, and plain English for a
//! certificate that fails it.
//!
//! Trust is Mozilla's root set compiled into the binary (`webpki-roots`), plus the PEM
//! bundle `SSL_CERT_FILE` names for a private CA, by an absolute path only (a relative one
//! would be read from the project, which a repository fills). `SSL_CERT_DIR` is never
//! read, and neither is the operating system's store: a `FROM scratch` container has
//! none, and the macOS binaries are linked against empty Security.framework stubs. The
//! crypto is rustls with the `ring` provider, passed explicitly (no process-wide default is
//! installed).
//!
//! Non-goals: client certificates, pinning, turning verification off. An https endpoint
//! is no more "local" than an http one: locality is `config::is_local`'s job alone.

use std::error::Error as StdError;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use rustls::{CertificateError, RootCertStore};

use super::OllamaError;

pub(crate) use super::tls_problem::CERT_FILE_VAR;
use super::tls_problem::TlsProblem;

/// What an https client trusts, for `--doctor` to show.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Trust {
    /// How many roots are compiled in.
    pub(crate) builtin: usize,
    /// The `SSL_CERT_FILE` bundle and how many certificates it added, when set.
    pub(crate) extra: Option<(PathBuf, usize)>,
}

impl std::fmt::Display for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the {} built-in Mozilla roots", self.builtin)?;
        if let Some((file, count)) = &self.extra {
            let plural = if *count == 1 { "" } else { "s" };
            write!(
                f,
                " plus {count} certificate{plural} from {CERT_FILE_VAR} ({})",
                file.display()
            )?;
        }
        Ok(())
    }
}

/// The TLS configuration for an https endpoint: the built-in roots plus the certificates
/// in `extra` (the value of `SSL_CERT_FILE`; empty means unset). Fails, naming the file
/// and the fix, when `extra` cannot be read or holds no certificate, so a typo in the
/// variable is caught before the first request rather than as an unknown-CA error.
pub(crate) fn client_config(
    endpoint: &str,
    extra: Option<&Path>,
) -> Result<(rustls::ClientConfig, Trust), OllamaError> {
    let mut roots = RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let mut trust = Trust {
        builtin: roots.len(),
        extra: None,
    };
    if let Some(file) = extra.filter(|file| !file.as_os_str().is_empty()) {
        refuse_relative(file)?;
        let added = add_pem_file(&mut roots, file)?;
        trust.extra = Some((file.to_owned(), added));
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| OllamaError::BadEndpoint {
            url: crate::config::shown_endpoint(endpoint),
            reason: format!("cannot set up TLS ({e}); please report this as a bug"),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok((config, trust))
}

/// Refuses a relative `SSL_CERT_FILE`. It would be looked up in the directory metron runs
/// in, which is usually the project: a cloned repository could ship `ca.pem` there and have
/// its own certificate authority trusted for the endpoint (and so read the code on the
/// way). Only an absolute path names the same file wherever metron starts.
fn refuse_relative(file: &Path) -> Result<(), OllamaError> {
    if file.is_absolute() {
        return Ok(());
    }
    Err(OllamaError::CertFile {
        file: file.display().to_string(),
        reason: "it is a relative path, which would be read from the directory metron runs in (often the project, whose files a repository chooses); give the file's absolute path".to_owned(),
    })
}

/// Adds every certificate of the PEM file `file` to `roots`; how many it added.
fn add_pem_file(roots: &mut RootCertStore, file: &Path) -> Result<usize, OllamaError> {
    let bad = |reason: String| OllamaError::CertFile {
        file: file.display().to_string(),
        reason,
    };
    let bytes = std::fs::read(file).map_err(|e| bad(format!("cannot read it ({e})")))?;
    let certificates = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| bad(format!("it is not a valid PEM file ({e})")))?;
    if certificates.is_empty() {
        return Err(bad(
            "it holds no certificate (no `-----BEGIN CERTIFICATE-----` block)".to_owned(),
        ));
    }
    let count = certificates.len();
    for (n, certificate) in certificates.into_iter().enumerate() {
        roots.add(certificate).map_err(|e| {
            bad(format!(
                "certificate {} of {count} cannot be a trust anchor ({e})",
                n + 1
            ))
        })?;
    }
    Ok(count)
}

impl std::fmt::Display for TlsProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}; {}", self.what(), self.next_step())
    }
}

/// The TLS problem behind a transport error, when there is one: walks the `source()`
/// chain down to a `rustls::Error`. `with_extra` says whether `SSL_CERT_FILE` was in use.
pub(crate) fn problem_of(error: &(dyn StdError + 'static), with_extra: bool) -> Option<TlsProblem> {
    let mut next = Some(error);
    while let Some(current) = next {
        if let Some(tls) = current.downcast_ref::<rustls::Error>() {
            return Some(describe(tls, with_extra));
        }
        // `io::Error::source` skips the error it wraps (it returns that error's source), and
        // hyper-rustls hands rustls' error up inside one: step into it by hand.
        next = match current
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
        {
            Some(inner) => Some(inner as &(dyn StdError + 'static)),
            None => current.source(),
        };
    }
    None
}

/// A name as the certificate gives it: rustls describes each one in Debug form
/// (`DnsName("gpu-box")`, `IpAddress(10.0.0.2)`), which is noise in a message.
fn bare_name(presented: &str) -> String {
    let inner = ["DnsName(", "IpAddress(", "Other("]
        .iter()
        .find_map(|wrapper| presented.strip_prefix(wrapper)?.strip_suffix(')'))
        .unwrap_or(presented);
    inner.trim_matches('"').to_owned()
}

fn describe(error: &rustls::Error, with_extra: bool) -> TlsProblem {
    let rustls::Error::InvalidCertificate(certificate) = error else {
        // What comes back when the port answers in plain http is not a TLS record at all.
        let not_tls = matches!(error, rustls::Error::InvalidMessage(_));
        return TlsProblem::Other {
            detail: error.to_string(),
            not_tls,
        };
    };
    match certificate {
        CertificateError::UnknownIssuer => TlsProblem::UnknownIssuer { with_extra },
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => TlsProblem::Expired,
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => {
            TlsProblem::NotValidYet
        }
        CertificateError::NotValidForName => TlsProblem::WrongName(Vec::new()),
        CertificateError::NotValidForNameContext { presented, .. } => {
            TlsProblem::WrongName(presented.iter().map(|name| bare_name(name)).collect())
        }
        CertificateError::BadSignature => TlsProblem::BadSignature,
        other => TlsProblem::BadCertificate(format!("{other:?}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_root_store_is_not_empty() {
        let (_, trust) =
            client_config("https://x/", None).expect("the built-in roots alone always load");
        assert!(trust.builtin > 100, "{trust:?}");
        assert_eq!(trust.builtin, webpki_roots::TLS_SERVER_ROOTS.len());
        assert_eq!(trust.extra, None);
        assert!(trust.to_string().starts_with("the "), "{trust}");
    }

    #[test]
    fn an_empty_cert_file_variable_means_unset() {
        let (_, trust) = client_config("https://x/", Some(Path::new(""))).expect("unset");
        assert_eq!(trust.extra, None);
    }

    #[test]
    fn a_relative_cert_file_is_refused_before_it_is_read() {
        for relative in ["ca.pem", "./ca.pem", "certs/../ca.pem"] {
            let error = client_config("https://x/", Some(Path::new(relative)))
                .expect_err("a relative path is refused");
            let text = error.to_string();
            assert!(text.contains("relative path"), "{text}");
            assert!(text.contains(relative), "{text}");
            assert!(text.contains("point SSL_CERT_FILE at"), "{text}");
        }
    }

    #[test]
    fn the_certificate_problem_is_found_inside_an_io_error() {
        let tls = rustls::Error::InvalidCertificate(CertificateError::UnknownIssuer);
        let io = std::io::Error::new(std::io::ErrorKind::InvalidData, tls);
        let wrapped = std::io::Error::other(io);
        assert_eq!(
            problem_of(&wrapped, false),
            Some(TlsProblem::UnknownIssuer { with_extra: false })
        );
        let text = TlsProblem::UnknownIssuer { with_extra: false }.to_string();
        assert!(
            text.contains("UnknownIssuer") && text.contains("SSL_CERT_FILE"),
            "{text}"
        );
        let plain = std::io::Error::other("connection refused");
        assert_eq!(problem_of(&plain, false), None);
    }

    #[test]
    fn certificate_errors_read_as_plain_english() {
        let expired = rustls::Error::InvalidCertificate(CertificateError::Expired);
        assert_eq!(describe(&expired, false), TlsProblem::Expired);
        let name = rustls::Error::InvalidCertificate(CertificateError::NotValidForNameContext {
            expected: rustls::pki_types::ServerName::try_from("gpu-box")
                .expect("a valid name")
                .to_owned(),
            presented: vec!["DnsName(\"other\")".to_owned()],
        });
        let problem = describe(&name, false);
        assert!(problem.to_string().contains("for other,"), "{problem}");
        assert!(!problem.to_string().contains("DnsName"), "{problem}");
        let plain = rustls::Error::InvalidMessage(rustls::InvalidMessage::InvalidContentType);
        let problem = describe(&plain, false);
        assert!(
            matches!(problem, TlsProblem::Other { not_tls: true, .. }),
            "{problem:?}"
        );
        assert!(problem.to_string().contains("plain http"), "{problem}");
        let alert = rustls::Error::AlertReceived(rustls::AlertDescription::HandshakeFailure);
        let problem = describe(&alert, false);
        assert!(!problem.to_string().contains("plain http"), "{problem}");
    }
}
