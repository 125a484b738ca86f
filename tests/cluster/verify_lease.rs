//! `verify`'s own namespace as a lease: its annotation says until when its run lives, renewed
//! while the run lives, so the next run removes a killed run's namespace as soon as its lease
//! ran out and never a living run's; a run whose ConfigMap is refused deletes its namespace
//! at once.

use super::verify::{cluster, nothing_left, options, verify};
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::Cluster;
use calicoctl_win::verify::lease::{self, EXPIRES};
use calicoctl_win::verify::run::run;
use serde_json::json;

fn connect(api: &FakeApi, dir: &tempfile::TempDir) -> Cluster {
    let kubeconfig = api.kubeconfig(dir.path(), None);
    Cluster::connect(
        std::slice::from_ref(&kubeconfig),
        &Default::default(),
        false,
    )
    .expect("connect")
}

/// A namespace of a run, made `created` and leased until `expires` (unix seconds).
fn leased(api: &FakeApi, name: &str, created: i64, expires: Option<i64>) {
    let at = |s: i64| jiff::Timestamp::from_second(s).expect("time").to_string();
    let mut ns = meta("v1", "Namespace", name, None);
    ns["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify"});
    ns["metadata"]["creationTimestamp"] = json!(at(created));
    if let Some(e) = expires {
        ns["metadata"]["annotations"] = json!({ EXPIRES: at(e) });
    }
    api.put(&format!("/api/v1/namespaces/{name}"), ns);
}

/// A run killed a minute ago (its lease ran out 30 s ago) leaves a young namespace: the next
/// run removes it at once, not after 30 minutes. A living run's namespace, however old (a
/// long pull), whose lease it renews, stays; one without the annotation is judged by its age.
#[test]
fn a_killed_runs_namespace_goes_once_its_lease_ran_out_and_a_living_runs_stays() {
    let (api, dir) = cluster();
    let now = jiff::Timestamp::now().as_second();
    leased(
        &api,
        "calicoctl-win-verify-killed",
        now - 60,
        Some(now - 30),
    );
    leased(
        &api,
        "calicoctl-win-verify-living",
        now - 3600,
        Some(now + 45),
    );
    leased(&api, "calicoctl-win-verify-undated", now - 60, None);
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

/// The run's namespace is made with its lease, one minute from the API server's time (a day
/// behind this host's here), and renewed by an update carrying the resourceVersion last
/// written. A change by someone else (a label), or a later lease, is no loss (no other writer
/// touches the lease: another run's sweep only deletes); a namespace made again ends them.
#[test]
fn the_runs_namespace_carries_a_lease_renewed_under_its_resource_version() {
    let (api, dir) = cluster();
    let skew = -86_400;
    api.lock().clock_offset_s = skew;
    let c = connect(&api, &dir);
    let server_now = jiff::Timestamp::now().as_second() + skew;
    let path = "/api/v1/namespaces/calicoctl-win-verify-l1";
    let mut ns = calicoctl_win::verify::objects::namespace("l1");
    ns = lease::until(
        ns,
        lease::server_time(&c).expect("the fake sends Date") + lease::lease_s(),
    );
    let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> =
        kube::Api::all(c.client.clone());
    let read = c
        .call(
            "create",
            "namespaces",
            namespaces.create(&Default::default(), &ns),
        )
        .expect("made");
    let first = lease::expires(&read).expect("a lease");
    assert!(
        (first - (server_now + 60)).abs() <= 5,
        "{first} {server_now}"
    );
    let held = lease::Held::new(read, &calicoctl_win::duration::Stop::new());
    // An administrator labels it: the lease as written stays, the renewal goes on.
    let mut labelled = api.get(path).expect("there");
    labelled["metadata"]["labels"]["team"] = json!("net");
    labelled["metadata"]["resourceVersion"] = json!("900");
    api.put(path, labelled);
    assert_eq!(
        lease::renew(&c, &held, server_now + 120).expect("renewed"),
        Some(true)
    );
    let now = api.get(path).expect("there");
    assert_eq!(now["metadata"]["labels"]["team"], "net", "{now}");
    assert_eq!(
        now["metadata"]["annotations"][EXPIRES],
        jiff::Timestamp::from_second(server_now + 120)
            .expect("time")
            .to_string()
    );
    // Its lease written later (a renewal the run gave up on, committed after all): still the
    // run's, renewed on the object read.
    let mut later = api.get(path).expect("there");
    later["metadata"]["annotations"][EXPIRES] = json!("2999-01-01T00:00:00Z");
    later["metadata"]["resourceVersion"] = json!("920");
    api.put(path, later);
    assert_eq!(
        lease::renew(&c, &held, server_now + 150).expect("renewed"),
        Some(true)
    );
    // Deleted and made again (another uid): not this run's to renew.
    let mut other = now.clone();
    other["metadata"]["annotations"][EXPIRES] = json!("2000-01-01T00:00:00Z");
    other["metadata"]["uid"] = json!("another-uid");
    other["metadata"]["resourceVersion"] = json!("950");
    api.put(path, other);
    assert_eq!(
        lease::renew(&c, &held, server_now + 180).expect("answered"),
        Some(false)
    );
    assert_eq!(
        api.get(path).expect("there")["metadata"]["annotations"][EXPIRES],
        "2000-01-01T00:00:00Z"
    );
}

/// The run's ConfigMap (the probe pods' owner) refused after its namespace was made: the
/// namespace is deleted at once, and the error says so.
#[test]
fn a_refused_configmap_deletes_the_runs_namespace_at_once_and_says_so() {
    let (api, dir) = cluster();
    // Writes: the namespace, its lease's first renewal, then the run's ConfigMap: refused.
    api.fail_write_at(3);
    let c = connect(&api, &dir);
    let err = run(&c, &options(120)).unwrap_err().to_string();
    assert!(
        err.contains("making ConfigMap calicoctl-win-verify-run")
            && err.contains("was deleted at once (by its uid)"),
        "{err}"
    );
    nothing_left(&api);
}

/// A renewal the run gave up on (its answer held past the renewal's bound) that the server
/// committed all the same: the next renewal is refused (409, the resourceVersion moved) and
/// finds the later lease the run itself wrote. The namespace is still the run's (its uid,
/// not being deleted): the run goes on renewing it, or, were the lease given up, it would
/// stop for it (`LeaseLost`); never run on with its lease no longer renewed.
#[test]
fn a_renewal_committed_after_the_run_gave_up_on_it_leaves_the_lease_the_runs() {
    use calicoctl_win::verify::matrix::{PlanError, RunError};
    use std::time::Duration;
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let c = connect(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    o.pods_wait = Duration::from_secs(50);
    let stop = o.stop.clone();
    let running = std::thread::spawn(move || run(&c, &o));
    let path = (0..1200)
        .find_map(|_| {
            let found = api
                .lock()
                .objects
                .keys()
                .find(|k| {
                    k.starts_with("/api/v1/namespaces/calicoctl-win-verify-")
                        && k.ends_with("/pods/server")
                })
                .cloned();
            if found.is_none() {
                std::thread::sleep(Duration::from_millis(50));
            }
            found
        })
        .expect("the run made its pods");
    let path = path.trim_end_matches("/pods/server").to_owned();
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

/// A passing run whose namespace, once deleted, stays Terminating a while (kube-apiserver
/// marks it through an update that moves its resourceVersion): its renewals end before that
/// delete, so none meets the namespace being deleted and judges the lease lost; the run
/// passes, and sees its namespace gone once the namespace controller is done.
#[test]
fn a_passing_run_is_not_judged_to_have_lost_its_lease_to_its_own_clean_up() {
    let (api, dir) = cluster();
    api.lock().dataplane.namespaces_linger = true;
    let c = connect(&api, &dir);
    let mut o = options(120);
    o.renew = std::time::Duration::from_millis(200);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&c, &o));
    });
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
    let c = connect(&api, &dir);
    let as_read = (uid.as_deref(), version.as_deref());
    use calicoctl_win::verify::probe::delete_namespace;
    assert!(delete_namespace(&c, name, as_read).expect("first"));
    assert!(!delete_namespace(&c, name, as_read).expect("by the version read"));
    assert!(delete_namespace(&c, name, (uid.as_deref(), None)).expect("by its uid"));
    let now = api.get(&path).expect("still Terminating");
    assert!(now["metadata"]["deletionTimestamp"].is_string(), "{now}");
}
