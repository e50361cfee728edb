//! Why an https connection was refused, in words a user can act on: the plain data that
//! the TLS set-up (tls.rs) produces and the error (error.rs) carries, apart from both.

/// The variable naming an extra PEM bundle of trusted CAs (OpenSSL's name for it, which
/// curl, git and Python's ssl also read).
pub(crate) const CERT_FILE_VAR: &str = "SSL_CERT_FILE";

/// Why a TLS connection was refused, in words a user can act on.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum TlsProblem {
    /// The chain does not lead to a trusted root: a private or self-signed CA.
    UnknownIssuer {
        /// `SSL_CERT_FILE` was set (its certificates did not sign this one either).
        with_extra: bool,
    },
    /// The certificate's `notAfter` is past.
    Expired,
    /// The certificate's `notBefore` is still ahead.
    NotValidYet,
    /// The certificate names other hosts; the names it presents, when known.
    WrongName(Vec<String>),
    /// A trusted CA has the issuer's name but did not make the signature: typically a CA
    /// that was regenerated, with the old one still in `SSL_CERT_FILE`.
    BadSignature,
    /// Any other certificate fault (revoked, wrong purpose...).
    BadCertificate(String),
    /// The handshake failed before any certificate was judged.
    Other {
        /// rustls' own description.
        detail: String,
        /// Whether what came back was not TLS at all: typically a server that speaks
        /// plain http on this port.
        not_tls: bool,
    },
}

impl TlsProblem {
    /// What is wrong, in one clause.
    pub(crate) fn what(&self) -> String {
        match self {
            TlsProblem::UnknownIssuer { .. } => {
                "the server's certificate is not signed by a known authority (UnknownIssuer)"
                    .to_owned()
            }
            TlsProblem::Expired => "the server's certificate has expired (Expired)".to_owned(),
            TlsProblem::NotValidYet => {
                "the server's certificate is not valid yet (NotValidYet)".to_owned()
            }
            TlsProblem::WrongName(names) if names.is_empty() => {
                "the server's certificate is for another host name (NotValidForName)".to_owned()
            }
            TlsProblem::WrongName(names) => format!(
                "the server's certificate is for {}, not for this host name (NotValidForName)",
                names.join(", ")
            ),
            TlsProblem::BadSignature => {
                "the server's certificate is not validly signed by the CA of that name that metron trusts (BadSignature)".to_owned()
            }
            TlsProblem::BadCertificate(detail) => {
                format!("the server's certificate was rejected ({detail})")
            }
            TlsProblem::Other { detail, .. } => format!("the TLS handshake failed ({detail})"),
        }
    }

    /// The next step.
    pub(crate) fn next_step(&self) -> String {
        match self {
            TlsProblem::UnknownIssuer { with_extra: false } => format!(
                "if it uses a private CA, point {CERT_FILE_VAR} at that CA's PEM file"
            ),
            TlsProblem::UnknownIssuer { with_extra: true } => format!(
                "the certificates in {CERT_FILE_VAR} did not sign it either: point {CERT_FILE_VAR} at the PEM file of the CA that issued the server's certificate"
            ),
            TlsProblem::Expired => {
                "renew the server's certificate, or check this machine's clock".to_owned()
            }
            TlsProblem::NotValidYet => "check this machine's clock".to_owned(),
            TlsProblem::WrongName(_) => "use a host name the certificate was issued for in OLLAMA_HOST or `endpoint`, or reissue the certificate for this one".to_owned(),
            TlsProblem::BadSignature => format!(
                "if that CA was regenerated, point {CERT_FILE_VAR} at its current PEM file"
            ),
            TlsProblem::BadCertificate(_) => "fix the server's certificate, or ask whoever runs it".to_owned(),
            TlsProblem::Other { not_tls: true, .. } => "check that the server speaks https on this port (Ollama itself serves plain http: use an http:// endpoint for it, or put a TLS proxy in front)".to_owned(),
            TlsProblem::Other { not_tls: false, .. } => "check the server's TLS setup (a TLS 1.2 or 1.3 server with a certificate for this host name), or ask whoever runs it".to_owned(),
        }
    }
}
