//! `migrate`: a node handed to the operator's HostProcess install and taken back, one node at a
//! time, with its pods' HNS endpoints kept. The operator is `support::operator::FakeOperator`
//! (its placement and its scripts' effects on the host, each cited there).

use crate::support::Node;
use crate::support::operator::{FakeOperator, POD_PREFIX};
use crate::support::snapshot::{assert_same, snapshot};
use serde_json::{Value, json};

const INSTALLATION: &str = "/apis/operator.tigera.io/v1/installations/default";
const INTERNATIONAL: &str = r"hku\.default\control panel\international";

/// The pods' endpoints: (id, name, address).
fn endpoints(node: &Node) -> Vec<(String, String, String)> {
    node.endpoints()
}

fn network_names(node: &Node) -> Vec<String> {
    let mut n: Vec<String> = node.state()["networks"]
        .as_array()
        .expect("networks")
        .iter()
        .filter_map(|n| n["Name"].as_str().map(str::to_owned))
        .collect();
    n.sort();
    n
}

fn services(node: &Node) -> Vec<String> {
    node.state()["services"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}

/// `migrate from-operator` with the release zip `zip`.
fn from_operator(node: &Node, zip: &str) -> (i32, Value, String) {
    node.run(&[
        "migrate",
        "from-operator",
        "--pod-timeout",
        "30s",
        "--release-zip",
        zip,
    ])
}

/// A node calicoctl-win installed, with two pods' endpoints and its Node Ready.
pub(crate) fn installed_with_pods() -> Node {
    let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    node.add_endpoints(&[
        ("poda_Calico", "10.244.1.10", 3, false),
        ("podb_Calico", "10.244.1.11", 3, false),
    ]);
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    node
}

/// SYSTEM in de-DE: the marker must be written as `dd.MM.yyyy HH:mm:ss`, or the operator's
/// node-service.ps1 reads another boot and deletes every network.
fn system_in_german(node: &Node) {
    node.edit_state(|s| {
        s["registry"][INTERNATIONAL] = serde_json::json!({
            "localename": {"type": "REG_SZ", "data": "de-DE"},
            "sshortdate": {"type": "REG_SZ", "data": "dd.MM.yyyy"},
            "stimeformat": {"type": "REG_SZ", "data": "HH:mm:ss"},
        });
    });
}

#[test]
fn to_the_operator_and_back_keeps_every_endpoint() {
    let node = installed_with_pods();
    system_in_german(&node);
    let before = endpoints(&node);
    assert!(before.len() >= 2, "{before:?}");
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());

    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["boot_marker"], "21.11.2025 09:00:00", "{doc}");
    // containerd's CNI directories stay for the operator's files (containerd watches the one
    // it made at start only); the install root's empty directories go.
    let removed_dirs: Vec<&str> = crate::support::items(&doc, "actions")
        .filter(|a| a["action"] == "remove-dir")
        .filter_map(|a| a["path"].as_str())
        .collect();
    assert!(
        removed_dirs.iter().all(|d| !d.contains("containerd")),
        "{removed_dirs:?}"
    );
    assert!(
        removed_dirs.contains(&r"C:\CalicoWindows"),
        "{removed_dirs:?}"
    );
    let events = operator.events();
    assert_eq!(events.len(), 1, "{events:?} {err}");
    assert!(!events[0].contains("deleted every"), "{events:?}");
    assert_eq!(endpoints(&node), before);
    assert_eq!(network_names(&node), ["Calico", "External"]);
    assert!(
        services(&node).iter().all(|s| !s.starts_with("calico")),
        "{:?}",
        services(&node)
    );
    let api = node.api();
    assert!(api.get(&format!("{POD_PREFIX}win-1")).is_some());
    let inst = api.get(INSTALLATION).expect("installation");
    assert_eq!(inst["spec"]["calicoNetwork"]["windowsDataplane"], "HNS");
    let n = api.get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(
        n["metadata"]["labels"]["calicoctl-win/runs-calico"],
        Value::Null,
        "{n}"
    );
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "uncordoned: {n}");
    // Again (a rollout that reaches the node twice): nothing to hand over, nothing changed.
    let writes = api.writes().len();
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        (&doc["already"], &doc["changed"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(api.writes().len(), writes, "{:?}", &api.writes()[writes..]);

    // The operator's CNI installer wrote its conflist and kubeconfig where containerd loads
    // CNI configs (the Installation's windowsNodes.cniConfigDir).
    let net_d = node.c_drive("program files/containerd/cni/conf");
    assert!(net_d.join("10-calico.conflist").exists());
    assert!(net_d.join("calico-kubeconfig").exists());
    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(endpoints(&node), before, "{err}");
    assert_eq!(network_names(&node), ["Calico", "External"]);
    assert!(services(&node).iter().any(|s| s == "caliconode"), "{err}");
    assert!(api.get(&format!("{POD_PREFIX}win-1")).is_none());
    assert!(!net_d.join("10-calico.conflist").exists(), "{err}");
    assert!(!net_d.join("calico-kubeconfig").exists());
    let n = api.get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(
        n["metadata"]["labels"]["calicoctl-win/runs-calico"], "true",
        "{n}"
    );
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
    let unavailable = crate::support::items(&n["status"], "conditions")
        .find(|c| c["type"] == "NetworkUnavailable")
        .cloned()
        .expect("the condition the preStop set");
    assert_eq!(unavailable["status"], "False", "{unavailable}");
    assert_eq!(unavailable["reason"], "CalicoIsUp");
    // The operator was never on the node while calicoctl-win's services ran.
    assert_eq!(operator.events().len(), 2, "{:?}", operator.events());
    // Again: the node is calicoctl-win's already; not even cordoned for a moment.
    let writes = api.writes().len();
    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        (&doc["already"], &doc["changed"]),
        (&json!(true), &json!(false))
    );
    assert_eq!(api.writes().len(), writes, "{:?}", &api.writes()[writes..]);
}

/// A node neither calicoctl-win nor the operator runs Calico on has nothing to hand over:
/// refused as not installed, naming the operator pod's state, nothing changed.
#[test]
fn a_node_with_nothing_to_hand_over_is_not_installed() {
    let node = Node::healthy().created().build();
    let writes = node.api().writes().len();
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "5s"]);
    assert_eq!(code, 2, "{err} {doc}");
    assert_eq!(doc["error"]["kind"], "not-installed", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no calico-node-windows pod")),
        "{doc}"
    );
    assert_eq!(node.api().writes().len(), writes);
}

/// The stand-in is not agreeable: a marker in another culture than SYSTEM's loses every
/// network, as node-service.ps1 would.
#[test]
fn a_marker_in_another_culture_loses_the_networks() {
    let node = installed_with_pods();
    system_in_german(&node);
    // What calicoctl-win wrote before it knew SYSTEM's culture: en-US.
    node.edit_state(|s| {
        s["registry"][r"hklm\software\tigera\calico"]["lastboottime"] =
            serde_json::json!({"type": "REG_SZ", "data": "11/21/2025 9:00:00 AM"});
        s["services"].as_object_mut().expect("services").clear();
    });
    let api = node.api();
    let mut inst = api.get(INSTALLATION).expect("installation");
    inst["spec"]["calicoNetwork"]["windowsDataplane"] = "HNS".into();
    api.put(INSTALLATION, inst);
    let operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while operator.events().is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert!(
        operator.events()[0].contains("deleted every non-NAT HNS network"),
        "{:?}",
        operator.events()
    );
    assert!(endpoints(&node).is_empty());
}

/// Each refusal changes nothing and says its fix: SYSTEM's date format unknown, a Calico
/// network with another VSID, a kube-proxy service.
#[test]
fn refusals_change_nothing() {
    let node = installed_with_pods();
    node.edit_state(|s| {
        s["registry"]
            .as_object_mut()
            .expect("registry")
            .remove(INTERNATIONAL);
    });
    let before = snapshot(&node.sim());
    let writes = node.api().writes().len();
    let (code, doc, err) = node.run(&["migrate", "to-operator"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
    assert!(err.contains("sShortDate"), "{err}");
    assert_same(&before, &snapshot(&node.sim()), "a refused migrate");
    assert_eq!(node.api().writes().len(), writes);

    let node = installed_with_pods();
    node.edit_state(|s| {
        for n in s["networks"].as_array_mut().expect("networks") {
            if n["Name"] == "Calico" {
                for p in n["Ipams"][0]["Subnets"][0]["Policies"]
                    .as_array_mut()
                    .into_iter()
                    .flatten()
                {
                    if p["Type"] == "VSID" {
                        p["Settings"]["IsolationId"] = 4097.into();
                    }
                }
            }
        }
    });
    assert_eq!(node.calico_vsid(), Some(4097), "the edit reached the VSID");
    let (code, doc, err) = node.run(&["migrate", "to-operator"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert!(err.contains("--set vxlan.vni=4096 --drain"), "{err}");

    let node = installed_with_pods();
    node.edit_state(|s| {
        let mut svc = s["services"]["caliconode"].clone();
        svc["name"] = "kube-proxy".into();
        s["services"]["kube-proxy"] = svc;
    });
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--dry-run"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert!(err.contains("HostProcess DaemonSet pod"), "{err}");

    // The operator on Windows with its default CNI directories (no windowsNodes:
    // /opt/cni/bin, /etc/cni/net.d), which are not this node's containerd's: refused both
    // ways, each with its fix. (With Windows off, to-operator writes containerd's itself.)
    let node = installed_with_pods();
    let api = node.api();
    let mut inst = api.get(INSTALLATION).expect("installation");
    inst["spec"]["calicoNetwork"]["windowsDataplane"] = json!("HNS");
    api.put(INSTALLATION, inst);
    let before = snapshot(&node.sim());
    let writes = api.writes().len();
    let (code, doc, err) = node.run(&["migrate", "to-operator"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert!(
        err.contains(r#""cniConfigDir":"C:/Program Files/containerd/cni/conf""#),
        "{err}"
    );
    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 3, "{err} {doc}");
    assert!(
        err.contains(r#"--set cni.conf_dir="C:\etc\cni\net.d""#),
        "{err}"
    );
    assert_same(&before, &snapshot(&node.sim()), "a refused migrate");
    assert_eq!(api.writes().len(), writes);
}

fn cni_version_installed(node: &Node) -> String {
    let conf =
        fs_err::read_to_string(node.c_drive("program files/containerd/cni/conf/10-calico.conf"))
            .expect("the CNI config");
    let v: Value = serde_json::from_str(&conf).expect("json");
    v["cniVersion"].as_str().expect("cniVersion").to_owned()
}

/// Where the cluster has an Installation, the CNI config declares its `spec.cni.specVersion`
/// (`Auto` and unset: 1.0.0, tigera/operator `ResolvedSpecVersion`), so this node's and the
/// operator's agree; without one, the release template's (0.3.1 for 3.30.2).
#[test]
fn the_cni_spec_version_is_the_operators() {
    let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
    node.api().remove(INSTALLATION);
    let (code, doc, err) = node.install_local(&[]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(cni_version_installed(&node), "0.3.1");

    for (spec, want) in [(None, "1.0.0"), (Some("0.4.0"), "0.4.0")] {
        let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
        let mut inst = node.api().get(INSTALLATION).expect("installation");
        if let Some(s) = spec {
            inst["spec"]["cni"] = serde_json::json!({"specVersion": s});
        }
        node.api().put(INSTALLATION, inst);
        let (code, doc, err) = node.install_local(&[]);
        assert_eq!(code, 0, "{err} {doc}");
        assert_eq!(cni_version_installed(&node), want, "{spec:?}");
        // status renders what install rendered (the record keeps the version): no drift.
        let (_, doc, _) = node.run(&["status", "--offline"]);
        assert_eq!(doc["drift"], serde_json::json!([]), "{doc}");
    }
}

/// A release that install cannot use is refused before the node leaves the operator: the
/// operator's pod, its CNI files and the cluster stay as they were; the right release then
/// takes the node.
#[test]
fn a_release_install_cannot_use_is_refused_before_the_node_leaves_the_operator() {
    let node = installed_with_pods();
    let before = endpoints(&node);
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    let missing = node.sim().join("no-such-release.zip").display().to_string();
    let host = snapshot(&node.sim());
    let writes = node.api().writes().len();
    let (code, doc, err) = from_operator(&node, &missing);
    assert_ne!(code, 0, "{doc}");
    assert_same(&host, &snapshot(&node.sim()), "a refused from-operator");
    assert_eq!(
        node.api().writes().len(),
        writes,
        "{:?}",
        node.api().writes()
    );
    assert!(
        node.api().get(&format!("{POD_PREFIX}win-1")).is_some(),
        "{err}"
    );

    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(endpoints(&node), before);
    assert!(services(&node).iter().any(|s| s == "caliconode"), "{err}");
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
    drop(operator);
}

/// The operator renders its DaemonSet but the pod does not come in time: exit 4, the node left
/// cordoned and handed over, `status` naming the run to finish; a rerun once the pod comes
/// waits again and uncordons, without taking the node back from the operator meanwhile (no
/// label put back).
#[test]
fn an_operator_pod_that_is_late_is_waited_for_again() {
    let node = installed_with_pods();
    let before = endpoints(&node);
    // The operator's controllers ran (TigeraStatus, DaemonSet), its pod has not come yet.
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    operator.hold_pods(true);
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "1s"]);
    assert_eq!(code, 4, "{err} {doc}");
    assert_eq!(doc["error"]["kind"], "operator-pod-timeout", "{doc}");
    assert!(err.contains("kubectl uncordon win-1"), "{err}");
    assert!(err.contains("is the operator's now"), "{err}");
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(n["spec"]["unschedulable"], true, "{n}");
    assert_eq!(endpoints(&node), before);
    let journal = node.c_drive("calicoctl-win-migrate.journal.json");
    assert!(journal.exists(), "the journal a rerun continues");
    let (_, status, _) = node.run(&["status"]);
    assert!(
        status
            .to_string()
            .contains("'calicoctl-win migrate to-operator' finishes it"),
        "{status}"
    );

    operator.hold_pods(false);
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(
        operator.events().len(),
        1,
        "started once, never taken off: {:?}",
        operator.events()
    );
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
    assert_eq!(
        n["metadata"]["labels"]["calicoctl-win/runs-calico"],
        Value::Null,
        "{n}"
    );
    assert_eq!(endpoints(&node), before);
}

/// The datastore migration's clean-up deletes `crd.projectcalico.org` under a running node:
/// CalicoNode sees the group change at its next look (a minute after the first, with
/// calico-node's own credential) and restarts Calico's components once.
#[cfg(unix)]
#[test]
fn calico_node_restarts_the_components_when_the_api_group_changes() {
    let node = Node::healthy().installed().build();
    node.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let condition = || {
        node.api().get("/api/v1/nodes/win-1").expect("node")["status"]["conditions"]
            .as_array()
            .is_some_and(|c| c.iter().any(|c| c["type"] == "CalicoWindowsReady"))
    };
    // CalicoNode looks every second, not every minute: the second look comes without a wait.
    let child = crate::support::console_node(&node.sim(), &["--sim-pace", "60"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !condition() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(condition(), "CalicoNode's first look");
    // Its first look saw crd.projectcalico.org; now only projectcalico.org/v3 is served.
    node.api().serve_calico_v3();
    // The look that sees it restarts the components, then runs calico-node's startup again:
    // waited for in CalicoNode's log file (each line written as it is said), not guessed at
    // after the look's discovery (a loaded machine took longer than a pause of 2 s).
    let file = node.c_drive("calicowindows/logs/calico-node.log");
    let looked = || {
        let text = fs_err::read_to_string(&file).unwrap_or_default();
        text.split_once("restarted CalicoFelix")
            .is_some_and(|(_, after)| after.contains("calico-node startup finished"))
    };
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !looked() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let log = crate::support::stop_console(child);
    assert!(
        log.contains(
            "Calico's API group changed from crd.projectcalico.org/v1 to projectcalico.org/v3"
        ),
        "{log}"
    );
    assert!(log.contains("restarted CalicoFelix"), "{log}");
    assert_eq!(
        log.matches("Calico's API group changed").count(),
        1,
        "{log}"
    );
}

/// Before the operator is switched on for Windows, every node calicoctl-win runs on is
/// labelled out of its DaemonSet: one install annotated, and one whose annotation never
/// reached the Node but whose CalicoNode keeps its condition; not a node uninstall left.
#[test]
fn every_node_calicoctl_win_runs_on_is_kept_from_the_operator_first() {
    let node = installed_with_pods();
    let api = node.api();
    for (name, reason) in [("win-2", "CalicoReady"), ("win-3", "NotInstalled")] {
        api.put(
            &format!("/api/v1/nodes/{name}"),
            json!({"apiVersion": "v1", "kind": "Node",
                "metadata": {"name": name, "labels": {"kubernetes.io/os": "windows"}},
                "status": {"conditions": [{"type": "CalicoWindowsReady", "status": "True",
                    "reason": reason, "message": "", "lastHeartbeatTime": "2026-11-25T00:00:00Z"}]}}),
        );
    }
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--dry-run"]);
    assert_eq!(code, 0, "{err} {doc}");
    let plan = doc["actions"].to_string();
    assert!(plan.contains("win-2"), "{plan}");
    assert!(!plan.contains("win-3"), "{plan}");
}

/// An `overlay` Installation whose fields override `default`'s (as the operator merges them):
/// migrate writes the DaemonSet's affinity and `windowsDataplane` where the operator reads
/// them, in the overlay, keeping the overlay's own affinity term; `default` is left as it was.
/// The stand-in operator merges the two as the operator does, and takes the node.
#[test]
fn an_overlay_installation_is_patched_where_it_overrides_default() {
    const OVERLAY: &str = "/apis/operator.tigera.io/v1/installations/overlay";
    let node = installed_with_pods();
    let api = node.api();
    let term = json!({"key": "node.kubernetes.io/windows-build", "operator": "In", "values": ["10.0.20348"]});
    api.put(
        OVERLAY,
        json!({"apiVersion": "operator.tigera.io/v1", "kind": "Installation",
            "metadata": {"name": "overlay"},
            "spec": {"calicoNetwork": {"windowsDataplane": "Disabled"},
                "calicoNodeWindowsDaemonSet": {"spec": {"template": {"spec": {"affinity":
                    {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
                        {"nodeSelectorTerms": [{"matchExpressions": [term.clone()]}]}}}}}}}}}),
    );
    let mut n = api.get("/api/v1/nodes/win-1").expect("node");
    n["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.20348");
    api.put("/api/v1/nodes/win-1", n);
    let default_before = api.get(INSTALLATION).expect("default");
    let before = endpoints(&node);
    let operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());

    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    let overlay = api.get(OVERLAY).expect("overlay");
    assert_eq!(overlay["spec"]["calicoNetwork"]["windowsDataplane"], "HNS");
    let expressions = overlay["spec"]["calicoNodeWindowsDaemonSet"]["spec"]["template"]["spec"]
        ["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchExpressions"]
        .clone();
    assert_eq!(
        expressions,
        json!([term, {"key": "calicoctl-win/runs-calico", "operator": "NotIn", "values": ["true"]}])
    );
    assert_eq!(api.get(INSTALLATION).expect("default"), default_before);
    assert_eq!(endpoints(&node), before);
    assert!(
        api.get(&format!("{POD_PREFIX}win-1")).is_some(),
        "{:?}",
        operator.events()
    );
}

/// An operator older than release-v1.32 knows neither `calicoNetwork.windowsDataplane` nor
/// `calicoNodeWindowsDaemonSet` in its Installation CRD: the API server refuses them when asked
/// for strict field validation, and drops them when it ignores that (before Kubernetes 1.25).
/// Either way migrate stops at its first step, the Installation's patch, with nothing on the
/// node changed and the upgrade as its fix, instead of handing the node to an operator that
/// will never come.
#[test]
fn an_operator_too_old_for_windows_is_refused_before_the_node_changes() {
    for strict in [true, false] {
        let node = installed_with_pods();
        let api = node.api();
        {
            let mut st = api.lock();
            st.unknown_fields.insert(
                "installations".into(),
                vec![
                    "spec.calicoNetwork.windowsDataplane".into(),
                    "spec.calicoNodeWindowsDaemonSet".into(),
                ],
            );
            st.strict_validation = strict;
        }
        let before = snapshot(&node.sim());
        let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "5s"]);
        assert_eq!(code, 3, "strict {strict}: {err} {doc}");
        assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
        assert!(
            doc.to_string().contains("spec.calicoNodeWindowsDaemonSet"),
            "strict {strict}: {doc}"
        );
        assert!(err.contains("v1.32 or later"), "{err}");
        // Its cluster steps are undone: not even a journal is left.
        assert_same(
            &before,
            &snapshot(&node.sim()),
            "a migrate the operator cannot take",
        );
        assert!(
            api.get(INSTALLATION).expect("default")["spec"]["calicoNodeWindowsDaemonSet"].is_null()
        );
    }
}

/// The clock was stepped 7 s ahead since the boot (a time sync), which moves the boot time
/// Windows reports (what node-service.ps1 formats) but not the boot: the marker is written as
/// the operator will read it, and its networks stay. Back from the operator, its marker is
/// this boot as reported. Had the clock been stepped again after its pod started, that marker
/// would be neither this boot nor this boot as reported now: refused (the networks' boot is
/// not certain), changing nothing, with a way that does not rest on it.
#[test]
fn a_clock_step_since_the_boot_does_not_cost_the_networks() {
    let node = installed_with_pods();
    let before = endpoints(&node);
    let stepped = |by: i64| {
        node.edit_state(|s| {
            let boot = s["system"]["boot_local_seconds"].as_i64().expect("boot");
            s["system"]["boot_local_seconds_reported"] = json!(boot + by);
        });
    };
    stepped(7);
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["boot_marker"], "11/21/2025 9:00:07 AM", "{doc}");
    assert!(
        operator
            .events()
            .iter()
            .all(|e| !e.contains("deleted every")),
        "{:?}",
        operator.events()
    );
    assert_eq!(endpoints(&node), before);

    stepped(-3);
    let snap = snapshot(&node.sim());
    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 3, "{err} {doc}");
    assert!(
        err.contains("clock step") && err.contains("kubectl drain win-1"),
        "{err}"
    );
    assert_same(&snap, &snapshot(&node.sim()), "a refused from-operator");

    stepped(7);
    let (code, doc, err) = from_operator(&node, &node.zip().display().to_string());
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(endpoints(&node), before);
}
