//! Checks and files that real clusters and nodes need: the operator's own Windows install,
//! Windows Server 2025, a node IP with its prefix, AKS's static rules for policy-only Calico.

use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Node, on_node};
use serde_json::{Value, json};

fn verdict<'a>(doc: &'a Value, id: &str) -> &'a Value {
    crate::support::items(doc, "checks")
        .find(|c| c["id"] == id)
        .unwrap_or_else(|| panic!("no check {id}: {doc}"))
}

#[test]
fn an_operator_that_installs_windows_itself_stops_the_install_with_a_choice() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let (code, doc, stderr) = node.run(&["preflight"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(verdict(&doc, "operator-windows")["verdict"], "pass");

    let path = "/apis/operator.tigera.io/v1/installations/default";
    let mut inst = api.get(path).expect("installation");
    inst["spec"]["calicoNetwork"]["windowsDataplane"] = json!("HNS");
    api.put(path, inst);
    let (code, doc, _) = node.run(&["preflight"]);
    assert_eq!(code, 3);
    let c = verdict(&doc, "operator-windows");
    assert_eq!(c["verdict"], "fail", "{c}");
    assert!(
        c["remedy"]
            .as_str()
            .is_some_and(|r| r.contains("migrate from-operator")
                && r.contains("windowsDataplane\":\"Disabled")),
        "{c}"
    );
    let before = snapshot(&node.sim());
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, doc, _) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["blocking"], json!(["operator-windows"]), "{doc}");
    assert_same(&snapshot(&node.sim()), &before, "refused install");

    // The node labelled, the affinity not yet written: the DaemonSet still comes.
    let node_path = "/api/v1/nodes/win-1";
    let mut n = api.get(node_path).expect("node");
    n["metadata"]["labels"]["calicoctl-win/runs-calico"] = json!("true");
    api.put(node_path, n);
    let (code, doc, _) = node.run(&["preflight"]);
    assert_eq!(code, 3, "{doc}");
    // With the affinity that keeps the DaemonSet off labelled nodes, this node is safe while
    // the operator runs Calico on the others (as `migrate` leaves it).
    let mut inst = api.get(path).expect("installation");
    inst["spec"]["calicoNodeWindowsDaemonSet"] = json!({"spec": {"template": {"spec": {"affinity":
        {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "calicoctl-win/runs-calico", "operator": "NotIn", "values": ["true"]}]}]}}}}}}});
    api.put(path, inst);
    let (code, doc, _) = node.run(&["preflight"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(verdict(&doc, "operator-windows")["verdict"], "pass");

    // A manifest-based cluster has no Installation at all: nothing to fear.
    api.remove(path);
    let (code, doc, _) = node.run(&["preflight"]);
    assert_eq!(code, 0);
    assert_eq!(verdict(&doc, "operator-windows")["verdict"], "pass");
}

/// Windows Server 2025 is a supported build (`os-build` passes); what is true of it depends
/// on its update revision, which the known-issue table judges: before the April 2026 update
/// (26100.32690) HNS applies no endpoint ACL, a warning with its fix.
#[test]
fn windows_server_2025_before_its_april_2026_update_is_warned_of_its_acls() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = on_node()
        .args([
            "preflight",
            "--offline",
            "-o",
            "json",
            "--sim-profile",
            "ws2025",
            "--sim-host",
        ])
        .arg(dir.path().join("host"))
        .assert()
        .code(0)
        .get_output()
        .clone();
    let doc = crate::support::json(&out.stdout);
    assert_eq!(verdict(&doc, "os-build")["verdict"], "pass");
    let k = verdict(&doc, "known-issues");
    assert_eq!(k["verdict"], "warn", "{k}");
    assert!(
        k["message"]
            .as_str()
            .is_some_and(|m| m.contains("ws2025-acl-policies")),
        "{k}"
    );
}

#[test]
fn a_node_ip_with_its_prefix_reaches_calico_node_as_given() {
    let dir = tempfile::tempdir().expect("tmp");
    on_node()
        .args(["--set", "node.ip=10.0.0.5/24", "render", "--output-dir"])
        .arg(dir.path())
        .assert()
        .success();
    let env = fs_err::read_to_string(dir.path().join("calico-node.env")).expect("env");
    assert!(env.lines().any(|l| l == "IP=10.0.0.5/24"), "{env}");
    on_node()
        .args(["--set", "node.ip=10.0.0.5/40", "render", "--output-dir"])
        .arg(dir.path())
        .assert()
        .code(2)
        .stderr(predicates::str::contains("ADDRESS/PREFIX"));
}

#[test]
fn policy_only_on_aks_writes_calicos_static_rules_and_uninstall_removes_them() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let out = on_node()
        .args([
            "preflight",
            "--offline",
            "--sim-profile",
            "ws2022-aks",
            "--sim-host",
        ])
        .arg(node.sim())
        .output()
        .expect("create host");
    assert!(out.status.code().is_some());
    let initial = snapshot(&node.sim());
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, stderr) = node.run(&[
        "install",
        "--release-zip",
        &zip.display().to_string(),
        "--set",
        "backend=none",
        "--set",
        "kube_network=azure.*",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let rules = node.c_drive("calicowindows/static-rules.json");
    let doc: Value =
        serde_json::from_str(&fs_err::read_to_string(&rules).expect("rules")).expect("json");
    // What felix's static_rules.go reads: a provider and ACL rules with id and priority.
    assert_eq!(doc["Provider"], "AKS");
    let rule = &doc["Rules"][0]["Rule"];
    assert_eq!(rule["RemoteAddresses"], "168.63.129.16/32");
    assert_eq!(rule["RemotePorts"], "80");
    assert_eq!(rule["Action"], "Block");
    assert_eq!(rule["Type"], "ACL");
    assert_eq!(rule["RuleType"], "Switch");
    assert_ne!(rule["Priority"], 0);
    let (code, _, stderr) = node.run(&["uninstall", "--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(!rules.exists());
    assert_same(&snapshot(&node.sim()), &initial, "after uninstall");

    // Not on AKS (no azure network), no static rules.
    let other = tempfile::tempdir().expect("tmp");
    let out = on_node()
        .args(["--set", "backend=none", "render", "--output-dir"])
        .arg(other.path())
        .output()
        .expect("run");
    assert!(out.status.success());
    assert!(!other.path().join("static-rules.json").exists());
}
