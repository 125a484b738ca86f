//! Every error type that knows its exit code and hint, and the error a command failed with,
//! read against them (a type missing here would become exit 1 with no hint:
//! `tests/structure.rs` fails it).

use crate::error::{CliError, Recogniser, recognise};

/// Every error type that knows its exit code and hint (`error::Diagnose`).
const KNOWN_ERRORS: &[Recogniser] = &[
    recognise::<crate::config::ConfigError>,
    recognise::<crate::render::RenderError>,
    recognise::<crate::host::lock::LockError>,
    recognise::<crate::checks::Blocked>,
    recognise::<crate::cluster::ClusterError>,
    recognise::<crate::cluster::drain::DrainError>,
    recognise::<crate::cluster::credentials::CredentialError>,
    recognise::<crate::cluster::etcd::EtcdError>,
    recognise::<crate::supervise::SuperviseError>,
    recognise::<crate::error::UsageError>,
    recognise::<crate::release::ReleaseError>,
    recognise::<crate::apply::ReadyError>,
    recognise::<crate::host::HostError>,
    recognise::<crate::policy::PolicyError>,
    recognise::<crate::commands::lint::Findings>,
    recognise::<crate::files::OutFileError>,
    recognise::<crate::cluster::credentials::TokenFileError>,
    recognise::<crate::host::uplink::ChoiceError>,
    recognise::<crate::cluster::operator::OperatorError>,
    recognise::<crate::cluster::installation::PatchError>,
    recognise::<crate::plan::migrate::Refused>,
    recognise::<crate::verify::failure::Failed>,
    recognise::<crate::commands::fleet_diags::NotGathered>,
    recognise::<crate::verify::matrix::PlanError>,
    recognise::<super::verify_restarted::NotReady>,
    recognise::<crate::fleet::turn::TurnError>,
];

/// The error a command failed with, with its exit code and hint.
pub fn failure(error: anyhow::Error) -> CliError {
    CliError::new(error, KNOWN_ERRORS)
}

/// The kind of the error a command failed with, as its JSON says it (`error.kind`).
pub fn failure_kind(error: &anyhow::Error) -> crate::error::Kind {
    crate::error::diagnosis(error, KNOWN_ERRORS).kind
}
