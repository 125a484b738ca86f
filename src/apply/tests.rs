use crate::installed::logs::is_service_log;

#[test]
fn only_the_services_logs_count_as_logs() {
    for yes in [
        "calico-node.log",
        "calico-felix-20261121T101500Z.log",
        "CALICO-CONFD.LOG",
        // The opt-in kube-proxy service's log, left by uninstall --remove-logs before.
        "calico-kube-proxy.log",
        "calico-kube-proxy-20261121T101500Z.log",
        // A second rotation within one second (supervise::log numbers it).
        "calico-felix-20261121T101500Z.2.log",
    ] {
        assert!(is_service_log(yes), "{yes}");
    }
    for no in [
        "calico-node.log.bak",
        "kubelet.log",
        "calico-felix-.log",
        "calico-node-../x.log",
        "notes.txt",
    ] {
        assert!(!is_service_log(no), "{no}");
    }
}

#[test]
fn debug_output_of_a_planned_file_never_holds_its_contents() {
    let action = super::Action::WriteFile {
        path: r"C:\CalicoWindows\calico-kube-config".into(),
        from: "credentials".into(),
        sha256: None,
        secret: true,
        replaces: false,
        foreign: Vec::new(),
        content: super::Content::Bytes(b"token: eyJhbGciOi.secret".to_vec()),
    };
    let shown = format!("{action:?}");
    assert!(!shown.contains("eyJhbGciOi"), "{shown}");
    assert!(shown.contains("Bytes(24 bytes)"), "{shown}");
    let json = serde_json::to_string(&super::shown(&[action])).expect("text");
    assert!(!json.contains("eyJhbGciOi"), "{json}");
}

/// How a repair runs its plan, for the tests: journaled, no rollback, no cluster.
pub(super) fn repair_options<'a>() -> super::Options<'a> {
    options("repair", false)
}

/// How `command` runs its plan: journaled, `rollback` or not, no cluster.
pub(super) fn options<'a>(command: &'static str, rollback: bool) -> super::Options<'a> {
    super::Options::for_change(
        command,
        r"C:\CalicoWindows\calicoctl-win.journal.json".into(),
        rollback,
        std::time::Duration::from_secs(1),
        None,
        None,
    )
}

pub(super) fn host() -> crate::host::sim::SimHost {
    crate::host::sim::SimHost::in_memory("ws2022").expect("host")
}

/// A plan's step writing `path` ("x"), not a secret.
fn write(path: &str) -> super::Action {
    super::Action::WriteFile {
        path: path.into(),
        from: "rendered".into(),
        sha256: None,
        secret: false,
        replaces: false,
        foreign: Vec::new(),
        content: super::Content::Bytes(b"x".to_vec()),
    }
}

/// A metrics rule as calicoctl-win makes it: inbound TCP `port` for `program`, from `range`.
pub(super) fn rule(name: &str, program: &str, port: u16, range: &str) -> crate::host::FirewallRule {
    let from = vec![range.into()];
    let tcp = crate::host::Protocol::Tcp;
    crate::plan::metrics_rules::inbound(name.into(), tcp, port, Some(program), from)
}

/// A Calico network on `host` with these (name, address) endpoints: its id.
fn calico_with(host: &crate::host::sim::SimHost, endpoints: &[(&str, &str)]) -> String {
    use crate::host::Hns;
    let spec = serde_json::json!({"Name": "Calico", "Type": "NAT",
        "SchemaVersion": {"Major": 2, "Minor": 0}});
    let net = host.hns_create_network(&spec.to_string()).expect("network");
    for (name, ip) in endpoints {
        host.add_endpoint(&net.id, name, ip).expect("endpoint");
    }
    net.id
}

/// A repair's step deleting each endpoint of network `net`, as found (its namespace too).
fn deletes(host: &crate::host::sim::SimHost, net: &str) -> Vec<super::Action> {
    use crate::host::Hns;
    let found = host.hns_endpoints(net).expect("endpoints").into_iter();
    let delete = |e: crate::host::HnsEndpoint| super::Action::DeleteEndpoint {
        id: e.id,
        name: e.name,
        ip: e.ip,
        namespace: e.namespace,
        why: "stale".into(),
    };
    found.map(delete).collect()
}

/// A repair looks at each endpoint again just before it deletes it (`Options::recheck`): one
/// a pod has claimed since the plan was made is kept, with why; one still at fault goes.
#[test]
fn an_endpoint_a_new_look_finds_healthy_is_kept() {
    use crate::host::Hns;
    let host = host();
    let net = calico_with(
        &host,
        &[
            ("claimed_Calico", "10.244.1.7"),
            ("gone_Calico", "10.244.1.8"),
        ],
    );
    let actions = deletes(&host, &net);
    let super::Action::DeleteEndpoint { id: claimed, .. } = &actions[0] else {
        panic!("{actions:?}");
    };
    let recheck = |id: &str| -> anyhow::Result<Option<String>> {
        Ok((id == claimed).then(|| "a new look finds it ok".to_owned()))
    };
    let mut opts = repair_options();
    opts.recheck = Some(&recheck);
    let warnings = super::execute(&host, &actions, opts, &mut |_| {}).expect("runs");
    let left: Vec<String> = host
        .hns_endpoints(&net)
        .expect("endpoints")
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(left, ["claimed_Calico"]);
    assert!(
        warnings
            .iter()
            .any(|w| w.contains("kept HNS endpoint claimed_Calico")),
        "{warnings:?}"
    );
}

/// An endpoint still in an HCN namespace is taken out of it before it is deleted, as
/// containerd does (hcsshim `RemoveNamespaceEndpoint`), and the plan says so: with that call
/// failing, the endpoint is not deleted.
#[test]
fn an_endpoint_in_a_namespace_is_taken_out_before_it_is_deleted() {
    use crate::host::Hns;
    use crate::host::sim::{At, Fault, FaultKind, SimHost};
    let run = |fault: Option<Fault>| {
        let host = SimHost::in_memory("ws2022")
            .expect("host")
            .with_fault(fault);
        let net = calico_with(&host, &[("pod_Calico", "10.244.1.7")]);
        host.put_in_namespace("pod_Calico", "ns-1")
            .expect("namespace");
        let actions = deletes(&host, &net);
        let said = actions[0].describe();
        assert!(said.contains("take it out of namespace ns-1"), "{said}");
        let ran = super::execute(&host, &actions, repair_options(), &mut |_| {}).is_ok();
        (ran, host.hns_endpoints(&net).expect("endpoints").len())
    };
    assert_eq!(run(None), (true, 0));
    let fail = Fault {
        kind: FaultKind::Fail,
        at: At::Op("remove HNS endpoint".into()),
    };
    assert_eq!(
        run(Some(fail)),
        (false, 1),
        "deleted without leaving its namespace"
    );
}

/// uninstall's `forget-node` shows its reason in the plan's document
/// (tests/snapshots/uninstall-purge-dry-run.snap, `"left": "uninstalled"`); migrate's is shown
/// as it was, without one, and said in words.
#[test]
fn forget_node_shows_uninstalls_reason_only() {
    let left = crate::cluster::node::Left::HandedToOperator;
    let step = super::Action::ForgetNode {
        node: "win-1".into(),
        left,
    };
    let text = serde_json::to_string(&step).expect("json");
    assert!(!text.contains(r#""left""#), "{text}");
    let said = step.describe();
    assert!(said.contains(left.reason().0), "{said}");
}

/// `plan` (a network deleted first, or not, then two files written) run with a stop requested
/// as its step 2 begins: the run's end, what it said, and whether each file is there.
fn stopped_at_step_2(
    past_no_return: bool,
) -> (
    Result<Vec<String>, super::ExecError>,
    Vec<String>,
    [bool; 2],
) {
    use crate::host::Files;
    let host = host();
    let (first, second) = (r"C:\CalicoWindows\a.conf", r"C:\CalicoWindows\b.conf");
    let delete = super::Action::DeleteNetwork {
        id: "no-such-network".into(),
        name: "Calico".into(),
    };
    let mut plan = vec![write(first), write(second)];
    if past_no_return {
        plan.insert(0, delete);
    }
    let mut opts = options("reconfigure", true);
    let stop = crate::duration::Stop::new();
    opts.stop = stop.clone();
    let mut said = Vec::new();
    let ran = super::execute(&host, &plan, opts, &mut |p| match p {
        super::Progress::Step(2, _, _) => stop.request(),
        super::Progress::Said(line) => said.push(line.to_owned()),
        _ => {}
    });
    let there = |path| host.read_file(path).expect("read").is_some();
    (ran, said, [there(first), there(second)])
}

/// A stop requested while a run goes on (Ctrl-C) fails the next step before it begins, as a
/// timeout there would: the steps done are undone, the stopped one never ran.
#[test]
fn a_stop_fails_the_next_step_before_it_begins_and_the_run_is_undone() {
    let (ran, _, there) = stopped_at_step_2(false);
    let e = ran.expect_err("stopped");
    assert_eq!(e.index, 2, "{e:#}");
    assert!(format!("{:#}", e.source).contains("stopped before it began"));
    assert_eq!(e.rollback_failures, Some(Vec::new()));
    assert_eq!(there, [false, false], "undone, and never written");
}

/// Past the point of no return (an HNS network deleted) a stop is not honoured: the run finishes
/// its steps, rather than leave the node half-changed, and says so.
#[test]
fn a_stop_past_the_point_of_no_return_lets_the_run_finish() {
    let (ran, said, there) = stopped_at_step_2(true);
    ran.expect("the run finishes");
    assert_eq!(there, [true, true]);
    assert!(
        said.iter()
            .any(|l| l.contains("past the point of no return")),
        "{said:?}"
    );
}

/// A planned removal of a rule is judged again as it runs, by every property the run made it
/// with: one an administrator changed since the plan (its description, its range) or tightened
/// through a property install does not set (its local addresses) is kept as it is, with a
/// warning naming it; one still as made goes. (It was removed by its name, or as ours: those
/// properties were not read.) Each other property install does not set (interfaces,
/// INetFwRule2's and INetFwRule3's) is host::firewall_tests'
/// `a_rule_changed_in_a_property_we_do_not_set_is_not_ours_and_a_narrowed_one_opens_nothing`.
#[test]
fn a_planned_removal_keeps_a_rule_an_administrator_changed_since() {
    use crate::host::{Firewall, FirewallRule};
    let host = host();
    let made = rule(
        "Calico metrics Felix TCP 9091",
        r"C:\CalicoWindows\calico-node.exe",
        9091,
        "10.0.0.0/8",
    );
    let remove = || super::Action::RemoveFirewallRule {
        name: made.name.clone(),
        made: Some(made.clone()),
    };
    let edits: [fn(&mut FirewallRule); 3] = [
        |r| r.description = "Prometheus scrapes, keep".into(),
        |r| r.remote_addresses = vec!["0.0.0.0/0".into()],
        |r| r.unset.local_addresses = "10.0.2.15".into(),
    ];
    for edit in edits {
        host.firewall_add(&made).expect("add");
        host.admin_edit_firewall_rules(&made.name, edit)
            .expect("admin edit");
        let before = host.firewall_rules(&made.name).expect("read");
        let warnings =
            super::execute(&host, &[remove()], repair_options(), &mut |_| {}).expect("run");
        assert!(
            warnings.iter().any(|w| w.contains(&format!(
                "kept the firewall rule '{}': the firewall holds one rule of that name, not as calicoctl-win made it",
                made.name
            ))),
            "{warnings:?}"
        );
        assert_eq!(host.firewall_rules(&made.name).expect("read"), before);
        host.admin_remove_firewall_rules(&made.name)
            .expect("admin remove");
    }
    host.firewall_add(&made).expect("add");
    let warnings = super::execute(&host, &[remove()], repair_options(), &mut |_| {}).expect("run");
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(host.firewall_rules(&made.name).expect("read"), []);
}

/// A reconfigure changing the metrics range plans the rule's removal and its making again
/// with the new range; an administrator edits the rule before the run. The removal keeps it,
/// and fails the run there, naming the rule and what the firewall holds, before the add: the
/// steps before it are undone and the administrator's rule is left as it is. (The removal
/// kept it with a warning and the add was refused `Exists` a step later.)
#[test]
fn a_removal_that_keeps_a_rule_the_plan_makes_again_fails_the_run_before_the_add() {
    use crate::host::{Files, Firewall};
    let host = host();
    let felix = r"C:\CalicoWindows\calico-node.exe";
    let metrics = |range: &str| {
        let ranges = format!("metrics.source_ranges={range}");
        crate::config::tests::from_sets(&["node.name=win-1", "metrics.enabled=true", &ranges])
    };
    let made = crate::plan::metrics_rules::wanted(&metrics("10.0.0.0/8"), felix);
    for rule in &made {
        host.firewall_add(rule).expect("add");
    }
    let file = r"C:\CalicoWindows\a.conf";
    let mut actions = vec![write(file)];
    let wider = metrics("10.1.0.0/16");
    crate::plan::metrics_rules::plan(&host, &wider, felix, &made, None, &mut actions)
        .expect("plan");
    let name = &made[0].name;
    let at = actions
        .iter()
        .position(|a| matches!(a, super::Action::RemoveFirewallRule { name: n, .. } if n == name))
        .expect("the removal is planned");
    assert!(
        matches!(&actions[at + 1], super::Action::AddFirewallRule { rule } if rule.name == *name),
        "{actions:?}"
    );
    host.admin_edit_firewall_rules(name, |r| r.description = "Prometheus, keep".into())
        .expect("admin edit");
    let admins = host.firewall_rules(name).expect("read");
    let opts = options("reconfigure", true);
    let e = super::execute(&host, &actions, opts, &mut |_| {}).expect_err("refused");
    assert_eq!(e.index, at + 1, "{e:#}");
    let said = format!("{:#}", e.source);
    assert!(
        said.contains(&format!(
            "the firewall rule '{name}' changed since the plan: the firewall holds one rule of that name, not as calicoctl-win made it"
        )),
        "{said}"
    );
    assert_eq!(e.rollback_failures, Some(Vec::new()));
    assert_eq!(host.read_file(file).expect("read"), None, "undone");
    assert_eq!(host.firewall_rules(name).expect("read"), admins);
    assert_eq!(
        host.firewall_rules(&made[1].name).expect("read"),
        [made[1].clone()],
        "Felix's rule as made"
    );
}
