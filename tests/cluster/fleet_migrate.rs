//! `fleet plan --migrate`: a system-upgrade-controller Plan that moves the Windows nodes to the
//! operator's HostProcess install and back, one node at a time, each pod's HNS endpoint kept.
//! Driven as the controller drives a Plan (`super::fleet::drive`), with the operator's
//! DaemonSet stood in for by `support::operator::FakeOperator` on every node.

use super::fleet::{
    Machine, Pod, cordoned, drive, fleet_plan, manifest, mount_plan_secrets, plan_schema, problems,
};
use crate::support::fake_api::FakeApi;
use crate::support::operator::{FakeOperator, POD_PREFIX};
use serde_json::{Value, json};

const CONFIG: &str = "templates/calico-windows.yaml";
const LABEL: &str = "calicoctl-win/runs-calico";

fn config() -> String {
    crate::support::root().join(CONFIG).display().to_string()
}

/// The pods' endpoints on a machine: (id, name, address), sorted.
fn endpoints(m: &Machine) -> Vec<(String, String, String)> {
    m.node.endpoints()
}

fn calico_services(m: &Machine) -> Vec<String> {
    m.node.state()["services"]
        .as_object()
        .map(|s| {
            s.keys()
                .filter(|k| k.starts_with("calico"))
                .cloned()
                .collect()
        })
        .unwrap_or_default()
}

/// The Plan for a migration: system-upgrade-controller's schema accepts it; one node at a
/// time, no drain, a deadline past the pod's wait; the migrate account's roles; no DaemonSet
/// and no per-node token policy (the account is the installer's, for the migration only).
#[test]
fn a_migration_plan_moves_one_node_at_a_time_without_a_drain() {
    let cfg = config();
    let (code, doc, err) = fleet_plan(&[
        "--config",
        &cfg,
        "--image",
        "registry.example.com/calicoctl-win:1.2.0",
        "--migrate",
        "to-operator",
        "--pod-timeout",
        "15m",
    ]);
    assert_eq!(code, 0, "{err}");
    let plan = manifest(&doc, "Plan");
    assert_eq!(problems(&plan_schema(), plan), Vec::<String>::new());
    let spec = &plan["spec"];
    assert_eq!(plan["metadata"]["name"], "calicoctl-win-to-operator");
    assert_eq!(spec["concurrency"], 1);
    assert_eq!(spec["drain"], Value::Null, "{spec}");
    assert_eq!(spec["cordon"], Value::Null, "{spec}");
    assert_eq!(spec["jobActiveDeadlineSecs"], 15 * 60 + 3600);
    assert_eq!(spec["serviceAccountName"], "calicoctl-win-migrate");
    let args: Vec<&str> = spec["upgrade"]["args"]
        .as_array()
        .expect("args")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(
        args[args.len() - 3..],
        ["migrate", "to-operator", "--pod-timeout=15m"]
    );
    let keys: Vec<&str> = spec["nodeSelector"]["matchExpressions"]
        .as_array()
        .expect("expressions")
        .iter()
        .filter_map(|e| e["key"].as_str())
        .collect();
    assert_eq!(keys, ["kubernetes.io/os"]);
    let kinds: Vec<&str> = doc["manifests"]
        .as_array()
        .expect("manifests")
        .iter()
        .filter_map(|m| m["kind"].as_str())
        .collect();
    assert!(!kinds.contains(&"DaemonSet"), "{kinds:?}");
    assert!(!kinds.contains(&"ValidatingAdmissionPolicy"), "{kinds:?}");
    let role = manifest(&doc, "ClusterRole");
    let rules = role["rules"].as_array().expect("rules");
    assert!(
        rules
            .iter()
            .any(|r| r["resources"] == json!(["installations"])
                && r["verbs"] == json!(["patch"])
                && r["resourceNames"] == json!(["default", "overlay"])),
        "{role}"
    );

    let (code, doc, err) =
        fleet_plan(&[&["--config", &cfg][..], &FROM_OPERATOR, &["--sha256", SHA]].concat());
    assert_eq!(code, 0, "{err}");
    let plan = manifest(&doc, "Plan");
    assert_eq!(plan["metadata"]["name"], "calicoctl-win-from-operator");
    let args = plan["spec"]["upgrade"]["args"].to_string();
    assert!(
        args.contains("\"from-operator\"")
            && args.contains("--release-zip=https://mirror.example.com/calico-windows-v3.30.2.zip")
            && args.contains(&format!("--sha256={SHA}")),
        "{args}"
    );
    // Its own Secret: a config applied for a migration never runs the reconfigure Plan, which
    // watches calicoctl-win-config.
    assert_eq!(
        plan["spec"]["secrets"][0]["name"],
        "calicoctl-win-migrate-config"
    );
    assert_eq!(
        manifest(&doc, "Secret")["metadata"]["name"],
        "calicoctl-win-migrate-config"
    );
}

/// `fleet plan`'s arguments of a migration from the operator (with a release to install).
const FROM_OPERATOR: [&str; 6] = [
    "--image",
    "r/x:1",
    "--migrate",
    "from-operator",
    "--release-zip",
    "https://mirror.example.com/calico-windows-v3.30.2.zip",
];

const SHA: &str = "4b9f3c2a1e0d8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a";

/// A release each node's install would refuse is refused when the Plan is written, before a
/// rollout takes its first node out of the operator's hands.
#[test]
fn a_migration_plan_refuses_the_release_flags_install_would_refuse() {
    let cfg = config();
    for (flag, value) in [("--sha256", "ab12"), ("--calico-version", "3.30")] {
        let (code, _, err) =
            fleet_plan(&[&["--config", &cfg][..], &FROM_OPERATOR, &[flag, value]].concat());
        assert_eq!(code, 2, "{flag} {value}: {err}");
        assert!(err.contains(flag), "{err}");
    }
}

/// What a migration's Plan cannot be, each refused (exit 2) with what to do instead.
#[test]
fn a_migration_plan_refuses_what_would_not_be_one_node_at_a_time() {
    let cfg = config();
    let base = ["--config", cfg.as_str(), "--image", "r/x:1"];
    for (bad, says) in [
        (
            &["--migrate", "to-operator", "--concurrency", "2"][..],
            "one node at a time",
        ),
        (
            &["--migrate", "to-operator", "--engine", "daemonset"],
            "not a DaemonSet",
        ),
        (
            &[
                "--migrate",
                "to-operator",
                "--release-zip",
                "https://x/y.zip",
            ],
            "installs nothing",
        ),
        (&["--release-zip", "https://x/y.zip"], "migration's install"),
        (
            &[
                "--migrate",
                "from-operator",
                "--release-zip",
                "https://x/y.zip?a=1&b=2",
            ],
            "cmd.exe",
        ),
        (
            &["--migrate", "from-operator", "--release-zip", "zips\\y.zip"],
            "absolute path",
        ),
        (
            &["--migrate", "to-operator", "--force"],
            "cannot be used with '--force'",
        ),
        (
            &["--migrate", "from-operator", "--drain-timeout", "5m"],
            "cannot be used with '--drain-timeout",
        ),
        (&["--pod-timeout", "5m"], "--migrate <WAY>"),
    ] {
        let args = [&base[..], bad].concat();
        let (code, doc, err) = fleet_plan(&args);
        assert_eq!(code, 2, "{bad:?}: {err}");
        assert!(
            doc["error"]["message"]
                .as_str()
                .is_some_and(|m| m.contains(says)),
            "{bad:?}: {doc}"
        );
    }
}

/// A refused `--release-zip` is named with its secrets hidden: a SAS URL's `sig=` (its `&`
/// is what cmd.exe would read) and a URL's password (not https).
#[test]
fn a_refused_release_zip_is_named_without_its_secrets() {
    let cfg = config();
    for (zip, secret, says) in [
        (
            "https://acct.blob.core.windows.net/c/x.zip?sv=2022-11-02&sig=SAS0sig0secret",
            "SAS0sig0secret",
            "cmd.exe",
        ),
        (
            "http://admin:pw0secret@mirror/x.zip",
            "pw0secret",
            "neither an https",
        ),
    ] {
        let base = ["--config", cfg.as_str(), "--image", "r/x:1"];
        let args = [
            &base[..],
            &["--migrate", "from-operator", "--release-zip", zip],
        ]
        .concat();
        let (code, doc, err) = fleet_plan(&args);
        assert_eq!(code, 2, "{zip}: {err}");
        let message = doc["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{zip}: {doc}");
        assert!(
            !doc.to_string().contains(secret) && !err.contains(secret),
            "{doc}\n{err}"
        );
    }
}

/// Three Windows nodes run calicoctl-win, each with its pods' endpoints (SYSTEM in en-US on
/// two, de-DE on one). The Plan `fleet plan --migrate to-operator` writes, driven as
/// system-upgrade-controller drives it under the migrate account's roles (enforced), hands
/// each to the operator's DaemonSet one at a time: at most one node cordoned at once, no node
/// leaving the Plan's selector while its job runs, every endpoint's id and address kept, the
/// operator's pod on each, no network deleted by its scripts. Driven again (a new Plan
/// version), every node is done at once. Then `--migrate from-operator` takes them all back
/// the same way, from a zip every node has, and the operator's CNI files go.
#[test]
fn a_fleet_moves_to_the_operator_and_back_one_node_at_a_time_keeping_every_endpoint() {
    let fleet = Fleet::installed(&["win-1", "win-2", "win-3"]);
    let machines = &fleet.machines;
    for (i, m) in machines.iter().enumerate() {
        m.node.add_endpoints(&[
            (
                &format!("poda{i}_Calico"),
                &format!("10.244.{i}.10"),
                3,
                false,
            ),
            (
                &format!("podb{i}_Calico"),
                &format!("10.244.{i}.11"),
                3,
                false,
            ),
        ]);
    }
    machines[1].node.edit_state(|s| {
        s["registry"][r"hku\.default\control panel\international"] = json!({
            "localename": {"type": "REG_SZ", "data": "de-DE"},
            "sshortdate": {"type": "REG_SZ", "data": "dd.MM.yyyy"},
            "stimeformat": {"type": "REG_SZ", "data": "HH:mm:ss"},
        });
    });
    let before: Vec<_> = machines.iter().map(endpoints).collect();
    let fleet = fleet.with_operator();
    let (api, admin, machines) = (&fleet.api, &fleet.admin, &fleet.machines);
    let operators = &fleet.operators;

    let plan = apply_plan(api, &["--migrate", "to-operator", "--pod-timeout", "30s"]);
    let pod = migrate_pod(api, &plan);
    let first = drive(api, &plan.0, machines, &pod);
    assert!(first.failed.is_empty(), "{:?}", first.failed);
    assert_eq!(first.done.len(), 3, "{:?}", first.done);
    assert!(first.most_out <= 1, "{} nodes out at once", first.most_out);
    assert!(first.left_selector.is_empty(), "{:?}", first.left_selector);
    for (i, m) in machines.iter().enumerate() {
        assert_eq!(endpoints(m), before[i], "{}", m.name);
        assert!(calico_services(m).is_empty(), "{}", m.name);
        assert!(
            api.get(&format!("{POD_PREFIX}{}", m.name)).is_some(),
            "{}",
            m.name
        );
        assert!(!cordoned(api, &m.name), "{}", m.name);
        let events = operators[i].events();
        assert!(
            events.iter().all(|e| !e.contains("deleted every")),
            "{}: {events:?}",
            m.name
        );
    }

    // fleet status shows the nodes as the operator's, healthy, until the operator's Calico
    // says it is down on one (its pod's preStop: NetworkUnavailable True, CalicoIsDown).
    let (code, doc) = fleet_status(admin);
    assert_eq!(code, 0, "{doc}");
    assert!(
        doc["nodes"]
            .as_array()
            .expect("nodes")
            .iter()
            .all(|n| n["handed_to_operator"] == true),
        "{doc}"
    );
    let path = "/api/v1/nodes/win-2";
    let mut node = api.get(path).expect("node");
    let mut conditions = node["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conditions.push(json!({"type": "NetworkUnavailable", "status": "True",
        "reason": "CalicoIsDown", "message": "Calico is shutting down on this node"}));
    node["status"]["conditions"] = json!(conditions);
    api.put(path, node.clone());
    let (code, doc) = fleet_status(admin);
    assert_eq!(code, 1, "{doc}");
    assert!(
        doc["problems"]
            .to_string()
            .contains("node win-2: the operator's Calico is down: NetworkUnavailable CalicoIsDown"),
        "{doc}"
    );
    node["status"]["conditions"] = json!(conditions[..conditions.len() - 1]);
    api.put(path, node);

    // A new version of the Plan reaches every node again: each is the operator's already.
    clear_done_labels(api, machines, &plan.1);
    let again = drive(api, &plan.0, machines, &pod);
    assert!(again.failed.is_empty(), "{:?}", again.failed);
    assert_eq!(again.done.len(), 3);
    assert_eq!(again.most_out, 0, "a node already moved is not cordoned");

    // The operator's CNI installer left its conflist and kubeconfig on each node.
    for m in machines {
        let net_d = m.node.c_drive("program files/containerd/cni/conf");
        assert!(net_d.join("10-calico.conflist").exists(), "{}", m.name);
    }
    let shared = tempfile::tempdir().expect("tempdir");
    let zip = crate::support::release::release_zip(shared.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let back = apply_plan(
        api,
        &[
            "--migrate",
            "from-operator",
            "--pod-timeout",
            "30s",
            "--release-zip",
            &zip,
        ],
    );
    let pod = migrate_pod(api, &back);
    let back_run = drive(api, &back.0, machines, &pod);
    assert!(back_run.failed.is_empty(), "{:?}", back_run.failed);
    assert_eq!(back_run.done.len(), 3);
    assert!(back_run.most_out <= 1, "{} out at once", back_run.most_out);
    assert!(back_run.left_selector.is_empty());
    for (i, m) in machines.iter().enumerate() {
        assert_eq!(endpoints(m), before[i], "{}", m.name);
        assert!(
            calico_services(m).contains(&"caliconode".to_owned()),
            "{}",
            m.name
        );
        assert!(api.get(&format!("{POD_PREFIX}{}", m.name)).is_none());
        let node = api.get(&format!("/api/v1/nodes/{}", m.name)).expect("node");
        assert_eq!(node["metadata"]["labels"][LABEL], "true", "{}", m.name);
        assert!(!cordoned(api, &m.name), "{}", m.name);
        let net_d = m.node.c_drive("program files/containerd/cni/conf");
        assert!(!net_d.join("10-calico.conflist").exists(), "{}", m.name);
        let (code, doc, err) = m.run(admin, &["status"]);
        assert_eq!(code, 0, "{}: {err} {doc}", m.name);
    }
    clear_done_labels(api, machines, &back.1);
    let again = drive(api, &back.0, machines, &pod);
    assert!(again.failed.is_empty(), "{:?}", again.failed);
    assert_eq!(
        again.most_out, 0,
        "a node already taken back is not cordoned"
    );
}

/// A node migrate refuses (its kube-proxy is the Windows service the operator's init
/// container would delete) fails its job, unchanged and uncordoned, and holds the Plan's one
/// slot: the nodes after it are not started. Once kube-proxy runs otherwise there, the Plan
/// goes on and every node moves.
#[test]
fn a_refused_node_stops_the_migration_there() {
    let fleet = Fleet::installed(&["win-1", "win-2", "win-3"]);
    fleet.machines[0].node.edit_state(|s| {
        let mut svc = s["services"]["caliconode"].clone();
        svc["name"] = "kube-proxy".into();
        s["services"]["kube-proxy"] = svc;
    });
    let fleet = fleet.with_operator();
    let (api, machines) = (&fleet.api, &fleet.machines);
    let plan = apply_plan(api, &["--migrate", "to-operator", "--pod-timeout", "30s"]);
    let pod = migrate_pod(api, &plan);
    let run = drive(api, &plan.0, machines, &pod);
    assert!(run.done.is_empty(), "{:?}", run.done);
    assert_eq!(run.failed.len(), 1, "{:?}", run.failed);
    let (node, doc) = &run.failed[0];
    assert_eq!(node, "win-1");
    assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
    for m in machines {
        assert!(!cordoned(api, &m.name), "{}", m.name);
        assert!(
            calico_services(m).contains(&"caliconode".to_owned()),
            "{} untouched",
            m.name
        );
    }

    // kube-proxy runs as a HostProcess pod now; the controller tries the node again.
    machines[0].node.edit_state(|s| {
        s["services"]
            .as_object_mut()
            .expect("services")
            .remove("kube-proxy");
    });
    let run = drive(api, &plan.0, machines, &pod);
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    assert_eq!(run.done, ["win-1", "win-2", "win-3"]);
    assert!(run.most_out <= 1);
}

/// The selector is what keeps the Plan one node at a time: a Plan that selected the nodes by
/// the label migrate moves would lose each node from it halfway through its job, which the
/// controller answers by deleting that job and starting the next node. The driver sees it.
#[test]
fn a_plan_selecting_by_the_moving_label_would_lose_its_nodes_halfway() {
    let fleet = Fleet::installed(&["win-1", "win-2"]);
    for m in &fleet.machines {
        let path = format!("/api/v1/nodes/{}", m.name);
        let mut node = fleet.api.get(&path).expect("node");
        node["metadata"]["labels"][LABEL] = json!("true");
        fleet.api.put(&path, node);
    }
    let fleet = fleet.with_operator();
    let (api, machines) = (&fleet.api, &fleet.machines);
    let applied = apply_plan(api, &["--migrate", "to-operator", "--pod-timeout", "30s"]);
    let pod = migrate_pod(api, &applied);
    let mut plan = applied.0;
    plan["spec"]["nodeSelector"]["matchExpressions"]
        .as_array_mut()
        .expect("expressions")
        .push(json!({"key": LABEL, "operator": "In", "values": ["true"]}));
    let run = drive(api, &plan, machines, &pod);
    assert_eq!(run.left_selector, ["win-1", "win-2"], "{:?}", run.done);
}

/// A cluster with Calico and Windows machines of these names, each installed by an admin and
/// stood over by the operator's DaemonSet (which keeps off them until migrate lets it on).
struct Fleet {
    api: FakeApi,
    _admin_dir: tempfile::TempDir,
    admin: std::path::PathBuf,
    machines: Vec<Machine>,
    operators: Vec<FakeOperator>,
}

impl Fleet {
    fn installed(names: &[&str]) -> Self {
        let (api, admin_dir, admin, machines) = super::fleet::installed_fleet(names);
        Self {
            api,
            _admin_dir: admin_dir,
            admin,
            machines,
            operators: Vec::new(),
        }
    }

    /// The operator's DaemonSet, placing its pods from now on.
    fn with_operator(mut self) -> Self {
        self.operators = self
            .machines
            .iter()
            .map(|m| FakeOperator::start(self.api.state.clone(), &m.name, m.sim()))
            .collect();
        self
    }
}

/// `fleet status -o json` with the admin kubeconfig: its exit code and document.
fn fleet_status(admin: &std::path::Path) -> (i32, Value) {
    let out = crate::support::cmd()
        .args(["fleet", "status", "-o", "json", "--kubeconfig"])
        .arg(admin)
        .output()
        .expect("runs");
    (
        out.status.code().expect("code"),
        crate::support::json(&out.stdout),
    )
}

/// `fleet plan ARGS` applied to the cluster (the Plan, its Secret, the account and roles):
/// the Plan, its name and the Secret.
fn apply_plan(api: &FakeApi, extra: &[&str]) -> (Value, String, Value) {
    let cfg = config();
    let args = [
        &[
            "--config",
            cfg.as_str(),
            "--image",
            "registry.example.com/calicoctl-win:1.2.0",
        ][..],
        extra,
    ]
    .concat();
    let (code, doc, err) = fleet_plan(&args);
    assert_eq!(code, 0, "{err}");
    // The account and its roles (the Plan and the Secret are the driver's and the pod's).
    for m in doc["manifests"].as_array().expect("manifests") {
        api.apply(m);
    }
    let plan = manifest(&doc, "Plan").clone();
    let name = plan["metadata"]["name"].as_str().expect("name").to_owned();
    (plan, name, manifest(&doc, "Secret").clone())
}

/// The job's pod: the migrate account's token where a HostProcess container has it, and the
/// Plan's Secret mounted as the controller, kubelet and containerd mount it.
fn migrate_pod(api: &FakeApi, plan: &(Value, String, Value)) -> Pod {
    let (_dir, kubeconfig) =
        crate::support::account(api, "system-upgrade", "calicoctl-win-migrate");
    let pod = Pod::new(api, &crate::support::token_in(&kubeconfig));
    assert!(mount_plan_secrets(&plan.0, &[&plan.2], &pod));
    pod
}

/// What a new version of a Plan does to the nodes: its done label no longer matches.
fn clear_done_labels(api: &FakeApi, machines: &[Machine], plan: &str) {
    for m in machines {
        let path = format!("/api/v1/nodes/{}", m.name);
        let mut node = api.get(&path).expect("node");
        if let Some(labels) = node["metadata"]["labels"].as_object_mut() {
            labels.remove(&format!("plan.upgrade.cattle.io/{plan}"));
        }
        api.put(&path, node);
    }
}

/// The migrate account's roles (`fleet plan --migrate`'s) are what `migrate to-operator` and
/// `migrate from-operator` need, each rule of them: on a node an admin installed, both run as
/// that account with the operator's DaemonSet stood in for, and fail without any one rule,
/// naming its resource. (The installer's rules that no migrate step calls itself, such as
/// pods/eviction, are needed by from-operator's install, whose preflight `rbac` check asks
/// the API server for each of them.)
#[test]
fn every_migrate_rule_is_needed_and_enough() {
    let doc = to_operator_plan();
    super::rights::every_rule_is_needed(&doc, "a migration", migrate_both_ways);
}

/// `fleet plan --migrate to-operator` of the template, which passed.
fn to_operator_plan() -> Value {
    let (code, doc, err) = fleet_plan(&[
        "--config",
        &config(),
        "--image",
        "r/x:1",
        "--migrate",
        "to-operator",
    ]);
    assert_eq!(code, 0, "{err}");
    doc
}

/// A node an admin installed, with a pod's endpoint, moved to the operator and back by the
/// migrate account with `rbac`'s rules: the JSON of the first run that failed.
fn migrate_both_ways(rbac: &[Value]) -> Option<String> {
    let m = AccountNode::with(rbac);
    m.node
        .add_endpoints(&[("poda_Calico", "10.244.1.10", 3, false)]);
    let _operator = FakeOperator::start(m.api.state.clone(), "win-1", m.node.sim());
    let (node, account, zip) = (&m.node, &m.account, &m.zip);
    for args in [
        &["migrate", "to-operator", "--pod-timeout", "10s"][..],
        &[
            "migrate",
            "from-operator",
            "--pod-timeout",
            "10s",
            "--release-zip",
            zip,
        ],
    ] {
        let (code, doc, err) = node.run_as(account, args);
        if code != 0 {
            return Some(format!("{} {doc} {err}", args[1]));
        }
    }
    None
}

/// Roles written before calicoctl-win read the `overlay` Installation name only `default`: the
/// overlay's refusal is no failure of the facts (install and status go on with `default`'s),
/// but migrate, which must see where the operator runs, refuses with the roles to apply.
#[test]
fn roles_without_the_overlay_refuse_a_migration_not_the_rest() {
    let doc = to_operator_plan();
    let mut narrowed = 0;
    let mut rbac: Vec<Value> = doc["manifests"].as_array().expect("manifests").clone();
    rbac.retain(|m| {
        m["kind"]
            .as_str()
            .is_some_and(|k| k.contains("Role") || k == "ServiceAccount")
    });
    for m in &mut rbac {
        for rule in m["rules"].as_array_mut().into_iter().flatten() {
            if rule["resourceNames"] == json!(["default", "overlay"]) {
                rule["resourceNames"] = json!(["default"]);
                narrowed += 1;
            }
        }
    }
    assert_eq!(narrowed, 2);
    let m = AccountNode::with(&rbac);
    let (node, account) = (&m.node, &m.account);
    let (code, doc, err) = node.run_as(account, &["status"]);
    assert_eq!(code, 0, "{err} {doc}");
    let (code, doc, err) = node.run_as(account, &["migrate", "to-operator", "--dry-run"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
    assert!(err.contains("named overlay"), "{err}");
}

/// A node an admin installed from a local zip, on a cluster whose migrate account has the
/// roles `rbac` (their ServiceAccount, Roles and bindings), and that account's kubeconfig.
struct AccountNode {
    api: FakeApi,
    node: crate::support::Node,
    _dir: tempfile::TempDir,
    account: std::path::PathBuf,
    zip: String,
}

impl AccountNode {
    fn with(rbac: &[Value]) -> Self {
        let api = FakeApi::start();
        api.healthy_calico();
        api.set_node_ready("win-1", "True", "kubelet is posting ready status");
        for m in rbac {
            assert!(api.apply(m), "{m}");
        }
        let node = crate::support::Node::new(&api);
        let zip =
            crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe")
                .display()
                .to_string();
        let (code, _, err) = node.run(&["install", "--release-zip", &zip]);
        assert_eq!(code, 0, "{err}");
        let (dir, account) =
            crate::support::account(&api, "system-upgrade", "calicoctl-win-migrate");
        Self {
            api,
            node,
            _dir: dir,
            account,
            zip,
        }
    }
}
