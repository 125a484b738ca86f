//! HNS as the services left it (the networks, their endpoints judged against the pods, the
//! last HNS restart), the VNI in each layer, the node's address in each layer and the
//! vSwitch adapter's addressing.

use super::judge;
use super::look::Notes;
use super::sections::{Address, AddressingNow, Vni};
use crate::cluster::read::ClusterRead;
use crate::config::Config;
use crate::duration::time_text;
use crate::host::{HnsNetwork, Host};
use crate::installed::endpoints;
use crate::k8s_name::NodeName;
use crate::layout::{CALICO_NETWORK, EXTERNAL_NETWORK};
use anyhow::Context as _;
use std::net::Ipv4Addr;

/// Calico's HNS networks, with the endpoints on each (how many a network recreation would
/// cut off); each of the `recorded` ones missing is a finding.
pub(super) fn networks(
    host: &dyn Host,
    recorded: &[String],
    n: &mut Notes,
) -> anyhow::Result<Vec<HnsNetwork>> {
    n.shown.recorded_networks = recorded.to_vec();
    if recorded.is_empty() {
        return Ok(Vec::new());
    }
    let read = host
        .hns_networks()
        .context("the HNS networks cannot be read");
    // Not read (a lenient look): no network is called missing.
    let Some(all) = n.unread(read, "HNS networks")? else {
        return Ok(Vec::new());
    };
    let networks: Vec<HnsNetwork> = all
        .into_iter()
        .filter(|n| n.name == CALICO_NETWORK || n.name == EXTERNAL_NETWORK)
        .collect();
    let mut summaries = std::collections::BTreeMap::new();
    for net in &networks {
        let read = host
            .hns_endpoints(&net.id)
            .with_context(|| format!("the endpoints of HNS network {} cannot be read", net.name));
        if let Some(list) = n.unread(read, &net.name)? {
            summaries.insert(net.name.clone(), endpoint_summary(&list));
        }
    }
    let missing = recorded
        .iter()
        .filter(|name| !networks.iter().any(|net| &net.name == *name));
    n.findings
        .extend(missing.map(|name| judge::network_missing(name)));
    n.shown.network_endpoints = summaries.into_iter().collect();
    Ok(networks)
}

/// The Calico network's endpoints judged against the pods (with the cluster), by the one survey
/// `repair` makes too: each fault seen for longer than the grace period is a problem, named
/// with its pod and why; a suspect one is shown.
pub(super) fn endpoints(
    h: &dyn Host,
    how: &endpoints::Survey<'_>,
    n: &mut Notes,
) -> anyhow::Result<Vec<endpoints::Judged>> {
    // A read that fails (the pods, the EndpointSlices) is a problem in the report, not its end.
    // No Calico network: `networks` says it missing.
    use crate::cluster::ClusterError;
    let timeout = |c: &(dyn std::error::Error + 'static)| {
        matches!(c.downcast_ref(), Some(ClusterError::Timeout { .. }))
    };
    let judged = match endpoints::survey_calico(h, how) {
        Ok(judged) => judged.unwrap_or_default(),
        // A wait that ran out is status's end, as everywhere: cluster-timeout, exit 4.
        Err(e) if e.chain().any(timeout) && !n.lenient => return Err(e),
        Err(e) => {
            n.findings.push(judge::endpoints_unjudged(format!("{e:#}")));
            Vec::new()
        }
    };
    n.findings.extend(judged.iter().filter_map(judge::endpoint));
    let unknown = judged
        .iter()
        .filter(|j| j.is_pod_endpoint() && j.state.is_none())
        .count();
    n.shown.endpoint_states = (unknown > 0).then(|| judge::endpoint_states_unknown(unknown));
    Ok(judged)
}

/// The last HNS restart CalicoNode answered (`supervise::hns_watch`): shown; a service it could
/// not restart then is a problem.
pub(super) fn hns_restart(
    h: &dyn Host,
    n: &mut Notes,
) -> Option<crate::installed::hns_restart::HnsRestart> {
    let last = crate::installed::hns_restart::last(h)?;
    n.findings.extend(judge::hns_restart(
        &last.still_failing(h),
        &time_text(last.at),
    ));
    Some(last)
}

/// The VXLAN VNI in the config, in HNS and in the cluster, and how they disagree.
pub(super) fn vni(
    config: &Config,
    networks: &[HnsNetwork],
    cluster: &ClusterRead,
    n: &mut Notes,
) -> Vni {
    let hns_vni = networks
        .iter()
        .find(|net| net.name == CALICO_NETWORK)
        .and_then(HnsNetwork::vsid);
    let felix = match cluster {
        ClusterRead::Read(_, f) => Some(&f.felix),
        _ => None,
    };
    let cluster_vni = felix.map(crate::cluster::facts::Felix::vni);
    let config_vni = config.vxlan.vni.get();
    if config.backend == crate::config::types::Backend::Vxlan {
        n.findings.extend(judge::vni(config_vni, hns_vni, felix));
    }
    Vni {
        config: config_vni,
        hns: hns_vni,
        cluster: cluster_vni,
    }
}

/// The vSwitch's host adapter against its adapter's addressing before the vSwitch
/// (`health::addressing`): what CalicoNode kept for the External network there is now, the
/// findings (lost when the vSwitch was made and not back), and what changed since (an
/// administrator's: shown, never a finding, never put back).
pub(super) fn addressing(h: &dyn Host, n: &mut Notes) -> Option<AddressingNow> {
    use crate::installed::addressing as kept_addressing;
    let networks = h.hns_networks().unwrap_or_default();
    let before = kept_addressing::current(h, &networks)?;
    let adapters = h.adapters().map_err(|e| {
        let said = format!("the network adapters cannot be read: {e}");
        n.findings
            .push(judge::host_unreadable("network adapters", said));
    });
    let adapters = adapters.unwrap_or_default();
    let Some(now) = before.host_adapter(&adapters) else {
        return Some(AddressingNow {
            before_vswitch: before,
            lost_when_made: None,
            changed_since: None,
        });
    };
    let lost = kept_addressing::as_left(&before, now);
    n.findings
        .extend(judge::addressing((&before, now), &lost, &adapters));
    let said = |v: &[kept_addressing::Drift]| -> Vec<String> {
        v.iter().map(|d| d.describe(&before, now)).collect()
    };
    Some(AddressingNow {
        lost_when_made: Some(said(&lost)),
        changed_since: Some(said(&kept_addressing::changed_since(&before, now))),
        before_vswitch: before,
    })
}

/// The node's address in each layer that must agree (`health::node_address`): the Node's
/// InternalIP and the Calico Node's BGP address (as the look read the Node; none when it did
/// not), the management IP of Calico's HNS networks.
pub(super) fn address(
    h: &dyn Host,
    networks: &[HnsNetwork],
    (internal, bgp): (Option<Ipv4Addr>, Option<Ipv4Addr>),
    node_name: &NodeName,
    n: &mut Notes,
) -> Address {
    let ours = judge::management_ips(networks);
    let adapters = h.adapters().ok();
    n.findings.extend(judge::node_address(
        node_name,
        (internal, bgp),
        &ours,
        adapters.as_deref(),
    ));
    Address {
        internal_ip: internal,
        bgp,
        networks: ours
            .iter()
            .map(|(name, ip)| ((*name).to_owned(), *ip))
            .collect(),
    }
}

/// How many endpoints a network has, how many are other hosts', and their states.
fn endpoint_summary(list: &[crate::host::HnsEndpoint]) -> String {
    let mut states: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for e in list {
        if let Some(s) = e.state {
            *states.entry(crate::host::hns::state_name(s)).or_default() += 1;
        }
    }
    let remote = list.iter().filter(|e| e.remote).count();
    let mut out = format!("{} endpoint(s)", list.len());
    if remote > 0 {
        out.push_str(&format!(", {remote} remote"));
    }
    if !states.is_empty() {
        let s: Vec<String> = states.iter().map(|(k, n)| format!("{k} {n}")).collect();
        out.push_str(&format!(" (states: {})", s.join(", ")));
    }
    out
}
