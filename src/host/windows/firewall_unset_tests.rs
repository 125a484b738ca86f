//! Windows' defaults on a fresh rule, and a Windows without INetFwRule2 and INetFwRule3.

use crate::host::contract::on_windows::{Defer, FIREWALL_POLICY, firewall_turn};
use crate::host::contract::{udp_rule, unique};
use crate::host::{AppContainerScope, Firewall, FirewallRule, HostError, Protocol, Unset};

/// The defaults calicoctl-win relies on (`Unset::default`), as Windows gives a fresh rule
/// object: read as written, nothing added. Printed on real Windows by the workflow.
#[test]
fn firewall_contract_a_fresh_rule_reads_back_the_defaults_relied_on() {
    let Some(_turn) = firewall_turn() else { return };
    let fresh = super::firewall::of_a_fresh_rule().expect("read a fresh rule");
    println!("a fresh rule's properties calicoctl-win does not set: {fresh:#?}");
    assert_eq!(fresh.local_addresses, "*");
    assert_eq!(fresh.remote_ports, "*");
    assert_eq!(fresh.interface_types, "All");
    assert_eq!(fresh, Unset::default());
}

fn rule(name: &str, unset: Unset) -> FirewallRule {
    FirewallRule {
        protocol: Protocol::Tcp,
        local_port: 9095,
        unset,
        ..udp_rule(unique(name))
    }
}

/// Rule objects with INetFwRule alone (the stand-in's `rule-interfaces.json`): INetFwRule2's
/// and 3's properties read as defaults; putting back an app container scope or a deferred
/// edge traversal is refused, naming the interface, and nothing is added.
#[test]
fn firewall_contract_without_inetfwrule2_and_3_reads_defaults_and_refuses_what_it_cannot_set() {
    if std::env::var_os("CALICOCTL_WIN_FW_STANDIN").is_none() {
        return;
    }
    let _turn = FIREWALL_POLICY.lock().unwrap_or_else(|p| p.into_inner());
    let knob = std::path::Path::new(r"C:\calicoctl-win-firewall\rule-interfaces.json");
    std::fs::create_dir_all(knob.parent().expect("dir")).expect("dir");
    std::fs::write(knob, "1").expect("write");
    let _gone = Defer(|| {
        let _ = std::fs::remove_file(knob);
    });
    let h = crate::host::windows::WindowsHost::new();
    let on_some = rule(
        "Calico contract old interfaces TCP ",
        Unset {
            interfaces: vec!["Ethernet".into()],
            edge_traversal: true,
            ..Unset::default()
        },
    );
    h.firewall_add(&on_some).expect("add");
    let read = h.firewall_rules(&on_some.name).expect("read");
    let _ = h.firewall_remove(&on_some.name);
    assert_eq!(read.len(), 1, "{read:?}");
    assert_eq!(read[0].unset.app_container, AppContainerScope::default());
    assert!(crate::host::firewall::only(&read, &on_some), "{read:?}");
    let scoped = rule(
        "Calico contract old scoped TCP ",
        Unset {
            app_container: AppContainerScope {
                local_app_package_id: "S-1-15-2-1".into(),
                ..AppContainerScope::default()
            },
            ..Unset::default()
        },
    );
    let deferred = rule(
        "Calico contract old deferred TCP ",
        Unset {
            edge_traversal_options: 2,
            ..Unset::default()
        },
    );
    for (r, interface) in [(&scoped, "INetFwRule3"), (&deferred, "INetFwRule2")] {
        let err = h.firewall_add(r).expect_err("refused");
        assert!(
            matches!(&err, HostError::Api { code: 0x8000_4002, message, .. } if message.contains(interface)),
            "{err}"
        );
        assert_eq!(h.firewall_rules(&r.name).expect("read"), []);
    }
}
