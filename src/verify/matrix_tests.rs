use super::*;

fn win(name: &str, build: &str) -> NodeFacts {
    NodeFacts {
        os: Os::Windows,
        windows_build: Some(build.into()),
        ..linux(name, false)
    }
}

fn linux(name: &str, control_plane: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        os: Os::Linux,
        windows_build: None,
        usable: true,
        control_plane,
        taints: Vec::new(),
        calico_unready: None,
    }
}

fn ids(m: &Matrix) -> Vec<CheckId> {
    m.checks.iter().map(|c| c.id).collect()
}

/// A Linux worker is taken before the control plane, which is taken when it is the only one.
#[test]
fn a_full_cluster_gets_every_check_and_a_linux_worker() {
    let nodes = [
        linux("cp", true),
        linux("worker", false),
        win("win-a", "10.0.20348"),
        win("win-b", "10.0.17763"),
    ];
    let m = plan(&"win-a".into(), &nodes, image::AGNHOST, Some("1.1.1.1:80")).unwrap();
    let on = |r: Role| m.pods.iter().find(|p| p.role == r).map(|p| p.node.as_str());
    assert_eq!(on(Role::Server), Some("win-a"));
    assert_eq!(on(Role::Local), Some("win-a"));
    assert_eq!(on(Role::Linux), Some("worker"));
    assert_eq!(on(Role::Remote), Some("win-b"));
    assert_eq!(ids(&m).len(), 15);
    assert!(m.skipped.is_empty());
    let only_cp = [nodes[0].clone(), nodes[2].clone()];
    let m = plan(&"win-a".into(), &only_cp, image::AGNHOST, None).unwrap();
    assert_eq!(m.peers()[0].node.as_str(), "cp");
}

#[test]
fn a_cluster_without_peers_skips_the_cross_node_checks_and_says_why() {
    // 20H2 (19042): a build agnhost is not published for.
    let nodes = [win("win-a", "10.0.20348"), win("win-c", "10.0.19042")];
    let m = plan(&"win-a".into(), &nodes, image::AGNHOST, None).unwrap();
    let skipped: Vec<CheckId> = m.skipped.iter().map(|s| s.id).collect();
    assert_eq!(
        skipped,
        [
            CheckId::WindowsToLinux,
            CheckId::LinuxToWindows,
            CheckId::WindowsToWindows,
            CheckId::Egress
        ]
    );
    assert!(!ids(&m).contains(&CheckId::WindowsToLinux));
    assert!(ids(&m).contains(&CheckId::PolicyRemoved));
    assert_eq!(m.pods.len(), 2);
}

#[test]
fn a_node_the_image_lacks_or_not_windows_is_refused_before_anything() {
    let nodes = [linux("cp", true), win("win-old", "10.0.19042")];
    let err = plan(&"win-old".into(), &nodes, image::AGNHOST, None).unwrap_err();
    assert!(matches!(err, PlanError::BuildNotCarried { .. }), "{err}");
    assert!(plan(&"win-old".into(), &nodes, "mirror/agnhost:2.52", None).is_ok());
    // Windows Server 2025 is carried (agnhost 2.62's ltsc2025): verified, not refused.
    let nodes = [linux("cp", true), win("win-new", "10.0.26100")];
    assert!(plan(&"win-new".into(), &nodes, image::AGNHOST, None).is_ok());
    assert_eq!(
        plan(&"cp".into(), &nodes, image::AGNHOST, None),
        Err(PlanError::NotWindows("cp".into()))
    );
    assert_eq!(
        plan(&"gone".into(), &nodes, image::AGNHOST, None),
        Err(PlanError::NoSuchNode("gone".into()))
    );
    let mut down = win("win-a", "10.0.20348");
    down.usable = false;
    assert_eq!(
        plan(&"win-a".into(), &[down], image::AGNHOST, None),
        Err(PlanError::NotUsable("win-a".into()))
    );
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        ..Default::default()
    }
}

/// A peer is chosen only where the probe pods can run: Ready and not cordoned, no `NoSchedule`
/// or `NoExecute` taint (a node kept for others, such as EKS Fargate's; `PreferNoSchedule` is
/// no bar), and, for another Windows node, calicoctl-win's Calico known good there. The peers
/// passed over are named; the ones chosen are the plan's peers.
#[test]
fn a_peer_is_chosen_only_where_the_probe_pods_can_run() {
    let mut unreachable = linux("a-unreachable", false);
    unreachable.taints = vec![taint("node.kubernetes.io/unreachable", "NoExecute")];
    let mut cordoned = linux("b-cordoned", false);
    cordoned.usable = false;
    let mut fargate = linux("c-fargate", false);
    fargate.taints = vec![taint("eks.amazonaws.com/compute-type", "NoSchedule")];
    let mut spot = linux("d-spot", false);
    spot.taints = vec![taint("spot", "PreferNoSchedule")];
    let mut degraded = win("win-a-degraded", "10.0.20348");
    degraded.calico_unready = Some("CalicoWindowsReady is Unknown: stale".into());
    let mut evicting = win("win-b-evicting", "10.0.20348");
    evicting.taints = vec![taint("maintenance", "NoExecute")];
    let nodes = [
        unreachable,
        cordoned,
        fargate,
        spot,
        win("win-0", "10.0.20348"),
        degraded,
        evicting,
        win("win-c", "10.0.17763"),
    ];
    let m = plan(&"win-0".into(), &nodes, image::AGNHOST, None).unwrap();
    assert_eq!(
        m.peers(),
        [
            Peer {
                role: Role::Linux,
                node: "d-spot".into()
            },
            Peer {
                role: Role::Remote,
                node: "win-c".into()
            }
        ]
    );
    assert!(!m.skipped.iter().any(|s| s.id == CheckId::WindowsToWindows));
}

/// When no peer qualifies, the check is skipped with each node passed over and why: never a
/// failure blamed on the node under test.
#[test]
fn no_peer_that_can_run_the_pods_skips_the_check_naming_each_node_passed_over() {
    let mut unreachable = linux("l1", false);
    unreachable.taints = vec![taint("node.kubernetes.io/unreachable", "NoExecute")];
    let mut degraded = win("win-b", "10.0.20348");
    degraded.calico_unready = Some("CalicoWindowsReady is False: Felix is not ready".into());
    let mut not_ready = win("win-c", "10.0.20348");
    not_ready.usable = false;
    let nodes = [unreachable, win("win-a", "10.0.20348"), degraded, not_ready];
    let m = plan(&"win-a".into(), &nodes, image::AGNHOST, None).unwrap();
    assert!(m.peers().is_empty());
    let why = |id| {
        m.skipped
            .iter()
            .find(|s| s.id == id)
            .map(|s| s.why.clone())
            .unwrap_or_default()
    };
    assert_eq!(
        why(CheckId::WindowsToWindows),
        "no other Windows node can run the probe pods: win-b (CalicoWindowsReady is False: Felix is not ready); win-c (not Ready, or cordoned)"
    );
    assert_eq!(
        why(CheckId::LinuxToWindows),
        "no Linux node can run the probe pods: l1 (taint node.kubernetes.io/unreachable:NoExecute not tolerated)"
    );
    assert!(!ids(&m).contains(&CheckId::WindowsToWindows));
}

/// kube-scheduler's toleration semantics for `Exists`: an empty effect or key matches any;
/// `PreferNoSchedule` never filters.
#[test]
fn taints_are_tolerated_as_kube_scheduler_tolerates_them() {
    let t = |key: &str, effect: &str| Toleration {
        key: Some(key.into()).filter(|k: &String| !k.is_empty()),
        operator: Some("Exists".into()),
        effect: Some(effect.into()).filter(|e: &String| !e.is_empty()),
        ..Default::default()
    };
    let taints = [taint("gpu", "NoExecute")];
    assert!(untolerated(&taints, &[t("gpu", "")]).is_none());
    assert!(untolerated(&taints, &[t("", "")]).is_none());
    assert!(untolerated(&taints, &[t("", "NoSchedule")]).is_some());
    assert!(untolerated(&[taint("x", "PreferNoSchedule")], &[]).is_none());
    assert!(untolerated(&taints, &tolerations()).is_some());
}

/// The node under test is not refused for the cordon's `NoSchedule`, another `NoSchedule` or
/// the node lifecycle controller's `not-ready` `NoExecute` (which admission tolerates for
/// 300 s); its refusal for an untolerated `NoExecute` is tests/cluster/verify_gates.rs's.
#[test]
fn a_node_under_test_with_only_tolerated_taints_is_planned() {
    let taint = |key: &str, value: Option<&str>, effect: &str| Taint {
        key: key.into(),
        value: value.map(Into::into),
        effect: effect.into(),
        ..Default::default()
    };
    let mut a = win("win-a", "10.0.20348");
    a.taints = vec![
        taint("node.kubernetes.io/unschedulable", None, "NoSchedule"),
        taint("os", Some("windows"), "NoSchedule"),
        taint("node.kubernetes.io/not-ready", None, "NoExecute"),
    ];
    assert!(plan(&"win-a".into(), &[a], image::AGNHOST, None).is_ok());
}
