//! The run's own namespace as a lease, as the turn is in a namespace given (shared.rs): its
//! annotation `EXPIRES` says until when the run that made it lives, by the API server's
//! clock. It is written at the namespace's creation for `shared::LEASE` and renewed every
//! `shared::RENEW` while the run lives (its clean-up included) by an update that carries the
//! resourceVersion the run last wrote (kube-apiserver's `Update` refuses another, 409:
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`). A run killed
//! outright stops renewing, so the next run deletes its namespace once `EXPIRES` has passed,
//! with a delete whose preconditions are the uid and resourceVersion it judged by (the
//! namespace's `Delete` checks both, 409 otherwise: `pkg/registry/core/namespace/storage/
//! storage.go`): a living run that renewed meanwhile keeps its namespace. A namespace without
//! the annotation (an older calicoctl-win's) is judged by its age (`objects::leftovers`).

use super::options::{LEASE, REFUSALS_BEFORE_LOST};
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, NO_LIMIT, Pauses, Stop, Stopped, Wait, poll_until};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use super::objects::{
    KEPT, LEASE_EXPIRES as EXPIRES, lease_expires as expires, leased_until as until,
};

/// Seconds from now to the end of a lease written now.
pub fn lease_s() -> i64 {
    i64::try_from(LEASE.as_secs()).unwrap_or(60)
}

/// The API server's time: its `Date` now, else this host's clock moved by the difference the
/// last `Date` this server sent this client showed (`Cluster::server_offset`); `None` when it
/// has sent none (never this host's clock alone: a lease written by a clock behind the
/// server's would be expired at once, and another run would delete a living run's namespace).
pub fn server_time(c: &Cluster) -> Option<i64> {
    server_time_unless(c, None)
}

/// `server_time`, its call never begun, or ended, once `stop` is requested or `within` has
/// passed.
fn server_time_unless(c: &Cluster, stop: Option<(&Stop, Duration)>) -> Option<i64> {
    let local = crate::duration::now();
    match probe::server_date(c, stop).ok().flatten() {
        Some(t) => {
            c.note_server_date(t, local);
            Some(t)
        }
        None => c.server_offset().map(|o| local.saturating_add(o)),
    }
}

/// The run's namespace as it holds it: the object it last wrote (its resourceVersion the
/// precondition of the next write); `done` once the run is over or the namespace is not its
/// own any more (deleted, or its lease written by someone else).
#[derive(Debug)]
pub struct Held {
    pub name: String,
    pub uid: String,
    last: Mutex<Namespace>,
    done: AtomicBool,
    /// Requested when the renewals end (the run over, or the run's stop): wakes their wait.
    ending: Stop,
    /// Why the lease was lost to refused renewals, once it was (`keep`).
    lost: Mutex<Option<String>>,
}

impl Held {
    /// The namespace as made, held by the run whose stop is `run` (the renewals end with it).
    pub fn new(written: Namespace, run: &Stop) -> Self {
        Self {
            name: written.metadata.name.clone().unwrap_or_default(),
            uid: written.metadata.uid.clone().unwrap_or_default(),
            last: Mutex::new(written),
            done: AtomicBool::new(false),
            ending: run.part(),
            lost: Mutex::new(None),
        }
    }

    /// The renewals stopped: one under way ends first (it holds the lock), none follows.
    pub fn stop(&self) {
        // The renewal under way cut first, so that the lock is not held long.
        self.ending.request();
        let _last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.done.store(true, Ordering::SeqCst);
    }

    /// Why the lease was lost to refused renewals (the run was stopped for it), if it was.
    pub fn lost(&self) -> Option<String> {
        self.lost.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// One write of the lease, to run out at `at_s`, unless the run is over: whether the
/// namespace is still the run's.
pub fn renew(c: &Cluster, held: &Held, at_s: i64) -> Result<bool, ClusterError> {
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    if held.done.load(Ordering::SeqCst) {
        return Ok(true);
    }
    write(c, held, &mut last, |ns| until(ns, at_s))
}

/// The first renewal, before any pod is made: proves that the run may write its lease (the
/// identity's `update namespaces`, and no admission webhook refusing it), so that a run that
/// could not keep its namespace leased refuses before it runs. Nothing to prove when the
/// namespace carries no lease (no `Date` from the server: judged by its age).
pub fn prove(c: &Cluster, held: &Held) -> Result<(), ClusterError> {
    let leased = expires(&held.last.lock().unwrap_or_else(|e| e.into_inner())).is_some();
    match server_time(c) {
        Some(t) if leased => renew(c, held, t + lease_s()).map(|_| ()),
        _ => Ok(()),
    }
}

/// What the run made kept (`--keep-on-failure`): the namespace marked `KEPT`, which no run's
/// sweep deletes, the renewals stopped. Needs no server time. Whether the namespace is still
/// the run's (then marked).
pub fn keep_marked(c: &Cluster, held: &Held, why: &str) -> Result<bool, ClusterError> {
    held.ending.request();
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    held.done.store(true, Ordering::SeqCst);
    write(c, held, &mut last, |ns| {
        super::objects::marked_kept(ns, why)
    })
}

/// `change` written on the namespace. A 409 is looked at again: the namespace of the run's
/// uid, not being deleted, is still the run's (no other writer touches its lease: another
/// run's sweep only deletes it, with preconditions), whatever its lease says now (a renewal
/// the run gave up on that the server committed all the same wrote a later one), and the
/// write is tried once more on the object read; a namespace deleted or made again is not the
/// run's any more.
fn write(
    c: &Cluster,
    held: &Held,
    last: &mut Namespace,
    change: impl Fn(Namespace) -> Namespace,
) -> Result<bool, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{}", held.name);
    for _ in 0..2 {
        let out = change(last.clone());
        match c.call_opt(
            "update",
            &what,
            api.replace(&held.name, &PostParams::default(), &out),
        ) {
            Ok(Some(w)) => {
                *last = w;
                return Ok(true);
            }
            Ok(None) => return Ok(false),
            Err(ClusterError::Api { code: 409, .. }) => {
                let Some(now) = c.call_opt("get", &what, api.get(&held.name))? else {
                    return Ok(false);
                };
                let ours = now.metadata.uid.as_deref() == Some(held.uid.as_str())
                    && now.metadata.deletion_timestamp.is_none();
                if !ours {
                    return Ok(false);
                }
                *last = now;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Renews the lease every `every` (`RENEW`; for `LEASE` from the API server's time) until the run is
/// over or the namespace is no longer its own: run beside the run, on a thread of its own.
/// Each renewal (the server's `Date` and the update together) is bounded by `every`. Once
/// `REFUSALS_BEFORE_LOST` intervals (`LEASE − RENEW`) passed since the last renewal written
/// began, the next could not be written before the lease runs out under the living run, and
/// another run's sweep delete its namespace: the run is stopped then (`run`), and
/// `Held::lost` says why; so it is, at once, when the namespace is not the run's any more.
pub fn keep(c: &Cluster, held: &Held, (run, every): (&Stop, Duration), say: &mut dyn FnMut(&str)) {
    let what = format!("the run's end, renewing namespace {}'s lease", held.name);
    let (mut first, mut written) = (true, std::time::Instant::now());
    let lost_after = every.saturating_mul(REFUSALS_BEFORE_LOST);
    let lose = |why: String| -> Result<Look<(), ()>, Stopped> {
        *held.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
        run.request();
        Ok(Look::Done(()))
    };
    let look = || -> Result<Look<(), ()>, Stopped> {
        // `prove` wrote the lease just before: the first renewal is one `RENEW` later.
        if std::mem::take(&mut first) {
            return Ok(Look::Pending(()));
        }
        let begun = std::time::Instant::now();
        let failed = match server_time_unless(c, Some((&held.ending, every))) {
            None => "the API server's time could not be read".to_owned(),
            Some(t) => match renew_unless(c, held, t + lease_s(), begun + every) {
                Ok(true) => {
                    written = begun;
                    return Ok(Look::Pending(()));
                }
                Ok(false) => {
                    return lose(format!(
                        "namespace {} was deleted or made again by someone else",
                        held.name
                    ));
                }
                Err(_) if held.ending.requested() => return Err(Stopped),
                Err(e) => format!("{e} ({})", e.hint()),
            },
        };
        if held.ending.requested() {
            return Err(Stopped);
        }
        if written.elapsed() >= lost_after {
            return lose(failed);
        }
        Ok(Look::Pending(()))
    };
    let wait = Wait {
        what: &what,
        timeout: NO_LIMIT,
        pauses: Pauses::every(every),
        stop: &held.ending,
        say,
    };
    let _ = poll_until(wait, look, |()| Ok::<(), Stopped>(()));
}

/// `renew`, its calls cut when the renewals end (`Held::ending`) or at `by`: a stopped
/// run's clean-up is not held up by a renewal that a slow server keeps.
fn renew_unless(
    c: &Cluster,
    held: &Held,
    at_s: i64,
    by: std::time::Instant,
) -> Result<bool, ClusterError> {
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    if held.done.load(Ordering::SeqCst) || held.ending.requested() {
        return Ok(true);
    }
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{}", held.name);
    let out = until(last.clone(), at_s);
    let pp = PostParams::default();
    // A renewal that takes longer than its interval is no renewal.
    match c.call_unless(
        &held.ending,
        by.saturating_duration_since(std::time::Instant::now()),
        ("update", &what),
        api.replace(&held.name, &pp, &out),
    ) {
        Ok(w) => {
            *last = w;
            Ok(true)
        }
        // Someone else wrote it (or it is gone): looked at again as every write is.
        Err(ClusterError::Api {
            code: 409 | 404, ..
        }) => write(c, held, &mut last, |ns| until(ns, at_s)),
        Err(e) => Err(e),
    }
}

/// What the run made kept (`--keep-on-failure`), `why`: in a namespace given, the turn held
/// while they are looked at, then the next run deletes them; its own namespace marked kept
/// (`lease::KEPT`), which no run's sweep deletes. Why the mark could not be written, if not.
pub fn keep_all(
    c: &Cluster,
    (name, held, own): (&str, Option<&super::shared::Held>, Option<&Held>),
    why: &str,
) -> Option<String> {
    if let Some(h) = held {
        let _ = super::shared::keep_for(c, name, h, super::options::LEFTOVER_AGE.as_secs() as i64);
    }
    let l = own?;
    match keep_marked(c, l, why) {
        Ok(true) => None,
        Ok(false) => Some(format!("namespace {name} is no longer this run's to keep")),
        Err(e) => Some(format!(
            "marking namespace {name} kept failed ({e}): the next run deletes it once its lease runs out"
        )),
    }
}

/// The run's lease lost to refused renewals (it was stopped for it): the error that says so,
/// and what became of what it made.
pub fn lost(
    (held, own): (Option<&super::shared::Held>, Option<&Held>),
    (namespace, cleaned_up, clean_up_error): (&str, bool, &Option<String>),
) -> Option<super::matrix::RunError> {
    let (lease, cause) = match (held, own) {
        (Some(h), _) => (
            format!(
                "configmaps/{} in namespace {}",
                super::shared::TURN,
                namespace
            ),
            h.refused()?,
        ),
        (None, Some(l)) => (format!("namespace {}", l.name), l.lost()?),
        (None, None) => return None,
    };
    let fate = match (clean_up_error, cleaned_up) {
        (_, true) => "the run stopped and deleted what it made".to_owned(),
        (Some(e), false) => format!("the run stopped; what it made is not deleted: {e}"),
        (None, false) => "the run stopped; what it made is left to the next run".to_owned(),
    };
    Some(super::matrix::RunError::Plan(
        super::matrix::PlanError::LeaseLost { lease, cause, fate },
    ))
}

/// The first renewal of the run's lease refused, before any pod: the namespace deleted at
/// once, by its uid, and the error says whether that was done.
pub fn refused(c: &Cluster, own: &Held, e: ClusterError) -> super::matrix::RunError {
    own.stop();
    let fate = match probe::delete_namespace(c, &own.name, (Some(&own.uid), None)) {
        Ok(_) => format!(
            "nothing was run: namespace {}, which held nothing yet, was deleted at once (by its uid)",
            own.name
        ),
        Err(d) => format!(
            "deleting namespace {} failed too ({d}): 'kubectl delete namespace {}'",
            own.name, own.name
        ),
    };
    super::matrix::RunError::Plan(super::matrix::PlanError::LeaseLost {
        lease: format!("namespace {}", own.name),
        cause: format!("{e} ({})", e.hint()),
        fate,
    })
}

#[cfg(test)]
mod refusal_tests {
    /// A lease of a minute renewed every 15 s is lost at the third refusal in a row: the
    /// fourth renewal would come after it ran out.
    #[test]
    fn the_lease_is_lost_at_the_refusal_after_which_the_next_renewal_is_too_late() {
        assert_eq!(super::REFUSALS_BEFORE_LOST, 3);
    }
}
