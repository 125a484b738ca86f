//! `verify`'s own namespace holds the run's Lease (coordination.k8s.io/v1, as in a namespace
//! given), renewed while the run lives, so the next run removes a killed run's namespace as
//! soon as its Lease ran out and never a living run's; a run whose Lease is refused deletes
//! its namespace at once.

use super::verify::{
    client, cluster, lease, nothing_left, options, ours, spawn_run, until_pods_made, verify,
};
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::verify::run::run;

/// A run killed a minute and a half ago (its Lease ran out 30 s ago) leaves a young namespace:
/// the next run removes it at once, not after 30 minutes. A living run's namespace, however
/// old (a long pull), whose Lease it renews, stays; one without a Lease is judged by its age.
#[test]
fn a_killed_runs_namespace_goes_once_its_lease_ran_out_and_a_living_runs_stays() {
    let (api, dir) = cluster();
    let now = jiff::Timestamp::now().as_second();
    ours(&api, "calicoctl-win-verify-killed", now - 90, false);
    lease(&api, "calicoctl-win-verify-killed", "killed", now - 90, 60);
    ours(&api, "calicoctl-win-verify-living", now - 3600, false);
    lease(&api, "calicoctl-win-verify-living", "living", now - 15, 60);
    ours(&api, "calicoctl-win-verify-undated", now - 60, false);
    let r = verify(&api, &dir, &options(120));
    assert!(r.passed, "{:#?}", r.checks);
    assert_eq!(
        r.leftovers_removed,
        ["calicoctl-win-verify-killed"],
        "{r:#?}"
    );
    assert!(
        api.get("/api/v1/namespaces/calicoctl-win-verify-killed")
            .is_none()
    );
    for kept in ["living", "undated"] {
        assert!(
            api.get(&format!("/api/v1/namespaces/calicoctl-win-verify-{kept}"))
                .is_some(),
            "{kept}"
        );
    }
}

/// The run's Lease (the probe pods' owner) refused after its namespace was made: the
/// namespace is deleted at once, and the error says so.
#[test]
fn a_refused_lease_deletes_the_runs_namespace_at_once_and_says_so() {
    let (api, dir) = cluster();
    // Writes: the namespace, then the run's Lease: refused.
    api.fail_write_at(2);
    let c = client(&api, &dir);
    let err = run(&c, &options(120)).unwrap_err().to_string();
    assert!(
        err.contains("making the run's Lease") && err.contains("was deleted at once (by its uid)"),
        "{err}"
    );
    nothing_left(&api);
}

/// A renewal the run gave up on (its answer held past the renewal's bound) that the server
/// committed all the same: the next renewal is refused (409, the resourceVersion moved) and
/// finds the later Lease the run itself wrote. The Lease is still the run's (its uid, its
/// holder, not being deleted): the run goes on renewing it, or, were the lease given up, it would
/// stop for it (`LeaseLost`); never run on with its lease no longer renewed.
#[test]
fn a_renewal_committed_after_the_run_gave_up_on_it_leaves_the_lease_the_runs() {
    use calicoctl_win::verify::matrix::{PlanError, RunError};
    use std::time::Duration;
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = client(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    o.pods_wait = Duration::from_secs(50);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    let path = until_pods_made(&api);
    let ns = path
        .trim_end_matches("/pods/server")
        .rsplit('/')
        .next()
        .expect("ns");
    let path =
        format!("/apis/coordination.k8s.io/v1/namespaces/{ns}/leases/calicoctl-win-verify-t1");
    let puts = |api: &FakeApi| {
        api.requests()
            .iter()
            .filter(|(m, p)| m == "PUT" && *p == path)
            .count()
    };
    api.lock().stall_answer_to = Some(("PUT".into(), path.clone()));
    let mut after = None;
    for _ in 0..400 {
        if after.is_none() && api.lock().answers_held > 0 {
            after = Some(puts(&api));
        }
        let renewed = after.is_some_and(|n| puts(&api) >= n + 3);
        if renewed || running.is_finished() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    stop.request();
    let out = running.join().expect("join");
    api.lock().stall_answer_to = None;
    match out {
        Err(RunError::Plan(PlanError::LeaseLost { .. })) => {}
        Err(e) => panic!("{e:?}"),
        Ok(r) => {
            let n = after.expect("a renewal's answer held");
            assert!(
                puts(&api) >= n + 3,
                "renewals went on after the held one: {r:#?}"
            );
            assert!(r.interrupted && r.cleaned_up, "{r:#?}");
        }
    }
}

/// A passing run whose namespace, once deleted, stays Terminating a while: its renewals end
/// before that delete, so none meets its Lease deleted by the namespace controller and judges
/// the lease lost; the run
/// passes, and sees its namespace gone once the namespace controller is done.
#[test]
fn a_passing_run_is_not_judged_to_have_lost_its_lease_to_its_own_clean_up() {
    let (api, dir) = cluster();
    api.lock().dataplane.namespaces_linger = true;
    let mut o = options(120);
    o.renew = std::time::Duration::from_millis(200);
    let rx = spawn_run(&api, &dir, o);
    let path = "/api/v1/namespaces/calicoctl-win-verify-t1";
    let terminating = || {
        api.get(path)
            .is_some_and(|n| n["metadata"]["deletionTimestamp"].is_string())
    };
    for _ in 0..1200 {
        if terminating() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    assert!(terminating(), "the run's namespace was deleted");
    // Many renewal intervals pass while it is Terminating, then the namespace controller
    // is done with it.
    std::thread::sleep(std::time::Duration::from_millis(1500));
    api.remove(path);
    match rx.recv_timeout(std::time::Duration::from_secs(60)) {
        Ok(Ok(r)) => assert!(r.passed && r.cleaned_up, "{r:#?}"),
        other => panic!("{other:?}"),
    }
}

/// A second delete of a namespace already Terminating is answered 200 with the namespace as
/// it is (kube-apiserver's `REST.Delete`, its finalizers not done), not a 409: with the
/// resourceVersion read before the first delete, the precondition meets a 409 (the first
/// delete's update moved it), so a sweep never counts a namespace someone else was already
/// deleting as its own removal; with the uid alone it is told as being deleted.
#[test]
fn a_second_delete_of_a_terminating_namespace_is_answered_with_it() {
    let (api, dir) = cluster();
    api.lock().dataplane.namespaces_linger = true;
    let name = "calicoctl-win-verify-old";
    let path = format!("/api/v1/namespaces/{name}");
    api.put(&path, meta("v1", "Namespace", name, None));
    let read = api.get(&path).expect("made");
    let uid = read["metadata"]["uid"].as_str().map(str::to_owned);
    let version = read["metadata"]["resourceVersion"]
        .as_str()
        .map(str::to_owned);
    let c = client(&api, &dir);
    let as_read = (uid.as_deref(), version.as_deref());
    use calicoctl_win::verify::probe::delete_namespace;
    assert!(delete_namespace(&c, name, as_read, None).expect("first"));
    assert!(!delete_namespace(&c, name, as_read, None).expect("by the version read"));
    assert!(delete_namespace(&c, name, (uid.as_deref(), None), None).expect("by its uid"));
    let now = api.get(&path).expect("still Terminating");
    assert!(now["metadata"]["deletionTimestamp"].is_string(), "{now}");
}
