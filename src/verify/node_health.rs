//! The node's own findings (`health::survey`) joined to a `verify` report of that node: each
//! put beside the failing checks whose layer it explains (a stopped CalicoFelix under a policy
//! never applied).

use super::judge::{Explained, Outcome};
use super::matrix::CheckId;
use super::run::Report;
use crate::health::judge::{Code, Finding};

/// Joins the node's own findings (`own`) to its report: all of them in `node_health`, and to
/// each failing check those that bear on its layer (`explained`).
pub fn join(r: &mut Report, own: Vec<Finding>) {
    r.explained = r
        .checks
        .iter()
        .filter_map(|v| match &v.outcome {
            Outcome::Fail { finding } => {
                let by: Vec<Finding> = own
                    .iter()
                    .filter(|f| bears_on(finding.code, f))
                    .cloned()
                    .collect();
                (!by.is_empty()).then_some(Explained { check: v.check, by })
            }
            _ => None,
        })
        .collect();
    r.node_health = own;
}

/// The node's findings joined to `check`, said as "this node: SENTENCE [code]; ...", or nothing.
pub fn said(r: &Report, check: CheckId) -> Option<String> {
    let e = r.explained.iter().find(|e| e.check == check)?;
    let each: Vec<String> =
        e.by.iter()
            .map(|f| format!("{} [{}]", f.said.message, f.code.word()))
            .collect();
    Some(format!("this node: {}", each.join("; ")))
}

/// Whether the node's finding `f` bears on a failure of traffic `layer`: Felix programs policy
/// and VXLAN routes (projectcalico/calico v3.32.1 `felix/dataplane/windows/policy_mgr.go`,
/// `vxlan_mgr.go`), CalicoNode the Calico network, kube-proxy the Services.
fn bears_on(layer: Code, f: &Finding) -> bool {
    use Code::*;
    let service = |name: &str| match name {
        "CalicoFelix" => matches!(layer, TrafficOverlay | TrafficPolicy),
        "CalicoNode" => matches!(layer, TrafficCni | TrafficOverlay),
        "CalicoConfd" => layer == TrafficOverlay,
        "kube-proxy" => matches!(layer, TrafficKubeProxy | TrafficDns),
        _ => false,
    };
    match f.code {
        // A command changing the node now: every layer may be mid-change.
        UnderWay => layer != TrafficImage,
        ServiceNotRunning | HnsRestartFailed => service(&f.subject),
        FelixUnhealthy => matches!(layer, TrafficOverlay | TrafficPolicy),
        NetworkMissing => layer != TrafficImage,
        VniHns | VniCluster | AddressMismatch | EndpointOldAddress => {
            matches!(layer, TrafficOverlay | TrafficControlPlane)
        }
        EndpointStuck | PodNoEndpoint | IpamCapacity => layer == TrafficCni,
        Token | ApiGroup => matches!(layer, TrafficCni | TrafficPolicy),
        KubeProxy => matches!(layer, TrafficKubeProxy | TrafficDns),
        AdapterDrift | RouteMissing => {
            matches!(layer, TrafficEgress | TrafficFirewall | TrafficControlPlane)
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::judge::Verdict;

    fn failing(check: CheckId, code: Code) -> Verdict {
        Verdict {
            check,
            outcome: Outcome::Fail {
                finding: Finding::new(code, "server", "did not reach", "look"),
            },
            took_ms: 1,
            attempts: 1,
            delay_ms: None,
        }
    }

    fn report(checks: Vec<Verdict>) -> Report {
        Report {
            node: "win-1".into(),
            namespace: "ns".into(),
            run: "r".into(),
            image: "i".into(),
            checks,
            cleaned_up: true,
            ..Report::default()
        }
    }

    fn stopped(service: &str) -> Finding {
        crate::health::judge::service(service, None).expect("a finding")
    }

    #[test]
    fn a_stopped_felix_explains_the_policy_and_overlay_failures_and_not_dns() {
        let mut r = report(vec![
            failing(CheckId::PolicyApplied, Code::TrafficPolicy),
            failing(CheckId::WindowsToLinux, Code::TrafficOverlay),
            failing(CheckId::DnsService, Code::TrafficDns),
        ]);
        join(&mut r, vec![stopped("CalicoFelix"), stopped("CalicoConfd")]);
        assert_eq!(r.node_health.len(), 2);
        let explained: Vec<CheckId> = r.explained.iter().map(|e| e.check).collect();
        assert_eq!(explained, [CheckId::PolicyApplied, CheckId::WindowsToLinux]);
        // The policy is Felix's alone; the overlay is CalicoConfd's too (BGP).
        assert_eq!(r.explained[0].by, [stopped("CalicoFelix")]);
        assert_eq!(r.explained[1].by.len(), 2);
        let said = said(&r, CheckId::PolicyApplied).expect("said");
        assert_eq!(
            said,
            "this node: service CalicoFelix is not registered [service-not-running]"
        );
        assert!(super::said(&r, CheckId::DnsService).is_none());
    }

    #[test]
    fn findings_that_explain_no_failing_check_stay_in_the_nodes_health_only() {
        let mut r = report(vec![failing(CheckId::ClusterIp, Code::TrafficKubeProxy)]);
        join(&mut r, vec![stopped("CalicoFelix")]);
        assert!(r.explained.is_empty());
        assert_eq!(r.node_health, [stopped("CalicoFelix")]);
    }
}
