use super::*;

fn pod(name: &str, ip: Option<&str>) -> PodState {
    PodState {
        name: name.into(),
        node: "win-a".into(),
        ip: ip.map(str::to_owned),
        phase: "Running".into(),
        ready: true,
        ..Default::default()
    }
}

/// The finding of a failed outcome.
fn finding(o: Outcome) -> Finding {
    match o {
        Outcome::Fail { finding } => finding,
        o => panic!("not a failure: {o:?}"),
    }
}

fn code(o: &Outcome) -> Option<Code> {
    match o {
        Outcome::Fail { finding } => Some(finding.code),
        _ => None,
    }
}

#[test]
fn a_pod_without_an_address_is_the_cnis_with_its_events() {
    let mut stuck = pod("server", None);
    stuck.phase = "Pending".into();
    stuck.waiting = Some("ContainerCreating".into());
    stuck.events =
        vec!["FailedCreatePodSandBox: plugin type=\"calico\" failed: no IPAM block".into()];
    let o = pods(&[pod("client-local", Some("10.0.0.2")), stuck]);
    assert_eq!(code(&o), Some(Code::TrafficCni));
    let f = finding(o);
    for said in ["ContainerCreating", "no IPAM block"] {
        assert!(f.message.contains(said), "{said}: {}", f.message);
    }
    assert!(
        f.remedy
            .clone()
            .unwrap_or_default()
            .contains("calicoctl-win status")
    );
    assert_eq!(pods(&[pod("server", Some("10.0.0.1"))]), Outcome::Pass);
}

/// The common real failure: no image manifest for the node's Windows build (the fake API
/// server's pods only crash-loop, so this is ErrImagePull's one proof).
#[test]
fn a_pull_that_fails_is_the_images_not_the_cnis() {
    let mut p = pod("server", Some("10.0.0.1"));
    p.phase = "Pending".into();
    p.waiting = Some("ErrImagePull: no matching manifest for windows/amd64 10.0.26100".into());
    assert_eq!(code(&pods(&[p])), Some(Code::TrafficImage));
}

#[test]
fn each_dialling_check_names_its_own_layer() {
    let from = pod("client-local", Some("10.0.0.2"));
    let timeout = Answer::Failed(vec!["i/o timeout".into()]);
    let cases = [
        (CheckId::WindowsToLinux, Code::TrafficOverlay),
        (CheckId::LinuxToWindows, Code::TrafficOverlay),
        (CheckId::WindowsToWindows, Code::TrafficOverlay),
        (CheckId::ClusterIp, Code::TrafficKubeProxy),
        (CheckId::ApiServer, Code::TrafficKubeProxy),
        (CheckId::DnsService, Code::TrafficDns),
        (CheckId::Egress, Code::TrafficEgress),
        (CheckId::PodToPod, Code::TrafficPolicy),
    ];
    for (id, want) in cases {
        assert_eq!(
            code(&dial(id, &from, "x", &timeout, None)),
            Some(want),
            "{id:?}"
        );
    }
    // Seen from the Linux peer, where calicoctl-win does not run: its calico-node pod.
    let mut linux = pod("client-linux", Some("10.0.0.3"));
    linux.node = "linux-1".into();
    let next = finding(dial(CheckId::LinuxToWindows, &linux, "x", &timeout, None))
        .remedy
        .clone()
        .unwrap_or_default();
    assert!(
        !next.contains("on linux-1: 'calicoctl-win status'"),
        "{next}"
    );
    assert!(
        next.contains("k8s-app=calico-node --field-selector spec.nodeName=linux-1"),
        "{next}"
    );
    let ok = Answer::Reached(vec!["server".into()]);
    assert_eq!(
        dial(CheckId::ClusterIp, &from, "x", &ok, Some("server")),
        Outcome::Pass
    );
}

#[test]
fn a_name_that_does_not_resolve_is_dns_and_a_lost_client_is_the_control_planes() {
    let from = pod("client-local", Some("10.0.0.2"));
    let nx = Answer::Unresolved("host and/or port param are invalid. no such host".into());
    assert_eq!(
        code(&dial(CheckId::DnsKubernetes, &from, "x", &nx, None)),
        Some(Code::TrafficDns)
    );
    assert_eq!(
        code(&dial(CheckId::Egress, &from, "x", &nx, None)),
        Some(Code::TrafficEgress)
    );
    let lost = Answer::NoProxy("HTTP 503: error trying to reach service".into());
    let o = dial(CheckId::ClusterIp, &from, "x", &lost, None);
    assert_eq!(code(&o), Some(Code::TrafficControlPlane));
}

#[test]
fn a_policy_never_applied_or_never_removed_is_felixs() {
    let from = pod("client-local", Some("10.0.0.2"));
    assert_eq!(
        policy(CheckId::PolicyApplied, &from, &Change::Within { ms: 2400 }),
        Outcome::Pass
    );
    let never = Change::Never {
        waited_ms: 30_000,
        last: Answer::Reached(vec!["server".into()]),
    };
    let o = policy(CheckId::PolicyApplied, &from, &never);
    assert_eq!(code(&o), Some(Code::TrafficPolicy));
    let message = finding(o).message.clone();
    assert!(message.contains("still answered") && message.contains("30 s"));
    let message = finding(policy(CheckId::PolicyRemoved, &from, &never))
        .message
        .clone();
    assert!(message.contains("still refused"), "{message}");
}
