//! Endpoint ACL lists and Felix's Windows defects, each from its source at v3.31.7.

use crate::policy::{Collected, Report, lint};
use serde_json::{Value, json};

fn objects() -> Vec<Value> {
    let mut o = vec![
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "win", "labels": {"kubernetes.io/os": "windows"}}}),
        json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "lin", "labels": {"kubernetes.io/os": "linux"}}}),
    ];
    for (name, node, role, ip) in [
        ("web-0", "win", "web", "10.1.0.1"),
        ("web-1", "win", "web", "10.1.0.2"),
        ("db-0", "lin", "db", "10.2.0.1"),
    ] {
        o.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "shop", "labels": {"role": role}},
            "spec": {"nodeName": node}, "status": {"phase": "Running", "podIP": ip}}));
    }
    o
}

fn policy(kind: &str, name: &str, spec: Value) -> Value {
    let mut p = json!({"apiVersion": "projectcalico.org/v3", "kind": kind,
        "metadata": {"name": name}, "spec": spec});
    if !kind.ends_with("GlobalNetworkPolicy") {
        p["metadata"]["namespace"] = json!("shop");
    }
    p
}

fn tier(name: &str, order: f64, action: &str) -> Value {
    json!({"apiVersion": "projectcalico.org/v3", "kind": "Tier", "metadata": {"name": name},
        "spec": {"order": order, "defaultAction": action}})
}

/// The lint of the base objects and `extra`, as Felix of `release` renders them.
fn run_at(extra: Vec<Value>, release: &str) -> Report {
    let mut c = Collected::default();
    for o in objects().into_iter().chain(extra) {
        c.add(o, "test").expect("add");
    }
    lint(
        &c,
        crate::policy::felix::modelled(release).expect("release"),
    )
    .expect("lint")
}

fn run(extra: Vec<Value>) -> Report {
    run_at(extra, "3.31")
}

fn codes(r: &Report) -> Vec<&str> {
    r.findings.iter().map(|f| f.code).collect()
}

/// endpoint_mgr.go:372-431, 511-563: with no policy, each direction has the profiles (kns allow
/// and the end-of-tier block), and the fixed ACLs are the host ACL of each direction and the
/// node-to-endpoint allow: 7.
#[test]
fn an_endpoint_without_policies_has_the_profiles_and_the_fixed_acls() {
    let r = run(vec![]);
    assert_eq!(r.endpoints.len(), 1, "one class of Windows endpoints");
    let e = &r.endpoints[0];
    assert_eq!(
        (e.like_it, e.ingress, e.egress, e.fixed, e.hns_acls),
        (2, 2, 2, 3, 7)
    );
}

/// A default-tier policy in one direction: that direction has its rules and the end-of-tier
/// block, no profile (endpoint_mgr.go:397-406); the other keeps the profiles.
#[test]
fn a_default_tier_policy_replaces_the_profiles_in_its_direction() {
    let r = run(vec![policy(
        "NetworkPolicy",
        "web",
        json!({"selector": "role == 'web'", "types": ["Ingress"],
            "ingress": [{"action": "Allow", "source": {"selector": "role == 'db'"}},
                        {"action": "Deny", "protocol": "TCP"}]}),
    )]);
    let e = &r.endpoints[0];
    // ingress: 2 rules + end-of-tier; egress: the profiles (2); and the 3 fixed.
    assert_eq!((e.ingress, e.egress, e.hns_acls), (3, 2, 8));
    let row = &r.policies[0];
    assert_eq!((row.applies_to, row.hns_acls, row.address_pairs), (2, 4, 4));
}

/// doNotTrack and preDNAT policies apply to host endpoints only
/// (felix/calc/event_sequencer.go:1244-1267).
#[test]
fn untracked_and_pre_dnat_policies_never_reach_a_workload() {
    let spec = |flag: &str| {
        let mut s =
            json!({"selector": "all()", "applyOnForward": true, "ingress": [{"action": "Deny"}]});
        s[flag] = json!(true);
        s
    };
    let r = run(vec![
        policy("GlobalNetworkPolicy", "raw", spec("doNotTrack")),
        policy("GlobalNetworkPolicy", "nat", spec("preDNAT")),
    ]);
    assert!(
        r.policies
            .iter()
            .all(|p| p.applies_to == 0 && p.hns_acls == 0)
    );
    assert_eq!(r.endpoints[0].hns_acls, 7);
}

/// policy_mgr.go:42-45 creates no policy set for a staged policy and policysets.go:142-146
/// stops at the missing set: a staged policy ordered first hides the tier's later policies.
#[test]
fn a_staged_policy_ahead_of_enforced_ones_hides_them() {
    let staged = policy(
        "StagedNetworkPolicy",
        "try",
        json!({"order": 10, "selector": "all()", "ingress": [{"action": "Deny"}]}),
    );
    let enforced = policy(
        "NetworkPolicy",
        "real",
        json!({"order": 20, "selector": "all()",
        "ingress": [{"action": "Allow"}, {"action": "Allow", "protocol": "UDP"}]}),
    );
    let r = run(vec![staged.clone(), enforced.clone()]);
    assert_eq!(codes(&r), ["staged-policy-hides-later-policies"]);
    let f = &r.findings[0];
    assert_eq!(f.name, "try");
    assert!(
        f.message.contains("NetworkPolicy shop/real"),
        "{}",
        f.message
    );
    assert!(f.message.contains("2 Windows endpoint(s)"), "{}", f.message);
    // The hidden rules are not in the list: the end-of-tier ACL only.
    assert_eq!(r.endpoints[0].ingress, 1);
    // Nor in the hidden policy's figures: it applies to the endpoints, Felix programs none of
    // its ACLs there.
    let real = r.policies.iter().find(|p| p.name == "real").expect("row");
    assert_eq!(
        (real.applies_to, real.hns_acls, real.address_pairs),
        (2, 0, 0)
    );
    // Ordered after the enforced policy, nothing is lost.
    let mut late = staged.clone();
    late["spec"]["order"] = json!(30);
    let r = run(vec![late.clone(), enforced.clone()]);
    assert!(codes(&r).is_empty(), "{:?}", codes(&r));
    assert_eq!(r.endpoints[0].ingress, 3);
    // Before 3.30 staged policies never reached Felix.
    let r = run_at(vec![staged, enforced], "3.29");
    assert!(codes(&r).is_empty());
}

/// Each endpoint gets its own list, whichever core assembled it (the classes are shared
/// between two and put back in order).
#[test]
fn each_endpoint_gets_its_own_list() {
    let mut extra: Vec<Value> = ["a", "b", "c", "d"]
        .iter()
        .enumerate()
        .map(|(i, role)| {
            json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": format!("{role}-0"), "namespace": "shop", "labels": {"role": role}},
                "spec": {"nodeName": "win"}, "status": {"phase": "Running", "podIP": format!("10.3.0.{i}")}})
        })
        .collect();
    extra.push(policy(
        "NetworkPolicy",
        "only-a",
        json!({"selector": "role == 'a'",
            "ingress": [{"action": "Allow"}, {"action": "Allow", "protocol": "UDP"}]}),
    ));
    let r = run(extra);
    let ingress: Vec<(&str, u64)> = r
        .endpoints
        .iter()
        .map(|e| (e.endpoint.as_str(), e.ingress))
        .collect();
    for (name, acls) in &ingress {
        let want = if *name == "shop/a-0" { 3 } else { 2 };
        assert_eq!(*acls, want, "{name}: {ingress:?}");
    }
    assert_eq!(ingress.len(), 5, "{ingress:?}");
    // And its policy's figures count the endpoint it is programmed on.
    let row = r.policies.iter().find(|p| p.name == "only-a").expect("row");
    assert_eq!((row.applies_to, row.hns_acls), (1, 2), "{row:?}");
}

/// flattener.go:84-88: a tier without a pass rule ends the list; and endpoint_mgr.go:259-273
/// looks only at the endpoint's first tier to decide what to reprogram after a change.
#[test]
fn a_tier_without_pass_hides_the_next_and_a_tier_before_default_misses_changes() {
    let sec = policy(
        "GlobalNetworkPolicy",
        "security.block-bad",
        json!({"tier": "security", "selector": "all()",
        "ingress": [{"action": "Deny", "source": {"nets": ["192.0.2.0/24"]}}]}),
    );
    let app = policy(
        "NetworkPolicy",
        "web",
        json!({"selector": "role == 'web'", "ingress": [{"action": "Allow"}]}),
    );
    let r = run(vec![
        tier("security", 100.0, "Deny"),
        sec.clone(),
        app.clone(),
    ]);
    let mut got = codes(&r);
    got.sort();
    assert_eq!(got, ["change-not-reprogrammed", "unreachable-tier"]);
    let unreachable = r
        .findings
        .iter()
        .find(|f| f.code == "unreachable-tier")
        .expect("finding");
    assert_eq!(
        (unreachable.kind.as_str(), unreachable.name.as_str()),
        ("Tier", "security")
    );
    assert!(
        unreachable.message.contains("default"),
        "{}",
        unreachable.message
    );
    // The default tier is never reached where security applies: the web policy's figures are
    // what Felix programs there, none.
    let web = r.policies.iter().find(|p| p.name == "web").expect("row");
    assert_eq!(web.hns_acls, 0, "{web:?}");
    // A pass rule reaches the default tier: its rules combine with the pass (1 deny + the
    // default tier's allow and end-of-tier, each combined with the pass ACL + the security
    // tier's end-of-tier block).
    let mut passing = sec.clone();
    passing["spec"]["ingress"]
        .as_array_mut()
        .expect("rules")
        .push(json!({"action": "Pass"}));
    let r = run(vec![tier("security", 100.0, "Deny"), passing, app.clone()]);
    assert_eq!(codes(&r), ["change-not-reprogrammed"]);
    assert_eq!(r.endpoints[0].ingress, 1 + 2 + 1);
    assert_eq!(r.endpoints[0].tiers, ["security", "default"]);
    // defaultAction Pass does the same through the end-of-tier ACL.
    let r = run(vec![
        tier("security", 100.0, "Pass"),
        sec.clone(),
        app.clone(),
    ]);
    assert_eq!(codes(&r), ["change-not-reprogrammed"]);
    // Before 3.29 only the first tier is rendered (v3.28.0 endpoint_mgr.go:349-359).
    let r = run_at(vec![tier("security", 100.0, "Pass"), sec, app], "3.28");
    assert_eq!(r.endpoints[0].tiers, ["security"]);
}

/// The tier is `spec.tier`, else the word before the first dot of the name
/// (libcalico-go lib/names/policy.go:52-79).
#[test]
fn the_tier_is_read_from_the_spec_or_the_name() {
    use crate::policy::model::tier_from_name;
    assert_eq!(tier_from_name("security.block"), "security");
    assert_eq!(tier_from_name("block"), "default");
    assert_eq!(tier_from_name("knp.default.x"), "default");
    assert_eq!(tier_from_name("ossg.default.x"), "default");
}

/// felix/dataplane/windows/policy_mgr_test.go `TestPolicyManager` at v3.31.7: policy pol1 of
/// tier1 (inbound deny, outbound allow) renders its rule and the end-of-tier block per
/// direction (a pass with endOfTierDrop off); a staged policy renders no rule, only the
/// end-of-tier block.
#[test]
fn felixs_policy_manager_table() {
    let pol1 = policy(
        "GlobalNetworkPolicy",
        "tier1.pol1",
        json!({"tier": "tier1", "selector": "all()",
        "types": ["Ingress", "Egress"], "ingress": [{"action": "Deny"}], "egress": [{"action": "Allow"}]}),
    );
    let r = run(vec![tier("tier1", 10.0, "Deny"), pol1.clone()]);
    // The profiles after tier1 are never reached: tier1 passes nothing.
    assert_eq!((r.endpoints[0].ingress, r.endpoints[0].egress), (2, 2));
    // endOfTierDrop off (defaultAction Pass): the end-of-tier ACL passes on to the profiles,
    // whose allow and block it is combined with.
    let r = run(vec![tier("tier1", 10.0, "Pass"), pol1]);
    assert_eq!(
        (r.endpoints[0].ingress, r.endpoints[0].egress),
        (1 + 2, 1 + 2)
    );
    let staged = policy(
        "StagedGlobalNetworkPolicy",
        "tier1.pol1",
        json!({"tier": "tier1", "selector": "all()",
        "ingress": [{"action": "Allow"}]}),
    );
    let r = run(vec![tier("tier1", 10.0, "Deny"), staged]);
    assert_eq!(r.endpoints[0].ingress, 1, "the end-of-tier block only");
}
