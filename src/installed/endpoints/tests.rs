use super::*;
use crate::layout::SOURCE_VIP_ENDPOINT;

const NOW: i64 = 1_800_000_000;

fn ep(id: &str, name: &str, ip: &str, state: Option<u16>, remote: bool) -> HnsEndpoint {
    HnsEndpoint {
        id: id.into(),
        name: name.into(),
        network_id: "net".into(),
        ip: Some(ip.into()),
        remote,
        state,
        namespace: None,
        provider_address: None,
        // Another host's as kube-proxy makes it for a Service backend (kubernetes
        // pkg/proxy/winkernel/proxier.go: `conjureMac("02-11", ip)`).
        mac: remote.then(|| kind::conjured(ip.parse().expect("an IPv4 address"))),
    }
}

fn pod(name: &str, ip: Option<&str>, age_secs: i64) -> NodePod {
    NodePod {
        pod: PodRef {
            namespace: "default".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
            deleting: false,
        },
        ips: ip.map(|i| vec![i.to_owned()]).unwrap_or_default(),
        created: Some(NOW - age_secs),
        managed: true,
    }
}

/// No remote address known in use.
static NONE: BTreeMap<String, bool> = BTreeMap::new();

/// The evidence of the pods `pods` at `NOW`, with the default grace period.
fn evidence(pods: &[NodePod]) -> Evidence<'_> {
    Evidence {
        pods: Some(pods),
        remote_in_use: &NONE,
        kube_proxy_runs: false,
        now: NOW,
        grace: DEFAULT_GRACE,
        provider: None,
        source_vip: None,
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
        ..evidence(&[])
    };
    judge(eps, "Calico", &ev)
        .iter()
        .map(|j| j.verdict)
        .collect()
}

/// A running pod's endpoint is healthy, however old, AttachedSharing (3) or Attached (2); the
/// other states (`hns::state_name`) are no running pod's: stuck past the grace period,
/// attaching within it.
#[test]
fn a_pods_endpoint_is_judged_by_its_state_and_the_pods_age() {
    let mut cases = vec![(Some(3), 3600, Verdict::Ok), (Some(2), 3600, Verdict::Ok)];
    cases.push((None, 3600, Verdict::Ok));
    for state in [1, 4, 5, 6] {
        cases.push((Some(state), 121, Verdict::Stuck));
        cases.push((Some(state), 30, Verdict::Attaching));
    }
    for (state, age, want) in cases {
        let eps = [ep("a", "x_Calico", "10.244.1.7", state, false)];
        let pods = [pod("web", Some("10.244.1.7"), age)];
        assert_eq!(verdicts(&eps, Some(&pods), &[]), [want], "{state:?} {age}");
    }
}

/// One look's verdicts, case by case:
/// - an address no pod has is stale unless a pod may still claim it: one without an address,
///   however old (a pod scheduled long ago whose CNI ADD is slow on a loaded node);
/// - a finished pod is left out of the owners by `pods::on_node` (its phase): its Detached
///   endpoint is stale, not stuck (no completed pod is evicted), and a new pod may claim it;
/// - microsoft/Windows-Containers#631 (an endpoint that outlives its pod breaks the pod that
///   gets its address next): of two endpoints with one address, the one not attached is stale;
/// - the node's own endpoint is infrastructure; another host's is in use when an EndpointSlice
///   or a pod has its address, remote-stale when none has, unchecked when not asked;
/// - without the cluster nothing is called a fault.
#[test]
fn one_looks_verdicts() {
    use Verdict::*;
    let web = || pod("web", Some("10.244.1.7"), 3600);
    let (a, w) = (
        ep("a", "x_Calico", "10.244.1.9", Some(3), false),
        ep("w", "web_Calico", "10.244.1.7", Some(3), false),
    );
    let detached = ep("a", "x_Calico", "10.244.1.7", Some(4), false);
    let remote = |id: &str, ip: &str| ep(id, id, ip, None, true);
    let remotes = vec![
        ep("h", SOURCE_VIP_ENDPOINT, "10.244.1.2", Some(3), false),
        remote("r1", "10.244.2.5"),
        remote("r2", "10.244.2.6"),
        remote("r3", "10.244.2.7"),
    ];
    let in_use = [("10.244.2.5", true), ("10.244.2.6", false)];
    /// The endpoints, the node's pods (`None`: no cluster), the addresses in use, the verdicts.
    type Case<'a> = (
        Vec<HnsEndpoint>,
        Option<Vec<NodePod>>,
        &'a [(&'a str, bool)],
        Vec<Verdict>,
    );
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        (vec![a.clone(), w.clone()], Some(vec![web()]), &[], vec![Stale, Ok]),
        (vec![a.clone(), w.clone()], Some(vec![web(), pod("new", None, 20)]), &[], vec![Unclaimed, Ok]),
        (vec![a, w], Some(vec![web(), pod("new", None, 600)]), &[], vec![Unclaimed, Ok]),
        (vec![detached.clone()], Some(vec![]), &[], vec![Stale]),
        (vec![detached], Some(vec![pod("new", None, 5)]), &[], vec![Unclaimed]),
        (
            vec![
                ep("old", "old_Calico", "10.244.1.7", Some(4), false),
                ep("new", "new_Calico", "10.244.1.7", Some(3), false),
            ],
            Some(vec![pod("web", Some("10.244.1.7"), 10)]),
            &[],
            vec![Stale, Ok],
        ),
        (remotes, Some(vec![]), &in_use, vec![Ok, Ok, RemoteStale, Unchecked]),
        (
            vec![ep("a", "x_Calico", "10.244.1.7", Some(1), false), remote("r", "10.244.2.5")],
            None,
            &[],
            vec![Unchecked, Unchecked],
        ),
    ];
    for (eps, pods, remote_in_use, want) in cases {
        let got = verdicts(&eps, pods.as_deref(), remote_in_use);
        assert_eq!(got, want, "{eps:?} {pods:?}");
    }
}

/// A Running pod created weeks ago whose sandbox was made again after a reboot: its new
/// endpoint is attached with a new address, and kubelet still posts the old one, which no
/// endpoint has. The new endpoint is no one's yet, never stale: the pod may claim it.
#[test]
fn a_remade_sandboxs_endpoint_is_kept_while_its_pod_posts_the_old_address() {
    let eps = [
        ep("new", "new_Calico", "10.244.1.30", Some(3), false),
        ep("w", "web_Calico", "10.244.1.7", Some(3), false),
    ];
    let pods = [
        pod("old", Some("10.244.1.12"), 30 * 86_400),
        pod("web", Some("10.244.1.7"), 3600),
    ];
    // The endpoint is kept (unclaimed); the pod, whose posted address has no endpoint, is
    // named `no-endpoint`: a fault only once it has lasted (`age`), and its repair is its
    // eviction, never the endpoint's deletion.
    assert_eq!(
        verdicts(&eps, Some(&pods), &[]),
        [Verdict::Unclaimed, Verdict::Ok, Verdict::NoEndpoint]
    );
    let judged = judge(&eps, "Calico", &evidence(&pods));
    let why = judged[0].why.as_deref().unwrap_or_default();
    assert!(why.contains("default/old"), "{why}");
}

/// One look never makes a fault: a fault not yet seen for longer than the grace period by
/// CalicoNode's or repair's recorded looks is `suspect`, and one healthy look forgets it.
/// (Without a record, suspect and no pod evicted: tests/lifecycle
/// `a_fault_seen_once_is_not_repaired_until_it_has_lasted`.)
#[test]
fn a_fault_counts_only_once_seen_for_longer_than_the_grace_period() {
    let eps = [ep("a", "x_Calico", "10.244.1.9", Some(3), false)];
    let pods: [NodePod; 0] = [];
    let ev = |now| Evidence {
        now,
        ..evidence(&pods)
    };
    let mut seen = seen::Seen::default();
    let look = |now: i64, seen: &mut seen::Seen| {
        let mut j = judge(&eps, "Calico", &ev(now));
        observe(seen, &j, now);
        age(&mut j, seen, now, DEFAULT_GRACE);
        j[0].verdict
    };
    assert_eq!(look(NOW, &mut seen), Verdict::Suspect, "the first look");
    assert_eq!(
        look(NOW + 60, &mut seen),
        Verdict::Suspect,
        "within the grace"
    );
    assert_eq!(look(NOW + 121, &mut seen), Verdict::Stale, "past the grace");
    // Healthy at one look: forgotten, and aged again from the next fault.
    let claimed = [pod("p", Some("10.244.1.9"), 10)];
    let healthy = Evidence {
        pods: Some(&claimed),
        ..ev(NOW + 130)
    };
    observe(&mut seen, &judge(&eps, "Calico", &healthy), NOW + 130);
    assert_eq!(seen.first("a"), None);
    assert_eq!(look(NOW + 200, &mut seen), Verdict::Suspect);
}

#[test]
fn a_stuck_endpoint_names_its_pod_and_whether_a_controller_recreates_it() {
    let eps = [ep("a", "x_Calico", "10.244.1.7", Some(1), false)];
    let pods = [pod("web", Some("10.244.1.7"), 600)];
    let ev = Evidence {
        grace: Duration::from_secs(300),
        ..evidence(&pods)
    };
    let j = &judge(&eps, "Calico", &ev)[0];
    let owner = Some((pods[0].pod.clone(), true));
    assert_eq!(
        (j.pod.as_deref(), j.state, &j.owner),
        (Some("default/web"), Some("Created"), &owner)
    );
    assert!(j.why.as_deref().is_some_and(|w| w.contains("5m")), "{j:?}");
    let doc = serde_json::to_value(j).expect("json");
    assert_eq!(doc["verdict"], "stuck");
    // The word the messages use is JSON's (`Verdict::word` is made from it).
    assert_eq!(Verdict::RemoteStale.word(), "remote-stale");
    assert!(doc.get("owner").is_none(), "{doc}");
}

/// A pod past the grace period whose address no endpoint has (a network made again under it)
/// is `no-endpoint`, owned for its eviction; a young one, or one without an address yet, is
/// not judged.
#[test]
fn a_pod_whose_address_has_no_endpoint_is_named() {
    let eps = [ep("w", "web_Calico", "10.244.1.7", Some(3), false)];
    let pods = [
        pod("web", Some("10.244.1.7"), 3600),
        pod("lost", Some("10.244.1.9"), 3600),
        pod("young", Some("10.244.1.10"), 10),
        pod("pending", None, 3600),
    ];
    let j = judge(&eps, "Calico", &evidence(&pods));
    let lost: Vec<&Judged> = j
        .iter()
        .filter(|j| j.verdict == Verdict::NoEndpoint)
        .collect();
    assert_eq!(lost.len(), 1, "{j:?}");
    assert_eq!(lost[0].pod.as_deref(), Some("default/lost"));
    assert_eq!(lost[0].id, "pod:uid-lost");
    assert!(!lost[0].is_endpoint() && lost[0].verdict.is_fault());
    assert_eq!(lost[0].owner, Some((pods[1].pod.clone(), true)));
}

/// projectcalico/calico v3.31.0 `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`
/// stamps a pod's Overlay endpoint with the network's management IP as its provider address:
/// after the node's address changed, the endpoints made before carry the old one (judged, its
/// pod named and evicted, the others left: tests/lifecycle
/// `after_the_nodes_address_changes_status_names_the_pods_left_behind_and_repair_makes_them_again`).
/// No management IP known, or no provider address on the endpoint: no evidence, no fault.
#[test]
fn a_pods_endpoint_is_judged_old_only_on_evidence() {
    let pods = [pod("web", Some("10.244.1.7"), 3600)];
    let with = |pa: Option<&str>| HnsEndpoint {
        provider_address: pa.map(str::to_owned),
        ..ep("a", "a_Calico", "10.244.1.7", Some(3), false)
    };
    let known = Evidence {
        provider: Some("10.0.0.7"),
        ..evidence(&pods)
    };
    let verdict = |e: HnsEndpoint, ev: &Evidence| judge(&[e], "Calico", ev)[0].verdict;
    assert_eq!(verdict(with(Some("10.0.0.5")), &known), Verdict::OldAddress);
    assert_eq!(
        verdict(with(Some("10.0.0.5")), &evidence(&pods)),
        Verdict::Ok
    );
    assert_eq!(verdict(with(None), &known), Verdict::Ok);
}

/// What is told to be neither a pod's endpoint Calico's CNI plugin made nor kube-proxy's for a
/// Service backend is `unknown` and kept (tests/lifecycle
/// `what_cannot_be_told_is_listed_unknown_and_kept_while_a_dead_pods_endpoint_goes`), also
/// without the cluster: whose it is needs no pod. Another host's that kube-proxy may have made
/// (a ClusterIP's) is left to kube-proxy while it runs.
#[test]
fn what_cannot_be_told_is_unknown_without_the_cluster_and_left_to_kube_proxy() {
    let stranger_remote = HnsEndpoint {
        mac: Some("00-15-5d-01-02-03".into()),
        ..ep("r", "", "10.244.2.5", None, true)
    };
    let eps = [
        ep("a", "admins-test", "10.244.1.40", Some(3), false),
        stranger_remote,
    ];
    assert_eq!(verdicts(&eps, None, &[]), [Verdict::Unknown; 2]);
    let runs = Evidence {
        kube_proxy_runs: true,
        ..evidence(&[])
    };
    let judged = judge(&eps, "Calico", &runs);
    let v: Vec<Verdict> = judged.iter().map(|j| j.verdict).collect();
    assert_eq!(v, [Verdict::Unknown, Verdict::Ok]);
}

/// An APIPA or unspecified management IP (the vNIC waiting for DHCP, an HNS restart) is no
/// node address: no pod endpoint is judged old by it, and repair evicts nothing for it.
#[test]
fn a_management_ip_that_is_no_node_address_judges_nothing_old() {
    for no in ["169.254.10.3", "0.0.0.0", "not an address"] {
        assert_eq!(super::node_provider(Some(no)), None, "{no}");
    }
    assert_eq!(super::node_provider(Some("10.0.0.5")), Some("10.0.0.5"));
}
