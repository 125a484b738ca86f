//! The cluster: a kube client built from the admin kubeconfig, with every call bounded in time
//! and every error naming the server and, for 401/403/404, what to do. The client is in
//! client.rs, its error in error.rs, the kubeconfigs it is built from in kubeconfig.rs; the
//! types are re-exported here (`crate::cluster::Cluster`, `crate::cluster::ClusterError`).

pub mod calico_api;
mod client;
pub mod drain;
pub mod error;
pub mod etcd;
mod eviction;
pub mod facts;
pub mod fix;
pub mod forbidden;
pub mod guard;
pub mod installation;
pub mod ipam;
pub mod kubeconfig;
pub mod node;
pub mod node_control;
pub mod operator;
pub mod operator_namespace;
pub mod pods;
pub mod proxy;
pub mod read;
pub mod refusal;
pub mod rights;
pub mod token;
pub mod verify_rights;

/// Whether an object carries the label `key=value`.
pub fn labelled(meta: &kube::api::ObjectMeta, (key, value): (&str, &str)) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(key))
        .is_some_and(|v| v == value)
}

pub use client::{CALL_TIMEOUT, Cluster, CutHere, PAGE, PAGES_CAP, cut_here};
pub use error::ClusterError;
pub use kubeconfig::{InCluster, OnHost, ReadFile, pem};
/// The token's modules by the names they had before they shared a room.
pub use token::{check as token_check, credentials, making, renewal};
