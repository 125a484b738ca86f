//! The firewall rules of the metrics ports: one per port, each open only to
//! `metrics.source_ranges`, owned by the install record and removed by uninstall.

use crate::apply::Action;
use crate::apply::journal::{Journal, Undo};
use crate::config::Config;
use crate::host::{Direction, FirewallRule, Host, HostResult, Protocol, firewall};
use crate::plan::desired::DesiredFile;

const PREFIX: &str = "Calico metrics ";
/// Who serves a metrics port, as the rule's name says it.
const WHO: [&str; 2] = ["calicoctl-win", "Felix"];

/// Whether `name` is the name `wanted` gives a metrics rule, for some port.
fn is_metrics_rule(name: &str) -> bool {
    let Some(rest) = name.strip_prefix(PREFIX) else {
        return false;
    };
    WHO.iter().any(|who| {
        rest.strip_prefix(who)
            .and_then(|r| r.strip_prefix(" TCP "))
            .is_some_and(|port| port.parse::<u16>().is_ok_and(|p| p.to_string() == port))
    })
}

/// The binary Felix runs as: the release's calico.exe when it has one (CalicoFelix picks it
/// first, `supervise::settings::Layout::detect`), else calico-node.exe, under the root.
pub fn felix_exe(host: &dyn Host, c: &Config, files: &[DesiredFile]) -> HostResult<String> {
    let root = c.root();
    let calico = root.path("calico.exe");
    let listed = files.iter().any(|f| f.path.eq_ignore_ascii_case(&calico));
    Ok(if listed || host.file_access(&calico)?.is_some() {
        calico
    } else {
        root.path("calico-node.exe")
    })
}

/// The rules the config wants: none with metrics off. Each lets in only the program that
/// listens on its port (`INetFwRule::ApplicationName`): calicoctl-win.exe, or `felix`.
pub fn wanted(c: &Config, felix: &str) -> Vec<FirewallRule> {
    let m = &c.metrics;
    if !m.enabled {
        return Vec::new();
    }
    let ours = c.root().self_exe();
    [
        (WHO[0], m.port.0, ours.as_str()),
        (WHO[1], m.felix_port.0, felix),
    ]
    .into_iter()
    .map(|(who, port, program)| {
        let from = m.source_ranges.iter().map(ToString::to_string).collect();
        let name = format!("{PREFIX}{who} TCP {port}");
        inbound(name, Protocol::Tcp, port, Some(program), from)
    })
    .collect()
}

/// An inbound rule allowing `port` as calicoctl-win makes it: marked ours, on every profile,
/// from `from` (empty: any address).
pub fn inbound(
    name: String,
    protocol: Protocol,
    port: u16,
    program: Option<&str>,
    from: Vec<String>,
) -> FirewallRule {
    FirewallRule {
        name,
        description: firewall::MARKER.into(),
        protocol,
        direction: Direction::In,
        program: program.map(str::to_owned),
        local_port: port,
        allow: true,
        enabled: true,
        profiles: crate::host::ALL_PROFILES,
        remote_addresses: from,
        unset: Default::default(),
    }
}

/// Adds the actions that take the host's metrics rules to the wanted ones; returns the rules
/// the install then owns. A wanted rule is made only where no rule has its name, else the plan
/// is refused before any change (removal is by name).
pub fn plan(
    host: &dyn Host,
    c: &Config,
    felix: &str,
    previous: &[FirewallRule],
    journal: Option<&Journal>,
    actions: &mut Vec<Action>,
) -> anyhow::Result<Vec<FirewallRule>> {
    let wanted = wanted(c, felix);
    // Added by an interrupted run: ours, as the record would have said, with the rule it
    // added when its journal says it. Only metrics rules: the journal names the VXLAN rule
    // too, which is not this plan's.
    let added: Vec<(&str, Option<&FirewallRule>)> = journal
        .iter()
        .flat_map(|j| &j.entries)
        .filter_map(|e| match &e.undo {
            Undo::RemoveFirewallRule { name, rule } if is_metrics_rule(name) => {
                Some((name.as_str(), rule.as_ref()))
            }
            _ => None,
        })
        .collect();
    let removed = remove_unwanted(host, &wanted, previous, &added, actions)?;
    let mut owned = Vec::new();
    for rule in wanted {
        let now = host.firewall_rules(&rule.name)?;
        // Every entry of the name: a run that made it again with another range journaled
        // it a second time, and the firewall holds the latest.
        let journaled = added
            .iter()
            .filter(|(n, _)| *n == rule.name)
            .map(|(_, made)| *made)
            .find(|made| firewall::ours(&now, *made));
        if now.is_empty() || removed.contains(&rule.name) {
            actions.push(Action::AddFirewallRule { rule: rule.clone() });
        } else if firewall::only(&now, &rule) || previous.iter().any(|r| r.same(&rule)) {
            // As wanted; or ours as recorded, changed since or joined by another rule of its
            // name: left as it is, still recorded, and uninstall says so.
        } else if let Some(made) = journaled {
            // Added by an interrupted run with another range: made again.
            actions.push(Action::RemoveFirewallRule {
                name: rule.name.clone(),
                made: made.cloned(),
            });
            actions.push(Action::AddFirewallRule { rule: rule.clone() });
        } else {
            anyhow::bail!(
                "the metrics firewall rule '{0}' cannot be made: the firewall holds {1}, left as it is (a second rule of that name beside it could not be told apart by removal, which is by name); remove or rename it (Get-NetFirewallRule -DisplayName '{0}'), or choose another port (metrics.port, metrics.felix_port)",
                rule.name,
                firewall::held(&now)
            );
        }
        owned.push(rule);
    }
    Ok(owned)
}

/// The removals of our rules no longer wanted, recorded or added by an interrupted run, each
/// only while it is the one rule of its name, as made. Returns their names.
fn remove_unwanted(
    host: &dyn Host,
    wanted: &[FirewallRule],
    previous: &[FirewallRule],
    added: &[(&str, Option<&FirewallRule>)],
    actions: &mut Vec<Action>,
) -> HostResult<Vec<String>> {
    let mut unwanted: Vec<&str> = previous
        .iter()
        .filter(|r| !wanted.iter().any(|w| w.same(r)))
        .map(|r| r.name.as_str())
        .collect();
    unwanted.extend(
        added
            .iter()
            .map(|(n, _)| *n)
            .filter(|n| !wanted.iter().any(|w| w.name == *n)),
    );
    unwanted.sort_unstable();
    unwanted.dedup();
    let mut removed = Vec::new();
    for name in unwanted {
        let now = host.firewall_rules(name)?;
        // What we made under the name: the record's copy, then every entry of the journal (a
        // cut-off run that made the recorded rule again with another range journaled the new
        // one, and the firewall holds that, unlike the record).
        let made: Option<Option<&FirewallRule>> = previous
            .iter()
            .filter(|r| r.name == name)
            .map(Some)
            .chain(
                added
                    .iter()
                    .filter(|(n, _)| *n == name)
                    .map(|(_, made)| *made),
            )
            .find(|made| firewall::ours(&now, *made));
        if let Some(made) = made {
            actions.push(Action::RemoveFirewallRule {
                name: name.into(),
                made: made.cloned(),
            });
            removed.push(name.to_owned());
        }
    }
    Ok(removed)
}

#[cfg(test)]
#[path = "metrics_rules_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "metrics_rules_contract_tests.rs"]
mod contract;
