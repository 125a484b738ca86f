//! The fleet: what `fleet plan` and `fleet rbac` write, what `fleet status` reads back, the
//! turns (`reconfigure --turn`), and `fleet diags`. Built on `cluster`'s API client.

pub mod diags;
pub mod manifests;
pub mod rights;
pub mod traffic;
pub mod turn;
pub mod view;
