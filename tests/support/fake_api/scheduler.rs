//! kube-scheduler's answer to a pod it can place on no node, for the fake API server: the
//! probe pods are pinned to one node by a required node affinity on `metadata.name`, so the
//! scheduler's filters are run on that node only, and when one rejects it the pod stays
//! unbound with the scheduler's words.
//!
//! Each stand-in and where the real behaviour is written (kubernetes/kubernetes):
//! - the filters modelled: TaintToleration (`pkg/scheduler/framework/plugins/tainttoleration/
//!   taint_toleration.go`, `Filter`: a `NoSchedule` or `NoExecute` taint the pod does not
//!   tolerate, "node(s) had untolerated taint {KEY: VALUE}"), the pod tolerating it as
//!   `staging/src/k8s.io/api/core/v1/toleration.go` `ToleratesTaint` says; and NodeResourcesFit's
//!   pod count (`pkg/scheduler/framework/plugins/noderesources/fit.go`, "Too many pods") for a
//!   node the test names full (`Dataplane::full`). The pod also carries the two `NoExecute`
//!   tolerations kube-apiserver's DefaultTolerationSeconds admission adds
//!   (`plugin/pkg/admission/defaulttolerationseconds/admission.go`, `Admit`).
//! - the failure: `pkg/scheduler/schedule_one.go` `handleSchedulingFailure` records a Warning
//!   event `FailedScheduling` with the fit error's message and sets the pod's `PodScheduled`
//!   condition False with reason `Unschedulable` (`v1.PodReasonUnschedulable`,
//!   `staging/src/k8s.io/api/core/v1/types.go`); the pod stays `Pending` without
//!   `spec.nodeName`. The message is `FitError.Error`'s (`pkg/scheduler/framework/types.go`):
//!   "0/N nodes are available: " and each reason with its node count; the nodes the affinity
//!   leaves out "didn't match Pod's node affinity/selector". The scheduler's retries (the same
//!   answer while nothing changes) are not modelled.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

/// The node a probe pod's required node affinity names.
fn pinned(pod: &Value) -> Option<&str> {
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchFields"][0]["values"][0]
        .as_str()
}

/// Whether toleration `t` tolerates taint `taint` (`ToleratesTaint`).
fn tolerates(t: &Value, taint: &Value) -> bool {
    let field = |v: &Value, k: &str| v[k].as_str().unwrap_or_default().to_owned();
    let (effect, key) = (field(t, "effect"), field(t, "key"));
    (effect.is_empty() || effect == field(taint, "effect"))
        && (key.is_empty() || key == field(taint, "key"))
        && match t["operator"].as_str().unwrap_or("Equal") {
            "Exists" => true,
            "Equal" | "" => field(t, "value") == field(taint, "value"),
            _ => false,
        }
}

/// Why the filters reject `node` for `pod`, if they do.
fn rejected(
    objects: &BTreeMap<String, Value>,
    full: &BTreeSet<String>,
    pod: &Value,
    node: &str,
) -> Option<String> {
    if full.contains(node) {
        return Some("1 Too many pods".into());
    }
    let n = objects.get(&format!("/api/v1/nodes/{node}"))?;
    let mut tolerations: Vec<Value> = pod["spec"]["tolerations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        tolerations.push(
            json!({"key": key, "operator": "Exists", "effect": "NoExecute",
            "tolerationSeconds": 300}),
        );
    }
    n["spec"]["taints"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .find(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
        .map(|t| {
            format!(
                "1 node(s) had untolerated taint {{{}: {}}}",
                t["key"].as_str().unwrap_or_default(),
                t["value"].as_str().unwrap_or_default()
            )
        })
}

/// A pod being made that the scheduler can place on no node: its status set as the scheduler
/// leaves it, and the `FailedScheduling` event to keep. `None`: the pod is placed (bound by
/// `dataplane::run_pod`).
pub fn unschedulable(
    objects: &BTreeMap<String, Value>,
    full: &BTreeSet<String>,
    ns: &str,
    pod: &mut Value,
) -> Option<Value> {
    let node = pinned(pod)?.to_owned();
    let why = rejected(objects, full, pod, &node)?;
    let nodes = objects
        .keys()
        .filter(|k| k.starts_with("/api/v1/nodes/"))
        .count();
    let message = format!(
        "0/{nodes} nodes are available: {why}, {} node(s) didn't match Pod's node affinity/selector.",
        nodes.saturating_sub(1)
    );
    pod["status"] = json!({"phase": "Pending", "conditions": [{"type": "PodScheduled",
        "status": "False", "reason": "Unschedulable", "message": message}]});
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    Some(json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{name}.failedscheduling"), "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
        "reason": "FailedScheduling", "type": "Warning", "message": message}))
}
