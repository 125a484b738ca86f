//! calico-node's token, as the cluster sees it: made into calico-node's kubeconfig with the
//! other credentials it runs with (credentials.rs), asked whether the API server still takes
//! it (check.rs), and the one right a node keeps so that CalicoNode renews it itself
//! (renewal.rs, made by making.rs, its creates sent by create.rs). What renews it and records its renewals lives in the layers that run on the
//! node: `installed::token_records`, `supervise::renew`, and `service keep-token`
//! (`commands::keep_token`).

pub mod check;
mod create;
pub mod credentials;
mod foreign;
pub mod making;
pub mod renewal;
