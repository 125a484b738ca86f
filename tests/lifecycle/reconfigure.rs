//! `reconfigure` through the binary: an installed simulated node on the fake API server, with
//! pods on it, taken from VXLAN VNI 4096 to 4097 (drain, new Calico network, uncordon), and
//! the refusals, the PodDisruptionBudget timeout, interruptions and files-only changes.

use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Node, on_node};
use serde_json::{Value, json};

const VNI_4097: &[&str] = &["--set", "vxlan.vni=4097"];

/// Calico installed (VNI 4096, the cluster's) on win-1, which is Ready and runs two ReplicaSet
/// pods, a DaemonSet pod on the host's network (as Calico's own HostProcess pod is) and a
/// DaemonSet pod with a pod network (a log agent); another node runs one pod.
fn installed() -> Node {
    let b = Node::healthy();
    let api = b.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    for (ns, name, node, owner) in [
        ("default", "web-1", "win-1", "ReplicaSet"),
        ("default", "web-2", "win-1", "ReplicaSet"),
        ("kube-system", "calico-node-win", "win-1", "DaemonSet"),
        ("kube-system", "log-agent-win", "win-1", "DaemonSet"),
        ("default", "web-3", "linux-1", "ReplicaSet"),
    ] {
        api.put_pod(ns, name, node, Some(owner));
    }
    api.set_host_network("kube-system", "calico-node-win");
    b.installed().build()
}

impl Node {
    fn reconfigure(&self, extra: &[&str]) -> (i32, Value, String) {
        self.run(&[&["reconfigure"][..], extra].concat())
    }

    /// The names of the pods on the fake API server.
    fn pods(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .api()
            .lock()
            .objects
            .iter()
            .filter(|(k, _)| k.contains("/pods/"))
            .map(|(_, o)| {
                o["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned()
            })
            .collect();
        v.sort();
        v
    }

    fn cordoned(&self) -> bool {
        self.api().get("/api/v1/nodes/win-1").expect("node")["spec"]["unschedulable"] == true
    }
}

fn actions(doc: &Value) -> Vec<String> {
    crate::support::items(doc, "actions")
        .map(|a| a["action"].as_str().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn vni_change_recreates_the_network_after_a_drain_and_uncordons() {
    let n = installed();
    assert_eq!(n.calico_vsid(), Some(4096));
    n.api().set_felix_vni(4097);

    // Without --drain: refused, nothing changed.
    let before = snapshot(&n.sim());
    let (code, doc, err) = n.reconfigure(VNI_4097);
    assert_eq!(code, 6, "needs a drain: its own exit code; {err}");
    assert!(err.contains("--drain"), "{err}");
    assert_eq!(doc["error"]["kind"], "needs-drain", "{doc}");
    assert_same(&snapshot(&n.sim()), &before, "refused without --drain");

    // The dry run lists the pods it would evict and changes nothing.
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain", "--dry-run"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["change"], "network");
    let evict: Vec<&str> = crate::support::items(&doc["pods"], "evict")
        .filter_map(|p| p["name"].as_str())
        .collect();
    assert_eq!(evict, ["web-1", "web-2"]);
    assert_eq!(doc["pods"]["skipped"][0]["name"], "calico-node-win");
    assert_same(&snapshot(&n.sim()), &before, "dry run");
    assert!(!n.cordoned());

    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain", "--grace-period", "7"]].concat());
    assert_eq!(code, 0, "{err}");
    let evictions = n.api().lock().evictions.clone();
    assert_eq!(
        evictions.len(),
        3,
        "the two drained, then the log agent: {evictions:?}"
    );
    for e in &evictions {
        assert_eq!(e["kind"], "Eviction", "{e}");
        assert_eq!(e["deleteOptions"]["gracePeriodSeconds"], 7, "{e}");
    }
    let steps = actions(&doc);
    assert_eq!(
        steps.first().map(String::as_str),
        Some("cordon"),
        "{steps:?}"
    );
    assert_eq!(
        steps.last().map(String::as_str),
        Some("uncordon"),
        "{steps:?}"
    );
    let delete = steps
        .iter()
        .position(|s| s == "delete-network")
        .expect("delete");
    let drain = steps.iter().position(|s| s == "drain").expect("drain");
    assert!(drain < delete, "{steps:?}");
    assert_eq!(
        n.calico_vsid(),
        Some(4097),
        "the Calico network has the new VSID"
    );
    assert_eq!(
        n.pods(),
        ["calico-node-win", "web-3"],
        "evicted; the DaemonSet pod with a pod network evicted once the network was made again (its DaemonSet makes it again), the one on the host's network left"
    );
    let remade = steps
        .iter()
        .position(|s| s == "recreate-daemonset-pods")
        .expect("recreate");
    let ready = steps.iter().position(|s| s == "wait-ready").expect("wait");
    assert!(ready < remade, "{steps:?}");
    assert!(!n.cordoned(), "uncordoned");
    let env = fs_err::read_to_string(n.c_drive("calicowindows/calico-node.env")).expect("env");
    assert!(env.contains("4097"), "{env}");

    // Again: nothing to do.
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["change"], "none");
    assert_eq!(doc["actions"], json!([]));
}

#[test]
fn an_eviction_refused_for_a_while_is_retried_until_the_budget_allows_it() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api()
        .lock()
        .eviction_blocked
        .insert("default/web-2".into());
    // The budget allows it when the drain asks again (kubectl's 5 s after a 429 without
    // Retry-After): a scripted event of the fake API server's, at the drain's own request.
    n.api().when_nth(
        ("POST", "/api/v1/namespaces/default/pods/web-2/eviction", 2),
        |st| st.eviction_blocked.clear(),
    );
    let (code, err) = n.run_raw(
        &[
            &["reconfigure"][..],
            VNI_4097,
            &["--drain", "--drain-timeout", "30s"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{err}");
    let refused = n
        .api()
        .requests()
        .iter()
        .filter(|(m, p)| m == "POST" && p.ends_with("/web-2/eviction"))
        .count();
    assert!(refused >= 2, "web-2's eviction was asked {refused} time(s)");
    assert_eq!(n.pods(), ["calico-node-win", "web-3"]);
    assert_eq!(n.calico_vsid(), Some(4097));
}

#[test]
fn a_vni_other_than_the_clusters_is_refused_unless_forced() {
    let n = installed();
    let before = snapshot(&n.sim());
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("the cluster's Felix uses is 4096"), "{err}");
    assert_eq!(doc["error"]["kind"], "vni-mismatch", "{doc}");
    assert!(err.contains("kubectl patch felixconfiguration"), "{err}");
    assert_same(&snapshot(&n.sim()), &before, "refused");
    assert!(!n.cordoned());

    // --force is about pods without a controller (as kubectl's), not the VNI.
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--force"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-vni-mismatch"), "{err}");
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--allow-vni-mismatch"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.calico_vsid(), Some(4097));
}

#[test]
fn a_disruption_budget_that_never_allows_eviction_times_out_and_undoes_the_cordon() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api()
        .lock()
        .eviction_blocked
        .insert("default/web-2".into());
    let before = snapshot(&n.sim());
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--drain-timeout", "2s"]].concat());
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("disruption budget"), "{err}");
    assert!(err.contains("hint:"), "{err}");
    // What happened, truthfully: web-1 went and stays gone; the cordon was undone.
    assert!(
        err.contains("1 pod(s) were evicted and stay evicted (their controllers start them again elsewhere): default/web-1"),
        "{err}"
    );
    assert!(err.contains("the node is uncordoned again"), "{err}");
    assert!(err.contains("the node is as it was"), "{err}");
    assert!(
        err.contains("the 1 evicted pod(s) are not brought back"),
        "{err}"
    );
    assert!(
        !err.contains("everything done before it was undone"),
        "{err}"
    );
    assert!(!n.cordoned(), "uncordoned after the failure");
    assert_eq!(n.calico_vsid(), Some(4096), "the network was not deleted");
    assert_same(&snapshot(&n.sim()), &before, "nothing on the host changed");
    assert!(n.pods().contains(&"web-2".to_owned()));
}

/// Ctrl-C (SIGINT) while the drain waits on a PodDisruptionBudget that never allows the
/// eviction (its timeout an hour away): the wait ends, and the run ends as after a timeout,
/// the cordon undone and the journal finished, the host as it was; a rerun then does the whole
/// change.
#[cfg(unix)]
#[test]
fn ctrl_c_during_the_drain_ends_its_wait_and_undoes_the_cordon() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api()
        .lock()
        .eviction_blocked
        .insert("default/web-2".into());
    let before = snapshot(&n.sim());
    let args = [
        &["reconfigure"],
        VNI_4097,
        &["--drain", "--drain-timeout", "1h"],
    ]
    .concat();
    let child = n.spawn(&args, true);
    // The eviction the budget refuses was asked for: the drain is waiting.
    let refused = |n: &Node| {
        n.api()
            .requests()
            .iter()
            .any(|(_, path)| path.ends_with("/pods/web-2/eviction"))
    };
    for _ in 0..1200 {
        if refused(&n) {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(refused(&n), "the drain asked to evict web-2");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("signal");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("was stopped (Ctrl-C"), "{err}");
    assert!(err.contains("the node is uncordoned again"), "{err}");
    assert!(
        err.contains("1 pod(s) were evicted and stay evicted"),
        "{err}"
    );
    assert!(!n.cordoned(), "uncordoned after the stop");
    assert_eq!(n.calico_vsid(), Some(4096), "the network was not deleted");
    assert_same(&snapshot(&n.sim()), &before, "nothing on the host changed");
    n.api().lock().eviction_blocked.clear();
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.calico_vsid(), Some(4097));
    assert!(!n.cordoned());
}

/// The outside-in crash test of `reconfigure --drain`: the real binary is stopped at each of
/// its mutating calls in turn (inside a file write, between its temporary file and the
/// rename; before any other call) and killed there with SIGKILL from outside; a rerun must
/// give the host of an uninterrupted run, the new VNI and an uncordoned node.
#[test]
fn reconfigure_killed_from_outside_at_every_call_is_finished_by_a_rerun() {
    // A clean run, for the state to converge to.
    let clean = installed();
    clean.api().set_felix_vni(4097);
    let (code, doc, err) = clean.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    let mutating = doc["actions"].as_array().expect("actions").len();
    let want = snapshot(&clean.sim());

    for n in 1.. {
        let node = installed();
        node.api().set_felix_vni(4097);
        let tmp = node.dir.path().join("tmp");
        fs_err::create_dir_all(&tmp).expect("tmp");
        let args = [&["reconfigure"][..], VNI_4097, &["--drain"]].concat();
        let at = match crate::support::kill_at(&node.sim(), &node.admin, &args, n, &tmp) {
            crate::support::Killed::At(at) => at,
            crate::support::Killed::Ended(code, err) => {
                // The pause came after the last mutating call: the walk is over.
                assert_eq!(code, 0, "{err}");
                assert!(n > mutating as u64, "only {n} calls for {mutating} steps");
                break;
            }
        };
        let (code, _, err) = node.reconfigure(&[VNI_4097, &["--drain"]].concat());
        assert_eq!(code, 0, "killed {at}: the rerun failed: {err}");
        assert_eq!(node.calico_vsid(), Some(4097), "killed {at}");
        assert!(!node.cordoned(), "killed {at}: left cordoned");
        assert_same(&snapshot(&node.sim()), &want, &format!("killed {at}"));
    }
}

#[test]
fn a_failure_at_every_step_is_undone_before_the_network_goes_and_finished_by_a_rerun_after() {
    let clean = installed();
    clean.api().set_felix_vni(4097);
    let (code, _, err) = clean.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    let want = snapshot(&clean.sim());

    let (mut before_deletion, mut after_deletion) = (0, 0);
    for n in 1.. {
        let node = installed();
        node.api().set_felix_vni(4097);
        let initial = snapshot(&node.sim());
        let fault = format!("fail:{n}");
        let (code, err) = node.run_raw(
            &[
                &["reconfigure"][..],
                VNI_4097,
                &["--drain", "--sim-fault", &fault],
            ]
            .concat(),
        );
        if code == 0 {
            break;
        }
        assert_eq!(code, 1, "{fault}: {err}");
        if node.calico_vsid() == Some(4096) {
            // Before the network was deleted: everything undone.
            before_deletion += 1;
            assert!(
                err.contains("everything done before it was undone"),
                "{fault}: {err}"
            );
            // Measured, and the whole simulated host agrees.
            assert!(err.contains("the node is as it was"), "{fault}: {err}");
            assert!(!node.cordoned(), "{fault}: left cordoned");
            assert_same(&snapshot(&node.sim()), &initial, &fault);
        } else {
            // After: nothing undone, the node stays cordoned, a rerun finishes.
            after_deletion += 1;
            assert!(
                err.contains("run 'calicoctl-win reconfigure' again"),
                "{fault}: {err}"
            );
            assert!(node.cordoned(), "{fault}: uncordoned without a network");
            let (code, _, err) = node.reconfigure(&[VNI_4097, &["--drain"]].concat());
            assert_eq!(code, 0, "{fault}: the rerun failed: {err}");
            assert!(!node.cordoned(), "{fault}: left cordoned");
            assert_same(&snapshot(&node.sim()), &want, &fault);
        }
    }
    assert!(
        before_deletion > 0 && after_deletion > 0,
        "{before_deletion} {after_deletion}"
    );
}

#[test]
fn a_files_only_change_restarts_only_the_services_concerned() {
    let n = installed();
    // Extra environment for felix is in calico-felix.env only.
    let config = n.dir.path().join("calico-windows.yaml");
    fs_err::write(
        &config,
        "extra_env:\n  felix:\n    FELIX_IPV6SUPPORT: \"false\"\n",
    )
    .expect("config");
    let config = config.display().to_string();
    let (code, doc, err) = n.reconfigure(&["--config", &config]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["change"], "files");
    let described: Vec<&str> = crate::support::items(&doc, "actions")
        .filter_map(|a| a["description"].as_str())
        .collect();
    let text = described.join("\n");
    assert!(text.contains("stop service CalicoFelix"), "{text}");
    assert!(text.contains("start service CalicoFelix"), "{text}");
    assert!(
        !text.contains("stop service CalicoNode") && !text.contains("start service CalicoNode"),
        "CalicoNode keeps running: {text}"
    );
    assert!(
        !text.contains("cordon") && !text.contains("HNS network Calico ("),
        "{text}"
    );
    assert_eq!(n.calico_vsid(), Some(4096));

    // The same config again: nothing to do, nothing restarted.
    let (code, doc, err) = n.reconfigure(&["--config", &config]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["change"], "none");
    assert_eq!(doc["actions"], json!([]));
}

#[test]
fn a_pod_without_a_controller_is_evicted_only_with_force() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api().put_pod("default", "bare", "win-1", None);
    let before = snapshot(&n.sim());
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("default/bare"), "{err}");
    assert!(err.contains("--force"), "{err}");
    assert_same(&snapshot(&n.sim()), &before, "refused");
    assert!(!n.cordoned());
    assert_eq!(n.api().pod_count(), 6);

    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--force"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.pods(), ["calico-node-win", "web-3"]);
}

#[test]
fn no_install_means_nothing_to_reconfigure() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let out = on_node()
        .args(["reconfigure", "--sim-host"])
        .arg(node.sim())
        .assert()
        .code(2)
        .get_output()
        .clone();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not installed"), "{err}");
}

#[test]
fn status_is_healthy_after_install_and_names_each_problem_when_degraded() {
    let n = installed();
    let (code, doc, err) = n.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["healthy"], true, "{doc}");
    assert_eq!(doc["services"][0]["state"], "running");
    assert!(doc["services"][0]["pid"].is_u64(), "{doc}");
    assert!(
        doc["services"][0]["since"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "{doc}"
    );
    assert_eq!(
        doc["vni"],
        json!({"config": 4096, "hns": 4096, "cluster": 4096})
    );
    assert_eq!(doc["node"]["ready"], true);
    assert_eq!(doc["node"]["pods"].as_array().expect("pods").len(), 4);
    let calico = crate::support::items(&doc, "networks")
        .find(|n| n["name"] == "Calico")
        .expect("Calico network");
    assert_eq!(calico["subnets"][0]["vsid"], 4096);
    assert!(doc["token"]["expires"].is_string(), "{doc}");
    // calico-node's host endpoint, kube-proxy's source VIP on overlay: block .2.
    assert_eq!(doc["endpoints"][0]["name"], "Calico_ep", "{doc}");
    assert_eq!(doc["endpoints"][0]["ip"], "10.244.1.2", "{doc}");
    assert_eq!(doc["endpoints"][0]["network"], "Calico", "{doc}");
    assert_eq!(doc["endpoints"][0]["verdict"], "ok", "{doc}");
    // No kube-proxy service (it may run as a HostProcess DaemonSet): shown, not a problem.
    assert_eq!(doc["kube_proxy"]["verdict"], "warn", "{doc}");

    // A pod's endpoint on the Calico network is listed with it (HNS's endpoint calls), and
    // another node's pod's (VXLAN's remote endpoint), each with the pod that has its address.
    n.api().set_pod_ip("default", "web-1", "10.244.1.7");
    n.api().set_pod_ip("default", "web-3", "10.244.2.3");
    let state_path = n.sim().join("state.json");
    let mut state: Value =
        serde_json::from_str(&fs_err::read_to_string(&state_path).expect("state")).expect("json");
    let calico_id = calico["id"].as_str().expect("id").to_owned();
    state["endpoints"]
        .as_array_mut()
        .expect("endpoints")
        .push(json!({"id": "5eb1a7e0-0000-4000-8000-0000000000ee",
            "name": "0e1f2a3b_Calico", "network_id": calico_id, "ip": "10.244.1.7", "state": 3}));
    // Another node's pod, as kube-proxy's remote endpoint for a Service backend (HCN Flags
    // bit 1, the MAC it conjures from the address).
    state["endpoints"].as_array_mut().expect("endpoints").push(
        json!({"id": "5eb1a7e0-0000-4000-8000-0000000000ef",
            "name": "", "network_id": calico_id, "ip": "10.244.2.3",
            "remote": true, "mac": crate::support::node::kube_proxy_mac("10.244.2.3")}),
    );
    fs_err::write(&state_path, state.to_string()).expect("write state");
    let (code, doc, err) = n.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["endpoints"][1]["ip"], "10.244.1.7", "{doc}");
    assert_eq!(doc["endpoints"][1]["state"], "AttachedSharing", "{doc}");
    assert_eq!(doc["endpoints"][1]["pod"], "default/web-1", "{doc}");
    assert_eq!(doc["endpoints"][1]["verdict"], "ok", "{doc}");
    assert_eq!(doc["endpoints"][2]["remote"], true, "{doc}");
    assert_eq!(doc["endpoints"][2]["verdict"], "ok", "{doc}");
    let text = on_node()
        .args(["status", "--sim-host"])
        .arg(n.sim())
        .arg("--kubeconfig")
        .arg(&n.admin)
        .output()
        .expect("status");
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(
        // Calico_ep is remote on VXLAN (createAndAttachVxlanHostEP), a kube-proxy backend too.
        text.contains("3 endpoint(s), 2 remote (states: AttachedSharing 1)"),
        "{text}"
    );

    // A config with another VNI, a cordoned node and felix set to start by hand: exit 1,
    // every reason.
    let state_path = n.sim().join("state.json");
    let mut state: Value =
        serde_json::from_str(&fs_err::read_to_string(&state_path).expect("state")).expect("json");
    state["services"]["calicofelix"]["start"] = json!("manual");
    fs_err::write(&state_path, state.to_string()).expect("write state");
    let mut node = n.api().get("/api/v1/nodes/win-1").expect("node");
    node["spec"] = json!({"unschedulable": true});
    n.api().put("/api/v1/nodes/win-1", node);
    let (code, doc, err) = n.run(&["status", "--set", "vxlan.vni=4097"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(doc["healthy"], false);
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains("VSID 4096, the config says VNI 4097"),
        "{problems}"
    );
    assert!(
        problems.contains("the VNI the cluster's Felix uses is 4096"),
        "{problems}"
    );
    assert!(
        problems.contains("calico-node.env differs from what the config renders"),
        "{problems}"
    );
    assert!(problems.contains("cordoned"), "{problems}");
    assert!(
        problems.contains("service CalicoFelix differs from the config: start type"),
        "{problems}"
    );
    assert!(err.contains("degraded"), "{err}");
}

#[test]
fn a_node_that_is_not_ready_times_out_after_the_network_and_a_rerun_finishes() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api()
        .set_node_ready("win-1", "False", "kubelet stopped posting node status");
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--wait-timeout", "1s"]].concat());
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("kubelet stopped posting"), "{err}");
    assert!(
        err.contains("run 'calicoctl-win reconfigure' again"),
        "{err}"
    );
    assert_eq!(
        n.calico_vsid(),
        Some(4097),
        "rolled forward: the new network stays"
    );
    assert!(n.cordoned(), "the node stays cordoned until it is Ready");

    n.api()
        .set_node_ready("win-1", "True", "kubelet is posting ready status");
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("continues it"), "{err}");
    assert_eq!(actions(&doc), ["wait-node-ready", "uncordon"]);
    assert!(!n.cordoned());
}

#[test]
fn an_install_does_not_continue_an_interrupted_reconfigure() {
    let n = installed();
    n.api().set_felix_vni(4097);
    let (code, err) = n.run_raw(
        &[
            &["reconfigure"][..],
            VNI_4097,
            &["--drain", "--sim-fault", "crash:6"],
        ]
        .concat(),
    );
    assert_eq!(code, 86, "{err}");
    let zip = release_zip(n.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = n.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("an earlier reconfigure did not finish"),
        "{err}"
    );
    assert!(err.contains("calicoctl-win reconfigure' again"), "{err}");
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.calico_vsid(), Some(4097));
    assert!(!n.cordoned());
}

#[test]
fn a_pod_with_emptydir_data_is_evicted_only_with_delete_emptydir_data() {
    let n = installed();
    n.api().set_felix_vni(4097);
    let path = "/api/v1/namespaces/default/pods/web-1";
    let mut pod = n.api().get(path).expect("web-1");
    pod["spec"]["volumes"] = json!([{"name": "scratch", "emptyDir": {}}]);
    n.api().put(path, pod);
    let before = snapshot(&n.sim());
    // Not even --force evicts it, as in kubectl.
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain", "--force"]].concat());
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("emptyDir data"), "{err}");
    assert!(err.contains("default/web-1"), "{err}");
    assert!(err.contains("--delete-emptydir-data"), "{err}");
    assert_same(&snapshot(&n.sim()), &before, "refused");
    assert!(!n.cordoned());
    let (code, _, err) =
        n.reconfigure(&[VNI_4097, &["--drain", "--delete-emptydir-data"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.pods(), ["calico-node-win", "web-3"]);
}

/// An overloaded API server's 429 (Retry-After, no DisruptionBudget cause) stops the sending
/// until its Retry-After has passed, and is not taken for a PodDisruptionBudget.
#[test]
fn an_overloaded_servers_429_is_waited_out_as_it_asks() {
    let n = installed();
    n.api().set_felix_vni(4097);
    n.api().lock().throttle = 1;
    let (code, _, err) =
        n.reconfigure(&[VNI_4097, &["--drain", "--drain-timeout", "30s"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(n.pods(), ["calico-node-win", "web-3"]);
    let times = n.api().lock().eviction_times.clone();
    assert_eq!(
        times.len(),
        4,
        "two pods, one asked again, then the log agent once the network was made again"
    );
    let (first, last) = (times[0].1, times[2].1);
    let waited = last.duration_since(first);
    assert!(
        waited >= std::time::Duration::from_millis(900),
        "asked again after {waited:?}, before the Retry-After of 1s"
    );
    assert!(
        waited < std::time::Duration::from_secs(5),
        "waited {waited:?}: the overload's 1s, not a budget's 5s"
    );
}

/// At most --drain-concurrency evictions are in flight, over at most that many connections
/// (the client reuses them), however many pods the node has.
#[test]
fn evictions_are_bounded_in_flight_and_reuse_their_connections() {
    let n = installed();
    n.api().set_felix_vni(4097);
    for i in 0..60 {
        n.api()
            .put_pod("default", &format!("many-{i}"), "win-1", Some("ReplicaSet"));
    }
    // Each round changes the VNI, so that each drains: the default limit, then 4.
    for (limit, vni, flag) in [(16, 4097, None), (4, 4096, Some("4"))] {
        {
            let mut st = n.api().lock();
            st.eviction_delay = std::time::Duration::from_millis(30);
            st.max_in_flight = 0;
            st.connections = 0;
        }
        n.api().set_felix_vni(vni);
        let set = format!("vxlan.vni={vni}");
        let mut args = vec!["--set", set.as_str(), "--drain"];
        if let Some(f) = flag {
            args.extend(["--drain-concurrency", f]);
        }
        let (code, _, err) = n.reconfigure(&args);
        assert_eq!(code, 0, "{err}");
        let st = n.api().lock();
        assert!(
            st.max_in_flight <= limit && st.max_in_flight >= limit.min(2),
            "{} in flight with a limit of {limit}",
            st.max_in_flight
        );
        // The evictions' connections, and one or two for the other requests.
        assert!(
            st.connections <= limit + 3,
            "{} connections for {limit} in flight",
            st.connections
        );
        drop(st);
        for i in 0..60 {
            n.api()
                .put_pod("default", &format!("many-{i}"), "win-1", Some("ReplicaSet"));
        }
    }
}

/// install cannot change what the Calico network keeps (CalicoNode would reuse the old network
/// and the new VNI would silently not apply): it refuses and names reconfigure --drain.
#[test]
fn install_refuses_a_vni_change_on_an_installed_node_and_names_reconfigure() {
    let n = installed();
    assert_eq!(n.calico_vsid(), Some(4096));
    n.api().set_felix_vni(4097);
    let before = snapshot(&n.sim());
    let zip = n.dir.path().join("calico-windows-v3.30.2.zip");
    let (code, doc, err) = n.run(
        &[
            &["install", "--release-zip", &zip.display().to_string()][..],
            VNI_4097,
        ]
        .concat(),
    );
    assert_eq!(code, 6, "{err}");
    assert_eq!(doc["error"]["kind"], "needs-drain", "{doc}");
    assert!(err.contains("VXLAN VNI 4096 -> 4097"), "{err}");
    assert!(err.contains("reconfigure --drain"), "{err}");
    assert_same(&snapshot(&n.sim()), &before, "refused install");
    assert_eq!(n.calico_vsid(), Some(4096));
}

/// An engine that rolls work over nodes (system-upgrade-controller, a DaemonSet rollout)
/// cordons and drains the node itself: `--drain=external` needs the node cordoned, evicts
/// nothing, and leaves the uncordon to the engine.
#[test]
fn drain_external_leaves_the_cordon_and_the_drain_to_the_engine() {
    let n = installed();
    n.api().set_felix_vni(4097);
    let before = snapshot(&n.sim());
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain=external"]].concat());
    assert_eq!(code, 6, "not cordoned: not drained by anyone; {err}");
    assert_eq!(doc["error"]["kind"], "needs-drain", "{doc}");
    assert!(err.contains("is not cordoned"), "{err}");
    assert_same(&snapshot(&n.sim()), &before, "refused");

    // The engine cordons (and drains) the node.
    let mut node = n.api().get("/api/v1/nodes/win-1").expect("node");
    node["spec"]["unschedulable"] = json!(true);
    n.api().put("/api/v1/nodes/win-1", node);
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain=external"]].concat());
    assert_eq!(code, 0, "{err}");
    let steps = actions(&doc);
    for own in ["cordon", "drain", "uncordon"] {
        assert!(!steps.iter().any(|s| s == own), "{own} in {steps:?}");
    }
    assert!(steps.iter().any(|s| s == "delete-network"), "{steps:?}");
    let evicted: Vec<String> = n
        .api()
        .lock()
        .evictions
        .iter()
        .map(|e| {
            e["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect();
    assert_eq!(
        evicted,
        ["log-agent-win"],
        "only the DaemonSet pod the engine's drain left on the deleted network"
    );
    assert_eq!(n.calico_vsid(), Some(4097));
    assert!(
        n.cordoned(),
        "the engine uncordons its node, not calicoctl-win"
    );
}

/// Install and reconfigure annotate the node with what runs on it, for engines that roll work
/// over the nodes: the Calico release, calicoctl-win's version and the config's hash, which
/// follows the rendered configuration.
#[test]
fn the_node_is_annotated_with_the_calico_version_and_the_config_hash() {
    let n = installed();
    let annotations =
        || n.api().get("/api/v1/nodes/win-1").expect("node")["metadata"]["annotations"].clone();
    let first = annotations();
    assert_eq!(first["calicoctl-win/calico-version"], "3.30.2", "{first}");
    assert_eq!(
        first["calicoctl-win/version"],
        env!("CARGO_PKG_VERSION"),
        "{first}"
    );
    let hash = first["calicoctl-win/config-hash"]
        .as_str()
        .expect("hash")
        .to_owned();
    assert!(hash.starts_with("sha256:") && hash.len() == 71, "{hash}");

    n.api().set_felix_vni(4097);
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    let second = annotations();
    assert_ne!(
        second["calicoctl-win/config-hash"],
        hash.as_str(),
        "{second}"
    );
    assert_eq!(second["calicoctl-win/calico-version"], "3.30.2");

    // The same config again: the same hash.
    let (code, _, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        annotations()["calicoctl-win/config-hash"],
        second["calicoctl-win/config-hash"]
    );
}

/// kube-proxy registered as a service, as Calico's kube-proxy-service.ps1 ran it: status and
/// preflight check its network, its source VIP against Calico_ep, and DSR.
#[test]
fn status_and_preflight_check_the_kube_proxy_service() {
    let n = installed();
    let state_path = n.sim().join("state.json");
    let set_kube_proxy = |command_line: &str| {
        let mut state: Value =
            serde_json::from_str(&fs_err::read_to_string(&state_path).expect("state"))
                .expect("json");
        state["services"]["kube-proxy"] = json!({
            "name": "kube-proxy", "display_name": "kube-proxy service", "description": "",
            "command_line": command_line, "start": "auto", "dependencies": [],
            "recovery": null, "state": "running", "pid": 4321, "since": null,
        });
        fs_err::write(&state_path, state.to_string()).expect("write state");
    };
    // A source VIP that is not Calico_ep's, the flannel-era network name.
    set_kube_proxy(
        r"C:\k\kube-proxy.exe --network-name=vxlan0 --source-vip=10.244.1.9 --enable-dsr=true --feature-gates=WinDSR=true,WinOverlay=true",
    );
    let (code, doc, err) = n.run(&["status"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(doc["kube_proxy"]["verdict"], "fail", "{doc}");
    let problems = doc["problems"].to_string();
    assert!(
        problems.contains("--source-vip is 10.244.1.9, but Calico_ep"),
        "{problems}"
    );
    // The fix is the kube-proxy finding's remedy, not part of its sentence.
    let finding = crate::support::items(&doc, "findings")
        .find(|f| f["code"] == "kube-proxy")
        .cloned()
        .unwrap_or_default();
    assert!(
        finding["remedy"]
            .as_str()
            .is_some_and(|r| r.contains("--source-vip=10.244.1.2")),
        "{finding}"
    );
    assert!(!problems.contains("fix:"), "{problems}");
    assert!(problems.contains("\\\"vxlan0\\\""), "{problems}");
    let (_, doc, _) = n.run(&["preflight"]);
    let check = crate::support::items(&doc, "checks")
        .find(|c| c["id"] == "kube-proxy")
        .expect("kube-proxy check")
        .clone();
    assert_eq!(check["verdict"], "fail", "{check}");

    // As the script configured it: healthy.
    set_kube_proxy(
        r"C:\k\kube-proxy.exe --hostname-override=win-1 --proxy-mode=kernelspace --network-name=Calico --source-vip=10.244.1.2 --enable-dsr=true --feature-gates=WinDSR=true,WinOverlay=true",
    );
    let (code, doc, err) = n.run(&["status"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["kube_proxy"]["verdict"], "pass", "{doc}");
}

/// A node name kubelet does not use is refused by reconfigure as by install (the node-name
/// check, exit 3), and nothing is rewritten.
#[test]
fn reconfigure_refuses_a_node_name_kubelet_does_not_use() {
    let n = installed();
    let env = n.c_drive("calicowindows/calico-node.env");
    let before = fs_err::read(&env).ok();
    let out = crate::support::cmd()
        .args([
            "reconfigure",
            "--set",
            "node.name=win-9",
            "-o",
            "json",
            "--sim-host",
        ])
        .arg(n.sim())
        .arg("--kubeconfig")
        .arg(&n.admin)
        .output()
        .expect("run");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let doc = crate::support::json(&out.stdout);
    assert_eq!(doc["blocking"], json!(["node-name"]), "{doc}");
    assert_eq!(fs_err::read(&env).ok(), before, "NODENAME was rewritten");
}

/// Every refusal at once: a VNI the cluster's Felix does not use and a change that needs a
/// drain are both said, not the drain first and the VNI only once --drain is added.
#[test]
fn a_vni_mismatch_and_a_missing_drain_are_refused_together() {
    let n = installed();
    n.api().set_felix_vni(4096);
    let before = snapshot(&n.sim());
    let (code, doc, err) = n.reconfigure(VNI_4097);
    assert_eq!(code, 2, "{err}");
    assert_eq!(doc["error"]["kind"], "vni-mismatch", "{doc}");
    let message = doc["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("the VNI the cluster's Felix uses is 4096 (FelixConfiguration vxlanVNI), the config says 4097")
            && message.contains("needs the Calico HNS network made again"),
        "{message}"
    );
    assert!(
        doc["error"]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("--drain") && h.contains("vxlanVNI")),
        "{doc}"
    );
    assert_same(&snapshot(&n.sim()), &before, "refused");
}

/// Most clusters leave FelixConfiguration's vxlanVNI unset, and Felix uses its default, 4096
/// (felix/config/config_params.go `VXLANVNI int;4096`). A VNI other than that is compared with
/// it everywhere: install's check, reconfigure's refusal, status's drift (reconfigure and status
/// once skipped the comparison and made a network Felix does not use).
#[test]
fn a_vni_is_compared_with_felixs_default_when_the_cluster_sets_none() {
    let n = installed();
    n.api().unset_felix_vni();
    let (code, doc, err) = n.reconfigure(&[VNI_4097, &["--drain"]].concat());
    assert_eq!(code, 2, "{err} {doc}");
    assert_eq!(doc["error"]["kind"], "vni-mismatch", "{doc}");
    assert!(
        doc["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Felix's default")),
        "{doc}"
    );
    assert_eq!(n.calico_vsid(), Some(4096), "nothing was changed");
    let (code, doc, _) = n.run(&["status", "--set", "vxlan.vni=4097"]);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(doc["vni"]["cluster"], 4096, "{doc}");
    assert!(
        crate::support::status_problems(&doc)
            .iter()
            .any(|p| p.contains("the VNI the cluster's Felix uses is 4096")),
        "{doc}"
    );
    let (code, doc, _) = n.run(&["preflight", "--set", "vxlan.vni=4097"]);
    assert_eq!(code, 3, "{doc}");
    let check = crate::support::items(&doc, "checks")
        .find(|c| c["id"] == "vxlan-vni")
        .cloned()
        .expect("vxlan-vni");
    assert_eq!(check["verdict"], "fail", "{check}");
}
