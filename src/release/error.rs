//! Why a release could not be used, with a hint for each reason.

use crate::redact::shown;
use std::time::Duration;

/// Why a release could not be used. Nothing is left behind when one occurs. A URL is shown
/// with its secrets hidden (`redact::shown`), in `Debug` too: `--release-zip` may be a SAS URL,
/// its `sig=` a credential to the storage account.
#[derive(thiserror::Error)]
pub enum ReleaseError {
    #[error("--sha256 {0:?} is not a SHA-256 checksum (64 hexadecimal digits)")]
    BadChecksumArg(String),
    #[error("downloading {} needs the release's SHA-256 checksum", shown(url))]
    NeedChecksum { url: String },
    #[error("{:?} is not a valid URL: {message}", shown(url))]
    BadUrl { url: String, message: String },
    #[error(
        "{} is plain HTTP: the release could be altered on the way",
        shown(url)
    )]
    PlainHttp { url: String },
    #[error("cannot download {}", shown(url))]
    Download {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{} answered {status}", shown(url))]
    Status { url: String, status: u16 },
    #[error("{}", timeout_text(&shown(url), *idle, *after))]
    Timeout {
        url: String,
        after: Duration,
        /// The idle limit fired (no data for `after`), not the total one.
        idle: bool,
    },
    #[error("{what} has SHA-256 {actual}, not {expected} as asked")]
    Checksum {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("{what} is Calico {found}, not {asked} as asked")]
    Version {
        what: String,
        found: String,
        asked: String,
    },
    #[error("{what} is Calico {found}, older than the cluster's Calico {cluster}: a downgrade")]
    Downgrade {
        what: String,
        found: String,
        cluster: String,
    },
    #[error("{what} is not a readable zip archive")]
    Zip {
        what: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("{what}: entry {entry:?} {why}")]
    Unsafe {
        what: String,
        entry: String,
        why: &'static str,
    },
    #[error("{what} expands to more than {} MB", .cap >> 20)]
    TooLarge { what: String, cap: u64 },
    #[error("{what} is not a Calico for Windows release: {why}")]
    Layout { what: String, why: String },
    #[error(
        "--release-zip {what}: it is not a regular file (missing, a directory, a pipe or a device)"
    )]
    NotAFile { what: String },
    #[error("{op}")]
    Io {
        op: String,
        #[source]
        source: std::io::Error,
    },
}

impl ReleaseError {
    pub fn io(op: impl Into<String>, source: std::io::Error) -> Self {
        Self::Io {
            op: op.into(),
            source,
        }
    }

    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            Self::BadChecksumArg(_) => "copy the checksum from the release's SHA256SUMS",
            Self::NeedChecksum { .. } => {
                "no SHA256SUMS beside it names the zip: pass --sha256 HEX from the release page, or --insecure-skip-checksum to trust the download as it is"
            }
            Self::BadUrl { .. } => "write it like https://host/path/calico-windows-v3.30.2.zip",
            Self::PlainHttp { .. } => {
                "use an https:// URL, or pass --allow-http for a mirror you trust on your own network"
            }
            Self::Timeout { idle: true, .. } => {
                "the server stopped sending: the partial file is resumed by the next run; on a slow link raise --download-idle-timeout, or download the zip yourself and pass --release-zip FILE"
            }
            Self::Timeout { idle: false, .. } => {
                "the partial file is resumed by the next run; raise --download-timeout for a slow link, or download the zip yourself and pass --release-zip FILE"
            }
            Self::Download { source, .. } if is_ca_as_server_certificate(source) => {
                "the server presents a CA certificate (basic constraints CA:TRUE) as its own, which TLS refuses even when that CA is trusted: give the server a certificate issued by the CA for its name (a server certificate, CA:FALSE) and pass the CA with --release-ca-cert"
            }
            Self::Download { .. } | Self::Status { .. } => {
                "check the URL, the proxy (HTTPS_PROXY and NO_PROXY, else the WinHTTP proxy: netsh winhttp show proxy) and --release-ca-cert; or download the zip yourself and pass --release-zip FILE"
            }
            Self::Checksum { .. } => {
                "the file is not the release you named: download it again, or check --sha256"
            }
            Self::Version { .. } => {
                "pass the zip of that version, or the matching --calico-version"
            }
            Self::Downgrade { .. } => {
                "install the cluster's version (leave out --calico-version to get it), or pass --allow-downgrade if an older release on this node is what you want"
            }
            Self::Zip { .. }
            | Self::Unsafe { .. }
            | Self::TooLarge { .. }
            | Self::Layout { .. } => "use the calico-windows-vX.Y.Z.zip asset of a Calico release",
            Self::NotAFile { .. } => {
                "pass the path of the release zip, or an https:// URL with --sha256"
            }
            Self::Io { .. } => return None,
        })
    }
}

/// Whether a download failed because the server's certificate is a CA certificate
/// (webpki's `CaUsedAsEndEntity`): a mirror set up with its CA as its own certificate.
fn is_ca_as_server_certificate(e: &reqwest::Error) -> bool {
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = cur {
        // An io::Error's `source` skips the error it wraps (which may be another io::Error,
        // as tokio-rustls's is inside hyper's): look inside each one.
        let mut inner = Some(err);
        while let Some(e) = inner {
            if let Some(rustls::Error::InvalidCertificate(rustls::CertificateError::Other(other))) =
                e.downcast_ref::<rustls::Error>()
            {
                return matches!(
                    other.0.downcast_ref::<webpki::Error>(),
                    Some(webpki::Error::CaUsedAsEndEntity)
                );
            }
            inner = e
                .downcast_ref::<std::io::Error>()
                .and_then(|io| io.get_ref())
                .map(|i| i as &(dyn std::error::Error + 'static));
        }
        cur = err.source();
    }
    false
}

impl std::fmt::Debug for ReleaseError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "ReleaseError({self})")
    }
}

/// What a download timeout says: which limit fired, with its flag and value.
fn timeout_text(url: &str, idle: bool, after: Duration) -> String {
    let after = crate::duration::show(after);
    if idle {
        format!(
            "the download of {url} received nothing for {after} (--download-idle-timeout {after})"
        )
    } else {
        format!("the download of {url} did not finish within --download-timeout {after}")
    }
}
