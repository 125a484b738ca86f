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

/// Installed on a host with two adapters, the Node's InternalIP on "Ethernet 2": the install's
/// document names that adapter.
fn installed_on_ethernet_2() -> (Node, Value) {
    let node = Node::healthy()
        .profile("ws2022-two-nics")
        .release("3.30.2", "calico-node.exe")
        .build();
    node.api().set_node_internal_ip("win-1", Some("10.0.0.6"));
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    (node, doc)
}

#[test]
fn the_external_network_binds_the_adapter_holding_the_nodes_internal_ip() {
    let (node, doc) = installed_on_ethernet_2();
    assert_eq!(
        doc["uplink"]["why"],
        "it holds 10.0.0.6 (the Node's InternalIP)"
    );
    let ext = external(&node);
    assert_eq!(bound_adapter(&ext).as_deref(), Some("Ethernet 2"), "{ext}");
    // The vSwitch took Ethernet 2: its address is on vEthernet (Ethernet 2), with its MAC.
    let state = node.state();
    let vnic = crate::support::items(&state, "adapters")
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
    let codes: Vec<&str> = crate::support::items(&doc, "findings")
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert!(!codes.contains(&"address-mismatch"), "{doc}");

    // Ethernet 2 is static: its DNS server did not come over to vEthernet (Ethernet 2)
    // (the simulated host's model of microsoft/SDN#498), and CalicoNode put it back.
    assert!(!codes.contains(&"adapter-drift"), "{doc}");
    assert_eq!(
        doc["addressing"]["before_vswitch"]["adapter"], "Ethernet 2",
        "{doc}"
    );
    assert_eq!(
        doc["addressing"]["before_vswitch"]["lost"][0]["dns"]["was"][0], "10.0.0.2",
        "{doc}"
    );
    let saved = node.state();
    // The simulated adapter's DNS servers, as Windows reports them (the registry's values
    // change nothing until a restart).
    let no_dns = |state: &mut Value| {
        for a in state["adapters"].as_array_mut().expect("adapters") {
            if a["name"] == "vEthernet (Ethernet 2)" {
                a["dns_servers"] = serde_json::json!([]);
            }
        }
    };
    // The DNS servers gone since they were put back: a change since, not put back, no finding.
    node.edit_state(no_dns);
    let (code, doc, _) = node.run(&["status"]);
    let drift = |doc: &Value| -> Vec<Value> {
        crate::support::items(doc, "findings")
            .filter(|f| f["code"] == "adapter-drift")
            .cloned()
            .collect()
    };
    assert!(drift(&doc).is_empty(), "{code} {doc}");
    assert_eq!(
        doc["addressing"]["changed_since"],
        serde_json::json!([
            "Ethernet 2 had the DNS servers 10.0.0.2; vEthernet (Ethernet 2) has none"
        ]),
        "{doc}"
    );
    // Lost when the vSwitch was made and not back yet (its put-back failed): a finding.
    node.edit_state(|state| {
        let key = r"hklm\software\tigera\calico";
        let value = &mut state["registry"][key]["addressingbeforevswitch"]["data"];
        let mut kept: Value = serde_json::from_str(value.as_str().expect("kept")).expect("json");
        kept["pending"] = kept["lost"].clone();
        *value = Value::String(kept.to_string());
    });
    let (code, doc, _) = node.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    let drift = drift(&doc);
    assert_eq!(drift.len(), 1, "{doc}");
    assert_eq!(
        drift[0]["message"],
        "lost when the vSwitch was made, not put back yet: Ethernet 2 had the DNS servers 10.0.0.2; vEthernet (Ethernet 2) has none"
    );
    assert_eq!(
        doc["addressing"]["changed_since"],
        serde_json::json!([]),
        "{doc}"
    );
    node.edit_state(|state| *state = saved);

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
    let check = crate::support::items(&doc, "checks")
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

/// A provisioned node installed again (Terraform, cloud-init) changes nothing: the adapter
/// behind the vSwitch has IPv4 unbound, so Windows lists it only in its interface table
/// (`GetAdaptersAddresses(AF_INET)` leaves it out), where it is read back. When nothing tells
/// it any more (HNS names no adapter and it was renamed), the unknown is no change: the
/// recorded adapter stays, and neither install nor reconfigure asks for a drain.
#[test]
fn a_provisioned_node_installed_again_changes_nothing_even_when_its_adapter_cannot_be_told() {
    let (node, _) = installed_on_ethernet_2();

    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["changed"], false, "{doc}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    assert!(
        doc["uplink"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("through the External vSwitch's host adapter")),
        "{doc}"
    );

    node.edit_state(|s| {
        for n in s["networks"].as_array_mut().expect("networks") {
            if n["Name"] == "External" {
                n["Policies"] = serde_json::json!([]);
            }
        }
        for a in s["adapters"].as_array_mut().expect("adapters") {
            if a["name"] == "Ethernet 2" {
                a["name"] = "LAN 2".into();
            }
        }
    });
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["changed"], false, "{doc}");
    assert_eq!(doc["uplink"]["adapter"], "Ethernet 2", "{doc}");
    assert!(
        doc["uplink"]["why"]
            .as_str()
            .is_some_and(|w| w.contains("install record")),
        "{doc}"
    );
    let (code, doc, err) = node.run(&["reconfigure"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert!(!err.contains("VXLAN adapter"), "{err} {doc}");
}

/// The node's address moves from 10.0.0.5 to 10.0.0.7 (a new lease): the adapter's address and
/// the networks' management IP follow it (`SimHost::readdress`), kubelet posts the new
/// InternalIP, and the endpoints made before keep the provider address they were stamped with.
fn readdress(node: &Node, pa: &[(&str, &str)]) {
    node.edit_state(|state| {
        for a in state["interfaces"].as_array_mut().expect("interfaces") {
            if a["ip"] == "10.0.0.5" {
                a["ip"] = "10.0.0.7".into();
            }
        }
        for n in state["networks"].as_array_mut().expect("networks") {
            for p in n["Policies"].as_array_mut().into_iter().flatten() {
                if p["Type"] == "ProviderAddress" {
                    p["Settings"]["ProviderAddress"] = "10.0.0.7".into();
                }
            }
        }
        for e in state["endpoints"].as_array_mut().expect("endpoints") {
            if let Some((_, to)) = pa.iter().find(|(name, _)| e["name"] == *name) {
                e["provider_address"] = (*to).into();
            }
        }
    });
    node.api().set_node_internal_ip("win-1", Some("10.0.0.7"));
}

#[test]
fn after_the_nodes_address_changes_status_names_the_pods_left_behind_and_repair_makes_them_again() {
    let b = Node::healthy();
    let api = b.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    for (name, ip) in [
        ("web-1", "10.244.1.7"),
        ("web-2", "10.244.1.8"),
        ("web-3", "10.244.1.9"),
    ] {
        api.put_pod("default", name, "win-1", Some("ReplicaSet"));
        api.set_pod_ip("default", name, ip);
    }
    let node = b.installed().build();
    node.add_endpoints(&[
        ("web1_Calico", "10.244.1.7", 3, false),
        ("web2_Calico", "10.244.1.8", 3, false),
        ("web3_Calico", "10.244.1.9", 3, false),
    ]);
    // web-1 was made before the change; the others after it, with the new address.
    readdress(
        &node,
        &[
            ("web1_Calico", "10.0.0.5"),
            ("web2_Calico", "10.0.0.7"),
            ("web3_Calico", "10.0.0.7"),
        ],
    );
    node.faults_seen_since(&["web1_Calico"], 600);

    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {doc}");
    let old: Vec<&Value> = crate::support::items(&doc, "findings")
        .filter(|f| f["code"] == "endpoint-old-address")
        .collect();
    assert_eq!(old.len(), 1, "{doc}");
    let said = old[0]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("default/web-1") && said.contains("10.0.0.5") && said.contains("10.0.0.7"),
        "{said}"
    );
    assert_eq!(old[0]["remedy"], "calicoctl-win repair");

    // repair: web-1 evicted (its ReplicaSet makes it again, with the new address), its
    // endpoint deleted; the pods made after the change are left alone.
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert!(
        node.api()
            .get("/api/v1/namespaces/default/pods/web-1")
            .is_none()
    );
    assert!(
        node.api()
            .get("/api/v1/namespaces/default/pods/web-2")
            .is_some()
    );
    let names: Vec<String> = node.state()["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .filter_map(|e| e["name"].as_str().map(str::to_owned))
        .collect();
    assert!(!names.contains(&"web1_Calico".to_owned()), "{names:?}");
    assert!(names.contains(&"web2_Calico".to_owned()), "{names:?}");
}
