//! `status` judging HNS endpoints against the pods, and `repair` through the binary: an
//! installed simulated node whose Calico network holds a stuck, a stale and a healthy pod
//! endpoint and another host's endpoint for a gone pod.

use crate::support::Node;
use crate::support::snapshot::{assert_same, snapshot};
use serde_json::{Value, json};

/// Calico installed on win-1 (Ready), with pods web-1 (its endpoint still Created: stuck),
/// web-2 to web-4 (AttachedSharing: healthy) and an endpoint for 10.244.1.50, which no pod has (stale),
/// and another host's endpoint for 10.244.9.9, which no pod has (remote-stale).
pub(crate) fn broken() -> Node {
    let b = Node::healthy();
    let api = b.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    for (name, ip) in [
        ("web-1", "10.244.1.7"),
        ("web-2", "10.244.1.8"),
        ("web-3", "10.244.1.9"),
        ("web-4", "10.244.1.10"),
    ] {
        api.put_pod("default", name, "win-1", Some("ReplicaSet"));
        api.set_pod_ip("default", name, ip);
    }
    let node = b.installed().build();
    // The states hcsshim internal/hns/hnsendpoint.go names: 1 Created, 3 AttachedSharing.
    node.add_endpoints(&[
        ("web1_Calico", "10.244.1.7", 1, false),
        ("web2_Calico", "10.244.1.8", 3, false),
        ("web3_Calico", "10.244.1.9", 3, false),
        ("web4_Calico", "10.244.1.10", 3, false),
        ("gone_Calico", "10.244.1.50", 3, false),
        ("remote_gone", "10.244.9.9", 3, true),
    ]);
    // CalicoNode's looks (or a repair's) saw them at fault ten minutes ago.
    node.faults_seen_since(&["web1_Calico", "gone_Calico", "remote_gone"], 600);
    node
}

fn verdicts(doc: &Value) -> Vec<(String, String)> {
    crate::support::items(doc, "endpoints")
        .map(|e| {
            (
                e["name"].as_str().unwrap_or_default().to_owned(),
                e["verdict"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn endpoint_names(node: &Node) -> Vec<String> {
    node.state()["endpoints"]
        .as_array()
        .expect("endpoints")
        .iter()
        .map(|e| e["name"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn status_names_stuck_and_stale_endpoints_and_repair_removes_them_and_brings_the_pod_back() {
    let node = broken();
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err}");
    let mut got = verdicts(&doc);
    got.sort();
    let want: Vec<(String, String)> = [
        ("Calico_ep", "ok"),
        ("gone_Calico", "stale"),
        ("remote_gone", "remote-stale"),
        ("web1_Calico", "stuck"),
        ("web2_Calico", "ok"),
        ("web3_Calico", "ok"),
        ("web4_Calico", "ok"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
    .collect();
    assert_eq!(got, want, "{doc}");
    let problems = crate::support::status_problems(&doc);
    assert_eq!(
        problems
            .iter()
            .filter(|p| p.contains("HNS endpoint"))
            .count(),
        3,
        "{problems:?}"
    );
    assert!(
        problems.iter().any(|p| p.contains("web1_Calico")
            && p.contains("stuck")
            && p.contains("default/web-1")),
        "{problems:?}"
    );
    // The same as typed findings (docs/findings.md): a code, a subject, a remedy.
    let stuck = crate::support::items(&doc, "findings")
        .find(|f| f["code"] == "endpoint-stuck")
        .cloned()
        .expect("an endpoint-stuck finding");
    assert_eq!(stuck["subject"], "web1_Calico", "{stuck}");
    assert_eq!(stuck["remedy"], "calicoctl-win repair", "{stuck}");
    assert_eq!(
        doc["findings"].as_array().map(Vec::len),
        Some(problems.len()),
        "one finding per problem"
    );
    // Within a grace period longer than the pod's age, web-1's endpoint is only attaching.
    let (_, doc, _) = node.run(&["status", "--grace", "10000d"]);
    assert!(
        verdicts(&doc).contains(&("web1_Calico".into(), "attaching".into())),
        "{doc}"
    );

    // A dry run shows the plan and changes nothing.
    let before = snapshot(&node.sim());
    let (code, doc, err) = node.run(&["repair", "--dry-run"]);
    assert_eq!(code, 0, "{err}");
    let actions: Vec<&str> = crate::support::items(&doc, "actions")
        .map(|a| a["action"].as_str().unwrap_or_default())
        .collect();
    assert_eq!(
        actions,
        [
            "evict-pods",
            "delete-endpoint",
            "delete-endpoint",
            "delete-endpoint"
        ],
        "{doc}"
    );
    assert_eq!(doc["restarts"], json!([]), "nothing is restarted: {doc}");
    assert_same(&snapshot(&node.sim()), &before, "dry run");

    // The repair: web-1 evicted (its ReplicaSet makes it again), the three endpoints gone,
    // Felix and kube-proxy left running.
    let pid_before = node.state()["services"]["calicofelix"]["pid"].clone();
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["changed"], true);
    assert_eq!(doc["remaining"], json!([]), "{doc}");
    assert_eq!(
        doc["findings"],
        json!([]),
        "the node judged again after: {doc}"
    );
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
    let mut names = endpoint_names(&node);
    names.sort();
    assert_eq!(
        names,
        ["Calico_ep", "web2_Calico", "web3_Calico", "web4_Calico"]
    );
    let felix = &node.state()["services"]["calicofelix"];
    assert_eq!(felix["state"], "running", "{felix}");
    assert_eq!(felix["pid"], pid_before, "Felix was restarted");
    // Counted in repair's metrics file: one run, three endpoints (the dry run counts nothing).
    let counted = metrics_file(&node, "calicoctl-win-metrics-repair.json");
    assert_eq!(counted["calicoctl_win_repairs_total"], 1, "{counted}");
    assert_eq!(
        counted["calicoctl_win_repaired_endpoints_total"], 3,
        "{counted}"
    );
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err} {doc}");

    // Nothing left: nothing to do.
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
}

/// After its run, repair judges the node as status and the condition do: what the endpoints'
/// repair could not mend (here Felix, not ready) is a finding with its code, and exit 1.
#[test]
fn repair_judges_the_node_again_after_its_run() {
    let node = broken();
    node.edit_state(|s| s["settings"]["felix_health"] = json!("not-ready"));
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 1, "{err} {doc}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert_eq!(
        doc["remaining"],
        json!([]),
        "the endpoints are mended: {doc}"
    );
    let codes: Vec<&str> = crate::support::items(&doc, "findings")
        .filter_map(|f| f["code"].as_str())
        .collect();
    assert_eq!(codes, ["felix-unhealthy"], "{doc}");
    assert!(err.contains("[felix-unhealthy]"), "{err}");
}

/// One address everywhere: the Node's InternalIP, the Calico Node's BGP address (its
/// `projectcalico.org/IPv4Address` annotation on the Kubernetes datastore) and the HNS
/// networks' management IP. Each layer that differs is a finding naming both addresses.
#[test]
fn status_names_each_layer_whose_address_differs_from_the_nodes() {
    let node = Node::healthy().installed().build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["address"]["internal_ip"], "10.0.0.5", "{doc}");
    assert_eq!(doc["address"]["networks"]["Calico"], "10.0.0.5", "{doc}");

    // calico-node advertised another address: Felix on the other nodes tunnels there.
    let path = "/api/v1/nodes/win-1";
    let mut n = node.api().get(path).expect("node");
    n["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.6/24"});
    node.api().put(path, n.clone());
    let (code, doc, _) = node.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    let mismatch: Vec<&Value> = crate::support::items(&doc, "findings")
        .filter(|f| f["code"] == "address-mismatch")
        .collect();
    assert_eq!(mismatch.len(), 1, "{doc}");
    let said = mismatch[0]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("10.0.0.6") && said.contains("10.0.0.5"),
        "{said}"
    );

    // The Node's InternalIP moved: the networks' management IP (and the BGP address) differ.
    n["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.7/24"});
    n["status"]["addresses"] = json!([{"type": "InternalIP", "address": "10.0.0.7"}]);
    node.api().put(path, n);
    let (code, doc, _) = node.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    let subjects: Vec<&str> = crate::support::items(&doc, "findings")
        .filter(|f| f["code"] == "address-mismatch")
        .filter_map(|f| f["subject"].as_str())
        .collect();
    assert_eq!(subjects, ["External", "Calico"], "{doc}");
}

#[test]
fn a_bare_pods_stuck_endpoint_is_repaired_only_with_force() {
    let node = broken();
    node.api().put_pod("default", "bare", "win-1", None);
    node.api().set_pod_ip("default", "bare", "10.244.1.60");
    node.add_endpoints(&[("bare_Calico", "10.244.1.60", 4, false)]);
    node.faults_seen_since(
        &["web1_Calico", "gone_Calico", "remote_gone", "bare_Calico"],
        600,
    );
    let before = snapshot(&node.sim());
    let (code, _, err) = node.run(&["repair"]);
    // Refused before anything changes, with the usage exit code a drain's refusal has.
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("default/bare") && err.contains("--force"),
        "{err}"
    );
    assert_same(&snapshot(&node.sim()), &before, "refused");
    let (code, _, err) = node.run(&["repair", "--force"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        node.api()
            .get("/api/v1/namespaces/default/pods/bare")
            .is_none()
    );
}

#[test]
fn repair_killed_from_outside_at_every_call_is_finished_by_a_rerun() {
    let clean = broken();
    let (code, _, err) = clean.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    let want = endpoint_names(&clean);
    for n in 1.. {
        let node = broken();
        let tmp = node.dir.path().join("tmp");
        fs_err::create_dir_all(&tmp).expect("tmp");
        let at = match node.kill_at(&["repair"], n, &tmp) {
            crate::support::Killed::At(at) => at,
            crate::support::Killed::Ended(code, err) => {
                assert_eq!(code, 0, "{err}");
                assert!(n > 4, "only {n} calls");
                break;
            }
        };
        if node
            .c_drive("calicowindows/calicoctl-win.journal.json")
            .exists()
        {
            // Status says what finishes it, and no command that would refuse.
            let (_, doc, _) = node.run(&["status"]);
            let findings = doc["findings"].as_array().cloned().unwrap_or_default();
            let said = |f: &Value, k: &str| f[k].as_str().unwrap_or_default().to_owned();
            assert!(
                findings.iter().any(|f| f["code"] == "under-way"
                    && said(f, "remedy").contains("'calicoctl-win repair' finishes it")
                    && !said(f, "remedy").contains("uninstall")
                    && !said(f, "message").contains("uninstall")),
                "killed {at}: {findings:?}"
            );
        }
        let (code, doc, err) = node.run(&["repair"]);
        assert_eq!(code, 0, "killed {at}: the rerun failed: {err}");
        assert_eq!(endpoint_names(&node), want, "killed {at}");
        assert!(
            node.api()
                .get("/api/v1/namespaces/default/pods/web-1")
                .is_none(),
            "killed {at}: web-1, whose endpoint was stuck, was never evicted"
        );
        assert_eq!(
            node.state()["services"]["calicofelix"]["state"],
            "running",
            "killed {at}: {doc}"
        );
        let (code, _, err) = node.run(&["status"]);
        assert_eq!(code, 0, "killed {at}: {err}");
        assert!(
            !node
                .c_drive("calicowindows/calicoctl-win.journal.json")
                .exists(),
            "killed {at}: the journal is left"
        );
    }
}

/// One look never deletes: a repair on faults nobody saw before only records them and changes
/// no endpoint; once they have lasted past the grace period, the next repair removes them.
#[test]
fn a_fault_seen_once_is_not_repaired_until_it_has_lasted() {
    let node = broken();
    node.edit_state(|s| {
        s["registry"][r"hklm\software\tigera\calico"]
            .as_object_mut()
            .expect("key")
            .remove("endpointfaults");
    });
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "suspects are no problem: {err} {doc}");
    assert!(
        verdicts(&doc).contains(&("gone_Calico".into(), "suspect".into())),
        "{doc}"
    );
    let names = endpoint_names(&node);
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["actions"], json!([]), "{doc}");
    assert_eq!(doc["suspect"].as_array().map(Vec::len), Some(3), "{doc}");
    assert_eq!(endpoint_names(&node), names, "nothing was deleted");
    assert!(
        node.api()
            .get("/api/v1/namespaces/default/pods/web-1")
            .is_some(),
        "no pod was evicted"
    );
    node.age_endpoint_faults(600);
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert!(!endpoint_names(&node).contains(&"gone_Calico".to_owned()));
}

/// More than half of the node's pod endpoints judged at fault is refused with the evidence
/// and changes nothing; `--allow-majority` repairs them.
#[test]
fn the_breaker_refuses_a_repair_of_most_pod_endpoints() {
    let node = broken();
    node.add_endpoints(&[
        ("gone2_Calico", "10.244.1.51", 3, false),
        ("gone3_Calico", "10.244.1.52", 3, false),
        ("gone4_Calico", "10.244.1.53", 3, false),
        ("gone5_Calico", "10.244.1.54", 3, false),
    ]);
    node.faults_seen_since(
        &[
            "web1_Calico",
            "gone_Calico",
            "gone2_Calico",
            "gone3_Calico",
            "gone4_Calico",
            "gone5_Calico",
        ],
        600,
    );
    let before = snapshot(&node.sim());
    let (code, _, err) = node.run(&["repair"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("6 of the 9 pod endpoints")
            && err.contains("gone3_Calico")
            && err.contains("--allow-majority"),
        "{err}"
    );
    assert_same(&snapshot(&node.sim()), &before, "refused");
    let (code, _, err) = node.run(&["repair", "--allow-majority"]);
    assert_eq!(code, 0, "{err}");
    assert!(!endpoint_names(&node).contains(&"gone5_Calico".to_owned()));
}

/// `--grace` has a floor (an HNS attach can take tens of seconds); a node with nothing
/// installed is `not-installed`; no cluster is `no-admin-kubeconfig`.
#[test]
fn repair_refuses_a_short_grace_no_install_and_no_cluster_by_kind() {
    let node = broken();
    let (code, doc, _) = node.run(&["repair", "--grace", "1s"]);
    assert_eq!(code, 2);
    assert_eq!(doc["error"]["kind"], "usage", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("--grace 1s")),
        "{doc}"
    );
    let bare = Node::healthy().build();
    let (code, doc, _) = bare.run(&["repair"]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["error"]["kind"], "not-installed", "{doc}");
    let (code, doc, _) = node.run_without_kubeconfig(&["repair"]);
    assert_eq!(code, 2, "{doc}");
    assert_eq!(doc["error"]["kind"], "no-admin-kubeconfig", "{doc}");
}

/// The node's `CalicoWindowsReady` condition, when CalicoNode has set one.
#[cfg(unix)]
fn calico_condition(node: &Node) -> Option<Value> {
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    n["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "CalicoWindowsReady")
        .cloned()
}

/// CalicoNode, as calico-node (its own token, Calico's ClusterRole: list pods, patch
/// nodes/status), sets the condition with the reasons, beside kubelet's Ready; after a repair
/// it sets it True.
#[cfg(unix)]
#[test]
fn calico_node_sets_the_node_condition_with_the_reasons_and_true_once_repaired() {
    let node = broken();
    let wait_for = |want: &str| {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        loop {
            if let Some(c) = calico_condition(&node).filter(|c| c["status"] == want) {
                return c;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "no condition {want}: {:?}",
                calico_condition(&node)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    };
    // calico-node advertised another address than the Node's InternalIP (10.0.0.5, the
    // networks' management IP too): the condition says so, and fleet status shows the code.
    let path = "/api/v1/nodes/win-1";
    let set_bgp = |v: Value| {
        let mut n = node.api().get(path).expect("node");
        n["metadata"]["annotations"] = v;
        node.api().put(path, n);
    };
    set_bgp(json!({"projectcalico.org/IPv4Address": "10.0.0.6/24"}));
    let child = crate::support::console_node(&node.sim(), &[]);
    let c = wait_for("False");
    let log = crate::support::stop_console(child);
    let message = c["message"].as_str().unwrap_or_default();
    for needle in [
        "web1_Calico (10.244.1.7, Calico) is stuck",
        "gone_Calico (10.244.1.50, Calico) is stale",
        // Each reason with its finding's code (docs/findings.md), which fleet status shows.
        "[endpoint-stuck]",
        "[endpoint-stale]",
        "is 10.0.0.6, the Node's InternalIP is 10.0.0.5",
        "[address-mismatch]",
    ] {
        assert!(message.contains(needle), "{needle}: {c} {log}");
    }
    // Another host's endpoints are status's and repair's to ask about: not every minute.
    assert!(!message.contains("remote_gone"), "{c}");
    // The codes as data beside the message, each once, with the heartbeat of the condition
    // they were written with: what fleet status reads.
    let codes = || -> Vec<String> {
        let n = node.api().get(path).expect("node");
        let text = n["metadata"]["annotations"]["calicoctl-win/finding-codes"]
            .as_str()
            .unwrap_or_else(|| panic!("no codes annotation: {n}"))
            .to_owned();
        let written: serde_json::Value = serde_json::from_str(&text).expect("a JSON object");
        let beat = n["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "CalicoWindowsReady"))
            .map(|c| c["lastHeartbeatTime"].clone());
        assert_eq!(Some(written["heartbeat"].clone()), beat, "{n}");
        serde_json::from_value(written["codes"].clone()).expect("a JSON list")
    };
    let mut found = codes();
    found.sort();
    assert_eq!(
        found,
        ["address-mismatch", "endpoint-stale", "endpoint-stuck"],
        "{c}"
    );
    assert_eq!(c["reason"], "CalicoDegraded");
    assert!(c["lastTransitionTime"].is_string(), "{c}");
    // The endpoint-faults gauge CalicoNode keeps with the condition, one series per verdict.
    let gauge = metrics_file(&node, "calicoctl-win-metrics.json");
    assert_eq!(
        gauge["calicoctl_win_endpoint_faults{verdict=\"stuck\"}"], 1,
        "{gauge}"
    );
    assert_eq!(
        gauge["calicoctl_win_endpoint_faults{verdict=\"stale\"}"], 1,
        "{gauge}"
    );
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    assert!(
        crate::support::items(&n["status"], "conditions")
            .any(|c| c["type"] == "Ready" && c["status"] == "True"),
        "kubelet's Ready condition was lost: {n}"
    );

    set_bgp(json!({"projectcalico.org/IPv4Address": "10.0.0.5/24"}));
    let (code, _, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    let child = crate::support::console_node(&node.sim(), &[]);
    let c = wait_for("True");
    crate::support::stop_console(child);
    assert_eq!(c["reason"], "CalicoHealthy", "{c}");
    assert!(codes().is_empty(), "{c}");
}

/// A CalicoNode restart is no transition: its first look finds the Node already carrying the
/// same status and keeps its `lastTransitionTime`, as kubelet keeps its own conditions'
/// (kubernetes `pkg/kubelet/nodestatus/setters.go`, `ReadyCondition`); only the heartbeat moves.
#[cfg(unix)]
#[test]
fn a_calico_node_restart_keeps_the_conditions_transition_time() {
    let node = broken();
    let child = crate::support::console_node(&node.sim(), &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while calico_condition(&node).is_none() {
        assert!(std::time::Instant::now() < deadline, "no condition set");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    crate::support::stop_console(child);
    // As if the status had held since long ago.
    let (long_ago, beat) = ("2020-01-01T00:00:00Z", "2020-01-01T00:05:00Z");
    let path = "/api/v1/nodes/win-1";
    let mut n = node.api().get(path).expect("node");
    for c in n["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
        .iter_mut()
        .filter(|c| c["type"] == "CalicoWindowsReady")
    {
        c["lastTransitionTime"] = json!(long_ago);
        c["lastHeartbeatTime"] = json!(beat);
    }
    node.api().put(path, n);
    let status = calico_condition(&node).expect("condition")["status"].clone();

    let child = crate::support::console_node(&node.sim(), &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let c = loop {
        let c = calico_condition(&node).expect("condition");
        if c["lastHeartbeatTime"] != beat {
            break c;
        }
        assert!(std::time::Instant::now() < deadline, "not set again: {c}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    let log = crate::support::stop_console(child);
    assert_eq!(c["status"], status, "{c} {log}");
    assert_eq!(c["lastTransitionTime"], long_ago, "{c} {log}");
}

/// Felix's own health, from its endpoint as calico-node's probe asks it; the simulated host's
/// loopback answers as Felix's health server does while CalicoFelix runs.
#[test]
fn status_asks_felix_for_its_health_and_names_a_felix_that_is_not_ready() {
    let node = Node::healthy().installed().build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let env = fs_err::read_to_string(node.c_drive("calicowindows/calico-felix.env")).expect("env");
    assert!(env.contains("FELIX_HEALTHENABLED=true\n"), "{env}");
    assert!(env.contains("FELIX_HEALTHPORT=9099\n"), "{env}");
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["felix_health"]["live"], true, "{doc}");
    assert_eq!(doc["felix_health"]["ready"], true, "{doc}");

    node.edit_state(|s| s["settings"]["felix_health"] = json!("not-ready"));
    let (code, doc, _) = node.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    let problems = crate::support::status_problems(&doc);
    assert!(
        problems
            .iter()
            .any(|p| p == "Felix is not ready: felix-startup  not ready"),
        "{problems:?}"
    );

    // Silent: no problem just after Felix started, one once it has run past its start-up.
    node.edit_state(|s| s["settings"]["felix_health"] = json!("silent"));
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["felix_health"]["live"], Value::Null, "{doc}");
    node.edit_state(|s| s["services"]["calicofelix"]["since"] = json!(1_000_000));
    let (code, doc, _) = node.run(&["status"]);
    assert_eq!(code, 1, "{doc}");
    assert!(
        crate::support::status_problems(&doc)
            .iter()
            .any(|p| p.contains("does not answer")),
        "{doc}"
    );
    // Felix is aged by its own start: CalicoFelix restarted it a moment ago, under a service
    // that has run for long (it once was aged by the service and blamed at once).
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs();
    node.edit_state(|s| {
        s["registry"][r"hklm\software\tigera\calico"]["felixstarted"] =
            json!({"type": "REG_SZ", "data": now.to_string()})
    });
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// Another host's addresses are looked for in the EndpointSlices (kube-proxy's own input,
/// which holds the API server's and selectorless Services' addresses no pod has), then in the
/// pods: one paged read of each, however many endpoints (it was a list call per address); what
/// is not an address is never asked about. While kube-proxy runs, they are its own and nothing
/// is asked.
#[test]
fn remote_endpoints_are_judged_from_one_read_and_only_addresses_are_asked_about() {
    let node = Node::healthy().installed().build();
    let pod_lists = || {
        node.api()
            .requests()
            .iter()
            .filter(|(m, p)| m == "GET" && p == "/api/v1/pods")
            .count()
    };
    let before = pod_lists();
    node.run(&["status"]);
    let baseline = pod_lists() - before;
    let names: Vec<String> = (0..300).map(|i| format!("remote-{i}")).collect();
    let ips: Vec<String> = (0..300)
        .map(|i| format!("10.250.{}.{}", i / 250, i % 250 + 1))
        .collect();
    let mut eps: Vec<(&str, &str, u16, bool)> = names
        .iter()
        .zip(&ips)
        .map(|(n, ip)| (n.as_str(), ip.as_str(), 3, true))
        .collect();
    eps.insert(0, ("odd", "10.0.0.1,spec.nodeName=win-1", 3, true));
    eps.push(("api-server", "10.0.0.4", 3, true));
    node.add_endpoints(&eps);
    // The `kubernetes` Service's endpoint, the API server's address, which no pod has.
    node.api().put(
        "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "namespace": "default"},
            "addressType": "IPv4",
            "endpoints": [{"addresses": ["10.0.0.4"]}],
            "ports": [{"name": "https", "port": 6443, "protocol": "TCP"}]}),
    );
    let before = pod_lists();
    let (_, doc, _) = node.run(&["status"]);
    assert_eq!(
        pod_lists() - before - baseline,
        1,
        "one read of the pods for every address"
    );
    let verdict_of = |doc: &Value, name: &str| {
        crate::support::items(doc, "endpoints")
            .find(|e| e["name"] == name)
            .map(|e| e["verdict"].clone())
    };
    assert_eq!(verdict_of(&doc, "api-server"), Some(json!("ok")), "{doc}");
    let count = |verdict: &str| {
        crate::support::items(&doc, "endpoints")
            .filter(|e| e["verdict"] == verdict)
            .count()
    };
    // Not seen at fault before (status only reads the record): suspect, not stale yet.
    assert_eq!(count("suspect"), 300, "{doc}");
    // What HNS gives as its address is no address: no MAC kube-proxy would give it, so it
    // cannot be told to be a Service backend's: unknown, kept, and never asked about.
    assert_eq!(count("unknown"), 1, "{doc}");
    let odd = crate::support::items(&doc, "endpoints")
        .find(|e| e["name"] == "odd")
        .expect("odd");
    assert_eq!(odd["verdict"], "unknown", "{odd}");
}

/// kube-proxy makes and deletes another host's endpoints (kubernetes
/// pkg/proxy/winkernel/proxier.go): while it runs, they are its own, judged `ok`, and neither
/// status nor repair asks the cluster about them or deletes one, even one seen at fault before.
#[test]
fn another_hosts_endpoints_are_left_to_kube_proxy_while_it_runs() {
    let node = broken();
    node.edit_state(|s| s["processes"]["kube-proxy.exe"] = json!(5120));
    let before = node.api().requests().len();
    let (code, doc, err) = node.run(&["status"]);
    let asked = node.api().requests()[before..]
        .iter()
        .filter(|(_, p)| p.contains("endpointslices"))
        .count();
    assert_eq!(asked, 0, "the EndpointSlices were read");
    assert_eq!(code, 1, "{err}");
    assert!(
        verdicts(&doc).contains(&("remote_gone".into(), "ok".into())),
        "{doc}"
    );
    let (code, _, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    assert!(endpoint_names(&node).contains(&"remote_gone".to_owned()));
}

/// A pod whose address no endpoint has (its network deleted under it) is named `no-endpoint`
/// by status once seen so past the grace period, and repair evicts it so that its controller
/// makes it again; no endpoint is deleted for it.
#[test]
fn a_pod_without_an_endpoint_is_named_and_evicted() {
    let node = broken();
    node.api()
        .put_pod("default", "lost", "win-1", Some("ReplicaSet"));
    node.api().set_pod_ip("default", "lost", "10.244.1.20");
    // The fake API stamps no creation time: the pod counts as older than the grace period.
    let (code, _, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err}");
    node.age_endpoint_faults(600);
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        verdicts(&doc).contains(&("default/lost".into(), "no-endpoint".into())),
        "{doc}"
    );
    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert!(
        node.api()
            .get("/api/v1/namespaces/default/pods/lost")
            .is_none(),
        "evicted"
    );
    assert!(
        !crate::support::items(&doc, "actions").any(|a| a["action"] == "delete-endpoint"
            && a["id"].as_str().is_some_and(|i| i.starts_with("pod:"))),
        "{doc}"
    );
}

/// A pods read that fails is a problem in status's report, not its end: the rest is still
/// read and shown.
#[test]
fn a_failed_pods_read_is_a_problem_not_the_end_of_status() {
    let node = broken();
    node.api().forbid("list", "pods");
    let (code, doc, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {doc}");
    let problems = crate::support::status_problems(&doc);
    assert!(
        problems
            .iter()
            .any(|p| p.contains("the HNS endpoints cannot be judged")),
        "{problems:?} {doc}"
    );
    assert!(
        doc["felix_health"].is_object(),
        "the rest of the report: {doc}"
    );
    assert!(doc["vni"].is_object(), "{doc}");
}

/// What `status` asks the API server, with 10,000 of another host's endpoints on the node:
/// a bounded, small number of requests (documented in docs/commands/status.md), none of them
/// a SelfSubjectAccessReview (status shows no rights check).
#[test]
fn status_asks_the_api_server_a_bounded_number_of_times() {
    let node = broken();
    let names: Vec<String> = (0..10_000).map(|i| format!("remote-{i}")).collect();
    let ips: Vec<String> = (0..10_000)
        .map(|i| format!("10.{}.{}.{}", 100 + i / 65_536, (i / 256) % 256, i % 256))
        .collect();
    let eps: Vec<(&str, &str, u16, bool)> = names
        .iter()
        .zip(&ips)
        .map(|(n, ip)| (n.as_str(), ip.as_str(), 3, true))
        .collect();
    node.add_endpoints(&eps);
    let before = node.api().requests().len();
    let (_, doc, err) = node.run(&["status"]);
    assert!(doc["endpoints"].is_array(), "{err}");
    let asked: Vec<(String, String)> = node.api().requests()[before..].to_vec();
    assert!(
        !asked
            .iter()
            .any(|(_, p)| p.contains("selfsubjectaccessreviews")),
        "{asked:?}"
    );
    assert!(asked.len() <= 25, "{} requests: {asked:?}", asked.len());
}

/// `status` on a node with nothing wrong asks the API server at most 12 times, the same with
/// one pod's endpoint as with a thousand: each object it judges by is read once (the Node, with
/// calico-node's own kubeconfig, which also asks whether the API server takes its token; the
/// node's pods; the DatastoreMigration in the one version discovery offers), and nothing only
/// preflight judges by (the operator's Installation, the IPAMConfig) is read.
#[test]
fn status_on_a_healthy_node_asks_at_most_twelve_times_with_one_endpoint_or_a_thousand() {
    let node = Node::healthy().installed().build();
    let api = node.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    let pod = |i: usize| {
        let ip = format!("10.244.{}.{}", 1 + i / 200, 2 + i % 200);
        let name = format!("web-{i}");
        api.put_pod("default", &name, "win-1", Some("ReplicaSet"));
        api.set_pod_ip("default", &name, &ip);
        (format!("web{i}_Calico"), ip)
    };
    let asked = |node: &Node| {
        let before = node.api().requests().len();
        let (code, doc, err) = node.run(&["status"]);
        assert_eq!(code, 0, "{err} {doc}");
        node.api().requests()[before..].to_vec()
    };
    let first = pod(0);
    node.add_endpoints(&[(first.0.as_str(), first.1.as_str(), 3, false)]);
    let one = asked(&node);
    assert!(one.len() <= 12, "{} requests: {one:#?}", one.len());
    let reads = |of: &str| one.iter().filter(|(m, p)| m == "GET" && p == of).count();
    assert_eq!(reads("/api/v1/nodes/win-1"), 1, "{one:#?}");
    assert_eq!(reads("/api/v1/pods"), 1, "{one:#?}");
    let more: Vec<(String, String)> = (1..1000).map(pod).collect();
    let eps: Vec<(&str, &str, u16, bool)> = more
        .iter()
        .map(|(n, ip)| (n.as_str(), ip.as_str(), 3, false))
        .collect();
    node.add_endpoints(&eps);
    let many = asked(&node);
    assert_eq!(one, many, "the same requests with a thousand endpoints");
}

/// What `status` prints for people, whole: on a node with stuck, stale and remote endpoints
/// (each section's line, then its findings with their codes and fixes), and on a healthy one.
#[test]
fn status_text_whole() {
    let node = broken();
    let (code, text) = node.run_text(&["status"]);
    assert_eq!(code, 1, "{text}");
    crate::support::documents::text_snapshot(&node, "status-text-degraded", &text);
    let node = Node::healthy().installed().build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, text) = node.run_text(&["status"]);
    assert_eq!(code, 0, "{text}");
    crate::support::documents::text_snapshot(&node, "status-text", &text);
}

/// The codes of a document's findings, each once, sorted.
#[cfg(unix)]
pub(crate) fn codes_of(doc: &Value) -> Vec<String> {
    let mut codes: Vec<String> = crate::support::items(doc, "findings")
        .filter_map(|f| f["code"].as_str().map(str::to_owned))
        .collect();
    codes.sort();
    codes.dedup();
    codes
}

/// CalicoNode run until it has written the codes annotation beside its condition: what it
/// wrote, and its log.
#[cfg(unix)]
fn codes_written(node: &Node) -> (Value, String) {
    let child = crate::support::console_node(&node.sim(), &[]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let written = loop {
        let n = node.api().get("/api/v1/nodes/win-1").expect("node");
        let text = n["metadata"]["annotations"]["calicoctl-win/finding-codes"].as_str();
        if let Some(text) = text {
            break serde_json::from_str::<Value>(text).expect("a JSON object");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no codes written: {n}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    (written, crate::support::stop_console(child))
}

/// One survey: the same faults (Felix not ready, a BGP address that is not the Node's) are the
/// same codes in status's report, in repair's report after its run and in the codes CalicoNode
/// writes beside its condition.
#[cfg(unix)]
#[test]
fn status_repair_and_the_condition_give_the_same_codes_for_the_same_faults() {
    let node = broken();
    node.edit_state(|s| s["settings"]["felix_health"] = json!("not-ready"));
    let path = "/api/v1/nodes/win-1";
    let mut n = node.api().get(path).expect("node");
    n["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.6/24"});
    node.api().put(path, n);
    let want = ["address-mismatch", "felix-unhealthy"];

    let (code, repaired, err) = node.run(&["repair"]);
    assert_eq!(code, 1, "{err} {repaired}");
    assert_eq!(codes_of(&repaired), want, "repair: {repaired}");
    let (code, status, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {status}");
    assert_eq!(codes_of(&status), want, "status: {status}");

    let (written, log) = codes_written(&node);
    let mut codes: Vec<String> =
        serde_json::from_value(written["codes"].clone()).expect("a JSON list");
    codes.sort();
    assert_eq!(codes, want, "the condition's codes: {written} {log}");
}

/// An endpoint whose state HNS did not give is said with its code and fix, beside the
/// endpoints, and is no problem: status stays healthy.
#[test]
fn an_endpoint_state_hns_did_not_give_is_said_with_its_code_and_fix() {
    let node = Node::healthy().installed().build();
    let api = node.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
    api.set_pod_ip("default", "web-1", "10.244.1.7");
    node.add_endpoints(&[("web1_Calico", "10.244.1.7", 3, false)]);
    node.edit_state(|s| {
        for e in s["endpoints"].as_array_mut().expect("endpoints") {
            if e["name"] == "web1_Calico" {
                e["state"] = Value::Null;
            }
        }
    });
    let (code, text) = node.run_text(&["status"]);
    assert_eq!(code, 0, "{text}");
    assert!(
        text.contains("the state of 1 endpoint(s) cannot be read")
            && text.contains("[endpoint-state-unknown]")
            && text.contains("fix: none needed: no such endpoint is called stuck"),
        "{text}"
    );
}

/// Every service the install made is judged alike by status and by the node's own look
/// (CalicoNode's condition, repair's after its run): a stopped kube-proxy calicoctl-win
/// registered is `service-not-running` in both, not in status alone.
#[cfg(unix)]
#[test]
fn a_stopped_recorded_service_is_in_the_condition_as_in_status() {
    let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    fs_err::create_dir_all(node.c_drive("k")).expect("k");
    fs_err::write(
        node.c_drive("k/kube-proxy.exe"),
        "kube-proxy v1.33.2 (simulated)\n",
    )
    .expect("kube-proxy.exe");
    let with_kube_proxy = ["--set", r"kube_proxy.path=C:\k\kube-proxy.exe"];
    let (code, doc, err) = node.install_local(&with_kube_proxy);
    assert_eq!(code, 0, "{err} {doc}");
    node.edit_state(|s| s["services"]["kube-proxy"]["state"] = json!("stopped"));
    let (_, status, _) = node.run(&[&with_kube_proxy[..], &["status"]].concat());
    assert!(
        codes_of(&status).contains(&"service-not-running".to_owned()),
        "{status}"
    );
    let (written, log) = codes_written(&node);
    assert!(
        written["codes"].to_string().contains("service-not-running"),
        "the condition's codes: {written} {log}"
    );
}

/// What status says beside the services is the node's own look too: a run cut off (its journal
/// in the install root, nobody holding the host lock) is `under-way` in status and in the codes
/// CalicoNode writes beside its condition; Felix's own metrics rule open to every address (one
/// the operator's Felix left) is `felix-metrics-rule` in status's text and in those codes, but
/// no problem: not among status's findings, and alone it leaves the condition True.
#[cfg(unix)]
#[test]
fn what_a_run_left_and_the_metrics_ports_are_in_the_condition_as_in_status() {
    let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    let felix_rule = "Calico Prometheus Ports (calico-managed rule)";
    node.edit_state(|s| {
        s["firewall"][felix_rule.to_ascii_lowercase()] = json!({
            "name": felix_rule, "protocol": "tcp", "local_port": 9091, "allow": true,
            "enabled": true, "profiles": 2147483647u32
        });
    });
    // The rule alone: said, and the condition True.
    let (_, text) = node.run_text(&["status"]);
    assert!(text.contains("[felix-metrics-rule]"), "{text}");
    let (_, status, _) = node.run(&["status"]);
    assert!(
        !codes_of(&status).contains(&"felix-metrics-rule".to_owned()),
        "{status}"
    );
    let (written, log) = codes_written(&node);
    assert!(
        written["codes"].to_string().contains("felix-metrics-rule"),
        "the condition's codes: {written} {log}"
    );
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    let ready = crate::support::items(&n["status"], "conditions")
        .find(|c| c["type"] == "CalicoWindowsReady")
        .map(|c| c["status"].clone());
    assert_eq!(ready, Some(json!("True")), "{n} {log}");

    let journal = json!({
        "command": "reconfigure", "started": 1_700_000_000, "new_dirs": [],
        "routes_before": [], "entries": []
    });
    fs_err::write(
        node.c_drive("calicowindows/calicoctl-win.journal.json"),
        journal.to_string(),
    )
    .expect("journal");
    let (_, status, _) = node.run(&["status"]);
    assert!(
        codes_of(&status).contains(&"under-way".to_owned()),
        "{status}"
    );
    // The annotation of the look before goes, so that the next look's is read.
    let path = "/api/v1/nodes/win-1";
    let mut n = node.api().get(path).expect("node");
    n["metadata"]["annotations"]
        .as_object_mut()
        .expect("annotations")
        .remove("calicoctl-win/finding-codes");
    node.api().put(path, n);
    let (written, log) = codes_written(&node);
    for c in ["felix-metrics-rule", "under-way"] {
        assert!(
            written["codes"].to_string().contains(c),
            "{c}: the condition's codes: {written} {log}"
        );
    }
}

/// One of calicoctl-win's metrics files under the node's install root (`installed::metrics`),
/// `{}` when there is none.
pub(crate) fn metrics_file(node: &Node, name: &str) -> Value {
    fs_err::read(node.c_drive(&format!("calicowindows/{name}")))
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .unwrap_or_else(|| json!({}))
}

/// One survey: the cloud metadata route the install recorded, gone, is `route-missing` in
/// status and in repair's look after its run (the node's own look, which the condition and
/// `verify` read too), not in status alone.
#[cfg(unix)]
#[test]
fn a_missing_metadata_route_is_in_repairs_look_as_in_status() {
    // Endpoints at fault, so that repair runs and looks at the node after its run.
    let node = broken();
    node.edit_state(|s| {
        s["routes"]
            .as_array_mut()
            .expect("routes")
            .retain(|r| r["destination"] != "169.254.169.254");
    });
    let (code, status, err) = node.run(&["status"]);
    assert_eq!(code, 1, "{err} {status}");
    assert!(
        codes_of(&status).contains(&"route-missing".to_owned()),
        "status: {status}"
    );
    let (code, repaired, err) = node.run(&["repair"]);
    assert_eq!(code, 1, "{err} {repaired}");
    assert_eq!(codes_of(&repaired), ["route-missing"], "repair: {repaired}");
}

/// The node's own look (repair's after its run, by the survey CalicoNode's condition makes)
/// asks the API server the same with one healthy pod endpoint as with a thousand: a repair of
/// one stale endpoint makes the same requests on both nodes.
#[test]
fn the_nodes_own_look_asks_the_same_with_one_endpoint_or_a_thousand() {
    let repair_asks = |healthy: usize| {
        let node = Node::healthy().installed().build();
        let api = node.api();
        api.set_node_ready("win-1", "True", "kubelet is posting ready status");
        let mut eps: Vec<(String, String)> = (0..healthy)
            .map(|i| {
                let ip = format!("10.244.{}.{}", 1 + i / 200, 2 + i % 200);
                let name = format!("web-{i}");
                api.put_pod("default", &name, "win-1", Some("ReplicaSet"));
                api.set_pod_ip("default", &name, &ip);
                (format!("web{i}_Calico"), ip)
            })
            .collect();
        eps.push(("gone_Calico".into(), "10.244.99.50".into()));
        let eps: Vec<(&str, &str, u16, bool)> = eps
            .iter()
            .map(|(n, ip)| (n.as_str(), ip.as_str(), 3, false))
            .collect();
        node.add_endpoints(&eps);
        node.faults_seen_since(&["gone_Calico"], 600);
        let before = node.api().requests().len();
        let (code, doc, err) = node.run(&["repair"]);
        assert_eq!(code, 0, "{err} {doc}");
        assert_eq!(doc["actions"].as_array().map(Vec::len), Some(1), "{doc}");
        node.api().requests()[before..].to_vec()
    };
    let one = repair_asks(1);
    // The look after the run read the Node with calico-node's credential.
    assert!(
        one.iter()
            .any(|(m, p)| m == "GET" && p == "/api/v1/nodes/win-1"),
        "{one:#?}"
    );
    let many = repair_asks(1000);
    assert_eq!(one, many, "the same requests with a thousand endpoints");
}
