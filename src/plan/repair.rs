//! `repair`'s plan: the pods whose endpoints are stuck evicted (their controllers recreate
//! them with a new endpoint), the stuck and stale endpoints deleted, Felix (and the kube-proxy
//! service this tool runs) restarted so that it programs the endpoints again.
//!
//! The pods go first: a repair killed after the evictions leaves their endpoints without a
//! pod, which a rerun finds stale and deletes; killed after the deletions, it leaves a journal,
//! and the rerun restarts the services it owed.

use crate::apply::Action;
use crate::cluster::drain::DrainOptions;
use crate::installed::endpoints::Judged;
use crate::layout::Role;

/// What the plan is made from.
pub struct Inputs<'a> {
    pub node: &'a str,
    /// The endpoints as judged now; the faults are repaired.
    pub judged: &'a [Judged],
    pub drain: DrainOptions,
    /// The services installed, by name: Felix is restarted, and kube-proxy when this tool
    /// runs it.
    pub installed: &'a [String],
    /// An interrupted repair's journal is continued: its restarts are owed even when no fault
    /// is left.
    pub interrupted: bool,
}

/// Pods with a stuck endpoint that no controller recreates, which are evicted only with
/// `--force`.
#[derive(Debug, PartialEq, Eq)]
pub struct Unmanaged(pub Vec<String>);

/// The repair's actions, or the pods it may not evict without `--force`.
pub fn plan(i: &Inputs) -> Result<Vec<Action>, Unmanaged> {
    let faults: Vec<&Judged> = i.judged.iter().filter(|j| j.verdict.is_fault()).collect();
    let owners: Vec<_> = faults.iter().filter_map(|j| j.owner.as_ref()).collect();
    let unmanaged: Vec<String> = owners
        .iter()
        .filter(|(_, managed)| !managed)
        .map(|(p, _)| p.to_string())
        .collect();
    if !unmanaged.is_empty() && !i.drain.force {
        return Err(Unmanaged(unmanaged));
    }
    let mut actions = Vec::new();
    let mut pods: Vec<String> = owners.iter().map(|(p, _)| p.to_string()).collect();
    pods.sort();
    pods.dedup();
    if !pods.is_empty() {
        actions.push(Action::EvictPods {
            node: i.node.to_owned(),
            pods,
            options: i.drain,
        });
    }
    for j in &faults {
        actions.push(Action::DeleteEndpoint {
            id: j.id.clone(),
            name: j.name.clone(),
            ip: j.ip.clone(),
            why: j.why.clone().unwrap_or_default(),
        });
    }
    if !actions.is_empty() || i.interrupted {
        for role in [Role::Felix, Role::KubeProxy] {
            let name = role.service_name();
            if i.installed.iter().any(|s| s.eq_ignore_ascii_case(name)) {
                actions.push(Action::StopService { name: name.into() });
                actions.push(Action::StartService { name: name.into() });
            }
        }
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
            pod: owner.map(|(n, _)| format!("default/{n}")),
            verdict,
            why: Some("why".into()),
            owner: owner.map(|(n, m)| {
                (
                    PodRef {
                        namespace: "default".into(),
                        name: n.into(),
                        uid: String::new(),
                    },
                    m,
                )
            }),
        }
    }

    fn inputs<'a>(judged: &'a [Judged], installed: &'a [String], force: bool) -> Inputs<'a> {
        Inputs {
            node: "win-1",
            judged,
            drain: DrainOptions {
                timeout: Duration::from_secs(60),
                grace_period: None,
                force,
                delete_emptydir_data: false,
                concurrency: 4,
            },
            installed,
            interrupted: false,
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

    #[test]
    fn pods_go_first_then_their_endpoints_then_felix_and_kube_proxy_restart() {
        let j = [
            judged("a", Verdict::Stuck, Some(("web", true))),
            judged("b", Verdict::Stale, None),
            judged("c", Verdict::Ok, Some(("db", true))),
            judged("d", Verdict::Attaching, Some(("new", true))),
        ];
        let installed = [
            "CalicoNode".into(),
            "CalicoFelix".into(),
            "kube-proxy".into(),
        ];
        let actions = plan(&inputs(&j, &installed, false)).expect("plan");
        assert_eq!(
            kinds(&actions),
            [
                "evict pod(s)",
                "delete HNS",
                "delete HNS",
                "stop service",
                "start service",
                "stop service",
                "start service"
            ]
        );
        assert!(actions[0].describe().contains("default/web"), "{actions:?}");
        assert!(actions[1].describe().contains("a_Calico"));
        assert!(actions[2].describe().contains("b_Calico"));
        assert!(actions[5].describe().contains("kube-proxy"));
    }

    #[test]
    fn nothing_wrong_is_nothing_to_do_unless_an_interrupted_repair_owes_its_restarts() {
        let j = [judged("c", Verdict::Ok, Some(("db", true)))];
        let installed = ["CalicoFelix".into()];
        let mut i = inputs(&j, &installed, false);
        assert!(plan(&i).expect("plan").is_empty());
        i.interrupted = true;
        assert_eq!(
            kinds(&plan(&i).expect("plan")),
            ["stop service", "start service"]
        );
    }

    #[test]
    fn a_pod_no_controller_recreates_is_evicted_only_with_force() {
        let j = [judged("a", Verdict::Stuck, Some(("bare", false)))];
        let installed = ["CalicoFelix".into()];
        assert_eq!(
            plan(&inputs(&j, &installed, false)).err(),
            Some(Unmanaged(vec!["default/bare".into()]))
        );
        let actions = plan(&inputs(&j, &installed, true)).expect("plan");
        assert!(actions[0].describe().contains("default/bare"));
    }
}
