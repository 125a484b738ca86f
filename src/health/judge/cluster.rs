//! The judges of the node as the cluster holds it: what cannot be read, the Node's state, its
//! IPAM block, the VNI, an admin kubeconfig kept on the node.

use super::finding::{Code, Finding};
use crate::cluster::facts::Felix;
use crate::k8s_name::NodeName;

/// The cluster, or part of it (`subject`), cannot be read: the error said as it is.
pub fn cluster_unreadable(subject: &str, message: String) -> Finding {
    Finding::fixed(Code::ClusterUnreadable, subject, message)
}

/// The cluster's DatastoreMigrations could not be read (`why`): said beside the API group,
/// not a problem (a migration under way is a phase, not a fault).
pub fn datastore_unreadable(why: &str) -> Finding {
    Finding::fixed(
        Code::ClusterUnreadable,
        "DatastoreMigrations",
        format!("the cluster's DatastoreMigrations cannot be read: {why}"),
    )
}

/// The HNS endpoints could not be judged against the pods (`why`: the read that failed).
pub fn endpoints_unjudged(why: String) -> Finding {
    Finding::fixed(
        Code::EndpointsUnjudged,
        "endpoints",
        format!("the HNS endpoints cannot be judged: {why}"),
    )
}

/// A kubeconfig at `path` whose identity may do anything in the cluster.
pub fn admin_kubeconfig(path: &str) -> Finding {
    Finding::fixed(
        Code::AdminKubeconfig,
        path,
        format!(
            "{path} holds a kubeconfig whose identity may do anything in the cluster (cluster-admin): a node should keep none"
        ),
    )
}

/// The node in the cluster: not Ready (with kubelet's reason), cordoned.
pub fn node_state(node: &NodeName, ready: &Result<(), String>, cordoned: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(why) = ready {
        out.push(Finding::new(
            Code::NodeNotReady,
            node,
            format!("node {node} is not Ready: {why}"),
            format!("read kubelet's log on this node and 'kubectl describe node {node}': calicoctl-win does not make a node Ready"),
        ));
    }
    if cordoned {
        out.push(Finding::new(
            Code::NodeCordoned,
            node,
            format!("node {node} is cordoned"),
            format!("kubectl uncordon {node}, once it is meant to take pods"),
        ));
    }
    out
}

/// The node's IPAM block against what kubelet schedules, on a node with one network (one
/// block): `max_pods` more than it holds, or every address in use.
pub fn ipam_capacity(
    node: &NodeName,
    max_pods: Option<u64>,
    capacity: u64,
    pods: u64,
) -> Option<Finding> {
    if let Some(m) = max_pods.filter(|m| *m > capacity) {
        return Some(Finding::fixed(
            Code::IpamCapacity,
            node,
            format!(
                "kubelet schedules up to {m} pods but the node's block holds {capacity}: pods beyond it get no address"
            ),
        ));
    }
    (pods >= capacity).then(|| {
        Finding::fixed(
            Code::IpamCapacity,
            node,
            format!("the node's block is full ({pods} of {capacity}): a new pod gets no address"),
        )
    })
}

/// Where the VNI the cluster's Felix uses comes from, in words.
pub fn vni_source(felix: &Felix) -> &'static str {
    if felix.vxlan_vni.is_some() {
        "FelixConfiguration vxlanVNI"
    } else {
        "Felix's default: FelixConfiguration sets no vxlanVNI"
    }
}

/// The config's VNI against the one the cluster's Felix uses (`Felix::vni`, its default
/// applied in that one place): the one judge preflight's `vxlan-vni`, reconfigure's refusal
/// and status use.
pub fn vni_cluster(config: u32, felix: &Felix) -> Option<Finding> {
    let v = felix.vni();
    (v != config).then(|| {
        Finding::new(
            Code::VniCluster,
            "FelixConfiguration",
            format!(
                "the VNI the cluster's Felix uses is {v} ({}), the config says {config}: this node could not reach pods on the other nodes",
                vni_source(felix)
            ),
            format!(
            "set vxlan.vni to {v} (--set vxlan.vni={v}, or leave it unset: the cluster's is used), or change the cluster first ('kubectl patch felixconfiguration default --type merge -p '{{\"spec\":{{\"vxlanVNI\":{config}}}}}'')"
            ),
        )
    })
}

/// The VNI in the config, in HNS (the Calico network's VSID) and the one the cluster's Felix
/// uses, on a vxlan node.
pub fn vni(config: u32, hns: Option<u32>, cluster: Option<&Felix>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(v) = hns.filter(|v| *v != config) {
        out.push(Finding::fixed(
            Code::VniHns,
            crate::layout::CALICO_NETWORK,
            format!("the Calico network has VSID {v}, the config says VNI {config}"),
        ));
    }
    out.extend(cluster.and_then(|f| vni_cluster(config, f)));
    out
}
