//! The pods an HNS endpoint may belong to: those on this node with their addresses and ages,
//! and whether any pod in the cluster has an address (for another host's endpoints).

use super::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams};

/// A pod on this node, as an endpoint is judged against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodePod {
    pub pod: super::drain::PodRef,
    /// Its addresses (`status.podIPs`, else `status.podIP`); empty until kubelet reports them.
    pub ips: Vec<String>,
    /// When it was created, in seconds since 1970.
    pub created: Option<i64>,
    /// Whether a controller recreates it once it is evicted (a DaemonSet's pod comes back on
    /// this node); a mirror pod (kubelet's static pod) or a bare pod is not.
    pub managed: bool,
}

/// The pods on `node` that have a network of their own (host-network pods share the node's
/// address and have no endpoint).
pub fn on_node(c: &Cluster, node: &str) -> Result<Vec<NodePod>, ClusterError> {
    Ok(super::drain::pods_on(c, node)?
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.host_network) != Some(true))
        .map(node_pod)
        .collect())
}

fn node_pod(p: &Pod) -> NodePod {
    let status = p.status.as_ref();
    let mut ips: Vec<String> = status
        .and_then(|s| s.pod_ips.as_ref())
        .map(|v| v.iter().map(|i| i.ip.clone()).collect())
        .unwrap_or_default();
    if ips.is_empty()
        && let Some(ip) = status.and_then(|s| s.pod_ip.clone())
    {
        ips.push(ip);
    }
    NodePod {
        pod: super::drain::pod_ref(p),
        ips,
        created: p
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second()),
        managed: super::drain::controller(p).is_some() && !super::drain::is_mirror(p),
    }
}

/// Whether a pod anywhere in the cluster has the address `ip`: a field selector on
/// `status.podIP`, which kube-apiserver offers for pods (kubernetes
/// pkg/registry/core/pod/strategy.go, `ToSelectableFields`: the first of `status.podIPs`);
/// one item is enough.
pub fn ip_in_use(c: &Cluster, ip: &str) -> Result<bool, ClusterError> {
    let pods: Api<Pod> = Api::all(c.client.clone());
    let lp = ListParams::default()
        .fields(&format!("status.podIP={ip}"))
        .limit(1);
    Ok(!c.call("list", "pods", pods.list(&lp))?.items.is_empty())
}
