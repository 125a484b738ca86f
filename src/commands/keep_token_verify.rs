//! `service keep-token --verify-every D`: the fleet DaemonSet's container also runs `verify`
//! for its node every D (in `calicoctl-win-verify`, as the pod's account with verify's roles)
//! and publishes the result in the Node's condition `CalicoWindowsTraffic`, shaped as
//! CalicoNode's `CalicoWindowsReady` (status, reason, the failing checks' findings as
//! "sentence [code]", heartbeat, a transition time only when the status changes) and set as
//! CalicoNode sets that one: with calico-node's own credential, whose ClusterRole may patch
//! `nodes/status` (projectcalico/calico v3.31.7 `manifests/calico.yaml`), so the fleet's
//! account gets no right to change Nodes' status.

use crate::cluster::{Cluster, credentials};
use crate::context::Context;
use crate::host::Host;
use crate::verify::judge::Outcome;
use crate::verify::run::{self, Options, Report, RunError};

/// The condition's type.
pub const CONDITION: &str = "CalicoWindowsTraffic";
/// At most this many failing checks are named in the message (as CalicoNode's condition).
const MAX_REASONS: usize = 10;

/// Runs verify for `node` and sets the condition: what was done, in words. A run that could
/// not judge the node (cordoned or not Ready, another run's turn held to the end, the cluster
/// refusing) sets nothing: the condition keeps its last verdict and heartbeat.
pub fn verify_and_publish(
    ctx: &mut Context,
    host: &dyn Host,
    kubeconfig: &str,
    node: &str,
) -> anyhow::Result<String> {
    let cluster = ctx.connect_cluster()?.ok_or_else(|| {
        anyhow::anyhow!("verify needs the pod's own credential, and this process has none")
    })?;
    let o = Options {
        namespace: Some(crate::cluster::verify_rights::NAMESPACE.to_owned()),
        ..Options::for_node(node)
    };
    let report = match run::run(&cluster, &o) {
        Ok(r) => r,
        Err(RunError::Plan(e)) => anyhow::bail!("verify did not run: {e}"),
        Err(RunError::Cluster(e)) => anyhow::bail!("verify did not run: {e} ({})", e.hint()),
    };
    // The verdict in the node's metrics too; metrics never stop the run.
    let at = crate::duration::now();
    if let Err(e) = crate::installed::metrics::record_verify(host, report.passed, at) {
        ctx.printer
            .warn(&format!("cannot keep verify's verdict in its metrics: {e}"));
    }
    let token = credentials::node_token(host, kubeconfig)?
        .ok_or_else(|| anyhow::anyhow!("calico-node has no token in {kubeconfig}"))?;
    let text = host
        .read_file(kubeconfig)?
        .ok_or_else(|| anyhow::anyhow!("{kubeconfig} is missing"))?;
    let as_node = Cluster::connect_as_node(
        kubeconfig,
        &String::from_utf8_lossy(&text),
        &token,
        &ctx.env,
    )?;
    let nodes: kube::Api<k8s_openapi::api::core::v1::Node> = kube::Api::all(as_node.client.clone());
    let before = as_node
        .call_opt("get", &format!("nodes/{node}"), nodes.get(node))
        .ok()
        .flatten()
        .and_then(|n| status_of(&n));
    let c = condition(&report, before.as_deref());
    crate::cluster::node::set_condition(&as_node, node, &c)?;
    Ok(format!(
        "verify: node {node} {}; condition {CONDITION} {}",
        if report.passed {
            "passes traffic"
        } else {
            "does not pass traffic"
        },
        c["status"].as_str().unwrap_or_default()
    ))
}

fn status_of(n: &k8s_openapi::api::core::v1::Node) -> Option<String> {
    n.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == CONDITION)
        .map(|c| c.status.clone())
}

/// The condition a report sets, given the status the Node carries (`before`).
pub fn condition(r: &Report, before: Option<&str>) -> serde_json::Value {
    let now = crate::duration::time_text(crate::duration::now());
    let mut reasons: Vec<String> = r
        .checks
        .iter()
        .filter_map(|v| match &v.outcome {
            Outcome::Fail { finding } => {
                Some(format!("{} [{}]", finding.message, finding.code.word()))
            }
            _ => None,
        })
        .collect();
    if r.timed_out || r.interrupted {
        reasons.push(format!(
            "verify did not finish: {} of its checks judged",
            r.checks.len()
        ));
    }
    if reasons.len() > MAX_REASONS {
        let more = reasons.len() - MAX_REASONS;
        reasons.truncate(MAX_REASONS);
        reasons.push(format!("and {more} more"));
    }
    let status = if r.passed { "True" } else { "False" };
    let mut c = serde_json::json!({
        "type": CONDITION,
        "status": status,
        "reason": if r.passed { "TrafficPasses" } else { "TrafficFails" },
        "message": if r.passed {
            format!("every verify check passed ({} checks, calicoctl-win)", r.checks.len())
        } else {
            reasons.join("; ")
        },
        "lastHeartbeatTime": now,
    });
    if before != Some(status) {
        c["lastTransitionTime"] = serde_json::json!(now);
    }
    c
}
