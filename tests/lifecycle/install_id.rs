//! The install id: a Node and its token-renewal grant are an install's to forget only when the
//! Node carries that install's id, not merely its config's hash, which every node installed
//! from the same config shares.

use crate::support::Node;
use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use serde_json::{Value, json};

const GRANT: &str = "calicoctl-win-token-renewal-win-1";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";
const NODE: &str = "/api/v1/nodes/win-1";
const RECORD: &str = "calicowindows/calicoctl-win-install.json";

/// Installs on `node`; the Node's annotations then.
fn install(node: &Node, api: &FakeApi) -> Value {
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    api.get(NODE).expect("node")["metadata"]["annotations"].clone()
}

fn ready(n: &Value) -> Value {
    n["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "CalicoWindowsReady"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// What the second host's CalicoNode writes once it runs: the condition True.
fn set_ready(api: &FakeApi) {
    let mut n = api.get(NODE).expect("node");
    n["status"]["conditions"] = json!([{"type": "CalicoWindowsReady", "status": "True",
        "reason": "Ready", "message": "", "lastHeartbeatTime": "2026-01-01T00:00:00Z",
        "lastTransitionTime": "2026-01-01T00:00:00Z"}]);
    api.put(NODE, n);
}
/// `uninstall --purge` on a host whose Node another install holds now: it succeeds, says so,
/// and leaves the grant. The Node after it.
fn uninstall_leaving_another_install(node: &Node, api: &FakeApi) -> Value {
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        doc["warnings"].to_string().contains("another install's id"),
        "{doc}"
    );
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_some());
    api.get(NODE).expect("node")
}

/// A host installed as win-1, then another host installed from the same config under the same
/// name (the node re-provisioned): uninstalling the first host leaves the second's
/// annotations, condition and grant, said; uninstalling the second removes them. (Before the
/// install id, the first host's uninstall took the Node, with the same config hash, for its own.)
#[test]
fn uninstalling_a_host_replaced_under_its_name_leaves_the_new_install() {
    let api = FakeApi::calico();
    let first = Node::new(&api);
    let a = install(&first, &api);
    let second = Node::new(&api);
    let b = install(&second, &api);
    assert_eq!(
        a["calicoctl-win/config-hash"],
        b["calicoctl-win/config-hash"]
    );
    let id = &b["calicoctl-win/install-id"];
    assert!(
        id.is_string() && *id != a["calicoctl-win/install-id"],
        "{a} {b}"
    );
    set_ready(&api);

    let n = uninstall_leaving_another_install(&first, &api);
    assert_eq!(n["metadata"]["annotations"], b, "{n}");
    assert_eq!(ready(&n)["status"], "True", "{n}");
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_some());

    let (code, _, stderr) = second.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    let n = api.get(NODE).expect("node");
    let annotations = n["metadata"]["annotations"].as_object();
    assert!(
        annotations.is_none_or(|a| !a.keys().any(|k| k.starts_with("calicoctl-win/"))),
        "{n}"
    );
    assert_eq!(ready(&n)["reason"], "NotInstalled", "{n}");
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_none());
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_none());
}

/// A reinstall keeps the install's id: the record and the Node carry the first install's.
#[test]
fn a_reinstall_keeps_the_install_id() {
    let node = Node::healthy().build();
    let first = install(&node, node.api());
    let again = install(&node, node.api());
    assert!(first["calicoctl-win/install-id"].is_string(), "{first}");
    assert_eq!(
        first["calicoctl-win/install-id"],
        again["calicoctl-win/install-id"]
    );
}

/// An install recorded by an older calicoctl-win (no id in its record, none on its Node) is
/// told by the config hash as before; a Node another install marked with an id since (the
/// name re-provisioned by a newer calicoctl-win) is that install's, whatever its config.
#[test]
fn a_record_without_an_install_id_is_told_by_the_nodes_id_or_else_its_config() {
    let strip = |api: &FakeApi, node: &Node| {
        let path = node.c_drive(RECORD);
        let mut rec: Value = serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
        rec.as_object_mut()
            .unwrap()
            .remove("install_id")
            .expect("id");
        fs_err::write(&path, serde_json::to_vec_pretty(&rec).unwrap()).unwrap();
        let mut n = api.get(NODE).expect("node");
        n["metadata"]["annotations"]
            .as_object_mut()
            .expect("annotations")
            .remove("calicoctl-win/install-id");
        api.put(NODE, n);
    };
    // An older install alone: forgotten by its config hash.
    let api = FakeApi::calico();
    let old = Node::new(&api);
    install(&old, &api);
    strip(&api, &old);
    let (code, _, stderr) = old.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    let n = api.get(NODE).expect("node");
    assert_eq!(ready(&n)["reason"], "NotInstalled", "{n}");
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_none());

    // An older install, then a newer one on another host under the same name: the older's
    // uninstall leaves the newer's Node and grant.
    let api = FakeApi::calico();
    let first = Node::new(&api);
    install(&first, &api);
    strip(&api, &first);
    let second = Node::new(&api);
    install(&second, &api);
    set_ready(&api);
    let n = uninstall_leaving_another_install(&first, &api);
    assert_ne!(ready(&n)["reason"], "NotInstalled", "{n}");
}
