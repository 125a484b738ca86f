//! calico-node's token, as the cluster sees it: its credentials (credentials.rs), whether the
//! API server takes it (check.rs), and the node's right to renew it (renewal.rs, made by
//! making.rs, its creates sent by create.rs). The renewers run on the node (`supervise::renew`,
//! `commands::keep_token`).

pub mod check;
mod create;
pub mod credentials;
mod foreign;
pub mod making;
pub mod renewal;
