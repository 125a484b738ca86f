//! The differences between two snapshots of the host, each with the PowerShell command (run
//! elevated) that puts it back as it was.

use crate::host::{FirewallRule, InterfaceAddress, RegValue, Route, ServiceState};
use std::collections::BTreeMap;

/// One way the host differs from before, and how to put it back.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Difference {
    pub what: String,
    /// The command that removes the difference (PowerShell, elevated).
    pub fix: String,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (fix: {})", self.what, self.fix)
    }
}

/// A PowerShell single-quoted string.
fn q(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

fn push(out: &mut Vec<Difference>, what: String, fix: String) {
    out.push(Difference { what, fix });
}

fn running(state: ServiceState) -> bool {
    matches!(state, ServiceState::Running | ServiceState::StartPending)
}

type Services = BTreeMap<String, Option<(ServiceState, String)>>;

pub(super) fn services(before: &Services, after: &Services, out: &mut Vec<Difference>) {
    for (name, now) in after {
        let was = before.get(name).cloned().flatten();
        match (was, now) {
            (None, Some(_)) => push(
                out,
                format!("service {name} is registered (it was not)"),
                format!(
                    "Stop-Service -Name {} -Force; sc.exe delete {}",
                    q(name),
                    q(name)
                ),
            ),
            (Some((state, cmd)), None) => push(
                out,
                format!("service {name} is gone (it ran {cmd})"),
                format!(
                    "New-Service -Name {} -BinaryPathName {}{}",
                    q(name),
                    q(&cmd),
                    if running(state) {
                        format!("; Start-Service -Name {}", q(name))
                    } else {
                        String::new()
                    }
                ),
            ),
            (Some((state, cmd)), Some((now_state, now_cmd))) => {
                if &cmd != now_cmd {
                    push(
                        out,
                        format!("service {name} runs {now_cmd} (it ran {cmd})"),
                        format!("sc.exe config {} binPath= {}", q(name), q(&cmd)),
                    );
                }
                if running(state) != running(*now_state) {
                    let (now, fix) = if running(state) {
                        ("stopped", "Start-Service")
                    } else {
                        ("running", "Stop-Service")
                    };
                    push(
                        out,
                        format!("service {name} is {now} (it was {state:?})"),
                        format!("{fix} -Name {}", q(name)),
                    );
                }
            }
            (None, None) => {}
        }
    }
}

fn remove_network(name: &str) -> String {
    format!(
        "Get-HnsNetwork | Where-Object Name -eq {} | Remove-HnsNetwork",
        q(name)
    )
}

/// Returns whether a network was made (the vSwitch moves the host's address and routes).
pub(super) fn networks(
    before: &[(String, String)],
    after: &[(String, String)],
    out: &mut Vec<Difference>,
) -> bool {
    let mut made: Vec<&(String, String)> = after.iter().filter(|n| !before.contains(n)).collect();
    // The External network last: deleting it removes the vSwitch the others stand on.
    let external = crate::layout::EXTERNAL_NETWORK;
    made.sort_by_key(|(n, _)| n == external);
    for (name, ty) in &made {
        let also = if name == external {
            "; this also gives the host its address and routes back"
        } else {
            ""
        };
        push(
            out,
            format!("HNS network {name} ({ty}) was made while the command ran{also}"),
            remove_network(name),
        );
    }
    for (name, ty) in before.iter().filter(|n| !after.contains(n)) {
        push(
            out,
            format!("HNS network {name} ({ty}) is gone"),
            if name.starts_with("Calico") || name == external {
                "Start-Service -Name 'CalicoNode' (CalicoNode and calico-node make it again)"
                    .to_owned()
            } else {
                "make it again with the tool that made it".to_owned()
            },
        );
    }
    !made.is_empty()
}

pub(super) fn addresses(
    before: &[InterfaceAddress],
    after: &[InterfaceAddress],
    network_made: bool,
    out: &mut Vec<Difference>,
) {
    for b in before {
        let add = format!(
            "New-NetIPAddress -InterfaceAlias {} -IPAddress {} -PrefixLength {}",
            q(&b.interface),
            b.ip,
            b.prefix_len
        );
        match after.iter().find(|a| a.ip == b.ip) {
            Some(a) if a.interface == b.interface => {}
            Some(a) => push(
                out,
                format!(
                    "the host address {}/{} is on {} (it was on {})",
                    b.ip, b.prefix_len, a.interface, b.interface
                ),
                if network_made {
                    "removing the HNS networks above gives it back".to_owned()
                } else {
                    format!(
                        "Remove-NetIPAddress -IPAddress {} -Confirm:$false; {add}",
                        b.ip
                    )
                },
            ),
            None => push(
                out,
                format!(
                    "the host address {}/{} on {} is gone",
                    b.ip, b.prefix_len, b.interface
                ),
                add,
            ),
        }
    }
    for a in after
        .iter()
        .filter(|a| !before.iter().any(|b| b.ip == a.ip))
    {
        push(
            out,
            format!(
                "the address {}/{} on {} is new",
                a.ip, a.prefix_len, a.interface
            ),
            format!("Remove-NetIPAddress -IPAddress {} -Confirm:$false", a.ip),
        );
    }
}

fn same_route(a: &Route, b: &Route) -> bool {
    a.destination == b.destination && a.prefix_len == b.prefix_len && a.next_hop == b.next_hop
}

pub(super) fn routes(
    before: &[Route],
    after: &[Route],
    before_addresses: &[InterfaceAddress],
    out: &mut Vec<Difference>,
) {
    for r in before
        .iter()
        .filter(|r| !after.iter().any(|a| same_route(a, r)))
    {
        // The interface it was on, by name: its address comes back there once the networks
        // above are removed.
        let alias = before_addresses
            .iter()
            .find(|a| a.index == r.interface_index)
            .map(|a| format!("-InterfaceAlias {}", q(&a.interface)))
            .unwrap_or_else(|| format!("-InterfaceIndex {}", r.interface_index));
        push(
            out,
            format!(
                "the route {}/{} via {} is gone",
                r.destination, r.prefix_len, r.next_hop
            ),
            format!(
                "New-NetRoute -DestinationPrefix {}/{} {alias} -NextHop {} -RouteMetric {}",
                r.destination, r.prefix_len, r.next_hop, r.metric
            ),
        );
    }
    for r in after
        .iter()
        .filter(|r| !before.iter().any(|b| same_route(b, r)))
    {
        push(
            out,
            format!("the route {} is new", r.describe()),
            format!(
                "Remove-NetRoute -DestinationPrefix {}/{} -NextHop {} -InterfaceIndex {} -Confirm:$false",
                r.destination, r.prefix_len, r.next_hop, r.interface_index
            ),
        );
    }
}

pub(super) fn files(
    before: &BTreeMap<String, Option<String>>,
    after: &BTreeMap<String, Option<String>>,
    out: &mut Vec<Difference>,
) {
    for (path, now) in after {
        match (before.get(path).cloned().flatten(), now) {
            (None, Some(_)) => push(
                out,
                format!("the file {path} was written (it was not there)"),
                format!("Remove-Item -LiteralPath {} -Force", q(path)),
            ),
            (Some(_), None) => push(
                out,
                format!("the file {path} is gone"),
                "put it back from a backup, or run the command again to completion".to_owned(),
            ),
            (Some(a), Some(b)) if &a != b => push(
                out,
                format!("the file {path} has other contents than before"),
                "put it back from a backup, or run the command again to completion".to_owned(),
            ),
            _ => {}
        }
    }
}

fn ps_key(key: &str) -> String {
    match key.split_once('\\') {
        Some((root, rest)) => q(&format!("{root}:\\{rest}")),
        None => q(key),
    }
}

fn set_value(key: &str, name: &str, v: &RegValue) -> String {
    let (value, ty) = match v {
        RegValue::Sz(s) => (q(s), "String"),
        RegValue::ExpandSz(s) => (q(s), "ExpandString"),
        RegValue::Dword(d) => (d.to_string(), "DWord"),
        RegValue::MultiSz(list) => (
            format!(
                "@({})",
                list.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ")
            ),
            "MultiString",
        ),
    };
    format!(
        "New-ItemProperty -LiteralPath {} -Name {} -Value {value} -PropertyType {ty} -Force",
        ps_key(key),
        q(name)
    )
}

/// The registry values and keys of a snapshot.
pub(super) type RegistryState<'a> = (
    &'a BTreeMap<(String, String), Option<RegValue>>,
    &'a BTreeMap<String, bool>,
);

pub(super) fn registry(
    before: RegistryState<'_>,
    after: RegistryState<'_>,
    out: &mut Vec<Difference>,
) {
    let made: Vec<&String> = after
        .1
        .iter()
        .filter(|(k, exists)| **exists && !before.1.get(*k).copied().unwrap_or(false))
        .map(|(k, _)| k)
        .collect();
    for k in &made {
        push(
            out,
            format!("the registry key {k} was created"),
            format!("Remove-Item -LiteralPath {} -Recurse", ps_key(k)),
        );
    }
    let in_made = |key: &str| made.iter().any(|m| m.eq_ignore_ascii_case(key));
    for ((key, name), now) in after.0 {
        let was = before
            .0
            .get(&(key.clone(), name.clone()))
            .cloned()
            .flatten();
        let what = format!("{key}\\{name}");
        match (was, now) {
            (None, Some(_)) if !in_made(key) => push(
                out,
                format!("the registry value {what} was set"),
                format!(
                    "Remove-ItemProperty -LiteralPath {} -Name {}",
                    ps_key(key),
                    q(name)
                ),
            ),
            (Some(v), None) => push(
                out,
                format!("the registry value {what} is gone"),
                set_value(key, name, &v),
            ),
            (Some(v), Some(n)) if &v != n => push(
                out,
                format!("the registry value {what} changed"),
                set_value(key, name, &v),
            ),
            _ => {}
        }
    }
}

pub(super) fn firewall(
    before: &BTreeMap<String, Option<FirewallRule>>,
    after: &BTreeMap<String, Option<FirewallRule>>,
    out: &mut Vec<Difference>,
) {
    let add = |r: &FirewallRule| {
        format!(
            "New-NetFirewallRule -DisplayName {} -Direction Inbound -Protocol {:?} -LocalPort {} -RemoteAddress {} -Action {}",
            q(&r.name),
            r.protocol,
            r.local_port,
            r.remote_addresses_text(),
            if r.allow { "Allow" } else { "Block" }
        )
    };
    for (name, now) in after {
        match (before.get(name).cloned().flatten(), now) {
            (None, Some(_)) => push(
                out,
                format!("the firewall rule {name} was added"),
                format!("Remove-NetFirewallRule -DisplayName {}", q(name)),
            ),
            (Some(r), None) => push(out, format!("the firewall rule {name} is gone"), add(&r)),
            (Some(r), Some(n)) if &r != n => push(
                out,
                format!("the firewall rule {name} changed"),
                format!(
                    "Remove-NetFirewallRule -DisplayName {}; {}",
                    q(name),
                    add(&r)
                ),
            ),
            _ => {}
        }
    }
}
