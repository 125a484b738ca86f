//! The judges of the node's health: what can be wrong with Calico on this node, each fact
//! judged once into a typed finding (a stable code, its subject, one sentence, its remedy),
//! in the shape preflight's checks share (`Said`). The `health` room's survey gathers the
//! node's facts and hands them to these judges (status, CalicoNode's condition and the codes
//! beside it, repair's look after its run); preflight's `vxlan-vni` and `node-address` checks
//! and reconfigure's refusal call `vni_cluster` and `node_address` too; `fleet status` judges
//! each node's row by `fleet_row`.
//! docs/findings.md lists every code (a test keeps it complete).

mod address;
mod cluster;
mod finding;
mod fleet;
mod host;
mod remedy;
mod token;
mod under_way;

pub use address::*;
pub use cluster::*;
pub use finding::{Code, Finding, Said};
pub use fleet::fleet_row;
pub use host::*;
pub use token::*;
pub use under_way::*;

#[cfg(test)]
mod tests;
