//! The node's health in one room: what can be wrong with Calico on this node, each fact judged
//! once into a typed finding (a stable code, its subject, one sentence, the remedy). `status`
//! prints the findings and lists them in its JSON (`findings`, beside `problems`, their
//! sentences); CalicoNode's `CalicoWindowsReady` condition summarises the ones it can see
//! (`supervise::condition`), with the same sentences; `repair` names the endpoint ones.
//! docs/findings.md lists every code (a test keeps it complete).

use super::endpoints::{Judged, Verdict};
use super::felix_health::FelixHealth;
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
    /// A pod whose address no endpoint has.
    PodNoEndpoint,
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
}

impl Code {
    /// Every code, for the documentation's completeness test.
    pub const ALL: [Code; 23] = [
        Code::UnderWay,
        Code::ServiceNotRunning,
        Code::ServiceDrift,
        Code::RouteMissing,
        Code::NetworkMissing,
        Code::EndpointStuck,
        Code::EndpointStale,
        Code::EndpointRemoteStale,
        Code::PodNoEndpoint,
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
    ];

    /// The code's word, as JSON has it.
    pub fn word(self) -> String {
        serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }
}

/// One thing wrong with Calico on this node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Finding {
    pub code: Code,
    /// What it is about: a service, a network, an endpoint, a file, the node, the token.
    pub subject: String,
    /// One sentence.
    pub message: String,
    /// What fixes it, when one thing does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remedy: Option<String>,
}

impl Finding {
    pub fn new(code: Code, subject: impl Into<String>, message: impl Into<String>) -> Self {
        Self {
            code,
            subject: subject.into(),
            message: message.into(),
            remedy: None,
        }
    }

    pub fn with_remedy(mut self, remedy: impl Into<String>) -> Self {
        self.remedy = Some(remedy.into());
        self
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
    Some(
        Finding::new(
            Code::ServiceNotRunning,
            name,
            format!("service {name} is {said}"),
        )
        .with_remedy(format!(
            "Start-Service {name}; its log is in the install root's logs directory"
        )),
    )
}

/// Felix's own health (`FelixHealth::problem`), `now` being seconds since 1970.
pub fn felix(h: &FelixHealth, now: i64) -> Option<Finding> {
    h.problem(now).map(|p| {
        Finding::new(Code::FelixUnhealthy, "CalicoFelix", p).with_remedy(
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
    )
    .with_remedy("Restart-Service CalicoNode (it makes the networks), and read calico-node.log")
}

/// The Calico network: missing is a finding.
pub fn calico_network(exists: bool) -> Option<Finding> {
    (!exists).then(|| network_missing(crate::layout::CALICO_NETWORK))
}

/// An endpoint judged at fault (`installed::endpoints`), with its sentence.
pub fn endpoint(j: &Judged) -> Option<Finding> {
    let code = match j.verdict {
        Verdict::Stuck => Code::EndpointStuck,
        Verdict::Stale => Code::EndpointStale,
        Verdict::RemoteStale => Code::EndpointRemoteStale,
        Verdict::NoEndpoint => Code::PodNoEndpoint,
        _ => return None,
    };
    Some(Finding::new(code, j.name.clone(), j.sentence()).with_remedy("calicoctl-win repair"))
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
            )
            .with_remedy(format!("Start-Service {service}"))
        })
        .collect()
}

/// The VNI in the config, in HNS (the Calico network's VSID) and the one the cluster's Felix
/// uses (`Felix::vni`, its default applied), on a vxlan node.
pub fn vni(config: u32, hns: Option<u32>, cluster: Option<u32>) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(v) = hns.filter(|v| *v != config) {
        out.push(
            Finding::new(
                Code::VniHns,
                crate::layout::CALICO_NETWORK,
                format!("the Calico network has VSID {v}, the config says VNI {config}"),
            )
            .with_remedy("calicoctl-win reconfigure --drain makes the network again"),
        );
    }
    if let Some(v) = cluster.filter(|v| *v != config) {
        out.push(
            Finding::new(
                Code::VniCluster,
                "FelixConfiguration",
                format!(
                    "the VNI the cluster's Felix uses is {v} (its FelixConfiguration's vxlanVNI, or Felix's default 4096 when unset), the config says {config}"
                ),
            )
            .with_remedy(format!(
                "set vxlan.vni to {v}, or change the cluster's FelixConfiguration first"
            )),
        );
    }
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

    #[test]
    fn the_vni_is_judged_against_hns_and_the_cluster() {
        assert!(vni(4096, Some(4096), Some(4096)).is_empty());
        let f = vni(4097, Some(4096), Some(4096));
        assert_eq!(
            f.iter().map(|f| f.code).collect::<Vec<_>>(),
            [Code::VniHns, Code::VniCluster]
        );
        assert!(vni(4097, None, None).is_empty(), "nothing to compare");
    }
}
