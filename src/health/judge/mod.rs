//! The judges of the node's health: each fact judged once into a typed finding (a stable code,
//! its subject, one sentence, its remedy), in the shape preflight's checks share (`Said`).
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
