//! `lint policies`: the seed example of Calico's Windows limitations page is flagged with its
//! rewrite, the rewrite is not and keeps the same connectivity, the estimates follow the model
//! in docs/commands/lint.md, and bad input is an error that names it.

use std::path::Path;

use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::policy::endpoints::{Class, Endpoints};
use calicoctl_win::policy::felix::DEFAULT_RELEASE;
use calicoctl_win::policy::model::{Direction, Policy};
use calicoctl_win::policy::{self, Collected};
use serde_json::{Value, json};

fn node(name: &str, os: &str) -> Value {
    let mut n = meta("v1", "Node", name, None);
    n["metadata"]["labels"] = json!({"kubernetes.io/os": os});
    n
}

/// A running pod with an address of its own (a pod without one is no endpoint).
fn pod(ns: &str, name: &str, node: &str, labels: Value) -> Value {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let ip = std::net::Ipv4Addr::from(0x0a00_0000 + n).to_string();
    let mut p = meta("v1", "Pod", name, Some(ns));
    p["metadata"]["labels"] = labels;
    p["spec"] = json!({"nodeName": node, "serviceAccountName": "web"});
    p["status"] = json!({"phase": "Running", "podIP": ip});
    p
}

/// 20 webservers and 10 databases on Windows, 30 clients and 5 webservers on Linux, and pods
/// that are not endpoints: a hostNetwork one and a finished one on Windows.
fn cluster() -> Vec<Value> {
    let mut objects = vec![
        node("win-1", "windows"),
        node("win-2", "windows"),
        node("lin-1", "linux"),
        meta("v1", "Namespace", "shop", None),
    ];
    let mut add = |prefix: &str, n: usize, node: &str, role: &str| {
        for i in 0..n {
            objects.push(pod(
                "shop",
                &format!("{prefix}-{i}"),
                node,
                json!({"role": role}),
            ));
        }
    };
    add("web-win", 20, "win-1", "webserver");
    add("db-win", 10, "win-2", "db");
    add("client", 30, "lin-1", "client");
    add("web-lin", 5, "lin-1", "webserver");
    let mut host = pod("shop", "host-agent", "win-1", json!({"role": "webserver"}));
    host["spec"]["hostNetwork"] = json!(true);
    objects.push(host);
    let mut done = pod("shop", "job-done", "win-2", json!({"role": "webserver"}));
    done["status"]["phase"] = json!("Succeeded");
    objects.push(done);
    objects
}

/// Calico's example on its Windows limitations page.
fn seed() -> Value {
    json!({
        "apiVersion": "projectcalico.org/v3",
        "kind": "GlobalNetworkPolicy",
        "metadata": {"name": "calico-dest-selector"},
        "spec": {
            "selector": "all()",
            "ingress": [{
                "action": "Allow",
                "source": {"selector": "role == \"client\""},
                "destination": {"selector": "role == \"webserver\""},
            }],
        },
    })
}

/// Writes the cluster as a `kind: List` (as `kubectl get -o yaml` prints) and `policies` as a
/// multi-document YAML file in a subdirectory, so directories, lists and documents are read.
fn write_inputs(dir: &Path, policies: &[Value]) {
    let list = json!({"apiVersion": "v1", "kind": "List", "items": cluster()});
    fs_err::write(dir.join("cluster.json"), list.to_string()).unwrap();
    fs_err::create_dir_all(dir.join("policies")).unwrap();
    let yaml: Vec<String> = policies
        .iter()
        .map(|p| serde_saphyr::to_string(p).unwrap())
        .collect();
    fs_err::write(dir.join("policies/all.yaml"), yaml.join("---\n")).unwrap();
}

fn lint_dir(dir: &Path) -> (i32, Value, String) {
    let out = crate::support::cmd()
        .args(["lint", "policies", "-o", "json", "--from-file"])
        .arg(dir)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (
        out.status.code().unwrap(),
        crate::support::json(&out.stdout),
        stderr,
    )
}

/// Asserts that a run failed with exit 2, `kind`, and a message that names `names`.
/// `lint policies -o json` against the fake API server: the process's output and its document.
fn lint_cluster(api: &FakeApi) -> (std::process::Output, Value) {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::support::cmd()
        .args(["lint", "policies", "-o", "json", "--kubeconfig"])
        .arg(api.kubeconfig(dir.path(), None))
        .output()
        .unwrap();
    let doc = crate::support::json(&out.stdout);
    (out, doc)
}

/// Puts the cluster's nodes, namespaces and pods (all in namespace shop) on the fake API.
fn put_all(api: &FakeApi, objects: &[Value]) {
    for o in objects {
        let name = o["metadata"]["name"].as_str().unwrap();
        let path = match o["kind"].as_str().unwrap() {
            "Node" => format!("/api/v1/nodes/{name}"),
            "Namespace" => format!("/api/v1/namespaces/{name}"),
            _ => format!("/api/v1/namespaces/shop/pods/{name}"),
        };
        api.put(&path, o.clone());
    }
}

fn assert_refused((code, doc, stderr): (i32, Value, String), kind: &str, names: &str) {
    assert_eq!(code, 2, "{doc} {stderr}");
    assert_eq!(doc["error"]["kind"], kind, "{doc}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(names), "{message} does not name {names}");
}

fn collected(policies: &[Value]) -> Collected {
    let mut c = Collected::default();
    for o in cluster().iter().chain(policies) {
        c.add(o.clone(), "the test").unwrap();
    }
    c
}

/// Whether Calico lets `src` reach `dst` on ingress: the policies that select `dst` with an
/// ingress type, in name order (the rewrite keeps the order value), the first rule whose
/// selectors match decides; selected by some but allowed by none is denied; selected by none
/// is allowed (the namespace profile's allow).
fn ingress_allowed(policies: &[Policy], src: &Class, dst: &Class) -> bool {
    let mut applying: Vec<&Policy> = policies
        .iter()
        .filter(|p| p.types.contains(&Direction::Ingress) && p.applies.matches(&dst.labels))
        .collect();
    applying.sort_by(|a, b| a.name.cmp(&b.name));
    if applying.is_empty() {
        return true;
    }
    for p in applying {
        for r in p.rules.iter().filter(|r| r.direction == Direction::Ingress) {
            let side = |e: &calicoctl_win::policy::model::Entity, c: &Class| {
                e.selector.as_ref().is_none_or(|s| s.matches(&c.labels))
            };
            if side(&r.source, src) && side(&r.destination, dst) {
                return r.action == "Allow";
            }
        }
    }
    false
}

fn connectivity(c: &Collected) -> Vec<bool> {
    let eps = Endpoints::of(&c.inventory);
    let mut out = Vec::new();
    for src in &eps.classes {
        for dst in &eps.classes {
            out.push(ingress_allowed(&c.policies, src, dst));
        }
    }
    out
}

#[test]
fn calicos_example_is_flagged_with_a_rewrite_that_is_not_and_keeps_connectivity() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path(), &[seed()]);
    let (code, doc, stderr) = lint_dir(dir.path());
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(doc["schema"], 2);
    assert_eq!(
        doc["windows_endpoints"], 30,
        "hostNetwork and finished pods are not endpoints"
    );
    // The model (docs/commands/lint.md): 30 Windows endpoints, each with one ACL holding the 30
    // clients as remote and the 25 webservers as local addresses.
    let p = &doc["policies"][0];
    assert_eq!(p["name"], "calico-dest-selector");
    assert_eq!(p["namespace"], Value::Null);
    assert_eq!(p["api_version"], "projectcalico.org/v3");
    assert_eq!(
        (
            p["applies_to"].as_u64(),
            p["hns_acls"].as_u64(),
            p["address_pairs"].as_u64()
        ),
        (Some(30), Some(30), Some(30 * 30 * 25))
    );
    let f = &doc["findings"][0];
    assert_eq!(f["code"], "source-and-destination-selectors");
    assert_eq!(f["rule"], "ingress[0]");
    assert_eq!(
        f["before"],
        json!({"hns_acls": 30, "address_pairs": 22_500})
    );
    // After: the 20 Windows webservers, each with one ACL holding the 30 clients.
    assert_eq!(
        f["after"],
        json!({"hns_acls": 20, "address_pairs": 20 * 30})
    );
    let rewrite: Vec<Value> = f["suggestion"]["rewrite"].as_array().unwrap().clone();
    assert_eq!(rewrite[1]["spec"]["selector"], "role == \"webserver\"");
    assert_eq!(
        rewrite[1]["spec"]["ingress"][0]["source"]["selector"],
        "role == \"client\""
    );
    assert!(
        rewrite[1]["spec"]["ingress"][0]
            .get("destination")
            .is_none()
    );

    let again = tempfile::tempdir().unwrap();
    write_inputs(again.path(), &rewrite);
    let (code, doc, stderr) = lint_dir(again.path());
    assert_eq!(code, 0, "the rewrite is not flagged: {doc} {stderr}");
    assert_eq!(doc["findings"], json!([]));
    let total = |key: &str| -> u64 {
        doc["policies"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[key].as_u64().unwrap())
            .sum()
    };
    assert_eq!((total("hns_acls"), total("address_pairs")), (20, 600));

    let before = connectivity(&collected(&[seed()]));
    assert!(
        before.iter().any(|a| *a) && before.iter().any(|a| !*a),
        "the example allows some pairs, not all"
    );
    assert_eq!(
        connectivity(&collected(&rewrite)),
        before,
        "the rewrite allows exactly what the original did"
    );
}

#[test]
fn rules_whose_order_matters_get_a_suggestion_without_a_rewrite() {
    let mut p = seed();
    p["spec"]["ingress"]
        .as_array_mut()
        .unwrap()
        .push(json!({"action": "Deny", "source": {"selector": "role == 'db'"}}));
    let report = policy::lint(&collected(&[p]), DEFAULT_RELEASE).unwrap();
    let f = &report.findings[0];
    assert_eq!(f.code, "source-and-destination-selectors");
    assert!(f.suggestion.rewrite.is_none(), "{:?}", f.suggestion);
    assert!(
        f.suggestion.text.contains("order matters"),
        "{}",
        f.suggestion.text
    );
}

#[test]
fn a_namespaced_policy_applies_only_in_its_namespace_and_egress_moves_the_source() {
    let p = json!({
        "apiVersion": "crd.projectcalico.org/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "web-out", "namespace": "shop"},
        "spec": {"selector": "", "types": ["Egress"], "egress": [{
            "action": "Allow",
            "source": {"selector": "role == 'webserver'"},
            "destination": {"selector": "role == 'db'"},
        }]},
    });
    let mut other = p.clone();
    other["metadata"]["namespace"] = json!("elsewhere");
    let report = policy::lint(&collected(&[p.clone(), other]), DEFAULT_RELEASE).unwrap();
    let shop = report
        .policies
        .iter()
        .find(|e| e.namespace.as_deref() == Some("shop"))
        .unwrap();
    assert_eq!(shop.applies_to, 30);
    // One ACL each: source (local) 25 webservers in shop, destination (remote) 10 databases.
    assert_eq!((shop.hns_acls, shop.address_pairs), (30, 30 * 25 * 10));
    let elsewhere = report
        .policies
        .iter()
        .find(|e| e.namespace.as_deref() == Some("elsewhere"))
        .unwrap();
    assert_eq!((elsewhere.applies_to, elsewhere.hns_acls), (0, 0));
    assert_eq!(report.findings.len(), 1, "{:?}", report.findings);
    let f = &report.findings[0];
    assert_eq!(
        (f.rule.as_str(), f.after.hns_acls, f.after.address_pairs),
        ("egress[0]", 20, 20 * 10)
    );
    let rewrite = f.suggestion.rewrite.as_ref().unwrap();
    assert_eq!(rewrite[1]["spec"]["selector"], "role == 'webserver'");
    assert_eq!(rewrite[1]["metadata"]["namespace"], "shop");
}

#[test]
fn kubernetes_policies_are_converted_and_rules_windows_leaves_out_are_found() {
    let k8s = json!({
        "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "podSelector": {"matchLabels": {"role": "webserver"}},
            "ingress": [
                {"from": [{"podSelector": {"matchExpressions": [{"key": "role", "operator": "In", "values": ["client"]}]}}],
                 "ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}]},
                {"from": [{"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}]},
            ],
        },
    });
    let report = policy::lint(&collected(&[k8s]), DEFAULT_RELEASE).unwrap();
    let e = &report.policies[0];
    assert_eq!(e.api_version, "networking.k8s.io/v1");
    assert_eq!(e.applies_to, 20);
    // ingress[0]: two Calico rules (TCP, UDP), one ACL each holding the 30 clients; ingress[1]
    // is left out.
    assert_eq!((e.hns_acls, e.address_pairs), (20 * 2, 20 * 2 * 30));
    assert_eq!(report.findings.len(), 1);
    assert_eq!(report.findings[0].code, "skipped-on-windows");
    assert_eq!(report.findings[0].rule, "ingress[1]");
}

#[test]
fn a_malformed_selector_is_an_error_naming_the_policy_and_the_position() {
    let dir = tempfile::tempdir().unwrap();
    let mut bad = seed();
    bad["spec"]["ingress"][0]["source"]["selector"] = json!("role = 'client'");
    write_inputs(dir.path(), &[bad]);
    let run = lint_dir(dir.path());
    let message = run.1["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    assert_refused(
        run,
        "invalid-input",
        "GlobalNetworkPolicy calico-dest-selector",
    );
    assert!(
        message.contains("ingress[0].source.selector") && message.contains("position 5"),
        "{message}"
    );

    let mut ok = seed();
    ok["spec"]["ingress"][0]["source"] = json!({"namespaceSelector": "global()"});
    let c = collected(&[ok]);
    assert_eq!(
        c.policies.len(),
        1,
        "global() alone in a rule's namespaceSelector is Calico's"
    );
}

fn seed_with_selector(s: &str) -> Value {
    let mut p = seed();
    p["spec"]["selector"] = json!(s);
    p
}

fn collected_err(p: &Value) -> bool {
    let mut c = Collected::default();
    c.add(p.clone(), "the test").is_err()
}

#[test]
fn global_is_refused_outside_a_rules_namespace_selector() {
    assert!(collected_err(&seed_with_selector("global()")));
    let mut p = seed();
    p["spec"]["ingress"][0]["source"] = json!({"namespaceSelector": "global() || a == 'b'"});
    assert!(collected_err(&p));
    p["spec"]["ingress"][0]["source"] = json!({"selector": "global()"});
    assert!(collected_err(&p));
}

#[test]
fn unreadable_input_exits_2_with_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    assert_refused(
        lint_dir(&dir.path().join("missing")),
        "input-unreadable",
        "missing",
    );
    fs_err::write(dir.path().join("x.yaml"), "a: [unclosed").unwrap();
    assert_refused(lint_dir(dir.path()), "invalid-input", "x.yaml");
}

#[test]
fn the_cluster_is_read_a_page_at_a_time() {
    let api = FakeApi::start();
    let mut objects = cluster();
    for i in 0..1200 {
        objects.push(pod(
            "shop",
            &format!("many-{i}"),
            "lin-1",
            json!({"role": "client"}),
        ));
    }
    put_all(&api, &objects);
    let mut gnp = seed();
    gnp["apiVersion"] = json!("crd.projectcalico.org/v1");
    api.put(
        "/apis/crd.projectcalico.org/v1/globalnetworkpolicies/calico-dest-selector",
        gnp,
    );
    let (out, doc) = lint_cluster(&api);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // 30 Windows endpoints, one ACL each; the source now matches 1230 clients.
    assert_eq!(doc["policies"][0]["hns_acls"], 30);
    assert_eq!(doc["policies"][0]["address_pairs"], 30 * 1230 * 25);
    let pages = api
        .requests()
        .iter()
        .filter(|(m, p)| m == "GET" && p.starts_with("/api/v1/pods"))
        .count();
    assert_eq!(pages, 3, "1267 pods in pages of 500");
}

#[test]
fn input_past_a_cap_or_of_the_wrong_shape_is_refused_naming_it() {
    // Directories nested deeper than 16 (a symlink loop would be endless).
    let dir = tempfile::tempdir().unwrap();
    let mut deep = dir.path().to_path_buf();
    for i in 0..18 {
        deep = deep.join(format!("d{i}"));
    }
    fs_err::create_dir_all(&deep).unwrap();
    let yaml = serde_saphyr::to_string(&seed()).unwrap();
    fs_err::write(deep.join("p.yaml"), yaml).unwrap();
    assert_refused(lint_dir(dir.path()), "input-unreadable", "deeper than 16");

    // A label that is not a string, in a list read item by item.
    let dir = tempfile::tempdir().unwrap();
    let mut bad = pod("shop", "p", "win-1", json!({"role": 5}));
    bad.as_object_mut().unwrap().remove("kind");
    let list = json!({"apiVersion": "v1", "kind": "PodList", "items": [bad]});
    fs_err::write(dir.path().join("pods.json"), list.to_string()).unwrap();
    assert_refused(lint_dir(dir.path()), "invalid-input", "pods.json");

    // A pipe named like a manifest is refused, not waited on forever.
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("stuck.yaml");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        assert_refused(
            lint_dir(dir.path()),
            "input-unreadable",
            "not a regular file",
        );
    }

    // A selector, a name and a rule list past their caps.
    let mut long = seed();
    long["spec"]["selector"] = json!(format!("a == '{}'", "x".repeat(16 << 10)));
    assert!(collected_err(&long));
    let mut name = seed();
    name["metadata"]["name"] = json!("n".repeat(254));
    assert!(collected_err(&name));
    let mut many = seed();
    many["spec"]["ingress"] = json!(vec![json!({"action": "Allow"}); 10_001]);
    assert!(collected_err(&many));
    many["spec"]["ingress"] = json!(vec![json!({"action": "Allow"}); 10_000]);
    assert!(!collected_err(&many));
}

#[test]
fn an_api_list_gives_its_items_their_kind() {
    let dir = tempfile::tempdir().unwrap();
    let items: Vec<Value> = cluster()
        .into_iter()
        .filter(|o| o["kind"] == "Pod")
        .map(|mut o| {
            o.as_object_mut().unwrap().remove("kind");
            o
        })
        .collect();
    let list = json!({"apiVersion": "v1", "kind": "PodList", "items": items});
    fs_err::write(dir.path().join("pods.json"), list.to_string()).unwrap();
    // Beside the nodes, a custom resource: its CRD's schema shapes its status (here a phase
    // that is no string), and the lint, which does not use it, passes over it.
    let mut nodes: Vec<Value> = cluster()
        .into_iter()
        .filter(|o| o["kind"] == "Node")
        .collect();
    nodes.push(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w"}, "status": {"phase": {"step": 2}}}));
    let nodes = json!({"apiVersion": "v1", "kind": "List", "items": nodes});
    fs_err::write(dir.path().join("nodes.json"), nodes.to_string()).unwrap();
    fs_err::write(
        dir.path().join("policy.yaml"),
        serde_saphyr::to_string(&seed()).unwrap(),
    )
    .unwrap();
    let (code, doc, stderr) = lint_dir(dir.path());
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(doc["windows_endpoints"], 30);
}

#[test]
fn rules_felix_on_windows_leaves_out_are_each_found() {
    // felix/dataplane/windows/policysets/policysets.go (v3.31.7), protoRuleToHnsRules. The
    // notSelector of ingress[0] is folded into the namespace's selector
    // (felix/calc/rule_scanner.go:594-612), so that rule is rendered.
    let rules = json!([
        {"action": "Allow", "source": {"notSelector": "role == 'db'"}},
        {"action": "Allow", "source": {"notNets": ["10.0.0.0/8"]}},
        {"action": "Allow", "protocol": "ICMP", "icmp": {"type": 8}},
        {"action": "Allow", "protocol": "TCP", "destination": {"ports": ["http"]}},
        {"action": "Log"},
        {"action": "Allow", "protocol": "TCP", "destination": {"ports": [80, "8000:8080"]}},
    ]);
    let p = json!({
        "apiVersion": "projectcalico.org/v3", "kind": "NetworkPolicy",
        "metadata": {"name": "mixed", "namespace": "shop"},
        "spec": {"selector": "role == 'webserver'", "ingress": rules},
    });
    let report = policy::lint(&collected(&[p]), DEFAULT_RELEASE).unwrap();
    let found: Vec<&str> = report.findings.iter().map(|f| f.rule.as_str()).collect();
    assert_eq!(
        found,
        ["ingress[1]", "ingress[2]", "ingress[3]", "ingress[4]"]
    );
    assert!(
        report
            .findings
            .iter()
            .all(|f| f.code == "skipped-on-windows")
    );
    // ingress[0] (the 55 endpoints in shop that are not databases) and ingress[5] render: two
    // ACLs on each of the 20 Windows webservers.
    assert_eq!(report.policies[0].hns_acls, 20 * 2);
    assert_eq!(report.policies[0].address_pairs, 20 * (55 + 1));
}

#[test]
fn service_account_and_namespace_selectors_scope_as_calico_builds_them() {
    let mut objects = cluster();
    let mut sa = meta("v1", "ServiceAccount", "web", Some("shop"));
    sa["metadata"]["labels"] = json!({"tier": "front"});
    objects.push(sa);
    let mut other = meta("v1", "Namespace", "other", None);
    other["metadata"]["labels"] = json!({"env": "test"});
    objects.push(other);
    objects.push(pod("other", "stray", "win-2", json!({"role": "webserver"})));
    let mut c = Collected::default();
    for o in objects {
        c.add(o, "the test").unwrap();
    }
    // libcalico-go v3.31.7: a serviceAccountSelector matches pcsa.* (networkpolicyprocessor.go);
    // a GlobalNetworkPolicy's namespaceSelector matches pcns.* (globalnetworkpolicyprocessor.go);
    // a rule's serviceAccounts.names match projectcalico.org/serviceaccount (rules.go).
    let policies = [
        json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
            "metadata": {"name": "by-sa"}, "spec": {"serviceAccountSelector": "tier == 'front'"}}),
        json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
            "metadata": {"name": "by-ns"}, "spec": {"namespaceSelector": "env == 'test'"}}),
        json!({"apiVersion": "projectcalico.org/v3", "kind": "GlobalNetworkPolicy",
            "metadata": {"name": "from-web-sa"}, "spec": {"selector": "role == 'db'",
            "ingress": [{"action": "Allow", "source": {"serviceAccounts": {"names": ["web"]}}}]}}),
    ];
    for p in policies {
        c.add(p, "the test").unwrap();
    }
    let report = policy::lint(&c, DEFAULT_RELEASE).unwrap();
    let row = |name: &str| report.policies.iter().find(|p| p.name == name).unwrap();
    // Every pod in shop runs as service account web, whose labels only exist on the object.
    assert_eq!(row("by-sa").applies_to, 30);
    assert_eq!(row("by-ns").applies_to, 1, "the pod in namespace other");
    // 10 Windows databases, each with one ACL holding the 66 pods running as web (the 65 in
    // shop and the one in other: names match in every namespace of a global policy).
    let sa = row("from-web-sa");
    assert_eq!((sa.hns_acls, sa.address_pairs), (10, 10 * 66));
}

#[test]
fn the_text_report_shows_the_table_the_finding_and_its_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path(), &[seed()]);
    let out = crate::support::cmd()
        .args(["lint", "policies", "--from-file"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(3));
    let text = String::from_utf8_lossy(&out.stdout);
    for part in [
        "30 Windows endpoints, 1 policy",
        "POLICY",
        "GlobalNetworkPolicy calico-dest-selector",
        "HNS ACLS",
        "ADDRESS PAIRS",
        "22500",
        "source-and-destination-selectors: GlobalNetworkPolicy calico-dest-selector ingress[0]",
        "HNS ACLs: 30 -> 20; address pairs: 22500 -> 600",
        "ENDPOINT",
        "name: calico-dest-selector-ingress-0",
        "selector: role == \"webserver\"",
    ] {
        assert!(text.contains(part), "{part:?} is not in:\n{text}");
    }
}

#[test]
fn a_server_whose_lists_never_end_is_stopped() {
    let api = FakeApi::start();
    api.lock().endless_lists = true;
    let (out, doc) = lint_cluster(&api);
    assert_eq!(out.status.code(), Some(1), "{doc}");
    assert_eq!(doc["error"]["kind"], "cluster-bad-answer", "{doc}");
    assert!(doc.to_string().contains("after 4000 pages"), "{doc}");
}

#[test]
fn a_rule_or_a_spec_that_is_not_a_map_is_refused() {
    let mut p = seed();
    p["spec"]["ingress"] = json!(["allow everything"]);
    assert!(collected_err(&p));
    p["spec"] = json!("all()");
    assert!(collected_err(&p));
}

/// `kubectl get -o yaml` snapshots of ordinary size are read: a `kind: List` of 10,000 pods
/// (2 MB) and a file of 1,100 documents were over the YAML parser's own default limits, which
/// are not lint's caps. A key given twice is said in plain words.
#[test]
fn ordinary_yaml_snapshots_are_read_within_the_documented_caps() {
    let dir = tempfile::tempdir().unwrap();
    let mut items = cluster();
    for i in 0..10_000 {
        items.push(pod(
            "shop",
            &format!("many-{i}"),
            "lin-1",
            json!({"role": "client", "tier": "x"}),
        ));
    }
    let list = json!({"apiVersion": "v1", "kind": "List", "items": items});
    fs_err::write(
        dir.path().join("cluster.yaml"),
        serde_saphyr::to_string(&list).unwrap(),
    )
    .unwrap();
    let docs: Vec<String> = (0..1_100)
        .map(|i| {
            serde_saphyr::to_string(&pod(
                "shop",
                &format!("doc-{i}"),
                "lin-1",
                json!({"role": "client"}),
            ))
            .unwrap()
        })
        .chain([serde_saphyr::to_string(&seed()).unwrap()])
        .collect();
    fs_err::write(dir.path().join("docs.yaml"), docs.join("---\n")).unwrap();
    let (code, doc, stderr) = lint_dir(dir.path());
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(doc["windows_endpoints"], 30, "{stderr}");

    let bad = tempfile::tempdir().unwrap();
    fs_err::write(bad.path().join("dup.yaml"), "kind: Pod\nkind: Node\n").unwrap();
    let (code, doc, stderr) = lint_dir(bad.path());
    assert_eq!(code, 2, "{stderr}");
    let message = doc["error"]["message"].to_string();
    assert!(
        !message.contains("DuplicateKeyPolicy") && !message.contains("budget"),
        "{message}"
    );
    assert!(message.contains("appears twice"), "{message}");
}

/// The same snapshot given twice counts each object once, with a note.
#[test]
fn an_object_read_twice_is_counted_once() {
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path(), &[seed()]);
    let (_, once, _) = lint_dir(dir.path());
    fs_err::copy(
        dir.path().join("cluster.json"),
        dir.path().join("cluster-copy.json"),
    )
    .unwrap();
    fs_err::copy(
        dir.path().join("policies/all.yaml"),
        dir.path().join("policies/again.yaml"),
    )
    .unwrap();
    let (code, twice, stderr) = lint_dir(dir.path());
    assert_eq!(code, 3, "{stderr}");
    assert_eq!(
        twice["windows_endpoints"], once["windows_endpoints"],
        "{stderr}"
    );
    assert_eq!(twice["policies"], once["policies"], "{stderr}");
    assert!(stderr.contains("read more than once"), "{stderr}");
}

/// A valid policy whose written-out rewrite would be past the selector cap (the policy's and
/// the rule's selectors joined) keeps its suggestion in words; the run does not fail on an
/// object nobody wrote.
#[test]
fn a_rewrite_past_the_selector_cap_stays_a_suggestion_in_words() {
    let long = |key: &str| {
        (0..900)
            .map(|i| format!("{key}{i} != \"x\""))
            .collect::<Vec<_>>()
            .join(" && ")
    };
    let mut p = seed();
    p["spec"]["selector"] = json!(long("a"));
    p["spec"]["ingress"][0]["destination"]["selector"] =
        json!(format!("role == \"webserver\" && {}", long("b")));
    assert!(p["spec"]["selector"].as_str().unwrap().len() < 16 << 10);
    let dir = tempfile::tempdir().unwrap();
    write_inputs(dir.path(), &[p]);
    let (code, doc, stderr) = lint_dir(dir.path());
    assert_eq!(code, 3, "{doc} {stderr}");
    let f = &doc["findings"][0];
    assert_eq!(f["suggestion"]["rewrite"], Value::Null, "{f}");
    assert!(
        f["suggestion"]["text"]
            .as_str()
            .unwrap()
            .contains("not written out"),
        "{f}"
    );
}

/// `--from-file -` says that standard input is not read.
#[test]
fn stdin_is_said_as_what_it_is() {
    let out = crate::support::cmd()
        .args(["lint", "policies", "--from-file", "-"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("does not read standard input"), "{stderr}");
}

/// From the cluster the lint reads Tiers and staged policies too (crd.projectcalico.org/v1), and
/// renders as the cluster's Calico (ClusterInformation's calicoVersion): a staged policy ordered
/// first in its tier hides the enforced one after it on 3.30 and later, never before.
#[test]
fn tiers_and_staged_policies_are_read_from_the_cluster_at_its_calico_version() {
    let api = FakeApi::start();
    let mut objects = cluster();
    objects.retain(|o| o["kind"] != "Pod" || o["metadata"]["name"] == "web-win-0");
    put_all(&api, &objects);
    let staged = json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "StagedNetworkPolicy",
        "metadata": {"name": "try", "namespace": "shop"},
        "spec": {"order": 1, "selector": "all()", "ingress": [{"action": "Deny"}]}});
    api.put(
        "/apis/crd.projectcalico.org/v1/namespaces/shop/stagednetworkpolicies/try",
        staged,
    );
    let enforced = json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "NetworkPolicy",
        "metadata": {"name": "real", "namespace": "shop"},
        "spec": {"order": 2, "selector": "all()", "ingress": [{"action": "Allow"}]}});
    api.put(
        "/apis/crd.projectcalico.org/v1/namespaces/shop/networkpolicies/real",
        enforced,
    );
    let info = |version: &str| {
        json!({"apiVersion": "crd.projectcalico.org/v1", "kind": "ClusterInformation",
            "metadata": {"name": "default"}, "spec": {"calicoVersion": version}})
    };
    api.put(
        "/apis/crd.projectcalico.org/v1/clusterinformations/default",
        info("v3.31.7"),
    );
    let (out, doc) = lint_cluster(&api);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(doc["calico_version"], "3.31");
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["code"].as_str().unwrap())
        .collect();
    assert_eq!(codes, ["staged-policy-hides-later-policies"], "{doc}");
    api.put(
        "/apis/crd.projectcalico.org/v1/clusterinformations/default",
        info("v3.29.4"),
    );
    let (out, doc) = lint_cluster(&api);
    assert_eq!(out.status.code(), Some(0), "{doc}");
    assert_eq!(doc["calico_version"], "3.29");
}
