//! `install --verify` and `reconfigure --verify` run just after kubelet restarted or the CNI
//! config was written: the node may not be Ready yet, and CalicoNode may not yet have said that
//! Calico's services run. The run waits for both, within its `--timeout`, before it plans:
//! the Node's `Ready` condition True (kubelet's, `pkg/kubelet/nodestatus/setters.go`
//! `ReadyCondition`: False while the runtime's network is not ready, "container runtime
//! network not ready"), and `CalicoWindowsReady` True (`supervise::condition`, set by
//! CalicoNode when Felix runs and is ready and the Calico network is there). A cordoned node
//! is not waited for: the plan refuses it at once (`PlanError::NotUsable`).

use super::matrix::PlanError;
use super::options::Options;
use super::step::{POLL, interrupted};
use crate::cluster::node::CONDITION_CALICO_READY;
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use std::time::Instant;

/// Why a wait for the node ended without it.
#[derive(Debug)]
pub enum NotReady {
    Plan(PlanError),
    Cluster(ClusterError),
}

/// Waits until the node is Ready and Calico is (or it is cordoned), or `until`.
pub fn wait(c: &Cluster, o: &Options, until: Instant) -> Result<(), NotReady> {
    let api: Api<Node> = Api::all(c.client.clone());
    let start = Instant::now();
    loop {
        let what = format!("nodes/{}", o.node);
        let node = c
            .call_opt("get", &what, api.get(&o.node))
            .map_err(NotReady::Cluster)?;
        let missing = match &node {
            None => vec!["the Node object (kubelet registers it)".to_owned()],
            Some(n) if cordoned(n) => return Ok(()),
            Some(n) => missing(n),
        };
        if missing.is_empty() {
            return Ok(());
        }
        if Instant::now() + POLL >= until || interrupted(o) {
            return Err(NotReady::Plan(PlanError::NeverReady {
                node: o.node.clone(),
                waited_s: start.elapsed().as_secs(),
                missing: missing.join("; "),
            }));
        }
        std::thread::sleep(POLL);
    }
}

fn cordoned(n: &Node) -> bool {
    n.spec.as_ref().and_then(|s| s.unschedulable) == Some(true)
}

/// The conditions not yet True, each with its status and what it says.
pub fn missing(n: &Node) -> Vec<String> {
    let conditions = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    ["Ready", CONDITION_CALICO_READY]
        .iter()
        .filter_map(|t| match conditions.iter().find(|c| c.type_ == *t) {
            Some(c) if c.status == "True" => None,
            Some(c) => Some(format!(
                "{t} is {} ({}: {:.200})",
                c.status,
                c.reason.as_deref().unwrap_or_default(),
                c.message.as_deref().unwrap_or_default()
            )),
            None => Some(format!("{t} is not set yet")),
        })
        .collect()
}
