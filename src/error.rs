//! Exit codes and the error a command returns: what failed, why, and what to do about it.

use std::fmt;

/// The process exit codes (README "Exit codes").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    Ok = 0,
    /// The operation failed.
    Failed = 1,
    /// Bad usage or bad configuration; nothing was changed.
    Usage = 2,
    /// A preflight check found a blocking problem; nothing was changed.
    Preflight = 3,
    /// A wait or a call timed out.
    Timeout = 4,
    /// Another calicoctl-win command is changing the host; nothing was changed.
    Busy = 5,
}

/// Bad input detected by a command itself (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UsageError {
    pub message: String,
    pub hint: Option<String>,
}

impl UsageError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: Some(hint.into()),
        }
    }
}

/// A failed command, ready to be shown to the user.
pub struct CliError {
    pub exit: Exit,
    pub error: anyhow::Error,
    pub hint: Option<String>,
}

impl fmt::Debug for CliError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?} ({:?})", self.error, self.exit)
    }
}

/// What a domain error adds to its message: the exit code and what to do about it. Each error
/// type implements it beside its definition; this module knows only the trait, and the command
/// layer lists the types (`commands::KNOWN_ERRORS`).
pub trait Diagnose: std::error::Error + 'static {
    /// `None` leaves the decision to a cause further down the chain.
    fn diagnose(&self) -> Option<Diagnosis>;
}

/// An exit code and the hint shown under the error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    pub exit: Exit,
    pub hint: Option<String>,
}

impl Diagnosis {
    pub fn new(exit: Exit, hint: impl Into<String>) -> Option<Self> {
        Some(Self {
            exit,
            hint: Some(hint.into()),
        })
    }

    /// An exit code without a hint.
    pub fn bare(exit: Exit) -> Option<Self> {
        Some(Self { exit, hint: None })
    }

    /// `Timeout` when `timed_out`, else `Failed`.
    pub fn failed_or_timeout(timed_out: bool, hint: Option<String>) -> Option<Self> {
        let exit = if timed_out {
            Exit::Timeout
        } else {
            Exit::Failed
        };
        Some(Self { exit, hint })
    }
}

/// Finds errors of one type in a chain: `recognise::<T>`.
pub type Recogniser = fn(&(dyn std::error::Error + 'static)) -> Option<Diagnosis>;

/// The diagnosis of `e` when it is a `T`.
pub fn recognise<T: Diagnose>(e: &(dyn std::error::Error + 'static)) -> Option<Diagnosis> {
    e.downcast_ref::<T>().and_then(Diagnose::diagnose)
}

impl Diagnose for UsageError {
    fn diagnose(&self) -> Option<Diagnosis> {
        Some(Diagnosis {
            exit: Exit::Usage,
            hint: self.hint.clone(),
        })
    }
}

impl CliError {
    /// The exit code and hint of the outermost error in `error`'s chain that one of `known`
    /// diagnoses; a failure without a hint when none does.
    pub fn new(error: anyhow::Error, known: &[Recogniser]) -> Self {
        let d = error
            .chain()
            .find_map(|cause| known.iter().find_map(|r| r(cause)))
            .unwrap_or(Diagnosis {
                exit: Exit::Failed,
                hint: None,
            });
        Self {
            exit: d.exit,
            error,
            hint: d.hint,
        }
    }
}

/// An error and its causes on one line, `outer: inner: root`.
pub fn chain(e: &dyn std::error::Error) -> String {
    let mut out = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        out.push_str(": ");
        out.push_str(&c.to_string());
        cause = c.source();
    }
    out
}
