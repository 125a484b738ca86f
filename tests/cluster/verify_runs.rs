//! `verify --namespace`: runs in one namespace go at once, each with objects named and
//! labelled by its run id and a coordination.k8s.io/v1 Lease of its own (src/verify/
//! shared.rs). Two runs at once both pass; a run killed outright (its Lease no longer
//! renewed) is swept by the next run once its Lease ran out, a living run never.

use super::verify::{client, cluster, options};
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::verify::run::{Options, run};
use serde_json::json;

const NS: &str = "calicoctl-win-verify";
const LEASES: &str = "/apis/coordination.k8s.io/v1/namespaces/calicoctl-win-verify/leases";
const RUN: &str = "calicoctl-win.projectcalico.org/verify-run";

fn given(api: &FakeApi) {
    api.put(
        &format!("/api/v1/namespaces/{NS}"),
        meta("v1", "Namespace", NS, None),
    );
}

fn in_namespace(node: &str, run: &str) -> Options {
    Options {
        node: crate::support::node_name(node),
        suffix: run.into(),
        namespace: Some(NS.into()),
        ..options(60)
    }
}

/// The objects in the namespace given (the Namespace itself aside).
fn left(api: &FakeApi) -> Vec<String> {
    api.lock()
        .objects
        .keys()
        .filter(|k| k.contains(&format!("/namespaces/{NS}/")))
        .cloned()
        .collect()
}

/// A run's Lease in the namespace given (`verify::lease`).
fn lease(api: &FakeApi, id: &str, renewed: i64, for_s: i64) {
    super::verify::lease(api, NS, id, renewed, for_s);
}

/// A run's pod, Service and policy, made at `created` (unix seconds): their paths.
fn objects(api: &FakeApi, id: &str, created: i64) -> Vec<String> {
    let at = jiff::Timestamp::from_second(created)
        .expect("time")
        .to_string();
    let labels = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify", RUN: id});
    let made = [
        (
            "v1",
            "Pod",
            format!("/api/v1/namespaces/{NS}/pods/server-{id}"),
            format!("server-{id}"),
        ),
        (
            "v1",
            "Service",
            format!("/api/v1/namespaces/{NS}/services/server-{id}"),
            format!("server-{id}"),
        ),
        (
            "networking.k8s.io/v1",
            "NetworkPolicy",
            format!(
                "/apis/networking.k8s.io/v1/namespaces/{NS}/networkpolicies/deny-server-ingress-{id}"
            ),
            format!("deny-server-ingress-{id}"),
        ),
    ];
    made.into_iter()
        .map(|(v, kind, path, name)| {
            let mut o = meta(v, kind, &name, Some(NS));
            o["metadata"]["labels"] = labels.clone();
            o["metadata"]["creationTimestamp"] = json!(at);
            api.put(&path, o);
            path
        })
        .collect()
}

/// Two runs in the one namespace, for two nodes, at once: both pass (run `a` deletes what it
/// made while `b` still dials its own server), and nothing of either is left. Fails on the
/// turns: the second run waited for the first's turn past its `--timeout`.
#[test]
fn two_runs_in_one_namespace_at_once_both_pass_and_leave_nothing() {
    let (api, dir) = cluster();
    given(&api);
    let (ca, cb) = (client(&api, &dir), client(&api, &dir));
    let a = in_namespace("win-a", "ra");
    let b = Options {
        // Longer checks than `a`'s: `a` cleans up while `b` still runs.
        settle: std::time::Duration::from_secs(4),
        ..in_namespace("win-b", "rb")
    };
    let (ra, rb) = std::thread::scope(|s| {
        let ra = s.spawn(|| run(&ca, &a));
        let rb = s.spawn(|| run(&cb, &b));
        (ra.join().expect("a"), rb.join().expect("b"))
    });
    let (ra, rb) = (ra.expect("run a"), rb.expect("run b"));
    assert!(ra.passed, "{:#?}", ra.checks);
    assert!(rb.passed, "{:#?}", rb.checks);
    assert!(ra.cleaned_up && rb.cleaned_up);
    assert!(ra.leftovers_removed.is_empty() && rb.leftovers_removed.is_empty());
    // At once: each dialled through its pods while the other's Lease was still there.
    let asked = api.requests();
    let at = |f: &dyn Fn(&str, &str) -> bool| asked.iter().position(|(m, p)| f(m, p));
    for (one, other) in [("ra", "rb"), ("rb", "ra")] {
        let dialled = at(&|m, p| m == "GET" && p.contains(&format!("-{one}:8080/proxy")));
        let other_gone = at(&|m, p| {
            m == "DELETE" && p.ends_with(&format!("leases/calicoctl-win-verify-{other}"))
        });
        assert!(
            dialled.expect("dialled") < other_gone.expect("deleted"),
            "{asked:?}"
        );
    }
    // Each deleted only what it made: its own names.
    for (m, p) in api.requests() {
        if m == "DELETE" && p.contains(&format!("/namespaces/{NS}/")) && !p.contains("/events/") {
            assert!(p.ends_with("-ra") || p.ends_with("-rb"), "{p}");
        }
    }
    assert!(left(&api).is_empty(), "{:?}", left(&api));
}

/// A run killed outright left its Lease (a short one: 1 s) and its objects: the next run
/// deletes the Lease as it read it, then the objects; a living run's (its Lease renewed now,
/// for a minute) stay, as do a young run's objects without a Lease (one about to write it),
/// while an old run's without one go.
#[test]
fn a_killed_runs_objects_are_swept_once_its_lease_ran_out_and_a_living_runs_never() {
    let (api, dir) = cluster();
    given(&api);
    let now = jiff::Timestamp::now().as_second();
    lease(&api, "dead1", now - 5, 1);
    let dead = objects(&api, "dead1", now - 5);
    lease(&api, "live1", now, 60);
    let living = objects(&api, "live1", now - 3600);
    let young = objects(&api, "young1", now);
    // An old run's without a Lease (killed before it wrote one).
    let old = objects(&api, "old1", now - 7200);
    let r = run(&client(&api, &dir), &in_namespace("win-a", "r1")).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    let mut removed = r.leftovers_removed.clone();
    removed.sort();
    assert_eq!(removed, [format!("{NS}/dead1"), format!("{NS}/old1")]);
    for p in dead.iter().chain(&old) {
        assert!(api.get(p).is_none(), "{p} swept");
    }
    assert!(
        api.get(&format!("{LEASES}/calicoctl-win-verify-dead1"))
            .is_none()
    );
    for p in living.iter().chain(&young) {
        assert!(api.get(p).is_some(), "{p} kept");
    }
    assert!(
        api.get(&format!("{LEASES}/calicoctl-win-verify-live1"))
            .is_some()
    );
}

/// The run's Lease, renewed while it runs, is deleted at its end with the objects it made;
/// its pods were controlled by it.
#[test]
fn a_runs_lease_controls_its_pods_and_goes_with_them() {
    let (api, dir) = cluster();
    given(&api);
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let o = Options {
        renew: std::time::Duration::from_millis(300),
        ..in_namespace("win-a", "r2")
    };
    let stop = o.stop.clone();
    let pod = format!("/api/v1/namespaces/{NS}/pods/server-r2");
    let lease_path = format!("{LEASES}/calicoctl-win-verify-r2");
    std::thread::scope(|s| {
        let running = s.spawn(|| run(&c, &o));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while api.get(&pod).is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let made = api.get(&pod).expect("the run's server");
        let owner = &made["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "Lease");
        assert_eq!(owner["name"], "calicoctl-win-verify-r2");
        // Renewed while the run lives.
        let first = api.get(&lease_path).expect("lease")["metadata"]["resourceVersion"].clone();
        while api.get(&lease_path).expect("lease")["metadata"]["resourceVersion"] == first
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert_ne!(
            api.get(&lease_path).expect("lease")["metadata"]["resourceVersion"],
            first
        );
        stop.request();
        let _ = running.join().expect("run");
    });
    assert!(left(&api).is_empty(), "{:?}", left(&api));
}

/// A run's Lease judged run out that its run renews between the sweep's read and its delete
/// (a living run late with a renewal): the delete carries the resourceVersion read and is
/// refused, 409, and neither the Lease nor the run's objects are touched.
#[test]
fn a_lease_renewed_after_the_sweeps_read_keeps_its_runs_objects() {
    let (api, dir) = cluster();
    given(&api);
    let now = jiff::Timestamp::now().as_second();
    lease(&api, "late1", now - 120, 60);
    let theirs = objects(&api, "late1", now - 120);
    let path = format!("{LEASES}/calicoctl-win-verify-late1");
    api.lock().touched_before_delete.insert(path.clone(), 1);
    let r = run(&client(&api, &dir), &in_namespace("win-a", "r3")).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    assert!(r.leftovers_removed.is_empty(), "{r:#?}");
    assert!(api.get(&path).is_some());
    for p in &theirs {
        assert!(api.get(p).is_some(), "{p} kept");
    }
}
