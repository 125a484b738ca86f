//! Exit codes and the error a command returns: what failed, why, and what to do about it.

use crate::config::{ConfigError, Problem};
use crate::render::RenderError;
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

impl From<anyhow::Error> for CliError {
    fn from(error: anyhow::Error) -> Self {
        let (exit, hint) = classify(&error);
        Self { exit, error, hint }
    }
}

/// Finds the exit code and hint for an error from the typed errors in its chain.
fn classify(error: &anyhow::Error) -> (Exit, Option<String>) {
    for cause in error.chain() {
        if let Some(e) = cause.downcast_ref::<ConfigError>() {
            let hint = match e {
                ConfigError::Invalid { file: Some(f), .. } => format!(
                    "fix these settings in {} or override them with --set KEY=VALUE; 'calicoctl-win config show' lists every setting and its source",
                    f.display()
                ),
                ConfigError::Invalid { file: None, .. } => "override settings with --set KEY=VALUE, or write them in a file passed with --config; docs/configuration.md lists every key".into(),
                ConfigError::Read { .. } => "pass an existing file with --config, or leave --config out to use the built-in defaults".into(),
            };
            return (Exit::Usage, Some(hint));
        }
        if let Some(e) = cause.downcast_ref::<RenderError>() {
            let hint = match e {
                RenderError::Template { .. } | RenderError::NotJson { .. } => {
                    "check the template given in cni.template, or unset it to use the built-in template"
                }
                RenderError::NameClash(_) => {
                    "set cni.conf_filename to another name, like 10-calico.conf"
                }
            };
            return (Exit::Usage, Some(hint.into()));
        }
        if let Some(e) = cause.downcast_ref::<crate::host::lock::LockError>() {
            let exit = match e {
                crate::host::lock::LockError::Busy { .. } => Exit::Busy,
                crate::host::lock::LockError::Io { .. } => Exit::Failed,
            };
            return (exit, Some(e.hint()));
        }
        if cause.downcast_ref::<crate::checks::Blocked>().is_some() {
            return (
                Exit::Preflight,
                Some("fix the failed checks with the commands shown, or accept a known failure with --skip ID".into()),
            );
        }
        if let Some(e) = cause.downcast_ref::<crate::cluster::ClusterError>() {
            let exit = match e {
                crate::cluster::ClusterError::Timeout { .. } => Exit::Timeout,
                _ => Exit::Failed,
            };
            return (exit, Some(e.hint()));
        }
        if let Some(e) = cause.downcast_ref::<crate::cluster::drain::DrainError>() {
            let exit = if e.is_timeout() {
                Exit::Timeout
            } else {
                Exit::Failed
            };
            return (exit, Some(e.hint()));
        }
        if let Some(e) = cause.downcast_ref::<crate::cluster::credentials::CredentialError>() {
            let exit = match e {
                crate::cluster::credentials::CredentialError::TokenNotFilled { .. } => {
                    Exit::Timeout
                }
                _ => Exit::Failed,
            };
            return (exit, Some(e.hint()));
        }
        if let Some(e) = cause.downcast_ref::<crate::cluster::etcd::EtcdError>() {
            let exit = match e {
                crate::cluster::etcd::EtcdError::Timeout { .. } => Exit::Timeout,
                _ => Exit::Failed,
            };
            return (exit, Some(e.hint().into()));
        }
        if let Some(e) = cause.downcast_ref::<crate::supervise::SuperviseError>() {
            let exit = if e.is_timeout() {
                Exit::Timeout
            } else {
                Exit::Failed
            };
            return (exit, e.hint().map(str::to_owned));
        }
        if let Some(e) = cause.downcast_ref::<UsageError>() {
            return (Exit::Usage, e.hint.clone());
        }
        if let Some(e) = cause.downcast_ref::<crate::release::ReleaseError>() {
            use crate::release::ReleaseError as R;
            let exit = match e {
                R::Timeout { .. } => Exit::Timeout,
                R::BadChecksumArg(_)
                | R::BadUrl { .. }
                | R::NeedChecksum { .. }
                | R::PlainHttp { .. }
                | R::Downgrade { .. } => Exit::Usage,
                _ => Exit::Failed,
            };
            return (exit, e.hint().map(str::to_owned));
        }
        if let Some(crate::host::HostError::Timeout { .. }) = cause.downcast_ref() {
            return (
                Exit::Timeout,
                Some("the service logs under the logs directory (calico-node.log) say what it is waiting for; a longer --wait-timeout gives it more time".into()),
            );
        }
    }
    (Exit::Failed, None)
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

impl CliError {
    /// The configuration problems carried by this error, if any.
    pub fn problems(&self) -> &[Problem] {
        self.error
            .chain()
            .find_map(|c| match c.downcast_ref::<ConfigError>() {
                Some(ConfigError::Invalid { problems, .. }) => Some(problems.as_slice()),
                _ => None,
            })
            .unwrap_or(&[])
    }
}
