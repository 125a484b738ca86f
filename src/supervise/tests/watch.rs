//! CalicoNode's watch: startup on kubelet or address changes, the CNI config withheld till then.

use super::*;

/// calico-node startup runs when kubelet starts, again when the node's address changes without
/// kubelet restarting (projectcalico/calico#8700, said in the event log), and when it restarts.
#[test]
fn kubelet_starting_an_address_change_and_a_kubelet_restart_each_run_startup() {
    let host = installed("ws2022", &[]);
    host.set_process("kubelet.exe", None).expect("no kubelet");
    let finished = "calico-node startup finished";
    let text = while_running(&host, &settings(Role::Node), |path| {
        let text = wait_for_log(path, "kubelet is not running; waiting for it", 1);
        assert!(!text.contains(finished), "{text}");
        host.set_process("kubelet.exe", Some(7001))
            .expect("kubelet");
        let text = wait_for_log(path, finished, 1);
        says(&text, "kubelet is running (pid 7001)");
        host.readdress(Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(10, 0, 0, 7))
            .expect("readdress");
        let text = wait_for_log(path, finished, 2);
        says(
            &text,
            "the node's addresses changed from 10.0.0.5 to 10.0.0.7: running calico-node startup again",
        );
        let kubelet = text.matches("kubelet is running").count();
        assert_eq!(kubelet, 1, "kubelet did not restart: {text}");
        host.set_process("kubelet.exe", Some(7002))
            .expect("kubelet restarted");
        wait_for_log(path, finished, 3);
    });
    says(&text, "kubelet is running again (pid 7002)");
    says(&text, "[calicoctl-win] info: stopped");
    assert!(
        host.events()
            .iter()
            .any(|e| e.id == crate::layout::EVENT_ADDRESS_CHANGED && e.message.contains("10.0.0.7")),
        "{:?}",
        host.events()
    );
}

#[test]
fn a_failing_startup_is_retried_with_backoff_until_it_succeeds() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Fails twice, then succeeds.
    let fake = counting(dir.path(), "calico-node", "[ $n -ge 3 ]");
    let (host, mut s, log, path) = node_host("ws2022", &[]);
    s.program = Some(fake);
    node::start_phase(&host, &s, &log).expect("third attempt succeeds");
    let text = read(&path);
    for d in ["10ms", "20ms"] {
        says(
            &text,
            &format!("calico-node startup failed (exit code 1); retrying in {d}"),
        );
    }
    says(&text, "calico-node run 3");
}

/// projectcalico/calico#5828: the CNI config is withheld from shutdown until calico-node
/// startup has finished in the new boot; after a power loss, from the first start.
#[test]
fn the_cni_config_is_withheld_from_shutdown_until_startup_has_finished_after_the_boot() {
    let (host, s, log, path) = node_host("ws2022", &[]);
    let conf = r"C:\Program Files\containerd\cni\conf\10-calico.conf";
    let withheld = format!("{conf}{}", crate::layout::WITHHELD_SUFFIX);
    let cni = br#"{"cniVersion": "0.3.1", "name": "Calico", "type": "calico"}"#;
    host.write_file(conf, cni, crate::host::Access::Normal)
        .expect("cni config");
    let there = |path: &str| host.read_file(path).expect("read").is_some();
    let finished = "calico-node startup finished";

    // Running, then the machine shuts down.
    let stop = Stop::new();
    std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        wait_for_log(&path, finished, 1);
        stop.request_shutdown();
        body.join().expect("join").expect("stops cleanly");
    });
    assert!(!there(conf) && there(&withheld), "withheld at shutdown");

    // The next boot: no CNI config until startup has finished on the new network.
    host.reboot().expect("reboot");
    let stop = Stop::new();
    let samples = std::thread::scope(|scope| {
        let body = scope.spawn(|| run(&host, &s, &stop, &log));
        let mut samples = 0;
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let conf_there = there(conf);
            let text = read(&path);
            let done = text.matches(finished).count() >= 2;
            assert!(
                !conf_there || done,
                "the CNI config was back before calico-node startup finished:\n{text}"
            );
            samples += 1;
            if conf_there || Instant::now() > deadline {
                break;
            }
        }
        stop.request();
        body.join().expect("join").expect("stops cleanly");
        samples
    });
    assert!(samples > 1, "sampled while CalicoNode started");
    assert!(there(conf) && !there(&withheld), "put back after startup");
    let text = read(&path);
    says(&text, "calico-node startup has finished: the CNI config");
    assert!(network_ids(&host).iter().any(|(n, _)| n == "Calico"));
    // A plain stop (a restart, an upgrade) leaves it in place.
    assert!(there(conf));

    // A power loss: nothing withheld it, so CalicoNode's first start in the boot does.
    host.reboot().expect("reboot");
    node::start_phase(&host, &s, &log).expect("start after a power loss");
    let text = read(&path);
    let withheld_at = text.rfind("first start in this boot: withheld the CNI config");
    let finished_at = text.rfind(finished);
    assert!(withheld_at.is_some() && withheld_at < finished_at, "{text}");
    assert!(there(conf) && !there(&withheld));
}

#[test]
fn only_a_real_change_of_the_external_adapters_address_is_followed() {
    let (host, s, log, _) = node_host("ws2022-two-nics", &[]);
    node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(crate::installed::addressing::recorded(&host), None);
    let ip = |d| Some(Ipv4Addr::new(10, 0, 0, d));
    let mut w = node::AddressWatch::default();
    w.ran(&host, None);
    assert_eq!(w.changed(&host, None), None, "nothing changed");
    // Ethernet 2, the second NIC, renewing its DHCP lease is not the node's address changing.
    host.readdress(Ipv4Addr::new(10, 0, 0, 6), Ipv4Addr::new(10, 0, 0, 8))
        .expect("readdress");
    assert_eq!(w.changed(&host, None), None);
    assert_eq!(
        w.changed(&host, ip(5)),
        None,
        "an InternalIP first read is taken"
    );
    assert_eq!(w.changed(&host, ip(5)), None);
    assert_eq!(
        w.changed(&host, ip(9)).as_deref(),
        Some("the Node's InternalIP changed from 10.0.0.5 to 10.0.0.9")
    );
    w.ran(&host, ip(9));
    // An address being renewed (only a tentative one for a moment) is not a change.
    mark_preferred(&host, "vEthernet (Ethernet)", false);
    assert_eq!(w.changed(&host, ip(9)), None);
    mark_preferred(&host, "vEthernet (Ethernet)", true);
    host.readdress(Ipv4Addr::new(10, 0, 0, 5), Ipv4Addr::new(10, 0, 0, 9))
        .expect("readdress");
    assert!(
        w.changed(&host, ip(9))
            .is_some_and(|w| w.contains("from 10.0.0.5 to 10.0.0.9"))
    );
    w.ran(&host, ip(9));
    // Calico_ep's adapter appearing (calico-node made the pod network) is no node address.
    let mut adapters = host.adapters().expect("adapters");
    adapters.push(crate::host::Adapter {
        description: crate::host::VSWITCH_ADAPTER_DESCRIPTION.into(),
        ..crate::host::Adapter::for_test(
            "vEthernet (Calico_ep)",
            20,
            "00-15-5D-AA-00-02",
            &["10.244.1.2"],
        )
    });
    host.set_adapters(adapters).expect("set");
    assert_eq!(w.changed(&host, ip(9)), None);
}
