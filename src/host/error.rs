//! What a host call can fail with, and the Windows error codes in its text.

use std::time::Duration;

/// What a host call can fail with. An OS error keeps its code and message in its own text
/// (`... Access is denied. (os error 5)`), not as a `source` that `{e}` would drop.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("{what} does not exist")]
    NotFound { what: String },
    #[error("{what} already exists")]
    Exists { what: String },
    /// The host refused the call in its current state (a running service cannot be deleted).
    #[error("{what}: {reason}")]
    Refused { what: String, reason: String },
    /// A whole subsystem is missing, like HNS without the Containers feature.
    #[error("{what} is not available on this host: {reason}")]
    Unavailable { what: String, reason: String },
    #[error("timed out after {}s waiting for {what}", .after.as_secs())]
    Timeout { what: String, after: Duration },
    /// An I/O call failed: the operation and its object, then the OS's message and code.
    #[error("{op}: {error}")]
    Io { op: String, error: std::io::Error },
    /// A Windows API returned an error code: a Win32 error (`os error 5`) or an HRESULT.
    #[error("{op}: {message} ({})", code_text(*.code))]
    Api {
        op: String,
        code: u32,
        message: String,
    },
    /// SimHost's fault injection (tests only).
    #[error("simulated failure injected at mutating call {n} ({op})")]
    Injected { n: u64, op: String },
}

/// A Windows error code as Windows tools print it: `os error 5`, or an HRESULT in hex.
pub(crate) fn code_text(code: u32) -> String {
    if code <= 0xFFFF {
        format!("os error {code}")
    } else {
        format!("HRESULT {code:#010x}")
    }
}

impl HostError {
    pub fn io(op: impl Into<String>, error: std::io::Error) -> Self {
        Self::Io {
            op: op.into(),
            error,
        }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::NotFound { what: what.into() }
    }

    pub fn exists(what: impl Into<String>) -> Self {
        Self::Exists { what: what.into() }
    }

    pub fn refused(what: impl Into<String>, reason: impl Into<String>) -> Self {
        Self::Refused {
            what: what.into(),
            reason: reason.into(),
        }
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, Self::NotFound { .. })
    }

    /// The OS's error code, when the OS refused the call.
    pub fn os_code(&self) -> Option<u32> {
        match self {
            Self::Io { error, .. } => error.raw_os_error().map(|c| c as u32),
            Self::Api { code, .. } => Some(*code),
            _ => None,
        }
    }
}

pub type HostResult<T> = Result<T, HostError>;

impl crate::error::Diagnose for HostError {
    /// Only a timeout is diagnosed here; other host errors leave it to their causes.
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        matches!(self, Self::Timeout { .. }).then(|| crate::error::Diagnosis {
            exit: crate::error::Exit::Timeout,
            kind: crate::error::Kind::Timeout,
            hint: Some("the service logs under the logs directory (calico-node.log) say what it is waiting for; a longer --wait-timeout gives it more time".into()),
        })
    }
}
