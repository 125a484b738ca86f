//! `verify`'s one lease keeper (src/verify/keeper.rs), for its own namespace's lease and its
//! turn in a namespace given: a renewal twice in conflict is no renewal, each renewal (its
//! 409's re-read and retry included) ends within its interval, a run stopped for a lost lease
//! against a stalled server returns within its clean-up's bound, and a turn is written by the
//! API server's time, never by this host's clock alone.

use super::verify::{cluster, options};
use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::{Cluster, ClusterError};
use calicoctl_win::duration::Stop;
use calicoctl_win::verify::matrix::{PlanError, RunError};
use calicoctl_win::verify::run::{Options, run};
use calicoctl_win::verify::{keeper, lease, shared};
use k8s_openapi::api::core::v1::Namespace;
use std::time::{Duration, Instant};

const NS: &str = "calicoctl-win-verify";
const TURN: &str = "/api/v1/namespaces/calicoctl-win-verify/configmaps/calicoctl-win-verify-run";
/// A day: how far the host's clock is from the API server's in the skew tests (a clock
/// stepped by a broken NTP source, or a VM restored from a snapshot).
const DAY: i64 = 86_400;

fn connect(api: &FakeApi, dir: &tempfile::TempDir) -> Cluster {
    let kubeconfig = api.kubeconfig(dir.path(), None);
    Cluster::connect(
        std::slice::from_ref(&kubeconfig),
        &Default::default(),
        false,
    )
    .expect("connect")
}

fn in_namespace(run: &str) -> Options {
    let mut o = options(120);
    o.namespace = Some(NS.into());
    o.suffix = run.into();
    o
}

fn given(api: &FakeApi) {
    api.put(
        &format!("/api/v1/namespaces/{NS}"),
        meta("v1", "Namespace", NS, None),
    );
}

fn claim(c: &Cluster, run: &str, within: Duration) -> Result<shared::Claimed, RunError> {
    let o = in_namespace(run);
    shared::claim(c, (NS, run), Instant::now() + within, &o)
}

/// The run's namespace, made with its lease from the server's time, held.
fn own_namespace(c: &Cluster) -> lease::Held {
    let ns = lease::until(
        calicoctl_win::verify::objects::namespace("k1"),
        lease::server_time(c).expect("a Date") + lease::lease_s(),
    );
    let api: kube::Api<Namespace> = kube::Api::all(c.client.clone());
    let made = c
        .call("create", "namespaces", api.create(&Default::default(), &ns))
        .expect("made");
    lease::Held::new(made, &Stop::new())
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

/// With the server's `Date` back, another run's claim is refused: the turn stays r1's.
fn not_taken_over(api: &FakeApi, dir: &tempfile::TempDir) {
    api.lock().no_date = false;
    let other = connect(api, dir);
    claim(&other, "r2", Duration::from_secs(2)).expect_err("the turn is r1's");
    assert_eq!(api.get(TURN).expect("the turn")["data"]["run"], "r1");
}

/// Someone else writes the turn just before each of the run's two updates (its resourceVersion
/// moves, its uid and run stay): still the run's, but not renewed this time; one conflict
/// alone is written again on the object read.
#[test]
fn a_turn_twice_in_conflict_is_not_counted_as_renewed() {
    let (api, dir) = cluster();
    given(&api);
    let c = connect(&api, &dir);
    let held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    let before = api.get(TURN).expect("the turn")["data"]["expires"].clone();
    api.lock().touched_before_update.insert(TURN.into(), 2);
    let renewed = shared::renew(&c, &held, Duration::from_secs(10)).expect("answered");
    assert_eq!(renewed, None);
    assert!(!held.lost());
    assert_eq!(api.get(TURN).expect("the turn")["data"]["expires"], before);
    api.lock().touched_before_update.insert(TURN.into(), 1);
    let renewed = shared::renew(&c, &held, Duration::from_secs(10)).expect("answered");
    assert_eq!(renewed, Some(true));
}

/// The run's own namespace the same: twice in conflict is not renewed.
#[test]
fn a_namespace_lease_twice_in_conflict_is_not_counted_as_renewed() {
    let (api, dir) = cluster();
    let c = connect(&api, &dir);
    let held = own_namespace(&c);
    let path = format!("/api/v1/namespaces/{}", held.name);
    api.lock().touched_before_update.insert(path.clone(), 2);
    let at = lease::server_time(&c).expect("a Date") + 120;
    assert_eq!(lease::renew(&c, &held, at).expect("answered"), None);
    let ns = api.get(&path).expect("there");
    assert_ne!(
        lease::expires(&serde_json::from_value(ns).expect("ns")),
        Some(at)
    );
}

/// Another run took the turn over between this run's claim and its first renewal (its proof):
/// the run refuses there, before any pod, and leaves the turn to that run.
#[test]
fn a_turn_taken_over_refuses_the_run_at_its_proof() {
    let (api, dir) = cluster();
    given(&api);
    let c = connect(&api, &dir);
    let held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    let mut taken = api.get(TURN).expect("the turn");
    taken["data"]["run"] = serde_json::json!("r2");
    taken["metadata"]["resourceVersion"] = serde_json::json!("900");
    api.put(TURN, taken);
    match shared::prove(&c, NS, &held) {
        Err(RunError::Plan(PlanError::LeaseLost { cause, .. })) => {
            assert!(cause.contains("another run took the turn"), "{cause}")
        }
        other => panic!("{other:?}"),
    }
    assert!(held.lost());
    assert_eq!(api.get(TURN).expect("left to r2")["data"]["run"], "r2");
}

/// A renewal whose update met a conflict and whose re-read the server then holds: the
/// renewal ends at its bound (its interval), not at the call's own 15 s limit.
#[test]
fn a_renewals_re_read_after_a_conflict_ends_within_its_interval() {
    let (api, dir) = cluster();
    let c = connect(&api, &dir);
    let held = own_namespace(&c);
    let path = format!("/api/v1/namespaces/{}", held.name);
    {
        let mut st = api.lock();
        st.touched_before_update.insert(path.clone(), 1);
        st.stall_answer_to = Some(("GET".into(), path));
    }
    let at = lease::server_time(&c).expect("a Date") + 120;
    let renewal = within(Duration::from_secs(10), move || {
        let by = Instant::now() + Duration::from_secs(1);
        keeper::Lease::renew_by(&held, &c, Some(at), by)
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
    let c = connect(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    let outer = o.stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&c, &o));
    });
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

/// A run whose host clock is a day behind the API server's, on a server that sends no
/// `Date`, takes its turn without `expires` (judged by its age), not one that ran out a day
/// ago by the server's clock: another run, with the server's `Date` back, does not take it
/// over.
#[test]
fn without_a_date_a_turn_is_judged_by_its_age_not_by_a_skewed_host_clock() {
    let (api, dir) = cluster();
    given(&api);
    {
        let mut st = api.lock();
        st.clock_offset_s = DAY;
        st.no_date = true;
    }
    let c = connect(&api, &dir);
    let _held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    let turn = api.get(TURN).expect("the turn");
    assert!(turn["data"]["expires"].is_null(), "{turn}");
    not_taken_over(&api, &dir);
}

/// A turn kept (`--keep-on-failure`) on a server that sends no `Date`, by a host a day
/// behind it: held by its age, not until a time a day past by the server's clock.
#[test]
fn a_turn_kept_without_a_date_is_not_left_for_a_skewed_host_clock_to_end() {
    let (api, dir) = cluster();
    given(&api);
    api.lock().clock_offset_s = DAY;
    let c = connect(&api, &dir);
    let held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    api.lock().no_date = true;
    let fresh = connect(&api, &dir);
    shared::keep_for(&fresh, NS, &held, 1800).expect("kept");
    let turn = api.get(TURN).expect("the turn");
    let server_now = jiff::Timestamp::now().as_second() + DAY;
    let expires = shared::expiry(&serde_json::from_value(turn.clone()).expect("cm"), 1800);
    assert!(expires.is_some_and(|t| t > server_now), "{turn}");
    not_taken_over(&api, &dir);
}

/// On a connection that saw the server's `Date` once, a turn taken when `Date`s stop coming
/// runs out a lease from the server's time (this host's clock moved by the offset seen), not
/// from this host's clock alone.
#[test]
fn a_turn_taken_without_a_date_follows_the_offset_the_connection_saw() {
    let (api, dir) = cluster();
    given(&api);
    api.lock().clock_offset_s = DAY;
    let c = connect(&api, &dir);
    assert!(lease::server_time(&c).is_some());
    api.lock().no_date = true;
    let _held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    let turn = api.get(TURN).expect("the turn");
    let expires = shared::expiry(&serde_json::from_value(turn.clone()).expect("cm"), 0);
    let server_now = jiff::Timestamp::now().as_second() + DAY;
    assert!(
        expires.is_some_and(|t| (t - (server_now + 60)).abs() <= 5),
        "{turn}"
    );
}

/// On a server that never sends a `Date`, the run's namespace carries no lease and the turn
/// no `expires` (both judged by their age): there is nothing to renew, and the run is not
/// stopped for a lease it could not renew (three intervals of 200 ms pass many times over).
#[test]
fn without_a_date_a_run_is_not_stopped_for_a_lease_judged_by_its_age() {
    for namespace in [None, Some(NS)] {
        let (api, dir) = cluster();
        given(&api);
        api.lock().no_date = true;
        // Its pods pull for 2 s: the run lives past the three intervals.
        api.lock().dataplane.pull_takes = Some(Duration::from_secs(2));
        let c = connect(&api, &dir);
        let mut o = options(120);
        o.namespace = namespace.map(str::to_owned);
        o.renew = Duration::from_millis(200);
        let r = run(&c, &o).unwrap_or_else(|e| panic!("{namespace:?}: {e:?}"));
        assert!(r.passed && !r.interrupted, "{namespace:?}: {r:#?}");
        // Judged by its age alone: never written by a clock of this host's.
        let renewals = api
            .requests()
            .iter()
            .filter(|(m, p)| m == "PUT" && (p.ends_with(&r.namespace) || p.contains(TURN)))
            .count();
        assert_eq!(renewals, 0, "{namespace:?}");
    }
}

/// A run stopped for its lease (its renewals refused) deletes its namespace; that delete's
/// answer is held, and Ctrl-C (the client's stop) comes then: the call is cut by it at once,
/// not left to run to the stopped clean-up's bound. The run's own stop, requested already,
/// does not hide the client's.
#[test]
fn ctrl_c_still_cuts_the_clean_up_of_a_run_that_lost_its_lease() {
    let (api, dir) = cluster();
    api.lock().dataplane.never_ready = true;
    let path = "/api/v1/namespaces/calicoctl-win-verify-t1";
    api.lock().stall_answer_to = Some(("DELETE".into(), path.into()));
    let c = connect(&api, &dir);
    let mut o = options(120);
    o.renew = Duration::from_millis(200);
    let outer = o.stop.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(run(&c, &o));
    });
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
    api.forbid("update", "namespaces");
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

/// A renewal of the turn that the server committed but whose answer it held past the
/// renewal's bound (the run gave up on it): the turn, its resourceVersion moved by the run's
/// own write, is still the run's when it gives it back; its objects and the turn are
/// deleted, not left as another run's.
#[test]
fn a_turn_renewed_by_a_write_the_run_gave_up_on_is_given_back_in_full() {
    let (api, dir) = cluster();
    given(&api);
    let c = connect(&api, &dir);
    let held = claim(&c, "r1", Duration::from_secs(10))
        .expect("claimed")
        .held;
    let before = api.get(TURN).expect("the turn")["metadata"]["resourceVersion"].clone();
    api.lock().stall_answer_to = Some(("PUT".into(), TURN.into()));
    match shared::renew(&c, &held, Duration::from_secs(1)) {
        Err(ClusterError::Timeout { .. }) => {}
        other => panic!("{other:?}"),
    }
    api.lock().stall_answer_to = None;
    let now = api.get(TURN).expect("the turn");
    assert_ne!(now["metadata"]["resourceVersion"], before, "committed");
    let released = shared::release(&c, NS, &held, Instant::now() + Duration::from_secs(10));
    assert_eq!(
        released.expect("released"),
        calicoctl_win::verify::shared::Released::Done,
        "its pods gone"
    );
    assert!(!held.lost());
    assert!(api.get(TURN).is_none(), "the turn given back");
}

/// The server's `Date` not read (its look's connection closed at once) on a connection that
/// saw one before: the keeper writes no lease from this host's clock moved by that earlier
/// offset (a clock stepped back since would write one run out already); each such renewal
/// failed, the lease is lost after three intervals, and said why.
#[test]
fn a_renewal_whose_date_could_not_be_read_writes_nothing() {
    let (api, dir) = cluster();
    let c = connect(&api, &dir);
    let held = own_namespace(&c);
    let path = format!("/api/v1/namespaces/{}", held.name);
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
    assert!(!writes.iter().any(|(_, p)| *p == path), "{writes:?}");
    let lost = held.lost().expect("the lease lost");
    assert!(
        lost.contains("the API server's time could not be read"),
        "{lost}"
    );
    assert!(run_stop.requested(), "the run stopped");
}
