//! The peers `verify` places its other clients on: only nodes that can run the probe pods, as
//! read from the cluster (Ready, not cordoned, no `NoExecute` taint, and for a Windows peer
//! calicoctl-win's `CalicoWindowsReady` True and fresh), named in the report.

use super::verify::{cluster, options, verify};
use serde_json::json;

/// A Windows peer whose CalicoNode stopped an hour ago (its condition still True, its
/// heartbeat stale) and a Linux node tainted unreachable (`NoExecute`) are passed over: the
/// cross-node checks are skipped, each with the node and why, and the node under test passes.
#[test]
fn a_stale_windows_peer_and_an_unreachable_linux_node_are_passed_over_and_said() {
    let (api, dir) = cluster();
    let hour_ago = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() - 3600)
        .expect("time")
        .to_string();
    let path = "/api/v1/nodes/win-b";
    let mut b = api.get(path).expect("win-b");
    b["status"]["conditions"][1]["lastHeartbeatTime"] = json!(hour_ago);
    api.put(path, b);
    let path = "/api/v1/nodes/linux-1";
    let mut l = api.get(path).expect("linux-1");
    l["spec"] =
        json!({"taints": [{"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}]});
    api.put(path, l);
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    assert!(r.peers.is_empty(), "{:?}", r.peers);
    let said = serde_json::to_value(&r.skipped).expect("json").to_string();
    assert!(
        said.contains("win-b (CalicoWindowsReady is Unknown: CalicoNode's last heartbeat is"),
        "{said}"
    );
    assert!(
        said.contains("linux-1 (taint node.kubernetes.io/unreachable:NoExecute not tolerated)"),
        "{said}"
    );
    let pods: Vec<String> = api
        .requests()
        .into_iter()
        .filter(|(m, p)| m == "POST" && p.ends_with("/pods"))
        .map(|(_, p)| p)
        .collect();
    assert_eq!(
        pods.len(),
        2,
        "only the server and the local client: {pods:?}"
    );
}

/// The peers chosen are in the report.
#[test]
fn the_peers_chosen_are_reported() {
    let (api, dir) = cluster();
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    let doc = serde_json::to_value(&r).expect("json");
    assert_eq!(
        doc["peers"],
        json!([{"role": "linux", "node": "linux-1"}, {"role": "remote", "node": "win-b"}])
    );
}
