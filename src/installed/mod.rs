//! What install leaves on the host and the services report, read and written through `Host`:
//! the install record (and the node annotations it gives), the file stats with the host hash
//! helper, the routes from before the vSwitch, CalicoNode's start failures, the platform
//! facts (AKS, EC2, ...) the services and install read alike, and the health of the HNS
//! endpoints the pods were given, the directories whose files run as SYSTEM and what protects
//! them, and the services of Calico's legacy script-driven install.

pub mod addressing;
pub mod boot_marker;
pub mod endpoints;
pub mod failure;
pub mod felix_health;
pub mod file_stat;
pub mod hns_restart;
pub mod legacy;
pub mod logs;
pub mod metrics;
pub mod platform;
pub mod protection;
pub mod record;
pub mod routes;
pub mod token_records;
