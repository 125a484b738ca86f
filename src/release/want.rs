//! What the user asked for: the zip's source, its checksum and the limits of its download.

use super::error::ReleaseError;
use std::path::PathBuf;
use std::time::Duration;

/// Where the zip comes from. Its `Debug` is `show`'s: a URL's credential hidden.
#[derive(Clone, PartialEq, Eq)]
pub enum Source {
    Path(PathBuf),
    Url(String),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Source({})", self.show())
    }
}

impl Source {
    /// `--release-zip` as given: `http(s)://` is a URL, anything else a file.
    pub fn parse(s: &str) -> Self {
        let lower = s.to_ascii_lowercase();
        if lower.starts_with("https://") || lower.starts_with("http://") {
            Self::Url(s.to_owned())
        } else {
            Self::Path(PathBuf::from(s))
        }
    }

    /// The zip as said in output: a URL with its secrets hidden (a SAS URL's `sig=`).
    pub fn show(&self) -> String {
        match self {
            Self::Path(p) => p.display().to_string(),
            Self::Url(u) => crate::redact::shown(u),
        }
    }

    /// A downloaded zip's name in the cache: the URL's (`calico-windows-v3.30.0.zip`). A zip
    /// given as a file is not cached.
    pub fn file_name(&self) -> String {
        let name = match self {
            Self::Path(_) => "",
            Self::Url(u) => u.split(['?', '#']).next().unwrap_or_default(),
        };
        match name.rsplit('/').next().unwrap_or_default() {
            "" | ".." => "calico-windows.zip".into(),
            n if n.contains(['\\', ':']) => "calico-windows.zip".into(),
            n => n.to_owned(),
        }
    }
}

/// What the user asked for.
#[derive(Clone, Debug)]
pub struct Want {
    pub source: Source,
    /// Whether the version was chosen (`--calico-version` or `--release-zip`); if not, the
    /// cluster's version replaces the built-in default.
    pub chosen: bool,
    /// Expected SHA-256, lower-case hex.
    pub sha256: Option<String>,
    /// The version asked for, without a leading `v`.
    pub version: Option<String>,
    pub allow_http: bool,
    pub skip_checksum: bool,
    /// Extra trusted CA certificates (PEM) for the download.
    pub ca_pem: Option<Vec<u8>>,
    /// The whole download (`--download-timeout`).
    pub timeout: Duration,
    /// Without a byte received (`--download-idle-timeout`): a stalled server.
    pub idle_timeout: Duration,
}

/// A checked `--sha256` value (`HEX` or `sha256:HEX`), lower case.
pub fn parse_sha256(s: &str) -> Result<String, ReleaseError> {
    let s = s.trim().to_ascii_lowercase();
    let s = s.strip_prefix("sha256:").unwrap_or(&s).to_owned();
    if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s)
    } else {
        Err(ReleaseError::BadChecksumArg(s))
    }
}
