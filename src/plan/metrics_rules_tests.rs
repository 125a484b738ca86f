use super::*;

const FELIX: &str = r"C:\CalicoWindows\calico-node.exe";
use crate::apply::journal::Entry;
use crate::host::Firewall;

fn config(sets: &[&str]) -> Config {
    crate::config::tests::from_sets(&[&["node.name=win-1"], sets].concat())
}

/// Metrics on at `port` from 10.0.0.0/8.
fn on(port: &str) -> Config {
    ranged("10.0.0.0/8", port)
}

/// Metrics on at `port` from `range`.
fn ranged(range: &str, port: &str) -> Config {
    config(&[
        "metrics.enabled=true",
        &format!("metrics.source_ranges={range}"),
        &format!("metrics.port={port}"),
    ])
}

/// A journal whose run added these rules (named, or as made) and was cut off.
fn journal_of(rules: impl Iterator<Item = (String, Option<FirewallRule>)>) -> Journal {
    Journal {
        command: "reconfigure".into(),
        entries: rules
            .map(|(name, rule)| Entry {
                action: format!("add firewall rule \"{name}\""),
                undo: Undo::RemoveFirewallRule { name, rule },
                done: true,
                irreversible: false,
            })
            .collect(),
        ..Journal::default()
    }
}

fn added(names: &[&str]) -> Journal {
    journal_of(names.iter().map(|n| ((*n).to_owned(), None)))
}

fn added_as(rules: &[&FirewallRule]) -> Journal {
    journal_of(rules.iter().map(|r| (r.name.clone(), Some((*r).clone()))))
}

/// A simulated host in its own temporary directory (kept alive beside it).
fn sim() -> (tempfile::TempDir, crate::host::sim::SimHost) {
    let dir = tempfile::tempdir().expect("dir");
    let host = crate::host::sim::SimHost::open_or_create(dir.path(), None).expect("sim");
    (dir, host)
}

/// The actions of a plan with metrics off.
fn off(
    host: &crate::host::sim::SimHost,
    recorded: &[FirewallRule],
    journal: Option<&Journal>,
) -> Vec<Action> {
    let mut actions = Vec::new();
    let owned = plan(host, &config(&[]), FELIX, recorded, journal, &mut actions).expect("plan");
    assert!(owned.is_empty());
    actions
}

pub(super) fn removed(actions: &[Action]) -> Vec<&str> {
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
    let (_dir, host) = sim();
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

    assert_eq!(
        removed(&off(&host, &[], Some(&journal))),
        [
            "Calico metrics Felix TCP 9091",
            "Calico metrics calicoctl-win TCP 9095"
        ]
    );

    // Another port: the old port's rule goes, the new one comes, Felix's stays.
    let mut actions = Vec::new();
    let owned = plan(&host, &on("9096"), FELIX, &[], Some(&journal), &mut actions).expect("plan");
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
    let (_dir, host) = sim();
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

/// A recorded rule an administrator made again under its name (another program, another
/// range), changed in one property install sets (its description marker, its protocol, its
/// profiles, its direction, its action) or tightened through one it does not set (its local
/// addresses) is no longer ours: it stays when metrics go off, and the plan wanting it again is
/// refused rather than a second rule of its name made beside it. (It was removed by its name,
/// as ours: the unset properties were not read.) That each other unset property makes a rule
/// not ours is host::firewall_tests'
/// `a_rule_changed_in_a_property_we_do_not_set_is_not_ours_and_a_narrowed_one_opens_nothing`.
#[test]
fn a_recorded_rule_changed_in_any_property_stays() {
    type Edit = fn(&mut FirewallRule);
    let edits: [(&str, Edit); 7] = [
        ("made again", |r| {
            r.program = None;
            r.remote_addresses = vec!["0.0.0.0/0".into()];
        }),
        ("description", |r| {
            r.description = "Prometheus from the monitoring subnet".into()
        }),
        ("protocol", |r| r.protocol = Protocol::Any),
        ("profiles", |r| r.profiles = 1),
        ("direction", |r| r.direction = Direction::Out),
        ("action", |r| r.allow = false),
        ("local addresses", |r| {
            r.unset.local_addresses = "10.0.2.15".into()
        }),
    ];
    for (what, edit) in edits {
        let (_dir, host) = sim();
        let made = wanted(&on("9095"), FELIX);
        for rule in &made {
            host.firewall_add(rule).expect("add");
        }
        host.admin_edit_firewall_rules(&made[0].name, edit)
            .expect("admin edit");
        assert_eq!(
            removed(&off(&host, &made, None)),
            ["Calico metrics Felix TCP 9091"],
            "{what}"
        );
        plan(
            &host,
            &ranged("10.0.0.0/16", "9095"),
            FELIX,
            &made,
            None,
            &mut Vec::new(),
        )
        .expect_err(what);
    }
}

/// Another rule of a recorded rule's name beside it: neither is removed when metrics go
/// off (removal by name could take either), and a rule an interrupted run added is not
/// removed beside another of its name either.
#[test]
fn a_rule_beside_another_of_its_name_is_not_removed() {
    let (_dir, host) = sim();
    let made = wanted(&on("9095"), FELIX);
    for rule in &made {
        host.firewall_add(rule).expect("add");
        let admins = FirewallRule {
            program: None,
            ..rule.clone()
        };
        host.admin_add_firewall_rule(&admins).expect("admin add");
    }
    assert_eq!(removed(&off(&host, &made, None)), Vec::<&str>::new());
    let journal = added(&["Calico metrics calicoctl-win TCP 9095"]);
    assert_eq!(
        removed(&off(&host, &[], Some(&journal))),
        Vec::<&str>::new()
    );
}

/// A run that made an interrupted run's rule again with another range was cut off in
/// turn: the journal names the rule twice (the first range, then the second) and the
/// firewall holds the second. It is the journal's all the same: removed with metrics
/// off, made again with a third range (it was judged by the first entry only: left for
/// good, or the plan refused).
#[test]
fn a_rule_journaled_twice_is_judged_by_every_entry() {
    let (_dir, host) = sim();
    let (a, b) = (
        wanted(&ranged("10.0.0.0/8", "9095"), FELIX),
        wanted(&ranged("10.1.0.0/16", "9095"), FELIX),
    );
    host.firewall_add(&b[0]).expect("add");
    let journal = added_as(&[&a[0], &b[0]]);
    assert_eq!(
        removed(&off(&host, &[], Some(&journal))),
        [b[0].name.as_str()]
    );
    let mut actions = Vec::new();
    let third = ranged("10.2.0.0/16", "9095");
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
    let (_dir, host) = sim();
    let recorded = wanted(&on("9095"), FELIX);
    let again = wanted(&ranged("10.1.0.0/16", "9095"), FELIX);
    host.firewall_add(&again[0]).expect("add");
    host.firewall_add(&recorded[1]).expect("add");
    let journal = added_as(&[&again[0]]);
    assert_eq!(
        removed(&off(&host, &recorded, Some(&journal))),
        [recorded[1].name.as_str(), recorded[0].name.as_str()]
    );
}

/// A rule recorded as made from `0.0.0.0/0` (which `metrics.source_ranges` now refuses) and
/// read back as `*` (any address, as Windows may keep it) is ours: removed when metrics go
/// off. (It was kept for good as an administrator's.)
#[test]
fn a_rule_recorded_from_any_ipv4_address_and_read_back_as_any_is_removed() {
    let (_dir, host) = sim();
    let recorded: Vec<FirewallRule> = wanted(&on("9095"), FELIX)
        .into_iter()
        .map(|r| FirewallRule {
            remote_addresses: vec!["0.0.0.0/0".into()],
            ..r
        })
        .collect();
    for rule in &recorded {
        host.firewall_add(&FirewallRule {
            remote_addresses: Vec::new(),
            ..rule.clone()
        })
        .expect("add");
    }
    assert_eq!(
        removed(&off(&host, &recorded, None)),
        [recorded[1].name.as_str(), recorded[0].name.as_str()]
    );
}

/// A record and a journal of the previous version, which kept none of the properties install
/// does not set: their rules read with Windows' defaults, the ones that version made every
/// rule with, so the rules the firewall holds as made are theirs: removed with metrics off,
/// and uninstall names none of them as changed.
#[test]
fn rules_of_an_older_record_or_journal_are_judged_with_the_defaults() {
    let (_dir, host) = sim();
    let made = wanted(&on("9095"), FELIX);
    for rule in &made {
        host.firewall_add(rule).expect("add");
    }
    let old = |r: &FirewallRule| {
        serde_json::json!({
            "name": r.name, "protocol": "tcp", "program": r.program, "local_port": r.local_port,
            "allow": true, "enabled": true, "profiles": crate::host::ALL_PROFILES,
            "remote_addresses": ["10.0.0.0/8"],
        })
    };
    let record: crate::installed::record::InstallRecord = serde_json::from_value({
        let mut v =
            serde_json::to_value(crate::installed::record::InstallRecord::default()).expect("json");
        v["metrics_rules"] = made.iter().map(old).collect();
        v
    })
    .expect("an older record");
    assert_eq!(record.metrics_rules, made);
    let kept = crate::plan::uninstall::changed_rules(&host, &record, false).expect("judged");
    assert!(kept.is_empty(), "{kept:?}");
    // Each removal carries the rule as the record says it was made, to be judged again as
    // it runs.
    let actions = off(&host, &record.metrics_rules, None);
    let carried: Vec<Option<&FirewallRule>> = actions
        .iter()
        .filter_map(|a| match a {
            Action::RemoveFirewallRule { made, .. } => Some(made.as_ref()),
            _ => None,
        })
        .collect();
    assert_eq!(carried, [Some(&made[1]), Some(&made[0])]);

    let journal: Journal = serde_json::from_value(serde_json::json!({
        "command": "reconfigure", "started": 0, "new_dirs": [], "routes_before": [],
        "entries": made.iter().map(|r| serde_json::json!({
            "action": format!("add firewall rule \"{}\"", r.name),
            "undo": {"undo": "remove-firewall-rule", "name": r.name, "rule": old(r)},
            "done": true,
        })).collect::<Vec<_>>(),
    }))
    .expect("an older journal");
    let actions = off(&host, &[], Some(&journal));
    assert_eq!(removed(&actions).len(), 2, "{actions:?}");
}
