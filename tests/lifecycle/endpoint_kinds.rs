//! Whose each HNS endpoint is, and what `repair` may therefore delete: on a VXLAN node where
//! kube-proxy does not run, Calico's own host endpoint `Calico_ep` is another host's endpoint
//! (projectcalico/calico v3.32.1 `cni-plugin/pkg/dataplane/windows/dataplane_windows.go`,
//! `createAndAttachVxlanHostEP`: `IsRemoteEndpoint: true`) whose address no pod and no
//! EndpointSlice has. It is infrastructure and stays, as does whatever cannot be told to be a
//! pod's endpoint made by Calico's CNI plugin or kube-proxy's for a Service backend; a dead
//! pod's endpoint still goes.

use crate::support::Node;
use serde_json::{Value, json};

/// Calico installed on win-1 (VXLAN), kube-proxy not running, pod web-2 healthy; on the Calico
/// network a dead pod's endpoint (`deadbeef_Calico`, no pod has 10.244.1.50), a local endpoint
/// named as no CNI plugin names one, and another host's endpoint without kube-proxy's MAC. All,
/// and `Calico_ep`, seen at fault ten minutes ago as CalicoNode's looks would have seen them
/// under a judge that calls them stale.
fn node() -> Node {
    let b = Node::healthy();
    let api = b.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api.put_pod("default", "web-2", "win-1", Some("ReplicaSet"));
    api.set_pod_ip("default", "web-2", "10.244.1.8");
    let node = b.installed().build();
    node.add_endpoints(&[
        ("web2_Calico", "10.244.1.8", 3, false),
        ("deadbeef_Calico", "10.244.1.50", 3, false),
        ("admins-probe", "10.244.1.51", 3, false),
    ]);
    node.edit_state(|s| {
        let calico = s["endpoints"][0]["network_id"].clone();
        s["endpoints"]
            .as_array_mut()
            .expect("endpoints")
            .push(json!({
            "id": "5eb1a7e0-0000-4000-8000-0000000000ff", "name": "", "network_id": calico,
            "ip": "10.244.9.20", "remote": true, "mac": "00-15-5d-aa-bb-cc"}));
    });
    node.faults_seen_since(&["Calico_ep", "deadbeef_Calico", "admins-probe", ""], 600);
    node
}

fn endpoint<'a>(doc: &'a Value, name: &str) -> &'a Value {
    crate::support::items(doc, "endpoints")
        .find(|e| e["name"] == name)
        .unwrap_or_else(|| panic!("no endpoint {name}: {doc}"))
}

fn names(node: &Node) -> Vec<String> {
    let mut n: Vec<String> = node.state()["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect();
    n.sort();
    n
}

#[test]
fn calicos_remote_host_endpoint_is_infrastructure_and_two_repairs_keep_it() {
    let node = node();
    // The simulated calico-node made it as Calico's VXLAN startup does: remote, block .2.
    let made = node.state()["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .find(|e| e["name"] == "Calico_ep")
        .cloned()
        .expect("Calico_ep");
    assert_eq!(
        (made["remote"].clone(), made["ip"].clone()),
        (json!(true), json!("10.244.1.2"))
    );
    assert!(node.state()["processes"].get("kube-proxy.exe").is_none());

    let (_, doc, err) = node.run(&["status"]);
    let ep = endpoint(&doc, "Calico_ep");
    assert_eq!(ep["verdict"], "ok", "{err} {ep}");
    assert_eq!(ep["kind"], "infrastructure", "{ep}");
    assert_eq!(
        endpoint(&doc, "deadbeef_Calico")["verdict"],
        "stale",
        "{doc}"
    );
    let subjects: Vec<&str> = crate::support::items(&doc, "findings")
        .filter_map(|f| f["subject"].as_str())
        .collect();
    assert!(!subjects.contains(&"Calico_ep"), "{doc}");

    for run in 1..=2 {
        let (code, doc, err) = node.run(&["repair"]);
        assert!(code == 0 || code == 1, "repair {run}: {err} {doc}");
        let gone: Vec<&str> = crate::support::items(&doc, "endpoints")
            .filter_map(|e| e["name"].as_str())
            .collect();
        assert!(!gone.contains(&"Calico_ep"), "repair {run}: {doc}");
        assert!(
            names(&node).contains(&"Calico_ep".to_owned()),
            "repair {run}"
        );
        // As if the next minute's looks had passed: whatever was recorded is old enough.
        node.age_endpoint_faults(600);
    }
    // The dead pod's endpoint went; the host endpoint and what cannot be told stayed.
    assert_eq!(
        names(&node),
        ["", "Calico_ep", "admins-probe", "web2_Calico"]
    );
}

#[test]
fn what_cannot_be_told_is_listed_unknown_and_kept_while_a_dead_pods_endpoint_goes() {
    let node = node();
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {doc}");
    for name in ["admins-probe", ""] {
        let ep = endpoint(&doc, name);
        assert_eq!(
            (ep["verdict"].clone(), ep["kind"].clone()),
            (json!("unknown"), json!("unknown")),
            "{ep}"
        );
    }
    let unknown: Vec<&Value> = crate::support::items(&doc, "findings")
        .filter(|f| f["code"] == "endpoint-unknown")
        .collect();
    assert_eq!(unknown.len(), 2, "{doc}");
    // The error line (all that `status -q` prints) carries each finding's code and fix.
    assert!(
        err.contains("[endpoint-unknown] (fix: ") && err.contains("repair keeps it"),
        "{err}"
    );
    for f in &unknown {
        let said = f["message"].as_str().unwrap_or_default();
        assert!(said.contains("kept"), "{f}");
        assert!(
            f["remedy"]
                .as_str()
                .is_some_and(|r| r.contains("repair keeps it")),
            "{f}"
        );
    }

    let (code, doc, err) = node.run(&["repair"]);
    // The unknown endpoints are still findings after the repair: exit 1, nothing else left.
    assert_eq!(code, 1, "{err} {doc}");
    assert!(
        err.contains("after the repair, ") && err.contains("[endpoint-unknown] (fix: "),
        "{err}"
    );
    let deleted: Vec<&str> = crate::support::items(&doc, "actions")
        .filter(|a| a["action"] == "delete-endpoint")
        .filter_map(|a| a["name"].as_str())
        .collect();
    assert_eq!(deleted, ["deadbeef_Calico"], "{doc}");
    let codes: Vec<&str> = crate::support::items(&doc, "findings")
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert_eq!(codes, ["endpoint-unknown", "endpoint-unknown"], "{doc}");
    assert_eq!(
        names(&node),
        ["", "Calico_ep", "admins-probe", "web2_Calico"]
    );
}
