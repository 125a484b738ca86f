use super::*;
use crate::host::sim::SimHost;
use crate::host::{AdapterAddress, Network, VSWITCH_ADAPTER_DESCRIPTION};

fn adapter(
    name: &str,
    index: u32,
    dhcp: bool,
    ip: Option<&str>,
    dns: &[&str],
    metric: u32,
) -> Adapter {
    Adapter {
        name: name.into(),
        index,
        description: "Microsoft Hyper-V Network Adapter".into(),
        mac: "00-15-5D-00-00-06".into(),
        addresses: ip
            .map(|ip| AdapterAddress {
                ip: ip.parse().expect("ip"),
                prefix_len: 24,
                preferred: true,
            })
            .into_iter()
            .collect(),
        dhcp,
        gateways: Vec::new(),
        dns_servers: dns.iter().map(|d| d.parse().expect("dns")).collect(),
        dns_suffix: if dhcp {
            String::new()
        } else {
            "corp.example".into()
        },
        metric,
        guid: format!("{{00000000-0000-0000-0000-{index:012}}}"),
    }
}

fn vnic(of: &Adapter, index: u32) -> Adapter {
    Adapter {
        name: format!("vEthernet ({})", of.name),
        index,
        description: VSWITCH_ADAPTER_DESCRIPTION.into(),
        guid: format!("{{00000000-0000-0000-0000-{index:012}}}"),
        ..of.clone()
    }
}

/// An adapter of the simulated host, by name.
pub(crate) fn adapter_named(host: &SimHost, name: &str) -> Adapter {
    let adapters = host.adapters().expect("adapters");
    adapters
        .into_iter()
        .find(|a| a.name == name)
        .expect("adapter")
}

fn adapter_at(host: &SimHost, index: u32) -> Adapter {
    let adapters = host.adapters().expect("adapters");
    adapters
        .into_iter()
        .find(|a| a.index == index)
        .expect("adapter")
}

/// The host's adapter of `now`'s index replaced by `now`.
fn set_adapter(host: &SimHost, now: &Adapter) {
    let mut adapters = host.adapters().expect("adapters");
    for a in adapters.iter_mut().filter(|a| a.index == now.index) {
        *a = now.clone();
    }
    host.set_adapters(adapters).expect("set");
}

#[test]
fn a_static_adapters_lost_dns_dhcp_address_and_metric_are_each_a_drift() {
    let nic = adapter("Ethernet 2", 6, false, Some("10.0.0.6"), &["10.0.0.2"], 15);
    let (before, same) = (Addressing::of(&nic), vnic(&nic, 9));
    assert_eq!(drift(&before, &same), []);
    // microsoft/SDN#498: the DNS servers vanish; calico#4631: DHCP and an APIPA address.
    let lost = Adapter {
        dhcp: true,
        dns_servers: Vec::new(),
        dns_suffix: String::new(),
        metric: 5,
        addresses: vec![AdapterAddress {
            ip: Ipv4Addr::new(169, 254, 7, 9),
            prefix_len: 16,
            preferred: true,
        }],
        ..same.clone()
    };
    let found = drift(&before, &lost);
    assert_eq!(
        found,
        [
            Drift::Dhcp,
            Drift::Address(Ipv4Addr::new(10, 0, 0, 6), 24),
            Drift::Dns {
                was: vec![Ipv4Addr::new(10, 0, 0, 2)],
                now: Vec::new()
            },
            Drift::Suffix {
                was: "corp.example".into(),
                now: String::new()
            },
            Drift::Metric { was: 15, now: 5 },
        ]
    );
}

#[test]
fn a_dhcp_adapter_counts_only_dns_servers_that_vanish() {
    let before = adapter("Ethernet", 4, true, Some("10.0.0.5"), &["10.0.0.2"], 15);
    let before = Addressing::of(&before);
    // DHCP gave the host adapter another address and server: DHCP's to give.
    let renewed = vnic(
        &adapter("Ethernet", 4, true, Some("10.0.0.8"), &["10.0.0.3"], 15),
        9,
    );
    assert_eq!(drift(&before, &renewed), []);
    let none = Adapter {
        dns_servers: Vec::new(),
        ..renewed
    };
    assert!(matches!(drift(&before, &none)[..], [Drift::Dns { .. }]));
}

/// The DNS servers and the metric the vSwitch dropped are put back and read back. Through the
/// DNS client, not a registry value Windows reads at a restart: tests/lifecycle
/// `the_external_network_binds_the_adapter_holding_the_nodes_internal_ip`; once, an
/// administrator's later change kept: supervise `what_the_vswitch_loses_of_a_static_adapter_is_put_back`.
#[test]
fn what_the_vswitch_dropped_is_put_back_with_calls_that_exist_on_server_2019() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    let nic = &adapter_named(&host, "Ethernet 2");
    let mut kept = Addressing::of(nic);
    // The host adapter as microsoft/SDN#498 reports it: no DNS servers, another metric.
    let mut now = nic.clone();
    now.dns_servers.clear();
    now.metric = 5;
    set_adapter(&host, &now);
    let (done, failed) = put_back(&host, &mut kept, &now);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(done.len(), 2, "{done:?}");
    assert_eq!(kept.lost.as_ref().map(Vec::len), Some(2));
    assert!(kept.pending.is_empty(), "{kept:?}");
    let back = &adapter_at(&host, now.index);
    assert_eq!(back.dns_servers, kept.dns_servers);
    assert_eq!(back.metric, 15);
    assert_eq!(drift(&kept, back), []);
}

/// A static adapter whose host adapter asks DHCP, without its DNS servers and suffix: DHCP is
/// turned off with the static address (EnableStatic), the servers and the suffix set, each
/// read back from what Windows reports.
#[test]
fn reconcile_turns_dhcp_off_and_sets_dns_through_wmi_and_reads_them_back() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    let nic = &adapter_named(&host, "Ethernet 2");
    let mut kept = Addressing {
        dns_suffix: "corp.example".into(),
        ..Addressing::of(nic)
    };
    assert!(!kept.dhcp, "{kept:?}");
    let now = Adapter {
        dhcp: true,
        dns_servers: Vec::new(),
        dns_suffix: String::new(),
        ..nic.clone()
    };
    set_adapter(&host, &now);
    let (done, failed) = put_back(&host, &mut kept, &now);
    assert!(failed.is_empty(), "{failed:?}");
    assert_eq!(done.len(), 3, "{done:?}");
    let back = adapter_at(&host, now.index);
    assert!(!back.dhcp, "{back:?}");
    assert_eq!(back.dns_servers, kept.dns_servers);
    assert_eq!(back.dns_suffix, "corp.example");
    assert_eq!(drift(&kept, &back), []);
}

/// A static address the vSwitch dropped is not added beside another static address of its
/// subnet (that address may be another host's by then): it stays lost, and said so.
#[test]
fn an_address_is_never_added_beside_a_static_one_of_its_subnet() {
    let host = SimHost::in_memory("ws2022-two-nics").expect("host");
    let nic = &adapter_named(&host, "Ethernet 2");
    let mut kept = Addressing::of(nic);
    let mut now = nic.clone();
    now.addresses[0].ip = Ipv4Addr::new(10, 0, 0, 7);
    host.readdress(Ipv4Addr::new(10, 0, 0, 6), Ipv4Addr::new(10, 0, 0, 7))
        .expect("readdress");
    let (done, failed) = put_back(&host, &mut kept, &now);
    assert!(done.is_empty(), "{done:?}");
    assert!(
        failed.len() == 1
            && failed[0].contains("holds the static address 10.0.0.7 of the same subnet"),
        "{failed:?}"
    );
    assert!(!adapter_at(&host, now.index).holds(Ipv4Addr::new(10, 0, 0, 6)));
    assert_eq!(
        kept.pending,
        [Drift::Address(Ipv4Addr::new(10, 0, 0, 6), 24)]
    );
}

#[test]
fn calico_ep_must_sit_above_the_lans_metric() {
    let lan = vnic(&adapter("Ethernet", 4, true, Some("10.0.0.5"), &[], 15), 9);
    let ep = |metric| Adapter {
        name: "vEthernet (Calico_ep)".into(),
        metric,
        ..vnic(&adapter("x", 11, true, Some("10.244.1.2"), &[], metric), 11)
    };
    assert!(ep_metric_clash(&[lan.clone(), ep(15)], &lan).is_some());
    assert!(ep_metric_clash(&[lan.clone(), ep(5)], &lan).is_some());
    assert!(ep_metric_clash(&[lan.clone(), ep(115)], &lan).is_none());
}
