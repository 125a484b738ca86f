//! Firewall rules through a run and its undo: judged by every property the firewall holds,
//! their names in any case.

use crate::host::{Firewall, FirewallRule, Unset};

fn made() -> FirewallRule {
    super::tests::rule(
        "Calico metrics Felix TCP 9091",
        r"C:\CalicoWindows\calico-node.exe",
        9091,
        "0.0.0.0/0",
    )
}

fn options<'a>() -> super::Options<'a> {
    super::tests::options("reconfigure", true)
}

fn remove() -> super::Action {
    super::Action::RemoveFirewallRule {
        name: made().name,
        made: Some(made()),
    }
}

/// The rule the firewall holds under the name in another case, and with any address where it
/// was made from `0.0.0.0/0`, is the rule made: a run removes it, and the undo of a run that
/// fails after puts it back as it was read, not as it was made. (It was kept: the name was
/// compared exactly.)
#[test]
fn a_run_removes_our_rule_read_back_otherwise_and_its_undo_puts_back_what_was_read() {
    let host = super::tests::host();
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

/// A rule put back by an undo from the journal (a run cut off, rolled back by the next,
/// through `undo_journal`) keeps every property it was read with, those install does not set
/// among them, and sets none left at a default in another spelling.
#[test]
fn an_undo_from_the_journal_puts_back_every_property_read() {
    journal_undo_puts_back_every_property_read(&super::tests::host(), false);
}

/// Also the Windows host's, under Wine through the stand-in hnetcfg.dll: `set_unset` itself.
#[cfg(windows)]
#[test]
fn firewall_contract_an_undo_from_the_journal_puts_back_every_property_read() {
    if std::env::var_os("CALICOCTL_WIN_FW_STANDIN").is_none() {
        return;
    }
    // The stand-in's knobs (a Windows without INetFwRule3) are another test's turn.
    let _turn = crate::host::contract::on_windows::FIREWALL_POLICY
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    journal_undo_puts_back_every_property_read(&crate::host::windows::WindowsHost::new(), true);
}

fn journal_undo_puts_back_every_property_read(host: &dyn crate::host::Host, windows: bool) {
    let name = crate::host::contract::unique("Calico metrics undo TCP ");
    let read = FirewallRule {
        name: name.clone(),
        remote_addresses: vec!["10.0.0.0/8".into()],
        unset: Unset {
            local_addresses: "10.0.2.15".into(),
            remote_ports: "40000-40100".into(),
            interface_types: "Lan".into(),
            edge_traversal: true,
            grouping: "Monitoring".into(),
            service_name: "CalicoNode".into(),
            interfaces: vec!["Ethernet".into(), "vEthernet (Ethernet)".into()],
            edge_traversal_options: 2,
            app_container: crate::host::AppContainerScope {
                local_app_package_id: "S-1-15-2-1".into(),
                local_user_owner: "S-1-5-21-1-2-3-500".into(),
                local_user_authorized_list: "O:LSD:(A;;CC;;;S-1-5-18)".into(),
                remote_user_authorized_list: "O:LSD:(A;;CC;;;S-1-5-11)".into(),
                remote_machine_authorized_list: "O:LSD:(A;;CC;;;S-1-5-11)".into(),
                secure_flags: 1,
            },
        },
        ..made()
    };
    // Defaults in another spelling, as a rule may read back: nothing set for them.
    let spelled = FirewallRule {
        name: format!("{name} spelled"),
        unset: Unset {
            local_addresses: " * ".into(),
            remote_ports: String::new(),
            interface_types: "all".into(),
            ..Unset::default()
        },
        ..read.clone()
    };
    let journal = super::journal::Journal {
        command: "uninstall".into(),
        entries: [&read, &spelled]
            .into_iter()
            .map(|r| super::journal::Entry {
                action: format!("remove firewall rule \"{}\"", r.name),
                undo: super::journal::Undo::AddFirewallRule { rule: r.clone() },
                done: true,
                irreversible: false,
            })
            .collect(),
        ..super::journal::Journal::default()
    };
    // As the next run finds it: from its JSON.
    let json = serde_json::to_string(&journal).expect("json");
    let journal: super::journal::Journal = serde_json::from_str(&json).expect("read");
    let dir = tempfile::tempdir().expect("dir");
    let path = if cfg!(windows) {
        dir.path().join("journal.json").display().to_string()
    } else {
        r"C:\CalicoWindows\calicoctl-win.journal.json".into()
    };
    let failures =
        super::undo::undo_journal(host, &journal, &path, std::time::Duration::from_secs(5));
    assert_eq!(failures, Vec::<String>::new());
    let back = host.firewall_rules(&read.name).expect("read");
    let _ = host.firewall_remove(&read.name);
    let spelled_back = host.firewall_rules(&spelled.name).expect("read");
    let _ = host.firewall_remove(&spelled.name);
    assert!(crate::host::firewall::only(&back, &read), "{back:?}");
    // Put back whole: not as it would be without its interfaces, its edge traversal options
    // or any one of INetFwRule3's properties.
    let partial: [fn(&mut Unset); 3] = [
        |u| u.interfaces.clear(),
        |u| u.edge_traversal_options = 0,
        |u| u.app_container.remote_machine_authorized_list.clear(),
    ];
    for strip in partial {
        let mut without = read.clone();
        strip(&mut without.unset);
        assert!(!crate::host::firewall::only(&back, &without), "{back:?}");
    }
    assert!(
        crate::host::firewall::only(&spelled_back, &spelled),
        "{spelled_back:?}"
    );
    // Windows (the stand-in) reads back what was set: a default spelled otherwise and set
    // would read back so. (The simulated host keeps a rule as given.)
    if windows {
        assert_eq!(spelled_back[0].unset, Unset::default());
    }
}
