//! `repair`'s plan: the pods whose endpoints are stuck evicted (their controllers recreate
//! them with a new endpoint), then the stuck and stale endpoints deleted. Nothing is restarted:
//! Felix refreshes its HNS endpoint cache before any workload endpoint update (projectcalico/calico
//! v3.31.7 felix/dataplane/windows/endpoint_mgr.go `CompleteDeferredWork`). Only endpoints
//! `installed::endpoints` tells to be a pod's or kube-proxy's (judged only while it does not
//! run) can be at fault. The pods go first: a repair killed after the evictions leaves their
//! endpoints without a pod, which a rerun finds stale and deletes.

use crate::apply::Action;
use crate::cluster::drain::DrainOptions;
use crate::installed::endpoints::Judged;

/// What the plan is made from.
pub struct Inputs<'a> {
    pub node: &'a crate::k8s_name::NodeName,
    /// The endpoints as judged now; the faults are repaired.
    pub judged: &'a [Judged],
    pub drain: DrainOptions,
    /// Repair even when more than half of the pods' endpoints are at fault.
    pub allow_majority: bool,
}

/// Why the plan is refused before anything changes.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Pods with a stuck endpoint that no controller recreates, evicted only with `--force`.
    Unmanaged(Vec<String>),
    /// More than half of this host's pod endpoints judged at fault (at least `BREAKER_MIN`):
    /// a misjudgement is likelier than such a node, and nothing is done on it.
    Breaker { faults: usize, of: usize },
}

/// The fewest faults the breaker counts: two bad endpoints of three pods are a node, not a
/// misjudgement.
pub const BREAKER_MIN: usize = 3;

/// The repair's actions, or why it is refused.
pub fn plan(i: &Inputs) -> Result<Vec<Action>, Refusal> {
    let faults: Vec<&Judged> = i.judged.iter().filter(|j| j.verdict.is_fault()).collect();
    let pods_total = i.judged.iter().filter(|j| j.is_pod_endpoint()).count();
    let pod_faults = faults.iter().filter(|j| j.is_pod_endpoint()).count();
    if !i.allow_majority && pod_faults >= BREAKER_MIN && pod_faults * 2 > pods_total {
        return Err(Refusal::Breaker {
            faults: pod_faults,
            of: pods_total,
        });
    }
    let owners: Vec<_> = faults.iter().filter_map(|j| j.owner.as_ref()).collect();
    let unmanaged: Vec<String> = owners
        .iter()
        .filter(|(_, managed)| !managed)
        .map(|(p, _)| p.to_string())
        .collect();
    if !unmanaged.is_empty() && !i.drain.force {
        return Err(Refusal::Unmanaged(unmanaged));
    }
    let mut actions = Vec::new();
    let mut pods: Vec<String> = owners.iter().map(|(p, _)| p.to_string()).collect();
    pods.sort();
    pods.dedup();
    if !pods.is_empty() {
        actions.push(Action::EvictPods {
            node: i.node.clone(),
            pods,
            options: i.drain,
        });
    }
    // A pod judged `no-endpoint` has no endpoint to delete: its eviction is its repair.
    for j in faults.iter().filter(|j| j.is_endpoint()) {
        actions.push(Action::DeleteEndpoint {
            id: j.id.clone(),
            name: j.name.clone(),
            ip: j.ip.clone(),
            namespace: j.namespace.clone(),
            why: j.why.clone().unwrap_or_default(),
        });
    }
    Ok(actions)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::drain::PodRef;
    use crate::installed::endpoints::Verdict;
    use std::time::Duration;

    fn judged(id: &str, verdict: Verdict, owner: Option<(&str, bool)>) -> Judged {
        Judged {
            id: id.into(),
            name: format!("{id}_Calico"),
            network: "Calico".into(),
            ip: Some("10.244.1.7".into()),
            state: Some("Created"),
            remote: false,
            kind: crate::installed::endpoints::Kind::Pod,
            pod: owner.map(|(n, _)| format!("default/{n}")),
            verdict,
            why: Some("why".into()),
            owner: owner.map(|(n, m)| {
                (
                    PodRef {
                        namespace: "default".into(),
                        name: n.into(),
                        uid: String::new(),
                        deleting: false,
                    },
                    m,
                )
            }),
            namespace: None,
        }
    }

    fn inputs(judged: &[Judged]) -> Inputs<'_> {
        static WIN_1: std::sync::LazyLock<crate::k8s_name::NodeName> =
            std::sync::LazyLock::new(|| "win-1".into());
        Inputs {
            node: &WIN_1,
            judged,
            drain: DrainOptions {
                timeout: Duration::from_secs(60),
                grace_period: None,
                force: false,
                delete_emptydir_data: false,
                concurrency: 4,
            },
            allow_majority: false,
        }
    }

    fn kinds(actions: &[Action]) -> Vec<String> {
        actions
            .iter()
            .map(|a| {
                a.describe()
                    .split(' ')
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect()
    }

    fn healthy(n: usize) -> Vec<Judged> {
        (0..n)
            .map(|i| judged(&format!("ok{i}"), Verdict::Ok, Some(("db", true))))
            .collect()
    }

    /// Pods first, then their endpoints; no service is restarted (Felix refreshes its endpoint
    /// cache before each workload endpoint update; a kube-proxy restart would take every
    /// ClusterIP down).
    #[test]
    fn pods_go_first_then_their_endpoints_and_nothing_is_restarted() {
        let mut j = vec![
            judged("a", Verdict::Stuck, Some(("web", true))),
            judged("b", Verdict::Stale, None),
            judged("d", Verdict::Attaching, Some(("new", true))),
            judged("s", Verdict::Suspect, None),
        ];
        j.extend(healthy(3));
        let actions = plan(&inputs(&j)).expect("plan");
        assert_eq!(
            kinds(&actions),
            ["evict pod(s)", "delete HNS", "delete HNS"]
        );
        assert!(actions[0].describe().contains("default/web"), "{actions:?}");
        assert!(actions[1].describe().contains("a_Calico"));
        assert!(actions[2].describe().contains("b_Calico"));
        assert!(
            !actions
                .iter()
                .any(|a| matches!(a, Action::StopService { .. } | Action::StartService { .. })),
            "{actions:?}"
        );
    }

    /// More than half of the pods' endpoints at fault (three or more) is a misjudgement more
    /// likely than a node: refused, unless the user says it is meant.
    #[test]
    fn the_breaker_refuses_when_most_pod_endpoints_would_go() {
        let mut j: Vec<Judged> = (0..3)
            .map(|i| judged(&format!("s{i}"), Verdict::Stale, None))
            .collect();
        j.extend(healthy(2));
        assert_eq!(
            plan(&inputs(&j)).err(),
            Some(Refusal::Breaker { faults: 3, of: 5 })
        );
        let mut i = inputs(&j);
        i.allow_majority = true;
        assert_eq!(plan(&i).expect("allowed").len(), 3);
        // Half, or fewer than three, is repaired.
        j.extend(healthy(1));
        assert_eq!(plan(&inputs(&j)).expect("half").len(), 3);
        let two = [
            judged("s0", Verdict::Stale, None),
            judged("s1", Verdict::Stale, None),
        ];
        assert_eq!(plan(&inputs(&two)).expect("two").len(), 2);
    }
}
