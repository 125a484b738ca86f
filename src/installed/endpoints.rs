//! The health of the Calico network's HNS endpoints, judged against the pods: a pod's endpoint
//! that never attached (`stuck`), an endpoint no pod owns (`stale`), another host's endpoint
//! for an address no pod has any more (`remote-stale`).
//!
//! Which states are healthy, from the sources: HNS names an endpoint's states Created 1,
//! Attached 2, AttachedSharing 3, Detached 4, Degraded 5, Destroyed 6 (hcsshim
//! internal/hns/hnsendpoint.go, `EndpointState`). A running pod's endpoint is AttachedSharing:
//! Microsoft's own network policy manager for Windows asks HCN for the endpoints in State 3 and
//! says "All running Windows pods with networking must be in this state"
//! (azure-container-networking npm/pkg/dataplane/dataplane_windows.go,
//! `hcnEndpointStateAttachedSharing`). So State 3 is no fault by itself, although
//! projectcalico/calico#11203 and #12795 (and microsoft/Windows-Containers#618) report pods
//! without DNS whose endpoints showed it: those reports call 3 "detached" or "not attached",
//! which is not what HNS names it, and were closed without a cause. An endpoint of a pod that
//! is still Created, or Detached, Degraded or Destroyed, after the grace period is stuck.

use crate::cluster::drain::PodRef;
use crate::cluster::pods::{self, NodePod};
use crate::cluster::{Cluster, ClusterError};
use crate::host::HnsEndpoint;
use crate::layout::SOURCE_VIP_ENDPOINT;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a pod's endpoint may take to attach, and an address to be claimed, unless told.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(120);

/// What an endpoint is found to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// An attached endpoint of a pod on this node, the node's own endpoint (`Calico_ep`), or
    /// another host's endpoint for an address a pod has.
    Ok,
    /// A pod's endpoint that is not attached yet, within the grace period.
    Attaching,
    /// An endpoint whose address no pod has yet while a pod on this node that is younger than
    /// the grace period waits for its address.
    Unclaimed,
    /// Another host's endpoint that was not checked (the cluster was not read).
    Unchecked,
    /// A pod's endpoint that is not attached past the grace period.
    Stuck,
    /// An endpoint of this host whose address no pod on this node has, or that is not
    /// attached while another endpoint with its address is.
    Stale,
    /// Another host's endpoint whose address no pod in the cluster has.
    RemoteStale,
}

impl Verdict {
    /// The verdict's word, as JSON has it (`remote-stale`).
    pub fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Attaching => "attaching",
            Self::Unclaimed => "unclaimed",
            Self::Unchecked => "unchecked",
            Self::Stuck => "stuck",
            Self::Stale => "stale",
            Self::RemoteStale => "remote-stale",
        }
    }

    /// Whether this verdict is a fault that `repair` removes.
    pub fn is_fault(self) -> bool {
        matches!(self, Self::Stuck | Self::Stale | Self::RemoteStale)
    }
}

/// One endpoint and what it was found to be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Judged {
    pub id: String,
    pub name: String,
    pub network: String,
    pub ip: Option<String>,
    /// HNS's name for the endpoint's state, when HNS reports one.
    pub state: Option<&'static str>,
    pub remote: bool,
    /// The pod on this node with the endpoint's address (`namespace/name`).
    pub pod: Option<String>,
    pub verdict: Verdict,
    /// Why, in words, for a verdict other than `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The pod, to evict after its endpoint is removed when a controller recreates it.
    #[serde(skip)]
    pub owner: Option<(PodRef, bool)>,
}

/// What the endpoints are judged against.
pub struct Evidence<'a> {
    /// The pods on this node with a network of their own; `None` when the cluster was not read.
    pub pods: Option<&'a [NodePod]>,
    /// For another host's endpoints: whether a pod in the cluster has the address.
    pub remote_in_use: &'a BTreeMap<String, bool>,
    /// Now, in seconds since 1970.
    pub now: i64,
    pub grace: Duration,
}

impl Evidence<'_> {
    fn older_than_grace(&self, created: Option<i64>) -> bool {
        created.is_none_or(|c| self.now.saturating_sub(c) > self.grace.as_secs() as i64)
    }
}

/// An endpoint attached to its compartment: Attached 2 or AttachedSharing 3; an endpoint
/// whose state HNS does not report is taken as attached.
fn attached(e: &HnsEndpoint) -> bool {
    e.state.is_none_or(|s| s == 2 || s == 3)
}

/// Judges the endpoints of the HNS network `network`.
pub fn judge(endpoints: &[HnsEndpoint], network: &str, ev: &Evidence) -> Vec<Judged> {
    endpoints
        .iter()
        .map(|e| {
            let mut j = Judged {
                id: e.id.clone(),
                name: e.name.clone(),
                network: network.to_owned(),
                ip: e.ip.clone(),
                state: e.state.map(crate::host::hns::state_name),
                remote: e.remote,
                pod: None,
                verdict: Verdict::Ok,
                why: None,
                owner: None,
            };
            let (verdict, why) = if e.remote {
                remote(e, ev)
            } else if e.name == SOURCE_VIP_ENDPOINT {
                (Verdict::Ok, None)
            } else if let Some(pods) = ev.pods {
                local(e, endpoints, pods, ev, &mut j)
            } else {
                (Verdict::Unchecked, Some("the cluster was not read".into()))
            };
            j.verdict = verdict;
            j.why = why;
            j
        })
        .collect()
}

fn remote(e: &HnsEndpoint, ev: &Evidence) -> (Verdict, Option<String>) {
    let Some(ip) = &e.ip else {
        return (Verdict::Ok, None);
    };
    match ev.remote_in_use.get(ip) {
        Some(true) => (Verdict::Ok, None),
        Some(false) => (
            Verdict::RemoteStale,
            Some(format!(
                "another host's endpoint for {ip}, which no pod has"
            )),
        ),
        None => (
            Verdict::Unchecked,
            Some("the cluster was not asked for its address".into()),
        ),
    }
}

fn local(
    e: &HnsEndpoint,
    all: &[HnsEndpoint],
    pods: &[NodePod],
    ev: &Evidence,
    j: &mut Judged,
) -> (Verdict, Option<String>) {
    let ip = e.ip.as_deref();
    let owner = ip.and_then(|ip| pods.iter().find(|p| p.ips.iter().any(|i| i == ip)));
    let Some(pod) = owner else {
        let waiting = pods
            .iter()
            .any(|p| p.ips.is_empty() && !ev.older_than_grace(p.created));
        return if waiting {
            (
                Verdict::Unclaimed,
                Some("no pod has its address yet, and a pod on this node waits for one".into()),
            )
        } else {
            (
                Verdict::Stale,
                Some(format!(
                    "no pod on this node has {}",
                    ip.unwrap_or("its address (it has none)")
                )),
            )
        };
    };
    j.pod = Some(pod.pod.to_string());
    if attached(e) {
        return (Verdict::Ok, None);
    }
    let state = e.state.map_or("unknown", crate::host::hns::state_name);
    let sibling = all
        .iter()
        .any(|o| o.id != e.id && !o.remote && o.ip.as_deref() == ip && attached(o));
    if sibling {
        return (
            Verdict::Stale,
            Some(format!(
                "{state}, while another endpoint with its address is attached (an address used again)"
            )),
        );
    }
    j.owner = Some((pod.pod.clone(), pod.managed));
    if ev.older_than_grace(pod.created) {
        (
            Verdict::Stuck,
            Some(format!(
                "{state}: pod {} has had it for longer than {}",
                pod.pod,
                crate::duration::show(ev.grace)
            )),
        )
    } else {
        (
            Verdict::Attaching,
            Some(format!("{state}, within the grace period")),
        )
    }
}

/// At most this many of another host's addresses are looked up in the cluster per survey (one
/// list call each); the rest are `unchecked`.
pub const MAX_REMOTE_LOOKUPS: usize = 256;

/// Whether a survey asks the cluster about another host's endpoints (one list call per
/// address, at most `MAX_REMOTE_LOOKUPS`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remote {
    Ask,
    /// Left `unchecked`: a question asked every minute on every node would cost the API server
    /// a call per address per node.
    Skip,
}

/// The endpoints of each HNS network in `lists` (its name, its endpoints) judged: with the
/// cluster, against the pods on `node` (one list call) and, when asked, for another host's
/// endpoints, whether a pod in the cluster has the address; without it, nothing is called a
/// fault.
pub fn survey(
    lists: &[(String, Vec<HnsEndpoint>)],
    cluster: Option<&Cluster>,
    node: &str,
    grace: Duration,
    remote: Remote,
) -> Result<Vec<Judged>, ClusterError> {
    let (pods, remote_in_use) = match cluster {
        Some(c) => (
            Some(pods::on_node(c, node)?),
            match remote {
                Remote::Ask => remote_lookups(c, lists)?,
                Remote::Skip => BTreeMap::new(),
            },
        ),
        None => (None, BTreeMap::new()),
    };
    let ev = Evidence {
        pods: pods.as_deref(),
        remote_in_use: &remote_in_use,
        now: crate::duration::now(),
        grace,
    };
    Ok(lists
        .iter()
        .flat_map(|(network, list)| judge(list, network, &ev))
        .collect())
}

/// The Calico HNS network's endpoints on `host`, judged as `survey` does; `None` when there is
/// no Calico network.
pub fn survey_calico(
    host: &dyn crate::host::Host,
    cluster: Option<&Cluster>,
    node: &str,
    grace: Duration,
    remote: Remote,
) -> anyhow::Result<Option<Vec<Judged>>> {
    use anyhow::Context as _;
    let calico = host
        .hns_networks()
        .context("cannot read the HNS networks")?
        .into_iter()
        .find(|n| n.name == crate::layout::CALICO_NETWORK);
    let Some(calico) = calico else {
        return Ok(None);
    };
    let list = host
        .hns_endpoints(&calico.id)
        .with_context(|| format!("cannot read the endpoints of HNS network {}", calico.name))?;
    let judged = survey(&[(calico.name, list)], cluster, node, grace, remote)
        .context("cannot read the pods")?;
    Ok(Some(judged))
}

fn remote_lookups(
    c: &Cluster,
    lists: &[(String, Vec<HnsEndpoint>)],
) -> Result<BTreeMap<String, bool>, ClusterError> {
    let mut out = BTreeMap::new();
    // What HNS gives as an address is asked about only when it is one (it goes into a field
    // selector); anything else stays `unchecked`.
    let ips = lists
        .iter()
        .flat_map(|(_, l)| l)
        .filter(|e| e.remote)
        .filter_map(|e| Some((e.ip.clone()?, e.ip.as_deref()?.parse().ok()?)));
    for (text, ip) in ips {
        if out.len() >= MAX_REMOTE_LOOKUPS {
            break;
        }
        if let std::collections::btree_map::Entry::Vacant(slot) = out.entry(text) {
            slot.insert(pods::ip_in_use(c, ip)?);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests;
