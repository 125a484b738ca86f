//! A datastore migration under an installed node: kube-controllers leaves
//! `crd.projectcalico.org/v1` locked and unlocks only `projectcalico.org/v3`, so the node's
//! components must be pinned to v3 (the fake API server keeps v1 locked as the controller does:
//! `FakeApi::datastore_migration`).

use crate::support::fake_api::FakeApi;
use crate::support::node::Node;
use serde_json::{Value, json};

const CLUSTER_INFO: &str = "/apis/crd.projectcalico.org/v1/clusterinformations/default";

/// A v3.32.1 cluster and a node installed from v3.32.1's release, which reads the pin.
fn node_on_migrating_cluster(version: &str) -> (FakeApi, Node) {
    let api = FakeApi::calico();
    let mut info = api.get(CLUSTER_INFO).expect("info");
    info["spec"]["calicoVersion"] = json!(format!("v{version}"));
    api.put(CLUSTER_INFO, info);
    let node = Node::on(&api)
        .release(version, "calico-node.exe")
        .installed()
        .build();
    (api, node)
}

fn findings(doc: &Value, code: &str) -> Vec<Value> {
    doc["findings"]
        .as_array()
        .map(|f| f.iter().filter(|f| f["code"] == code).cloned().collect())
        .unwrap_or_default()
}

fn read(node: &Node, rel: &str) -> String {
    fs_err::read_to_string(node.c_drive(rel)).expect("file")
}

const PIN: &str = "CALICO_API_GROUP=projectcalico.org/v3";
const CNI_CONF: &str = "program files/containerd/cni/conf/10-calico.conf";

/// At `Converged` the node reads the locked v1: status says so with reconfigure as its fix,
/// and reconfigure pins v3 for calico-node, Felix and the CNI plugin and restarts them; then
/// status has nothing to say of it, nor after the clean-up.
#[test]
fn after_a_converged_migration_reconfigure_pins_the_node_to_v3() {
    let (api, node) = node_on_migrating_cluster("3.32.1");
    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(
        findings(&doc, "api-group"),
        Vec::<Value>::new(),
        "{err} {doc}"
    );
    assert!(!read(&node, "calicowindows/calico-node.env").contains("CALICO_API_GROUP"));

    api.datastore_migration("Converged");
    let (code, doc, _) = node.run(&["status"]);
    assert_ne!(code, 0, "{doc}");
    let found = findings(&doc, "api-group");
    assert_eq!(found.len(), 1, "{doc}");
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("crd.projectcalico.org/v1 is locked")),
        "{found:?}"
    );
    assert!(
        found[0]["remedy"]
            .as_str()
            .is_some_and(|m| m.starts_with("calicoctl-win reconfigure")),
        "{found:?}"
    );
    assert_eq!(
        doc["calico_api"]["components_read"],
        "crd.projectcalico.org/v1"
    );

    let (code, doc, err) = node.run(&["reconfigure"]);
    assert_eq!(code, 0, "{err} {doc}");
    let shown = doc.to_string();
    assert!(
        shown.contains("CalicoNode") && shown.contains("CalicoFelix"),
        "{doc}"
    );
    for env in [
        "calicowindows/calico-node.env",
        "calicowindows/calico-felix.env",
    ] {
        assert!(read(&node, env).lines().any(|l| l == PIN), "{env}");
    }
    let conf: Value = serde_json::from_str(&read(&node, CNI_CONF)).expect("conf");
    assert_eq!(conf["calico_api_group"], "projectcalico.org/v3", "{conf}");

    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(
        findings(&doc, "api-group"),
        Vec::<Value>::new(),
        "{err} {doc}"
    );
    assert_eq!(findings(&doc, "file-drift"), Vec::<Value>::new(), "{doc}");
    assert_eq!(doc["calico_api"]["components_read"], "projectcalico.org/v3");

    // The clean-up deletes v1: discovery alone reads v3, and the pin stays.
    api.finish_datastore_migration();
    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(
        findings(&doc, "api-group"),
        Vec::<Value>::new(),
        "{err} {doc}"
    );
    assert_eq!(findings(&doc, "file-drift"), Vec::<Value>::new(), "{doc}");
}

/// While `Migrating` both groups are locked: there is nowhere to move, nothing is pinned.
/// A release before v3.32.0 cannot read the pin: status sends it to a newer release.
#[test]
fn a_migrating_cluster_pins_nothing_and_an_old_release_is_told_so() {
    let (api, node) = node_on_migrating_cluster("3.32.1");
    api.datastore_migration("Migrating");
    let (_, doc, _) = node.run(&["status"]);
    assert_eq!(findings(&doc, "api-group"), Vec::<Value>::new(), "{doc}");
    let (code, _, err) = node.run(&["reconfigure"]);
    assert_eq!(code, 0, "{err}");
    assert!(!read(&node, "calicowindows/calico-node.env").contains("CALICO_API_GROUP"));

    let (api, node) = node_on_migrating_cluster("3.31.7");
    api.datastore_migration("Converged");
    let (_, doc, _) = node.run(&["status"]);
    let found = findings(&doc, "api-group");
    assert_eq!(found.len(), 1, "{doc}");
    assert!(
        found[0]["remedy"]
            .as_str()
            .is_some_and(|r| r.contains("v3.32.0 or later")),
        "{found:?}"
    );
    let (code, _, err) = node.run(&["reconfigure"]);
    assert_eq!(code, 0, "{err}");
    assert!(!read(&node, "calicowindows/calico-node.env").contains("CALICO_API_GROUP"));
    assert!(!read(&node, CNI_CONF).contains("calico_api_group"));
}
