//! `migrate` stopped at every step, both ways: killed from outside at each mutating call on
//! the host (`--sim-fault pause:N`, then SIGKILL) and at each of its API writes (held by the
//! server, not applied, then SIGKILL: a kill after write N applied is the kill at write N+1),
//! and refused by the API server at each of its writes (a 500, as a server whose etcd timed
//! out answers). Each stopped run is followed by a
//! rerun, which must give the node of an uninterrupted run: the same host, the same owner,
//! the node uncordoned and unmarked, no journal left.

use crate::support::operator::{FakeOperator, POD_PREFIX};
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Killed, Node, copy_dir, kill_at};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

const MARK: &str = "calicoctl-win/migrate-cordoned";

use crate::migrate::installed_with_pods;

/// The API server's objects, to put back before each stopped run.
fn objects(node: &Node) -> BTreeMap<String, Value> {
    node.api().lock().objects.clone()
}

fn restore(node: &Node, host: &Path, objects: &BTreeMap<String, Value>) {
    let _ = fs_err::remove_dir_all(node.sim());
    copy_dir(host, &node.sim());
    let mut st = node.api().lock();
    st.objects = objects.clone();
    st.fail_write = None;
}

/// What the cluster says of the node's owner and its cordon, compared across runs.
fn cluster_view(node: &Node) -> Value {
    let n = node.api().get("/api/v1/nodes/win-1").expect("node");
    let api = node.api();
    let inst = api
        .get("/apis/operator.tigera.io/v1/installations/default")
        .expect("installation");
    serde_json::json!({
        "label": n["metadata"]["labels"]["calicoctl-win/runs-calico"],
        "unschedulable": n["spec"]["unschedulable"],
        "mark": n["metadata"]["annotations"][MARK],
        "calico-version": n["metadata"]["annotations"]["calicoctl-win/calico-version"],
        "operator-pod": api.get(&format!("{POD_PREFIX}win-1")).is_some(),
        "windows": inst["spec"]["calicoNetwork"]["windowsDataplane"],
        "grant": api.get("/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system/roles/calicoctl-win-token-renewal-win-1").is_some(),
    })
}

fn no_journals(node: &Node, what: &str) {
    for j in [
        "calicoctl-win-migrate.journal.json",
        "calicoctl-win-migrate.cluster.journal.json",
        "calicowindows/calicoctl-win.journal.json",
    ] {
        assert!(!node.c_drive(j).exists(), "{what}: {j} left");
    }
}

/// Walks `args` over every host call (killed) and every API write (refused) from the state
/// (`host`, `objects`), with the operator running; each rerun must reach `want`.
fn walk(node: &Node, args: &[&str], (host, objects): (&Path, &BTreeMap<String, Value>)) {
    restore(node, host, objects);
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let writes_before = node.api().lock().writes_seen;
    let (code, doc, err) = node.run(args);
    assert_eq!(code, 0, "uninterrupted: {err} {doc}");
    let writes = node.api().lock().writes_seen - writes_before;
    drop(operator);
    let want_host = snapshot(&node.sim());
    let want_cluster = cluster_view(node);
    assert!(writes > 3, "only {writes} writes");

    let check = |what: &str| {
        let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
        let (code, doc, err) = node.run(args);
        assert_eq!(code, 0, "{what}, then a rerun: {err} {doc}");
        drop(operator);
        assert_same(
            &snapshot(&node.sim()),
            &want_host,
            &format!("{what}, then a rerun"),
        );
        assert_eq!(cluster_view(node), want_cluster, "{what}, then a rerun");
        no_journals(node, what);
    };

    for k in 1..=writes {
        restore(node, host, objects);
        node.api().fail_write_at(k);
        let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
        let (code, _, err) = node.run(args);
        drop(operator);
        node.api().lock().fail_write = None;
        // A refused write whose failure is only a warning lets the run end; the rerun must
        // still give the same node.
        let what = format!(
            "write {k} of {writes} refused (exit {code}: {})",
            first_line(&err)
        );
        check(&what);
    }

    for k in 1..=writes {
        restore(node, host, objects);
        let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
        let reached = kill_at_write(node, args, k);
        drop(operator);
        assert!(reached, "write {k} of {writes} never came");
        check(&format!("killed at API write {k} of {writes}"));
    }

    let tmp = node.dir.path().join("walk-tmp");
    for n in 1.. {
        restore(node, host, objects);
        let _ = fs_err::remove_dir_all(&tmp);
        fs_err::create_dir_all(&tmp).expect("tmp");
        let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
        let at = match kill_at(&node.sim(), &node.admin, args, n as u64, &tmp) {
            Killed::At(at) => at,
            Killed::Ended(code, err) => {
                assert_eq!(code, 0, "{err}");
                assert!(n > 3, "only {n} host calls");
                eprintln!(
                    "{args:?}: {writes} writes refused, killed at {} host calls",
                    n - 1
                );
                break;
            }
        };
        drop(operator);
        check(&format!("killed at host call {n} ({at})"));
    }
}

/// Runs `args` with the API server holding its `k`th write, and kills it from outside
/// (SIGKILL) while it waits on that call; whether the write came.
fn kill_at_write(node: &Node, args: &[&str], k: usize) -> bool {
    let api = node.api();
    api.hold_write_at(k);
    let mut child = node.spawn(args, false);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let reached = loop {
        if api.lock().held {
            child.kill().expect("SIGKILL");
            break true;
        }
        if child.try_wait().expect("wait").is_some() {
            break false;
        }
        assert!(std::time::Instant::now() < deadline, "write {k} never came");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    child.wait().expect("reap");
    api.release_write();
    reached
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or_default()
}

/// Keeps the simulated host's state (`state.json` and its files) in `to`.
fn keep(node: &Node, to: &Path) {
    let _ = fs_err::remove_dir_all(to);
    copy_dir(&node.sim(), to);
}

#[test]
fn to_operator_stopped_anywhere_is_finished_by_a_rerun() {
    let node = installed_with_pods();
    let host = node.dir.path().join("before-to");
    keep(&node, &host);
    let objects = objects(&node);
    walk(
        &node,
        &["migrate", "to-operator", "--pod-timeout", "20s"],
        (&host, &objects),
    );
    let view = cluster_view(&node);
    assert_eq!(view["operator-pod"], true, "{view}");
    assert_eq!(view["grant"], false, "{view}");
    assert_eq!(view["calico-version"], Value::Null, "{view}");
}

#[test]
fn from_operator_stopped_anywhere_is_finished_by_a_rerun() {
    let node = installed_with_pods();
    let operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
    drop(operator);
    let host = node.dir.path().join("before-from");
    keep(&node, &host);
    let objects = objects(&node);
    let zip = node.zip().display().to_string();
    walk(
        &node,
        &[
            "migrate",
            "from-operator",
            "--pod-timeout",
            "20s",
            "--release-zip",
            zip.as_str(),
        ],
        (&host, &objects),
    );
    let view = cluster_view(&node);
    assert_eq!(view["operator-pod"], false, "{view}");
    assert_eq!(view["label"], "true", "{view}");
    assert_eq!(view["calico-version"], "3.30.2", "{view}");
}
