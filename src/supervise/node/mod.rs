//! CalicoNode: the start-up after a boot, then calico-node startup whenever kubelet restarts
//! (`node-service.ps1`, reference §3.2 and §3.6–3.7, with every wait bounded): the start-up
//! (startup.rs), the External vSwitch (vswitch.rs), the routes it drops (routes.rs) and the
//! service's watch over kubelet (watch.rs).

mod routes;
mod startup;
mod vswitch;
mod watch;

pub use crate::installed::boot_marker::init_done;
pub use startup::{StartPhase, start_phase};
pub use watch::run;

#[cfg(all(test, unix))]
pub(super) use {vswitch::Uplink, watch::AddressWatch};
