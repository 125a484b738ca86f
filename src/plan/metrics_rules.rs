//! The firewall rules of the metrics ports: one per port, each open only to
//! `metrics.source_ranges`, owned by the install record and removed by uninstall.

use crate::apply::Action;
use crate::apply::journal::{Journal, Undo};
use crate::config::Config;
use crate::host::{FirewallRule, Host, Protocol};

/// The rules the config wants: none with metrics off.
pub fn wanted(c: &Config) -> Vec<FirewallRule> {
    let m = &c.metrics;
    if !m.enabled {
        return Vec::new();
    }
    [("calicoctl-win", m.port.0), ("Felix", m.felix_port.0)]
        .into_iter()
        .map(|(who, port)| FirewallRule {
            name: format!("Calico metrics {who} TCP {port}"),
            protocol: Protocol::Tcp,
            local_port: port,
            allow: true,
            enabled: true,
            profiles: crate::host::ALL_PROFILES,
            remote_addresses: m.source_ranges.iter().map(ToString::to_string).collect(),
        })
        .collect()
}

/// Adds the actions that take the host's metrics rules to the wanted ones, and returns the
/// rules the install then owns. A rule it owned and no longer wants (metrics off, a port or
/// range changed) is removed; a rule of a wanted name that is not ours is left as it is.
pub fn plan(
    host: &dyn Host,
    c: &Config,
    previous: &[FirewallRule],
    journal: Option<&Journal>,
    actions: &mut Vec<Action>,
) -> anyhow::Result<Vec<FirewallRule>> {
    let wanted = wanted(c);
    // Added by an interrupted run: ours, as the record would have said.
    let added: Vec<&str> = journal
        .iter()
        .flat_map(|j| &j.entries)
        .filter_map(|e| match &e.undo {
            Undo::RemoveFirewallRule { name } => Some(name.as_str()),
            _ => None,
        })
        .collect();
    let ours = |name: &str| previous.iter().any(|r| r.name == name) || added.contains(&name);
    let mut owned = Vec::new();
    for old in previous.iter().filter(|r| !wanted.contains(r)) {
        if host.firewall_rule(&old.name)?.is_some() {
            actions.push(Action::RemoveFirewallRule {
                name: old.name.clone(),
            });
        }
    }
    for rule in wanted {
        let remove = Action::RemoveFirewallRule {
            name: rule.name.clone(),
        };
        let add = Action::AddFirewallRule { rule: rule.clone() };
        match host.firewall_rule(&rule.name)? {
            Some(now) if now == rule => {}
            // Someone else's rule of that name: left as it is, and not ours.
            Some(_) if !ours(&rule.name) => continue,
            // Ours, changed since by an administrator: left as it is (uninstall removes it).
            Some(_) if previous.contains(&rule) => {}
            // Ours with another port or range: removed above.
            Some(_) if previous.iter().any(|r| r.name == rule.name) => actions.push(add),
            // Added by an interrupted run with another range.
            Some(_) => actions.extend([remove, add]),
            None => actions.push(add),
        }
        owned.push(rule);
    }
    Ok(owned)
}
