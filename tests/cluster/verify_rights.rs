//! `verify`'s role (`fleet rbac --identity verify`, from `cluster::verify_rights`) is enough and
//! minimal: on the fake API server, which enforces RBAC as kube-apiserver does, `verify` runs
//! under a service account bound to exactly it (a healthy run, a failing one whose pod's event
//! is read, a killed run's namespace removed, everything cleaned up), and without any one rule
//! some part of that fails.

use crate::support::fake_api::{FakeApi, meta};
use crate::support::{Node, on_node};
use serde_json::{Value, json};

fn manifests() -> Vec<Value> {
    let out = on_node()
        .args(["fleet", "rbac", "--identity", "verify", "-o", "json"])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    doc["manifests"].as_array().expect("manifests").clone()
}

/// Runs what `verify` does as `calicoctl-win-verify`: what went wrong first, if anything.
fn workload(api: &FakeApi, dir: &std::path::Path) -> Option<String> {
    let kubeconfig =
        crate::support::service_account_kubeconfig(api, dir, "kube-system", "calicoctl-win-verify");
    let mut old = meta("v1", "Namespace", "calicoctl-win-verify-old", None);
    old["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    api.put("/api/v1/namespaces/calicoctl-win-verify-old", old);
    let node = Node::new(api);
    let (code, doc, err) = node.run_as(&kubeconfig, &["verify", "--node", "win-a"]);
    if code != 0 || doc["cleaned_up"] != true {
        return Some(format!("a healthy run: exit {code}, {err}, {doc}"));
    }
    if doc["leftovers_removed"] != json!(["calicoctl-win-verify-old"]) {
        return Some(format!("the killed run's namespace: {doc}"));
    }
    api.lock().dataplane.stuck_on.insert("linux-1".into());
    let (code, doc, err) = node.run_as(&kubeconfig, &["verify", "--node", "win-a"]);
    let message = doc["checks"][0]["finding"]["message"]
        .as_str()
        .unwrap_or_default();
    if code != 1 || !message.contains("FailedCreatePodSandBox") || doc["cleaned_up"] != true {
        return Some(format!("a run with a stuck pod: exit {code}, {err}, {doc}"));
    }
    None
}

#[test]
fn the_verify_role_is_enough_and_every_rule_is_needed() {
    let all = manifests();
    let kinds: Vec<&str> = all.iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(
        kinds,
        ["ServiceAccount", "ClusterRole", "ClusterRoleBinding"]
    );
    let role = all
        .iter()
        .position(|m| m["kind"] == "ClusterRole")
        .expect("role");
    let rules = all[role]["rules"].as_array().expect("rules").len();
    assert_eq!(rules, 13);
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, _) = super::verify::cluster();
    for m in &all {
        assert!(api.apply(m));
    }
    assert_eq!(workload(&api, dir.path()), None);
    let mut unused = Vec::new();
    for j in 0..rules {
        let (api, _) = super::verify::cluster();
        let mut objects = all.clone();
        let rule = objects[role]["rules"]
            .as_array_mut()
            .expect("rules")
            .remove(j);
        for m in &objects {
            assert!(api.apply(m));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        if workload(&api, dir.path()).is_none() {
            unused.push(rule.to_string());
        }
    }
    assert!(unused.is_empty(), "rules verify does not need: {unused:#?}");
    // And without the role the identity can do nothing.
    let (api, _) = super::verify::cluster();
    api.apply(&all[0]);
    assert!(workload(&api, dir.path()).is_some());
}
