//! The External vSwitch: its stable address, its host adapter and the addressing put back.

use super::*;

#[test]
fn the_vswitch_waits_for_a_stable_address_and_its_absence_is_its_own_error() {
    let (host, mut s, log, path) = node_host("ws2022", &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    s.adapter_address_timeout = Duration::from_millis(100);
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(
        matches!(err, SuperviseError::AdapterAddress { .. }),
        "{err}"
    );
    assert!(
        err.to_string().contains("it holds: 10.0.0.5 (tentative)"),
        "{err}"
    );
    let d = crate::error::Diagnose::diagnose(&err).expect("diagnosis");
    assert_eq!(
        (d.exit, d.kind),
        (
            crate::error::Exit::Timeout,
            crate::error::Kind::AdapterAddress
        )
    );
    assert!(
        network_ids(&host).is_empty(),
        "no vSwitch on a tentative address"
    );
    says(
        &read(&path),
        "waiting up to 100ms for Ethernet to hold a stable IPv4 address",
    );

    // Only an APIPA address (the other NIC passes the usable-address wait): the same.
    let host = installed("ws2022-two-nics", &["vxlan.adapter=Ethernet 2"]);
    let mut adapters = host.adapters().expect("adapters");
    for a in adapters.iter_mut().filter(|a| a.name == "Ethernet 2") {
        a.addresses[0].ip = Ipv4Addr::new(169, 254, 3, 4);
    }
    host.set_adapters(adapters).expect("set");
    let err = node::start_phase(&host, &s, &log).unwrap_err();
    assert!(err.to_string().contains("it holds: 169.254.3.4)"), "{err}");
    assert!(network_ids(&host).is_empty());
}

#[test]
fn an_address_that_turns_preferred_while_waited_for_gets_the_vswitch() {
    let (host, mut s, log, path) = node_host("ws2022", &["vxlan.adapter=Ethernet"]);
    mark_preferred(&host, "Ethernet", false);
    s.adapter_address_timeout = Duration::from_secs(10);
    let phase = std::thread::scope(|scope| {
        scope.spawn(|| {
            // Duplicate address detection finishes while CalicoNode waits.
            let waiting = "waiting up to 10s for Ethernet to hold a stable IPv4 address";
            wait_for_log(&path, waiting, 1);
            mark_preferred(&host, "Ethernet", true);
        });
        node::start_phase(&host, &s, &log).expect("start phase")
    });
    assert!(phase.created_external);
    let text = read(&path);
    says(
        &text,
        "Ethernet holds 10.0.0.5 (Preferred): making the vSwitch on it",
    );
    says(
        &text,
        "the vSwitch's host adapter is vEthernet (Ethernet) (index 5, MAC 00-15-5D-00-00-05, 10.0.0.5)",
    );
}

#[test]
fn the_vswitch_adapter_is_known_by_address_mac_and_name_together() {
    let uplink = node::Uplink {
        name: "Ethernet".into(),
        mac: "00-15-5D-00-00-05".into(),
        ip: Ipv4Addr::new(10, 0, 0, 5),
        dhcp: true,
    };
    let vnic = crate::host::Adapter {
        description: crate::host::VSWITCH_ADAPTER_DESCRIPTION.into(),
        ..crate::host::Adapter::for_test(
            "vEthernet (Ethernet)",
            9,
            "00-15-5d-00-00-05",
            &["10.0.0.5"],
        )
    };
    assert!(uplink.is_its_vswitch_adapter(&vnic, false));
    // Another MAC or another name: a vEthernet adapter left behind (a NIC replaced) is not
    // this uplink's (the only proof of the MAC half: host::uplink's tests drop such adapters
    // before asking).
    let other_mac = crate::host::Adapter {
        mac: "00-15-5D-00-00-99".into(),
        ..vnic.clone()
    };
    let other_name = crate::host::Adapter {
        name: "Ethernet 3".into(),
        ..vnic.clone()
    };
    let not_a_port = crate::host::Adapter {
        description: "Microsoft Hyper-V Network Adapter".into(),
        ..vnic.clone()
    };
    let no_address = crate::host::Adapter {
        addresses: Vec::new(),
        ..vnic.clone()
    };
    for wrong in [other_mac, other_name, not_a_port, no_address] {
        assert!(!uplink.is_its_vswitch_adapter(&wrong, false), "{wrong:?}");
    }
}

/// A static adapter's DNS servers lost to the vSwitch (microsoft/SDN#498) are put back, and
/// `Calico_ep` kept above the LAN's metric (projectcalico/calico#4664); an administrator's
/// later DNS servers are not.
#[test]
fn what_the_vswitch_loses_of_a_static_adapter_is_put_back() {
    let host = installed("ws2022-two-nics", &["vxlan.adapter=Ethernet 2"]);
    // calico-node's host endpoint adapter, made with the LAN's metric.
    let mut adapters = host.adapters().expect("adapters");
    let mut ep = crate::host::Adapter::for_test(
        "vEthernet (Calico_ep)",
        20,
        "00-15-5D-AA-00-02",
        &["10.244.1.2"],
    );
    ep.description = crate::host::VSWITCH_ADAPTER_DESCRIPTION.into();
    (ep.dhcp, ep.addresses[0].prefix_len) = (false, 26);
    adapters.push(ep);
    host.set_adapters(adapters).expect("set");
    let text = while_running(&host, &settings(Role::Node), |path| {
        wait_for_log(path, "calico-node startup finished", 1);
        wait_for_log(path, "Calico_ep) had the interface metric 15", 1);
    });
    says(
        &text,
        "vEthernet (Ethernet 2): put back: Ethernet 2 had the DNS servers 10.0.0.2; vEthernet (Ethernet 2) has none",
    );
    let vnic = "vEthernet (Ethernet 2)";
    let dns = adapter_named(&host, vnic).dns_servers;
    assert_eq!(dns, [Ipv4Addr::new(10, 0, 0, 2)], "{text}");
    let ep = adapter_named(&host, "vEthernet (Calico_ep)");
    assert_eq!(ep.metric, 115, "{text}");
    // Keyed to the External network it was made with.
    let kept = crate::installed::addressing::recorded(&host).expect("kept");
    assert_eq!(kept.network.as_deref(), Some(external(&host).id.as_str()));

    // DNS servers an administrator set later (Set-DnsClientServerAddress) are not put back.
    let admins = vec![Ipv4Addr::new(10, 0, 0, 3)];
    let index = adapter_named(&host, vnic).index;
    let setting = crate::host::ip_config::AdapterSetting::DnsServers(admins.clone());
    host.configure_adapter(index, &setting).expect("set");
    let s = settings(Role::Node);
    let (log, path) = log_for(&host, &s);
    node::start_phase(&host, &s, &log).expect("start phase again");
    let dns = adapter_named(&host, vnic).dns_servers;
    assert_eq!(dns, admins, "{}", read(&path));
}

/// projectcalico/calico#4631: the host adapter left on DHCP with APIPA is found by MAC and name
/// and its static address put back before the routes and before the management IP wait; once
/// renumbered, not again.
#[test]
fn a_static_address_that_did_not_come_over_is_put_back() {
    let (host, s, log, path) = node_host("ws2022-two-nics", &["vxlan.adapter=Ethernet 2"]);
    host.set_vswitch_takes_dhcp(true).expect("set");
    host.set_management_ip_needs_stable_address(true)
        .expect("set");
    let phase = node::start_phase(&host, &s, &log);
    assert!(phase.is_ok(), "{phase:?} {}", read(&path));
    let external = external(&host);
    assert_eq!(external.management_ip.as_deref(), Some("10.0.0.6"));
    let text = read(&path);
    says(&text, "management IP on the vSwitch: 10.0.0.6");
    let held = "vEthernet (Ethernet 2) (index 7, MAC 00-15-5D-00-00-06) does not hold 10.0.0.6";
    says(&text, held);
    let now = host.adapters().expect("adapters");
    let vnic = now
        .iter()
        .find(|a| a.name == "vEthernet (Ethernet 2)")
        .expect("vnic");
    assert!(
        vnic.holds(Ipv4Addr::new(10, 0, 0, 6)) && !vnic.dhcp,
        "{vnic:?}"
    );
    let before = crate::installed::addressing::recorded(&host).expect("kept");
    assert_eq!(crate::installed::addressing::drift(&before, vnic), []);

    // Renumbered since, the node does not get its old address back beside the new one.
    host.readdress(Ipv4Addr::new(10, 0, 0, 6), Ipv4Addr::new(10, 0, 0, 7))
        .expect("renumber");
    node::start_phase(&host, &s, &log).expect("start phase again");
    let now = adapter_named(&host, "vEthernet (Ethernet 2)");
    assert!(
        now.holds(Ipv4Addr::new(10, 0, 0, 7)) && !now.holds(Ipv4Addr::new(10, 0, 0, 6)),
        "{now:?} {}",
        read(&path)
    );
}

/// A record of a gone External network is dropped, not put back on the next vSwitch.
#[test]
fn addressing_kept_for_a_network_that_is_gone_is_dropped() {
    let (host, s, log, path) = node_host("ws2022-two-nics", &[]);
    let nic = adapter_named(&host, "Ethernet");
    let mut stale = crate::installed::addressing::Addressing::of(&nic);
    stale.network = Some("{00000000-0000-0000-0000-00000000dead}".into());
    stale.dns_servers = vec![Ipv4Addr::new(10, 9, 9, 9)];
    crate::installed::addressing::record(&host, &stale).expect("record");
    node::start_phase(&host, &s, &log).expect("start phase");
    assert_eq!(
        crate::installed::addressing::recorded(&host),
        None,
        "{}",
        read(&path)
    );
    assert!(
        !adapter_named(&host, "vEthernet (Ethernet)")
            .dns_servers
            .contains(&Ipv4Addr::new(10, 9, 9, 9))
    );
}
