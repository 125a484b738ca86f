//! Each host check passes on a healthy simulated host and fails on a broken one.

use super::*;
use crate::checks::Verdict;
use crate::config;
use crate::host::sim::SimHost;

fn config(sets: &[&str]) -> Config {
    config::tests::from_sets(&[&["node.name=win-1"], sets].concat())
}

fn snap(profile: &str) -> HostSnapshot {
    let h = SimHost::in_memory(profile).expect("sim host");
    snapshot(&h)
}

fn sys(s: &mut HostSnapshot) -> &mut crate::host::SystemFacts {
    s.system.as_mut().expect("system facts")
}

/// Asserts check `id`'s verdict; its message and remedy, as one text.
fn assert_verdict(id: &str, s: &HostSnapshot, c: &Config, want: Verdict) -> String {
    let check = evaluate(s, c)
        .into_iter()
        .find(|k| k.id == id)
        .expect("check exists");
    let remedy = check.said.remedy.clone().unwrap_or_default();
    let text = format!("{} | {remedy}", check.message);
    assert_eq!(check.verdict, want, "{id}: {text}");
    text
}

/// ws2019-unpatched alone failing of the profiles is asserted by tests/cluster/preflight.rs
/// `every_profile_gets_the_right_verdicts`, ws2025's pass by tests/lifecycle/ws2025.rs.
#[test]
fn os_build_needs_the_dsr_update_on_2019_and_warns_when_ubr_is_unknown() {
    let c = config(&[]);
    let t = assert_verdict("os-build", &snap("ws2019-unpatched"), &c, Verdict::Fail);
    assert!(t.contains("17763.1000") && t.contains("17763.1432"), "{t}");
    let mut s = snap("ws2022");
    sys(&mut s).ubr = None;
    assert_verdict("os-build", &s, &c, Verdict::Warn);
    sys(&mut s).build = 14393;
    assert_verdict("os-build", &s, &c, Verdict::Fail);
    sys(&mut s).build = 26100;
    sys(&mut s).installation_type = Some("Client".into());
    assert_verdict("os-build", &s, &c, Verdict::Fail);
}

#[test]
fn arch_and_elevation_fail_when_the_facts_say_so() {
    let c = config(&[]);
    let mut s = snap("ws2022");
    assert_verdict("arch", &s, &c, Verdict::Pass);
    assert_verdict("elevation", &s, &c, Verdict::Pass);
    sys(&mut s).is_64bit = false;
    sys(&mut s).elevated = false;
    assert_verdict("arch", &s, &c, Verdict::Fail);
    let t = assert_verdict("elevation", &s, &c, Verdict::Fail);
    assert!(t.contains("Run as administrator"), "{t}");
}

/// Schannel's TLS 1.2 switch binds Schannel's users only: calicoctl-win speaks TLS through
/// rustls and Calico through Go's crypto/tls, so it is a warning for Windows tools, never a
/// reason to stop an install.
#[test]
fn tls12_disabled_in_schannel_warns_for_windows_tools_only() {
    let c = config(&[]);
    let mut s = snap("ws2022");
    let t = assert_verdict("tls12", &s, &c, Verdict::Pass);
    assert!(t.contains("OS default") && t.contains("advisory"), "{t}");
    s.tls12_client_enabled = Some(0);
    let t = assert_verdict("tls12", &s, &c, Verdict::Warn);
    assert!(t.contains("reg add") && t.contains("rustls"), "{t}");
    s.tls12_client_enabled = Some(1);
    s.tls12_client_disabled_by_default = Some(1);
    assert_verdict("tls12", &s, &c, Verdict::Warn);
}

#[test]
fn hns_fails_without_the_containers_feature() {
    let c = config(&[]);
    let t = assert_verdict("hns", &snap("ws2022-no-hns"), &c, Verdict::Fail);
    assert!(t.contains("Install-WindowsFeature -Name Containers"), "{t}");
}

/// A docker host with container_runtime docker passes (and cni-dirs is skipped):
/// tests/cluster/preflight.rs `docker_hosts_pass_when_the_config_says_docker`.
#[test]
fn container_runtime_must_match_the_config_and_run() {
    let c = config(&[]);
    assert_verdict("container-runtime", &snap("ws2022"), &c, Verdict::Pass);
    let t = assert_verdict(
        "container-runtime",
        &snap("ws2022-docker"),
        &c,
        Verdict::Fail,
    );
    assert!(t.contains("container_runtime=docker"), "{t}");
    let mut s = snap("ws2022");
    if let Ok(Some(f)) = &mut s.runtime {
        f.running = false;
    }
    let t = assert_verdict("container-runtime", &s, &c, Verdict::Fail);
    assert!(t.contains("Start-Service containerd"), "{t}");
    s.runtime = Ok(None);
    assert_verdict("container-runtime", &s, &c, Verdict::Fail);
}

#[test]
fn cni_dirs_must_be_containerds() {
    let c = config(&[]);
    assert_verdict("cni-dirs", &snap("ws2022"), &c, Verdict::Pass);
    let other = config(&[r"cni.bin_dir=C:\opt\cni\bin"]);
    let t = assert_verdict("cni-dirs", &snap("ws2022"), &other, Verdict::Fail);
    assert!(
        t.contains(r#"--set cni.bin_dir="C:\Program Files\containerd\cni\bin""#),
        "{t}"
    );
}

#[test]
fn remote_access_is_needed_and_running_only_for_windows_bgp() {
    let vxlan = config(&[]);
    let bgp = config(&["backend=windows-bgp"]);
    let mut s = snap("ws2022");
    assert_verdict("remote-access", &s, &vxlan, Verdict::Skip);
    assert_verdict("remote-access", &s, &bgp, Verdict::Fail);
    let mut svc = s.kubelet_service.clone().expect("a service to copy");
    svc.name = "RemoteAccess".into();
    svc.state = ServiceState::Stopped;
    s.remote_access = Some(svc.clone());
    assert_verdict("remote-access", &s, &bgp, Verdict::Fail);
    svc.state = ServiceState::Running;
    s.remote_access = Some(svc.clone());
    assert_verdict("remote-access", &s, &bgp, Verdict::Pass);
    svc.start = StartType::Disabled;
    s.remote_access = Some(svc);
    assert_verdict("remote-access", &s, &bgp, Verdict::Fail);
}

#[test]
fn firewall_vxlan_passes_when_open_or_to_be_opened_and_fails_on_a_blocking_rule() {
    let c = config(&[]);
    let t = assert_verdict("firewall-vxlan", &snap("ws2022"), &c, Verdict::Pass);
    assert!(t.contains("install opens it"), "{t}");
    let mut s = snap("ws2022-legacy-calico");
    let t = assert_verdict("firewall-vxlan", &s, &c, Verdict::Pass);
    assert!(t.contains("Overlay Traffic 4789 UDP"), "{t}");
    // Narrowed to some remote ports: VXLAN's source port is a hash (RFC 7348 section 5).
    s.vxlan_rules.as_mut().expect("rules")[0].unset.remote_ports = "50000-50100".into();
    let t = assert_verdict("firewall-vxlan", &s, &c, Verdict::Fail);
    assert!(t.contains("remote ports 50000-50100"), "{t}");
    assert!(
        t.contains("-RemotePort Any") && !t.contains("interfaces ["),
        "{t}"
    );
    // Narrowed to one interface: no Set-NetFirewallRule form is offered, the rule made again is.
    s.vxlan_rules.as_mut().expect("rules")[0].unset = Default::default();
    s.vxlan_rules.as_mut().expect("rules")[0].unset.interfaces = vec!["Ethernet 2".into()];
    let t = assert_verdict("firewall-vxlan", &s, &c, Verdict::Fail);
    assert!(t.contains("interfaces [Ethernet 2]"), "{t}");
    assert!(
        t.contains("Remove-NetFirewallRule") && !t.contains("Set-NetFirewallRule"),
        "{t}"
    );
    s.vxlan_rules.as_mut().expect("rules")[0].unset = Default::default();
    s.vxlan_rules.as_mut().expect("rules")[0].enabled = false;
    assert_verdict("firewall-vxlan", &s, &c, Verdict::Fail);
    // Unreadable is not "not open yet": tests/lifecycle/host_defaults.rs
    // `an_unreadable_firewall_fails_its_check_with_the_error_instead_of_passing`.
    assert_verdict(
        "firewall-vxlan",
        &s,
        &config(&["backend=none"]),
        Verdict::Skip,
    );
}

/// Windows Firewall's own policy: a rule of one profile does nothing in another
/// (`INetFwRule::Profiles`); under a Group Policy override a local rule does not take effect,
/// and with inbound blocked no rule does (`INetFwPolicy2::LocalPolicyModifyState`).
#[test]
fn firewall_vxlan_reads_the_profiles_and_a_group_policy_override() {
    use crate::host::FirewallModifyState as State;
    let c = config(&[]);
    let mut s = snap("ws2022-legacy-calico");
    s.vxlan_rules.as_mut().expect("rules")[0].profiles = 1;
    let t = assert_verdict("firewall-vxlan", &s, &c, Verdict::Fail);
    assert!(
        t.contains("only in the Domain profile") && t.contains("-Profile Any"),
        "{t}"
    );
    s.vxlan_rules.as_mut().expect("rules")[0].profiles = crate::host::ALL_PROFILES;
    s.firewall_modify_state = Ok(State::GroupPolicyOverride);
    let t = assert_verdict("firewall-vxlan", &s, &c, Verdict::Warn);
    assert!(
        t.contains("only if the rule found comes from that policy"),
        "{t}"
    );
    // Nothing open yet: what install would add does not take effect.
    let mut fresh = snap("ws2022");
    fresh.firewall_modify_state = Ok(State::GroupPolicyOverride);
    let t = assert_verdict("firewall-vxlan", &fresh, &c, Verdict::Fail);
    assert!(
        t.contains("would not take effect") && t.contains("Group Policy"),
        "{t}"
    );
    fresh.firewall_modify_state = Ok(State::InboundBlocked);
    let t = assert_verdict("firewall-vxlan", &fresh, &c, Verdict::Fail);
    assert!(t.contains("blocks all inbound"), "{t}");
    fresh.firewall_modify_state = Err("E_NOTIMPL".into());
    assert_verdict("firewall-vxlan", &fresh, &c, Verdict::Warn);
}

#[test]
fn foreign_cni_finds_flannel_and_a_legacy_calico_install() {
    let c = config(&[]);
    let t = assert_verdict("foreign-cni", &snap("ws2022-flannel"), &c, Verdict::Fail);
    assert!(
        t.contains("flannel.4096") && t.contains("sc.exe delete flanneld"),
        "{t}"
    );
    let t = assert_verdict(
        "foreign-cni",
        &snap("ws2022-legacy-calico"),
        &c,
        Verdict::Fail,
    );
    assert!(t.contains(r"C:\CalicoWindows\uninstall-calico.ps1"), "{t}");
}

#[test]
fn node_name_must_match_kubelets() {
    let s = snap("ws2022");
    assert_verdict("node-name", &s, &config(&[]), Verdict::Pass);
    let t = assert_verdict(
        "node-name",
        &s,
        &config(&["node.name=win-2"]),
        Verdict::Fail,
    );
    assert!(t.contains("--set node.name=win-1"), "{t}");
    let mut s = s;
    s.kubelet_service = None;
    assert_verdict("node-name", &s, &config(&[]), Verdict::Skip);
}

/// containerd's support, from the version the Node reports, on the day the check runs: a line
/// is warned once its end of life (containerd's RELEASES.md) has passed, 2.2 from November 7,
/// 2026; 2.0 and 2.3 are not; without a version nothing is said.
#[test]
fn containerd_out_of_support_is_warned() {
    let c = config(&[]);
    let mut s = snap("ws2022");
    let day = |d: &str| {
        format!("{d}T12:00:00Z")
            .parse::<jiff::Timestamp>()
            .expect("date")
            .as_second()
    };
    for (on, version, verdict) in [
        ("2026-11-28", "containerd://1.6.39", Verdict::Warn),
        ("2026-11-28", "containerd://1.7.20", Verdict::Warn),
        ("2026-09-30", "containerd://1.7.20", Verdict::Pass),
        ("2026-11-28", "containerd://2.0.6", Verdict::Pass),
        ("2026-11-28", "containerd://2.1.4", Verdict::Warn),
        ("2026-11-06", "containerd://2.2.1", Verdict::Pass),
        ("2026-11-07", "containerd://2.2.1", Verdict::Warn),
        ("2026-11-28", "containerd://2.3.4", Verdict::Pass),
    ] {
        s.runtime_version = Some(version.into());
        s.now = day(on);
        let t = assert_verdict("container-runtime", &s, &c, verdict);
        assert_eq!(
            t.contains("out of support"),
            verdict == Verdict::Warn,
            "{on} {version}: {t}"
        );
        if verdict == Verdict::Warn {
            assert!(t.contains("move to containerd 2.3"), "{t}");
        }
    }
}
