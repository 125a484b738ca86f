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
    /// The change needs the node drained (the Calico network made again); nothing was changed.
    /// Apart from 2 so that an engine that drains nodes can tell it from a wrong input.
    NeedsDrain = 6,
}

/// Declares `Kind` and `Kind::ALL`, every kind in one list (the documentation test reads it).
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ident,)*) => {
        /// What kind of failure an error is, for automation: `error.kind` in the JSON document.
        /// The names are stable; docs/errors.md lists each with its exit code (a test keeps it
        /// complete).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Kind {
            $($(#[$doc])* $kind,)*
        }

        impl Kind {
            /// Every kind, for the documentation test.
            pub const ALL: &[Kind] = &[$(Kind::$kind),*];
        }
    };
}

kinds! {
    /// A failure no more specific kind describes.
    Failed,
    /// Bad flags or arguments.
    Usage,
    InvalidConfig,
    ConfigUnreadable,
    InvalidTemplate,
    /// Another calicoctl-win command holds the host lock.
    Locked,
    LockFailed,
    PreflightFailed,
    /// The adapter the vSwitch binds cannot be chosen for certain (none or several hold the
    /// node IP, another vSwitch's adapter holds it, a named one is missing).
    AdapterChoice,
    NoAdminKubeconfig,
    BadKubeconfig,
    ClusterUnreachable,
    /// The API server's answer is not JSON, longer than the cap, or not the JSON expected.
    ClusterBadAnswer,
    ClusterTimeout,
    /// The API server refused a request (forbidden, not found, conflict ...).
    ClusterRefused,
    /// A change that disconnects the node's pods was asked for without `--drain`.
    NeedsDrain,
    /// The VXLAN VNI differs from the cluster's FelixConfiguration.
    VniMismatch,
    /// Pods the drain would lose (no controller, emptyDir data) without the flag that allows it.
    DrainRefused,
    DrainTimeout,
    NodeNotReady,
    NotInstalled,
    /// Calico's NSSM-based install is on the node and `--migrate-legacy` was not given.
    LegacyInstall,
    NoServiceAccount,
    CredentialsMissing,
    TokenTimeout,
    EtcdCertificates,
    EtcdUnreachable,
    EtcdTimeout,
    ChecksumMismatch,
    ChecksumNeeded,
    PlainHttp,
    BadUrl,
    VersionMismatch,
    Downgrade,
    DownloadFailed,
    DownloadTimeout,
    BadRelease,
    /// A Calico service could not start or finish its start-up.
    ServiceFailed,
    /// A wait on the host (a service, CalicoNode's start-up, a network) timed out.
    Timeout,
    /// The External network's adapter held no stable address in time: the vSwitch was not made.
    AdapterAddress,
    /// `migrate` would break the node or its pods this way: nothing was changed.
    MigrationRefused,
    /// The operator's pod on the node did not come (or go) in time during `migrate`.
    OperatorPodTimeout,
    /// `lint policies` found policies to change.
    PolicyFindings,
    /// An object `lint policies` read is not one Calico would accept.
    InvalidInput,
    /// A file or directory `lint policies` was given cannot be read.
    InputUnreadable,
    /// `verify`: the node does not pass traffic (a check failed).
    TrafficFailed,
    /// `reconfigure --turn`: no turn of the fleet came within `--turn-timeout`.
    TurnTimeout,
}

impl Kind {
    /// The exit codes a failure of this kind comes with: what docs/errors.md lists
    /// (`tests/cli/docs.rs` compares them) and what every error of the kind must use (checked
    /// when a debug build makes the error).
    pub fn exits(self) -> &'static [Exit] {
        use Exit::{Busy, Failed, NeedsDrain, Preflight, Timeout, Usage};
        match self {
            Kind::Usage
            | Kind::InvalidConfig
            | Kind::ConfigUnreadable
            | Kind::InvalidTemplate
            | Kind::BadKubeconfig
            | Kind::VniMismatch
            | Kind::NotInstalled
            | Kind::LegacyInstall
            | Kind::ChecksumNeeded
            | Kind::PlainHttp
            | Kind::BadUrl
            | Kind::Downgrade
            | Kind::InvalidInput
            | Kind::InputUnreadable => &[Usage],
            Kind::Locked => &[Busy],
            Kind::PreflightFailed
            | Kind::AdapterChoice
            | Kind::PolicyFindings
            | Kind::MigrationRefused => &[Preflight],
            Kind::NoAdminKubeconfig | Kind::DrainRefused => &[Usage, Failed],
            Kind::ClusterUnreachable => &[Failed, Usage],
            Kind::ClusterTimeout
            | Kind::DrainTimeout
            | Kind::NodeNotReady
            | Kind::TokenTimeout
            | Kind::EtcdTimeout
            | Kind::DownloadTimeout
            | Kind::Timeout
            | Kind::AdapterAddress
            | Kind::OperatorPodTimeout
            | Kind::TurnTimeout => &[Timeout],
            Kind::NeedsDrain => &[NeedsDrain],
            Kind::Failed
            | Kind::LockFailed
            | Kind::ClusterBadAnswer
            | Kind::ClusterRefused
            | Kind::NoServiceAccount
            | Kind::CredentialsMissing
            | Kind::EtcdCertificates
            | Kind::EtcdUnreachable
            | Kind::ChecksumMismatch
            | Kind::VersionMismatch
            | Kind::DownloadFailed
            | Kind::BadRelease
            | Kind::ServiceFailed
            | Kind::TrafficFailed => &[Failed],
        }
    }

    /// The name in JSON (`needs-drain`).
    pub fn name(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// Bad input detected by a command itself (exit code 2).
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct UsageError {
    pub message: String,
    pub hint: Option<String>,
    pub kind: Kind,
}

impl UsageError {
    pub fn new(message: impl Into<String>, hint: impl Into<String>) -> Self {
        Self {
            message: message.into(),
            hint: Some(hint.into()),
            kind: Kind::Usage,
        }
    }

    /// The same error, of a more specific kind than `usage`.
    pub fn of_kind(mut self, kind: Kind) -> Self {
        self.kind = kind;
        self
    }
}

/// A failed command, ready to be shown to the user.
pub struct CliError {
    pub exit: Exit,
    pub kind: Kind,
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
/// layer lists the types (`commands::known_errors::KNOWN_ERRORS`).
pub trait Diagnose: std::error::Error + 'static {
    /// `None` leaves the decision to a cause further down the chain.
    fn diagnose(&self) -> Option<Diagnosis>;
}

/// An exit code, the kind of failure and the hint shown under the error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnosis {
    pub exit: Exit,
    pub kind: Kind,
    pub hint: Option<String>,
}

impl Diagnosis {
    pub fn new(exit: Exit, kind: Kind, hint: impl Into<String>) -> Option<Self> {
        Some(Self {
            exit,
            kind,
            hint: Some(hint.into()),
        })
    }

    /// `Timeout` when `timed_out`, else `Failed`.
    pub fn failed_or_timeout(timed_out: bool, kind: Kind, hint: Option<String>) -> Option<Self> {
        let exit = if timed_out {
            Exit::Timeout
        } else {
            Exit::Failed
        };
        Some(Self { exit, kind, hint })
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
            exit: if self.kind == Kind::NeedsDrain {
                Exit::NeedsDrain
            } else {
                Exit::Usage
            },
            kind: self.kind,
            hint: self.hint.clone(),
        })
    }
}

impl CliError {
    /// The exit code and hint of `error` (`diagnosis`).
    pub fn new(error: anyhow::Error, known: &[Recogniser]) -> Self {
        let d = diagnosis(&error, known);
        debug_assert!(
            d.kind.exits().contains(&d.exit),
            "{:?} came with exit {:?}, which Kind::exits (and docs/errors.md) does not list: {error:#}",
            d.kind,
            d.exit
        );
        Self {
            exit: d.exit,
            kind: d.kind,
            error,
            hint: d.hint,
        }
    }
}

/// The diagnosis of the outermost error in `error`'s chain that one of `known` diagnoses; a
/// failure without a hint when none does.
pub fn diagnosis(error: &anyhow::Error, known: &[Recogniser]) -> Diagnosis {
    error
        .chain()
        .find_map(|cause| known.iter().find_map(|r| r(cause)))
        .unwrap_or(Diagnosis {
            exit: Exit::Failed,
            kind: Kind::Failed,
            hint: None,
        })
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
