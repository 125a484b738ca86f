//! The etcd client TLS files: checked as PEM, the key against the certificate, and against
//! etcd itself (`GET /health` over mutual TLS, bounded in time).

use crate::net::resolve;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

/// The most of etcd's /health answer that is read (docs/security.md).
pub const HEALTH_CAP: u64 = 64 << 10;

/// The files under `<install_root>\\etcd-tls` as Calico's quickstart wrote them: the secret's
/// key, the file, the setting naming it.
pub const TLS_FILES: [(&str, &str, &str); 3] = [
    ("etcd-key", "server.key", "etcd.key_file"),
    ("etcd-cert", "server.crt", "etcd.cert_file"),
    ("etcd-ca", "ca.crt", "etcd.ca_cert_file"),
];

/// The three files from a secret (like `calico-etcd-secrets`), not yet checked.
pub fn files_from_secret(
    c: &crate::cluster::Cluster,
    namespace: &str,
    name: &str,
) -> anyhow::Result<EtcdTlsFiles> {
    let mut data = crate::cluster::token::credentials::secret_data(c, namespace, name)?;
    let mut take = |key: &str| {
        data.remove(key).ok_or_else(|| {
            crate::cluster::token::credentials::CredentialError::MissingKey {
                namespace: namespace.into(),
                name: name.into(),
                key: key.into(),
            }
        })
    };
    Ok(EtcdTlsFiles {
        key: take("etcd-key")?,
        cert: take("etcd-cert")?,
        ca: take("etcd-ca")?,
    })
}

/// The three files, as PEM text.
pub struct EtcdTlsFiles {
    pub key: Vec<u8>,
    pub cert: Vec<u8>,
    pub ca: Vec<u8>,
}

impl EtcdTlsFiles {
    /// The contents in the order of `TLS_FILES`.
    pub fn in_order(&self) -> [&[u8]; 3] {
        [&self.key, &self.cert, &self.ca]
    }
}

impl std::fmt::Debug for EtcdTlsFiles {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EtcdTlsFiles { key: <redacted>, .. }")
    }
}

/// What is wrong with the files or with etcd's answer.
#[derive(Debug, thiserror::Error)]
pub enum EtcdError {
    #[error("{what} is not PEM ({why})")]
    NotPem { what: String, why: String },
    #[error("the client key does not belong to the client certificate ({0})")]
    KeyMismatch(String),
    #[error("{endpoint} is not an etcd URL like https://10.0.0.5:2379")]
    BadEndpoint { endpoint: String },
    #[error("etcd at {endpoint} refused the client certificate ({why})")]
    ClientCertRefused { endpoint: String, why: String },
    #[error("etcd at {endpoint} has a certificate that etcd-ca does not sign ({why})")]
    ServerCertUntrusted { endpoint: String, why: String },
    #[error("etcd at {endpoint} did not answer within {}s", .after.as_secs())]
    Timeout { endpoint: String, after: Duration },
    #[error("cannot reach etcd at {endpoint}: {why}")]
    Unreachable { endpoint: String, why: String },
    #[error("etcd at {endpoint} is not healthy: {answer}")]
    Unhealthy { endpoint: String, answer: String },
}

impl EtcdError {
    pub fn hint(&self) -> &'static str {
        match self {
            EtcdError::NotPem { .. } | EtcdError::KeyMismatch(_) => {
                "put the client key (etcd-key), its certificate (etcd-cert) and the etcd CA (etcd-ca) into the secret as PEM"
            }
            EtcdError::BadEndpoint { .. } => "set etcd.endpoints to https://HOST:PORT URLs",
            EtcdError::ClientCertRefused { .. } => {
                "the client certificate must be signed by a CA that etcd trusts (its --trusted-ca-file)"
            }
            EtcdError::ServerCertUntrusted { .. } => {
                "etcd-ca must be the CA that signed etcd's server certificate, and the certificate must name the endpoint's host"
            }
            EtcdError::Timeout { .. } | EtcdError::Unreachable { .. } => {
                "check etcd.endpoints and that this node can reach etcd's client port"
            }
            EtcdError::Unhealthy { .. } => "check etcd's own logs and 'etcdctl endpoint health'",
        }
    }
}

fn not_pem(what: &str, why: impl ToString) -> EtcdError {
    EtcdError::NotPem {
        what: what.into(),
        why: why.to_string(),
    }
}

fn certs(what: &str, pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, EtcdError> {
    let certs = CertificateDer::pem_slice_iter(pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| not_pem(what, e))?;
    if certs.is_empty() {
        return Err(not_pem(what, "no CERTIFICATE block"));
    }
    Ok(certs)
}

fn key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, EtcdError> {
    PrivateKeyDer::from_pem_slice(pem).map_err(|e| not_pem("etcd-key", e))
}

/// Checks that each file is PEM of the right kind and that key and certificate match.
pub fn check_files(files: &EtcdTlsFiles) -> Result<(), EtcdError> {
    let chain = certs("etcd-cert", &files.cert)?;
    certs("etcd-ca", &files.ca)?;
    let key = key(&files.key)?;
    let provider = rustls::crypto::ring::default_provider();
    let signer = provider
        .key_provider
        .load_private_key(key)
        .map_err(|e| not_pem("etcd-key", e))?;
    match rustls::sign::CertifiedKey::new(chain, signer).keys_match() {
        Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => Ok(()),
        Err(e @ rustls::Error::InconsistentKeys(_)) => Err(EtcdError::KeyMismatch(e.to_string())),
        Err(e) => Err(not_pem(
            "etcd-cert",
            format!("not a valid certificate: {e}"),
        )),
    }
}

/// `GET /health` on one endpoint over mutual TLS, within `timeout` in all.
pub fn health(endpoint: &str, files: &EtcdTlsFiles, timeout: Duration) -> Result<(), EtcdError> {
    let bad = || EtcdError::BadEndpoint {
        endpoint: endpoint.into(),
    };
    let rest = endpoint.strip_prefix("https://").ok_or_else(bad)?;
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = authority.rsplit_once(':').ok_or_else(bad)?;
    let port: u16 = port.parse().map_err(|_| bad())?;
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let unreachable = |why: String| EtcdError::Unreachable {
        endpoint: endpoint.into(),
        why,
    };

    let mut roots = rustls::RootCertStore::empty();
    for c in certs("etcd-ca", &files.ca)? {
        roots.add(c).map_err(|e| not_pem("etcd-ca", e))?;
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| unreachable(e.to_string()))?
    .with_root_certificates(roots)
    .with_client_auth_cert(certs("etcd-cert", &files.cert)?, key(&files.key)?)
    .map_err(|e| EtcdError::KeyMismatch(e.to_string()))?;
    let name = ServerName::try_from(host.to_owned()).map_err(|_| bad())?;
    let tls = rustls::ClientConnection::new(Arc::new(config), name)
        .map_err(|e| unreachable(e.to_string()))?;

    let timed_out = || EtcdError::Timeout {
        endpoint: endpoint.into(),
        after: timeout,
    };
    let addr = resolve(host, port, timeout)
        .ok_or_else(timed_out)?
        .map_err(|e| unreachable(e.to_string()))?
        .ok_or_else(|| unreachable("the name has no address".into()))?;
    let tcp = TcpStream::connect_timeout(&addr, timeout).map_err(|e| match e.kind() {
        std::io::ErrorKind::TimedOut => timed_out(),
        _ => unreachable(e.to_string()),
    })?;
    let _ = tcp.set_read_timeout(Some(timeout));
    let _ = tcp.set_write_timeout(Some(timeout));
    let mut stream = rustls::StreamOwned::new(tls, tcp);
    let request = crate::http1::request(
        "GET",
        "/health",
        authority,
        &[("User-Agent", "calicoctl-win")],
    );
    // etcd's /health answer is a few dozen bytes: more than the cap is not etcd's.
    let deadline = std::time::Instant::now() + timeout.saturating_mul(2);
    let answer = crate::http1::exchange(&mut stream, &request, HEALTH_CAP, deadline)
        .map_err(|e| classify(endpoint, e, timed_out))?;
    let text = String::from_utf8_lossy(&answer);
    let parsed = crate::http1::parse(&answer);
    let ok_status = parsed.as_ref().is_some_and(|a| a.code == 200);
    let body = parsed.map(|a| a.body).unwrap_or_default();
    let healthy = body.replace(' ', "").contains("\"health\":\"true\"");
    if ok_status && healthy {
        Ok(())
    } else {
        Err(EtcdError::Unhealthy {
            endpoint: endpoint.into(),
            answer: text.lines().next().unwrap_or("no answer").to_owned()
                + if body.is_empty() { "" } else { ": " }
                + body.trim(),
        })
    }
}

/// Names the TLS failure: a refused client certificate, an untrusted server, a timeout.
fn classify(endpoint: &str, e: std::io::Error, timed_out: impl Fn() -> EtcdError) -> EtcdError {
    use rustls::AlertDescription as A;
    if matches!(
        e.kind(),
        std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
    ) {
        return timed_out();
    }
    let why = e.to_string();
    let tls = e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>());
    match tls {
        Some(rustls::Error::AlertReceived(
            A::BadCertificate
            | A::UnknownCA
            | A::CertificateRequired
            | A::UnsupportedCertificate
            | A::CertificateUnknown
            | A::AccessDenied
            | A::DecryptError,
        )) => EtcdError::ClientCertRefused {
            endpoint: endpoint.into(),
            why,
        },
        Some(rustls::Error::InvalidCertificate(_)) => EtcdError::ServerCertUntrusted {
            endpoint: endpoint.into(),
            why,
        },
        // A connection dropped in the handshake without an alert: refused, as far as seen.
        _ if e.kind() == std::io::ErrorKind::ConnectionReset => EtcdError::ClientCertRefused {
            endpoint: endpoint.into(),
            why,
        },
        _ => EtcdError::Unreachable {
            endpoint: endpoint.into(),
            why,
        },
    }
}

impl crate::error::Diagnose for EtcdError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::Kind;
        let kind = match self {
            Self::Timeout { .. } => Kind::EtcdTimeout,
            Self::BadEndpoint { .. } | Self::Unreachable { .. } | Self::Unhealthy { .. } => {
                Kind::EtcdUnreachable
            }
            _ => Kind::EtcdCertificates,
        };
        crate::error::Diagnosis::failed_or_timeout(
            matches!(self, Self::Timeout { .. }),
            kind,
            Some(self.hint().into()),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_that_are_not_pem_are_named_and_the_key_is_not_shown() {
        let files = EtcdTlsFiles {
            key: b"not a key".to_vec(),
            cert: b"-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n".to_vec(),
            ca: b"garbage".to_vec(),
        };
        let e = check_files(&files).expect_err("garbage must be refused");
        assert!(e.to_string().contains("etcd-ca is not PEM"), "{e}");
        assert!(!format!("{files:?}").contains("not a key"));
    }

    #[test]
    fn endpoints_must_be_https_urls_with_a_port() {
        let files = EtcdTlsFiles {
            key: Vec::new(),
            cert: Vec::new(),
            ca: Vec::new(),
        };
        for bad in [
            "http://127.0.0.1:2379",
            "https://127.0.0.1",
            "https://h:port",
        ] {
            let e = health(bad, &files, Duration::from_secs(1)).expect_err(bad);
            assert!(matches!(e, EtcdError::BadEndpoint { .. }), "{bad}: {e}");
        }
    }
}
