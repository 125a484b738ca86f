//! `verify` waiting for a node that is not Ready yet, asking names in the cluster's own DNS
//! domain, running its pods under Pod Security's `restricted` profile, and sweeping a killed
//! run's leftovers only when they are still that run's (uid preconditions).

use super::verify::{client, cluster, failed, nothing_left, options, verify};
use crate::support::fake_api::FakeApi;
use calicoctl_win::error::{Diagnose, Exit};
use calicoctl_win::verify::matrix::PlanError;
use calicoctl_win::verify::run::{RunError, run};
use serde_json::json;
use std::time::Duration;

fn conditions(api: &FakeApi, node: &str, ready: &str, calico: Option<&str>) {
    let path = format!("/api/v1/nodes/{node}");
    let mut n = api.get(&path).expect("node");
    set_conditions(&mut n, ready, calico);
    api.put(&path, n);
}

/// The node's `Ready` and, when given, `CalicoWindowsReady` conditions.
fn set_conditions(n: &mut serde_json::Value, ready: &str, calico: Option<&str>) {
    let mut cs = vec![json!({"type": "Ready", "status": ready,
        "reason": "KubeletNotReady", "message": "container runtime network not ready"})];
    if let Some(s) = calico {
        cs.push(json!({"type": "CalicoWindowsReady", "status": s, "reason": "Felix"}));
    }
    n["status"]["conditions"] = json!(cs);
}

#[test]
fn after_install_a_node_not_yet_ready_is_waited_for_then_verified() {
    let (api, dir) = cluster();
    conditions(&api, "win-a", "False", None);
    let mut o = options(120);
    o.wait_ready = true;
    // The node becomes Ready, and CalicoNode says Calico is, once the run has looked.
    let looked = |api: &FakeApi| {
        api.requests()
            .iter()
            .filter(|(m, p)| m == "GET" && p.starts_with("/api/v1/nodes/win-a"))
            .count()
    };
    let done = std::sync::atomic::AtomicBool::new(false);
    let r = std::thread::scope(|s| {
        s.spawn(|| {
            while looked(&api) < 2 && !done.load(std::sync::atomic::Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(50));
            }
            conditions(&api, "win-a", "True", Some("True"));
        });
        let r = run(&client(&api, &dir), &o);
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        r
    });
    let r = r.expect("the run waits for the node, then runs");
    assert!(r.passed, "{:#?}", r.checks);
    nothing_left(&api);
}

#[test]
fn a_node_never_ready_ends_the_run_at_its_timeout_naming_what_it_waited_for() {
    let (api, dir) = cluster();
    conditions(&api, "win-a", "True", Some("False"));
    let mut o = options(3);
    o.wait_ready = true;
    let err = run(&client(&api, &dir), &o).unwrap_err();
    let RunError::Plan(e @ PlanError::NeverReady { .. }) = &err else {
        panic!("{err:?}");
    };
    let said = e.to_string();
    assert!(said.contains("CalicoWindowsReady is False"), "{said}");
    assert!(!said.contains("Ready is False (KubeletNotReady"), "{said}");
    assert_eq!(e.diagnose().expect("diagnosed").exit, Exit::Timeout);
    // The wait says what it waits for and when it gives up, as every wait does.
    let lines = o.said.take();
    let about_the_node = |start: &str| {
        lines
            .iter()
            .any(|l| l.starts_with(start) && l.contains("node win-a to be Ready"))
    };
    assert!(about_the_node("waiting up to"), "{lines:?}");
    assert!(about_the_node("gave up waiting for"), "{lines:?}");
    // Nothing was made.
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

#[test]
fn a_cordoned_node_is_not_waited_for() {
    let (api, dir) = cluster();
    conditions(&api, "win-a", "False", None);
    let mut n = api.get("/api/v1/nodes/win-a").expect("node");
    n["spec"]["unschedulable"] = json!(true);
    api.put("/api/v1/nodes/win-a", n);
    let mut o = options(120);
    o.wait_ready = true;
    let started = std::time::Instant::now();
    let err = run(&client(&api, &dir), &o).unwrap_err();
    assert!(
        matches!(err, RunError::Plan(PlanError::NotUsable(_))),
        "{err:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(60));
}

#[test]
fn the_kubernetes_name_is_asked_in_the_clusters_own_domain() {
    let (api, dir) = cluster();
    api.lock().dataplane.cluster_domain = Some("corp.example".into());
    let mut o = options(120);
    o.cluster_domain = "corp.example".into();
    let r = verify(&api, &dir, &o);
    // A Windows pod takes a name with dots as fully qualified: one in cluster.local is not
    // this cluster's, and would fail dns-kubernetes.
    assert!(r.passed, "{:?}", failed(&r));
}

#[test]
fn without_node_it_verifies_the_node_objects_name_not_calicos() {
    let (api, dir) = cluster();
    let node = crate::support::Node::new(&api);
    // Calico's name for the node (node.name) is not the Node object's.
    let config = dir.path().join("config.yaml");
    fs_err::write(&config, "node:\n  name: calico-a\n  k8s_node_ref: win-b\n").expect("config");
    let config = config.display().to_string();
    let (code, doc, stderr) = node.run(&["verify", "--config", &config]);
    assert_eq!(code, 0, "{stderr}\n{doc:#}");
    assert_eq!(doc["nodes"][0]["node"], "win-b", "{doc:#}");
    nothing_left(&api);
}

#[test]
fn the_namespace_it_makes_enforces_restricted_and_its_pods_meet_it() {
    let (api, dir) = cluster();
    let mut o = options(120);
    o.keep_on_failure = true;
    // Kept to be looked at: the dataplane answers no name, so dns-kubernetes fails.
    api.lock().dataplane.no_dns = true;
    let r = verify(&api, &dir, &o);
    let ns = api
        .get(&format!("/api/v1/namespaces/{}", r.namespace))
        .expect("kept");
    assert_eq!(
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"], "restricted",
        "{ns:#}"
    );
    // Every pod was admitted under restricted, each naming its OS.
    for (pod, os) in [
        ("server", "windows"),
        ("client-local", "windows"),
        ("client-linux", "linux"),
    ] {
        let p = api
            .get(&format!("/api/v1/namespaces/{}/pods/{pod}", r.namespace))
            .expect("made");
        assert_eq!(p["spec"]["os"]["name"], os, "{p:#}");
    }
}

#[test]
fn a_pod_security_refusal_is_named_as_such_not_as_a_missing_right() {
    let (api, dir) = cluster();
    // Before 1.25 Pod Security held Windows pods to Linux's controls, which a Windows pod
    // may not set.
    let mut ns = crate::support::fake_api::meta("v1", "Namespace", "calicoctl-win-verify", None);
    ns["metadata"]["labels"] = json!({"pod-security.kubernetes.io/enforce": "restricted",
        "pod-security.kubernetes.io/enforce-version": "v1.24"});
    api.put("/api/v1/namespaces/calicoctl-win-verify", ns);
    let mut o = options(20);
    o.namespace = Some("calicoctl-win-verify".into());
    let err = run(&client(&api, &dir), &o).unwrap_err();
    let RunError::Plan(e @ PlanError::PodSecurity { level, .. }) = &err else {
        panic!("{err:?}");
    };
    assert_eq!(level, "restricted");
    let said = e.to_string();
    assert!(said.contains("Pod Security admission refused"), "{said}");
    assert!(
        said.contains("pod-security.kubernetes.io/enforce=restricted"),
        "{said}"
    );
    let hint = e.diagnose().expect("diagnosed");
    assert_eq!(hint.exit, Exit::Failed);
    assert!(!hint.hint.unwrap_or_default().contains("ClusterRole"));
    // What the run made there is gone, its Lease too.
    let left: Vec<String> = api
        .lock()
        .objects
        .keys()
        .filter(|k| k.contains("/namespaces/calicoctl-win-verify/"))
        .cloned()
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

fn old_namespace(api: &FakeApi, name: &str) {
    let mut ns = crate::support::fake_api::meta("v1", "Namespace", name, None);
    ns["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    let an_hour_ago = jiff::Timestamp::now().as_second() - 3600;
    let at = jiff::Timestamp::from_second(an_hour_ago).expect("time");
    ns["metadata"]["creationTimestamp"] = json!(at.to_string());
    api.put(&format!("/api/v1/namespaces/{name}"), ns);
}

#[test]
fn a_leftover_made_again_by_another_run_before_the_sweeps_delete_is_kept() {
    let (api, dir) = cluster();
    old_namespace(&api, "calicoctl-win-verify-old");
    // Another run's sweep deletes it and a fresh run makes the same name, between this
    // run's list and its delete.
    let path = "/api/v1/namespaces/calicoctl-win-verify-old".to_owned();
    api.lock().made_again_before_write.insert(path.clone());
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    assert!(r.leftovers_removed.is_empty(), "{r:#?}");
    let kept = api.get(&path).expect("the fresh run's namespace stays");
    assert_eq!(
        kept["metadata"]["uid"],
        "uid-calicoctl-win-verify-old-again"
    );
}

/// The wait for Ready has `--timeout` of its own and the checks' window starts after it: a
/// node Ready after most of `--timeout` (past the window the checks and clean-up would have
/// left of it) is still verified in full, not ended as never Ready.
#[test]
fn a_node_ready_late_still_gets_the_whole_checks_window() {
    let (api, dir) = cluster();
    conditions(&api, "win-a", "False", None);
    let mut o = options(20);
    o.wait_ready = true;
    // One look a second: Ready at the 17th look, after 16 s of the 20, past the 15 s the
    // checks' deadline (20 s less the clean-up's quarter) would have allowed from the start.
    // A scripted event under the server's lock, not the test's thread watching the looks.
    api.when_nth(("GET", "/api/v1/nodes/win-a", 17), |st| {
        let n = st.objects.get_mut("/api/v1/nodes/win-a").expect("node");
        set_conditions(n, "True", Some("True"));
    });
    let r = run(&client(&api, &dir), &o);
    let r = r.expect("the run waits for the node, then runs");
    assert!(r.passed, "{:#?}", r.checks);
    nothing_left(&api);
}

/// `install --verify` and `reconfigure --verify` take `CalicoWindowsReady` True only when
/// written after their start: a True from before the change (its heartbeat older) does not
/// pass the wait, which ends naming why; nothing is made.
#[test]
fn a_calico_ready_written_before_the_commands_start_is_not_taken() {
    let (api, dir) = cluster();
    let start = jiff::Timestamp::now().as_second();
    let before = jiff::Timestamp::from_second(start - 600)
        .expect("time")
        .to_string();
    let path = "/api/v1/nodes/win-a";
    let mut n = api.get(path).expect("node");
    n["status"]["conditions"][1]["lastHeartbeatTime"] = json!(before);
    api.put(path, n);
    let mut o = options(3);
    o.wait_ready = true;
    o.calico_since = Some(start);
    let err = run(&client(&api, &dir), &o).unwrap_err();
    let RunError::Plan(e @ PlanError::NeverReady { .. }) = &err else {
        panic!("{err:?}");
    };
    let said = e.to_string();
    assert!(
        said.contains(
            "CalicoWindowsReady is True but was last written before this command started"
        ),
        "{said}"
    );
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}
