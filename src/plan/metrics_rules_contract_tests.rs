//! The metrics rules as install plans them, through a host's own firewall: on the simulated
//! host, and under Wine through the stand-in `hnetcfg.dll` (`tools/wine/test.sh` runs the
//! `firewall_contract` tests with it) or on Windows through its firewall.

use super::*;

/// A config with metrics on, on two ports no other run of this test takes at once (the rules'
/// names hold their ports), open to two ranges and one address.
fn config() -> Config {
    let port = 20000 + (std::process::id() % 20000) as u16;
    crate::config::tests::from_sets(&[
        "node.name=win-1",
        "metrics.enabled=true",
        "metrics.source_ranges=10.0.0.0/8,192.168.1.0/24,1.2.3.4/32",
        &format!("metrics.port={port}"),
        &format!("metrics.felix_port={}", port + 1),
    ])
}

/// Removes the rules of these names when dropped: a failed test leaves none on the host.
struct Gone<'h>(&'h dyn Host, Vec<String>);

impl Drop for Gone<'_> {
    fn drop(&mut self) {
        for name in &self.1 {
            let _ = self.0.firewall_remove(name);
        }
    }
}

fn adds(actions: &[Action]) -> Vec<&FirewallRule> {
    actions
        .iter()
        .filter_map(|a| match a {
            Action::AddFirewallRule { rule } => Some(rule),
            _ => None,
        })
        .collect()
}

/// Made where none is; read back as made, so the next plan changes nothing (Windows keeps a
/// subnet as address and mask and gives back a /32 bare: the plan must still see its own
/// rule); removed by the plan of a config with metrics off, and only they.
pub(crate) fn metrics_rules(h: &dyn Host) {
    let c = config();
    let felix = r"C:\CalicoWindows\calico-node.exe";
    let wanted = wanted(&c, felix);
    assert_eq!(wanted.len(), 2, "{wanted:?}");
    for r in &wanted {
        assert_eq!(
            h.firewall_rules(&r.name).expect("read"),
            Vec::new(),
            "{r:?}"
        );
    }
    let mut actions = Vec::new();
    let owned = plan(h, &c, felix, &[], None, &mut actions).expect("plan");
    assert_eq!(adds(&actions), wanted.iter().collect::<Vec<_>>());
    // Taken away however the test ends.
    let _gone = Gone(h, wanted.iter().map(|r| r.name.clone()).collect());
    for r in &wanted {
        h.firewall_add(r).expect("add");
        // As the plan compares rules (`FirewallRule::same`: the addresses in any order).
        let read = h.firewall_rule(&r.name).expect("read");
        assert!(read.as_ref().is_some_and(|read| read.same(r)), "{read:?}");
    }
    // Judged by what the firewall reads back alone (no record naming the rules), and with
    // the record: either way the rules are as wanted and nothing changes.
    for previous in [&[][..], &owned[..]] {
        let mut again = Vec::new();
        let now = plan(h, &c, felix, previous, None, &mut again).expect("plan again");
        assert_eq!(now, owned);
        assert!(again.is_empty(), "a second plan changes {again:?}");
    }

    let off = crate::config::tests::from_sets(&["node.name=win-1"]);
    let mut removal = Vec::new();
    let kept = plan(h, &off, felix, &owned, None, &mut removal).expect("plan off");
    assert!(kept.is_empty(), "{kept:?}");
    let mut names = super::tests::removed(&removal);
    let mut want: Vec<&str> = wanted.iter().map(|r| r.name.as_str()).collect();
    names.sort();
    want.sort();
    assert_eq!(names, want);
    for r in &wanted {
        assert!(h.firewall_remove(&r.name).expect("remove"), "{}", r.name);
        assert_eq!(h.firewall_rules(&r.name).expect("read"), Vec::new());
    }
}

#[test]
fn firewall_contract_metrics_rules_on_the_simulated_host() {
    metrics_rules(&crate::host::sim::SimHost::in_memory("ws2022").expect("sim host"));
}

/// Through the stand-in hnetcfg.dll under Wine (`CALICOCTL_WIN_FW_STANDIN`), or Windows'
/// firewall on a real host.
#[cfg(windows)]
#[test]
fn firewall_contract_metrics_rules_through_the_windows_firewall() {
    use crate::host::contract::on_windows::{FIREWALL_POLICY, real_host};
    if std::env::var_os("CALICOCTL_WIN_FW_STANDIN").is_none() && !real_host() {
        return;
    }
    let _turn = FIREWALL_POLICY.lock().unwrap_or_else(|p| p.into_inner());
    metrics_rules(&crate::host::windows::WindowsHost::new());
}
