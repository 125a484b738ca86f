//! `verify` against the fake API server's scripted dataplane (tests/support/fake_api/dataplane.rs):
//! a healthy cluster passes every check, each broken layer is named by that layer only, what
//! a run made is gone after it (and a killed run's namespace after the next), and the run's
//! deadline holds.

use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::Cluster;
use calicoctl_win::health::judge::Code;
use calicoctl_win::verify::judge::Outcome;
use calicoctl_win::verify::matrix::CheckId;
use calicoctl_win::verify::run::{Options, Report, run};
use serde_json::json;
use std::collections::BTreeSet;
use std::time::Duration;

pub(crate) fn node(api: &FakeApi, name: &str, os: &str, build: Option<&str>) {
    let mut n = meta("v1", "Node", name, None);
    n["metadata"]["labels"] = json!({"kubernetes.io/os": os});
    if let Some(b) = build {
        n["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!(b);
    }
    n["status"] = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    if os == "windows" {
        // CalicoNode's condition, fresh: a Windows peer is chosen only where it is True.
        let beat = jiff::Timestamp::now().to_string();
        n["status"]["conditions"]
            .as_array_mut()
            .expect("conditions")
            .push(json!({"type": "CalicoWindowsReady", "status": "True",
                "reason": "CalicoHealthy", "lastHeartbeatTime": beat}));
    }
    api.put(&format!("/api/v1/nodes/{name}"), n);
}

/// A cluster of a Linux worker and two Windows Server 2022 nodes, with the API server's
/// `kubernetes` Service.
pub(crate) fn cluster() -> (FakeApi, tempfile::TempDir) {
    let api = FakeApi::start();
    node(&api, "linux-1", "linux", None);
    node(&api, "win-a", "windows", Some("10.0.20348"));
    node(&api, "win-b", "windows", Some("10.0.20348"));
    let mut k = meta("v1", "Service", "kubernetes", Some("default"));
    k["spec"] = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]});
    api.put("/api/v1/namespaces/default/services/kubernetes", k);
    (api, tempfile::tempdir().expect("tempdir"))
}

pub(crate) fn options(timeout_s: u64) -> Options {
    Options {
        node: crate::support::node_name("win-a"),
        image: calicoctl_win::verify::image::AGNHOST.into(),
        egress: None,
        cluster_domain: "cluster.local".into(),
        wait_ready: false,
        calico_since: None,
        timeout: Duration::from_secs(timeout_s),
        keep_on_failure: false,
        suffix: "t1".into(),
        namespace: None,
        while_cordoned: false,
        // Felix's 30 s, shortened: the scripted dataplane applies at once or never.
        policy_wait: Duration::from_secs(3),
        pods_wait: Duration::from_secs(90),
        pull_timeout: Duration::from_secs(600),
        // Felix's and kube-proxy's seconds, shortened: the scripted dataplane is programmed
        // at once unless a test says otherwise.
        settle: Duration::from_secs(2),
        dial_within: Duration::from_secs(10),
        renew: calicoctl_win::verify::options::RENEW,
        stop: calicoctl_win::duration::Stop::new(),
        said: Default::default(),
    }
}

pub(crate) fn verify(api: &FakeApi, dir: &tempfile::TempDir, o: &Options) -> Report {
    run(&client(api, dir), o).expect("run")
}

/// A client of the fake API server, its kubeconfig in `dir`.
pub(crate) fn client(api: &FakeApi, dir: &tempfile::TempDir) -> Cluster {
    crate::support::connect(&api.kubeconfig(dir.path(), None))
}

pub(crate) fn at(s: i64) -> String {
    jiff::Timestamp::from_second(s).expect("time").to_string()
}

/// A run's Lease in `ns`, renewed at `renewed` (unix seconds) for `for_s`, as a run writes it.
pub(crate) fn lease(api: &FakeApi, ns: &str, id: &str, renewed: i64, for_s: i64) {
    let name = format!("calicoctl-win-verify-{id}");
    let mut l = meta("coordination.k8s.io/v1", "Lease", &name, Some(ns));
    l["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify",
        "calicoctl-win.projectcalico.org/verify-run": id});
    l["metadata"]["creationTimestamp"] = json!(at(renewed));
    l["spec"] = json!({"holderIdentity": id, "leaseDurationSeconds": for_s,
        "renewTime": at(renewed)});
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}");
    api.put(&path, l);
}

/// A namespace of a verify run, made at `created` (unix seconds), Terminating or not.
pub(crate) fn ours(api: &FakeApi, name: &str, created: i64, terminating: bool) {
    let mut ns = meta("v1", "Namespace", name, None);
    ns["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    ns["metadata"]["creationTimestamp"] = json!(at(created));
    if terminating {
        ns["metadata"]["deletionTimestamp"] = json!(at(created + 60));
        ns["status"] = json!({"phase": "Terminating"});
    }
    api.put(&format!("/api/v1/namespaces/{name}"), ns);
}

/// The layers (finding codes) the failed checks name, and the failed checks.
pub(crate) fn failed(r: &Report) -> (BTreeSet<Code>, Vec<CheckId>) {
    let mut codes = BTreeSet::new();
    let mut ids = Vec::new();
    for v in &r.checks {
        if let Outcome::Fail { finding } = &v.outcome {
            codes.insert(finding.code);
            ids.push(v.check);
        }
    }
    (codes, ids)
}

/// The run failed `ids`, each by the layer `code` alone.
pub(crate) fn fails_as(r: &Report, code: Code, ids: &[CheckId]) {
    let (codes, failed) = failed(r);
    assert_eq!(codes, BTreeSet::from([code]), "{:#?}", r.checks);
    assert_eq!(failed, ids);
}

/// `o`'s run on a thread of its own: its end, to be awaited.
pub(crate) fn spawn_run(
    api: &FakeApi,
    dir: &tempfile::TempDir,
    o: Options,
) -> std::sync::mpsc::Receiver<Result<Report, calicoctl_win::verify::run::RunError>> {
    let c = client(api, dir);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&c, &o));
    });
    rx
}

/// Waits (up to a minute) until the fake holds the server pod of a run's own namespace: its
/// path.
pub(crate) fn until_pods_made(api: &FakeApi) -> String {
    for _ in 0..1200 {
        let made = api
            .lock()
            .objects
            .keys()
            .find(|k| {
                k.starts_with("/api/v1/namespaces/calicoctl-win-verify-")
                    && k.ends_with("/pods/server")
            })
            .cloned();
        if let Some(path) = made {
            return path;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("the run made no server pod");
}

pub(crate) fn nothing_left(api: &FakeApi) {
    let left: Vec<String> = api
        .lock()
        .objects
        .keys()
        .filter(|k| k.contains("calicoctl-win-verify"))
        .cloned()
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn a_healthy_cluster_passes_every_check_and_nothing_is_left() {
    let (api, dir) = cluster();
    api.lock().dataplane.outside.insert("192.0.2.80:80".into());
    let mut o = options(120);
    o.egress = Some("192.0.2.80:80".into());
    let r = verify(&api, &dir, &o);
    assert!(r.passed, "{:#?}", r.checks);
    assert_eq!(r.checks.len(), 15, "{:#?}", r.checks);
    assert!(r.checks.iter().all(|v| v.outcome == Outcome::Pass));
    assert!(r.skipped.is_empty());
    assert!(r.cleaned_up);
    nothing_left(&api);
    // Only through the pod proxy: no exec.
    assert!(
        api.requests()
            .iter()
            .any(|(_, p)| p.contains("/pods/client-local:8080/proxy/dial"))
    );
    assert!(!api.requests().iter().any(|(_, p)| p.ends_with("/exec")));
}

fn broken(set: impl FnOnce(&mut crate::support::fake_api::dataplane::Dataplane)) -> Report {
    let (api, dir) = cluster();
    set(&mut api.lock().dataplane);
    // The pods' and a dial's waits as `--sim-pace 10` has them: the scripted dataplane
    // answers at once, a pod without an address judged after 4.5 s, not 45.
    let o = Options {
        pods_wait: Duration::from_secs(9),
        dial_within: Duration::from_secs(1),
        ..options(120)
    };
    let r = verify(&api, &dir, &o);
    assert!(!r.passed);
    assert!(r.cleaned_up, "a failed run cleans up too");
    nothing_left(&api);
    r
}

#[test]
fn no_overlay_between_the_oses_is_named_the_overlay_only() {
    let r = broken(|d| d.no_overlay = true);
    // The API server is on Linux: its pod proxy to the Windows server crosses the overlay,
    // and reaches the Linux client.
    fails_as(&r, Code::TrafficOverlay, &[CheckId::ApiToPods]);
}

#[test]
fn no_service_load_balancer_is_named_kube_proxy_only() {
    let r = broken(|d| d.no_service_lb = true);
    fails_as(
        &r,
        Code::TrafficKubeProxy,
        &[CheckId::ClusterIp, CheckId::ApiServer],
    );
}

#[test]
fn no_dns_is_named_dns_only() {
    let r = broken(|d| d.no_dns = true);
    fails_as(
        &r,
        Code::TrafficDns,
        &[CheckId::DnsService, CheckId::DnsKubernetes],
    );
}

#[test]
fn a_policy_never_applied_is_named_felix_and_its_removal_blocked() {
    let r = broken(|d| d.policy_applies_after = None);
    fails_as(&r, Code::TrafficPolicy, &[CheckId::PolicyApplied]);
    let removed = r
        .checks
        .iter()
        .find(|v| v.check == CheckId::PolicyRemoved)
        .unwrap();
    assert_eq!(
        removed.outcome,
        Outcome::Blocked {
            by: CheckId::PolicyApplied
        }
    );
}

#[test]
fn a_policy_never_removed_is_named_felix() {
    let r = broken(|d| d.policy_removed_after = None);
    fails_as(&r, Code::TrafficPolicy, &[CheckId::PolicyRemoved]);
}

#[test]
fn a_pod_stuck_without_an_address_is_the_cnis_with_its_event() {
    let r = broken(|d| {
        d.stuck_on.insert("linux-1".into());
    });
    fails_as(&r, Code::TrafficCni, &[CheckId::PodAddress]);
    let Outcome::Fail { finding } = &r.checks[1].outcome else {
        panic!()
    };
    assert!(
        finding.message.contains("FailedCreatePodSandBox"),
        "{}",
        finding.message
    );
}

/// A sandbox failure the kubelet's retry mends is not the CNI's failure: the run waits for
/// the retry (within half the pods' wait) and passes.
#[test]
fn a_sandbox_failure_the_kubelet_retries_is_not_an_answer() {
    let (api, dir) = cluster();
    {
        let d = &mut api.lock().dataplane;
        d.stuck_on.insert("linux-1".into());
        d.sandbox_retried_after = Some(Duration::from_secs(2));
    }
    let r = verify(&api, &dir, &options(60));
    assert!(r.passed, "{:#?}", r.checks);
    nothing_left(&api);
}

#[test]
fn the_overall_timeout_holds_and_the_run_still_cleans_up() {
    let (api, dir) = cluster();
    // A name's lookup outlasts the run's deadline.
    hang_dns(&api);
    let r = verify(&api, &dir, &options(2));
    assert!(r.timed_out, "{:#?}", r.checks);
    assert!(!r.passed);
    assert!(r.cleaned_up);
    // Every check planned is in the report: a check the deadline cut, or never reached, as
    // not run for it (JSON `timed-out`), in `checks` and in the table.
    let listed: BTreeSet<CheckId> = r
        .checks
        .iter()
        .map(|v| v.check)
        .chain(r.skipped.iter().map(|s| s.id))
        .collect();
    assert_eq!(
        listed.len(),
        CheckId::PolicyRemoved as usize + 1,
        "{:#?}",
        r.checks
    );
    assert!(listed.contains(&CheckId::DnsKubernetes) && listed.contains(&CheckId::PolicyRemoved));
    let cut: Vec<CheckId> = r
        .checks
        .iter()
        .filter(|v| v.outcome == Outcome::TimedOut)
        .map(|v| v.check)
        .collect();
    assert!(cut.contains(&CheckId::PolicyRemoved), "{:#?}", r.checks);
    let doc = serde_json::to_value(&r).expect("json");
    assert!(
        doc["checks"]
            .to_string()
            .contains(r#""result":"timed-out""#),
        "{doc}"
    );
    nothing_left(&api);
}

fn hang_dns(api: &FakeApi) {
    let d = &mut api.lock().dataplane;
    d.dns_hangs = true;
    d.slow_for = Duration::from_secs(60);
}

#[test]
fn a_server_never_ready_within_default_waits_is_named_not_timed_out() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    // The default pods' wait (90 s) is longer than this --timeout: it is capped at half the
    // checks' window, and the pods are judged as they are.
    let r = verify(&api, &dir, &options(12));
    fails_as(&r, Code::TrafficFirewall, &[CheckId::KubeletProbe]);
    nothing_left(&api);
}

#[test]
fn failed_checks_before_the_deadline_are_reported_not_the_timeout() {
    let (api, dir) = cluster();
    {
        let d = &mut api.lock().dataplane;
        d.no_service_lb = true;
        d.policy_removed_after = None;
    }
    // The policy's removal is waited for past the run's deadline.
    let mut o = options(15);
    o.policy_wait = Duration::from_secs(60);
    let r = verify(&api, &dir, &o);
    assert!(r.timed_out, "{:#?}", r.checks);
    let (codes, _) = failed(&r);
    assert!(codes.contains(&Code::TrafficKubeProxy), "{:#?}", r.checks);
    let end = calicoctl_win::verify::failure::of(&r, 15).expect("not passing");
    let said = end.to_string();
    assert!(
        matches!(
            end,
            calicoctl_win::verify::failure::Failed::NotPassing { .. }
        ),
        "{said}"
    );
    assert!(said.contains("cluster-ip"), "{said}");
    assert!(said.contains("1 checks not judged"), "{said}");
    nothing_left(&api);
}

#[test]
fn a_killed_runs_namespace_is_removed_by_the_next_run_and_only_ours() {
    let (api, dir) = cluster();
    let mut old = meta("v1", "Namespace", "calicoctl-win-verify-old", None);
    old["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    api.put("/api/v1/namespaces/calicoctl-win-verify-old", old.clone());
    let mut pod = meta("v1", "Pod", "server", Some("calicoctl-win-verify-old"));
    pod["spec"] = json!({"nodeName": "win-a"});
    api.put(
        "/api/v1/namespaces/calicoctl-win-verify-old/pods/server",
        pod,
    );
    // A namespace of someone else's, and one named like ours without our label: kept.
    old["metadata"]["name"] = json!("team-a");
    api.put("/api/v1/namespaces/team-a", old);
    let plain = meta("v1", "Namespace", "calicoctl-win-verify-mine", None);
    api.put("/api/v1/namespaces/calicoctl-win-verify-mine", plain);
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    assert_eq!(r.leftovers_removed, ["calicoctl-win-verify-old"]);
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-old")
            .is_none()
    );
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-old/pods/server")
            .is_none()
    );
    assert!(api.get("/api/v1/namespaces/team-a").is_some());
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-mine")
            .is_some()
    );
}

#[test]
fn a_run_cut_off_by_a_failed_write_deletes_what_it_made() {
    let (api, dir) = cluster();
    // Writes: the namespace, the Service, the server pod, then the local client: refused.
    api.fail_write_at(4);
    let c = client(&api, &dir);
    let err = run(&c, &options(120)).unwrap_err();
    assert!(
        err.to_string().contains("pods") || format!("{err:?}").contains("500"),
        "{err:?}"
    );
    nothing_left(&api);
}

#[test]
fn a_server_the_kubelet_never_reaches_is_the_firewall_only() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let mut o = options(120);
    o.pods_wait = Duration::from_secs(2);
    let r = verify(&api, &dir, &o);
    fails_as(&r, Code::TrafficFirewall, &[CheckId::KubeletProbe]);
    assert!(!r.timed_out);
    nothing_left(&api);
}

#[test]
fn an_interrupted_run_stops_and_deletes_what_it_made() {
    let (api, dir) = cluster();
    let o = options(120);
    o.stop.request();
    let r = verify(&api, &dir, &o);
    assert!(r.interrupted && !r.passed && !r.timed_out, "{r:#?}");
    assert!(r.cleaned_up);
    nothing_left(&api);
}

#[test]
fn a_terminating_leftover_is_not_deleted_again() {
    let (api, dir) = cluster();
    let now = jiff::Timestamp::now().as_second();
    // A killed run's namespace, old, still Terminating.
    ours(&api, "calicoctl-win-verify-old", now - 3600, true);
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    assert!(
        r.leftovers_removed.is_empty(),
        "being deleted: not deleted again"
    );
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-old")
            .is_some()
    );
    assert!(
        api.get(&format!("/api/v1/namespaces/{}", r.namespace))
            .is_none()
    );
}

#[test]
fn a_leftover_is_old_by_the_api_servers_clock_not_this_hosts() {
    let (api, dir) = cluster();
    // The API server's clock is a day behind this host's.
    let skew = -86_400;
    api.lock().clock_offset_s = skew;
    let server_now = jiff::Timestamp::now().as_second() + skew;
    ours(&api, "calicoctl-win-verify-young", server_now - 60, false);
    ours(&api, "calicoctl-win-verify-old", server_now - 3600, false);
    let r = verify(&api, &dir, &options(120));
    assert_eq!(r.leftovers_removed, ["calicoctl-win-verify-old"], "{r:#?}");
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-young")
            .is_some()
    );
}

#[test]
fn a_slow_image_pull_is_its_own_phase_and_not_the_runs_timeout() {
    let (api, dir) = cluster();
    api.lock().dataplane.pull_takes = Some(Duration::from_secs(8));
    let r = verify(&api, &dir, &options(6));
    assert!(r.passed && !r.timed_out, "{:#?}", r.checks);
    assert_eq!(r.checks[0].check, CheckId::ImagePull);
    assert_eq!(r.checks[0].outcome, Outcome::Pass);
    nothing_left(&api);
}

#[test]
fn a_pull_past_its_limit_is_the_images_only() {
    let (api, dir) = cluster();
    api.lock().dataplane.pull_takes = Some(Duration::MAX);
    let mut o = options(120);
    o.pull_timeout = Duration::from_secs(2);
    o.pods_wait = Duration::from_secs(5);
    let r = verify(&api, &dir, &o);
    fails_as(&r, Code::TrafficImage, &[CheckId::ImagePull]);
    assert!(!r.timed_out);
    nothing_left(&api);
}

#[test]
fn a_client_whose_container_does_not_run_is_the_images_not_the_overlays() {
    let r = broken(|d| {
        d.crash_on.insert("linux-1".into());
    });
    fails_as(&r, Code::TrafficImage, &[CheckId::PodAddress]);
    let w2l = r
        .checks
        .iter()
        .find(|v| v.check == CheckId::WindowsToLinux)
        .unwrap();
    assert_eq!(
        w2l.outcome,
        Outcome::Blocked {
            by: CheckId::PodAddress
        }
    );
}

#[test]
fn a_refused_pod_proxy_is_a_missing_right_not_the_overlay() {
    let (api, dir) = cluster();
    api.forbid("get", "pods/proxy");
    let c = client(&api, &dir);
    let err = run(&c, &options(120)).unwrap_err();
    let calicoctl_win::verify::run::RunError::Cluster(e) = &err else {
        panic!("{err:?}")
    };
    assert!(
        matches!(
            e,
            calicoctl_win::cluster::ClusterError::Api { code: 403, .. }
        ),
        "{e:?}"
    );
    assert!(e.hint().contains("get pods/proxy"), "{}", e.hint());
    nothing_left(&api);
}

#[test]
fn a_dns_lookup_that_never_returns_is_dns_not_the_proxy() {
    let (api, dir) = cluster();
    {
        let d = &mut api.lock().dataplane;
        d.dns_hangs = true;
        d.slow_for = Duration::from_secs(12);
    }
    let mut o = options(120);
    o.dial_within = Duration::from_secs(1);
    let r = verify(&api, &dir, &o);
    fails_as(
        &r,
        Code::TrafficDns,
        &[CheckId::DnsService, CheckId::DnsKubernetes],
    );
}

#[test]
fn no_path_from_the_api_server_to_the_pods_is_the_control_planes_and_the_rest_not_run() {
    let r = broken(|d| d.proxy_broken = true);
    fails_as(&r, Code::TrafficControlPlane, &[CheckId::ApiToPods]);
    let p2p = r
        .checks
        .iter()
        .find(|v| v.check == CheckId::PodToPod)
        .unwrap();
    assert_eq!(
        p2p.outcome,
        Outcome::Blocked {
            by: CheckId::ApiToPods
        }
    );
}

#[test]
fn a_new_endpoint_is_dialled_again_within_the_settle_window() {
    let (api, dir) = cluster();
    api.lock().dataplane.programmed_after = Duration::from_secs(3);
    let mut o = options(120);
    o.settle = Duration::from_secs(20);
    let r = verify(&api, &dir, &o);
    assert!(r.passed, "{:#?}", r.checks);
    let p2p = r
        .checks
        .iter()
        .find(|v| v.check == CheckId::PodToPod)
        .unwrap();
    assert!(p2p.attempts > 1, "{p2p:?}");
}

#[test]
fn the_policy_delay_is_counted_to_the_refused_dial_not_its_timeout() {
    let (api, dir) = cluster();
    // A dial that reaches nothing comes back after netexec's timeout, shortened.
    api.lock().dataplane.refused_takes = Duration::from_secs(3);
    let mut o = options(120);
    o.policy_wait = Duration::from_secs(10);
    let r = verify(&api, &dir, &o);
    assert!(r.passed, "{:#?}", r.checks);
    let applied = r
        .checks
        .iter()
        .find(|v| v.check == CheckId::PolicyApplied)
        .unwrap();
    let delay = applied.delay_ms.expect("a delay");
    assert!(delay < 3000, "the dial's own timeout counted: {applied:?}");
    assert!(applied.took_ms >= 3000, "{applied:?}");
}

#[test]
fn a_namespace_that_stays_terminating_does_not_hold_the_run_past_its_timeout() {
    let (api, dir) = cluster();
    api.lock().dataplane.namespaces_linger = true;
    let r = verify(&api, &dir, &options(8));
    assert!(r.passed, "{:#?}", r.checks);
    assert!(!r.cleaned_up, "still Terminating");
    assert!(r.took_ms < 20_000, "{}", r.took_ms);
}

/// The command itself, through the binary: its document and exit codes.
mod command {
    use super::*;
    use crate::support::Node;

    #[test]
    fn a_healthy_node_exits_0_with_every_check_in_its_document() {
        let (api, _dir) = cluster();
        let node = Node::new(&api);
        let (code, doc, stderr) = node.run(&["verify", "--node", "win-a"]);
        assert_eq!(code, 0, "{stderr}\n{doc:#}");
        assert_eq!(doc["passed"], true);
        // A check cut by a stop is `stopped` since schema 2, by the deadline `timed-out` since
        // 3 (output::VERIFY_SCHEMA).
        assert_eq!(doc["schema"], 3);
        let doc = &doc["nodes"][0];
        assert_eq!(doc["node"], "win-a");
        assert_eq!(
            doc["checks"][1],
            json!({"check": "pod-address", "result": "pass",
            "took_ms": doc["checks"][1]["took_ms"]})
        );
        assert_eq!(doc["checks"].as_array().map(Vec::len), Some(14));
        assert_eq!(doc["skipped"][0]["id"], "egress");
        assert_eq!(doc["cleaned_up"], true);
        nothing_left(&api);
    }

    #[test]
    fn a_broken_overlay_exits_1_naming_the_layer() {
        let (api, _dir) = cluster();
        api.lock().dataplane.no_overlay = true;
        let node = Node::new(&api);
        let (code, doc, stderr) = node.run(&["verify", "--node", "win-a", "--sim-pace", "10"]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        let failed: Vec<&serde_json::Value> = doc["nodes"][0]["checks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["result"] == "fail")
            .collect();
        // The pod proxy to the Windows server crosses the overlay: api-to-pods names it.
        assert_eq!(failed.len(), 1, "{doc:#}");
        assert_eq!(failed[0]["check"], "api-to-pods", "{doc:#}");
        assert!(
            failed
                .iter()
                .all(|c| c["finding"]["code"] == "traffic-overlay")
        );
        assert!(
            failed[0]["finding"]["remedy"]
                .as_str()
                .unwrap()
                .contains("UDP 4789")
        );
        assert!(
            stderr.contains("does not pass traffic: api-to-pods"),
            "{stderr}"
        );
        nothing_left(&api);
    }

    #[test]
    fn several_nodes_are_verified_each_with_its_own_server_in_one_report() {
        let (api, _dir) = cluster();
        api.lock().dataplane.no_service_lb = true;
        let node = Node::new(&api);
        let (code, doc, stderr) = node.run(&[
            "verify",
            "--node",
            "win-a",
            "--node",
            "win-b",
            "--sim-pace",
            "10",
        ]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        let nodes = doc["nodes"].as_array().expect("nodes");
        let names: Vec<&str> = nodes.iter().filter_map(|n| n["node"].as_str()).collect();
        assert_eq!(names, ["win-a", "win-b"]);
        assert_ne!(nodes[0]["namespace"], nodes[1]["namespace"]);
        assert!(
            stderr.contains("win-a (") && stderr.contains("win-b ("),
            "{stderr}"
        );
        nothing_left(&api);
    }

    /// `--sim-pace` shortens verify's waits only on a simulated host, as `--sim-fault` acts.
    #[test]
    fn a_pace_without_a_simulated_host_is_refused() {
        let out = crate::support::cmd()
            .args(["--sim-pace", "10", "verify", "--node", "win-a"])
            .output()
            .expect("run");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains("--sim-pace needs a simulated host"),
            "{stderr}"
        );
    }

    /// Ctrl-C (SIGINT) in the middle of a run: the run stops and deletes its namespace.
    #[cfg(unix)]
    #[test]
    fn ctrl_c_in_the_middle_deletes_what_the_run_made() {
        let (api, _dir) = cluster();
        // The server never gets Ready: the run waits for it until the signal.
        api.lock().dataplane.never_ready = true;
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = api.kubeconfig(dir.path(), None);
        let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
            .args(["verify", "--node", "win-a", "-o", "json", "--kubeconfig"])
            .arg(&kubeconfig)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("spawn");
        let made = |api: &FakeApi| {
            api.lock()
                .objects
                .keys()
                .any(|k| k.contains("calicoctl-win-verify") && k.contains("/pods/server"))
        };
        for _ in 0..600 {
            if made(&api) {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(made(&api), "the run made its pods");
        let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("signal");
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("was interrupted"), "{stderr}");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(doc["nodes"][0]["interrupted"], true);
        assert_eq!(doc["nodes"][0]["cleaned_up"], true);
        nothing_left(&api);
    }

    #[test]
    fn the_overall_timeout_exits_4_and_a_linux_node_is_bad_usage() {
        let (api, _dir) = cluster();
        // The policy is never enforced: its 30 s wait is cut by the deadline (no verdict).
        api.lock().dataplane.policy_applies_after = None;
        let node = Node::new(&api);
        let (code, doc, stderr) = node.run(&["verify", "--node", "win-a", "--timeout", "10s"]);
        assert_eq!(code, 4, "{stderr}\n{doc:#}");
        assert_eq!(doc["nodes"][0]["timed_out"], true);
        nothing_left(&api);
        let (code, _, stderr) = node.run(&["verify", "--node", "linux-1"]);
        assert_eq!(code, 2, "{stderr}");
        assert!(stderr.contains("not a Windows node"), "{stderr}");
    }
}

/// `install --verify`: the install, then `verify` for the node; a node that does not pass
/// traffic fails the command and the install stays.
pub(crate) mod install {
    use super::*;
    use crate::support::Node;

    pub(crate) fn installed_cluster() -> Node {
        let node = Node::healthy().release("3.30.2", "calico-node.exe").build();
        let api = node.api();
        let mut win = api.get("/api/v1/nodes/win-1").expect("win-1");
        win["metadata"]["labels"]["node.kubernetes.io/windows-build"] = json!("10.0.20348");
        // kubelet's Ready, and the condition CalicoNode sets once it looks (the simulated
        // host runs no CalicoNode): `install --verify` waits for both, the condition written
        // after the command's start (an hour ahead here: after any start).
        let later = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() + 3600)
            .expect("time")
            .to_string();
        win["status"]["conditions"] = json!([{"type": "Ready", "status": "True"},
            {"type": "CalicoWindowsReady", "status": "True", "reason": "CalicoReady",
                "lastHeartbeatTime": later}]);
        api.put("/api/v1/nodes/win-1", win);
        node_object(api, "linux-1");
        let mut k = meta("v1", "Service", "kubernetes", Some("default"));
        k["spec"] = json!({"clusterIP": "10.96.0.1", "ports": [{"port": 443}]});
        api.put("/api/v1/namespaces/default/services/kubernetes", k);
        node
    }

    fn node_object(api: &FakeApi, name: &str) {
        super::node(api, name, "linux", None);
    }

    #[test]
    fn install_verify_reports_the_nodes_traffic_in_its_document() {
        let node = installed_cluster();
        let (code, doc, stderr) = node.install_local(&["--verify"]);
        assert_eq!(code, 0, "{stderr}\n{doc:#}");
        assert_eq!(doc["schema"], 3, "{doc:#}");
        assert_eq!(doc["changed"], true, "{doc:#}");
        assert_eq!(
            doc["verify"]["checks"].as_array().map(Vec::len),
            Some(13),
            "{doc:#}"
        );
        assert_eq!(doc["verify"]["passed"], true, "{doc:#}");
        assert_eq!(doc["verify"]["node"], "win-1");
        assert_eq!(doc["verify"]["cleaned_up"], true);
        nothing_left(node.api());
    }

    #[test]
    fn install_verify_takes_a_mirror_of_the_probe_image() {
        let node = installed_cluster();
        let (code, doc, stderr) =
            node.install_local(&["--verify", "--verify-image", "mirror.local/agnhost:2.52"]);
        assert_eq!(code, 0, "{stderr}\n{doc:#}");
        assert_eq!(doc["verify"]["image"], "mirror.local/agnhost:2.52");
        nothing_left(node.api());
    }

    #[test]
    fn verify_on_the_node_joins_its_own_health() {
        let node = installed_cluster();
        let (code, _, stderr) = node.install_local(&[]);
        assert_eq!(code, 0, "{stderr}");
        node.edit_state(|s| {
            s["services"]["calicofelix"]["state"] = json!("stopped");
            s["services"]["calicofelix"]["pid"] = json!(null);
        });
        let (_, doc, stderr) = node.run(&["verify", "--sim-pace", "10"]);
        let health = doc["nodes"][0]["node_health"].to_string();
        assert!(health.contains("service-not-running"), "{stderr}\n{doc:#}");
        nothing_left(node.api());
        // A failing check whose layer the stopped Felix explains (Felix programs the routes
        // to the other nodes' pods): the finding is joined to it, and the failure says so.
        node.api().lock().dataplane.no_overlay = true;
        let (code, doc, stderr) = node.run(&["verify", "--sim-pace", "10"]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        explained_by_felix(&doc["nodes"][0], &stderr, "service-not-running");
        nothing_left(node.api());
    }

    /// The report's failing overlay check carries the node's own finding about CalicoFelix
    /// (`code`), and so does the error that ends the command.
    pub(super) fn explained_by_felix(report: &serde_json::Value, stderr: &str, code: &str) {
        let explained = &report["explained"][0];
        assert_eq!(explained["check"], "api-to-pods", "{report:#}");
        assert_eq!(explained["by"][0]["code"], code, "{report:#}");
        assert_eq!(explained["by"][0]["subject"], "CalicoFelix", "{report:#}");
        assert!(
            stderr.contains("api-to-pods (this node: ") && stderr.contains(&format!("[{code}])")),
            "{stderr}"
        );
    }

    /// `install --verify` and `reconfigure --verify` join the node's own findings as `verify`
    /// on the node does.
    #[test]
    fn install_and_reconfigure_verify_join_the_nodes_own_findings_to_the_failures() {
        let node = installed_cluster();
        let (code, _, stderr) = node.install_local(&[]);
        assert_eq!(code, 0, "{stderr}");
        // Felix runs and is not ready (a change that restarts Felix would wait for it:
        // verify_gates.rs).
        node.edit_state(|s| s["settings"]["felix_health"] = json!("not-ready"));
        node.api().lock().dataplane.no_overlay = true;
        let (code, doc, stderr) = node.run(&[
            "reconfigure",
            "--verify",
            "--sim-pace",
            "10",
            "--set",
            // confd does not run on a VXLAN node: no service restarts.
            "extra_env.confd.CALICO_X=1",
        ]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        explained_by_felix(&doc["verify"], &stderr, "felix-unhealthy");
        nothing_left(node.api());
        let (code, doc, stderr) = node.install_local(&["--verify", "--sim-pace", "10"]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        explained_by_felix(&doc["verify"], &stderr, "felix-unhealthy");
        nothing_left(node.api());
    }

    #[test]
    fn install_verify_fails_on_a_node_without_traffic_and_the_install_stays() {
        let node = installed_cluster();
        node.api().lock().dataplane.no_service_lb = true;
        let (code, doc, stderr) = node.install_local(&["--verify", "--sim-pace", "10"]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        assert!(
            stderr.contains("installed, but the node does not pass traffic"),
            "{stderr}"
        );
        assert_eq!(doc["verify"]["passed"], false);
        assert!(
            doc["verify"]["checks"]
                .to_string()
                .contains("traffic-kube-proxy")
        );
        // The install stays: status finds it installed.
        let (_, status, _) = node.run(&["status"]);
        assert_eq!(status["installed"], true, "{status:#}");
        assert_eq!(status["calico_version"], "3.30.2", "{status:#}");
        nothing_left(node.api());
    }
}

/// `reconfigure --verify`: the change, then `verify` for the node.
mod reconfigure {
    use super::*;

    /// A reconfigure that does not restart CalicoNode takes its condition as it is: CalicoNode
    /// writes one at its start and every five minutes, so one written before the command is
    /// the node's as it is now (asking for a newer one would wait out --timeout). One that
    /// restarts CalicoNode waits for a condition written since (checked in verify_guards).
    #[test]
    fn reconfigure_verify_without_a_calico_node_restart_takes_the_condition_as_it_is() {
        let node = super::install::installed_cluster();
        let (code, _, stderr) = node.install_local(&[]);
        assert_eq!(code, 0, "{stderr}");
        let api = node.api();
        let mut win = api.get("/api/v1/nodes/win-1").expect("win-1");
        let before = jiff::Timestamp::from_second(jiff::Timestamp::now().as_second() - 120)
            .expect("time")
            .to_string();
        win["status"]["conditions"][1]["lastHeartbeatTime"] = json!(before);
        api.put("/api/v1/nodes/win-1", win);
        let (code, doc, stderr) = node.run(&[
            "reconfigure",
            "--verify",
            "--set",
            // confd does not run on a VXLAN node: only the install record changes.
            "extra_env.confd.CALICO_X=1",
        ]);
        assert_eq!(code, 0, "{stderr}\n{doc:#}");
        let started: Vec<String> = doc["actions"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|a| {
                a["description"]
                    .as_str()
                    .is_some_and(|d| d.starts_with("start service"))
            })
            .map(|a| a["description"].to_string())
            .collect();
        assert!(
            !started.iter().any(|s| s.contains("CalicoNode")),
            "this change restarts CalicoNode: {started:?}"
        );
        assert_eq!(doc["verify"]["passed"], true, "{doc:#}");
    }

    #[test]
    fn reconfigure_verify_fails_on_a_node_without_dns_and_the_change_stays() {
        let node = super::install::installed_cluster();
        let (code, _, stderr) = node.install_local(&[]);
        assert_eq!(code, 0, "{stderr}");
        node.api().lock().dataplane.no_dns = true;
        let (code, doc, stderr) = node.run(&[
            "reconfigure",
            "--verify",
            "--sim-pace",
            "10",
            "--set",
            "logs.felix_screen_severity=debug",
        ]);
        assert_eq!(code, 1, "{stderr}\n{doc:#}");
        assert!(
            stderr.contains("reconfigured, but the node does not pass traffic"),
            "{stderr}"
        );
        assert_eq!(doc["changed"], true, "{doc:#}");
        assert!(
            doc["verify"]["checks"].to_string().contains("traffic-dns"),
            "{doc:#}"
        );
        nothing_left(node.api());
        node.api().lock().dataplane.no_dns = false;
        let (code, doc, stderr) = node.run(&[
            "reconfigure",
            "--verify",
            "--sim-pace",
            "10",
            "--set",
            "logs.felix_screen_severity=info",
        ]);
        assert_eq!(code, 0, "{stderr}\n{doc:#}");
        assert_eq!(doc["verify"]["passed"], true, "{doc:#}");
    }
}
