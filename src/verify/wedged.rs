//! Probe pods that never go: a graceful delete waits for the kubelet (kubernetes
//! `pkg/registry/rest/delete.go`, `BeforeDelete`), which a dead node's never answers. A pod of
//! ours Terminating on a node not Ready or gone is deleted with `gracePeriodSeconds: 0`, by uid.

use super::objects::{OWNER_LABEL, OWNER_VALUE};
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::{DeleteParams, ListParams};
use std::time::Instant;

/// Deletes at once (grace 0, only the pod listed, by its uid) each pod of `left` that is
/// Terminating on a node not Ready or gone, every call by `until`: the pods force-deleted.
pub fn force_dead(
    c: &Cluster,
    ns: &str,
    left: &[Pod],
    until: Instant,
) -> Result<Vec<String>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let mut forced = Vec::new();
    for p in left {
        let node = p.spec.as_ref().and_then(|s| s.node_name.as_deref());
        // Not Terminating, or never bound (pod GC deletes an unbound Terminating pod itself,
        // `gcUnscheduledTerminating`): not this one's to force.
        let Some(node) = node.filter(|_| p.metadata.deletion_timestamp.is_some()) else {
            continue;
        };
        if !dead(c, &NodeName::from_api(node), until)? {
            continue;
        }
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            ..probe::only(p.metadata.uid.as_deref(), None)
        };
        let what = format!("pods/{name}");
        match c.call_opt_by(until, ("delete", &what), pods.delete(&name, &dp)) {
            Ok(_) | Err(ClusterError::Api { code: 409, .. }) => forced.push(name),
            Err(e) => return Err(e),
        }
    }
    Ok(forced)
}

/// Our probe pods in `ns` (the owner label), listed by `until`.
pub fn ours_in(c: &Cluster, ns: &str, until: Instant) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    Ok(c.call_by(until, ("list", "pods"), pods.list(&lp))?.items)
}

/// Whether the node is gone or its Ready condition is not True. Asked with a list by name
/// (`metadata.name`, a field every kind selects on), since `list nodes` is the right a
/// `verify` identity holds, not `get`.
pub fn dead(c: &Cluster, node: &NodeName, until: Instant) -> Result<bool, ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let lp = ListParams::default().fields(&format!("metadata.name={node}"));
    let found = c.call_by(until, ("list", "nodes"), nodes.list(&lp))?.items;
    Ok(!found
        .iter()
        .filter(|n| n.metadata.name.as_deref() == Some(node.as_str()))
        .any(|n| crate::cluster::drain::not_ready(n).is_none()))
}
