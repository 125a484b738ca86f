//! `fleet plan --verify`: the Plan's job runs `verify` for its node after the reconfigure, in
//! verify's namespace with verify's roles bound to the jobs' account; a node that does not pass
//! traffic fails its job, stays cordoned and holds its slot, so the rollout stops there, as a
//! failed reconfigure does. Driven as system-upgrade-controller drives a Plan (fleet.rs `drive`).

use super::fleet::{
    CONFIG, Machine, Pod, cordoned, drive, fleet_plan, manifest, plan_schema, problems,
};
use crate::support::fake_api::{FakeApi, meta};
use serde_json::{Value, json};

fn plan_with_verify(extra: &[&str]) -> Value {
    let mut args = vec![
        "--config",
        CONFIG,
        "--image",
        "registry.example.com/calicoctl-win:1.2.0",
        "--engine",
        "system-upgrade-controller",
        "--verify",
    ];
    args.extend_from_slice(extra);
    let (code, doc, err) = fleet_plan(&args);
    assert_eq!(code, 0, "{err}");
    doc
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array()
        .expect("array")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn the_plan_with_verify_runs_verify_after_the_reconfigure_and_is_what_the_controller_accepts() {
    let doc = plan_with_verify(&[]);
    let plan = manifest(&doc, "Plan");
    assert_eq!(
        problems(&plan_schema(), plan),
        Vec::<String>::new(),
        "{plan}"
    );
    let args = strings(&plan["spec"]["upgrade"]["args"]);
    let and = args.iter().position(|a| *a == "&&").expect("&&");
    assert!(args[..and].contains(&"reconfigure"), "{args:?}");
    assert_eq!(
        args[and + 1],
        "%CONTAINER_SANDBOX_MOUNT_POINT%\\calicoctl-win.exe"
    );
    assert_eq!(
        args[and + 2..],
        [
            "--config",
            "%CONTAINER_SANDBOX_MOUNT_POINT%\\calicoctl-win\\calico-windows.yaml",
            "-o",
            "json",
            "verify",
            "--node",
            "%SYSTEM_UPGRADE_NODE_NAME%",
            "--namespace",
            "calicoctl-win-verify",
            "--while-cordoned",
            "--timeout=2m",
            "--pull-timeout=10m"
        ]
    );
    // The job's deadline is the run's own bounds, not the controller's 600 s: the drain's
    // 10m, reconfigure's waits (13m), the pull's 10m, verify's 2m twice (its wait for the
    // node's word, then its checks) and a 5m margin: no wait for another run's verify.
    assert_eq!(plan["spec"]["jobActiveDeadlineSecs"], 2520, "{plan}");
    let longer = plan_with_verify(&["--drain-timeout", "30m"]);
    assert_eq!(
        manifest(&longer, "Plan")["spec"]["jobActiveDeadlineSecs"],
        3720
    );
    // One node at a time unless asked.
    assert_eq!(plan["spec"]["concurrency"], 1);
    // Verify's namespace and roles, bound to the jobs' account (no second account).
    let all = doc["manifests"].as_array().expect("manifests");
    let ns = manifest(&doc, "Namespace");
    assert_eq!(ns["metadata"]["name"], "calicoctl-win-verify");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    let verify_roles: Vec<&Value> = all
        .iter()
        .filter(|m| m["metadata"]["name"] == "calicoctl-win-fleet-verify")
        .collect();
    let kinds: Vec<&str> = verify_roles
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    assert_eq!(kinds, super::verify_rights::ACCOUNT_KINDS[1..]);
    // The jobs' pods in verify's namespace run agnhost only.
    let policy = verify_roles[6];
    super::verify_rights::verify_policy_admits(policy, "system-upgrade:calicoctl-win-fleet");
    for b in verify_roles.iter().filter(|m| m["subjects"].is_array()) {
        assert_eq!(
            b["subjects"],
            json!([{"kind": "ServiceAccount", "name": "calicoctl-win-fleet",
                "namespace": "system-upgrade"}])
        );
    }
    let accounts = all.iter().filter(|m| m["kind"] == "ServiceAccount").count();
    assert_eq!(accounts, 1);

    // Without --verify, none of it.
    let (code, plain, err) = fleet_plan(&["--config", CONFIG, "--image", "r/x:1"]);
    assert_eq!(code, 0, "{err}");
    assert!(!plain.to_string().contains("calicoctl-win-verify"));
    assert!(
        plain.to_string().contains("\"concurrency\":2")
            && !plain.to_string().contains("jobActiveDeadlineSecs"),
        "{plain}"
    );
    // A migration moves nodes; it is not verified by the Plan.
    let (code, _, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "r/x:1",
        "--verify",
        "--migrate",
        "to-operator",
    ]);
    assert_eq!(code, 2, "{err}");
}

/// `--verify` with more than one node at a time is a Plan of that concurrency: the jobs'
/// verify runs go at once in the one namespace, each with its own objects and Lease (it was
/// refused while they took turns there).
#[test]
fn verify_with_several_nodes_at_once_is_planned() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "r/x:1",
        "--verify",
        "--concurrency",
        "2",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(manifest(&doc, "Plan")["spec"]["concurrency"], 2, "{doc}");
}

/// Three Windows nodes and a Linux one, the Plan with `--verify` one node at a time. The
/// middle node's pods get no address (its CNI fails the sandbox): its reconfigure passes and
/// its verify fails, so its job fails, the node stays cordoned with verify's document in the
/// job's log, and the third node is never started. Once its CNI works and it is uncordoned, the
/// controller goes on and every node is done.
#[test]
fn a_node_that_fails_verify_stops_the_rollout_there_cordoned() {
    let api = FakeApi::start();
    api.healthy_calico();
    let admin_dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(admin_dir.path(), None);
    let machines: Vec<Machine> = ["win-1", "win-bad", "win-3"]
        .iter()
        .map(|n| Machine::new(&api, n))
        .collect();
    for m in &machines {
        m.install(&admin, &[]);
        let path = format!("/api/v1/nodes/{}", m.name);
        let mut node = api.get(&path).expect("node");
        node["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.20348");
        // What the CalicoNode install started writes at its start (`supervise::condition`;
        // the simulated host runs no CalicoNode): the Plan's verify waits for it.
        node["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(json!({"type": "CalicoWindowsReady", "status": "True",
                "reason": "CalicoHealthy", "lastHeartbeatTime": jiff::Timestamp::now().to_string()}));
        api.put(&path, node);
    }
    let mut linux = meta("v1", "Node", "linux-1", None);
    linux["metadata"]["labels"] = json!({"kubernetes.io/os": "linux"});
    linux["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    api.put("/api/v1/nodes/linux-1", linux);
    if api
        .get("/api/v1/namespaces/default/services/kubernetes")
        .is_none()
    {
        let mut k = meta("v1", "Service", "kubernetes", Some("default"));
        k["spec"] = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]});
        api.put("/api/v1/namespaces/default/services/kubernetes", k);
    }
    api.lock().dataplane.stuck_on.insert("win-bad".into());

    let doc = plan_with_verify(&["--concurrency", "1"]);
    let plan = manifest(&doc, "Plan").clone();
    // The manifests applied: the jobs run as the fleet's account with only these roles.
    for m in doc["manifests"].as_array().expect("manifests") {
        if m["kind"] == "Namespace" {
            api.put("/api/v1/namespaces/calicoctl-win-verify", m.clone());
        } else {
            api.apply(m);
        }
    }
    let (_sa_dir, fleet_kubeconfig) =
        crate::support::account(&api, "system-upgrade", "calicoctl-win-fleet");
    let pod = Pod::new(&api, &crate::support::token_in(&fleet_kubeconfig));
    let secret = manifest(&doc, "Secret");
    assert!(super::fleet::mount_plan_secrets(&plan, &[secret], &pod));

    let first = drive(&api, &plan, &machines, &pod);
    assert_eq!(first.done, ["win-1"], "{:?}", first.failed);
    let failed: Vec<&str> = first.failed.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(failed, ["win-bad"]);
    let log = &first.failed[0].1["nodes"][0];
    assert_eq!(log["node"], "win-bad", "{log}");
    assert_eq!(log["passed"], false, "{log}");
    // The pull passed; the pod never got its address.
    assert_eq!(log["checks"][0]["check"], "image-pull", "{log}");
    assert_eq!(log["checks"][1]["check"], "pod-address", "{log}");
    assert_eq!(log["checks"][1]["result"], "fail", "{log}");
    assert_eq!(log["cleaned_up"], true, "{log}");
    assert!(cordoned(&api, "win-bad"), "the failed node stays cordoned");
    assert!(!cordoned(&api, "win-1"));
    assert!(!cordoned(&api, "win-3"), "win-3 was never started");

    // Its CNI mended and the node uncordoned, the controller goes on.
    api.lock().dataplane.stuck_on.clear();
    let path = "/api/v1/nodes/win-bad";
    let mut node = api.get(path).expect("node");
    node["spec"]["unschedulable"] = json!(false);
    api.put(path, node);
    let second = drive(&api, &plan, &machines, &pod);
    assert!(second.failed.is_empty(), "{:?}", second.failed);
    assert_eq!(second.done, ["win-bad", "win-3"]);
    for m in &machines {
        assert!(!cordoned(&api, &m.name), "{}", m.name);
    }
}

/// `fleet plan --verify-every 6h`: the DaemonSet's pod runs `service keep-token
/// --verify-every=6h`; off by default. Run as that pod (its own account with verify's roles,
/// calico-node's credential for the Node's status), verify's verdict is the Node's condition
/// `CalicoWindowsTraffic`: True on a healthy node, False naming the failing layer's code when
/// the node's CNI fails its pods, with a new transition time only when the status changes.
#[test]
fn the_daemonset_runs_verify_on_a_schedule_and_publishes_the_nodes_condition() {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "i:1",
        "--engine",
        "daemonset",
        "--verify-every",
        "6h",
    ]);
    assert_eq!(code, 0, "{err}");
    let ds = manifest(&doc, "DaemonSet");
    assert_eq!(super::fleet::daemonset_problems(ds), Vec::<String>::new());
    let command = strings(&ds["spec"]["template"]["spec"]["containers"][0]["command"]);
    let keep = command
        .iter()
        .position(|a| *a == "keep-token")
        .expect("keep-token");
    assert_eq!(command[keep + 1..], ["--verify-every=6h"]);
    let (code, plain, _) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "i:1",
        "--engine",
        "daemonset",
    ]);
    assert_eq!(code, 0);
    assert!(!plain.to_string().contains("verify"), "off by default");
    let (code, _, _) = fleet_plan(&["--config", CONFIG, "--image", "i:1", "--verify-every", "1m"]);
    assert_eq!(code, 2, "a period under 10m is refused");

    let api = FakeApi::start();
    api.healthy_calico();
    for m in doc["manifests"].as_array().expect("manifests") {
        if m["kind"] == "Namespace" {
            api.put("/api/v1/namespaces/calicoctl-win-verify", m.clone());
        } else {
            api.apply(m);
        }
    }
    let node = crate::support::Node::new(&api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let (code, _, err) = node.run(&[
        "install",
        "--no-start",
        "--release-zip",
        zip.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 0, "{err}");
    let path = "/api/v1/nodes/win-1";
    let mut n = api.get(path).expect("node");
    n["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.20348");
    api.put(path, n);
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    let mut linux = meta("v1", "Node", "linux-1", None);
    linux["metadata"]["labels"] = json!({"kubernetes.io/os": "linux"});
    linux["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    api.put("/api/v1/nodes/linux-1", linux);
    if api
        .get("/api/v1/namespaces/default/services/kubernetes")
        .is_none()
    {
        let mut k = meta("v1", "Service", "kubernetes", Some("default"));
        k["spec"] = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]});
        api.put("/api/v1/namespaces/default/services/kubernetes", k);
    }
    let pod = Pod::new(
        &api,
        &api.pod_token("system-upgrade", "calicoctl-win-fleet", "win-1"),
    );
    let run = || {
        let out = crate::support::on_node()
            .envs(pod.env())
            .args(["-o", "json", "--sim-host"])
            .arg(node.sim())
            .args([
                "service",
                "keep-token",
                "--once",
                "--verify-every",
                "6h",
                "--sim-pace",
                "10",
            ])
            // The fleet's --verify-image, here the default's own name.
            .args([
                "--verify-image",
                "registry.k8s.io/e2e-test-images/agnhost:2.62",
            ])
            .output()
            .expect("runs");
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let n = api.get(path).expect("node");
        n["status"]["conditions"]
            .as_array()
            .expect("conditions")
            .iter()
            .find(|c| c["type"] == "CalicoWindowsTraffic")
            .cloned()
            .expect("the condition")
    };
    // The verdict is also the node's metrics gauge (CalicoNode serves the file).
    let passed = || {
        let file = node.c_drive("calicowindows/calicoctl-win-metrics-verify.json");
        let text = fs_err::read_to_string(file).expect("verify's metrics file");
        serde_json::from_str::<Value>(&text).expect("json")["calicoctl_win_verify_passed"].clone()
    };
    let first = run();
    assert_eq!(first["status"], "True", "{first}");
    assert_eq!(first["reason"], "TrafficPasses");
    assert!(first["lastTransitionTime"].is_string());
    assert_eq!(passed(), 1);
    api.lock().dataplane.stuck_on.insert("win-1".into());
    let failed = run();
    assert_eq!(failed["status"], "False", "{failed}");
    assert_eq!(passed(), 0);
    assert_eq!(failed["reason"], "TrafficFails");
    let message = failed["message"].as_str().expect("message");
    assert!(
        message.contains("FailedCreatePodSandBox") && message.contains("[traffic-cni]"),
        "{message}"
    );
    // The node's own finding joined to the check it explains: installed with --no-start,
    // the node has no Calico network (CalicoNode makes it) for the CNI plugin's pods.
    // (the node's look judges every network the install recorded: External, then Calico)
    assert!(
        message.contains("[traffic-cni] (this node: ")
            && message.contains("the HNS network Calico does not exist [network-missing])"),
        "{message}"
    );
    assert!(failed["lastTransitionTime"].is_string());
    // Its codes as data beside it, written in the same patch with its heartbeat, each once
    // (`fleet status` reads them, never the message).
    let written = |beat: &Value| {
        let n = api.get(path).expect("node");
        let text = n["metadata"]["annotations"]["calicoctl-win/traffic-codes"]
            .as_str()
            .expect("the codes annotation")
            .to_owned();
        let codes: Value = serde_json::from_str(&text).expect("json");
        assert_eq!(&codes["heartbeat"], beat, "{codes}");
        codes["codes"].clone()
    };
    assert_eq!(
        written(&failed["lastHeartbeatTime"]),
        json!(["traffic-cni"])
    );
    let again = run();
    assert_eq!(again["status"], "False");
    assert_eq!(
        again["lastTransitionTime"], failed["lastTransitionTime"],
        "no new transition"
    );
    // A run that cannot judge the node (here: the node is not Ready) leaves no older verdict
    // standing: the condition is Unknown, VerifyNotRun, with why, and the command fails.
    api.lock().dataplane.stuck_on.clear();
    assert_eq!(run()["status"], "True");
    // Its Ready condition False, the True verdict beside it kept.
    let mut n = api.get(path).expect("node");
    for c in n["status"]["conditions"]
        .as_array_mut()
        .expect("conditions")
    {
        if c["type"] == "Ready" {
            c["status"] = json!("False");
        }
    }
    api.put(path, n);
    let out = crate::support::on_node()
        .envs(pod.env())
        .args(["-o", "json", "--sim-host"])
        .arg(node.sim())
        .args([
            "service",
            "keep-token",
            "--once",
            "--verify-every",
            "6h",
            "--sim-pace",
            "10",
        ])
        // The fleet's --verify-image, here the default's own name.
        .args([
            "--verify-image",
            "registry.k8s.io/e2e-test-images/agnhost:2.62",
        ])
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let n = api.get(path).expect("node");
    let not_run = n["status"]["conditions"]
        .as_array()
        .expect("conditions")
        .iter()
        .find(|c| c["type"] == "CalicoWindowsTraffic")
        .cloned()
        .expect("the condition");
    assert_eq!(not_run["status"], "Unknown", "{not_run}");
    assert_eq!(not_run["reason"], "VerifyNotRun");
    let why = not_run["message"].as_str().expect("message");
    assert!(
        why.contains("did not run") && why.contains("not Ready"),
        "{why}"
    );
    assert!(not_run["lastTransitionTime"].is_string());
    assert_eq!(
        written(&not_run["lastHeartbeatTime"]),
        json!([]),
        "no codes beside an Unknown"
    );
    // What the runs made is gone.
    let inside = "/api/v1/namespaces/calicoctl-win-verify/";
    let st = api.lock();
    let left: Vec<&String> = st
        .objects
        .keys()
        .filter(|k| k.starts_with(inside))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// `--verify-image`: the mirror reaches the Plan job's `verify --image` and the DaemonSet's
/// scheduled runs (`keep-token --verify-image`); a reference a shell could read is refused,
/// and so is the flag with no verify to use it.
#[test]
fn the_verify_image_reaches_the_plans_verify_and_the_daemonsets_runs() {
    let mirror = "mirror.local:5000/e2e/agnhost:2.52-ltsc2025";
    let doc = plan_with_verify(&["--verify-image", mirror]);
    let args = strings(&manifest(&doc, "Plan")["spec"]["upgrade"]["args"]);
    assert_eq!(args.last(), Some(&format!("--image={mirror}").as_str()));
    // The admission policy holds the jobs' pods to the image they run, not to the default.
    let policy = doc["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .find(|m| {
            m["kind"] == "ValidatingAdmissionPolicy"
                && m["metadata"]["name"] == "calicoctl-win-fleet-verify"
        })
        .expect("the jobs' verify policy")
        .to_string();
    assert!(policy.contains(mirror), "{policy}");
    assert!(
        !policy.contains(calicoctl_win::verify::image::AGNHOST),
        "{policy}"
    );
    let (code, doc, err) = fleet_plan(&[
        "--config",
        CONFIG,
        "--image",
        "i:1",
        "--engine",
        "daemonset",
        "--verify-every",
        "6h",
        "--verify-image",
        mirror,
    ]);
    assert_eq!(code, 0, "{err}");
    let command = strings(
        &manifest(&doc, "DaemonSet")["spec"]["template"]["spec"]["containers"][0]["command"],
    );
    let keep = command
        .iter()
        .position(|a| *a == "keep-token")
        .expect("keep-token");
    let want = format!("--verify-image={mirror}");
    assert_eq!(command[keep + 1..], ["--verify-every=6h", want.as_str()]);
    for bad in [
        &["--verify", "--verify-image", "m/x:1&del"][..],
        &["--verify-image", "m/x:1"],
    ] {
        let mut a = vec!["--config", CONFIG, "--image", "i:1"];
        a.extend_from_slice(bad);
        let (code, _, err) = fleet_plan(&a);
        assert_eq!(code, 2, "{bad:?}: {err}");
    }
}
