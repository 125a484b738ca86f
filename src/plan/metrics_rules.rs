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

/// Whether two names are one rule's: the firewall reads rules by name in any case
/// (`Firewall::firewall_rules`, as the Windows host and its stand-ins do; Microsoft's
/// INetFwRules::Item and Remove pages say only "Name of the rule", not how it is compared),
/// so two names that differ only in case are one name to the plan as well.
pub(crate) fn same_name(a: &str, b: &str) -> bool {
    a.eq_ignore_ascii_case(b)
}

/// Whether `name` is the name `wanted` gives a metrics rule, for some port, in any case.
fn is_metrics_rule(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix(&PREFIX.to_ascii_lowercase()) else {
        return false;
    };
    WHO.iter().any(|who| {
        rest.strip_prefix(&who.to_ascii_lowercase())
            .and_then(|r| r.strip_prefix(" tcp "))
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
/// listens on its port (`INetFwRule::ApplicationName`): calicoctl-win.exe under the root for
/// CalicoNode's endpoint, `felix` for Felix's, so that another program on the port is not
/// reached through it.
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
    .map(|(who, port, program)| FirewallRule {
        name: format!("{PREFIX}{who} TCP {port}"),
        description: firewall::MARKER.into(),
        protocol: Protocol::Tcp,
        direction: Direction::In,
        program: Some(program.to_owned()),
        local_port: port,
        allow: true,
        enabled: true,
        profiles: crate::host::ALL_PROFILES,
        remote_addresses: m.source_ranges.iter().map(ToString::to_string).collect(),
        unset: Default::default(),
    })
    .collect()
}

/// Adds the actions that take the host's metrics rules to the wanted ones, and returns the
/// rules the install then owns. A rule is removed only while it is the one rule of its name
/// and as made (`firewall::ours`: every property we set, the description marker too): beside another rule of
/// its name (an administrator's), or changed, it stays and is no longer ours. A wanted rule
/// is made only where no rule has its name; a name another rule holds (an administrator's,
/// or ours changed and no longer recorded) refuses the plan, before any change: Windows would
/// keep the two side by side, and removal by name could not tell them apart.
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
            .filter(|(n, _)| same_name(n, &rule.name))
            .map(|(_, made)| *made)
            .find(|made| firewall::ours(&now, *made));
        if now.is_empty() || removed.iter().any(|n| same_name(n, &rule.name)) {
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

/// The removals of the rules that are ours and no longer wanted: the recorded rules the
/// config no longer wants as they are, and the rules an interrupted run added whose name the
/// config no longer wants (metrics turned off, or a port changed, before that run was
/// finished). Each only while it is the one rule of its name, as made. Returns their names.
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
            .filter(|n| !wanted.iter().any(|w| same_name(&w.name, n))),
    );
    unwanted.sort_unstable();
    // One name in any case once: the first of it.
    let mut seen: Vec<&str> = Vec::new();
    unwanted.retain(|n| {
        let first = !seen.iter().any(|s| same_name(s, n));
        seen.push(n);
        first
    });
    let mut removed = Vec::new();
    for name in unwanted {
        let now = host.firewall_rules(name)?;
        // What we made under the name: the record's copy, then every entry of the journal (a
        // cut-off run that made the recorded rule again with another range journaled the new
        // one, and the firewall holds that, unlike the record).
        let made: Option<Option<&FirewallRule>> = previous
            .iter()
            .filter(|r| same_name(&r.name, name))
            .map(Some)
            .chain(
                added
                    .iter()
                    .filter(|(n, _)| same_name(n, name))
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
mod tests {
    use super::*;

    const FELIX: &str = r"C:\CalicoWindows\calico-node.exe";
    use crate::apply::journal::Entry;
    use crate::host::Firewall;

    fn config(sets: &[&str]) -> Config {
        crate::config::load(&crate::config::Inputs {
            sets: ["node.name=win-1"]
                .iter()
                .chain(sets)
                .map(|s| (*s).to_owned())
                .collect(),
            ..crate::config::Inputs::default()
        })
        .expect("config")
        .config
    }

    fn on(port: &str) -> Config {
        config(&[
            "metrics.enabled=true",
            "metrics.source_ranges=10.0.0.0/8",
            &format!("metrics.port={port}"),
        ])
    }

    /// A journal whose run added these rules and was cut off.
    fn added(names: &[&str]) -> Journal {
        Journal {
            command: "reconfigure".into(),
            entries: names
                .iter()
                .map(|n| Entry {
                    action: format!("add firewall rule \"{n}\""),
                    undo: Undo::RemoveFirewallRule {
                        name: (*n).to_owned(),
                        rule: None,
                    },
                    done: true,
                    irreversible: false,
                })
                .collect(),
            ..Journal::default()
        }
    }

    fn removed(actions: &[Action]) -> Vec<&str> {
        actions
            .iter()
            .filter_map(|a| match a {
                Action::RemoveFirewallRule { name, .. } => Some(name.as_str()),
                _ => None,
            })
            .collect()
    }

    /// A reconfigure that turned metrics on was cut off after adding its rules; the rerun,
    /// with metrics off or another port, removes the rules that run added (its journal says
    /// so), and no rule of a like name that no record or journal names (it once left them
    /// open to the sources for good, owned by no record).
    #[test]
    fn rules_an_interrupted_run_added_go_when_the_rerun_no_longer_wants_them() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        for rule in wanted(&on("9095"), FELIX) {
            host.firewall_add(&rule).expect("add");
        }
        let someone_elses = FirewallRule {
            name: "Calico metrics calicoctl-win TCP 9200".into(),
            local_port: 9200,
            ..wanted(&on("9095"), FELIX)[0].clone()
        };
        host.firewall_add(&someone_elses).expect("add");
        let journal = added(&[
            "Calico metrics calicoctl-win TCP 9095",
            "Calico metrics Felix TCP 9091",
            crate::layout::VXLAN_RULE,
        ]);

        let mut actions = Vec::new();
        let owned = plan(
            &host,
            &config(&[]),
            FELIX,
            &[],
            Some(&journal),
            &mut actions,
        )
        .expect("plan");
        assert!(owned.is_empty());
        assert_eq!(
            removed(&actions),
            [
                "Calico metrics Felix TCP 9091",
                "Calico metrics calicoctl-win TCP 9095"
            ]
        );

        // Another port: the old port's rule goes, the new one comes, Felix's stays.
        let mut actions = Vec::new();
        let owned =
            plan(&host, &on("9096"), FELIX, &[], Some(&journal), &mut actions).expect("plan");
        assert_eq!(owned.len(), 2);
        assert_eq!(removed(&actions), ["Calico metrics calicoctl-win TCP 9095"]);
        assert!(
            actions
                .iter()
                .any(|a| matches!(a, Action::AddFirewallRule { rule }
                if rule.name == "Calico metrics calicoctl-win TCP 9096")),
            "{actions:?}"
        );
    }

    #[test]
    fn only_the_exact_names_of_metrics_rules_are_metrics_rules() {
        assert!(is_metrics_rule("Calico metrics Felix TCP 9091"));
        assert!(is_metrics_rule("Calico metrics calicoctl-win TCP 9095"));
        for other in [
            crate::layout::VXLAN_RULE,
            "Calico metrics Felix TCP 09091",
            "Calico metrics Felix TCP 9091 (copy)",
            "Calico metrics Typha TCP 9093",
        ] {
            assert!(!is_metrics_rule(other), "{other}");
        }
    }

    /// Windows reads a rule's remote addresses back in its own notation (a subnet with its
    /// mask, a single address with none): the rule is the one wanted all the same, and a rerun
    /// leaves it (it once removed and added it again on every run after an interrupted one).
    #[test]
    fn a_rule_read_back_in_mask_notation_is_the_rule_wanted() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let c = config(&[
            "metrics.enabled=true",
            "metrics.source_ranges=10.0.0.0/8,1.2.3.4/32",
        ]);
        let read_back = [
            vec![
                "10.0.0.0/255.0.0.0".to_owned(),
                "1.2.3.4/255.255.255.255".to_owned(),
            ],
            vec!["1.2.3.4".to_owned(), "10.0.0.0/8".to_owned()],
        ];
        for (rule, remote) in wanted(&c, FELIX).into_iter().zip(read_back) {
            host.firewall_add(&FirewallRule {
                remote_addresses: remote,
                ..rule
            })
            .expect("add");
        }
        let names: Vec<String> = wanted(&c, FELIX).into_iter().map(|r| r.name).collect();
        let journal = added(&names.iter().map(String::as_str).collect::<Vec<_>>());
        let mut actions = Vec::new();
        let owned = plan(&host, &c, FELIX, &[], Some(&journal), &mut actions).expect("plan");
        assert_eq!(owned.len(), 2);
        assert!(actions.is_empty(), "{actions:?}");
    }

    /// A recorded rule is removed only as install made it: one an administrator made again
    /// under its name (another program, another range) stays when metrics go off, and when
    /// the port's rule is wanted again with another range the plan is refused, naming it,
    /// rather than a second rule of its name made beside it. (It was removed by its name.)
    #[test]
    fn a_recorded_rule_made_again_by_an_administrator_stays() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let made = wanted(&on("9095"), FELIX);
        let admins = FirewallRule {
            program: None,
            remote_addresses: vec!["0.0.0.0/0".into()],
            ..made[0].clone()
        };
        host.firewall_add(&admins).expect("add");
        host.firewall_add(&made[1]).expect("add");
        let mut actions = Vec::new();
        let owned = plan(&host, &config(&[]), FELIX, &made, None, &mut actions).expect("plan");
        assert!(owned.is_empty());
        assert_eq!(removed(&actions), ["Calico metrics Felix TCP 9091"]);
        // Wanted again with another range: refused, naming the administrator's rule.
        let wider = config(&[
            "metrics.enabled=true",
            "metrics.source_ranges=10.0.0.0/16",
            "metrics.port=9095",
        ]);
        let err = plan(&host, &wider, FELIX, &made, None, &mut Vec::new())
            .expect_err("refused")
            .to_string();
        assert!(
            err.contains("'Calico metrics calicoctl-win TCP 9095' cannot be made: the firewall holds one rule of that name, not as calicoctl-win made it"),
            "{err}"
        );
    }

    /// A recorded rule an administrator changed in one property install sets (its
    /// description marker, its protocol, its profiles, its direction, its action) is no longer
    /// ours: it stays when metrics go off, and the plan wanting it again is refused.
    #[test]
    fn a_recorded_rule_changed_in_any_property_we_set_stays() {
        let edits: [fn(&mut FirewallRule); 5] = [
            |r| r.description = "Prometheus from the monitoring subnet".into(),
            |r| r.protocol = Protocol::Any,
            |r| r.profiles = 1,
            |r| r.direction = Direction::Out,
            |r| r.allow = false,
        ];
        for edit in edits {
            let dir = tempfile::tempdir().expect("dir");
            let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
            let made = wanted(&on("9095"), FELIX);
            for rule in &made {
                host.firewall_add(rule).expect("add");
            }
            host.admin_edit_firewall_rules(&made[0].name, edit)
                .expect("admin edit");
            let mut actions = Vec::new();
            plan(&host, &config(&[]), FELIX, &made, None, &mut actions).expect("plan");
            assert_eq!(removed(&actions), ["Calico metrics Felix TCP 9091"]);
            let wider = config(&[
                "metrics.enabled=true",
                "metrics.source_ranges=10.0.0.0/16",
                "metrics.port=9095",
            ]);
            plan(&host, &wider, FELIX, &made, None, &mut Vec::new()).expect_err("refused");
        }
    }

    /// Each removal carries the rule as the record or the journal says it was made, so that
    /// it is judged again as it runs.
    #[test]
    fn a_removal_carries_the_rule_as_made() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let made = wanted(&on("9095"), FELIX);
        for rule in &made {
            host.firewall_add(rule).expect("add");
        }
        let mut actions = Vec::new();
        plan(&host, &config(&[]), FELIX, &made, None, &mut actions).expect("plan");
        let carried: Vec<Option<&FirewallRule>> = actions
            .iter()
            .filter_map(|a| match a {
                Action::RemoveFirewallRule { made, .. } => Some(made.as_ref()),
                _ => None,
            })
            .collect();
        assert_eq!(carried, [Some(&made[1]), Some(&made[0])]);
    }

    /// Another rule of a recorded rule's name beside it: neither is removed when metrics go
    /// off (removal by name could take either), and a rule an interrupted run added is not
    /// removed beside another of its name either.
    #[test]
    fn a_rule_beside_another_of_its_name_is_not_removed() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let made = wanted(&on("9095"), FELIX);
        for rule in &made {
            host.firewall_add(rule).expect("add");
            let admins = FirewallRule {
                program: None,
                ..rule.clone()
            };
            host.admin_add_firewall_rule(&admins).expect("admin add");
        }
        let mut actions = Vec::new();
        plan(&host, &config(&[]), FELIX, &made, None, &mut actions).expect("plan");
        assert_eq!(removed(&actions), Vec::<&str>::new());
        let journal = added(&["Calico metrics calicoctl-win TCP 9095"]);
        let mut actions = Vec::new();
        plan(
            &host,
            &config(&[]),
            FELIX,
            &[],
            Some(&journal),
            &mut actions,
        )
        .expect("plan");
        assert_eq!(removed(&actions), Vec::<&str>::new());
    }

    /// A run that made an interrupted run's rule again with another range was cut off in
    /// turn: the journal names the rule twice (the first range, then the second) and the
    /// firewall holds the second. It is the journal's all the same: removed with metrics
    /// off, made again with a third range (it was judged by the first entry only: left for
    /// good, or the plan refused).
    #[test]
    fn a_rule_journaled_twice_is_judged_by_every_entry() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let ranged = |r: &str| {
            config(&[
                "metrics.enabled=true",
                &format!("metrics.source_ranges={r}"),
                "metrics.port=9095",
            ])
        };
        let (a, b) = (
            wanted(&ranged("10.0.0.0/8"), FELIX),
            wanted(&ranged("10.1.0.0/16"), FELIX),
        );
        host.firewall_add(&b[0]).expect("add");
        let mut journal = Journal::default();
        for made in [&a[0], &b[0]] {
            journal.entries.push(Entry {
                action: format!("add firewall rule \"{}\"", made.name),
                undo: Undo::RemoveFirewallRule {
                    name: made.name.clone(),
                    rule: Some(made.clone()),
                },
                done: true,
                irreversible: false,
            });
        }
        let mut actions = Vec::new();
        plan(
            &host,
            &config(&[]),
            FELIX,
            &[],
            Some(&journal),
            &mut actions,
        )
        .expect("plan");
        assert_eq!(removed(&actions), [b[0].name.as_str()]);
        let mut actions = Vec::new();
        let third = ranged("10.2.0.0/16");
        plan(&host, &third, FELIX, &[], Some(&journal), &mut actions).expect("not refused");
        assert_eq!(removed(&actions), [b[0].name.as_str()]);
        assert!(
            actions
                .iter()
                .any(|x| matches!(x, Action::AddFirewallRule { rule }
                if rule.name == b[0].name && rule.remote_addresses == ["10.2.0.0/16"])),
            "{actions:?}"
        );
    }

    /// A reconfigure changing the range removed the recorded rule and added it again with the
    /// new range, and was cut off; the rerun, with metrics off, finds the new rule, unlike the
    /// record's copy but as the journal says it was made: it is removed (it was judged by the
    /// record's copy alone, left open to the new range for good, and the record dropped it).
    #[test]
    fn a_recorded_rule_made_again_by_a_cut_off_run_is_judged_by_the_journal_too() {
        let dir = tempfile::tempdir().expect("dir");
        let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
        let recorded = wanted(&on("9095"), FELIX);
        let again = wanted(
            &config(&[
                "metrics.enabled=true",
                "metrics.source_ranges=10.1.0.0/16",
                "metrics.port=9095",
            ]),
            FELIX,
        );
        host.firewall_add(&again[0]).expect("add");
        host.firewall_add(&recorded[1]).expect("add");
        let journal = Journal {
            command: "reconfigure".into(),
            entries: vec![Entry {
                action: format!("add firewall rule \"{}\"", again[0].name),
                undo: Undo::RemoveFirewallRule {
                    name: again[0].name.clone(),
                    rule: Some(again[0].clone()),
                },
                done: true,
                irreversible: false,
            }],
            ..Journal::default()
        };
        let mut actions = Vec::new();
        let owned = plan(
            &host,
            &config(&[]),
            FELIX,
            &recorded,
            Some(&journal),
            &mut actions,
        )
        .expect("plan");
        assert!(owned.is_empty());
        assert_eq!(
            removed(&actions),
            [recorded[1].name.as_str(), recorded[0].name.as_str()]
        );
    }

    /// Each rule lets in only the program that listens on its port.
    #[test]
    fn each_rule_names_the_program_that_listens() {
        let rules = wanted(&on("9095"), FELIX);
        assert_eq!(
            rules[0].program.as_deref(),
            Some(r"C:\CalicoWindows\calicoctl-win.exe")
        );
        assert_eq!(rules[1].program.as_deref(), Some(FELIX));
    }
}
