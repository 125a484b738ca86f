//! What `verify` judges before its checks: the node under test tainted so that no probe pod
//! can run there (refused before anything is made), a probe pod kube-scheduler places nowhere
//! (named by the scheduling layer, not the CNI), and the fleet Plan's verify waiting for
//! CalicoNode's word on the node it just changed.

use super::verify::{client, cluster, fails_as, nothing_left, options, verify};
use crate::support::fake_api::FakeApi;
use calicoctl_win::error::Diagnose;
use calicoctl_win::health::judge::Code;
use calicoctl_win::verify::judge::Outcome;
use calicoctl_win::verify::matrix::{CheckId, PlanError};
use calicoctl_win::verify::run::{RunError, run};
use serde_json::json;
use std::time::Duration;

fn taint(api: &FakeApi, node: &str, taints: serde_json::Value) {
    let path = format!("/api/v1/nodes/{node}");
    let mut n = api.get(&path).expect("node");
    n["spec"]["taints"] = taints;
    api.put(&path, n);
}

/// A `NoExecute` taint on the node under test that the probe pods do not tolerate (a node
/// out of service) is refused by name before anything is made: no namespace, no pod.
#[test]
fn a_node_under_test_with_an_untolerated_no_execute_taint_is_refused_before_anything() {
    let (api, dir) = cluster();
    taint(
        &api,
        "win-a",
        json!([{"key": "os", "value": "windows", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown",
             "effect": "NoExecute"}]),
    );
    let err = run(&client(&api, &dir), &options(120)).unwrap_err();
    let RunError::Plan(e @ PlanError::Tainted { .. }) = &err else {
        panic!("{err:?}");
    };
    let said = e.to_string();
    assert!(
        said.contains("node.kubernetes.io/out-of-service=nodeshutdown:NoExecute"),
        "{said}"
    );
    let hint = e.diagnose().and_then(|d| d.hint).unwrap_or_default();
    assert!(hint.contains("kubectl taint nodes win-a"), "{hint}");
    assert!(api.writes().is_empty(), "{:?}", api.writes());
}

/// A probe pod kube-scheduler places on no node (the node holds all the pods it may) fails
/// `pod-address` by the scheduling layer with the scheduler's words, and only that layer:
/// the CNI plugin never saw the pod.
#[test]
fn a_pod_the_scheduler_places_nowhere_is_named_scheduling_not_the_cni() {
    let (api, dir) = cluster();
    api.lock().dataplane.full.insert("win-a".into());
    let mut o = options(120);
    // The wait for the pods ends at its own limit: the scheduler's answer does not change.
    o.pods_wait = Duration::from_secs(4);
    let r = verify(&api, &dir, &o);
    assert!(!r.passed);
    fails_as(&r, Code::TrafficScheduling, &[CheckId::PodAddress]);
    let v = r.checks.iter().find(|v| v.check == CheckId::PodAddress);
    let Some(Outcome::Fail { finding }) = v.map(|v| &v.outcome) else {
        panic!("{:#?}", r.checks)
    };
    assert!(
        finding.message.contains("was not scheduled on win-a")
            && finding.message.contains("Too many pods"),
        "{}",
        finding.message
    );
    nothing_left(&api);
}

/// No probe namespace nor object was made.
fn nothing_made(api: &FakeApi) {
    let made: Vec<String> = (api.requests().into_iter())
        .filter(|(m, p)| {
            m == "POST" && (p == "/api/v1/namespaces" || p.contains("calicoctl-win-verify"))
        })
        .map(|(_, p)| p)
        .collect();
    assert!(made.is_empty(), "{made:?}");
}

fn calico_ready(api: &FakeApi, node: &str, status: &str, age_s: i64) {
    let path = format!("/api/v1/nodes/{node}");
    let mut n = api.get(&path).expect("node");
    let beat = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() - age_s)
        .expect("time")
        .to_string();
    n["spec"]["unschedulable"] = json!(true);
    n["status"]["conditions"] = json!([{"type": "Ready", "status": "True"},
        {"type": "CalicoWindowsReady", "status": status, "reason": "CalicoHealthy",
         "lastHeartbeatTime": beat}]);
    api.put(&path, n);
}

/// The fleet Plan's verify (`--while-cordoned`, the node cordoned for its change) waits for
/// CalicoNode's word on the node before its checks: a `CalicoWindowsReady` False, or True but
/// not fresh (an hour old, run away from the node), ends the run at its timeout naming the
/// wait, with nothing made; a fresh True lets it run and pass.
#[test]
fn the_plans_verify_waits_for_a_fresh_calico_ready_before_its_checks() {
    let (api, _dir) = cluster();
    let node = crate::support::Node::new(&api);
    let args = [
        "verify",
        "--node",
        "win-a",
        "--while-cordoned",
        "--timeout",
        "3s",
    ];
    for (status, age) in [("False", 0), ("True", 3600)] {
        calico_ready(&api, "win-a", status, age);
        let (code, _doc, stderr) = node.run(&args);
        assert_eq!(code, 4, "{status} {age}: {stderr}");
        assert!(
            stderr.contains("node win-a was waited for")
                && stderr.contains("CalicoWindowsReady is"),
            "{stderr}"
        );
        assert!(api.writes().is_empty(), "{:?}", api.writes());
    }
    calico_ready(&api, "win-a", "True", 0);
    let (code, doc, stderr) = node.run(&["verify", "--node", "win-a", "--while-cordoned"]);
    assert_eq!(code, 0, "{stderr}\n{doc:#}");
    nothing_left(&api);
}

/// `reconfigure --verify` after a change that restarts Felix waits, within verify's
/// `--timeout` (120 s; 3 s here, by the hidden `--verify-timeout`), for Felix's own readiness
/// (its first dataplane apply) before any check: a Felix never ready ends it naming that
/// wait, with no probe namespace made. (Without the wait the checks ran at once against a
/// Felix still starting.)
#[test]
fn a_restarted_felix_never_ready_ends_reconfigure_verify_before_any_check() {
    let node = super::verify::install::installed_cluster();
    let (code, _, stderr) = node.install_local(&[]);
    assert_eq!(code, 0, "{stderr}");
    node.edit_state(|s| s["settings"]["felix_health"] = json!("not-ready"));
    let (code, doc, stderr) = node.run(&[
        "reconfigure",
        "--verify",
        "--verify-timeout=3s",
        "--set",
        "logs.felix_screen_severity=debug",
    ]);
    assert_eq!(code, 4, "{stderr}\n{doc:#}");
    assert!(
        stderr.contains("not ready: Felix's /readiness on 127.0.0.1:9099"),
        "{stderr}"
    );
    nothing_made(node.api());
}

/// `install --verify` that starts kube-proxy on a node being removed: kube-proxy's `/healthz`
/// answers 503 with `"nodeEligible": false` (kubernetes `pkg/proxy/healthcheck/proxy_health.go`
/// `healthzHandler`, the Node deleted or tainted `ToBeDeletedByClusterAutoscaler`). The wait
/// names that case by its code at the first answer, neither waiting its timeout nor making
/// any probe object. (Before, it waited the whole `--timeout` and named a 503 only.)
#[test]
fn a_node_being_removed_ends_install_verify_at_kube_proxys_first_answer() {
    let node = super::verify::install::installed_cluster();
    let exe = node.c_drive("k/kube-proxy.exe");
    fs_err::create_dir_all(exe.parent().expect("C:\\k")).expect("C:\\k");
    fs_err::write(&exe, "kube-proxy v1.33.2 (simulated)\n").expect("kube-proxy.exe");
    // A first look makes the simulated host's state.
    node.run(&["status"]);
    node.edit_state(|s| s["settings"]["kube_proxy_node_ineligible"] = json!(true));
    let (code, doc, stderr) =
        node.install_local(&["--verify", "--set", r"kube_proxy.path=C:\k\kube-proxy.exe"]);
    assert_eq!(code, 1, "{stderr}\n{doc:#}");
    assert!(stderr.contains("[node-being-removed]"), "{stderr}");
    assert!(
        stderr.contains(
            "node win-1 has a deletion timestamp or the ToBeDeletedByClusterAutoscaler taint"
        ),
        "{stderr}"
    );
    // The taint can outlive a scale-down the autoscaler gave up: the hint says how a node
    // that stays sheds it.
    assert!(
        stderr.contains("kubectl taint node NODE ToBeDeletedByClusterAutoscaler-"),
        "{stderr}"
    );
    // Ended at the first look: a wait that looked again says it waits (`poll_until`).
    assert!(
        !stderr.contains("waiting up to") && !stderr.contains("gave up waiting"),
        "{stderr}"
    );
    nothing_made(node.api());
}
