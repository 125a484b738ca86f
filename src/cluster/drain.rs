//! Draining a node as `kubectl drain` does: cordon it, evict its pods through the Eviction API
//! (DaemonSet and mirror pods stay; pods without a controller need `--force`, with emptyDir
//! data `--delete-emptydir-data`; refusals answered in eviction.rs), wait until they are gone,
//! and for the node to be Ready again.

use super::{Cluster, ClusterError};
use crate::duration::{Stop, Stopped};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams};
use serde::Serialize;
use std::time::Duration;

/// How to drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct DrainOptions {
    /// How long evictions may be refused and pods take to go.
    #[serde(with = "crate::duration::text")]
    pub timeout: Duration,
    /// Overrides each pod's own termination grace period.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub grace_period: Option<u32>,
    /// Also evict pods that no controller will recreate (`--force`).
    pub force: bool,
    /// Also evict pods whose emptyDir data is lost with them (`--delete-emptydir-data`).
    pub delete_emptydir_data: bool,
    /// Eviction requests in flight at once (`--drain-concurrency`).
    pub concurrency: usize,
}

/// Eviction requests in flight at once unless told otherwise.
pub const DEFAULT_CONCURRENCY: usize = 16;

/// What a drain's waits watch: the command's stop (Ctrl-C), which ends them at once, and where
/// they say how they go.
pub struct Watch<'a> {
    pub stop: &'a Stop,
    pub say: &'a mut dyn FnMut(&str),
}

/// A pod, by namespace and name (and uid, to tell it from a successor of the same name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    #[serde(skip)]
    pub uid: String,
    /// Whether the pod was already being deleted when listed (its `deletionTimestamp`).
    #[serde(skip)]
    pub deleting: bool,
}

impl std::fmt::Display for PodRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What a drain does with the pods on a node.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Selection {
    pub evict: Vec<PodRef>,
    /// DaemonSet and mirror pods, which stay.
    pub skipped: Vec<PodRef>,
    /// Pods without a controller: evicted only with `--force`, since nothing recreates them.
    pub unmanaged: Vec<PodRef>,
    /// Pods to evict (managed or not) whose emptyDir volumes would be lost: evicted only with
    /// `--delete-emptydir-data`.
    pub local_storage: Vec<PodRef>,
}

impl Selection {
    /// Why this drain cannot go ahead with these options, before anything is done.
    pub fn refusal(&self, node: &NodeName, opts: &DrainOptions) -> Option<DrainError> {
        if !self.unmanaged.is_empty() && !opts.force {
            return Some(DrainError::Unmanaged {
                node: node.to_string(),
                pods: self.unmanaged.clone(),
            });
        }
        if !self.local_storage.is_empty() && !opts.delete_emptydir_data {
            return Some(DrainError::LocalStorage {
                node: node.to_string(),
                pods: self.local_storage.clone(),
            });
        }
        None
    }

    /// The pods the drain evicts: with a controller, and without one (allowed by `--force`).
    pub fn to_evict(&self) -> Vec<PodRef> {
        self.evict.iter().chain(&self.unmanaged).cloned().collect()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("pods on node {node} have no controller and would be lost: {}", list(.pods))]
    Unmanaged { node: String, pods: Vec<PodRef> },
    #[error("pods on node {node} have emptyDir data that eviction deletes: {}", list(.pods))]
    LocalStorage { node: String, pods: Vec<PodRef> },
    #[error("the drain of node {node} did not finish within {}: {}; {}", crate::duration::show(*.after), .detail, evicted_text(.evicted))]
    Timeout {
        node: String,
        after: Duration,
        detail: String,
        /// The pods this drain evicted before it gave up: they stay evicted.
        evicted: Vec<PodRef>,
    },
    #[error("the drain of node {node} was stopped (Ctrl-C or a termination signal); {}", evicted_text(.evicted))]
    Stopped {
        node: String,
        /// The pods this drain evicted before it stopped: they stay evicted.
        evicted: Vec<PodRef>,
    },
    #[error("node {node} was not Ready within {} ({reason})", crate::duration::show(*.after))]
    NotReady {
        node: String,
        after: Duration,
        reason: String,
    },
}

/// A wait's stop, before the wait says whose drain it was (`stopped_at`).
impl From<Stopped> for DrainError {
    fn from(_: Stopped) -> Self {
        Self::Stopped {
            node: String::new(),
            evicted: Vec::new(),
        }
    }
}

impl DrainError {
    /// A stop of `node`'s drain, with the pods it had evicted; other errors as they are.
    pub(super) fn stopped_at(self, node: &NodeName, evicted: &[PodRef]) -> Self {
        match self {
            Self::Stopped { .. } => Self::Stopped {
                node: node.to_string(),
                evicted: evicted.to_vec(),
            },
            other => other,
        }
    }

    pub fn hint(&self) -> String {
        match self {
            Self::Cluster(e) => e.hint(),
            Self::Stopped { .. } => "run the command again: evictions already made are not repeated".into(),
            Self::Unmanaged { .. } => "delete those pods yourself, or pass --force to evict them too (they are not recreated)".into(),
            Self::LocalStorage { .. } => "pass --delete-emptydir-data to evict them anyway (their emptyDir data is deleted), or move them first".into(),
            Self::Timeout { .. } => "a PodDisruptionBudget may allow no disruption now ('kubectl get pdb -A'; scale the workload up), or a namespace being deleted may not have deleted its pods yet ('kubectl get namespaces'); give it longer with --drain-timeout".into(),
            Self::NotReady { node, .. } => format!(
                "check kubelet on the node and 'kubectl describe node {node}'; the node stays cordoned until 'kubectl uncordon {node}' or a rerun"
            ),
        }
    }

    pub fn is_timeout(&self) -> bool {
        match self {
            Self::Cluster(e) => matches!(e, ClusterError::Timeout { .. }),
            Self::Timeout { .. } | Self::NotReady { .. } => true,
            Self::Unmanaged { .. } | Self::LocalStorage { .. } | Self::Stopped { .. } => false,
        }
    }
}

fn evicted_text(evicted: &[PodRef]) -> String {
    if evicted.is_empty() {
        "no pod was evicted".into()
    } else {
        format!(
            "{} pod(s) were evicted and stay evicted (their controllers start them again elsewhere): {}",
            evicted.len(),
            list(evicted)
        )
    }
}

fn list(pods: &[PodRef]) -> String {
    pods.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The pod's controller, if it has one.
pub(crate) fn controller(
    p: &Pod,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    p.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// Whether the pod is kubelet's mirror of a static pod (`kubernetes.io/config.mirror`).
pub(super) fn is_mirror(p: &Pod) -> bool {
    p.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"))
}

pub(super) fn pod_ref(p: &Pod) -> PodRef {
    PodRef {
        namespace: p.metadata.namespace.clone().unwrap_or_default(),
        name: p.metadata.name.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
        deleting: p.metadata.deletion_timestamp.is_some(),
    }
}

/// Sorts the pods of a node as `kubectl drain` does: DaemonSet and mirror pods stay; pods
/// with a controller are evicted; the rest need `--force`.
pub fn select(pods: &[Pod]) -> Selection {
    let mut s = Selection::default();
    for p in pods {
        let owner = controller(p);
        let mirror = is_mirror(p);
        let r = pod_ref(p);
        if mirror || owner.is_some_and(|o| o.kind == "DaemonSet") {
            s.skipped.push(r);
            continue;
        }
        let empty_dir = p
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .is_some_and(|v| v.iter().any(|v| v.empty_dir.is_some()));
        if empty_dir {
            s.local_storage.push(r.clone());
        }
        if owner.is_some() {
            s.evict.push(r);
        } else {
            s.unmanaged.push(r);
        }
    }
    s
}

/// The pods scheduled on `node`, in every namespace.
pub fn pods_on(c: &Cluster, node: &NodeName) -> Result<Vec<Pod>, ClusterError> {
    if let Some(pods) = c.looked_at_pods(node) {
        return Ok(pods);
    }
    let pods: Api<Pod> = Api::all(c.client.clone());
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    let items = c.call("list", "pods", pods.list(&lp))?.items;
    c.keep_pods(node, &items);
    Ok(items)
}

/// Whether the node is marked unschedulable.
pub fn is_cordoned(c: &Cluster, node: &NodeName) -> Result<bool, ClusterError> {
    Ok(unschedulable(&super::node::read(c, node)?))
}

/// Whether a Node, as read, is marked unschedulable.
pub fn unschedulable(n: &Node) -> bool {
    n.spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false)
}

/// The Eviction object for a pod, as documented: kube's `evict` sends `delete_options`, which
/// the API server ignores, losing the grace period.
pub fn eviction_body(pod: &PodRef, grace_period: Option<u32>) -> serde_json::Value {
    let mut body = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    });
    if let Some(g) = grace_period {
        body["deleteOptions"] = serde_json::json!({ "gracePeriodSeconds": g });
    }
    body
}

/// Why the node is not Ready, or `None` when it is.
pub fn not_ready(n: &Node) -> Option<String> {
    match super::node::condition_of(n, "Ready") {
        Some(c) if c.status == "True" => None,
        Some(c) => Some(format!(
            "Ready is {}{}",
            c.status,
            c.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        None => Some("it reports no Ready condition".into()),
    }
}

/// The DaemonSet pods of a node with a network of their own: a drain leaves them, but a
/// network made again leaves them without one. hostNetwork and mirror pods stay.
pub fn networked_daemons(pods: &[Pod]) -> Vec<PodRef> {
    pods.iter()
        .filter(|p| controller(p).is_some_and(|o| o.kind == "DaemonSet"))
        .filter(|p| !is_mirror(p))
        .filter(|p| p.spec.as_ref().and_then(|s| s.host_network) != Some(true))
        .map(pod_ref)
        .collect()
}

impl crate::error::Diagnose for DrainError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        use crate::error::Kind;
        let kind = match self {
            Self::Cluster(e) => return e.diagnose(),
            Self::Unmanaged { .. } | Self::LocalStorage { .. } => Kind::DrainRefused,
            Self::Timeout { .. } => Kind::DrainTimeout,
            Self::Stopped { .. } => Kind::Failed,
            Self::NotReady { .. } => Kind::NodeNotReady,
        };
        crate::error::Diagnosis::failed_or_timeout(self.is_timeout(), kind, Some(self.hint()))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    /// A pod in `default` with an address, controlled by an `owner`, or kubelet's mirror of a
    /// static pod.
    pub(in crate::cluster) fn pod(name: &str, owner: Option<&str>, mirror: bool) -> Pod {
        let mut v = serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}"),
                "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"podIP": "10.244.1.7", "podIPs": [{"ip": "10.244.1.7"}]}
        });
        if let Some(kind) = owner {
            v["metadata"]["ownerReferences"] = serde_json::json!([{
                "apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "o", "controller": true
            }]);
        }
        if mirror {
            v["metadata"]["annotations"] = serde_json::json!({"kubernetes.io/config.mirror": "h"});
        }
        serde_json::from_value(v).expect("pod")
    }

    /// After the network is made again: the DaemonSet pods with a pod network are evicted
    /// (their DaemonSet makes them again), hostNetwork ones and other pods are not.
    #[test]
    fn the_networked_daemonset_pods_are_the_ones_made_again() {
        let mut host_net = pod("kube-proxy", Some("DaemonSet"), false);
        host_net.spec = Some(
            serde_json::from_value(serde_json::json!({
            "containers": [], "hostNetwork": true}))
            .expect("spec"),
        );
        let picked = networked_daemons(&[
            pod("agent", Some("DaemonSet"), false),
            host_net,
            pod("web", Some("ReplicaSet"), false),
            pod("static", Some("Node"), true),
        ]);
        let names: Vec<String> = picked.iter().map(ToString::to_string).collect();
        assert_eq!(names, ["default/agent"]);
    }

    /// A mirror pod stays, though it has no controller. Controlled pods evicted, a
    /// DaemonSet's skipped and a bare one needing --force are asserted by
    /// tests/lifecycle/reconfigure.rs `vni_change_recreates_the_network_after_a_drain_and_uncordons`
    /// and `a_pod_without_a_controller_is_evicted_only_with_force`.
    #[test]
    fn a_mirror_pod_stays() {
        let s = select(&[pod("static", None, true)]);
        assert_eq!(s.skipped.len(), 1);
        assert!(s.unmanaged.is_empty());
    }

    /// Without a grace period the body leaves the pod's own; with one it carries it
    /// (tests/lifecycle/reconfigure.rs `vni_change_recreates_the_network_after_a_drain_and_uncordons`).
    #[test]
    fn an_eviction_without_a_grace_period_carries_none() {
        let p = pod_ref(&pod("web", None, false));
        assert!(eviction_body(&p, None).get("deleteOptions").is_none());
    }
}
