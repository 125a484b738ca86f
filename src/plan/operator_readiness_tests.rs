use super::*;
use serde_json::json;

fn inst(spec: Value) -> Installation {
    Installation::of(&json!({ "spec": spec }))
}

fn addr(interface: &str, ip: &str) -> InterfaceAddress {
    InterfaceAddress {
        interface: interface.into(),
        index: 1,
        ip: ip.parse().expect("ip"),
        prefix_len: 24,
    }
}

const SERVER: &str = "https://10.0.0.1:6443";

#[test]
fn a_windows_install_the_operator_would_refuse_is_named_with_each_fix() {
    let i = inst(
        json!({"calicoNetwork": {"ipPools": [{"cidr": "10.244.0.0/16", "encapsulation": "IPIP"}]}}),
    );
    let r = windows_config(
        &i,
        ("tigera-operator", None),
        SERVER,
        &["10.96.0.0/12".into()],
    )
    .expect("refused");
    assert_eq!(r.code, "operator-windows-invalid");
    for part in [
        "kubernetes-services-endpoint does not exist",
        "serviceCIDRs",
        "encapsulation IPIP",
    ] {
        assert!(r.message.contains(part), "{part}: {}", r.message);
    }
    for part in [
        "KUBERNETES_SERVICE_HOST=10.0.0.1 --from-literal=KUBERNETES_SERVICE_PORT=6443",
        r#""serviceCIDRs":["10.96.0.0/12"]"#,
    ] {
        assert!(r.fix.contains(part), "{part}: {}", r.fix);
    }
}

#[test]
fn a_valid_windows_install_passes() {
    let i = inst(json!({"serviceCIDRs": ["10.96.0.0/12"],
        "calicoNetwork": {"ipPools": [{"cidr": "10.244.0.0/16", "encapsulation": "VXLAN"}]}}));
    let endpoint = Some((Some("10.0.0.1".into()), Some("6443".into())));
    assert_eq!(
        windows_config(&i, ("tigera-operator", endpoint.clone()), SERVER, &[]),
        None
    );
    // A ConfigMap without the port is refused as the operator refuses it.
    let r = windows_config(
        &i,
        ("tigera-operator", Some((Some("10.0.0.1".into()), None))),
        SERVER,
        &[],
    );
    // It stops the core controller (TigeraStatus calico), not only the Windows one.
    let r = r.expect("refused");
    assert!(r.message.contains("lacks"), "{}", r.message);
    assert!(
        r.message.contains("TigeraStatus calico Degraded") && r.message.contains("Linux"),
        "{}",
        r.message
    );
    // No ConfigMap at all stops only the Windows controller.
    let r = windows_config(&i, ("tigera-operator", None), SERVER, &[]).expect("refused");
    assert!(
        r.message.contains("TigeraStatus calico-windows Degraded") && !r.message.contains("Linux"),
        "{}",
        r.message
    );
    // The computed spec counts when the spec leaves the field to the operator.
    let computed = Installation::of(&json!({"spec": {},
        "status": {"computed": {"serviceCIDRs": ["10.96.0.0/12"],
            "calicoNetwork": {"ipPools": [{"cidr": "10.244.0.0/16", "encapsulation": "VXLANCrossSubnet"}]}}}}));
    let r = windows_config(&computed, ("tigera-operator", endpoint), SERVER, &[]).expect("refused");
    assert!(r.message.contains("VXLANCrossSubnet"), "{}", r.message);
    assert!(!r.message.contains("serviceCIDRs"), "{}", r.message);
}

#[test]
fn first_found_walks_the_interfaces_in_reverse_and_skips_calicos_own() {
    // The order GetAdaptersAddresses lists them; calico-node walks it backwards.
    let addresses = [
        addr("vEthernet (Ethernet)", "10.0.0.5"),
        addr("Ethernet 2", "192.168.50.5"),
        addr("vEthernet (nat)", "172.20.0.1"),
        addr("vEthernet (Calico_ep)", "10.244.1.2"),
    ];
    let i = inst(json!({}));
    let r = autodetection(&i, Some("10.0.0.5".parse().expect("ip")), &addresses).expect("refused");
    assert!(
        r.message.contains("picks 192.168.50.5 on Ethernet 2"),
        "{}",
        r.message
    );
    assert!(r.fix.contains("NodeInternalIP"), "{}", r.fix);
    // One NIC: first-found finds the node's address.
    let one = [
        addresses[0].clone(),
        addresses[2].clone(),
        addresses[3].clone(),
    ];
    assert_eq!(
        autodetection(&i, Some("10.0.0.5".parse().expect("ip")), &one),
        None
    );
}

#[test]
fn the_methods_that_pick_the_internal_ip_pass_and_can_reach_is_refused() {
    let addresses = [
        addr("vEthernet (Ethernet)", "10.0.0.5"),
        addr("Ethernet 2", "192.168.50.5"),
    ];
    let ip = Some("10.0.0.5".parse().expect("ip"));
    for ok in [
        json!({"kubernetes": "NodeInternalIP"}),
        json!({"interface": "vEthernet \\(Ethernet\\)"}),
        json!({"cidrs": ["10.0.0.0/24"]}),
        json!({"skipInterface": "Ethernet 2"}),
    ] {
        let i = inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4": ok}}));
        assert_eq!(autodetection(&i, ip, &addresses), None, "{ok}");
    }
    let i = inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4": {"canReach": "8.8.8.8"}}}));
    assert!(autodetection(&i, ip, &addresses).is_some());
    let eks = inst(json!({"kubernetesProvider": "EKS"}));
    assert!(autodetection(&eks, ip, &addresses).is_some());
    assert!(autodetection(&inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4": {"kubernetes": "NodeInternalIP"}}})), None, &addresses).is_none());
}

/// As calico-node reads the methods: `interface` and `skipInterface` take comma-separated
/// patterns, and `cidrs` applies none of Windows' exclusions.
#[test]
fn interface_lists_are_split_and_cidrs_exclude_nothing() {
    let addresses = [
        addr("vEthernet (Ethernet)", "10.0.0.5"),
        addr("Ethernet 2", "192.168.50.5"),
    ];
    let ip = Some("10.0.0.5".parse().expect("ip"));
    let skip = inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4":
        {"skipInterface": "nothing-like-it,Ethernet 2"}}}));
    assert_eq!(autodetection(&skip, ip, &addresses), None);
    let pick = inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4":
        {"interface": "Ethernet 2,vEthernet.*"}}}));
    assert!(
        autodetection(&pick, ip, &addresses).is_some_and(|r| r.message.contains("192.168.50.5"))
    );
    // A node address on an interface Windows' first-found would skip is found by CIDR.
    let nat = [addr("vEthernet (nat)", "10.0.0.5")];
    let cidr =
        inst(json!({"calicoNetwork": {"nodeAddressAutodetectionV4": {"cidrs": ["10.0.0.0/24"]}}}));
    assert_eq!(autodetection(&cidr, ip, &nat), None);
    assert!(autodetection(&inst(json!({})), ip, &nat).is_some());
}
