//! A killed run's probe pods that never go: a pod on a node whose kubelet is down stays
//! Terminating, since kube-apiserver's graceful delete only marks it (`pkg/registry/rest/
//! delete.go`, `BeforeDelete`: `deletionTimestamp` and the grace period set, the object kept)
//! until the kubelet confirms with grace 0, which a dead node's never does. On a takeover
//! such a pod is ours (the owner label, in our namespace, its run's turn run out) and is
//! deleted with `gracePeriodSeconds: 0`, which `BeforeDelete` lets remove it at once.

use super::probe;
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Api;
use kube::api::DeleteParams;

/// A pod that would not go, and its node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stuck {
    pub pod: String,
    pub node: String,
}

/// Deletes at once (grace 0, only the pod listed, by its uid) each pod of `left` that is
/// Terminating on a node not Ready or gone: the pods force-deleted.
pub fn force_dead(c: &Cluster, ns: &str, left: &[Pod]) -> Result<Vec<String>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let nodes: Api<Node> = Api::all(c.client.clone());
    let mut forced = Vec::new();
    for p in left {
        let node = p.spec.as_ref().and_then(|s| s.node_name.clone());
        if p.metadata.deletion_timestamp.is_none() {
            continue;
        }
        let dead = match &node {
            None => false,
            Some(n) => match c.call_opt("get", &format!("nodes/{n}"), nodes.get(n))? {
                None => true,
                Some(n) => !ready(&n),
            },
        };
        if !dead {
            continue;
        }
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = DeleteParams {
            grace_period_seconds: Some(0),
            ..probe::only(p.metadata.uid.as_deref())
        };
        match c.call_opt("delete", &format!("pods/{name}"), pods.delete(&name, &dp)) {
            Ok(_) | Err(ClusterError::Api { code: 409, .. }) => forced.push(name),
            Err(e) => return Err(e),
        }
    }
    Ok(forced)
}

/// The pods left and their nodes, as an error names them.
pub fn stuck(left: &[Pod]) -> Vec<Stuck> {
    left.iter()
        .map(|p| Stuck {
            pod: p.metadata.name.clone().unwrap_or_default(),
            node: p
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_else(|| "(none)".into()),
        })
        .collect()
}

fn ready(n: &Node) -> bool {
    n.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}
