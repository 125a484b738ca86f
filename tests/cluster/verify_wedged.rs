//! A run's namespace held Terminating by a probe pod whose node died: the namespace controller
//! deletes a deleted namespace's pods gracefully, and a dead node's kubelet never confirms
//! (tests/support/fake_api/namespace_controller.rs). The run's clean-up, and the next run's
//! sweep once the run's Lease ran out, delete such pods at once (grace 0, by uid);
//! a pod stopping on a Ready node (its kubelet alive, just slow) is never forced.

use super::verify::{at, client, cluster, lease, nothing_left, options, verify};
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::Cluster;
use serde_json::json;

/// The deletes of pods sent with `gracePeriodSeconds: 0`: their paths.
fn forced(api: &FakeApi) -> Vec<String> {
    api.lock()
        .delete_options
        .iter()
        .filter(|(p, o)| p.contains("/pods/") && o["gracePeriodSeconds"] == json!(0))
        .map(|(p, _)| p.clone())
        .collect()
}

/// A killed run's namespace, holding its server pod on `node`; then `node` dies and the
/// namespace is deleted (by an administrator, or a sweep): Terminating, held by the pod, which
/// the namespace controller's graceful delete left Terminating. Its Lease, renewed at
/// `renewed`, stays while a pod remains, as with `OrderedNamespaceDeletion` (Kubernetes 1.33).
fn killed_and_deleted(api: &FakeApi, c: &Cluster, (name, node): (&str, &str), renewed: i64) {
    let now = jiff::Timestamp::now().as_second();
    let mut ns = meta("v1", "Namespace", name, None);
    ns["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    ns["metadata"]["creationTimestamp"] = json!(at(now - 120));
    api.put(&format!("/api/v1/namespaces/{name}"), ns);
    let mut pod = meta("v1", "Pod", "server", Some(name));
    pod["metadata"]["uid"] = json!("killed-server");
    pod["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    pod["spec"] = json!({"nodeName": node, "terminationGracePeriodSeconds": 1, "containers": []});
    pod["status"] = json!({"phase": "Running"});
    api.put(&format!("/api/v1/namespaces/{name}/pods/server"), pod);
    api.set_node_ready(node, "Unknown", "Kubelet stopped posting node status.");
    calicoctl_win::verify::probe::delete_namespace(c, name, (None, None), None).expect("deleted");
    let ns = api
        .get(&format!("/api/v1/namespaces/{name}"))
        .expect("held");
    assert_eq!(ns["status"]["phase"], "Terminating", "{ns}");
    assert_eq!(
        ns["status"]["conditions"][0]["type"], "NamespaceContentRemaining",
        "{ns}"
    );
    lease(api, name, "killed", renewed, 60);
}

/// A probe pod's node goes NotReady mid-run: the namespace delete at the run's end leaves that
/// pod Terminating (its kubelet never confirms), which would hold the namespace forever; the
/// clean-up deletes it at once, and nothing is left after the next run.
#[test]
fn a_probe_pods_node_dying_mid_run_leaves_nothing_after_the_next_run() {
    let (api, dir) = cluster();
    api.lock().dataplane.node_dies_when_running = Some("client-windows".into());
    let c = client(&api, &dir);
    let o = options(120);
    let run = std::thread::spawn(move || calicoctl_win::verify::run::run(&c, &o));
    let r = run.join().expect("joined").expect("run");
    let node = api.get("/api/v1/nodes/win-b").expect("node");
    assert_eq!(
        node["status"]["conditions"][0]["status"], "Unknown",
        "{node}"
    );
    assert!(
        forced(&api)
            .iter()
            .any(|p| p.ends_with("/pods/client-windows")),
        "{:?}",
        api.lock().delete_options
    );
    let mut o = options(120);
    o.suffix = "t2".into();
    let next = verify(&api, &dir, &o);
    nothing_left(&api);
    assert!(r.cleaned_up, "{r:#?}\n{next:#?}");
}

/// A killed run's namespace, Terminating and held by a pod on a dead node: the next run leaves
/// it while its Lease is ahead (a living run's, whose own clean-up handles it), and once the
/// lease ran out deletes the pod at once (by its uid) and counts the namespace removed when
/// it is gone.
#[test]
fn a_killed_runs_terminating_namespace_goes_once_its_lease_ran_out_not_before() {
    let (api, dir) = cluster();
    let c = client(&api, &dir);
    let name = "calicoctl-win-verify-killed";
    let now = jiff::Timestamp::now().as_second();
    killed_and_deleted(&api, &c, (name, "win-b"), now);
    let first = verify(&api, &dir, &options(120));
    assert!(first.passed, "{:#?}", first.checks);
    assert!(forced(&api).is_empty(), "{:?}", forced(&api));
    assert!(!first.leftovers_removed.iter().any(|n| n == name));
    assert!(first.leftovers_left.is_empty(), "{first:#?}");
    assert!(api.get(&format!("/api/v1/namespaces/{name}")).is_some());
    // Its Lease ran out: the run was killed.
    lease(&api, name, "killed", now - 70, 60);
    let mut o = options(120);
    o.suffix = "t2".into();
    let second = verify(&api, &dir, &o);
    assert_eq!(second.leftovers_removed, [name], "{second:#?}");
    assert_eq!(
        forced(&api),
        [format!("/api/v1/namespaces/{name}/pods/server")]
    );
    let options = api.lock().delete_options.clone();
    let by_uid = options
        .iter()
        .any(|(p, o)| p.ends_with("/pods/server") && o["preconditions"]["uid"] == "killed-server");
    assert!(by_uid, "{options:?}");
    nothing_left(&api);
}

/// A pod stopping slowly on a Ready node (its kubelet alive, its containers not yet stopped)
/// holds the namespace a while: neither the run's clean-up nor the next run's sweep deletes it
/// at once; the sweep says why the namespace is left.
#[test]
fn a_pod_stopping_on_a_ready_node_is_never_forced() {
    let (api, dir) = cluster();
    api.lock().dataplane.pods_linger = true;
    // Each run's clean-up waits for the stopping pod until its --timeout: 6 s, not 20, holds
    // the checks (under a second here) and that wait.
    let first = verify(&api, &dir, &options(6));
    assert!(!first.cleaned_up, "{first:#?}");
    let name = first.namespace.clone();
    let mut o = options(6);
    o.suffix = "t2".into();
    let second = verify(&api, &dir, &o);
    assert!(forced(&api).is_empty(), "{:?}", forced(&api));
    assert!(!second.leftovers_removed.contains(&name), "{second:#?}");
    let left = second.leftovers_left.join("\n");
    assert!(
        left.contains(&format!("namespace {name} is left Terminating"))
            && left.contains("pod server is stopping on node win-a, which is Ready"),
        "{left}"
    );
    assert!(api.get(&format!("/api/v1/namespaces/{name}")).is_some());
}
