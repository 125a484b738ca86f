//! A stop during each of CalicoNode's and kube-proxy's waits ends it, not its timeout.

use super::*;

/// Runs the role's body until it logs waiting for `what`, then stops it: the body ends with
/// the stop, not the wait's timeout; returns the log.
fn stops_while_waiting(host: &SimHost, s: &Settings, what: &str) -> String {
    let (log, path) = log_for(host, s);
    let stop = Stop::new();
    std::thread::scope(|scope| {
        let body = scope.spawn(|| run(host, s, &stop, &log));
        let waiting = format!("waiting up to 60s for {what}");
        let text = wait_for_log(&path, &waiting, 1);
        says(&text, &waiting);
        stop.request();
        let out = body.join().expect("join");
        assert!(
            out.is_ok(),
            "the stop, not a timeout, ends the wait: {out:?}"
        );
    });
    let text = read(&path);
    says(&text, &format!("stopped waiting for {what} after "));
    text
}

/// Settings whose waits last a minute.
fn patient(role: Role) -> Settings {
    let mut s = settings(role);
    s.network_timeout = Duration::from_secs(60);
    s.adapter_address_timeout = Duration::from_secs(60);
    s
}

/// Each of CalicoNode's start-up waits, and kube-proxy's for Calico's network: after a boot,
/// stale networks HNS refuses to delete among them.
#[test]
fn a_stop_ends_each_wait_of_calico_node_and_kube_proxy() {
    let node = patient(Role::Node);
    let host = installed("ws2022", &["node.startup_valid_ip_timeout=60s"]);
    host.set_ipv4_addresses(vec![InterfaceAddress {
        interface: "Ethernet".into(),
        index: 4,
        ip: Ipv4Addr::new(169, 254, 10, 20),
        prefix_len: 16,
    }])
    .expect("addresses");
    let usable = "a usable IPv4 address (not 127/8 or 169.254/16)";
    stops_while_waiting(&host, &node, usable);
    assert!(!init_done(&host).expect("read"));

    let host = installed("ws2022", &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    stops_while_waiting(
        &host,
        &node,
        "Ethernet to hold a stable IPv4 address (Preferred, not 169.254/16) before making the vSwitch on it",
    );
    assert!(network_ids(&host).is_empty(), "no vSwitch was made");

    let host = installed("ws2022", &[]);
    host.set_management_ip_pending(true).expect("pending");
    stops_while_waiting(&host, &node, "the vSwitch's management IP");
    assert!(!init_done(&host).expect("read"));

    let (host, s, log, _) = node_host("ws2022", &[]);
    node::start_phase(&host, &s, &log).expect("start phase");
    host.reboot().expect("reboot");
    let denied = faulted(host, FaultKind::Deny, "delete HNS network");
    stops_while_waiting(&denied, &node, "the stale HNS networks to be deleted");
    assert!(!network_ids(&denied).is_empty());

    let host = installed("ws2022", &[r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    super::kube_proxy::put_kube_proxy(&host);
    let kube_proxy = patient(Role::KubeProxy);
    stops_while_waiting(&host, &kube_proxy, "the HNS network Calico");
}

/// A stop ends the wait for a child (an hour's limit) at once, said, and the child stopped.
#[test]
fn a_stop_ends_the_wait_for_a_child() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fake = script(dir.path(), "calico-node", &format!("echo up\n{FOREVER}"));
    let (host, s, log, path) = node_host("ws2022", &[]);
    let stop = Stop::new();
    let launch = super::settings::Launch {
        program: fake.clone(),
        args: Vec::new(),
        cwd: None,
    };
    let env = std::collections::BTreeMap::new();
    let hour = Some(Duration::from_secs(3600));
    std::thread::scope(|scope| {
        let child =
            scope.spawn(|| super::child::run_child(&host, &s, &launch, &env, hour, &stop, &log));
        let waiting = format!("waiting up to 3600s for {fake} (pid ");
        let text = wait_for_log(&path, &waiting, 1);
        // Stopped before the assertions: the thread ends whatever they find.
        stop.request();
        let out = child.join().expect("join");
        says(&text, &waiting);
        assert!(matches!(out, Err(SuperviseError::Stopped)), "{out:?}");
    });
    let text = read(&path);
    says(&text, &format!("stopped waiting for {fake} (pid "));
    says(&text, "stopping pid ");
}
