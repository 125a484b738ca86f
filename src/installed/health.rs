//! The judges of the node's health: what can be wrong with Calico on this node, each fact
//! judged once into a typed finding (a stable code, its subject, one sentence, its remedy),
//! in the shape preflight's checks share (`Said`). The `health` room's survey gathers the
//! node's facts and hands them to these judges (status, CalicoNode's condition and the codes
//! beside it, repair's look after its run); preflight's `vxlan-vni` and `node-address` checks
//! and reconfigure's refusal call `vni_cluster` and `node_address` too.
//! docs/findings.md lists every code (a test keeps it complete).

use super::endpoints::{Judged, Verdict};
use super::felix_health::FelixHealth;
use crate::cluster::facts::Felix;
use crate::host::{InstalledService, ServiceState};
use serde::Serialize;

/// What a finding is about, by a stable code (JSON `code`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Code {
    /// A command is changing the node now, or one was cut off (its journal is left).
    UnderWay,
    /// A service calicoctl-win registered is not running.
    ServiceNotRunning,
    /// A service's registration differs from what the config wants.
    ServiceDrift,
    /// A route the node had before the install (the cloud metadata route) is missing.
    RouteMissing,
    /// An HNS network the install made does not exist.
    NetworkMissing,
    /// A pod's endpoint never attached, past the grace period.
    EndpointStuck,
    /// An endpoint no pod on this node owns.
    EndpointStale,
    /// Another host's endpoint whose address nobody uses.
    EndpointRemoteStale,
    /// A pod's endpoint that carries the node's old address as its provider address.
    EndpointOldAddress,
    /// A pod whose address no endpoint has.
    PodNoEndpoint,
    /// An endpoint told to be neither a pod's (Calico's CNI plugin), nor kube-proxy's for a
    /// Service backend, nor infrastructure: kept.
    EndpointUnknown,
    /// The endpoints could not be judged (the cluster could not be read).
    EndpointsUnjudged,
    /// After an HNS restart, a service CalicoNode could not restart still does not run.
    HnsRestartFailed,
    /// A file install wrote differs from what was written or from what the config renders.
    FileDrift,
    /// Felix reports itself not live, not ready, or does not answer.
    FelixUnhealthy,
    /// The VNI of the Calico network (HNS) differs from the config's.
    VniHns,
    /// The config's VNI differs from the one the cluster's Felix uses.
    VniCluster,
    /// The node is not Ready, or cordoned.
    NodeNotReady,
    NodeCordoned,
    /// The cluster (or part of it) cannot be read.
    ClusterUnreadable,
    /// The node's IPAM block cannot hold the pods kubelet schedules, or is full.
    IpamCapacity,
    /// calico-node's token: unusable, expired, expiring without renewal, a failed renewal.
    Token,
    /// kube-proxy is not as Calico on Windows needs it.
    KubeProxy,
    /// A directory whose files run as SYSTEM can be changed by others.
    DirAccess,
    /// A kubeconfig with cluster-admin rights is kept on the node.
    AdminKubeconfig,
    /// The node's own state (a service, Felix's health, the HNS endpoints) cannot be read.
    HostUnreadable,
    /// The node's address differs between the layers that must agree: the Node's InternalIP,
    /// the Calico Node's BGP address, the HNS networks' management IP.
    AddressMismatch,
    /// The vSwitch's host adapter lacks what its adapter had before the vSwitch (static
    /// address, DNS servers and suffix, metric), or `Calico_ep` is not above the LAN's metric.
    AdapterDrift,
    /// Calico is not installed here (no install record).
    NotInstalled,
    /// The node's Calico components read an API group the datastore migration left locked.
    ApiGroup,
    /// A firewall rule Felix made for its Prometheus port is open to every address.
    FelixMetricsRule,
    /// CalicoNode cannot listen on `metrics.port` (another program holds it).
    MetricsEndpointDown,
    /// `verify`: a probe pod got no address, or never started (the CNI plugin and IPAM).
    TrafficCni,
    /// `verify`: the probe image could not be pulled or has no variant for the node's build.
    TrafficImage,
    /// `verify`: pods on different nodes do not reach each other (VXLAN: the VNI, UDP 4789,
    /// the node's BGP address).
    TrafficOverlay,
    /// `verify`: the API server does not reach a probe pod through its pod proxy (the control
    /// plane's path to the pod network), so no check through it can be judged.
    TrafficControlPlane,
    /// `verify`: a ClusterIP does not reach its backend (kube-proxy's HNS load balancer).
    TrafficKubeProxy,
    /// `verify`: a name does not resolve through cluster DNS.
    TrafficDns,
    /// `verify`: traffic between pods on the node is dropped, or a NetworkPolicy is not
    /// applied or not removed in time (Felix's ACLs).
    TrafficPolicy,
    /// `verify`: the node cannot reach its own pod (the kubelet's probe): the host firewall.
    TrafficFirewall,
    /// `verify`: a pod cannot reach the address outside the cluster (outbound NAT).
    TrafficEgress,
}

impl Code {
    /// Every code, for the documentation's completeness test.
    pub const ALL: &[Code] = &[
        Code::UnderWay,
        Code::ServiceNotRunning,
        Code::ServiceDrift,
        Code::RouteMissing,
        Code::NetworkMissing,
        Code::EndpointStuck,
        Code::EndpointStale,
        Code::EndpointRemoteStale,
        Code::EndpointOldAddress,
        Code::PodNoEndpoint,
        Code::EndpointUnknown,
        Code::EndpointsUnjudged,
        Code::HnsRestartFailed,
        Code::FileDrift,
        Code::FelixUnhealthy,
        Code::VniHns,
        Code::VniCluster,
        Code::NodeNotReady,
        Code::NodeCordoned,
        Code::ClusterUnreadable,
        Code::IpamCapacity,
        Code::Token,
        Code::KubeProxy,
        Code::DirAccess,
        Code::AdminKubeconfig,
        Code::HostUnreadable,
        Code::AddressMismatch,
        Code::AdapterDrift,
        Code::NotInstalled,
        Code::ApiGroup,
        Code::FelixMetricsRule,
        Code::MetricsEndpointDown,
        Code::TrafficCni,
        Code::TrafficImage,
        Code::TrafficOverlay,
        Code::TrafficControlPlane,
        Code::TrafficKubeProxy,
        Code::TrafficDns,
        Code::TrafficPolicy,
        Code::TrafficFirewall,
        Code::TrafficEgress,
    ];

    /// The code's word, as JSON has it.
    pub fn word(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// A sentence about the node and what fixes it: the one shape preflight's checks
/// (`checks::Check`) and the node's findings share, with one way to show it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Said {
    /// One sentence: what is so, never what to do about it.
    pub message: String,
    /// What fixes it: every finding has one; a check that passed or was skipped has none.
    pub remedy: Option<String>,
}

impl std::fmt::Display for Said {
    /// The sentence, then its fix on a line of its own, indented by the width asked for
    /// (`{:4}`): as status lists its findings and preflight its checks.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        match &self.remedy {
            Some(r) => write!(f, "\n{:pad$}fix: {r}", "", pad = f.width().unwrap_or(0)),
            None => Ok(()),
        }
    }
}

/// One thing wrong with Calico on this node: its code and subject, its sentence and its fix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: Code,
    /// What it is about: a service, a network, an endpoint, a file, the node, the token.
    pub subject: String,
    #[serde(flatten)]
    pub said: Said,
}

impl Finding {
    /// A finding of `code` about `subject`: its sentence and what fixes it.
    pub fn new(
        code: Code,
        subject: impl Into<String>,
        message: impl Into<String>,
        remedy: impl Into<String>,
    ) -> Self {
        Self {
            code,
            subject: subject.into(),
            said: Said {
                message: message.into(),
                remedy: Some(remedy.into()),
            },
        }
    }
}

impl std::ops::Deref for Finding {
    type Target = Said;
    fn deref(&self) -> &Said {
        &self.said
    }
}

impl std::fmt::Display for Finding {
    /// The sentence with its code in brackets, then its fix (`Said`'s form).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tagged = Said {
            message: format!("{} [{}]", self.message, self.code.word()),
            remedy: self.remedy.clone(),
        };
        std::fmt::Display::fmt(&tagged, f)
    }
}

/// A service as found: not running (or not there) is a finding.
pub fn service(name: &str, found: Option<&InstalledService>) -> Option<Finding> {
    let state = found.map(|s| s.state);
    if state == Some(ServiceState::Running) {
        return None;
    }
    let said = state.map_or("not registered".to_owned(), |s| {
        format!("{s:?}").to_ascii_lowercase()
    });
    Some(Finding::new(
        Code::ServiceNotRunning,
        name,
        format!("service {name} is {said}"),
        format!("Start-Service {name}; its log is in the install root's logs directory"),
    ))
}

/// Felix's own health (`FelixHealth::problem`), `now` being seconds since 1970.
pub fn felix(h: &FelixHealth, now: i64) -> Option<Finding> {
    h.problem(now).map(|p| {
        Finding::new(
            Code::FelixUnhealthy,
            "CalicoFelix",
            p,
            "read calico-felix.log; Restart-Service CalicoFelix once the cause is gone",
        )
    })
}

/// An HNS network the install made (`Calico`, `External`) that does not exist.
pub fn network_missing(name: &str) -> Finding {
    Finding::new(
        Code::NetworkMissing,
        name,
        format!("the HNS network {name} does not exist"),
        "Restart-Service CalicoNode (it makes the networks), and read calico-node.log",
    )
}

/// The Calico network: missing is a finding.
pub fn calico_network(exists: bool) -> Option<Finding> {
    (!exists).then(|| network_missing(crate::layout::CALICO_NETWORK))
}

/// The finding of each endpoint fault, by its verdict.
const ENDPOINT_CODES: [(Verdict, Code); 5] = [
    (Verdict::Stuck, Code::EndpointStuck),
    (Verdict::Stale, Code::EndpointStale),
    (Verdict::RemoteStale, Code::EndpointRemoteStale),
    (Verdict::OldAddress, Code::EndpointOldAddress),
    (Verdict::NoEndpoint, Code::PodNoEndpoint),
];

/// The verdict an endpoint finding says (`endpoint`'s code read back).
pub fn verdict_of(code: Code) -> Option<Verdict> {
    ENDPOINT_CODES
        .iter()
        .find(|(_, c)| *c == code)
        .map(|(v, _)| *v)
}

/// An endpoint judged at fault (`installed::endpoints`), with its sentence; one that cannot be
/// told whose it is, with what keeps it.
pub fn endpoint(j: &Judged) -> Option<Finding> {
    if j.verdict == Verdict::Unknown {
        return Some(Finding::new(
            Code::EndpointUnknown,
            j.name.clone(),
            j.sentence(),
            "none needed: repair keeps it; if no program on the node made it, remove it yourself (Remove-HnsEndpoint)",
        ));
    }
    let (_, code) = ENDPOINT_CODES.iter().find(|(v, _)| *v == j.verdict)?;
    Some(Finding::new(
        *code,
        j.name.clone(),
        j.sentence(),
        "calicoctl-win repair",
    ))
}

/// The last HNS restart's services that still do not run.
pub fn hns_restart(failed: &[&str], at: &str) -> Vec<Finding> {
    failed
        .iter()
        .map(|f| {
            let service = f.split_once(':').map_or(*f, |(n, _)| n);
            Finding::new(
                Code::HnsRestartFailed,
                service,
                format!("after the HNS restart at {at}, CalicoNode could not restart {f}"),
                format!("Start-Service {service}"),
            )
        })
        .collect()
}

/// Part of the node's own state that cannot be read (a service, Felix's health, the HNS
/// endpoints, the adapters), said with what was asked.
pub fn host_unreadable(subject: &str, message: String) -> Finding {
    Finding::new(
        Code::HostUnreadable,
        subject,
        message,
        "run calicoctl-win status again as an administrator; if it stays, read calico-node.log and the System event log (HNS, the Service Control Manager)",
    )
}

/// What the vSwitch dropped of its adapter's addressing and its host adapter still lacks as the
/// vSwitch left it (`addressing::as_left`), and `Calico_ep`'s metric against the LAN's. What
/// changed since the vSwitch was made is an administrator's (`addressing::changed_since`):
/// no finding, and nothing puts it back.
pub fn addressing(
    before: &super::addressing::Addressing,
    adapters: &[crate::host::Adapter],
) -> Vec<Finding> {
    const REMEDY: &str = "Restart-Service CalicoNode: its start puts back what the vSwitch dropped, while it is as the vSwitch left it (docs/network-identity.md)";
    let Some(now) = before.host_adapter(adapters) else {
        return Vec::new();
    };
    let mut out: Vec<Finding> = super::addressing::as_left(before, now)
        .iter()
        .map(|d| {
            Finding::new(
                Code::AdapterDrift,
                now.name.clone(),
                format!(
                    "lost when the vSwitch was made, not put back yet: {}",
                    d.describe(before, now)
                ),
                REMEDY,
            )
        })
        .collect();
    if let Some(ep) = super::addressing::ep_metric_clash(adapters, now) {
        out.push(
            Finding::new(
                Code::AdapterDrift,
                ep.name.clone(),
                format!(
                    "{} has the interface metric {}, not above {}'s {}: Windows may send the LAN's traffic into the pod network",
                    ep.name, ep.metric, now.name, now.metric
                ),
                "Restart-Service CalicoNode: once calico-node made Calico_ep, it sets Calico_ep's metric above the LAN's (docs/network-identity.md)",
            ),
        );
    }
    out
}

/// How to put a new token on the node, said where only a new one helps.
pub const NEW_TOKEN: &str = "issue a new one with 'calicoctl-win fetch kubeconfig --kubeconfig installer.kubeconfig' (an admin makes installer.kubeconfig with 'calicoctl-win fetch installer-kubeconfig'); where the fleet DaemonSet runs ('fleet plan'), its container ('service keep-token') writes a new one within 20 s of a refusal";

/// Something about calico-node's token, said as it is, with what fixes it.
pub fn token(subject: &str, message: String, remedy: impl Into<String>) -> Finding {
    Finding::new(Code::Token, subject, message, remedy)
}

/// A record of the token's renewals that cannot be read (`what`: the renewal, the failed
/// renewal).
pub fn token_record_unreadable(what: &str, e: &dyn std::fmt::Display) -> Finding {
    token(
        "token",
        format!("cannot read the {what}'s record: {e}"),
        "read calico-node.log; the record is rewritten at CalicoNode's next renewal",
    )
}

/// calico-node's kubeconfig at `path` is missing, cannot be read, or names no token
/// (`why`, said as it is).
pub fn token_missing(path: &str, why: Option<String>) -> Finding {
    let message = why.unwrap_or_else(|| format!(
        "calico-node's kubeconfig {path} holds no token, or the token file it names is missing or empty"
    ));
    token("calico-node's token", message, NEW_TOKEN)
}

/// calico-node's token cannot be used at all.
pub fn token_unusable(path: &str, why: &str) -> Finding {
    token(
        "calico-node's token",
        format!("calico-node's token in {path} is unusable: {why}"),
        NEW_TOKEN,
    )
}

/// calico-node's token by its expiry, `now` being seconds since 1970: expired (no renewal
/// can succeed with it), or with less than `overdue` seconds left, past when CalicoNode renews
/// (at two thirds of its life: less than a quarter left means renewals failed for a while).
pub fn token_expiry(path: &str, expiry: Option<i64>, overdue: i64, now: i64) -> Option<Finding> {
    let expiry = expiry?;
    let left = expiry.saturating_sub(now);
    if left <= 0 {
        return Some(token(
            "calico-node's token",
            format!(
                "calico-node's token in {path} expired {}: no renewal can succeed with it",
                crate::duration::time_text(expiry)
            ),
            NEW_TOKEN,
        ));
    }
    (left < overdue).then(|| {
        token(
            "calico-node's token",
            format!(
                "calico-node's token in {path} expires {} and CalicoNode has not renewed it",
                crate::duration::time_text(expiry)
            ),
            "read calico-node.log: it says why each renewal failed",
        )
    })
}

/// The API server refuses calico-node's token now (401 to a request made with calico-node's
/// own kubeconfig), with its cause where it was told.
pub fn token_refused_now(path: &str, cause: Option<&crate::cluster::refusal::Cause>) -> Finding {
    let why = match cause {
        Some(c) => format!("cause {}: {}", c.word(), c.describe()),
        None => "its cause is told by 'calicoctl-win status' with an admin kubeconfig".into(),
    };
    token(
        "calico-node's token",
        format!(
            "the API server refuses calico-node's token in {path} (401 to calico-node's own kubeconfig; {why}): no renewal can succeed with it"
        ),
        cause.map_or(NEW_TOKEN, crate::cluster::refusal::Cause::remedy),
    )
}

/// CalicoNode's last renewal failed; a 401 (the API server refuses the token itself) needs a
/// new token, said unless the token's expiry already says so.
pub fn token_refused(
    f: &super::token_records::Refused,
    expiry: Option<i64>,
    now: i64,
    cause: Option<&crate::cluster::refusal::Cause>,
) -> Finding {
    let expired_said = expiry.is_some_and(|e| e <= now);
    let needs_new = f.unauthorized && !expired_said;
    let why = match cause {
        Some(c) => format!(" (cause {}: {})", c.word(), c.describe()),
        None if needs_new => " (its cause was not told: the cluster could not be read)".into(),
        None => String::new(),
    };
    let remedy = match (needs_new, cause) {
        (true, Some(c)) => c.remedy(),
        (true, None) => NEW_TOKEN,
        _ => {
            "none needed while the token is valid: CalicoNode tries again; read calico-node.log if it keeps failing"
        }
    };
    token(
        "calico-node's token",
        format!(
            "CalicoNode could not renew calico-node's token at {}{}: {}{}",
            crate::duration::time_text(f.at),
            f.expires.map_or(String::new(), |e| format!(
                " (it expires {})",
                crate::duration::time_text(e)
            )),
            f.error,
            if needs_new {
                format!("; the API server refuses the token itself (401){why}")
            } else {
                String::new()
            }
        ),
        remedy,
    )
}

/// A directory whose files run as SYSTEM that others may change, with who.
pub fn dir_access(dir: &str, who: &[String]) -> Finding {
    Finding::new(
        Code::DirAccess,
        dir,
        format!(
            "{dir} can be changed by others than SYSTEM and Administrators ({})",
            who.join("; ")
        ),
        "calicoctl-win preflight --fix",
    )
}

/// A route the node had before the vSwitch (the cloud metadata route) that is gone.
pub fn route_missing(route: &crate::host::Route) -> Finding {
    Finding::new(
        Code::RouteMissing,
        "route",
        format!(
            "the cloud metadata route {}/{} is missing: the node had it before the install",
            route.destination, route.prefix_len
        ),
        "Restart-Service CalicoNode: its start restores the route; calico-node.log says why it did not",
    )
}

/// The cluster, or part of it (`subject`), cannot be read: the error said as it is.
pub fn cluster_unreadable(subject: &str, message: String) -> Finding {
    Finding::new(
        Code::ClusterUnreadable,
        subject,
        message,
        "check that this node reaches the API server and that the kubeconfig's identity may read it ('calicoctl-win preflight' says which right is missing), then run status again",
    )
}

/// The HNS endpoints could not be judged against the pods (`why`: the read that failed).
pub fn endpoints_unjudged(why: String) -> Finding {
    Finding::new(
        Code::EndpointsUnjudged,
        "endpoints",
        format!("the HNS endpoints cannot be judged: {why}"),
        "run calicoctl-win status again once the cluster can be read; 'calicoctl-win repair --dry-run' judges them alike",
    )
}

/// A command holds the host lock now (`who`, as the lock names it).
pub fn changing_now(who: &str) -> Finding {
    Finding::new(
        Code::UnderWay,
        "node",
        format!("{who} is changing this node now"),
        "run calicoctl-win status again when it has finished",
    )
}

/// A detached run that ended without its result (`commands::detach`'s sentence).
pub fn detached_died(said: String) -> Finding {
    Finding::new(
        Code::UnderWay,
        "detached run",
        said,
        "read its log, then run the command again: a journal it left is finished or undone by it",
    )
}

/// A run cut off with its journal left: `command`, the steps it finished and where it stopped
/// (` (at: <action>)` or nothing), and when it started.
pub fn cut_off(command: &str, done: usize, stopped_at: &str, started: &str) -> Finding {
    // Only what the commands do: uninstall refuses another command's unfinished journal, a
    // repair's steps (deleted endpoints, evicted pods) cannot be undone, and a migration goes
    // on from where it stopped (to-operator's cluster steps before the host are undone by it
    // when they fail).
    let again = if command == "uninstall" || command == "repair" || command.starts_with("migrate") {
        format!("'calicoctl-win {command}' finishes it")
    } else {
        format!(
            "'calicoctl-win {command}' with the same inputs finishes it, 'calicoctl-win uninstall' undoes it"
        )
    };
    Finding::new(
        Code::UnderWay,
        command,
        format!(
            "{command} was cut off after {done} finished step(s){stopped_at}, started {started}"
        ),
        again,
    )
}

/// A kubeconfig at `path` whose identity may do anything in the cluster.
pub fn admin_kubeconfig(path: &str) -> Finding {
    Finding::new(
        Code::AdminKubeconfig,
        path,
        format!(
            "{path} holds a kubeconfig whose identity may do anything in the cluster (cluster-admin): a node should keep none"
        ),
        "remove it: install needs only the installer's short-lived kubeconfig ('calicoctl-win fetch installer-kubeconfig')",
    )
}

/// A recorded service whose registration differs from what the config wants (`changes`).
pub fn service_drift(name: &str, changes: &[String]) -> Finding {
    Finding::new(
        Code::ServiceDrift,
        name,
        format!(
            "service {name} differs from the config: {}",
            changes.join(", ")
        ),
        "calicoctl-win reconfigure registers it as the config wants",
    )
}

/// A file install wrote that changed, went, or differs from what the config renders
/// (`said`: `plan::drift`'s sentence); `renders`: it is the config that differs.
pub fn file_drift(path: &str, said: String, renders: bool) -> Finding {
    Finding::new(
        Code::FileDrift,
        path,
        said,
        if renders {
            "calicoctl-win reconfigure writes it as the config renders it"
        } else {
            "calicoctl-win reconfigure writes it again (an administrator's change is lost: make it in the config instead)"
        },
    )
}

/// kube-proxy as preflight's `kube-proxy` check judged it, failed: its sentence and its fix.
pub fn kube_proxy(said: Said) -> Finding {
    Finding {
        code: Code::KubeProxy,
        subject: "kube-proxy".into(),
        said: Said {
            message: format!("kube-proxy: {}", said.message),
            remedy: Some(said.remedy.unwrap_or_else(|| {
                "calicoctl-win preflight: its kube-proxy check says what Calico needs (docs/commands/preflight.md)".into()
            })),
        },
    }
}

/// Calico is not installed in `root`.
pub fn not_installed(root: &str) -> Finding {
    Finding::new(
        Code::NotInstalled,
        root,
        format!("not installed in {root}"),
        "calicoctl-win install",
    )
}

/// The management IP of the networks install makes (External, Calico), by name.
pub fn management_ips(
    networks: &[crate::host::HnsNetwork],
) -> Vec<(&str, Option<std::net::Ipv4Addr>)> {
    networks
        .iter()
        .filter(|n| {
            n.name == crate::layout::CALICO_NETWORK || n.name == crate::layout::EXTERNAL_NETWORK
        })
        .map(|n| {
            let ip = n.management_ip.as_deref().and_then(|m| m.parse().ok());
            (n.name.as_str(), ip)
        })
        .collect()
}

/// One address everywhere: the Calico Node's BGP address and the management IP of the HNS
/// networks must be the Node's InternalIP (or, without one, the BGP address). Felix sends the
/// VXLAN traffic for this node's pods to the BGP address (projectcalico/calico v3.31.0
/// `felix/calc/vxlan_resolver.go`), and the CNI plugin stamps each pod's endpoint with its
/// network's management IP as the provider address (`cni-plugin/pkg/dataplane/windows/
/// dataplane_windows.go`, `{"Type":"PA","PA": ManagementIP}`): a node whose layers disagree
/// advertises one address and tunnels from another (rancher/rke2#3533). Each layer that
/// differs is one finding naming both addresses and the fix.
/// `adapters` are the host's, when they could be read: the fix for a network on another
/// adapter names the adapter that holds the address, or says that none does.
pub fn node_address(
    node: &str,
    (internal, bgp): (Option<std::net::Ipv4Addr>, Option<std::net::Ipv4Addr>),
    networks: &[(&str, Option<std::net::Ipv4Addr>)],
    adapters: Option<&[crate::host::Adapter]>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let Some((truth, named)) = internal
        .map(|ip| (ip, "the Node's InternalIP"))
        .or(bgp.map(|ip| (ip, "the Calico Node's BGP address")))
    else {
        return out;
    };
    if let Some(b) = bgp.filter(|b| *b != truth) {
        out.push(
            Finding::new(
                Code::AddressMismatch,
                node,
                format!(
                    "the Calico Node's BGP address (projectcalico.org/IPv4Address) is {b}, {named} is {truth}: other nodes send this node's VXLAN traffic to {b}"
                ),
                "restart CalicoNode ('Restart-Service CalicoNode'): calico-node's start-up sets the address again from the Node's InternalIP (kubernetes-internal-ip), or set node.ip to the right one",
            ),
        );
    }
    for (name, ip) in networks {
        if let Some(m) = ip.filter(|m| *m != truth) {
            out.push(
                Finding::new(
                    Code::AddressMismatch,
                    *name,
                    format!(
                        "the HNS network {name} has management IP {m}, {named} is {truth}: the vSwitch is bound to another adapter, and pods' endpoints carry {m} as their provider address"
                    ),
                    adapter_remedy(truth, named, adapters),
                ),
            );
        }
    }
    out
}

/// What moves the networks to the adapter that holds `truth`: that adapter named, or, when no
/// adapter of this host holds it, that the address itself is wrong for this node.
fn adapter_remedy(
    truth: std::net::Ipv4Addr,
    named: &str,
    adapters: Option<&[crate::host::Adapter]>,
) -> String {
    let again = "then 'calicoctl-win reconfigure --drain' makes the networks again";
    let Some(adapters) = adapters else {
        return format!(
            "find the adapter that holds {truth} (Get-NetIPAddress -IPAddress {truth}) and set vxlan.adapter to it, {again}; if none does, {named} is not this node's address"
        );
    };
    let holders: Vec<&str> = adapters
        .iter()
        .filter(|a| a.holds(truth))
        .map(|a| a.name.as_str())
        .collect();
    match holders.as_slice() {
        [] => format!(
            "no adapter of this host holds {truth}: {named} is not this node's address (a NAT address, or one the node no longer has); give the Node its real address (kubelet's --node-ip, or node.ip), or give an adapter {truth}, {again}"
        ),
        [one] => format!("set vxlan.adapter to {one} (it holds {truth}), {again}"),
        several => format!(
            "{truth} is held by several adapters ({}): leave it on one, set vxlan.adapter to that one, {again}",
            several.join(", ")
        ),
    }
}

/// The node in the cluster: not Ready (with kubelet's reason), cordoned.
pub fn node_state(node: &str, ready: &Result<(), String>, cordoned: bool) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Err(why) = ready {
        out.push(Finding::new(
            Code::NodeNotReady,
            node,
            format!("node {node} is not Ready: {why}"),
            format!("read kubelet's log on this node and 'kubectl describe node {node}': calicoctl-win does not make a node Ready"),
        ));
    }
    if cordoned {
        out.push(Finding::new(
            Code::NodeCordoned,
            node,
            format!("node {node} is cordoned"),
            format!("kubectl uncordon {node}, once it is meant to take pods"),
        ));
    }
    out
}

/// What gives the node's pods addresses enough.
const IPAM_REMEDY: &str = "lower kubelet's maxPods to what the block holds, or give the pool a larger block (preflight's block-capacity says how)";

/// The node's IPAM block against what kubelet schedules, on a node with one network (one
/// block): `max_pods` more than it holds, or every address in use.
pub fn ipam_capacity(
    node: &str,
    max_pods: Option<u64>,
    capacity: u64,
    pods: u64,
) -> Option<Finding> {
    if let Some(m) = max_pods.filter(|m| *m > capacity) {
        return Some(Finding::new(
            Code::IpamCapacity,
            node,
            format!(
                "kubelet schedules up to {m} pods but the node's block holds {capacity}: pods beyond it get no address"
            ),
            IPAM_REMEDY,
        ));
    }
    (pods >= capacity).then(|| {
        Finding::new(
            Code::IpamCapacity,
            node,
            format!("the node's block is full ({pods} of {capacity}): a new pod gets no address"),
            IPAM_REMEDY,
        )
    })
}

/// Where the VNI the cluster's Felix uses comes from, in words.
pub fn vni_source(felix: &Felix) -> &'static str {
    if felix.vxlan_vni.is_some() {
        "FelixConfiguration vxlanVNI"
    } else {
        "Felix's default: FelixConfiguration sets no vxlanVNI"
    }
}

/// The config's VNI against the one the cluster's Felix uses (`Felix::vni`, its default
/// applied in that one place): the one judge preflight's `vxlan-vni`, reconfigure's refusal
/// and status use.
pub fn vni_cluster(config: u32, felix: &Felix) -> Option<Finding> {
    let v = felix.vni();
    (v != config).then(|| {
        Finding::new(
            Code::VniCluster,
            "FelixConfiguration",
            format!(
                "the VNI the cluster's Felix uses is {v} ({}), the config says {config}: this node could not reach pods on the other nodes",
                vni_source(felix)
            ),
            format!(
            "set vxlan.vni to {v} (--set vxlan.vni={v}, or leave it unset: the cluster's is used), or change the cluster first ('kubectl patch felixconfiguration default --type merge -p '{{\"spec\":{{\"vxlanVNI\":{config}}}}}'')"
            ),
        )
    })
}

/// The VNI in the config, in HNS (the Calico network's VSID) and the one the cluster's Felix
/// uses, on a vxlan node.
pub fn vni(config: u32, hns: Option<u32>, cluster: Option<&Felix>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(v) = hns.filter(|v| *v != config) {
        out.push(Finding::new(
            Code::VniHns,
            crate::layout::CALICO_NETWORK,
            format!("the Calico network has VSID {v}, the config says VNI {config}"),
            "calicoctl-win reconfigure --drain makes the network again",
        ));
    }
    out.extend(cluster.and_then(|f| vni_cluster(config, f)));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/findings.md lists every code, as docs/errors.md lists every error kind.
    #[test]
    fn docs_findings_lists_every_code() {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/findings.md");
        let doc = fs_err::read_to_string(&path).expect("docs/findings.md");
        for c in Code::ALL {
            let word = c.word();
            assert!(!word.is_empty(), "{c:?}");
            assert!(
                doc.lines().any(|l| l.starts_with(&format!("| `{word}` |"))),
                "docs/findings.md has no row for {word}"
            );
        }
    }

    /// Each judge's sentence says what is so and its remedy what to do, never the one in the
    /// other; a finding shows as a check does: the sentence (with its code), then `fix:` on a
    /// line of its own, indented as asked.
    #[test]
    fn a_remedy_is_never_folded_into_the_sentence() {
        let refused = super::super::token_records::Refused {
            at: 1,
            expires: None,
            error: "401 Unauthorized".into(),
            unauthorized: true,
            token: None,
        };
        let mut found = vec![
            token_unusable("k", "not a JWT"),
            token_expiry("k", Some(1), 10, 100).expect("expired"),
            token_expiry("k", Some(105), 10, 100).expect("overdue"),
            token_refused_now("k", None),
            token_refused(&refused, None, 100, None),
            token_missing("k", None),
            dir_access(r"C:\k", &["BUILTIN\\Users".into()]),
            cut_off("install", 3, " (at: x)", "then"),
            changing_now("install"),
            admin_kubeconfig(r"C:\k\config"),
            service_drift("CalicoNode", &["binary".into()]),
            file_drift("cni.conf", "cni.conf differs".into(), true),
            kube_proxy(Said {
                message: "on the wrong network".into(),
                remedy: Some("set it".into()),
            }),
            not_installed("C:\\CalicoWindows"),
            cluster_unreadable("cluster", "refused".into()),
            endpoints_unjudged("refused".into()),
            host_unreadable("Felix", "refused".into()),
        ];
        found.extend(node_state("win-1", &Err("kubelet stopped".into()), true));
        found.extend(ipam_capacity("win-1", Some(110), 64, 3));
        for f in &found {
            let remedy = f.remedy.as_deref().expect("every finding has a remedy");
            assert!(!remedy.is_empty(), "{f:?}");
            assert!(
                !f.message.contains(remedy) && !f.message.contains("fix"),
                "a remedy in the sentence: {f:?}"
            );
            assert!(!f.message.contains(NEW_TOKEN), "{f:?}");
        }
        assert_eq!(
            format!("{:4}", changing_now("install")),
            "install is changing this node now [under-way]\n    fix: run calicoctl-win status again when it has finished"
        );
    }

    /// A FelixConfiguration with no `vxlanVNI` means Felix's default, 4096 (Felix v3.31.7
    /// `config_params.go`: `VXLANVNI int;4096`): a config that says 4097 is judged against it,
    /// and one that says 4096 matches it.
    #[test]
    fn the_vni_is_judged_against_hns_and_the_cluster() {
        let unset = Felix::default();
        let set = |v| Felix {
            vxlan_vni: Some(v),
            ..Felix::default()
        };
        assert!(vni(4096, Some(4096), Some(&unset)).is_empty());
        let f = vni(4097, Some(4096), Some(&unset));
        assert_eq!(
            f.iter().map(|f| f.code).collect::<Vec<_>>(),
            [Code::VniHns, Code::VniCluster]
        );
        assert!(
            f[1].message.contains("uses is 4096 (Felix's default"),
            "{}",
            f[1].message
        );
        assert!(vni_cluster(5000, &set(5000)).is_none());
        let named = vni_cluster(4096, &set(5000)).expect("differs");
        assert!(
            named.message.contains("(FelixConfiguration vxlanVNI)"),
            "{}",
            named.message
        );
        assert!(vni(4097, None, None).is_empty(), "nothing to compare");
    }

    /// The InternalIP is the address the others must have; without one, the BGP address is.
    /// A layer that has no address yet (a network not made, no annotation) is no mismatch.
    #[test]
    fn each_layer_whose_address_differs_is_named_with_both() {
        let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
        let nets = [("External", ip("10.0.0.5")), ("Calico", ip("10.0.0.5"))];
        assert!(node_address("win-1", (ip("10.0.0.5"), ip("10.0.0.5")), &nets, None).is_empty());
        assert!(
            node_address("win-1", (ip("10.0.0.5"), None), &[("Calico", None)], None).is_empty()
        );
        assert!(node_address("win-1", (None, None), &nets, None).is_empty());
        let f = node_address("win-1", (ip("10.0.1.9"), ip("10.0.0.5")), &nets, None);
        assert_eq!(f.len(), 3, "{f:?}");
        assert!(f.iter().all(|f| f.code == Code::AddressMismatch));
        assert!(f[0].message.contains("10.0.0.5") && f[0].message.contains("10.0.1.9"));
        assert_eq!(f[2].subject, "Calico");
        let by_bgp = node_address("win-1", (None, ip("10.0.1.9")), &nets, None);
        assert_eq!(
            by_bgp.len(),
            2,
            "the networks against the BGP address: {by_bgp:?}"
        );
    }

    /// The fix names the adapter that holds the address, and never sends the user to pick an
    /// adapter that holds an address no adapter of the host holds.
    #[test]
    fn the_fix_names_the_adapter_that_holds_the_address_or_says_none_does() {
        let ip = |s: &str| Some(s.parse::<std::net::Ipv4Addr>().expect("ip"));
        let nets = [("External", ip("10.0.0.5"))];
        let host = [
            crate::host::Adapter::for_test("Ethernet", 4, "00-15-5D-00-00-04", &["10.0.0.5"]),
            crate::host::Adapter::for_test("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.0.1.9"]),
        ];
        let remedy = |internal: &str| {
            node_address("win-1", (ip(internal), None), &nets, Some(&host))[0]
                .remedy
                .clone()
                .unwrap_or_default()
        };
        let named = remedy("10.0.1.9");
        assert!(
            named.starts_with("set vxlan.adapter to Ethernet 2 (it holds 10.0.1.9)"),
            "{named}"
        );
        let none = remedy("203.0.113.7");
        assert!(
            none.starts_with("no adapter of this host holds 203.0.113.7")
                && !none.contains("set vxlan.adapter to the adapter"),
            "{none}"
        );
    }
}
