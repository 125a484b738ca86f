//! The judges of the node's own state: its services and their registration, Felix, the HNS
//! networks and endpoints, the last HNS restart, the vSwitch adapter's addressing, the routes,
//! the files, kube-proxy and the protected directories.

use super::finding::{Code, Finding, Said};
use crate::host::{InstalledService, ServiceState};
use crate::installed::endpoints::{Judged, Verdict};
use crate::installed::felix_health::FelixHealth;

/// A service's state in a word (`running`), or `not registered`.
pub fn state_word(found: Option<&InstalledService>) -> String {
    found.map_or("not registered".to_owned(), |s| {
        format!("{:?}", s.state).to_ascii_lowercase()
    })
}

/// A service as found: not running (or not there) is a finding.
pub fn service(name: &str, found: Option<&InstalledService>) -> Option<Finding> {
    if found.is_some_and(|s| s.state == ServiceState::Running) {
        return None;
    }
    let said = state_word(found);
    Some(Finding::new(
        Code::ServiceNotRunning,
        name,
        format!("service {name} is {said}"),
        format!("Start-Service {name}; its log is in the install root's logs directory"),
    ))
}

/// Felix's own health (`FelixHealth::problem`), `now` being seconds since 1970.
pub fn felix(h: &FelixHealth, now: i64) -> Option<Finding> {
    h.problem(now)
        .map(|p| Finding::fixed(Code::FelixUnhealthy, "CalicoFelix", p))
}

/// An HNS network the install made (`Calico`, `External`) that does not exist.
pub fn network_missing(name: &str) -> Finding {
    Finding::fixed(
        Code::NetworkMissing,
        name,
        format!("the HNS network {name} does not exist"),
    )
}

/// HNS did not give the state of `count` pods' endpoints: shown, not a problem.
pub fn endpoint_states_unknown(count: usize) -> Finding {
    Finding::fixed(
        Code::EndpointStateUnknown,
        "endpoints",
        format!(
            "the state of {count} endpoint(s) cannot be read (HNS v1 GET /endpoints/ did not give it): a stuck endpoint cannot be told from an attached one, and none is called stuck"
        ),
    )
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
    let code = match j.verdict {
        Verdict::Unknown => Code::EndpointUnknown,
        v => ENDPOINT_CODES.iter().find(|(w, _)| *w == v)?.1,
    };
    Some(Finding::fixed(code, j.name.clone(), j.sentence()))
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
    Finding::fixed(Code::HostUnreadable, subject, message)
}

/// What the vSwitch dropped of its adapter's addressing (`before`) and its host adapter (`now`)
/// still lacks as the vSwitch left it (`lost`: `addressing::as_left`), and `Calico_ep`'s metric
/// against the LAN's. What changed since the vSwitch was made is an administrator's
/// (`addressing::changed_since`): no finding, and nothing puts it back.
pub fn addressing(
    (before, now): (
        &crate::installed::addressing::Addressing,
        &crate::host::Adapter,
    ),
    lost: &[crate::installed::addressing::Drift],
    adapters: &[crate::host::Adapter],
) -> Vec<Finding> {
    const REMEDY: &str = "Restart-Service CalicoNode -Force: its start puts back what the vSwitch dropped, while it is as the vSwitch left it (docs/network-identity.md)";
    let mut out: Vec<Finding> = lost
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
    if let Some(ep) = crate::installed::addressing::ep_metric_clash(adapters, now) {
        let said = format!(
            "{} has the interface metric {}, not above {}'s {}: Windows may send the LAN's traffic into the pod network",
            ep.name, ep.metric, now.name, now.metric
        );
        out.push(Finding::new(
            Code::AdapterDrift,
            ep.name.clone(),
            said,
            "Restart-Service CalicoNode -Force: once calico-node made Calico_ep, it sets Calico_ep's metric above the LAN's (docs/network-identity.md)",
        ));
    }
    out
}

/// A directory whose files run as SYSTEM that others may change, with who.
pub fn dir_access(dir: &str, who: &[String]) -> Finding {
    Finding::fixed(
        Code::DirAccess,
        dir,
        format!(
            "{dir} can be changed by others than SYSTEM and Administrators ({})",
            who.join("; ")
        ),
    )
}

/// A route the node had before the vSwitch (the cloud metadata route) that is gone.
pub fn route_missing(route: &crate::host::Route) -> Finding {
    Finding::fixed(
        Code::RouteMissing,
        "route",
        format!(
            "the cloud metadata route {}/{} is missing: the node had it before the install",
            route.destination, route.prefix_len
        ),
    )
}

/// A recorded service whose registration differs from what the config wants (`changes`).
pub fn service_drift(name: &str, changes: &[String]) -> Finding {
    Finding::fixed(
        Code::ServiceDrift,
        name,
        format!(
            "service {name} differs from the config: {}",
            changes.join(", ")
        ),
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
    let remedy = said.remedy.as_deref().unwrap_or(Code::KubeProxy.remedy());
    let message = format!("kube-proxy: {}", said.message);
    Finding::new(Code::KubeProxy, "kube-proxy", message, remedy)
}
