//! What this node judges of itself, without the config or an admin kubeconfig: the part of the
//! survey CalicoNode makes every minute (its condition and the codes beside it,
//! `supervise::condition`) and repair after its run. Each fact is gathered and judged by the
//! step `survey` takes for it (`host_facts`, `hns_facts`), so a fault is the same finding in
//! status, in the condition and in repair's report.

use super::look::Notes;
use super::{hns_facts, host_facts, metrics_facts, under_way};
use crate::installed::health::{self, Finding};
use crate::layout::{CALICO_NETWORK, InstallRoot, Role};
use std::net::Ipv4Addr;
use std::path::Path;

/// What the node's own look found, with what it read of the Node.
#[derive(Default)]
pub struct OnNode {
    /// What is wrong, in the order the survey finds it (empty when nothing is).
    pub findings: Vec<Finding>,
    /// The Node's InternalIP, when it was read.
    pub internal_ip: Option<Ipv4Addr>,
    /// The API server refused the read of the Node (401).
    pub refused: bool,
    /// The Node's `CalicoWindowsReady` status as read (`Some(true)`: True).
    pub calico_ready: Option<bool>,
    /// Said with their code and fix but no problem of the node (status shows them beside its
    /// sections): a refused review of `/diags`, Felix's leftover metrics rule.
    pub advice: Vec<Finding>,
}

/// What this node can judge of itself, with the cluster when `how` has one, by status's
/// steps and in its order: what a run left under way (a run cut off, a detached run that
/// died; `state_dir` is calicoctl-win's state directory), the services the install made but
/// CalicoNode (the one looking), the HNS networks the install made and the Calico network's
/// endpoints (by `how`'s survey), the HNS restart watchdog's services, Felix's health, the
/// node's address in each layer (the Node read with `how`'s cluster), the vSwitch adapter's
/// addressing and the metrics ports. What cannot be read is a finding too: this look always
/// says something.
pub fn on_node(
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    how: &crate::installed::endpoints::Survey<'_>,
    state_dir: Option<&Path>,
) -> OnNode {
    let mut n = Notes {
        lenient: true,
        ..Notes::default()
    };
    let mut out = OnNode::default();
    // A lenient look makes a finding of every read that fails: it returns no error.
    let _ = steps(host, (root, state_dir), how, &mut n, &mut out);
    out.findings = n.findings;
    out.advice = [n.shown.diags_review, n.shown.felix_rule]
        .into_iter()
        .flatten()
        .collect();
    out
}

/// This node's own look without the cluster, as CalicoNode's minute look judges it (`on_node`,
/// faults not aged by it): what `verify` joins to its report on the node it verifies. None when
/// Calico is not installed here.
pub fn installed_on_node(
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    node: &str,
    state_dir: Option<&Path>,
) -> anyhow::Result<Vec<Finding>> {
    use crate::installed::endpoints;
    if crate::installed::record::read(host, root)?.is_none() {
        return Ok(Vec::new());
    }
    let how = endpoints::Survey {
        cluster: None,
        node,
        grace: endpoints::DEFAULT_GRACE,
        remote: endpoints::Remote::Skip,
        ageing: endpoints::Ageing::Read,
    };
    Ok(on_node(host, root, &how, state_dir).findings)
}

/// What a run left under way, as status judges it, unless a command holds the host lock now:
/// that command (a change that started CalicoNode and waits for its condition, or repair
/// looking after its own run) is no fault of the node, and its journal is its own.
fn left_under_way(
    host: &dyn crate::host::Host,
    root: &InstallRoot,
    state_dir: Option<&Path>,
    n: &mut Notes,
) -> anyhow::Result<()> {
    // Looked at once: a second look could find a command that took the lock in between.
    let busy = state_dir.and_then(crate::host::lock::busy);
    if busy.is_some() {
        return Ok(());
    }
    let found = under_way::under_way(host, root, state_dir, busy, n);
    n.unread(found, "the runs under way").map(drop)
}

/// The survey's steps for what the node sees of itself, in the survey's order.
fn steps(
    host: &dyn crate::host::Host,
    (root, state_dir): (&InstallRoot, Option<&Path>),
    how: &crate::installed::endpoints::Survey<'_>,
    n: &mut Notes,
    out: &mut OnNode,
) -> anyhow::Result<()> {
    // The services the install made, as status judges them, but CalicoNode (the look is its
    // own, or runs right after it started); Felix alone without a record to read. The networks
    // alike: the Calico network without a record.
    left_under_way(host, root, state_dir, n)?;
    let rec = crate::installed::record::read(host, root).ok().flatten();
    let services: Vec<String> = match &rec {
        Some(rec) => rec
            .services
            .iter()
            .map(|s| s.name.clone())
            .filter(|s| s != Role::Node.service_name())
            .collect(),
        None => vec![Role::Felix.service_name().to_owned()],
    };
    for s in &services {
        host_facts::service(host, s, n)?;
    }
    let recorded = rec.map_or_else(|| vec![CALICO_NETWORK.to_owned()], |r| r.networks);
    let networks = hns_facts::networks(host, &recorded, n)?;
    hns_facts::endpoints(host, how, n)?;
    hns_facts::hns_restart(host, n);
    host_facts::felix_health(host, root, n)?;
    let mut addresses = (None, None);
    if let Some(c) = how.cluster {
        match crate::cluster::node::view(c, how.node) {
            Ok((read, status)) => {
                addresses = read;
                (out.internal_ip, out.calico_ready) = (read.0, status);
            }
            Err(e) => {
                out.refused = matches!(e, crate::cluster::ClusterError::Api { code: 401, .. });
                n.findings.push(health::cluster_unreadable(
                    how.node,
                    format!("the Node's addresses cannot be read: {e}"),
                ));
            }
        }
    }
    hns_facts::address(host, &networks, addresses, how.node, n);
    hns_facts::addressing(host, n);
    metrics_facts::metrics(host, n);
    Ok(())
}
