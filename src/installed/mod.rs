//! What install leaves on the host and the services report, read and written through `Host`:
//! the install record (and the node annotations it gives), the file stats with the host hash
//! helper, the routes from before the vSwitch, CalicoNode's start failures, the platform
//! facts (AKS, EC2, ...) the services and install read alike, and the health of the HNS
//! endpoints the pods were given.

pub mod boot_marker;
pub mod endpoints;
pub mod failure;
pub mod felix_health;
pub mod file_stat;
pub mod health;
pub mod platform;
pub mod record;
pub mod routes;
