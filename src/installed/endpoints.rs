//! The health of the Calico network's HNS endpoints, judged against the pods (`Verdict`).
//! Only what is told positively is judged (`kind`): anything else is `unknown`, reported and
//! never deleted. What `repair` deletes is judged on evidence, never on one look:
//! - a fault counts only once seen at fault for longer than the grace period (`seen`, recorded
//!   by CalicoNode every minute; until then `suspect`);
//! - an address no pod has is `unclaimed` while a pod on the node may still claim it
//!   (`may_claim`);
//! - another host's endpoints are kube-proxy's (kubernetes pkg/proxy/winkernel/proxier.go makes
//!   one for every Service backend not on its node): while kube-proxy runs they are left to it.
//!
//! HNS's states are `host::hns::state_name`'s; a running pod's endpoint is AttachedSharing (3:
//! azure-container-networking npm/pkg/dataplane/dataplane_windows.go,
//! `hcnEndpointStateAttachedSharing`).

use crate::cluster::Cluster;
use crate::cluster::drain::PodRef;
use crate::cluster::pods::{self, NodePod};
use crate::host::HnsEndpoint;
use anyhow::Context as _;
pub use kind::Kind;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

/// How long a pod's endpoint may take to attach, and an address to be claimed, unless told.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(120);

/// What an endpoint is found to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// An attached endpoint of a pod on this node, infrastructure (`Calico_ep`, the block's
    /// `.2`), or another host's endpoint in use (or any while kube-proxy runs).
    Ok,
    /// A pod's endpoint that is not attached yet, within the grace period.
    Attaching,
    /// An endpoint whose address no pod has yet while a pod on this node may still claim it.
    Unclaimed,
    /// Another host's endpoint that was not checked (the cluster was not read).
    Unchecked,
    /// An endpoint told to be neither a pod's made by Calico's CNI plugin, nor kube-proxy's for
    /// a Service backend, nor infrastructure: reported and kept.
    Unknown,
    /// A fault not yet seen for longer than the grace period: not counted, not repaired.
    Suspect,
    /// A pod's endpoint that is not attached past the grace period.
    Stuck,
    /// An endpoint of this host whose address no pod on this node has, or that is not
    /// attached while another endpoint with its address is.
    Stale,
    /// Another host's endpoint whose address no pod and no EndpointSlice has.
    RemoteStale,
    /// A pod's attached endpoint whose provider address is not the network's management IP
    /// any more: the node's address changed after it was made, and other nodes send its
    /// traffic to the old address.
    OldAddress,
    /// A pod on this node, past the grace period, whose address no endpoint on this network
    /// has: it has no network (its endpoint was deleted under it, as a network made again
    /// does to the pods a drain left). Not an endpoint: its `id` is `pod:<uid>`.
    NoEndpoint,
}

impl Verdict {
    /// The verdict's word, as JSON has it (`remote-stale`).
    pub fn word(self) -> String {
        word_of(self)
    }

    /// The faults `repair` removes.
    pub const FAULTS: [Verdict; 5] = [
        Self::Stuck,
        Self::Stale,
        Self::RemoteStale,
        Self::OldAddress,
        Self::NoEndpoint,
    ];

    /// Whether this verdict is a fault that `repair` removes.
    pub fn is_fault(self) -> bool {
        Self::FAULTS.contains(&self)
    }
}

/// A unit variant's word, as JSON has it (`remote-stale`); `Code::word` too.
pub fn word_of(v: impl Serialize) -> String {
    match serde_json::to_value(v) {
        Ok(serde_json::Value::String(s)) => s,
        _ => String::new(),
    }
}

/// The `id` prefix of a pod judged `no-endpoint` (no HNS endpoint has an id like it).
pub const POD_ID_PREFIX: &str = "pod:";

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
    /// Whose it is, told from its name and MAC (`kind`).
    pub kind: Kind,
    /// The pod on this node with the endpoint's address (`namespace/name`).
    pub pod: Option<String>,
    pub verdict: Verdict,
    /// Why, in words, for a verdict other than `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub why: Option<String>,
    /// The pod, to evict after its endpoint is removed when a controller recreates it.
    #[serde(skip)]
    pub owner: Option<(PodRef, bool)>,
    /// The HCN namespace the endpoint is still in: it is taken out before it is deleted.
    #[serde(skip)]
    pub namespace: Option<String>,
}

impl Judged {
    /// One line for people: the endpoint, its address and network, its verdict and why.
    pub fn sentence(&self) -> String {
        let mut s = format!(
            "HNS endpoint {} ({}, {}) is {}",
            self.name,
            self.ip.as_deref().unwrap_or("no address"),
            self.network,
            self.verdict.word()
        );
        if let Some(why) = &self.why {
            s.push_str(": ");
            s.push_str(why);
        }
        s
    }

    /// A pod's endpoint made by Calico's CNI plugin on this host, or a pod judged to have none.
    pub fn is_pod_endpoint(&self) -> bool {
        self.kind == Kind::Pod
    }

    /// Whether this is an HNS endpoint (not a pod judged `no-endpoint`).
    pub fn is_endpoint(&self) -> bool {
        self.verdict != Verdict::NoEndpoint
    }
}

/// What the endpoints are judged against.
pub struct Evidence<'a> {
    /// The pods on this node with a network of their own; `None` when the cluster was not read.
    pub pods: Option<&'a [NodePod]>,
    /// For another host's endpoints: whether a pod or an EndpointSlice has the address.
    pub remote_in_use: &'a BTreeMap<String, bool>,
    /// kube-proxy runs on this node: another host's endpoints are its own, left to it.
    pub kube_proxy_runs: bool,
    /// Now, in seconds since 1970.
    pub now: i64,
    pub grace: Duration,
    /// The network's management IP now: the provider address a pod's endpoint must carry.
    pub provider: Option<&'a str>,
    /// The network's block `.2`: Calico's host endpoint's address, kube-proxy's source VIP.
    pub source_vip: Option<&'a str>,
}

impl Evidence<'_> {
    fn older_than_grace(&self, created: Option<i64>) -> bool {
        created.is_none_or(|c| self.now.saturating_sub(c) > self.grace.as_secs() as i64)
    }
}

/// An endpoint attached to its compartment: Attached 2 or AttachedSharing 3; an endpoint
/// whose state HNS does not report is taken as attached (never stuck on no evidence).
fn attached(e: &HnsEndpoint) -> bool {
    e.state.is_none_or(|s| s == 2 || s == 3)
}

/// Judges the endpoints of the HNS network `network`, from one look, and the pods past the
/// grace period whose address none of them has.
pub fn judge(endpoints: &[HnsEndpoint], network: &str, ev: &Evidence) -> Vec<Judged> {
    let mut out = judge_endpoints(endpoints, network, ev);
    out.extend(without_endpoint(endpoints, network, ev));
    out
}

/// The pods on this node, older than the grace period, with addresses none of which a local
/// endpoint of this network has.
fn without_endpoint(endpoints: &[HnsEndpoint], network: &str, ev: &Evidence) -> Vec<Judged> {
    let Some(pods) = ev.pods else {
        return Vec::new();
    };
    pods.iter()
        .filter(|p| !p.ips.is_empty() && !held(endpoints, &p.ips))
        .filter(|p| ev.older_than_grace(p.created))
        .map(|p| Judged {
            id: format!("{POD_ID_PREFIX}{}", p.pod.uid),
            name: p.pod.to_string(),
            network: network.to_owned(),
            ip: p.ips.first().cloned(),
            state: None,
            remote: false,
            kind: Kind::Pod,
            pod: Some(p.pod.to_string()),
            verdict: Verdict::NoEndpoint,
            why: Some(format!(
                "pod {} has {}, which no endpoint on this network has",
                p.pod,
                p.ips.join(",")
            )),
            owner: Some((p.pod.clone(), p.managed)),
            namespace: None,
        })
        .collect()
}

fn judge_endpoints(endpoints: &[HnsEndpoint], network: &str, ev: &Evidence) -> Vec<Judged> {
    endpoints
        .iter()
        .map(|e| {
            let kind = kind::classify(e, ev.source_vip);
            let mut j = Judged {
                id: e.id.clone(),
                name: e.name.clone(),
                network: network.to_owned(),
                ip: e.ip.clone(),
                state: e.state.map(crate::host::hns::state_name),
                remote: e.remote,
                kind,
                pod: None,
                verdict: Verdict::Ok,
                why: None,
                owner: None,
                namespace: e.namespace.clone(),
            };
            let (verdict, why) = match (kind, ev.pods) {
                (Kind::Infrastructure, _) => (Verdict::Ok, None),
                (Kind::ServiceBackend, _) => remote(e, ev),
                (Kind::Pod, Some(pods)) => local(e, endpoints, pods, ev, &mut j),
                (Kind::Pod, None) => (Verdict::Unchecked, Some("the cluster was not read".into())),
                (Kind::Unknown, _) => unknown(e, ev),
            };
            j.verdict = verdict;
            j.why = why;
            j
        })
        .collect()
}

/// An endpoint told to be none of the kinds `repair` may delete: kept. Another host's while
/// kube-proxy runs is left to it (it makes one for each Service's ClusterIP too, which carries
/// the host's MAC and is not told apart).
fn unknown(e: &HnsEndpoint, ev: &Evidence) -> (Verdict, Option<String>) {
    if e.remote && ev.kube_proxy_runs {
        return (Verdict::Ok, None);
    }
    let what = if e.remote {
        "another host's endpoint without the MAC kube-proxy gives a Service backend's (02-11 and its address)"
    } else {
        "neither named as Calico's CNI plugin names a pod's endpoint (<container id>_Calico) nor Calico's host endpoint"
    };
    (
        Verdict::Unknown,
        Some(format!("{what}: kept, never deleted")),
    )
}

fn remote(e: &HnsEndpoint, ev: &Evidence) -> (Verdict, Option<String>) {
    let Some(ip) = &e.ip else {
        return (Verdict::Ok, None);
    };
    if ev.kube_proxy_runs {
        return (Verdict::Ok, None);
    }
    match ev.remote_in_use.get(ip) {
        Some(true) => (Verdict::Ok, None),
        Some(false) => (
            Verdict::RemoteStale,
            Some(format!(
                "another host's endpoint for {ip}, which no pod and no EndpointSlice has"
            )),
        ),
        None => (
            Verdict::Unchecked,
            Some("the cluster was not asked for its address".into()),
        ),
    }
}

/// Whether an endpoint of this host has one of `ips`.
fn held(endpoints: &[HnsEndpoint], ips: &[String]) -> bool {
    endpoints
        .iter()
        .any(|e| !e.remote && e.ip.as_ref().is_some_and(|ip| ips.contains(ip)))
}

/// Why a pod on this node may still claim an endpoint no pod has the address of: it has no
/// address yet, or none of its addresses has an endpoint here (its sandbox is being made
/// again). `None` when no pod may.
fn may_claim(all: &[HnsEndpoint], pods: &[NodePod]) -> Option<String> {
    pods.iter().find_map(|p| {
        if p.ips.is_empty() {
            Some(format!("pod {} has no address yet", p.pod))
        } else if !held(all, &p.ips) {
            Some(format!(
                "pod {} has no endpoint for its address {} (its sandbox may be being made again)",
                p.pod,
                p.ips.join(",")
            ))
        } else {
            None
        }
    })
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
        return match may_claim(all, pods) {
            Some(who) => (
                Verdict::Unclaimed,
                Some(format!("no pod has its address, and {who}")),
            ),
            None => (
                Verdict::Stale,
                Some(format!(
                    "no pod on this node has {}",
                    ip.unwrap_or("its address (it has none)")
                )),
            ),
        };
    };
    j.pod = Some(pod.pod.to_string());
    if attached(e) {
        return match (e.provider_address.as_deref(), ev.provider) {
            (Some(old), Some(now)) if old != now => {
                j.owner = Some((pod.pod.clone(), pod.managed));
                (
                    Verdict::OldAddress,
                    Some(format!(
                        "its provider address is {old}, the node's is now {now}: other nodes send pod {}'s traffic to the old address",
                        pod.pod
                    )),
                )
            }
            _ => (Verdict::Ok, None),
        };
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

/// Takes this look's judgements into the record of when faults were first seen.
pub fn observe(record: &mut seen::Seen, judged: &[Judged], now: i64) {
    let looks: Vec<(String, seen::Look)> = judged
        .iter()
        .map(|j| {
            let look = if j.verdict.is_fault() {
                seen::Look::Fault
            } else if j.verdict == Verdict::Unchecked {
                seen::Look::Unjudged
            } else {
                seen::Look::Healthy
            };
            (j.id.clone(), look)
        })
        .collect();
    record.observe(&looks, now);
}

/// Faults not yet seen at fault for longer than the grace period become `suspect`: one look
/// never makes a fault.
pub fn age(judged: &mut [Judged], seen: &seen::Seen, now: i64, grace: Duration) {
    let grace_s = i64::try_from(grace.as_secs()).unwrap_or(i64::MAX);
    for j in judged.iter_mut().filter(|j| j.verdict.is_fault()) {
        let since = seen.first(&j.id);
        if since.is_some_and(|t| now.saturating_sub(t) > grace_s) {
            continue;
        }
        let show = crate::duration::show;
        let so_far = since.map_or("at this look, first".to_owned(), |t| {
            let secs = now.saturating_sub(t).max(0) as u64;
            format!("for {} so far", show(Duration::from_secs(secs)))
        });
        let (word, why) = (j.verdict.word(), j.why.take().unwrap_or_default());
        j.why = Some(format!(
            "{word} ({why}) {so_far}; counted once it stays so for longer than {}",
            show(grace)
        ));
        (j.verdict, j.owner) = (Verdict::Suspect, None);
    }
}

/// Whether a survey asks the cluster about another host's endpoints.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remote {
    Ask,
    /// Left `unchecked`: a question asked every minute on every node would cost the API server
    /// a list of every EndpointSlice per node.
    Skip,
}

/// Whether a survey records the faults it sees (CalicoNode every minute, `repair`), or only
/// reads when they were first seen (`status`, `repair`'s look before each delete).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ageing {
    Record,
    Read,
}

/// How a survey is made.
#[derive(Clone, Copy, Debug)]
pub struct Survey<'a> {
    pub cluster: Option<&'a Cluster>,
    pub node: &'a crate::k8s_name::NodeName,
    pub grace: Duration,
    pub remote: Remote,
    pub ageing: Ageing,
}

/// The Calico HNS network's endpoints on `host`, judged and aged; `None` when there is no
/// Calico network. The one survey `status`, `repair` and CalicoNode's condition make.
pub fn survey_calico(
    host: &dyn crate::host::Host,
    how: &Survey,
) -> anyhow::Result<Option<Vec<Judged>>> {
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
    let source_vip = calico
        .subnets
        .first()
        .and_then(|s| kind::source_vip(&s.prefix));
    let kinds: Vec<Kind> = list
        .iter()
        .map(|e| kind::classify(e, source_vip.as_deref()))
        .collect();
    let kube_proxy_runs = kube_proxy_runs(host, &list, &kinds)?;
    let (pods, remote_in_use) = match how.cluster {
        Some(c) => {
            let pods = pods::on_node(c, how.node).context("cannot read the pods")?;
            let in_use = if kube_proxy_runs || how.remote == Remote::Skip {
                BTreeMap::new()
            } else {
                remote_in_use(c, &list, &kinds)?
            };
            (Some(pods), in_use)
        }
        None => (None, BTreeMap::new()),
    };
    let now = crate::duration::now();
    let ev = Evidence {
        pods: pods.as_deref(),
        remote_in_use: &remote_in_use,
        kube_proxy_runs,
        now,
        grace: how.grace,
        provider: node_provider(calico.management_ip.as_deref()),
        source_vip: source_vip.as_deref(),
    };
    let mut judged = judge(&list, &calico.name, &ev);
    let mut record = seen::load(host);
    if how.ageing == Ageing::Record {
        let before = record.clone();
        observe(&mut record, &judged, now);
        if record != before {
            seen::store(host, &record)
                .context("cannot record when the endpoint faults were seen")?;
        }
    }
    age(&mut judged, &record, now, how.grace);
    Ok(Some(judged))
}

/// Whether kube-proxy runs here (a `kube-proxy.exe` process), asked only when another host's
/// endpoint may be its own: those are left to it while it runs.
fn kube_proxy_runs(
    host: &dyn crate::host::Host,
    list: &[HnsEndpoint],
    kinds: &[Kind],
) -> anyhow::Result<bool> {
    let any = list
        .iter()
        .zip(kinds)
        .any(|(e, k)| e.remote && matches!(k, Kind::ServiceBackend | Kind::Unknown));
    if !any {
        return Ok(false);
    }
    Ok(host
        .process_pid(crate::layout::KUBE_PROXY_IMAGE)
        .context("cannot look for kube-proxy")?
        .is_some())
}

/// For kube-proxy's endpoints of Service backends on other hosts, which addresses an
/// EndpointSlice or a pod has: one read of each, a page at a time, however many endpoints
/// there are.
fn remote_in_use(
    c: &Cluster,
    list: &[HnsEndpoint],
    kinds: &[Kind],
) -> anyhow::Result<BTreeMap<String, bool>> {
    // What HNS gives as an address is asked about only when it is one.
    let ips: std::collections::BTreeSet<String> = list
        .iter()
        .zip(kinds)
        .filter(|(_, k)| **k == Kind::ServiceBackend)
        .filter_map(|(e, _)| e.ip.clone())
        .filter(|ip| ip.parse::<std::net::IpAddr>().is_ok())
        .collect();
    if ips.is_empty() {
        return Ok(BTreeMap::new());
    }
    let Some(sliced) =
        pods::in_endpoint_slices(c, &ips).context("cannot read the EndpointSlices")?
    else {
        // No EndpointSlices served: no evidence, nothing is called stale.
        return Ok(BTreeMap::new());
    };
    let rest: std::collections::BTreeSet<String> = ips.difference(&sliced).cloned().collect();
    let pods = if rest.is_empty() {
        Default::default()
    } else {
        pods::addresses_in_use(c, &rest).context("cannot read the pods")?
    };
    Ok(ips
        .into_iter()
        .map(|ip| {
            let used = sliced.contains(&ip) || pods.contains(&ip);
            (ip, used)
        })
        .collect())
}

pub mod kind;
pub mod seen;

/// The management IP as the pods' provider address, when it is a node address: one that is
/// not (APIPA while the vNIC waits for DHCP or a put-back, calico#4631; unspecified during an
/// HNS restart) says nothing of it, and no endpoint is judged old by it.
fn node_provider(management_ip: Option<&str>) -> Option<&str> {
    management_ip.filter(|ip| {
        ip.parse::<std::net::Ipv4Addr>()
            .is_ok_and(|a| !a.is_link_local() && !a.is_unspecified())
    })
}

#[cfg(test)]
mod tests;
