//! The host before a command and after its rollback, compared: what a failed run leaves
//! different, each with the command that puts it back (what the plan names, and whole what the
//! vSwitch changes).

use super::Action;
use crate::host::{FirewallRule, Host, HostResult, InterfaceAddress, RegValue, ServiceState};
use std::collections::BTreeMap;

/// What a snapshot looks at.
#[derive(Clone, Debug, Default)]
pub struct Scope {
    services: Vec<String>,
    files: Vec<String>,
    registry: Vec<(String, String)>,
    keys: Vec<String>,
    firewall: Vec<String>,
}

impl Scope {
    /// The services, files, registry values and firewall rules `actions` touch, and the values
    /// CalicoNode keeps in Calico's key.
    pub fn of_plan(actions: &[Action]) -> Self {
        let mut s = Self::default();
        for a in actions {
            match a {
                Action::StopService { name }
                | Action::StartService { name }
                | Action::DeleteService { name, .. } => s.services.push(name.clone()),
                Action::CreateService { spec } | Action::UpdateService { spec, .. } => {
                    s.services.push(spec.name.clone())
                }
                Action::WriteFile { path, .. }
                | Action::RemoveFile { path }
                | Action::RestrictFile { path } => s.files.push(path.clone()),
                Action::SetRegistryValue { key, name, .. }
                | Action::DeleteRegistryValue { key, name } => {
                    s.registry.push((key.clone(), name.clone()));
                    s.keys.push(key.clone());
                }
                Action::DeleteRegistryKey { key } => s.keys.push(key.clone()),
                Action::AddFirewallRule { rule } => s.firewall.push(rule.name.clone()),
                Action::RemoveFirewallRule { name, .. } => s.firewall.push(name.clone()),
                _ => {}
            }
        }
        let calico = crate::layout::CALICO_KEY;
        // A service's last child (`layout::CHILD_VALUES`) changes with every restart of it, a
        // rollback's included, kube-proxy's recorded version (`KUBE_PROXY_VERSION_VALUE`) is
        // forgotten and written again at each of its starts, and CalicoNode's metrics
        // endpoint's listening and connections (`METRICS_SCRAPES_VALUE`) change with each
        // restart and scrape: no change of the command's to measure.
        let restarts = [
            crate::layout::METRICS_SCRAPES_VALUE,
            crate::layout::KUBE_PROXY_VERSION_VALUE,
        ];
        for name in crate::layout::CALICO_VALUES {
            if !crate::layout::CHILD_VALUES.contains(&name) && !restarts.contains(&name) {
                s.registry.push((calico.to_owned(), name.to_owned()));
            }
        }
        s.keys.push(calico.to_owned());
        for v in [&mut s.services, &mut s.files, &mut s.keys, &mut s.firewall] {
            v.sort_by_key(|x| x.to_ascii_lowercase());
            v.dedup_by(|a, b| a.eq_ignore_ascii_case(b));
        }
        s.registry.sort();
        s.registry.dedup();
        s
    }
}

/// A service as the comparison sees it: its state and command line.
type ServiceSeen = (ServiceState, String);

/// The host as one command found it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    services: BTreeMap<String, Option<ServiceSeen>>,
    /// A file's SHA-256, `None` when it is missing.
    files: BTreeMap<String, Option<String>>,
    registry: BTreeMap<(String, String), Option<RegValue>>,
    keys: BTreeMap<String, bool>,
    /// Every HNS network: name and type (ids change when a network is made again).
    networks: Vec<(String, String)>,
    addresses: Vec<InterfaceAddress>,
    /// Every route by destination, prefix and next hop (a route moving with its address to
    /// the vSwitch's interface is that address's move, not a route's).
    routes: Vec<crate::host::Route>,
    firewall: BTreeMap<String, Option<FirewallRule>>,
}

/// Reads what `scope` names from the host. HNS being unavailable reads as no networks.
pub fn take(host: &dyn Host, scope: &Scope) -> HostResult<Snapshot> {
    let mut s = Snapshot::default();
    for name in &scope.services {
        let seen = host.service_query(name)?.map(|i| (i.state, i.command_line));
        s.services.insert(name.clone(), seen);
    }
    for path in &scope.files {
        s.files.insert(path.clone(), file_hash(host, path)?);
    }
    for (key, name) in &scope.registry {
        s.registry
            .insert((key.clone(), name.clone()), host.reg_get(key, name)?);
    }
    for key in &scope.keys {
        s.keys.insert(key.clone(), host.reg_key_exists(key)?);
    }
    s.networks = host
        .hns_networks()
        .unwrap_or_default()
        .into_iter()
        .map(|n| (n.name, n.network_type))
        .collect();
    s.networks.sort();
    s.addresses = host.ipv4_addresses()?;
    s.routes = host.routes()?;
    for name in &scope.firewall {
        s.firewall.insert(name.clone(), host.firewall_rule(name)?);
    }
    Ok(s)
}

fn file_hash(host: &dyn Host, path: &str) -> HostResult<Option<String>> {
    if host.file_access(path)?.is_none() {
        return Ok(None);
    }
    host.sha256(path)
}

pub use super::snapshot_diff::Difference;

/// What differs between `before` and `after`, in the order to put it back: services first
/// (they hold files open), then HNS networks (deleting them gives the host its address and
/// routes back), then what remains.
pub fn differences(before: &Snapshot, after: &Snapshot) -> Vec<Difference> {
    let mut out = Vec::new();
    super::snapshot_diff::services(&before.services, &after.services, &mut out);
    let made = super::snapshot_diff::networks(&before.networks, &after.networks, &mut out);
    super::snapshot_diff::addresses(&before.addresses, &after.addresses, made, &mut out);
    super::snapshot_diff::routes(&before.routes, &after.routes, &before.addresses, &mut out);
    super::snapshot_diff::files(&before.files, &after.files, &mut out);
    super::snapshot_diff::registry(
        (&before.registry, &before.keys),
        (&after.registry, &after.keys),
        &mut out,
    );
    super::snapshot_diff::firewall(&before.firewall, &after.firewall, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::Registry as _;
    use crate::layout::{CALICO_KEY, KUBE_PROXY_VERSION_VALUE};

    /// A rollback's restart of kube-proxy forgets its recorded version while it asks again:
    /// no difference of the command's.
    #[test]
    fn kube_proxys_recorded_version_is_no_change_of_the_commands() {
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        let scope = Scope::of_plan(&[]);
        let answer = RegValue::Sz("Kubernetes v1.32.5".into());
        host.reg_set(CALICO_KEY, KUBE_PROXY_VERSION_VALUE, &answer)
            .expect("record");
        let before = take(&host, &scope).expect("before");
        host.reg_delete_value(CALICO_KEY, KUBE_PROXY_VERSION_VALUE)
            .expect("forget");
        let after = take(&host, &scope).expect("after");
        assert!(differences(&before, &after).is_empty());
    }
}
