//! CalicoNode (`node-service.ps1`, reference §3.2, §3.6–3.7): start-up, the External vSwitch,
//! routes, and the watch over kubelet.

mod routes;
mod startup;
mod vswitch;
mod watch;

pub use crate::installed::boot_marker::init_done;
pub use startup::{StartPhase, start_phase};
pub use watch::run;

#[cfg(all(test, unix))]
pub(super) use {vswitch::Uplink, watch::AddressWatch};
