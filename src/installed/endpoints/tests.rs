use super::*;

const NOW: i64 = 1_800_000_000;

fn ep(id: &str, name: &str, ip: &str, state: Option<u16>, remote: bool) -> HnsEndpoint {
    HnsEndpoint {
        id: id.into(),
        name: name.into(),
        network_id: "net".into(),
        ip: Some(ip.into()),
        remote,
        state,
    }
}

fn pod(name: &str, ip: Option<&str>, age_secs: i64) -> NodePod {
    NodePod {
        pod: PodRef {
            namespace: "default".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        },
        ips: ip.map(|i| vec![i.to_owned()]).unwrap_or_default(),
        created: Some(NOW - age_secs),
        managed: true,
    }
}

fn verdicts(
    eps: &[HnsEndpoint],
    pods: Option<&[NodePod]>,
    remote: &[(&str, bool)],
) -> Vec<Verdict> {
    let remote_in_use: BTreeMap<String, bool> = remote
        .iter()
        .map(|(ip, b)| ((*ip).to_owned(), *b))
        .collect();
    let ev = Evidence {
        pods,
        remote_in_use: &remote_in_use,
        now: NOW,
        grace: DEFAULT_GRACE,
    };
    judge(eps, "Calico", &ev)
        .iter()
        .map(|j| j.verdict)
        .collect()
}

/// azure-container-networking npm/pkg/dataplane/dataplane_windows.go: HCN is asked for the
/// endpoints in State 3 (`hcnEndpointStateAttachedSharing`), "All running Windows pods with
/// networking must be in this state". A running pod's endpoint in State 3 is healthy, however
/// old; so is Attached (2).
#[test]
fn a_running_pods_endpoint_in_attached_sharing_is_healthy() {
    let pods = [pod("web", Some("10.244.1.7"), 3600)];
    for state in [Some(3), Some(2), None] {
        let eps = [ep("a", "x_Calico", "10.244.1.7", state, false)];
        assert_eq!(verdicts(&eps, Some(&pods), &[]), [Verdict::Ok], "{state:?}");
    }
}

/// hcsshim internal/hns/hnsendpoint.go `EndpointState`: Created 1 (never attached), Detached 4,
/// Degraded 5, Destroyed 6 are no running pod's state: stuck past the grace period, attaching
/// within it.
#[test]
fn a_pods_endpoint_not_attached_past_the_grace_period_is_stuck() {
    for state in [1, 4, 5, 6] {
        let eps = [ep("a", "x_Calico", "10.244.1.7", Some(state), false)];
        let old = [pod("web", Some("10.244.1.7"), 121)];
        let young = [pod("web", Some("10.244.1.7"), 30)];
        assert_eq!(verdicts(&eps, Some(&old), &[]), [Verdict::Stuck], "{state}");
        assert_eq!(
            verdicts(&eps, Some(&young), &[]),
            [Verdict::Attaching],
            "{state}"
        );
    }
}

#[test]
fn an_endpoint_whose_address_no_pod_has_is_stale_unless_a_young_pod_waits_for_one() {
    let eps = [ep("a", "x_Calico", "10.244.1.9", Some(3), false)];
    let others = [pod("web", Some("10.244.1.7"), 3600)];
    assert_eq!(verdicts(&eps, Some(&others), &[]), [Verdict::Stale]);
    let waiting = [pod("web", Some("10.244.1.7"), 3600), pod("new", None, 20)];
    assert_eq!(verdicts(&eps, Some(&waiting), &[]), [Verdict::Unclaimed]);
    // A pod that has waited past the grace period for an address claims nothing.
    let old_waiting = [pod("new", None, 600)];
    assert_eq!(verdicts(&eps, Some(&old_waiting), &[]), [Verdict::Stale]);
}

/// microsoft/Windows-Containers#631: an endpoint that outlives its pod breaks the pod that gets
/// its address next. Of two endpoints with one address, the one not attached is stale.
#[test]
fn of_two_endpoints_with_one_address_the_one_not_attached_is_stale() {
    let eps = [
        ep("old", "old_Calico", "10.244.1.7", Some(4), false),
        ep("new", "new_Calico", "10.244.1.7", Some(3), false),
    ];
    let pods = [pod("web", Some("10.244.1.7"), 10)];
    assert_eq!(
        verdicts(&eps, Some(&pods), &[]),
        [Verdict::Stale, Verdict::Ok]
    );
}

#[test]
fn the_nodes_own_endpoint_and_other_hosts_endpoints() {
    let eps = [
        ep("h", SOURCE_VIP_ENDPOINT, "10.244.1.2", Some(3), false),
        ep("r1", "r1", "10.244.2.5", None, true),
        ep("r2", "r2", "10.244.2.6", None, true),
        ep("r3", "r3", "10.244.2.7", None, true),
    ];
    assert_eq!(
        verdicts(
            &eps,
            Some(&[]),
            &[("10.244.2.5", true), ("10.244.2.6", false)]
        ),
        [
            Verdict::Ok,
            Verdict::Ok,
            Verdict::RemoteStale,
            Verdict::Unchecked
        ]
    );
}

#[test]
fn without_the_cluster_nothing_is_called_a_fault() {
    let eps = [
        ep("a", "x_Calico", "10.244.1.7", Some(1), false),
        ep("r", "r", "10.244.2.5", None, true),
    ];
    let v = verdicts(&eps, None, &[]);
    assert_eq!(v, [Verdict::Unchecked, Verdict::Unchecked]);
    assert!(!v.iter().any(|v| v.is_fault()));
}

#[test]
fn a_stuck_endpoint_names_its_pod_and_whether_a_controller_recreates_it() {
    let eps = [ep("a", "x_Calico", "10.244.1.7", Some(1), false)];
    let pods = [pod("web", Some("10.244.1.7"), 600)];
    let none = BTreeMap::new();
    let ev = Evidence {
        pods: Some(&pods),
        remote_in_use: &none,
        now: NOW,
        grace: Duration::from_secs(300),
    };
    let j = &judge(&eps, "Calico", &ev)[0];
    assert_eq!(j.pod.as_deref(), Some("default/web"));
    assert_eq!(j.state, Some("Created"));
    assert_eq!(j.owner, Some((pods[0].pod.clone(), true)));
    assert!(j.why.as_deref().is_some_and(|w| w.contains("5m")), "{j:?}");
    let doc = serde_json::to_value(j).expect("json");
    assert_eq!(doc["verdict"], "stuck");
    // The word JSON has is the word the messages use.
    for v in [
        Verdict::Ok,
        Verdict::Attaching,
        Verdict::Unclaimed,
        Verdict::Unchecked,
        Verdict::Stuck,
        Verdict::Stale,
        Verdict::RemoteStale,
    ] {
        assert_eq!(serde_json::to_value(v).expect("json"), v.word());
    }
    assert!(doc.get("owner").is_none(), "{doc}");
}
