//! The fleet: what `fleet plan` and `fleet rbac` write (the DaemonSet, the Plan, the roles and
//! admission policies), what `fleet status` reads back (each node's row, its traffic and the
//! turns), the turns themselves (`reconfigure --turn`), and `fleet diags`, each node's bundle
//! gathered through the cluster. Built on `cluster`'s API client.

pub mod diags;
pub mod manifests;
pub mod rights;
pub mod traffic;
pub mod turn;
pub mod view;
