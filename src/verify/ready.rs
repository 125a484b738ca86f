//! `install --verify` and `reconfigure --verify` wait, within `--timeout`, for the Node's `Ready`
//! True (kubelet `pkg/kubelet/nodestatus/setters.go` `ReadyCondition`) and `CalicoWindowsReady`
//! True written since the command's start (`written_since`) before they plan. A cordoned node
//! is refused at once (`PlanError::NotUsable`), unless `--while-cordoned`
//! (`commands::verify::plan_gate`).

use super::matrix::{PlanError, RunError};
use super::options::Options;
use super::step::{Ended, done_if, poll};
use crate::cluster::Cluster;
use crate::cluster::node::CONDITION_CALICO_READY;
use k8s_openapi::api::core::v1::Node;
use kube::Api;
use std::time::Instant;

/// Waits until the node is Ready and Calico is (or it is cordoned), or `until`, or the run's
/// stop: the run's one wait loop (`step::poll`), which says what it waits for.
pub fn wait(c: &Cluster, o: &Options, until: Instant) -> Result<(), RunError> {
    let api: Api<Node> = Api::all(c.client.clone());
    let start = Instant::now();
    let what = format!("nodes/{}", o.node);
    let waited_for = format!("node {} to be Ready and Calico on it ready", o.node);
    let ended = poll(o, &waited_for, until, || {
        let node = c.call_opt("get", &what, api.get(o.node.as_str()))?;
        let missing = match &node {
            None => vec!["the Node object (kubelet registers it)".to_owned()],
            // The fleet Plan's node is cordoned for its change: it is waited for all the same.
            Some(n) if crate::cluster::drain::unschedulable(n) && !o.while_cordoned => Vec::new(),
            Some(n) => missing(n, o.calico_since),
        };
        Ok(done_if(missing.is_empty(), missing))
    })?;
    let missing = match ended {
        Some((_, Ended::Done)) => return Ok(()),
        Some((missing, _)) => missing.join("; "),
        None => "a look at the node (the run was stopped before it)".to_owned(),
    };
    Err(RunError::Plan(PlanError::NeverReady {
        node: o.node.to_string(),
        waited_s: start.elapsed().as_secs(),
        missing,
    }))
}

/// The conditions not yet True, each with its status and what it says; `CalicoWindowsReady`
/// True counts only when written after `since` (`written_since`).
pub fn missing(n: &Node, since: Option<i64>) -> Vec<String> {
    let conditions = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    ["Ready", CONDITION_CALICO_READY]
        .iter()
        .filter_map(|t| match conditions.iter().find(|c| c.type_ == *t) {
            Some(c) if c.status == "True" && *t == CONDITION_CALICO_READY => {
                written_since(n, c, since)
            }
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

/// Why a `CalicoWindowsReady` True is not taken as written after `since`: neither its
/// `lastHeartbeatTime` nor the codes annotation's heartbeat (`cluster::node::report`, from the
/// node's clock, which `since` is read on) is in a whole second after it.
fn written_since(
    n: &Node,
    c: &k8s_openapi::api::core::v1::NodeCondition,
    since: Option<i64>,
) -> Option<String> {
    let since = since?;
    let condition = c.last_heartbeat_time.as_ref().map(|t| t.0.as_second());
    let annotation = n
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(crate::cluster::node::ANNOTATION_FINDING_CODES))
        .and_then(|text| crate::fleet::view::codes_of(text).ok())
        .and_then(|codes| codes.heartbeat);
    let beat = condition.max(annotation);
    if beat.is_some_and(|b| b > since) {
        return None;
    }
    let at = beat.map_or("none".to_owned(), crate::duration::time_text);
    Some(format!(
        "{CONDITION_CALICO_READY} is True but was last written before this command started, or CalicoNode's last start (heartbeat {at}, start {}): CalicoNode writes it at its start, on a change, and every {}",
        crate::duration::time_text(since),
        crate::duration::show(crate::cluster::node::CONDITION_HEARTBEAT)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(beat: &str, annotation: Option<&str>) -> Node {
        let mut n = json!({"metadata": {"name": "win-a"}, "status": {"conditions": [
            {"type": "Ready", "status": "True"},
            {"type": CONDITION_CALICO_READY, "status": "True", "lastHeartbeatTime": beat},
        ]}});
        if let Some(a) = annotation {
            n["metadata"]["annotations"] =
                json!({ crate::cluster::node::ANNOTATION_FINDING_CODES: a });
        }
        serde_json::from_value(n).unwrap()
    }

    /// A `CalicoWindowsReady` True written before the command's start (a reconfigure's old
    /// Calico) is not taken; one written after it is, by the condition's heartbeat or the
    /// codes annotation's; without a start (a plain `verify`) any True is.
    #[test]
    fn calico_ready_counts_only_when_written_after_the_commands_start() {
        let start = 1_700_000_000;
        let before = crate::duration::time_text(start - 30);
        let same_second = crate::duration::time_text(start);
        let after = crate::duration::time_text(start + 5);
        let stale = missing(&node(&before, None), Some(start));
        assert_eq!(stale.len(), 1, "{stale:?}");
        assert!(
            stale[0].contains("before this command started"),
            "{stale:?}"
        );
        assert_eq!(missing(&node(&same_second, None), Some(start)).len(), 1);
        assert!(missing(&node(&after, None), Some(start)).is_empty());
        let codes = json!({"heartbeat": after, "codes": []}).to_string();
        assert!(missing(&node(&before, Some(&codes)), Some(start)).is_empty());
        assert!(missing(&node(&before, None), None).is_empty());
    }
}
