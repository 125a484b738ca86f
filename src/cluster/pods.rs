//! The pods an HNS endpoint may belong to: those on this node with their addresses and ages,
//! and whether any pod in the cluster has an address (for another host's endpoints).

use super::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
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
    /// Whether a controller recreates it once evicted (a mirror or bare pod: no).
    pub managed: bool,
}

/// The pods on `node` with a network of their own (host-network pods have no endpoint) that
/// may still use it (a finished pod owns none; its address may be a new pod's already).
pub fn on_node(c: &Cluster, node: &NodeName) -> Result<Vec<NodePod>, ClusterError> {
    Ok(super::drain::pods_on(c, node)?
        .iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.host_network) != Some(true))
        .filter(|p| !is_terminal(p))
        .map(node_pod)
        .collect())
}

/// A pod whose containers have all ended for good (`status.phase` Succeeded or Failed,
/// k8s.io/api core/v1 `PodPhase`): kubelet tears its sandbox down.
fn is_terminal(p: &Pod) -> bool {
    matches!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

/// Of the addresses `wanted`, those some EndpointSlice lists: kube-proxy's input for the
/// remote HNS endpoints it makes for every Service backend off its node (kubernetes
/// pkg/proxy/winkernel/proxier.go `syncProxyRules`), the API server's and selectorless
/// Services' addresses too, which no pod has. `None` when EndpointSlices are not served.
pub fn in_endpoint_slices(
    c: &Cluster,
    wanted: &std::collections::BTreeSet<String>,
) -> Result<Option<std::collections::BTreeSet<String>>, ClusterError> {
    let api = c.dynamic(("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices"));
    let mut found = std::collections::BTreeSet::new();
    let served = c.for_each_page(&api, "endpointslices", |items| {
        for slice in &items {
            let endpoints = slice.data.get("endpoints").and_then(|e| e.as_array());
            for a in endpoints
                .into_iter()
                .flatten()
                .filter_map(|e| e.get("addresses").and_then(|a| a.as_array()))
                .flatten()
                .filter_map(|a| a.as_str())
            {
                if wanted.contains(a) {
                    found.insert(a.to_owned());
                }
            }
        }
        Ok::<(), ClusterError>(())
    })?;
    Ok(served.then_some(found))
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

/// Pods per page of the cluster-wide read (`addresses_in_use`): a pod object is a few KB.
pub const POD_PAGE: u32 = 250;

/// Of the addresses `wanted`, those a pod anywhere has: one paged read of every pod, however
/// many addresses are asked about (a field selector per address once took 256 calls, 13 s).
pub fn addresses_in_use(
    c: &Cluster,
    wanted: &std::collections::BTreeSet<String>,
) -> Result<std::collections::BTreeSet<String>, ClusterError> {
    let pods: Api<Pod> = Api::all(c.client.clone());
    let lp = ListParams::default().limit(POD_PAGE);
    let mut found = std::collections::BTreeSet::new();
    c.for_each_page_of(&pods, "pods", &lp, |page| {
        for p in &page {
            for ip in node_pod(p).ips {
                if wanted.contains(&ip) {
                    found.insert(ip);
                }
            }
        }
        Ok::<(), ClusterError>(())
    })?;
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(owner: Option<&str>, mirror: bool) -> Pod {
        super::super::drain::tests::pod("p", owner, mirror)
    }

    /// k8s.io/api core/v1 `PodPhase`: "Succeeded: All containers in the pod have voluntarily
    /// terminated ... and the system is not going to restart any of these containers";
    /// "Failed: All containers in the pod have terminated". Neither owns an endpoint.
    #[test]
    fn a_finished_pod_is_terminal_and_a_running_or_pending_one_is_not() {
        for (phase, terminal) in [
            ("Succeeded", true),
            ("Failed", true),
            ("Running", false),
            ("Pending", false),
        ] {
            let mut p = pod(None, false);
            p.status.get_or_insert_default().phase = Some(phase.into());
            assert_eq!(is_terminal(&p), terminal, "{phase}");
        }
        assert!(!is_terminal(&pod(None, false)), "no phase yet");
    }

    /// Who recreates an evicted pod: its controller, a DaemonSet too (on this node); a bare
    /// pod and kubelet's mirror of a static pod are recreated by nobody.
    #[test]
    fn a_pod_is_managed_when_a_controller_recreates_it() {
        assert!(node_pod(&pod(Some("ReplicaSet"), false)).managed);
        assert!(node_pod(&pod(Some("DaemonSet"), false)).managed);
        assert!(!node_pod(&pod(None, false)).managed);
        assert!(!node_pod(&pod(Some("Node"), true)).managed);
        let p = node_pod(&pod(None, false));
        assert_eq!(p.ips, ["10.244.1.7"]);
        assert_eq!(p.created, Some(1_767_225_600));
    }
}
