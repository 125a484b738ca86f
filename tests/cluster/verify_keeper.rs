//! `verify`'s lease keeper (src/verify/keeper.rs): a renewal twice in conflict is no renewal,
//! each renewal (its 409's re-read and retry included) ends within its interval, and a run
//! stopped for a lost lease against a stalled server returns within its clean-up's bound.

use super::verify::{client, cluster, options, spawn_run};
use calicoctl_win::cluster::{Cluster, ClusterError};
use calicoctl_win::duration::Stop;
use calicoctl_win::verify::{keeper, lease};
use std::time::{Duration, Instant};

const LEASE: &str =
    "/apis/coordination.k8s.io/v1/namespaces/calicoctl-win-verify/leases/calicoctl-win-verify-k1";

/// The run `k1`'s Lease, made from the server's time in a namespace given, held.
fn held(c: &Cluster) -> lease::Held {
    let mut o = options(120);
    o.suffix = "k1".into();
    o.namespace = Some("calicoctl-win-verify".into());
    lease::take(c, "calicoctl-win-verify", &o).expect("made")
}

/// Runs `f` on a thread of its own, its answer awaited `within` (far longer than the bound
/// under test, shorter than a call's own 15 s limit): `None` when it did not come.
fn within<T: Send + 'static>(
    within: Duration,
    f: impl FnOnce() -> T + Send + 'static,
) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(within).ok()
}

/// A renewal twice in conflict is not renewed: the Lease keeps what the other writer wrote.
#[test]
fn a_lease_twice_in_conflict_is_not_counted_as_renewed() {
    let (api, dir) = cluster();
    let c = client(&api, &dir);
    let held = held(&c);
    api.lock().touched_before_update.insert(LEASE.into(), 2);
    let at = keeper::server_time(&c).expect("a Date") + 120;
    let by = Instant::now() + Duration::from_secs(5);
    assert_eq!(held.renew_by(&c, Some(at), by).expect("answered"), None);
    let l = api.get(LEASE).expect("there");
    let written = jiff::Timestamp::from_second(at).expect("time").to_string();
    assert_ne!(l["spec"]["renewTime"], written.as_str(), "{l}");
}

/// A renewal whose update met a conflict and whose re-read the server then holds: the
/// renewal ends at its bound (its interval), not at the call's own 15 s limit.
#[test]
fn a_renewals_re_read_after_a_conflict_ends_within_its_interval() {
    let (api, dir) = cluster();
    let c = client(&api, &dir);
    let held = held(&c);
    {
        let mut st = api.lock();
        st.touched_before_update.insert(LEASE.into(), 1);
        st.stall_answer_to = Some(("GET".into(), LEASE.into()));
    }
    let at = keeper::server_time(&c).expect("a Date") + 120;
    let renewal = within(Duration::from_secs(10), move || {
        let by = Instant::now() + Duration::from_secs(1);
        held.renew_by(&c, Some(at), by)
    });
    api.lock().stall_answer_to = None;
    match renewal {
        Some(Err(ClusterError::Timeout { .. })) => {}
        other => panic!("{other:?}"),
    }
    assert_eq!(api.lock().answers_held, 1, "the re-read was held");
}

/// A run whose lease is lost against a server that stalls every request, while a call of
/// the run's own (its look at its pods) is in flight: that call is cut by the run's stop, and
/// the run returns within its stopped clean-up's bound (3 s) after the lease is judged lost
/// (three intervals of 200 ms), the server still stalled and that call's answer still held;
/// what it made is left to the next run.
#[test]
fn a_run_that_lost_its_lease_to_a_stalled_server_returns_within_the_clean_ups_bound() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    // The run's look at its pods (namespace `calicoctl-win-verify-t1`) answered, then held.
    api.lock().stall_answer_to = Some((
        "GET".into(),
        "/api/v1/namespaces/calicoctl-win-verify-t1/pods".into(),
    ));
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    let outer = o.stop.clone();
    let rx = spawn_run(&api, &dir, o);
    for _ in 0..1200 {
        if api.lock().answers_held > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        api.lock().answers_held,
        1,
        "the run's look at its pods held"
    );
    // From now on every request stalls: the renewals too, and the lease is lost.
    api.lock().stalled = true;
    // Far past the 0.6 s to lose the lease and the 3 s clean-up, short of a call's 15 s.
    let ended = rx.recv_timeout(Duration::from_secs(10));
    let still = {
        let st = api.lock();
        st.stalled && st.stall_answer_to.is_some()
    };
    {
        let mut st = api.lock();
        st.stalled = false;
        st.stall_answer_to = None;
    }
    outer.request();
    assert!(still, "the server still stalled when the run returned");
    match ended {
        Ok(Ok(r)) if r.lease_lost.is_some() => {
            let lost = r.lease_lost.as_ref().map(|f| f.message.clone());
            let lost = lost.unwrap_or_default();
            assert!(lost.contains("the run stopped"), "{lost}");
            assert!(!r.passed && !r.interrupted, "{r:#?}");
        }
        other => panic!("the run did not return within its bound: {other:?}"),
    }
}

/// A run stopped for its Lease (its renewals refused) deletes its namespace; that delete's
/// answer is held, and Ctrl-C (the client's stop) comes then: the call is cut by it at once,
/// not left to run to the stopped clean-up's bound. The run's own stop, requested already,
/// does not hide the client's.
#[test]
fn ctrl_c_still_cuts_the_clean_up_of_a_run_that_lost_its_lease() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let path = "/api/v1/namespaces/calicoctl-win-verify-t1";
    api.lock().stall_answer_to = Some(("DELETE".into(), path.into()));
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    let outer = o.stop.clone();
    let rx = spawn_run(&api, &dir, o);
    let pods = format!("{path}/pods");
    let made = || {
        api.requests()
            .iter()
            .any(|(m, p)| m == "POST" && *p == pods)
    };
    for _ in 0..1200 {
        if made() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(made(), "the run made its pods");
    // Its lease proven, its renewals are refused from now on: the lease is lost.
    api.forbid("update", "leases");
    for _ in 0..1200 {
        if api.lock().answers_held > 0 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(api.lock().answers_held, 1, "the clean-up's delete held");
    outer.request();
    let ended = rx.recv_timeout(Duration::from_secs(10));
    api.lock().stall_answer_to = None;
    match ended {
        Ok(Ok(r)) if r.lease_lost.is_some() => {
            let lost = r.lease_lost.as_ref().map(|f| f.message.clone());
            let lost = lost.unwrap_or_default();
            assert!(lost.contains("cut by the stop"), "{lost}");
            // Ctrl-C came too: said as such.
            assert!(r.interrupted, "{r:#?}");
        }
        other => panic!("{other:?}"),
    }
}

/// The server's `Date` not read (its look's connection closed at once) on a connection that
/// saw one before: the keeper writes no lease from this host's clock moved by that earlier
/// offset (a clock stepped back since would write one run out already); each such renewal
/// failed, the lease is lost after three intervals, and said why.
#[test]
fn a_renewal_whose_date_could_not_be_read_writes_nothing() {
    let (api, dir) = cluster();
    let c = client(&api, &dir);
    let held = held(&c);
    api.lock().api_dropped = true;
    let run_stop = Stop::new();
    std::thread::scope(|s| {
        let keeper = s.spawn(|| {
            let every = (&run_stop, Duration::from_millis(200));
            lease::keep(&c, &held, every, &mut |_| {})
        });
        // The keeper ends on its own once the lease is lost (three intervals); a bound of a
        // minute, not a guess at how long three intervals take on a loaded machine.
        for _ in 0..1200 {
            if keeper.is_finished() {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        held.stop();
        keeper.join().expect("the keeper");
    });
    let writes = api.writes();
    assert!(!writes.iter().any(|(_, p)| *p == LEASE), "{writes:?}");
    let lost = held.refused().expect("the lease lost");
    assert!(
        lost.contains("the API server's time could not be read"),
        "{lost}"
    );
    assert!(run_stop.requested(), "the run stopped");
}
