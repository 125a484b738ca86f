use super::*;

fn win(name: &str, build: &str) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        os: Os::Windows,
        windows_build: Some(build.into()),
        usable: true,
        control_plane: false,
    }
}

fn linux(name: &str, control_plane: bool) -> NodeFacts {
    NodeFacts {
        name: name.into(),
        os: Os::Linux,
        windows_build: None,
        usable: true,
        control_plane,
    }
}

fn ids(m: &Matrix) -> Vec<CheckId> {
    m.checks.iter().map(|c| c.id).collect()
}

#[test]
fn a_full_cluster_gets_every_check_and_a_linux_worker() {
    let nodes = [
        linux("cp", true),
        linux("worker", false),
        win("win-a", "10.0.20348"),
        win("win-b", "10.0.17763"),
    ];
    let m = plan("win-a", &nodes, image::AGNHOST, Some("1.1.1.1:80")).unwrap();
    let on = |r: Role| m.pods.iter().find(|p| p.role == r).map(|p| p.node.as_str());
    assert_eq!(on(Role::Server), Some("win-a"));
    assert_eq!(on(Role::Local), Some("win-a"));
    assert_eq!(on(Role::Linux), Some("worker"));
    assert_eq!(on(Role::Remote), Some("win-b"));
    assert_eq!(ids(&m).len(), 15);
    assert!(m.skipped.is_empty());
}

#[test]
fn a_cluster_without_peers_skips_the_cross_node_checks_and_says_why() {
    let nodes = [win("win-a", "10.0.20348"), win("win-c", "10.0.26100")];
    let m = plan("win-a", &nodes, image::AGNHOST, None).unwrap();
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
fn a_control_plane_is_taken_when_it_is_the_only_linux_node() {
    let nodes = [linux("cp", true), win("win-a", "10.0.20348")];
    let m = plan("win-a", &nodes, image::AGNHOST, None).unwrap();
    assert!(
        m.pods
            .iter()
            .any(|p| p.role == Role::Linux && p.node == "cp")
    );
}

#[test]
fn a_node_the_image_lacks_or_not_windows_is_refused_before_anything() {
    let nodes = [linux("cp", true), win("win-new", "10.0.26100")];
    let err = plan("win-new", &nodes, image::AGNHOST, None).unwrap_err();
    assert!(matches!(err, PlanError::BuildNotCarried { .. }), "{err}");
    assert!(plan("win-new", &nodes, "mirror/agnhost:2.52", None).is_ok());
    assert_eq!(
        plan("cp", &nodes, image::AGNHOST, None),
        Err(PlanError::NotWindows("cp".into()))
    );
    assert_eq!(
        plan("gone", &nodes, image::AGNHOST, None),
        Err(PlanError::NoSuchNode("gone".into()))
    );
    let mut down = win("win-a", "10.0.20348");
    down.usable = false;
    assert_eq!(
        plan("win-a", &[down], image::AGNHOST, None),
        Err(PlanError::NotUsable("win-a".into()))
    );
}
