//! The fleet as its nodes say it: each Windows node's annotations (what install and
//! reconfigure put there) and CalicoNode's condition, and what is not as it should be,
//! against the config most nodes have.

use super::node::{
    ANNOTATION_CALICO_VERSION, ANNOTATION_CONFIG_HASH, ANNOTATION_TOOL_VERSION,
    CONDITION_CALICO_READY,
};
use k8s_openapi::api::core::v1::Node;
use std::collections::BTreeMap;

/// One Windows node as `fleet status` shows it.
#[derive(Debug, serde::Serialize)]
pub struct NodeRow {
    pub name: String,
    pub calicoctl_win: Option<String>,
    pub calico: Option<String>,
    pub config_hash: Option<String>,
    /// kubelet's Ready condition.
    pub ready: Option<String>,
    /// CalicoNode's `CalicoWindowsReady`: True, False, or none yet.
    pub calico_ready: Option<String>,
    pub reasons: Option<String>,
}

/// What a node says of itself.
pub fn node_row(n: &Node) -> NodeRow {
    let note = |k: &str| {
        n.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k).cloned())
    };
    let conditions = n.status.as_ref().and_then(|s| s.conditions.as_ref());
    let condition = |kind: &str| conditions.and_then(|cs| cs.iter().find(|c| c.type_ == kind));
    let calico = condition(CONDITION_CALICO_READY);
    NodeRow {
        name: n.metadata.name.clone().unwrap_or_default(),
        calicoctl_win: note(ANNOTATION_TOOL_VERSION),
        calico: note(ANNOTATION_CALICO_VERSION),
        config_hash: note(ANNOTATION_CONFIG_HASH),
        ready: condition("Ready").map(|c| c.status.clone()),
        calico_ready: calico.map(|c| c.status.clone()),
        reasons: calico
            .filter(|c| c.status != "True")
            .and_then(|c| c.message.clone()),
    }
}

/// What is not as it should be on one node.
pub fn row_problems(r: &NodeRow, fleet_hash: Option<&str>) -> Vec<String> {
    let mut out = Vec::new();
    if r.ready.as_deref() != Some("True") {
        out.push(format!("node {} is not Ready", r.name));
    }
    match r.calico_ready.as_deref() {
        Some("True") => {}
        Some(_) => out.push(format!(
            "Calico on node {} is degraded: {}",
            r.name,
            r.reasons.as_deref().unwrap_or("no reason given")
        )),
        None => out.push(format!(
            "node {} has no CalicoWindowsReady condition (no CalicoNode of this calicoctl-win runs there)",
            r.name
        )),
    }
    if r.config_hash.as_deref() != fleet_hash {
        out.push(format!(
            "node {} has {} config, not the fleet's",
            r.name,
            r.config_hash
                .as_deref()
                .map_or("no recorded".to_owned(), |h| format!(
                    "another ({})",
                    short_hash(h)
                ))
        ));
    }
    out
}

/// The value most items have (the first of equals in sort order), if any.
pub fn most_common<'a>(items: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for i in items {
        *counts.entry(i).or_default() += 1;
    }
    let best = counts.values().copied().max()?;
    counts
        .into_iter()
        .find(|(_, n)| *n == best)
        .map(|(k, _)| k.to_owned())
}

/// `sha256:` and the first 8 hex digits.
pub fn short_hash(h: &str) -> String {
    let hex = h.strip_prefix("sha256:").unwrap_or(h);
    format!("sha256:{}", hex.get(..8).unwrap_or(hex))
}
