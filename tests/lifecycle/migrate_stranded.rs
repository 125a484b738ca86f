//! `migrate` never strands a node: every check that can refuse it runs before the first
//! change (a refusal leaves the host and the cluster as they were), and every step is
//! journaled, so that a run stopped at any point, by a kill or by a refused API call, is
//! finished by the next. The operator is `support::operator::FakeOperator`, which follows the
//! operator's validation and placement (cited there).

use crate::support::Node;
use crate::support::operator::{FakeOperator, POD_PREFIX};
use crate::support::snapshot::{assert_same, snapshot};
use serde_json::{Value, json};

const INSTALLATION: &str = "/apis/operator.tigera.io/v1/installations/default";
const ENDPOINT: &str = "/api/v1/namespaces/tigera-operator/configmaps/kubernetes-services-endpoint";
const MARK: &str = "calicoctl-win/migrate-cordoned";

use crate::migrate::installed_with_pods;

/// A node the operator runs Calico on, handed over by `to-operator`, its operator running.
fn the_operators() -> (Node, FakeOperator) {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    (node, operator)
}

fn node_object(node: &Node) -> Value {
    node.api().get("/api/v1/nodes/win-1").expect("node")
}

/// Runs `args` and asserts that it was refused with nothing changed: the simulated host as it
/// was and no write to the API server.
fn refused_changing_nothing(node: &Node, args: &[&str], what: &str) -> (i32, Value, String) {
    let host = snapshot(&node.sim());
    let writes = node.api().writes().len();
    let (code, doc, err) = node.run(args);
    assert_ne!(code, 0, "{what}: {doc}");
    assert_same(&host, &snapshot(&node.sim()), what);
    assert_eq!(
        node.api().writes()[writes..],
        [],
        "{what}: the cluster was written to: {err}"
    );
    (code, doc, err)
}

/// Every input install refuses is refused before the node leaves the operator: a checksum
/// that is no checksum, a version that is none, a zip that is not there, a zip whose bytes are
/// not the checksum's, a release older than the cluster's. The operator's pod stays, and a
/// refused run says that nothing was changed.
#[test]
fn from_operator_refuses_what_install_refuses_before_the_node_leaves_the_operator() {
    let (node, _operator) = the_operators();
    let zip = node.zip().display().to_string();
    let older = crate::support::release::release_zip(node.dir.path(), "3.29.0", "calico-node.exe")
        .display()
        .to_string();
    let missing = node.sim().join("no-such.zip").display().to_string();
    let zeros = "0".repeat(64);
    let cases: [(&str, Vec<&str>); 5] = [
        (
            "--sha256 abc",
            vec!["--release-zip", &zip, "--sha256", "abc"],
        ),
        ("--calico-version 3.30", vec!["--calico-version", "3.30"]),
        ("a missing zip", vec!["--release-zip", &missing]),
        (
            "a wrong checksum",
            vec!["--release-zip", &zip, "--sha256", &zeros],
        ),
        ("an older release", vec!["--release-zip", &older]),
    ];
    for (what, flags) in cases {
        let mut args = vec!["migrate", "from-operator", "--pod-timeout", "30s"];
        args.extend(flags);
        let (_, doc, err) = refused_changing_nothing(&node, &args, what);
        assert!(
            node.api().get(&format!("{POD_PREFIX}win-1")).is_some(),
            "{what}: the operator's pod went: {err}"
        );
        let said = format!("{err} {doc}");
        assert!(
            !said.contains("is out of the operator's DaemonSet"),
            "{what}: {said}"
        );
    }
}

/// `from-operator --dry-run` on the operator's node judges the node as the real run will
/// leave it (labelled): it exits as the real run then does, and its document says the
/// direction, the node, migrate's own steps and install's plan.
#[test]
fn from_operators_dry_run_says_what_the_real_run_does() {
    let (node, _operator) = the_operators();
    let zip = node.zip().display().to_string();
    let args = [
        "migrate",
        "from-operator",
        "--pod-timeout",
        "30s",
        "--release-zip",
        zip.as_str(),
    ];
    let mut dry = args.to_vec();
    dry.push("--dry-run");
    let (code, doc, err) = refused_or_shown(&node, &dry);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["direction"], "from-operator", "{doc}");
    assert_eq!(doc["node"], "win-1", "{doc}");
    let steps: Vec<&str> = crate::support::items(&doc, "migrate_actions")
        .filter_map(|a| a["action"].as_str())
        .collect();
    assert!(steps.contains(&"set-node-label"), "{steps:?}");
    assert!(steps.contains(&"cordon"), "{steps:?}");
    assert!(steps.contains(&"wait-operator-pod"), "{steps:?}");
    assert!(!doc["actions"].as_array().expect("install's").is_empty());
    let (real, doc, err) = node.run(&args);
    assert_eq!(real, code, "{err} {doc}");
}

/// A dry run changes nothing, and says so by its snapshot.
fn refused_or_shown(node: &Node, args: &[&str]) -> (i32, Value, String) {
    let host = snapshot(&node.sim());
    let writes = node.api().writes().len();
    let out = node.run(args);
    assert_same(&host, &snapshot(&node.sim()), "a dry run");
    assert_eq!(node.api().writes().len(), writes, "a dry run wrote");
    out
}

/// An Installation the operator would refuse with Windows on (its validation at
/// release-v1.44) is refused before any change, naming what is missing and how to add it.
#[test]
fn to_operator_refuses_an_installation_the_operator_would_not_render() {
    let node = installed_with_pods();
    let _operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let api = node.api();
    let endpoint = api.get(ENDPOINT).expect("endpoint");
    let inst = api.get(INSTALLATION).expect("installation");
    type Breakage<'a> = (&'a str, &'a str, Box<dyn Fn() + 'a>);
    let breakages: [Breakage; 3] = [
        (
            "no services endpoint",
            "kubernetes-services-endpoint does not exist",
            Box::new(|| api.remove(ENDPOINT)),
        ),
        (
            "no serviceCIDRs",
            "spec.serviceCIDRs is empty",
            Box::new(|| {
                let mut i = inst.clone();
                i["spec"]
                    .as_object_mut()
                    .expect("spec")
                    .remove("serviceCIDRs");
                api.put(INSTALLATION, i);
            }),
        ),
        (
            "an IPIP pool",
            "encapsulation IPIP",
            Box::new(|| {
                let mut i = inst.clone();
                i["spec"]["calicoNetwork"]["ipPools"][0]["encapsulation"] = json!("IPIP");
                api.put(INSTALLATION, i);
            }),
        ),
    ];
    for (what, said, breakage) in breakages {
        breakage();
        let (code, doc, err) = refused_changing_nothing(
            &node,
            &["migrate", "to-operator", "--pod-timeout", "5s"],
            what,
        );
        assert_eq!(code, 3, "{what}: {err}");
        assert_eq!(doc["error"]["kind"], "migration-refused", "{doc}");
        assert!(err.contains(said), "{what}: {err}");
        assert!(err.contains("kubectl"), "{what}: the fix: {err}");
        api.put(ENDPOINT, endpoint.clone());
        api.put(INSTALLATION, inst.clone());
    }
}

/// An operator that does not render Windows for the node once switched on (its Windows
/// controller Degraded for a reason of its own): the DaemonSet is waited for before the node
/// is touched, and when it does not come the Installation is put back as it was (Windows off
/// and no windowsNodes, which the operator refuses while Windows is off, so that it is not
/// left Degraded for every node), the node uncordoned and unmarked, and nothing on the node
/// changed.
#[test]
fn an_operator_that_does_not_render_windows_gets_its_installation_back() {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    operator.hold_render(true);
    let host = snapshot(&node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "2s"]);
    assert_eq!(code, 4, "{err} {doc}");
    assert!(err.contains("nothing on the node was changed"), "{err}");
    assert!(err.contains("calico-windows is Degraded"), "{err}");
    assert_same(&host, &snapshot(&node.sim()), "an operator that never came");
    let inst = node.api().get(INSTALLATION).expect("installation");
    assert_eq!(
        inst["spec"]["calicoNetwork"]["windowsDataplane"], "Disabled",
        "{inst}"
    );
    assert_eq!(inst["spec"]["windowsNodes"], Value::Null, "{inst}");
    let n = node_object(&node);
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
    assert_eq!(n["metadata"]["annotations"][MARK], Value::Null, "{n}");
    // The operator, given its Installation back, is not Degraded.
    operator.looked_again();
    let status = node
        .api()
        .get("/apis/operator.tigera.io/v1/tigerastatuses/calico")
        .expect("status");
    assert_eq!(
        status["status"]["conditions"][0]["status"], "False",
        "{status}"
    );
}

/// `then`, under the fake API's lock, at the first request of migrate's that finds the
/// Installation patched to the HNS dataplane (a scripted event, between two of its requests:
/// the patched Installation lasts only the pods' wait of 2 s, which a test thread watching
/// it from outside may miss on a loaded machine); whether it came.
fn once_patched_to_hns(
    node: &Node,
    then: impl FnOnce(&mut crate::support::fake_api::State) + Send + 'static,
) -> std::sync::Arc<std::sync::atomic::AtomicBool> {
    let came = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = came.clone();
    node.api().when_seen(
        |st| {
            st.objects
                .get(INSTALLATION)
                .is_some_and(|i| i["spec"]["calicoNetwork"]["windowsDataplane"] == "HNS")
        },
        move |st| {
            then(st);
            flag.store(true, std::sync::atomic::Ordering::SeqCst);
        },
    );
    came
}

/// The rollback puts back only what it sees as it left it: an administrator who changes a
/// field migrate's patch set (here `windowsNodes.cniBinDir`) while the run waits keeps the
/// change, and the Installation is not reverted (the warning says which field).
#[test]
fn a_rollback_keeps_an_installation_the_administrator_changed_since() {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    operator.hold_render(true);
    let admin = once_patched_to_hns(&node, |st| {
        let inst = st.objects.get_mut(INSTALLATION).expect("installation");
        // As `kubectl edit` would: the field, and a new resourceVersion.
        inst["spec"]["windowsNodes"]["cniBinDir"] = json!("c:/admin/cni/bin");
        inst["metadata"]["resourceVersion"] = json!("9999");
    });
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "2s"]);
    assert!(
        admin.load(std::sync::atomic::Ordering::SeqCst),
        "migrate never patched the Installation"
    );
    assert_eq!(code, 4, "{err} {doc}");
    assert!(
        err.contains("the operator's Installation default was left as it is: its spec.windowsNodes.cniBinDir changed after this run patched it"),
        "{err}"
    );
    let inst = node.api().get(INSTALLATION).expect("installation");
    assert_eq!(
        inst["spec"]["calicoNetwork"]["windowsDataplane"], "HNS",
        "{inst}"
    );
    assert_eq!(
        inst["spec"]["windowsNodes"]["cniBinDir"], "c:/admin/cni/bin",
        "{inst}"
    );
    let n = node_object(&node);
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
}

/// `from-operator` holds the host lock from its first read to its last step: it plans, then
/// runs install within itself, and install keeps the lock it finds held rather than let it go
/// and take it again (another command could take the host between). Seen from outside while the
/// run waits on its first cluster write: the lock's holder is still `migrate`.
#[test]
fn from_operator_holds_the_host_lock_through_its_install() {
    let (node, _operator) = the_operators();
    let zip = node.zip().display().to_string();
    let api = node.api();
    api.hold_write_at(1);
    let args = ["migrate", "from-operator", "--pod-timeout", "30s"];
    let mut child = node.spawn(&[&args[..], &["--release-zip", &zip]].concat(), false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while !api.lock().held {
        assert!(
            child.try_wait().expect("wait").is_none(),
            "it ended before writing"
        );
        assert!(
            std::time::Instant::now() < deadline,
            "the first write never came"
        );
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    let holder = fs_err::read_to_string(node.sim().join("calicoctl-win.lock.json"));
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    api.release_write();
    let holder: Value = serde_json::from_str(&holder.expect("holder")).expect("holder JSON");
    assert_eq!(holder["command"], "migrate", "{holder}");
}

/// `from-operator --detach` starts its run as a process of its own, which takes the host lock
/// itself: the starting command lets go of the lock it planned under (keeping it, the child
/// found the host busy and every detached run refused itself), and the child hands the node
/// over and records its result.
#[test]
fn from_operator_detached_runs_and_records_its_result() {
    let (node, _operator) = the_operators();
    let zip = node.zip().display().to_string();
    let (code, doc, err) = node.run(&[
        "migrate",
        "from-operator",
        "--pod-timeout",
        "30s",
        "--release-zip",
        &zip,
        "--detach",
    ]);
    assert_eq!(code, 0, "{err} {doc}");
    let result = std::path::PathBuf::from(doc["result"].as_str().expect("result"));
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(240);
    while !result.exists() {
        assert!(std::time::Instant::now() < deadline, "no result: {doc}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let recorded: Value =
        serde_json::from_slice(&fs_err::read(&result).expect("result")).expect("result JSON");
    assert_eq!(recorded["exit_code"], 0, "{recorded:#}");
}

/// The operator writes the Installation's status while the rollback reads it: the restore's
/// resourceVersion precondition fails (409), the Installation is read again, and, its fields
/// as migrate set them, it is put back (a status write is no administrator's change).
#[test]
fn a_status_write_during_the_restore_does_not_keep_the_installation() {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    operator.hold_render(true);
    let racer = once_patched_to_hns(&node, |st| {
        st.status_written_before_patch
            .insert(INSTALLATION.to_owned());
    });
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "2s"]);
    assert!(
        racer.load(std::sync::atomic::Ordering::SeqCst),
        "migrate never patched the Installation"
    );
    assert_eq!(code, 4, "{err} {doc}");
    assert!(!err.contains("was left as it is"), "{err}");
    let inst = node.api().get(INSTALLATION).expect("installation");
    assert_eq!(
        inst["spec"]["calicoNetwork"]["windowsDataplane"], "Disabled",
        "{inst}"
    );
    assert_eq!(inst["spec"]["windowsNodes"], Value::Null, "{inst}");
}

/// An operator Degraded before anything changes is refused, with nothing changed.
#[test]
fn a_degraded_operator_is_refused_before_any_change() {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    // windowsNodes while Windows is off: the operator's validation refuses it.
    let mut inst = node.api().get(INSTALLATION).expect("installation");
    inst["spec"]["windowsNodes"] = json!({"cniBinDir": "C:/x"});
    node.api().put(INSTALLATION, inst);
    operator.looked_again();
    let (code, _, err) =
        refused_changing_nothing(&node, &["migrate", "to-operator"], "a Degraded operator");
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("TigeraStatus calico is Degraded"), "{err}");
}

/// An install that fails after the node left the operator, and undoes itself (CalicoNode's
/// service refused every start): the node goes back to the operator, its pod ready again
/// and the node uncordoned, rather than stay without Calico.
#[test]
fn a_failed_install_gives_the_node_back_to_the_operator() {
    let (node, _operator) = the_operators();
    let zip = node.zip().display().to_string();
    let (code, doc, err) = node.run(&[
        "migrate",
        "from-operator",
        "--pod-timeout",
        "30s",
        "--release-zip",
        &zip,
        "--sim-fault",
        "deny:~start service CalicoNode",
    ]);
    assert_ne!(code, 0, "{doc}");
    assert!(err.contains("is the operator's again"), "{err}");
    assert!(
        node.api().get(&format!("{POD_PREFIX}win-1")).is_some(),
        "{err}"
    );
    let n = node_object(&node);
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
    assert_eq!(n["metadata"]["annotations"][MARK], Value::Null, "{n}");
    assert_eq!(
        n["metadata"]["labels"]["calicoctl-win/runs-calico"],
        Value::Null,
        "{n}"
    );
    // And the next run, without the fault, takes it.
    let (code, doc, err) = node.run(&[
        "migrate",
        "from-operator",
        "--pod-timeout",
        "30s",
        "--release-zip",
        &zip,
    ]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// A second NIC the operator's first-found detection would take (calico-node walks the
/// interfaces in reverse of Windows' order): refused, with the Installation's fix; once the
/// Installation detects the Node's InternalIP, the node is handed over.
#[test]
fn an_address_the_operator_would_not_advertise_is_refused_until_it_would() {
    let node = installed_with_pods();
    let _operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    node.edit_state(|s| {
        s["interfaces"].as_array_mut().expect("interfaces").push(
            json!({"interface": "Ethernet 2", "index": 9, "ip": "192.168.50.5", "prefix_len": 24}),
        );
    });
    let (code, doc, err) = refused_changing_nothing(
        &node,
        &["migrate", "to-operator", "--pod-timeout", "30s"],
        "a second NIC",
    );
    assert_eq!(code, 3, "{doc}");
    assert!(err.contains("picks 192.168.50.5 on Ethernet 2"), "{err}");
    assert!(err.contains("NodeInternalIP"), "{err}");
    let api = node.api();
    let mut inst = api.get(INSTALLATION).expect("installation");
    inst["spec"]["calicoNetwork"]["nodeAddressAutodetectionV4"] =
        json!({"kubernetes": "NodeInternalIP"});
    api.put(INSTALLATION, inst);
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// node.name that is not the name kubelet registers this host as: both directions refuse
/// before any change, as install does, instead of handing over or taking another node.
#[test]
fn a_node_name_that_is_not_kubelets_is_refused_both_ways() {
    let node = installed_with_pods();
    let _operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let mut other = node_object(&node);
    other["metadata"]["name"] = json!("win-2");
    node.api().put("/api/v1/nodes/win-2", other);
    for direction in ["to-operator", "from-operator"] {
        let zip = node.zip().display().to_string();
        let mut args = vec!["--set", "node.name=win-2", "migrate", direction];
        if direction == "from-operator" {
            args.extend(["--release-zip", zip.as_str()]);
        }
        let (code, doc, err) = refused_changing_nothing(&node, &args, direction);
        assert_eq!(code, 3, "{direction}: {doc}");
        assert!(err.contains("kubelet registers the node as win-1"), "{err}");
    }
    let n = node.api().get("/api/v1/nodes/win-2").expect("win-2");
    assert_eq!(n["spec"]["unschedulable"], Value::Null, "{n}");
}

/// A refusal after the administrator cordoned the node leaves no mark that would make a later
/// migration uncordon it.
#[test]
fn a_refusal_leaves_no_cordon_mark() {
    let node = installed_with_pods();
    node.api().remove(ENDPOINT);
    let mut n = node_object(&node);
    n["spec"]["unschedulable"] = json!(true);
    node.api().put("/api/v1/nodes/win-1", n);
    let (code, _, err) = node.run(&["migrate", "to-operator"]);
    assert_eq!(code, 3, "{err}");
    let n = node_object(&node);
    assert_eq!(n["metadata"]["annotations"][MARK], Value::Null, "{n}");
    assert_eq!(n["spec"]["unschedulable"], true, "{n}");
}
