//! The model against Felix's own unit tests at v3.31.7 (felix/dataplane/windows/flattener_test.go,
//! policysets/policysets_test.go) and each rendering fact, with its source.

use super::*;
use crate::policy::Collected;
use crate::policy::model::Net;
use serde_json::{Value, json};

fn net(text: &str) -> Net {
    match Net::parse(text) {
        Some(Ok(n)) => n,
        other => panic!("{text}: {other:?}"),
    }
}

fn nets(list: &str) -> Addrs {
    if list.is_empty() {
        Addrs::Any
    } else {
        Addrs::Nets(list.split(',').map(net).collect())
    }
}

fn ports(list: &str) -> Ports {
    if list.is_empty() {
        return Ports::Any;
    }
    Ports::Ranges(
        list.split(',')
            .map(|p| {
                let p = p.trim();
                match p.split_once('-') {
                    Some((a, b)) => (a.parse().expect("port"), b.parse().expect("port")),
                    None => (p.parse().expect("port"), p.parse().expect("port")),
                }
            })
            .collect(),
    )
}

/// An ACL as flattener_test.go writes one: action, protocol, remote and local addresses,
/// local ports (its cases give no remote ports).
fn acl(action: Action, protocol: u16, remote: &str, local: &str, lports: &str) -> Group {
    Group {
        count: 1,
        action,
        protocol,
        local: nets(local),
        remote: nets(remote),
        local_ports: ports(lports),
        remote_ports: Ports::Any,
    }
}

use Action::{Allow, Deny as Block, Pass};

/// A flattened ACL's action, protocol, remote and local addresses, as `acl` writes them.
fn row(action: Action, protocol: u16, remote: &str, local: &str) -> (Action, u16, Addrs, Addrs) {
    (action, protocol, nets(remote), nets(local))
}

/// The flattened ACLs' action, protocol, remote and local addresses, as `row` writes them.
fn flat(tiers: Vec<Vec<Group>>) -> Vec<(Action, u16, Addrs, Addrs)> {
    flatten(tiers)
        .0
        .iter()
        .map(|g| (g.action, g.protocol, g.remote.clone(), g.local.clone()))
        .collect()
}

/// flattener_test.go `TestFlatten`, case by case.
#[test]
fn felixs_flattener_table() {
    let tier1 = vec![acl(Block, 256, "", "", ""), acl(Block, 256, "", "", "")];
    // "Should have no effect on a single tier with no pass rules."
    assert_eq!(flatten(vec![tier1.clone()]).0, tier1);
    // "Should discard unreachable tiers"
    assert_eq!(
        flatten(vec![tier1.clone(), tier1.clone()]),
        (tier1.clone(), Some(1))
    );
    // "Should expand a pass rule"
    let with_pass = vec![
        acl(Pass, 256, "", "", ""),
        acl(Block, 100, "", "", ""),
        acl(Block, 100, "", "", ""),
    ];
    let got: Vec<_> = flat(vec![with_pass, tier1])
        .iter()
        .map(|r| (r.0, r.1))
        .collect();
    assert_eq!(
        got,
        [(Block, 256), (Block, 256), (Block, 100), (Block, 100)]
    );
    // "Should combine protocol=any with a specific protocol"
    assert_eq!(
        flat(vec![
            vec![acl(Pass, 256, "", "", "")],
            vec![acl(Allow, 10, "", "", "")],
        ]),
        [row(Allow, 10, "", "")]
    );
    // "Should combine CIDRs" (local)
    assert_eq!(
        flat(vec![
            vec![
                acl(Pass, 256, "", "10.0.0.0/16", ""),
                acl(Pass, 256, "", "10.0.10.0/26", ""),
            ],
            vec![acl(Allow, 256, "", "10.0.10.0/24", "")],
        ]),
        [
            row(Allow, 256, "", "10.0.10.0/24"),
            row(Allow, 256, "", "10.0.10.0/26"),
        ]
    );
    // "Should combine CIDRs" (remote, and a side the second tier leaves open); the "recurse"
    // cases give the second tier's middle rule as a pass.
    let first = vec![
        acl(Pass, 256, "10.0.0.0/16,11.0.0.0/24", "", ""),
        acl(Pass, 256, "10.0.10.0/26", "", ""),
    ];
    let second = |middle: Group| {
        vec![
            acl(Allow, 256, "10.0.10.0/24,11.0.0.0/8", "", ""),
            middle,
            acl(Allow, 256, "", "12.0.0.0/8", ""),
        ]
    };
    assert_eq!(
        flat(vec![
            first.clone(),
            second(acl(Allow, 256, "12.0.0.0/8", "", ""))
        ]),
        [
            row(Allow, 256, "10.0.10.0/24,11.0.0.0/24", ""),
            row(Allow, 256, "10.0.0.0/16,11.0.0.0/24", "12.0.0.0/8"),
            row(Allow, 256, "10.0.10.0/26", ""),
            row(Allow, 256, "10.0.10.0/26", "12.0.0.0/8"),
        ]
    );
    // "Should combine Ports"
    let (ported, _) = flatten(vec![
        vec![
            acl(Pass, 256, "", "", "1,2,10-15"),
            acl(Pass, 256, "", "", "10-15"),
        ],
        vec![acl(Allow, 256, "", "", "2,12-16,55")],
    ]);
    let got: Vec<Ports> = ported.iter().map(|g| g.local_ports.clone()).collect();
    assert_eq!(got, [ports("2,12-15"), ports("12-15")]);
    // "Should recurse with non-overlapping pass on second tier": its pass rule meets nothing,
    // so the third tier is never reached.
    let third = vec![
        acl(Allow, 256, "10.0.11.0/28", "", ""),
        acl(Block, 256, "10.0.10.0/28", "", ""),
    ];
    let (groups, unreachable) = flatten(vec![
        first.clone(),
        second(acl(Pass, 256, "12.0.0.0/8", "", "")),
        third.clone(),
    ]);
    assert_eq!((groups.len(), unreachable), (4, Some(2)));
    // "Should recurse with overlapping pass on second tier"
    assert_eq!(
        flat(vec![
            first,
            second(acl(Pass, 256, "10.0.10.0/24", "", "")),
            third
        ]),
        [
            row(Allow, 256, "10.0.10.0/24,11.0.0.0/24", ""),
            row(Block, 256, "10.0.10.0/28", ""),
            row(Allow, 256, "10.0.0.0/16,11.0.0.0/24", "12.0.0.0/8"),
            row(Allow, 256, "10.0.10.0/26", ""),
            row(Block, 256, "10.0.10.0/28", ""),
            row(Allow, 256, "10.0.10.0/26", "12.0.0.0/8"),
        ]
    );
}

/// flattener_test.go `TestFlatten`: the cases of a pass in the last tier.
#[test]
fn felixs_flattener_table_last_tier() {
    // "Should block with pass in last tier"
    assert_eq!(
        flat(vec![
            vec![
                acl(Allow, 256, "10.0.10.0/24", "", "6000"),
                acl(Pass, 256, "10.0.10.0/24", "", ""),
            ],
            vec![
                acl(Block, 256, "10.0.10.1/32", "", "6379"),
                acl(Pass, 256, "10.0.10.2/32", "", "6380,6381"),
                acl(Block, 256, "10.0.0.0/8", "", "6390-6400"),
            ],
        ]),
        [
            row(Allow, 256, "10.0.10.0/24", ""),
            row(Block, 256, "10.0.10.1/32", ""),
            row(Block, 256, "10.0.10.2/32", ""),
            row(Block, 256, "10.0.10.0/24", ""),
        ]
    );
    // "Should pass to last tier which has only the rule from the profile"
    let got: Vec<Action> = flat(vec![
        vec![
            acl(Block, 256, "192.168.1.123/32", "", "8080"),
            acl(Pass, 256, "", "", ""),
        ],
        vec![acl(Allow, 256, "", "", "")],
    ])
    .iter()
    .map(|r| r.0)
    .collect();
    assert_eq!(got, [Block, Allow]);
}

/// A running pod in `default`; an empty `ip` is none yet.
fn pod(name: &str, node: &str, labels: Value, ip: &str) -> Value {
    let mut status = json!({"phase": "Running"});
    if !ip.is_empty() {
        status["podIP"] = json!(ip);
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": labels},
        "spec": {"nodeName": node, "serviceAccountName": "web"},
        "status": status})
}

fn collected(objects: Vec<Value>) -> Collected {
    let mut c = Collected::default();
    for o in objects {
        c.add(o, "test").expect("add");
    }
    c
}

fn nodes() -> Vec<Value> {
    vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "win", "labels": {"kubernetes.io/os": "windows"}}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lin", "labels": {"kubernetes.io/os": "linux"}}}),
    ]
}

fn acls(acls: u64, remote: u64) -> Outcome {
    Outcome::Acls {
        acls,
        local: 0,
        remote,
    }
}

/// The outcomes of a GlobalNetworkPolicy with these ingress rules on a Windows pod `srv`
/// labelled `role: server`, beside the nodes and `pods`.
fn on_server(pods: impl IntoIterator<Item = Value>, ingress: Value) -> Vec<Outcome> {
    let mut objects = nodes();
    objects.push(pod("srv", "win", json!({"role": "server"}), "10.200.0.1"));
    objects.extend(pods);
    objects.push(
        json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
        "metadata": {"name": "p"}, "spec": {"selector": "role == 'server'", "ingress": ingress}}),
    );
    let c = collected(objects);
    let eps = crate::policy::endpoints::Endpoints::of(&c.inventory);
    let mut r = Renderer::new(&eps);
    c.policies[0].rules.iter().map(|x| r.rule(x).0).collect()
}

/// policysets_test.go `TestMultiIpPortChunks`' selector-cidr policy: IP sets a ∪ f intersected
/// with each rule's SrcNet; the rule whose networks miss them all is a no-op.
#[test]
fn a_selectors_addresses_are_intersected_with_the_rules_nets() {
    let sets = [
        ("a1", "10.0.0.1", "a"),
        ("a2", "10.0.0.2", "a"),
        ("f1", "10.0.0.3", "f"),
        ("f2", "10.1.0.1", "f"),
        ("b9", "10.9.0.9", "b"),
    ]
    .map(|(name, ip, set)| pod(name, "lin", json!({"set": set}), ip));
    let rule = |nets: Value| json!({"action": "Allow", "source": {"selector": "set in {'a', 'f'}", "nets": nets}});
    let got = on_server(
        sets,
        json!([
            rule(json!(["10.0.0.0/24"])),
            rule(json!(["10.1.0.0/24"])),
            rule(json!(["10.0.0.0/24", "10.1.0.0/24"])),
            rule(json!(["12.0.0.0/24"])),
        ]),
    );
    assert_eq!(got, [acls(1, 3), acls(1, 1), acls(1, 4), Outcome::NoOp]);
}

/// `ipPortsPerRule` = 4000 (policysets.go:261) and `SplitIPList`/`SplitPortList` (:596-630): a
/// list is split above 4,000 entries, one ACL for each combination of chunks.
#[test]
fn a_side_above_4000_addresses_or_ports_is_split_into_more_acls() {
    let clients = (0..9_000u32).map(|i| {
        let ip = std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string();
        pod(&format!("c{i}"), "lin", json!({"role": "client"}), &ip)
    });
    let many_ports: Vec<Value> = (1..=4_001).map(|p| json!(p)).collect();
    let got = on_server(
        clients,
        json!([
            {"action": "Allow", "source": {"selector": "role == 'client'"}},
            {"action": "Allow", "protocol": "TCP", "source": {"selector": "role == 'client'"}, "destination": {"ports": many_ports}},
            {"action": "Allow", "source": {"nets": ["10.0.0.0/8"]}},
        ]),
    );
    assert_eq!(got, [acls(3, 9_000), acls(6, 9_000), acls(1, 1)]);
}

/// policysets.go:287-295 (`IpVersion` other than 4: not supported) and `filterNets` :315-337
/// (IPv6 entries dropped; none left: a no-op), as `TestFilterNets` shows; ICMPv6 is IPv6. A
/// selector no endpoint matches has an IP set without members: `GetIPSetMembers` returns nil
/// (felix/dataplane/windows/ipsets/ipsets.go:125-141) and the rule is dropped
/// (policysets.go:656-679, `ErrMissingIPSet`).
#[test]
fn ipv6_rules_are_skipped_ipv6_nets_dropped_and_empty_ip_sets_dropped() {
    let got = on_server(
        [],
        json!([
            {"action": "Allow", "ipVersion": 6},
            {"action": "Allow", "protocol": "ICMPv6"},
            {"action": "Allow", "source": {"nets": ["fd00::/64"]}},
            {"action": "Allow", "source": {"nets": ["fd00::/64", "10.0.0.0/8", "11.0.0.0/8"]}},
            {"action": "Allow", "source": {"selector": "role == 'nobody'"}},
        ]),
    );
    use Outcome::{EmptyIpSet, NoOp, Skipped};
    assert_eq!(got, [Skipped, Skipped, NoOp, acls(1, 2), EmptyIpSet]);
}

/// felix/calc/rule_scanner.go:594-612 (`combineMatchesIfPossible`): a notSelector beside a
/// positive selector narrows it and the rule is rendered; alone in a global policy it stays a
/// negative match, which Windows skips. In a namespaced policy the namespace is the positive
/// selector (libcalico-go updateprocessors/rules.go:110-123): tests/cli/lint.rs
/// `rules_felix_on_windows_leaves_out_are_each_found` (its ingress[0] is rendered).
#[test]
fn a_not_selector_beside_a_positive_one_is_folded_in() {
    let clients = [
        pod(
            "c1",
            "lin",
            json!({"role": "client", "bad": "y"}),
            "10.0.0.1",
        ),
        pod("c2", "lin", json!({"role": "client"}), "10.0.0.2"),
    ];
    let got = on_server(
        clients,
        json!([
            {"action": "Allow", "source": {"selector": "role == 'client'", "notSelector": "has(bad)"}},
            {"action": "Allow", "source": {"notSelector": "has(bad)"}},
        ]),
    );
    assert_eq!(got, [acls(1, 1), Outcome::Skipped]);
}

/// `k8sRuleToCalico` (libcalico-go conversion.go:999-1077 at v3.31.7) makes one Calico rule per
/// protocol; a named port puts only its own protocol's rule on a named-port IP set, which
/// Windows skips (policysets.go:308-312).
#[test]
fn a_kubernetes_named_port_skips_only_its_own_protocols_rule() {
    let mut objects = nodes();
    objects.push(pod("srv", "win", json!({"role": "server"}), "10.200.0.1"));
    objects.push(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "named", "namespace": "default"},
        "spec": {"podSelector": {}, "ingress": [{"ports": [
            {"protocol": "TCP", "port": "http"},
            {"protocol": "UDP", "port": 53},
            {"protocol": "UDP", "port": 5353}
        ]}]}}),
    );
    let c = collected(objects);
    let eps = crate::policy::endpoints::Endpoints::of(&c.inventory);
    let mut r = Renderer::new(&eps);
    let got: Vec<(u16, Outcome)> = c.policies[0]
        .rules
        .iter()
        .map(|x| (x.protocol, r.rule(x).0))
        .collect();
    assert_eq!(got, [(6, Outcome::Skipped), (17, acls(1, 0))]);
    assert_eq!(
        c.policies[0].rules[1].destination.ports,
        [(53, 53), (5353, 5353)]
    );
}

/// A pod without an address yet is no endpoint and no IP set member
/// (updateprocessors/workloadendpointprocessor.go:51-57); the service account label is set at
/// any length (:139-148).
#[test]
fn a_pod_without_an_address_is_no_endpoint_and_long_service_accounts_are_labelled() {
    let mut objects = nodes();
    objects.push(pod("pending", "win", json!({"role": "server"}), ""));
    let mut long = pod("long", "win", json!({"role": "server"}), "10.200.0.2");
    let account = "a".repeat(80);
    long["spec"]["serviceAccountName"] = json!(account);
    objects.push(long);
    let c = collected(objects);
    let eps = crate::policy::endpoints::Endpoints::of(&c.inventory);
    assert_eq!(eps.windows_in(None), 1);
    let sel = crate::selector::parse(&format!("projectcalico.org/serviceaccount == '{account}'"))
        .expect("selector");
    assert_eq!(eps.matched(&sel).windows, 1);
}

#[test]
fn releases_are_read_and_the_oldest_modelled_is_3_16() {
    assert_eq!(modelled("v3.31.7"), Ok(Release::new(3, 31, 7)));
    assert_eq!(
        modelled("v3.31.7").map(|r| release_name(&r)).as_deref(),
        Ok("3.31")
    );
    assert_eq!(modelled("3.29").map(|r| all_tiers(&r)), Ok(true));
    assert_eq!(modelled("3.28.2").map(|r| all_tiers(&r)), Ok(false));
    assert_eq!(modelled("3.29.0-0.dev").map(|r| all_tiers(&r)), Ok(true));
    assert_eq!(modelled("3.29").map(|r| staged_policies(&r)), Ok(false));
    assert!(modelled("3.15").is_err());
    assert!(modelled("latest").is_err());
}
