//! The operator's HostProcess install on Windows (tigera/operator release-v1.44): its
//! `calico-node-windows` DaemonSet and the node label that keeps it off the nodes calicoctl-win
//! runs Calico on (the Installation is `cluster::installation`'s). The DaemonSet tolerates
//! every taint (`pkg/render/windows.go`: `rmeta.TolerateAll`): only its node selector and
//! affinity keep it off a node.

pub use super::installation::{
    AUTO_CNI_SPEC_VERSION, CniDirs, DEFAULT, Installation, LABEL, LABEL_VALUE, OVERLAY,
    affinity_patch, dataplane_patch, excludes, label_of, patch_installation, read,
};
use super::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::Pod;
use serde_json::json;
use std::time::Duration;

/// Where the operator runs Calico, and its Windows DaemonSet (`common.CalicoNamespace`,
/// `common.WindowsDaemonSetName`).
pub const NAMESPACE: &str = "calico-system";
pub const DAEMONSET: &str = "calico-node-windows";

/// The node annotation that says `migrate` cordoned the node, so the run that finishes it
/// uncordons it.
pub const CORDONED_ANNOTATION: &str = "calicoctl-win/migrate-cordoned";

/// Whether `migrate` cordoned the node (its annotation).
pub fn cordoned_by_migrate(c: &Cluster, node: &NodeName) -> Result<bool, ClusterError> {
    Ok(super::node::read(c, node)?
        .metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(CORDONED_ANNOTATION)))
}

/// Where the operator's pod on a node is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PodState {
    /// No pod of the DaemonSet on the node.
    Gone,
    /// A pod, not yet Running and Ready: its name and phase.
    Starting(String),
    /// A pod on its way out (a deletion timestamp): its name.
    Terminating(String),
    Ready(String),
}

impl std::fmt::Display for PodState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Gone => write!(f, "no {DAEMONSET} pod"),
            Self::Starting(p) => write!(f, "{p} starting"),
            Self::Terminating(p) => write!(f, "{p} terminating"),
            Self::Ready(p) => write!(f, "{p} running and ready"),
        }
    }
}

fn is_operator_pod(p: &Pod) -> bool {
    p.metadata.namespace.as_deref() == Some(NAMESPACE)
        && p.metadata.owner_references.as_ref().is_some_and(|o| {
            o.iter()
                .any(|r| r.kind == "DaemonSet" && r.name == DAEMONSET)
        })
}

/// The state of a set of pods on one node.
pub fn pod_state(pods: &[Pod]) -> PodState {
    let Some(p) = pods.iter().find(|p| is_operator_pod(p)) else {
        return PodState::Gone;
    };
    let name = p.metadata.name.clone().unwrap_or_default();
    if p.metadata.deletion_timestamp.is_some() {
        return PodState::Terminating(name);
    }
    let status = p.status.as_ref();
    let ready = status
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    match status.and_then(|s| s.phase.as_deref()).unwrap_or("Pending") {
        "Running" if ready => PodState::Ready(name),
        phase => PodState::Starting(format!("{name} ({phase})")),
    }
}

/// What a wait for the operator's pod waits for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Want {
    Ready,
    Gone,
}

/// Why a wait for the operator's pod failed.
#[derive(Debug, thiserror::Error)]
pub enum OperatorError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error(
        "the operator did not render its {DAEMONSET} DaemonSet for node {node} within {}: {state}",
        crate::duration::show(*.after)
    )]
    DaemonSetTimeout {
        node: String,
        after: Duration,
        state: String,
    },
    #[error(
        "the operator's {DAEMONSET} pod on node {node} was not {} within {}: {state}",
        match .want { Want::Ready => "running and ready", Want::Gone => "gone" },
        crate::duration::show(*.after)
    )]
    PodTimeout {
        node: String,
        want: Want,
        after: Duration,
        state: PodState,
    },
}

impl crate::error::Diagnose for OperatorError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        match self {
            Self::Cluster(e) => e.diagnose(),
            Self::DaemonSetTimeout { .. } => crate::error::Diagnosis::new(
                crate::error::Exit::Timeout,
                crate::error::Kind::OperatorPodTimeout,
                "see 'kubectl get tigerastatus -o yaml' and the operator's log ('kubectl logs deploy/tigera-operator' in its namespace: 'kubectl get deploy -A -l k8s-app=tigera-operator'); migrate put the Installation back and changed nothing on the node: run it again once the operator renders Windows",
            ),
            Self::PodTimeout { node, .. } => crate::error::Diagnosis::new(
                crate::error::Exit::Timeout,
                crate::error::Kind::OperatorPodTimeout,
                format!(
                    "see 'kubectl -n {NAMESPACE} get pods -o wide --field-selector spec.nodeName={node}' and 'kubectl -n {NAMESPACE} describe ds {DAEMONSET}'; the node stays cordoned: running the same migrate again waits for the pod and uncordons it, or 'kubectl uncordon {node}'"
                ),
            ),
        }
    }
}

/// The operator's pod on a node now.
pub fn pod_on(c: &Cluster, node: &NodeName) -> Result<PodState, ClusterError> {
    Ok(pod_state(&super::drain::pods_on(c, node)?))
}

impl Cluster {
    /// Sets the label on a node (`None`: removes it).
    pub fn set_label(&self, node: &NodeName, value: Option<&str>) -> anyhow::Result<()> {
        let patch = json!({"metadata": {"labels": {LABEL: value}}});
        Ok(super::node::patch(self, node, &patch)?)
    }

    /// Sets (or removes) `CORDONED_ANNOTATION`.
    pub fn mark_cordoned(&self, node: &NodeName, on: bool) -> anyhow::Result<()> {
        let value = on.then_some("true");
        let patch = json!({"metadata": {"annotations": {CORDONED_ANNOTATION: value}}});
        Ok(super::node::patch(self, node, &patch)?)
    }

    /// Waits until the node's operator pod is as wanted; the error says what it was at the end.
    pub fn wait_operator_pod(
        &self,
        node: &NodeName,
        want: Want,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let done = |state: &PodState| match want {
            Want::Ready => matches!(state, PodState::Ready(_)),
            Want::Gone => *state == PodState::Gone,
        };
        let pending = || Ok(Some(pod_on(self, node)?).filter(|s| !done(s)));
        Ok(poll(timeout, pending, |state| OperatorError::PodTimeout {
            node: node.to_string(),
            want,
            after: timeout,
            state,
        })?)
    }

    /// Waits until `daemonset_blocker` finds nothing; the error says what stood in the way last.
    pub fn wait_operator_daemonset(
        &self,
        node: &NodeName,
        timeout: Duration,
    ) -> anyhow::Result<()> {
        let pending = || daemonset_blocker(self, node);
        Ok(poll(timeout, pending, |state| {
            OperatorError::DaemonSetTimeout {
                node: node.to_string(),
                after: timeout,
                state,
            }
        })?)
    }

    /// `NetworkUnavailable` False, as calico-node sets it when it runs (calico v3.32.1
    /// `node/pkg/lifecycle/utils/utils.go` `SetNodeNetworkUnavailableCondition`), after the
    /// operator pod's preStop set it True (`network_unavailable`).
    pub fn clear_network_unavailable(&self, node: &NodeName) -> anyhow::Result<()> {
        let up = "Calico is running on this node";
        let condition = super::node::condition("NetworkUnavailable", "False", "CalicoIsUp", up);
        Ok(super::node::set_condition(self, node, &condition)?)
    }
}

/// Looks every 100 ms to 2 s until `pending` finds nothing left, for at most `timeout`.
fn poll<P>(
    timeout: Duration,
    mut pending: impl FnMut() -> Result<Option<P>, ClusterError>,
    timed_out: impl FnOnce(P) -> OperatorError,
) -> Result<(), OperatorError> {
    use crate::duration::{Look, Pauses, poll_quietly};
    let pauses = Pauses {
        first: Duration::from_millis(100),
        most: Duration::from_secs(2),
    };
    poll_quietly(
        std::time::Instant::now() + timeout,
        pauses,
        || Ok(pending()?.map_or(Look::Done(()), Look::Pending)),
        |state| Err(timed_out(state)),
    )
}

/// The operator's ConfigMap of the API server's address (`render.K8sSvcEndpointConfigMapName`),
/// which its Windows controller reads before it validates (tigera/operator release-v1.44
/// `windows_controller.go`: `utils.GetK8sServiceEndPoint`, `PopulateK8sServiceEndPoint`).
pub const SERVICES_ENDPOINT: &str = "kubernetes-services-endpoint";

/// The ConfigMap's `KUBERNETES_SERVICE_HOST` and `KUBERNETES_SERVICE_PORT`, each if set.
pub type ServicesEndpoint = (Option<String>, Option<String>);

/// The operator's `kubernetes-services-endpoint` ConfigMap in its namespace
/// (`operator_namespace::locate`); `None` without one.
pub fn services_endpoint(
    c: &Cluster,
    namespace: &str,
) -> Result<Option<ServicesEndpoint>, ClusterError> {
    // The operator's OPERATOR_NAMESPACE set empty: its client asks for the ConfigMap without
    // a namespace, which kube-apiserver serves no object at.
    if namespace.is_empty() {
        return Ok(None);
    }
    let map = c.get_in::<k8s_openapi::api::core::v1::ConfigMap>(namespace, SERVICES_ENDPOINT)?;
    Ok(map.map(|m| {
        let data = m.data.unwrap_or_default();
        (
            data.get("KUBERNETES_SERVICE_HOST").cloned(),
            data.get("KUBERNETES_SERVICE_PORT").cloned(),
        )
    }))
}

/// The TigeraStatus objects of the core and the Windows controllers (tigera/operator
/// release-v1.44 `pkg/controller/installation/windows_controller.go`, `status.New`).
pub const TIGERA_STATUSES: [&str; 2] = ["calico", "calico-windows"];

/// What stands between the operator and this node's pod: a TigeraStatus Degraded (each
/// controller's `SetDegraded` on an Installation it cannot render: release-v1.44
/// `core_controller.go`, `windows_controller.go`), its Windows DaemonSet not rendered, or its
/// placement not taking the node once calicoctl-win's label is off.
pub fn daemonset_blocker(c: &Cluster, node: &NodeName) -> Result<Option<String>, ClusterError> {
    if let Some(why) = degraded_status(c)? {
        return Ok(Some(why));
    }
    let Some(ds) = c.get_in::<k8s_openapi::api::apps::v1::DaemonSet>(NAMESPACE, DAEMONSET)? else {
        return Ok(Some(format!("no DaemonSet {NAMESPACE}/{DAEMONSET} yet")));
    };
    // A DaemonSet an earlier switch-on left (the operator never deletes it when Windows goes
    // off: `windows_controller.go` returns) is not this one until it carries the affinity
    // that keeps it off calicoctl-win's nodes and its controller has seen that spec.
    let generation = ds.metadata.generation;
    let observed = ds.status.as_ref().and_then(|s| s.observed_generation);
    if let (Some(g), Some(o)) = (generation, observed)
        && o < g
    {
        return Ok(Some(format!(
            "the DaemonSet's controller has not seen its generation {g} yet"
        )));
    }
    let n = super::node::read(c, node)?;
    let mut labels = n.metadata.labels.unwrap_or_default();
    labels.remove(LABEL);
    let spec = ds.spec.and_then(|s| s.template.spec).unwrap_or_default();
    let selects = spec
        .node_selector
        .unwrap_or_default()
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v));
    let affinity = serde_json::to_value(&spec.affinity).unwrap_or_default();
    if !super::installation::excludes(&affinity) {
        return Ok(Some(format!(
            "the DaemonSet does not keep off nodes labelled {LABEL}={LABEL_VALUE} yet"
        )));
    }
    if !selects || !super::installation::affinity_matches(&affinity, &labels) {
        return Ok(Some(format!(
            "the DaemonSet's node selector and affinity do not take node {node} even without label {LABEL}"
        )));
    }
    Ok(None)
}

/// A Degraded TigeraStatus of the controllers that render for Windows, with its reason.
pub fn degraded_status(c: &Cluster) -> Result<Option<String>, ClusterError> {
    let statuses = c.dynamic(("operator.tigera.io", "v1", "TigeraStatus", "tigerastatuses"));
    for name in TIGERA_STATUSES {
        let status = c
            .call_opt(
                "get",
                &format!("tigerastatuses.operator.tigera.io/{name}"),
                statuses.get(name),
            )?
            .map(|o| o.data);
        if let Some(why) = status.as_ref().and_then(degraded) {
            return Ok(Some(format!("TigeraStatus {name} is Degraded: {why}")));
        }
    }
    Ok(None)
}

/// The message of a TigeraStatus's `Degraded` condition that is True.
fn degraded(status: &serde_json::Value) -> Option<String> {
    status["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Degraded" && c["status"] == "True")
        .map(|c| {
            format!(
                "{}: {}",
                c["reason"].as_str().unwrap_or("no reason"),
                c["message"].as_str().unwrap_or("no message")
            )
        })
}

/// Whether the node's `NetworkUnavailable` condition is True (the operator pod's preStop sets
/// it so for a hundred years: calico v3.32.1 `node/pkg/lifecycle/shutdown/shutdown.go`).
pub fn network_unavailable(c: &Cluster, node: &NodeName) -> Result<bool, ClusterError> {
    let n = super::node::read(c, node)?;
    Ok(super::node::condition_of(&n, "NetworkUnavailable").is_some_and(|c| c.status == "True"))
}

#[cfg(test)]
#[path = "operator_tests.rs"]
mod tests;
