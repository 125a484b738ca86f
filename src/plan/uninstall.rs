//! Uninstall's plan, from the install record alone: the services, exactly the recorded files,
//! the metrics ports' firewall rules, and with `--purge` Calico's HNS networks, the routes they took, the registry key, the
//! firewall rule, the logs (`--remove-logs`) and the directories install created.

use crate::apply::Action;
use crate::host::{FirewallRule, Host, HostResult, ServiceState, firewall};
use crate::installed::record::InstallRecord;
use crate::layout::{ADDRESSING_VALUE, CALICO_KEY, CALICO_VALUES, LEGACY_BOOT_VALUE};
use anyhow::Context as _;

pub struct Options {
    pub purge: bool,
    pub remove_logs: bool,
    /// The cluster's steps (the node's grant and condition), run once the services are gone
    /// and before any file goes, so that a rerun still finds the config naming the node.
    pub cluster_steps: Vec<Action>,
}

pub fn plan(host: &dyn Host, r: &InstallRecord, o: &Options) -> anyhow::Result<Vec<Action>> {
    let mut actions = services(host, r)?;
    // The cluster's steps: once CalicoNode is stopped (it sets the condition no more), and
    // while the config that names the node is still there for a rerun to read.
    actions.extend(o.cluster_steps.iter().cloned());
    for f in &r.files {
        // With it, the copy CalicoNode withholds while Calico's network is not ready.
        let withheld = format!("{}{}", f.path, crate::layout::WITHHELD_SUFFIX);
        for path in [&f.path, &withheld] {
            if host.file_access(path)?.is_some() {
                actions.push(Action::RemoveFile { path: path.clone() });
            }
        }
    }
    // What the services and Calico wrote while they ran (nodename, the token refresher's).
    let (runtime_files, runtime_dirs) = r.root().owned_paths();
    for path in runtime_files {
        if host.file_access(&path)?.is_some() {
            actions.push(Action::RemoveFile { path });
        }
    }
    actions.extend(forget_addressing(host)?);
    // The metrics ports: nothing serves them once the services are gone.
    actions.extend(remove_rules(host, &r.metrics_rules)?);
    if o.purge {
        purge(host, r, &mut actions)?;
    }
    // The event log source goes with the services that write under it.
    if let Some(outermost) = r.event_source_keys_created.first()
        && host.reg_key_exists(outermost)?
    {
        actions.push(Action::DeleteRegistryKey {
            key: outermost.clone(),
        });
    }
    if o.remove_logs {
        for path in crate::installed::record::service_logs(host, &r.logs_dir)? {
            actions.push(Action::RemoveFile { path });
        }
    }
    remove_record(host, r, &mut actions)?;
    // Directories that were there before install get back the access list they had.
    for p in &r.protected {
        let owned = r.dirs.iter().any(|d| d.eq_ignore_ascii_case(&p.path));
        if !owned && host.dir_exists(&p.path)? {
            actions.push(Action::RestoreSecurity {
                path: p.path.clone(),
                sddl: p.previous.clone(),
            });
        }
    }
    let mut dirs = r.dirs.clone();
    dirs.extend(runtime_dirs);
    if o.remove_logs {
        dirs.push(r.logs_dir.clone());
    }
    dirs.sort_by_key(|d| std::cmp::Reverse(d.matches('\\').count()));
    dirs.dedup();
    for d in dirs {
        if host.dir_exists(&d)? {
            actions.push(Action::RemoveDir { path: d });
        }
    }
    Ok(actions)
}

/// The addressing CalicoNode kept from before the vSwitch goes with the install: nothing puts
/// it back any more, and the External network it belongs to is deleted, or left to whoever
/// runs Calico next (`installed::addressing`).
pub fn forget_addressing(host: &dyn Host) -> HostResult<Option<Action>> {
    Ok(host
        .reg_get(CALICO_KEY, ADDRESSING_VALUE)?
        .is_some()
        .then(|| Action::DeleteRegistryValue {
            key: CALICO_KEY.into(),
            name: ADDRESSING_VALUE.into(),
        }))
}

/// The services stopped, felix and confd before the node they depend on, then deleted.
fn services(host: &dyn Host, r: &InstallRecord) -> HostResult<Vec<Action>> {
    let (mut stops, mut deletes) = (Vec::new(), Vec::new());
    for spec in r.services.iter().rev() {
        let Some(now) = host.service_query(&spec.name)? else {
            continue;
        };
        let name = spec.name.clone();
        if now.state != ServiceState::Stopped {
            stops.push(Action::StopService { name: name.clone() });
        }
        let restore = Some(spec.clone());
        deletes.push(Action::DeleteService { name, restore });
    }
    stops.extend(deletes);
    Ok(stops)
}

/// The sizes and times status compares (`plan::file_stat`), then the record itself.
fn remove_record(host: &dyn Host, r: &InstallRecord, actions: &mut Vec<Action>) -> HostResult<()> {
    let stats = r.root().file_stats();
    if host.file_access(&stats)?.is_some() {
        actions.push(Action::RemoveFile { path: stats });
    }
    if host.read_file(&r.path())?.is_some() {
        actions.push(Action::RemoveFile { path: r.path() });
    }
    Ok(())
}

/// The removal of each of these rules still on the host as install made it and alone under its
/// name (`firewall::only`); any other leaves every rule of that name (`changed_rules` says so).
/// Removal is by name (`INetFwRules::Remove`): it carries the rule as made, judged again as it runs.
fn remove_rules(host: &dyn Host, rules: &[FirewallRule]) -> HostResult<Vec<Action>> {
    let mut out = Vec::new();
    for rule in rules {
        if firewall::only(&host.firewall_rules(&rule.name)?, rule) {
            out.push(Action::RemoveFirewallRule {
                name: rule.name.clone(),
                made: Some(rule.clone()),
            });
        }
    }
    Ok(out)
}

/// The rules the record names that uninstall leaves because they are no longer as install
/// made them, or not alone under their name, each as a warning naming it and the command
/// that lists them.
pub fn changed_rules(host: &dyn Host, r: &InstallRecord, purge: bool) -> HostResult<Vec<String>> {
    let vxlan = r.firewall_rule.iter().filter(|_| purge);
    let mut out = Vec::new();
    for rule in r.metrics_rules.iter().chain(vxlan) {
        let now = host.firewall_rules(&rule.name)?;
        if !now.is_empty() && !firewall::only(&now, rule) {
            out.push(format!(
                "the firewall rule '{0}' is left as it is: the firewall holds {1} (an administrator's rule of that name, or ours changed since), and removal by name could take the wrong one; see them with Get-NetFirewallRule -DisplayName '{0}' and remove the ones not wanted",
                rule.name,
                firewall::held(&now)
            ));
        }
    }
    Ok(out)
}

/// What `--purge` removes beyond the install: Calico's HNS networks (and the routes the
/// vSwitch took, put back), the registry key or value, the firewall rule.
fn purge(host: &dyn Host, r: &InstallRecord, actions: &mut Vec<Action>) -> anyhow::Result<()> {
    // A backend without networks (none) never asks HNS, which such a host may lack.
    let networks = if r.networks.is_empty() {
        Vec::new()
    } else {
        host.hns_networks()
            .context("cannot list the HNS networks to purge")?
    };
    for n in networks {
        if r.networks.contains(&n.name) {
            actions.push(Action::DeleteNetwork {
                id: n.id.clone(),
                name: n.name.clone(),
            });
        }
    }
    if !r.routes_before.is_empty() {
        actions.push(Action::RestoreRoutes {
            routes: r.routes_before.clone(),
            addresses: r.addresses_before.clone(),
        });
    }
    if let Some(outermost) = r.registry_keys_created.first() {
        if host.reg_key_exists(outermost)? {
            actions.push(Action::DeleteRegistryKey {
                key: outermost.clone(),
            });
        }
    } else {
        // The key predates install (Calico's own install, migrated): calicoctl-win's values go,
        // the key stays with Calico's `LastBootTime` (calico.psm1 `Set-StoredLastBootTime`) and
        // the CNI's `PodDeleted` subkey; the addressing is `forget_addressing`'s.
        let ours = CALICO_VALUES
            .into_iter()
            .filter(|v| ![LEGACY_BOOT_VALUE, ADDRESSING_VALUE].contains(v));
        for name in ours {
            if host.reg_get(&r.registry_key, name)?.is_some() {
                actions.push(Action::DeleteRegistryValue {
                    key: r.registry_key.clone(),
                    name: name.into(),
                });
            }
        }
    }
    actions.extend(remove_rules(host, r.firewall_rule.as_slice())?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::{RegValue, Registry};
    use crate::layout::{BOOT_ID_VALUE, INSTALL_ROOT_VALUE, KUBE_PROXY_VERSION_VALUE};

    /// Where Calico's own install made the key, `--purge` deletes calicoctl-win's values in it
    /// and keeps the key with Calico's `LastBootTime`.
    #[test]
    fn purge_deletes_our_values_from_a_key_that_predates_install() {
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        for name in [
            LEGACY_BOOT_VALUE,
            INSTALL_ROOT_VALUE,
            BOOT_ID_VALUE,
            KUBE_PROXY_VERSION_VALUE,
        ] {
            host.reg_set(CALICO_KEY, name, &RegValue::Sz("x".into()))
                .expect("set");
        }
        let rec = InstallRecord {
            install_root: r"C:\CalicoWindows".into(),
            logs_dir: r"C:\CalicoWindows\logs".into(),
            registry_key: CALICO_KEY.into(),
            ..Default::default()
        };
        let options = Options {
            purge: true,
            remove_logs: false,
            cluster_steps: Vec::new(),
        };
        let mut deleted: Vec<&str> = Vec::new();
        let actions = plan(&host, &rec, &options).expect("plan");
        for a in &actions {
            match a {
                Action::DeleteRegistryValue { key, name } if key == CALICO_KEY => {
                    deleted.push(name)
                }
                Action::DeleteRegistryKey { key } => panic!("the key {key} is deleted"),
                _ => {}
            }
        }
        deleted.sort_unstable();
        assert_eq!(
            deleted,
            [BOOT_ID_VALUE, INSTALL_ROOT_VALUE, KUBE_PROXY_VERSION_VALUE]
        );
    }
}
