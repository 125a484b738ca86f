//! The node's network identity across the vSwitch: the External network binds the adapter
//! that holds the node IP, on a node with two NICs on one subnet (the `ws2022-two-nics`
//! profile: the default route on `Ethernet` 10.0.0.5, the node IP on `Ethernet 2` 10.0.0.6),
//! the case of rancher/rke2#3533 and projectcalico/calico#10536.

use crate::support::Node;
use crate::support::snapshot::{assert_same, snapshot};
use serde_json::Value;

fn external(node: &Node) -> Value {
    node.state()["networks"]
        .as_array()
        .expect("networks")
        .iter()
        .find(|n| n["Name"] == "External")
        .cloned()
        .expect("the External network")
}

fn bound_adapter(network: &Value) -> Option<String> {
    network["Policies"]
        .as_array()?
        .iter()
        .find(|p| p["Type"] == "NetAdapterName")
        .and_then(|p| p["Settings"]["NetworkAdapterName"].as_str())
        .map(str::to_owned)
}

#[test]
fn the_external_network_binds_the_adapter_holding_the_nodes_internal_ip() {
    let node = Node::healthy()
        .profile("ws2022-two-nics")
        .release("3.30.2", "calico-node.exe")
        .build();
    node.api().set_node_internal_ip("win-1", Some("10.0.0.6"));

    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    assert_eq!(
        doc["uplink"]["why"],
        "it holds 10.0.0.6 (the Node's InternalIP)"
    );
    let ext = external(&node);
    assert_eq!(bound_adapter(&ext).as_deref(), Some("Ethernet 2"), "{ext}");
    // The vSwitch took Ethernet 2: its address is on vEthernet (Ethernet 2), with its MAC.
    let state = node.state();
    let vnic = state["adapters"]
        .as_array()
        .expect("adapters")
        .iter()
        .find(|a| a["name"] == "vEthernet (Ethernet 2)")
        .cloned()
        .expect("the vSwitch's host adapter");
    assert_eq!(vnic["mac"], "00-15-5D-00-00-06", "{vnic}");

    // One address everywhere: status finds no layer that differs.
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (_, doc, err) = node.run(&["status"]);
    assert_eq!(doc["address"]["internal_ip"], "10.0.0.6", "{err} {doc}");
    assert_eq!(doc["address"]["networks"]["External"], "10.0.0.6", "{doc}");
    let codes: Vec<&str> = doc["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(!codes.contains(&"address-mismatch"), "{doc}");

    // Installing again reads the adapter back through the vSwitch: nothing to change.
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    assert!(
        doc["uplink"]["why"]
            .as_str()
            .is_some_and(|w| w
                .contains("through the External vSwitch's host adapter vEthernet (Ethernet 2)")),
        "{doc}"
    );
    assert_eq!(doc["actions"].as_array().map(Vec::len), Some(0), "{doc}");
}

#[test]
fn without_the_cluster_kubelets_node_ip_chooses_and_render_and_config_show_say_why() {
    let node = Node::healthy().profile("ws2022-two-nics").build();
    let out = tempfile::tempdir().expect("tempdir");
    let dir = out.path().display().to_string();
    let (code, doc, err) = node.run(&["render", "--output-dir", &dir]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    assert_eq!(
        doc["uplink"]["why"],
        "it holds 10.0.0.6 (kubelet's --node-ip)"
    );
    let text = fs_err::read_to_string(out.path().join("external-network.json")).expect("read");
    let rendered: Value = serde_json::from_str(&text).expect("json");
    assert_eq!(bound_adapter(&rendered).as_deref(), Some("Ethernet 2"));

    let (code, doc, err) = node.run(&["config", "show", "--offline"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
}

#[test]
fn an_install_that_cannot_choose_the_adapter_stops_before_changing_anything() {
    let node = Node::healthy()
        .profile("ws2022-two-nics")
        .release("3.30.2", "calico-node.exe")
        .build();
    let before = snapshot(&node.sim());

    // No adapter holds the Node's InternalIP: preflight's adapter check blocks.
    node.api().set_node_internal_ip("win-1", Some("10.0.0.9"));
    let (code, doc, _) = node.install_local(&[]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["blocking"], serde_json::json!(["adapter"]), "{doc}");
    let check = doc["checks"]
        .as_array()
        .expect("checks")
        .iter()
        .find(|c| c["id"] == "adapter")
        .cloned()
        .expect("adapter check");
    let message = check["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("no adapter holds 10.0.0.9 (the Node's InternalIP)")
            && message.contains("Ethernet (10.0.0.5)")
            && message.contains("Ethernet 2 (10.0.0.6)"),
        "{message}"
    );
    assert!(
        check["remedy"]
            .as_str()
            .is_some_and(|h| h.contains("vxlan.adapter")),
        "{check}"
    );
    assert_same(&snapshot(&node.sim()), &before, "after the refusal");

    // Skipping the check does not skip the choice: install stops on it all the same.
    let (code, doc, _) = node.install_local(&["--skip", "adapter"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["error"]["kind"], "adapter-choice", "{doc}");
    assert_same(&snapshot(&node.sim()), &before, "after the skipped check");

    // A configured adapter the host lacks is refused the same way.
    node.api().set_node_internal_ip("win-1", Some("10.0.0.6"));
    let (code, doc, _) = node.install_local(&["--set", "vxlan.adapter=Ethernet 9"]);
    assert_eq!(code, 3, "{doc}");
    assert_eq!(doc["blocking"], serde_json::json!(["adapter"]), "{doc}");
    assert_same(&snapshot(&node.sim()), &before, "after the second refusal");
}
