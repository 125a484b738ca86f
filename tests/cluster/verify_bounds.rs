//! `verify`'s lease and clean-up under a cluster that refuses or stalls: a renewal refused
//! before any pod refuses the run, renewals refused until the lease would run out stop it
//! with a finding, a namespace kept after a cluster error is marked so no sweep takes it,
//! an API server without `Date` gets no lease (its namespace judged by its age), and a run
//! stopped while the server answers slowly returns within the 5 s a HostProcess container's
//! process is left, saying what it left for the next run.

use super::verify::{at, client, cluster, options, until_pods_made};
use crate::support::fake_api::FakeApi;
use calicoctl_win::health::judge::Code;
use calicoctl_win::verify::judge::Outcome;
use calicoctl_win::verify::keeper::server_time;
use calicoctl_win::verify::matrix::{PlanError, RunError};
use calicoctl_win::verify::objects::KEPT;
use calicoctl_win::verify::run::run;
use serde_json::json;
use std::time::{Duration, Instant};

/// The run's namespaces on the fake, by path.
fn our_namespaces(api: &FakeApi) -> Vec<String> {
    api.lock()
        .objects
        .keys()
        .filter(|k| k.starts_with("/api/v1/namespaces/calicoctl-win-verify-"))
        .filter(|k| k.matches('/').count() == 4)
        .cloned()
        .collect()
}

/// An identity that may not update leases cannot renew the run's Lease: the run refuses
/// before any pod (its first renewal), deletes the namespace it just made and says why.
#[test]
fn a_refused_first_renewal_refuses_the_run_before_any_pod() {
    let (api, dir) = cluster();
    api.forbid("update", "leases");
    let c = client(&api, &dir);
    let err = run(&c, &options(120)).expect_err("refused");
    let RunError::Plan(PlanError::LeaseLost { lease, cause, fate }) = &err else {
        panic!("{err:?}");
    };
    assert!(
        lease.starts_with("leases/calicoctl-win-verify-t1 in namespace calicoctl-win-verify-"),
        "{lease}"
    );
    assert!(cause.contains("403"), "{cause}");
    assert!(fate.contains("deleted at once"), "{fate}");
    assert!(
        !api.requests()
            .iter()
            .any(|(m, p)| m == "POST" && p.ends_with("/pods")),
        "no pod made"
    );
    assert!(
        our_namespaces(&api).is_empty(),
        "{:?}",
        our_namespaces(&api)
    );
}

/// Renewals refused after the first (the right taken away mid-run) until the lease would run
/// out: the run is stopped, deletes what it made and ends with its report and the
/// `verify-lease-lost` finding (the checks not judged `stopped`), instead of running on while
/// another run's sweep may delete its namespace.
#[test]
fn renewals_refused_until_the_lease_would_run_out_stop_the_run_with_a_finding() {
    let (api, dir) = cluster();
    // The server never gets Ready: the run waits for it, renewing meanwhile.
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(100);
    o.pods_wait = Duration::from_secs(50);
    let running = std::thread::spawn(move || run(&c, &o));
    until_pods_made(&api);
    api.forbid("update", "leases");
    let r = running.join().expect("join").expect("a report");
    let lost = r.lease_lost.as_ref().expect("the finding");
    assert_eq!(lost.code, Code::VerifyLeaseLost);
    assert!(lost.message.contains("403"), "{lost:?}");
    assert!(lost.message.contains("deleted what it made"), "{lost:?}");
    assert!(!r.passed && !r.interrupted && r.cleaned_up, "{r:#?}");
    assert!(
        r.checks.iter().any(|v| v.outcome == Outcome::Stopped),
        "{r:#?}"
    );
    assert!(
        our_namespaces(&api).is_empty(),
        "{:?}",
        our_namespaces(&api)
    );
}

/// `--keep-on-failure` after a cluster error mid-run (the policy refused): the namespace is
/// kept and marked so; the next run's sweep leaves it though its lease ran out long ago.
#[test]
fn a_namespace_kept_after_a_cluster_error_is_marked_and_no_sweep_takes_it() {
    let (api, dir) = cluster();
    api.forbid("create", "networkpolicies");
    let c = client(&api, &dir);
    let mut o = options(120);
    o.keep_on_failure = true;
    let err = run(&c, &o).expect_err("the policy refused");
    assert!(err.to_string().contains("networkpolicies"), "{err}");
    let kept = our_namespaces(&api);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let mut ns = api.get(&kept[0]).expect("kept");
    assert!(
        ns["metadata"]["annotations"][KEPT]
            .as_str()
            .is_some_and(|w| w.contains("networkpolicies")),
        "{ns}"
    );
    assert_eq!(ns["metadata"]["labels"][KEPT], "true", "{ns}");
    // An hour later: its Lease long run out, and older than any run.
    let hour_ago = at(jiff::Timestamp::now().as_second() - 3600);
    ns["metadata"]["creationTimestamp"] = json!(hour_ago);
    api.put(&kept[0], ns);
    api.lock().forbidden.clear();
    let mut again = options(120);
    again.suffix = "t2".into();
    let r = run(&c, &again).expect("run");
    assert!(r.passed, "{:#?}", r.checks);
    assert!(r.leftovers_removed.is_empty(), "{r:#?}");
    assert!(api.get(&kept[0]).is_some(), "kept");
}

/// An API server that sends no `Date` (after another server of the same process sent one):
/// the run's Lease has no `renewTime` (never this host's clock, nor another server's
/// offset), so it is judged by its age: a sweep deletes its namespace once it is older than
/// any run.
#[test]
fn without_a_date_the_lease_has_no_renewal_and_is_judged_by_its_age() {
    let (other, other_dir) = cluster();
    other.lock().clock_offset_s = -86_400;
    assert!(server_time(&client(&other, &other_dir)).is_some());
    let (api, dir) = cluster();
    api.lock().no_date = true;
    api.forbid("create", "networkpolicies");
    let c = client(&api, &dir);
    assert_eq!(server_time(&c), None);
    let mut o = options(120);
    o.keep_on_failure = true;
    run(&c, &o).expect_err("the policy refused");
    let kept = our_namespaces(&api);
    assert_eq!(kept.len(), 1, "{kept:?}");
    let mut ns = api.get(&kept[0]).expect("kept");
    let lease = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases/calicoctl-win-verify-t1",
        ns["metadata"]["name"].as_str().expect("name")
    );
    let mut l = api.get(&lease).expect("the Lease");
    assert!(l["spec"]["renewTime"].is_null(), "{l}");
    // Its run killed (no mark), 31 minutes after its creation, and the server's Date back:
    // the next run's sweep judges it by its Lease's age.
    ns["metadata"]["annotations"] = json!({});
    let old = at(jiff::Timestamp::now().as_second() - 31 * 60);
    ns["metadata"]["creationTimestamp"] = json!(old);
    api.put(&kept[0], ns);
    l["metadata"]["creationTimestamp"] = json!(old);
    api.put(&lease, l);
    {
        let mut st = api.lock();
        st.no_date = false;
        st.forbidden.clear();
    }
    let mut again = options(120);
    again.suffix = "t2".into();
    let r = run(&c, &again).expect("run");
    let name = kept[0].rsplit('/').next().expect("name");
    assert_eq!(r.leftovers_removed, [name], "{r:#?}");
}

/// A run stopped (the fleet's scheduled run: its container's stop) while the API server
/// answers slowly: the call in flight is cut, the clean-up's calls share its bound, and the
/// run returns within the 5 s hcsshim leaves the process (`host::stop`), saying what it left;
/// the next run's sweep removes it once its lease, no longer renewed, has run out.
#[test]
fn a_stopped_run_against_a_slow_server_returns_within_the_bound_and_says_what_it_left() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let o = options(120);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    until_pods_made(&api);
    api.lock().stalled = true;
    // The stop comes while a call of the run is held: it is cut, not waited out.
    for _ in 0..200 {
        if api.lock().stalled_held > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert!(api.lock().stalled_held > 0, "a call in flight");
    let stopped = Instant::now();
    stop.request();
    let r = running.join().expect("join").expect("report");
    let took = stopped.elapsed();
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(r.interrupted && !r.cleaned_up, "{r:#?}");
    let left = r.clean_up_error.clone().unwrap_or_default();
    assert!(
        left.contains(&r.namespace) && left.contains("the next verify run deletes it"),
        "{left}"
    );
    // The server answers again; the Lease, no longer renewed, has run out.
    api.lock().stalled = false;
    let lease = format!(
        "/apis/coordination.k8s.io/v1/namespaces/{}/leases/calicoctl-win-verify-t1",
        r.namespace
    );
    let mut l = api.get(&lease).expect("left");
    l["spec"]["renewTime"] = json!("2000-01-01T00:00:00.000000Z");
    api.put(&lease, l);
    let c = client(&api, &dir);
    let mut again = options(120);
    again.suffix = "t2".into();
    api.lock().dataplane.never_ready = false;
    let next = run(&c, &again).expect("run");
    assert_eq!(next.leftovers_removed, [r.namespace], "{next:#?}");
}

/// In a namespace given, an identity that may not update leases cannot renew the run's: the
/// run refuses before any pod (the Lease's first renewal) and deletes the Lease.
#[test]
fn a_lease_whose_first_renewal_is_refused_is_deleted_before_any_pod() {
    let (api, dir) = cluster();
    let ns = "calicoctl-win-verify";
    api.put(
        &format!("/api/v1/namespaces/{ns}"),
        crate::support::fake_api::meta("v1", "Namespace", ns, None),
    );
    api.forbid("update", "leases");
    let c = client(&api, &dir);
    let mut o = options(120);
    o.namespace = Some(ns.into());
    let err = run(&c, &o).expect_err("refused");
    let RunError::Plan(PlanError::LeaseLost { lease, cause, fate }) = &err else {
        panic!("{err:?}");
    };
    let name = format!("calicoctl-win-verify-{}", o.suffix);
    assert!(lease.contains(&format!("leases/{name}")), "{lease}");
    assert!(cause.contains("403"), "{cause}");
    assert!(fate.contains("the Lease was deleted"), "{fate}");
    assert!(
        !api.requests()
            .iter()
            .any(|(m, p)| m == "POST" && p.ends_with("/pods")),
        "no pod made"
    );
    let lease = format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name}");
    assert!(api.get(&lease).is_none(), "deleted");
}

/// A server that stops answering mid-run: each renewal (the server's `Date` and the update)
/// is cut at its interval, and once `LEASE − RENEW` passed since the last renewal written the
/// run is stopped for its lost lease, while the lease still holds, whatever number of
/// renewals were tried (each of which could take two intervals before).
#[test]
fn renewals_unanswered_until_the_lease_would_run_out_stop_the_run_by_time() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    o.pods_wait = Duration::from_secs(50);
    let running = std::thread::spawn(move || run(&c, &o));
    until_pods_made(&api);
    api.lock().stalled = true;
    // Up to 20 s: the run stops while the server answers nothing.
    for _ in 0..400 {
        if running.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let finished = running.is_finished();
    api.lock().stalled = false;
    let r = running.join().expect("join").expect("a report");
    assert!(finished, "the run stopped while the server stalled");
    let lost = r.lease_lost.as_ref().expect("the finding");
    assert!(lost.message.contains("the run stopped"), "{lost:?}");
    assert!(!r.passed && !r.interrupted, "{r:#?}");
}

/// `--keep-on-failure` and a stop during the checks: no check failed, so nothing is kept; the
/// run deletes what it made, its namespace never marked kept.
#[test]
fn a_run_stopped_with_keep_on_failure_deletes_what_it_made() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.keep_on_failure = true;
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    until_pods_made(&api);
    let name = our_namespaces(&api).pop().expect("made");
    // A living run's namespace is not labelled kept (`kubectl delete namespace -l` spares it).
    let live = api.get(&name).expect("there");
    assert!(live["metadata"]["labels"][KEPT].is_null(), "{live}");
    stop.request();
    let r = running.join().expect("join").expect("report");
    assert!(r.interrupted && r.cleaned_up, "{r:#?}");
    let left = api.get(&name);
    assert!(
        left.as_ref()
            .is_none_or(|ns| ns["metadata"]["annotations"][KEPT].is_null()),
        "{left:?}"
    );
    assert!(
        our_namespaces(&api).is_empty(),
        "{:?}",
        our_namespaces(&api)
    );
}

/// A run stopped while the API server does not reach the server pod (its pod proxy answers
/// 503, retried within the settle window): the check is not judged (no layer blamed, no
/// further call to the Linux pod), as a dial's or the policy's stopped wait is not.
#[test]
fn a_run_stopped_while_the_api_server_cannot_reach_the_pod_blames_no_layer() {
    use calicoctl_win::verify::judge::Outcome;
    use calicoctl_win::verify::matrix::CheckId;
    let (api, dir) = cluster();
    api.lock().dataplane.proxy_broken = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.settle = Duration::from_secs(60);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    let asked = |api: &FakeApi| {
        api.requests()
            .iter()
            .any(|(_, p)| p.contains("/pods/server") && p.contains("/proxy/"))
    };
    for _ in 0..1200 {
        if asked(&api) || running.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(asked(&api), "the server pod's /healthz asked");
    stop.request();
    let r = running.join().expect("join").expect("report");
    assert!(r.interrupted, "{r:#?}");
    let api_to_pods = r.checks.iter().find(|v| v.check == CheckId::ApiToPods);
    assert!(
        api_to_pods.is_some_and(|v| v.outcome == Outcome::Stopped),
        "{:#?}",
        r.checks
    );
}

/// A run stopped in the middle of its checks (Ctrl-C, or its lease lost, which stops it)
/// while `cluster-ip` dials a Service kube-proxy never balances: the checks judged before the
/// stop stand, and `cluster-ip` and every check after it are `stopped` (not run: the run was
/// stopped), none failed from the last answer and none `not-run` by `pod-address`. Read from
/// the report's JSON, as scripts read it.
#[test]
fn a_run_stopped_mid_matrix_reports_the_checks_from_the_stop_as_stopped() {
    let (api, dir) = cluster();
    api.lock().dataplane.no_service_lb = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.settle = Duration::from_secs(60);
    let (stop, said) = (o.stop.clone(), o.said.clone());
    let running = std::thread::spawn(move || run(&c, &o));
    // cluster-ip's dials wait for an answer (its wait says so once it looked once).
    let mut dialled = false;
    for _ in 0..1200 {
        dialled |= said
            .take()
            .iter()
            .any(|l| l.contains("for cluster-ip to answer client-local"));
        if dialled || running.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(dialled, "cluster-ip dialled");
    stop.request();
    let r = running.join().expect("join").expect("report");
    assert!(r.interrupted && !r.passed && !r.timed_out, "{r:#?}");
    let checks = serde_json::to_value(&r.checks).expect("json");
    let results = results(&checks);
    let at = results
        .iter()
        .position(|(c, _)| c == "cluster-ip")
        .unwrap_or_else(|| panic!("cluster-ip listed: {results:?}"));
    assert!(
        results[..at].iter().all(|(_, r)| r == "pass"),
        "{results:?}"
    );
    assert!(
        results[at..].iter().all(|(_, r)| r == "stopped"),
        "{results:?}"
    );
    // Every check of the matrix is listed: judged, stopped or skipped.
    assert_eq!(
        results.last().map(|(c, _)| c.as_str()),
        Some("policy-removed"),
        "{results:?}"
    );
    let by_pod_address = checks
        .as_array()
        .expect("checks")
        .iter()
        .filter(|v| v["by"] == "pod-address")
        .count();
    assert_eq!(by_pod_address, 0, "{checks:#}");
}

/// A stop that cuts the read of the probe Service's ClusterIP, after the image pull was
/// judged: the pull keeps its verdict and only the checks after it are listed as stopped.
/// (Before, any call the stop cut threw the whole ledger away and listed the pull as
/// stopped too.)
#[test]
fn a_stop_while_reading_the_services_keeps_the_pulls_verdict() {
    let (api, dir) = cluster();
    let service = format!(
        "/api/v1/namespaces/calicoctl-win-verify-t1/services/{}",
        calicoctl_win::verify::dial::SERVICE_NAME
    );
    api.lock().stall_answer_to = Some(("GET".into(), service));
    let c = client(&api, &dir);
    let o = options(120);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    let mut held = false;
    for _ in 0..1200 {
        held = api.lock().answers_held == 1;
        if held || running.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(held, "the Service's read held");
    stop.request();
    let r = running.join().expect("join").expect("report");
    api.lock().stall_answer_to = None;
    assert!(r.interrupted && !r.passed, "{r:#?}");
    let checks = serde_json::to_value(&r.checks).expect("json");
    let results = results(&checks);
    assert_eq!(
        results.first(),
        Some(&("image-pull".to_owned(), "pass".to_owned())),
        "{results:?}"
    );
    assert!(
        results.len() > 1 && results[1..].iter().all(|(_, r)| r == "stopped"),
        "{results:?}"
    );
}

/// Each check's name and result, in the report's order.
fn results(checks: &serde_json::Value) -> Vec<(String, String)> {
    checks
        .as_array()
        .expect("checks")
        .iter()
        .map(|v| {
            let word = |k: &str| v[k].as_str().unwrap_or_default().to_owned();
            (word("check"), word("result"))
        })
        .collect()
}
