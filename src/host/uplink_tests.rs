use super::*;
use crate::host::VSWITCH_ADAPTER_DESCRIPTION;
use serde_json::json;

fn nic(name: &str, index: u32, mac: &str, ips: &[&str]) -> Adapter {
    Adapter::for_test(name, index, mac, ips)
}

fn vnic(of: &str, index: u32, mac: &str, ips: &[&str]) -> Adapter {
    Adapter {
        description: VSWITCH_ADAPTER_DESCRIPTION.into(),
        ..nic(&format!("vEthernet ({of})"), index, mac, ips)
    }
}

fn node(ip: &str) -> NodeIp {
    NodeIp {
        ip: ip.parse().expect("ip"),
        source: "the Node's InternalIP".into(),
    }
}

/// The choice for the node IP 10.0.0.5, no adapter configured, no routes.
fn for_node(adapters: &[Adapter], external: Option<&HnsNetwork>) -> Result<Choice, ChoiceError> {
    choose(None, Some(&node("10.0.0.5")), adapters, &[], external)
}

fn default_route(index: u32, metric: u32) -> Route {
    Route {
        destination: Ipv4Addr::UNSPECIFIED,
        prefix_len: 0,
        next_hop: Ipv4Addr::new(10, 0, 0, 1),
        interface_index: index,
        metric,
    }
}

fn external(adapter: Option<&str>) -> HnsNetwork {
    let policy =
        adapter.map(|a| json!({"Type": "NetAdapterName", "Settings": {"NetworkAdapterName": a}}));
    let doc = json!({"ID": "ext", "Name": "External", "Type": "Overlay", "Policies": [policy]});
    crate::host::hns::parse_network(&doc).expect("network")
}

/// Without a vSwitch: the configured adapter (in any case) wins; else the one holding the node
/// IP, by address, not by text (10.0.0.1 is in 10.0.0.15 as text: rke2's `pkg/windows/utils.go`
/// matched by `strings.Contains`); else the default route with the lowest summed metric.
#[test]
fn the_adapter_is_configured_else_holds_the_node_ip_else_carries_the_default_route() {
    let mut second = nic("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.0.0.1"]);
    second.metric = 5;
    let adapters = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &["10.0.0.15"]),
        second,
    ];
    // Route metrics 0 and 5: 0 + 15 on Ethernet against 5 + 5 on Ethernet 2.
    let (first, both) = (
        [default_route(4, 0)],
        [default_route(4, 0), default_route(6, 5)],
    );
    for (configured, ip, routes, want, why) in [
        (
            Some("ethernet 2"),
            Some("10.0.0.15"),
            &first[..],
            Some("Ethernet 2"),
            "vxlan.adapter names it",
        ),
        (
            None,
            Some("10.0.0.1"),
            &first,
            Some("Ethernet 2"),
            "10.0.0.1 (the Node's InternalIP)",
        ),
        (None, None, &first, Some("Ethernet"), "the default route"),
        (None, None, &both, Some("Ethernet 2"), "the default route"),
        (None, None, &[], None, "no default route"),
    ] {
        let case = format!("{configured:?} {ip:?} {routes:?}");
        let c = choose(configured, ip.map(node).as_ref(), &adapters, routes, None).expect(&case);
        assert_eq!(c.adapter.as_deref(), want, "{case}");
        assert!(c.why.contains(why), "{case}: {}", c.why);
    }
    let e = choose(Some("Ethernet 9"), None, &adapters, &[], None).expect_err("missing");
    assert!(matches!(e, ChoiceError::Missing { .. }), "{e}");
    // Two adapters holding the node IP: an error naming them and the fix.
    let two = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &["10.0.0.5"]),
        nic("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.0.0.5"]),
    ];
    let e = for_node(&two, None).expect_err("several");
    assert!(e.to_string().contains("Ethernet, Ethernet 2"), "{e}");
    assert!(e.remedy().contains("vxlan.adapter"));
}

#[test]
fn behind_the_vswitch_the_uplink_is_found_by_address_mac_and_name_together() {
    let adapters = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &[]),
        nic("Ethernet 2", 6, "00-15-5D-00-00-06", &["10.1.0.5"]),
        vnic("Ethernet", 9, "00-15-5D-00-00-04", &["10.0.0.5"]),
    ];
    let ext = external(None);
    let c = for_node(&adapters, Some(&ext)).expect("choice");
    assert_eq!(c.adapter.as_deref(), Some("Ethernet"));
    assert!(c.why.contains("vEthernet (Ethernet)"), "{}", c.why);
    // The default route through the vSwitch reads back the same way.
    let c = choose(None, None, &adapters, &[default_route(9, 0)], Some(&ext)).expect("choice");
    assert_eq!(c.adapter.as_deref(), Some("Ethernet"));

    // A name alone is not enough: the MAC must match; the untold is no change, not an error.
    let renamed_mac = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &[]),
        vnic("Ethernet", 9, "00-15-5D-00-00-99", &["10.0.0.5"]),
    ];
    let c = for_node(&renamed_mac, Some(&ext)).expect("an unknown");
    assert_eq!(c.adapter, None);
    assert!(
        c.why.contains("stays on the adapter it is bound to"),
        "{}",
        c.why
    );
    // Nor a MAC alone: a vEthernet named after another adapter.
    let other_name = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &[]),
        vnic("Uplink", 9, "00-15-5D-00-00-04", &["10.0.0.5"]),
    ];
    let c = for_node(&other_name, Some(&ext)).expect("unknown");
    assert_eq!(c.adapter, None);
    // What HNS reports bound settles it, MAC checked.
    let bound = external(Some("Ethernet"));
    let c = for_node(&other_name, Some(&bound)).expect("bound");
    assert_eq!(c.adapter.as_deref(), Some("Ethernet"));
    // HNS's word alone when Windows lists none of that name; not when that name has another MAC.
    let unlisted = [vnic("Ethernet", 9, "00-15-5D-00-00-04", &["10.0.0.5"])];
    let c = for_node(&unlisted, Some(&bound)).expect("HNS");
    assert_eq!(c.adapter.as_deref(), Some("Ethernet"));
    let contradicted = [
        nic("Ethernet", 4, "00-15-5D-00-00-77", &[]),
        vnic("Uplink", 9, "00-15-5D-00-00-04", &["10.0.0.5"]),
    ];
    let c = for_node(&contradicted, Some(&bound)).expect("unknown");
    assert_eq!(c.adapter, None);
}

#[test]
fn the_node_ip_comes_from_the_internal_ip_then_kubelet_then_kubeadms_flags() {
    let kubelet = r#""C:\k\kubelet.exe" --node-ip=10.0.0.7,fd00::7 --v=2"#;
    let flags = "KUBELET_KUBEADM_ARGS=\"--container-runtime-endpoint=npipe:////./pipe/containerd-containerd --node-ip=10.0.0.8\"\n";
    let ip = |s: &str| Some(s.parse::<Ipv4Addr>().expect("ip"));
    let n = node_ip(ip("10.0.0.6"), Some(kubelet), Some(flags)).expect("ip");
    let said = (n.ip.to_string(), n.source);
    assert_eq!(said, ("10.0.0.6".into(), "the Node's InternalIP".into()));
    let n = node_ip(None, Some(kubelet), Some(flags)).expect("ip");
    assert_eq!(n.ip.to_string(), "10.0.0.7");
    let n = node_ip(None, Some(r#"kubelet.exe --node-ip 10.0.0.9"#), None).expect("ip");
    assert_eq!(n.ip.to_string(), "10.0.0.9");
    // Given twice, kubelet keeps the last (pflag's stringValue.Set overwrites).
    let twice = "kubelet.exe --node-ip=10.0.0.1 --node-ip 10.0.0.2";
    let n = node_ip(None, Some(twice), None).expect("ip");
    assert_eq!(n.ip.to_string(), "10.0.0.2");
    let n = node_ip(None, Some("kubelet.exe --v=2"), Some(flags)).expect("ip");
    assert_eq!(n.ip.to_string(), "10.0.0.8");
    assert!(n.source.contains("kubeadm-flags.env"));
    assert_eq!(
        node_ip(None, Some("kubelet.exe --node-ip-x=1.2.3.4"), None),
        None
    );
}

#[test]
fn a_configured_vswitch_adapter_is_read_back_when_ours_and_refused_when_not() {
    let adapters = [
        nic("Ethernet", 4, "00-15-5D-00-00-04", &[]),
        vnic("Ethernet", 9, "00-15-5D-00-00-04", &["10.0.0.5"]),
    ];
    let ext = external(None);
    let c = choose(
        Some("vEthernet (Ethernet)"),
        None,
        &adapters,
        &[],
        Some(&ext),
    )
    .expect("ours");
    assert_eq!(c.adapter.as_deref(), Some("Ethernet"));
    let e = choose(Some("vEthernet (Ethernet)"), None, &adapters, &[], None).expect_err("foreign");
    assert_eq!(
        e.to_string(),
        "vEthernet (Ethernet) is the host adapter of a vSwitch calicoctl-win did not make (the vSwitch Ethernet, or the one bound to Ethernet) (no External network is on it): HNS cannot bind another vSwitch to it"
    );
    assert!(e.remedy().contains("remove the other vSwitch"));
}

/// No adapter chosen keeps the recorded one; a choice made is never overridden by it.
#[test]
fn an_adapter_that_cannot_be_told_keeps_the_recorded_one() {
    let unknown = Choice {
        adapter: None,
        why: "cannot be told".into(),
    };
    let kept = unknown.clone().or_recorded(Some("Ethernet"));
    assert_eq!(kept.adapter.as_deref(), Some("Ethernet"));
    assert!(kept.why.contains("install record"), "{}", kept.why);
    assert_eq!(unknown.clone().or_recorded(None), unknown);
    let chosen = Choice {
        adapter: Some("Ethernet 2".into()),
        why: "it holds 10.0.0.6".into(),
    };
    assert_eq!(chosen.clone().or_recorded(Some("Ethernet")), chosen);
}
