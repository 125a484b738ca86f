//! The finding's shape: a stable code (`Code`), its subject, one sentence and its remedy
//! (`Said`, the shape preflight's checks share).

use serde::Serialize;

/// `Code` and `Code::ALL` (every code, each once) from one list.
macro_rules! codes {
    ($($(#[$doc:meta])* $code:ident,)*) => {
        /// What a finding is about, by a stable code (JSON `code`).
        #[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
        #[serde(rename_all = "kebab-case")]
        pub enum Code {
            $($(#[$doc])* $code,)*
        }

        impl Code {
            /// Every code, for the documentation's completeness test.
            pub const ALL: &[Code] = &[$(Code::$code,)*];
        }
    };
}

codes! {
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
    /// No connection has reached CalicoNode's metrics endpoint in an hour while a Service to
    /// scrape it through exists: its rule admits no scraper. Shown, not a problem.
    MetricsNotScraped,
    /// The state of a pod's endpoint HNS did not give: shown, not a problem.
    EndpointStateUnknown,
    /// `fleet status`: a value on the Node calicoctl-win wrote does not have its form.
    NodeValueMalformed,
    /// `fleet status`: Calico on the node is degraded (its condition False, or the operator's
    /// calico-node down).
    CalicoDegraded,
    /// `fleet status`: the node's `CalicoWindowsReady` is Unknown (a stale heartbeat, or a
    /// status that is none of True, False, Unknown).
    ConditionUnknown,
    /// `fleet status`: the node has no `CalicoWindowsReady` condition.
    ConditionMissing,
    /// `fleet status`: the node is degraded and its CalicoNode's codes are not known.
    CodesUnknown,
    /// `fleet status`: the node has another config than the fleet's, or none recorded.
    ConfigNotFleets,
    /// `fleet status`: the fleet DaemonSet's scheduled `verify` found the node does not pass
    /// traffic (`CalicoWindowsTraffic` False).
    TrafficFails,
    /// `fleet status`: the node's traffic has not been judged for two of the DaemonSet's
    /// `--verify-every` intervals (`CalicoWindowsTraffic` stale, or every run unable to judge).
    TrafficUnjudged,
    /// The API server refuses CalicoNode the TokenReview of `GET /diags` (calico-node's
    /// account lacks `create tokenreviews`): the node answers no `fleet diags`.
    DiagsReviewRefused,
    /// CalicoNode cannot listen on `metrics.port`: no program holds it, the system keeps it
    /// (an excluded port range).
    MetricsPortExcluded,
    /// `verify`: a probe pod got no address, or never started (the CNI plugin and IPAM).
    TrafficCni,
    /// `verify`: kube-scheduler placed no probe pod on its node (`PodScheduled` False,
    /// `Unschedulable`): the node's taints, capacity or the pods' constraints, not the network.
    TrafficScheduling,
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
    /// `install --verify`, `reconfigure --verify`: kube-proxy says its Node is being removed
    /// (deleted, or tainted by the cluster autoscaler): verify cannot pass there.
    NodeBeingRemoved,
    /// `verify`: the run's lease (its namespace's, or its turn in a namespace given) was lost
    /// mid-run (another run took the turn over, the renewals were refused, or the API server
    /// stopped answering): the run stopped, the checks not judged by then are `stopped`.
    VerifyLeaseLost,
}

impl Code {
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
