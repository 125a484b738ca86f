//! Firewall rules through a run and its undo: judged by every property the firewall holds,
//! their names in any case.

use crate::host::{Firewall, FirewallRule, Unset};

fn made() -> FirewallRule {
    crate::host::FirewallRule {
        name: "Calico metrics Felix TCP 9091".into(),
        description: crate::host::firewall::MARKER.into(),
        protocol: crate::host::Protocol::Tcp,
        direction: crate::host::Direction::In,
        program: Some(r"C:\CalicoWindows\calico-node.exe".into()),
        local_port: 9091,
        allow: true,
        enabled: true,
        profiles: crate::host::ALL_PROFILES,
        remote_addresses: vec!["0.0.0.0/0".into()],
        unset: Unset::default(),
    }
}

fn options<'a>() -> super::Options<'a> {
    super::Options::for_change(
        "reconfigure",
        r"C:\CalicoWindows\calicoctl-win.journal.json".into(),
        true,
        std::time::Duration::from_secs(1),
        None,
        None,
    )
}

fn remove() -> super::Action {
    super::Action::RemoveFirewallRule {
        name: made().name,
        made: Some(made()),
    }
}

/// A rule an administrator tightened after the plan through a property install does not set
/// is kept by the run, said. (It was removed as ours, and the change with it.)
#[test]
fn a_run_keeps_a_rule_tightened_in_a_property_we_do_not_set() {
    let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
    host.firewall_add(&made()).expect("add");
    host.admin_edit_firewall_rules(&made().name, |r| {
        r.unset.local_addresses = "10.0.2.15".into();
    })
    .expect("admin edit");
    let before = host.firewall_rules(&made().name).expect("read");
    let warnings = super::execute(&host, &[remove()], options(), &mut |_| {}).expect("run");
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("kept the firewall rule 'Calico metrics Felix TCP 9091'")),
        "{warnings:?}"
    );
    assert_eq!(host.firewall_rules(&made().name).expect("read"), before);
}

/// The rule the firewall holds under the name in another case, and with any address where it
/// was made from `0.0.0.0/0`, is the rule made: a run removes it, and the undo of a run that
/// fails after puts it back as it was read, not as it was made. (It was kept: the name was
/// compared exactly.)
#[test]
fn a_run_removes_our_rule_read_back_otherwise_and_its_undo_puts_back_what_was_read() {
    let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
    let read_back = FirewallRule {
        name: made().name.to_ascii_lowercase(),
        remote_addresses: Vec::new(),
        ..made()
    };
    host.firewall_add(&read_back).expect("add");
    let warnings = super::execute(&host, &[remove()], options(), &mut |_| {}).expect("run");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(host.firewall_rules(&made().name).expect("read"), []);

    host.firewall_add(&read_back).expect("add");
    let failing = [
        remove(),
        super::Action::StartService {
            name: "NoSuchService".into(),
        },
    ];
    let e = super::execute(&host, &failing, options(), &mut |_| {}).expect_err("fails");
    assert_eq!(e.index, 2, "{e:#}");
    assert_eq!(e.rollback_failures, Some(Vec::new()));
    assert_eq!(
        host.firewall_rules(&made().name).expect("read"),
        [read_back]
    );
}

/// A rule put back by an undo from the journal (a run cut off, rolled back by the next) keeps
/// every property it was read with, those install does not set among them.
#[test]
fn an_undo_from_the_journal_puts_back_every_property_read() {
    let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
    let read = FirewallRule {
        unset: Unset {
            remote_ports: "40000-40100".into(),
            grouping: "Monitoring".into(),
            ..Unset::default()
        },
        ..made()
    };
    let undo = super::journal::Undo::AddFirewallRule { rule: read.clone() };
    let json = serde_json::to_string(&undo).expect("json");
    let back: super::journal::Undo = serde_json::from_str(&json).expect("read");
    let super::journal::Undo::AddFirewallRule { rule } = back else {
        panic!("{json}");
    };
    host.firewall_add(&rule).expect("put back");
    assert_eq!(host.firewall_rules(&read.name).expect("read"), [read]);
}
