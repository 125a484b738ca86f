//! The node object: tainting it for Windows workloads only, cordoning it, what it runs.

use super::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::{Node, Taint};
use kube::api::{Api, Patch, PatchParams};

/// The taint `--taint-windows` puts on the node.
pub fn windows_taint() -> Taint {
    Taint {
        key: "os".into(),
        value: Some("windows".into()),
        effect: "NoSchedule".into(),
        time_added: None,
    }
}

/// Adds `taint` unless one of its key, effect and value is there; whether it changed the node.
pub fn ensure_taint(c: &Cluster, node: &NodeName, taint: &Taint) -> Result<bool, ClusterError> {
    let mut taints = read(c, node)?
        .spec
        .and_then(|s| s.taints)
        .unwrap_or_default();
    let same = |t: &Taint| t.key == taint.key && t.effect == taint.effect;
    if taints.iter().any(|t| same(t) && t.value == taint.value) {
        return Ok(false);
    }
    taints.retain(|t| !same(t));
    taints.push(taint.clone());
    patch(
        c,
        node,
        &serde_json::json!({ "spec": { "taints": taints } }),
    )?;
    Ok(true)
}

/// What the node reports of the software running it (`None`: no such node).
pub fn info(
    c: &Cluster,
    node: &NodeName,
) -> Result<Option<k8s_openapi::api::core::v1::NodeSystemInfo>, ClusterError> {
    Ok(get(c, node)?
        .and_then(|n| n.status)
        .and_then(|s| s.node_info))
}

/// Whether the cluster has the node (one read: it also tells that the cluster answers).
pub fn exists(c: &Cluster, node: &NodeName) -> Result<bool, ClusterError> {
    Ok(get(c, node)?.is_some())
}

/// The Node, if it exists.
pub fn get(c: &Cluster, node: &NodeName) -> Result<Option<Node>, ClusterError> {
    match read(c, node) {
        Err(e) if e.is_not_found() => Ok(None),
        n => n.map(Some),
    }
}

/// The Node (404 is an error).
pub fn read(c: &Cluster, node: &NodeName) -> Result<Node, ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    c.call("get", &format!("nodes/{node}"), nodes.get(node.as_str()))
}

/// The annotations that say what runs on a node calicoctl-win installed.
pub const ANNOTATION_CALICO_VERSION: &str = "calicoctl-win/calico-version";
pub const ANNOTATION_TOOL_VERSION: &str = "calicoctl-win/version";
pub const ANNOTATION_CONFIG_HASH: &str = "calicoctl-win/config-hash";
/// The install's own id (`InstallRecord::install_id`), telling it from a later one of the same
/// config and node name.
pub const ANNOTATION_INSTALL_ID: &str = "calicoctl-win/install-id";
/// The finding codes of CalicoNode's last look (docs/findings.md), `{"heartbeat": "<the
/// condition's lastHeartbeatTime>", "codes": [...]}`, written in the same patch as
/// `CONDITION_CALICO_READY` and trusted only beside that heartbeat. Each code once: far under
/// an object's 256 KiB of annotations (apimachinery `pkg/api/validation/objectmeta.go`).
pub const ANNOTATION_FINDING_CODES: &str = "calicoctl-win/finding-codes";
/// The `traffic-*` codes of the fleet DaemonSet's last scheduled `verify`, as
/// `ANNOTATION_FINDING_CODES` beside `CONDITION_TRAFFIC`.
pub const ANNOTATION_TRAFFIC_CODES: &str = "calicoctl-win/traffic-codes";
/// The Node condition CalicoNode keeps (`supervise::condition`) and `fleet status` reads.
pub const CONDITION_CALICO_READY: &str = "CalicoWindowsReady";
/// How often CalicoNode sets its condition although the answer is the same (its heartbeat).
pub const CONDITION_HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(300);
/// A heartbeat older than this (three missed beats): `fleet status` shows Unknown.
pub const CONDITION_STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(900);
/// The reason of the condition uninstall leaves: nothing of calicoctl-win runs there.
pub const REASON_NOT_INSTALLED: &str = "NotInstalled";
/// The reason of the condition `migrate to-operator` leaves: the operator runs Calico there.
pub const REASON_HANDED_TO_OPERATOR: &str = "HandedToOperator";

/// Why calicoctl-win left a node, said in the condition it leaves (a plan shows its name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Left {
    Uninstalled,
    HandedToOperator,
}

impl Left {
    /// `migrate to-operator`'s, the reason its plan's document does not show.
    pub fn is_handed_to_operator(&self) -> bool {
        *self == Self::HandedToOperator
    }

    /// The condition's reason and message.
    pub fn reason(self) -> (&'static str, &'static str) {
        match self {
            Self::Uninstalled => (
                REASON_NOT_INSTALLED,
                "calicoctl-win uninstalled Calico for Windows from this node",
            ),
            Self::HandedToOperator => (
                REASON_HANDED_TO_OPERATOR,
                "the operator's calico-node-windows DaemonSet runs Calico on this node (calicoctl-win migrate to-operator)",
            ),
        }
    }
}

/// The node's `internal_ip` and `bgp_ipv4` (none without a Node).
pub fn addresses(
    c: &Cluster,
    node: &NodeName,
) -> Result<(Option<std::net::Ipv4Addr>, Option<std::net::Ipv4Addr>), ClusterError> {
    Ok(view(c, node)?.0)
}

/// The node's `addresses` and `calico_ready`, from one read.
#[allow(clippy::type_complexity)]
pub fn view(
    c: &Cluster,
    node: &NodeName,
) -> Result<
    (
        (Option<std::net::Ipv4Addr>, Option<std::net::Ipv4Addr>),
        Option<bool>,
    ),
    ClusterError,
> {
    let n = get(c, node)?;
    Ok(n.as_ref().map_or(((None, None), None), |n| {
        ((internal_ip(n), bgp_ipv4(n)), calico_ready(n))
    }))
}

/// The Node's first IPv4 `InternalIP`.
pub fn internal_ip(n: &Node) -> Option<std::net::Ipv4Addr> {
    n.status
        .as_ref()?
        .addresses
        .as_ref()?
        .iter()
        .filter(|a| a.type_ == "InternalIP")
        .find_map(|a| a.address.parse().ok())
}

/// The Calico Node's BGP IPv4 address as the Kubernetes datastore keeps it, without prefix.
pub fn bgp_ipv4(n: &Node) -> Option<std::net::Ipv4Addr> {
    let a = n
        .metadata
        .annotations
        .as_ref()?
        .get("projectcalico.org/IPv4Address")?;
    a.split('/').next()?.trim().parse().ok()
}

/// The node's `CalicoWindowsReady` status as it is set: `Some(true)` for True.
pub fn calico_ready(n: &Node) -> Option<bool> {
    condition_of(n, CONDITION_CALICO_READY).map(|c| c.status == "True")
}

/// The Node's condition of `type_`, as last set.
pub(super) fn condition_of<'a>(
    n: &'a Node,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::NodeCondition> {
    let conditions = n.status.as_ref()?.conditions.as_ref()?;
    conditions.iter().find(|c| c.type_ == type_)
}

impl Cluster {
    /// What uninstall (or a handover) leaves on the node: no calicoctl-win annotations, the
    /// condition False with the reason of `left`.
    pub fn forget_node(&self, node: &NodeName, left: Left) -> anyhow::Result<()> {
        let c = self;
        let gone: serde_json::Map<_, _> = [
            ANNOTATION_CALICO_VERSION,
            ANNOTATION_TOOL_VERSION,
            ANNOTATION_CONFIG_HASH,
            ANNOTATION_INSTALL_ID,
            ANNOTATION_FINDING_CODES,
            ANNOTATION_TRAFFIC_CODES,
        ]
        .into_iter()
        .map(|k| (k.to_owned(), serde_json::Value::Null))
        .collect();
        patch(
            c,
            node,
            &serde_json::json!({ "metadata": { "annotations": gone } }),
        )?;
        let (reason, said) = left.reason();
        set_condition(
            c,
            node,
            &condition(CONDITION_CALICO_READY, "False", reason, said),
        )?;
        // The fleet's verify verdict (`CalicoWindowsTraffic`), when the node carries one: no run
        // refreshes it once calicoctl-win has left, so it becomes Unknown with the same reason.
        let n = read(c, node)?;
        if let Some(t) = condition_of(&n, CONDITION_TRAFFIC)
            && (t.status != "Unknown" || t.reason.as_deref() != Some(reason))
        {
            let said = format!("{said}: no verify runs here any more");
            set_condition(
                c,
                node,
                &condition(CONDITION_TRAFFIC, "Unknown", reason, &said),
            )?;
        }
        Ok(())
    }
}

/// A node condition of `type_` changed and heard from now.
pub fn condition(type_: &str, status: &str, reason: &str, message: &str) -> serde_json::Value {
    let now = crate::duration::time_text(crate::duration::now());
    serde_json::json!({
        "type": type_,
        "status": status,
        "reason": reason,
        "message": message,
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    })
}

/// The fleet's verify verdict's condition (`service keep-token --verify-every`).
pub const CONDITION_TRAFFIC: &str = "CalicoWindowsTraffic";

/// Sets `annotations` on the node (a merge patch: others stay).
pub fn annotate(
    c: &Cluster,
    node: &NodeName,
    annotations: &std::collections::BTreeMap<String, String>,
) -> Result<(), ClusterError> {
    patch(
        c,
        node,
        &serde_json::json!({ "metadata": { "annotations": annotations } }),
    )
}

/// The node's annotations now.
pub fn annotations(
    c: &Cluster,
    node: &NodeName,
) -> Result<std::collections::BTreeMap<String, String>, ClusterError> {
    Ok(read(c, node)?.metadata.annotations.unwrap_or_default())
}

/// Sets one condition of the node's status (a strategic merge patch of `nodes/status`: the
/// API merges `status.conditions` by `type`, k8s.io/api core/v1 `NodeStatus.Conditions`
/// `patchStrategy:"merge" patchMergeKey:"type"`, so kubelet's conditions stay).
pub fn set_condition(
    c: &Cluster,
    node: &NodeName,
    condition: &serde_json::Value,
) -> Result<(), ClusterError> {
    patch_status(
        c,
        node,
        serde_json::json!({ "status": { "conditions": [condition] } }),
    )
}

fn patch_status(c: &Cluster, node: &NodeName, body: serde_json::Value) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let patch = Patch::Strategic(body);
    let params = PatchParams::default();
    c.call(
        "patch",
        "nodes/status",
        nodes.patch_status(node.as_str(), &params, &patch),
    )?;
    Ok(())
}

/// Sets a condition and, in the same patch, the finding codes beside it in annotation `key`
/// (`ANNOTATION_FINDING_CODES`' form). A `nodes/status` patch keeps its metadata (kubernetes
/// pkg/registry/core/node/strategy.go `nodeStatusStrategy.PrepareForUpdate`), as libcalico-go's
/// `UpdateStatus` relies on (v3.31.7 `lib/backend/k8s/resources/node.go`).
pub fn report(
    c: &Cluster,
    node: &NodeName,
    condition: &serde_json::Value,
    (key, codes): (&str, &[String]),
) -> Result<(), ClusterError> {
    // With the heartbeat it goes with: `fleet status` trusts the codes only beside it.
    let codes = serde_json::json!({
        "heartbeat": condition["lastHeartbeatTime"],
        "codes": codes,
    })
    .to_string();
    patch_status(
        c,
        node,
        serde_json::json!({
            "metadata": { "annotations": { key: codes } },
            "status": { "conditions": [condition] },
        }),
    )
}

/// Windows nodes per page: a Windows Node object is about 12 KB (the images kubelet lists),
/// so a page is about 1.2 MB, far under the answer cap.
pub const NODE_PAGE: u32 = 100;

/// Each Windows node (label `kubernetes.io/os=windows`, which kubelet sets), a page at a time.
pub fn for_each_windows_node(c: &Cluster, each: impl FnMut(&Node)) -> Result<(), ClusterError> {
    for_each_windows_node_of(c, None, each)
}

/// `for_each_windows_node`, of those with the labels of `selector` (a label selector) too.
pub fn for_each_windows_node_of(
    c: &Cluster,
    selector: Option<&str>,
    mut each: impl FnMut(&Node),
) -> Result<(), ClusterError> {
    let mut labels = "kubernetes.io/os=windows".to_owned();
    if let Some(s) = selector.filter(|s| !s.is_empty()) {
        labels = format!("{labels},{s}");
    }
    let nodes: Api<Node> = Api::all(c.client.clone());
    let lp = kube::api::ListParams::default()
        .labels(&labels)
        .limit(NODE_PAGE);
    c.for_each_page_of(&nodes, "nodes", &lp, |page| {
        page.iter().for_each(&mut each);
        Ok::<(), ClusterError>(())
    })?;
    Ok(())
}

/// A JSON merge patch of the node: what it names changes, the rest stays.
pub fn patch(c: &Cluster, node: &NodeName, patch: &serde_json::Value) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    c.call(
        "patch",
        "nodes",
        nodes.patch(node.as_str(), &PatchParams::default(), &Patch::Merge(patch)),
    )?;
    Ok(())
}

/// The Windows nodes calicoctl-win runs on (its version annotation, or a `CalicoWindowsReady`
/// CalicoNode set, not one uninstall or a handover left) that lack the label, which the
/// operator would take once it runs on Windows.
pub fn unlabelled_nodes_of_ours(c: &Cluster) -> Result<Vec<NodeName>, ClusterError> {
    let mut names = Vec::new();
    for_each_windows_node(c, |n| {
        let annotated = n
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(ANNOTATION_TOOL_VERSION));
        let condition = condition_of(n, CONDITION_CALICO_READY).is_some_and(|c| {
            !matches!(
                c.reason.as_deref(),
                Some(REASON_NOT_INSTALLED | REASON_HANDED_TO_OPERATOR)
            )
        });
        let ours = annotated || condition;
        if ours && super::installation::label_of(n) != Some(super::installation::LABEL_VALUE) {
            names.extend(n.metadata.name.clone().map(NodeName::from_api));
        }
    })?;
    Ok(names)
}
