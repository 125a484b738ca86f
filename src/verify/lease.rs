//! The run's own namespace as a lease, as the turn is in a namespace given (shared.rs): its
//! annotation `EXPIRES` says until when the run that made it lives, by the API server's
//! clock. It is written at the namespace's creation for `shared::LEASE` and renewed every
//! `shared::RENEW` while the run lives (until its clean-up deletes it) by an update that
//! carries the resourceVersion the run last wrote (kube-apiserver's `Update` refuses another, 409:
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`). A run killed
//! outright stops renewing, so the next run deletes its namespace once `EXPIRES` has passed,
//! with a delete whose preconditions are the uid and resourceVersion it judged by (the
//! namespace's `Delete` checks both, 409 otherwise: `pkg/registry/core/namespace/storage/
//! storage.go`): a living run that renewed meanwhile keeps its namespace. A namespace without
//! the annotation (an older calicoctl-win's) is judged by its age (`objects::leftovers`).

use super::keeper;
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::Stop;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use super::objects::{
    KEPT, LEASE_EXPIRES as EXPIRES, lease_expires as expires, leased_until as until,
};

pub use super::keeper::{lease_s, server_time};

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

/// One write of the lease, to run out at `at_s`, unless the run is over, within a renewal's
/// interval: whether the namespace is still the run's (`None`: twice in conflict, not written).
pub fn renew(c: &Cluster, held: &Held, at_s: i64) -> Result<Option<bool>, ClusterError> {
    let by = std::time::Instant::now() + super::options::RENEW;
    keeper::Lease::renew_by(held, c, Some(at_s), by)
}

impl keeper::Lease for Held {
    fn ending(&self) -> &Stop {
        &self.ending
    }

    /// A namespace made without a lease (no time from the server then) is judged by its age:
    /// nothing to renew until the server's time is known.
    fn renew_by(
        &self,
        c: &Cluster,
        at_s: Option<i64>,
        by: std::time::Instant,
    ) -> Result<Option<bool>, ClusterError> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if self.done.load(Ordering::SeqCst) || self.ending.requested() {
            return Ok(Some(true));
        }
        let Some(at_s) = at_s else {
            return Ok(expires(&last).is_none().then_some(true));
        };
        write(
            c,
            self,
            &mut last,
            &|ns| until(ns, at_s),
            (&self.ending, by),
        )
    }

    fn lose(&self, why: String) {
        *self.lost.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    fn gone(&self) -> String {
        format!(
            "namespace {} was deleted or made again by someone else",
            self.name
        )
    }
}

/// The first renewal, before any pod is made: proves that the run may write its lease (the
/// identity's `update namespaces`, and no admission webhook refusing it), so that a run that
/// could not keep its namespace leased refuses before it runs. Nothing to prove when the
/// namespace carries no lease (no `Date` from the server: judged by its age).
pub fn prove(c: &Cluster, held: &Held) -> Result<(), ClusterError> {
    let leased = expires(&held.last.lock().unwrap_or_else(|e| e.into_inner())).is_some();
    match server_time(c) {
        // Twice in conflict, the namespace just made still runs on its lease; not the run's
        // any more, the next renewal stops the run.
        Some(t) if leased => renew(c, held, t + lease_s()).map(|_| ()),
        _ => Ok(()),
    }
}

/// What the run made kept (`--keep-on-failure`): the namespace marked `KEPT`, which no run's
/// sweep deletes, the renewals stopped. Needs no server time. Whether the namespace is still
/// the run's (then marked; `None`: twice in conflict, not marked), within a renewal's
/// interval and not cut by the renewals' end.
pub fn keep_marked(c: &Cluster, held: &Held, why: &str) -> Result<Option<bool>, ClusterError> {
    held.ending.request();
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    held.done.store(true, Ordering::SeqCst);
    let by = std::time::Instant::now() + super::options::RENEW;
    let mark = |ns| super::objects::marked_kept(ns, why);
    write(c, held, &mut last, &mark, (&Stop::never(), by))
}

/// `change` written on the namespace (`keeper::write`): the namespace of the run's uid, not
/// being deleted, is still the run's (no other writer touches its lease: another run's sweep
/// only deletes it, with preconditions), whatever its lease says now.
fn write(
    c: &Cluster,
    held: &Held,
    last: &mut Namespace,
    change: &dyn Fn(Namespace) -> Namespace,
    (ending, by): (&Stop, std::time::Instant),
) -> Result<Option<bool>, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{}", held.name);
    let ours = |now: &Namespace| {
        now.metadata.uid.as_deref() == Some(held.uid.as_str())
            && now.metadata.deletion_timestamp.is_none()
    };
    keeper::write(
        c,
        (&api, &held.name, &what),
        last,
        (change, &ours),
        (ending, by),
    )
}

/// Renews the lease every `every` until the run is over or the namespace is no longer its
/// own (`keeper::keep`): run beside the run, on a thread of its own.
pub fn keep(c: &Cluster, held: &Held, (run, every): (&Stop, Duration), say: &mut dyn FnMut(&str)) {
    let what = format!("the run's end, renewing namespace {}'s lease", held.name);
    keeper::keep(c, held, (&what, run, every), say);
}

/// What the run made kept (`--keep-on-failure`), `why`: in a namespace given, its Lease held
/// while they are looked at, then the next run deletes them; its own namespace marked kept
/// (`lease::KEPT`), which no run's sweep deletes. Why the mark could not be written, if not.
pub fn keep_all(
    c: &Cluster,
    (name, held, own): (&str, Option<&super::shared::Held>, Option<&Held>),
    why: &str,
) -> Option<String> {
    if let Some(h) = held {
        let _ = super::shared::keep_for(c, h, super::options::LEFTOVER_AGE.as_secs() as i64);
    }
    let l = own?;
    match keep_marked(c, l, why) {
        Ok(Some(true)) => None,
        Ok(Some(false)) => Some(format!("namespace {name} is no longer this run's to keep")),
        Ok(None) => Some(format!(
            "marking namespace {name} kept met two conflicts in a row: the next run deletes it once its lease runs out"
        )),
        Err(e) => Some(format!(
            "marking namespace {name} kept failed ({e}): the next run deletes it once its lease runs out"
        )),
    }
}

/// A lease lost: the lease, named, and why.
pub type Lost = (String, String);

/// The run's lease as lost by now, if it was (taken over, or its renewals refused or
/// unanswered until it would run out; the run was stopped for it): the lease, named, and why.
/// Read where the checks end: a loss during the clean-up, every check judged, is the
/// clean-up's to report, not the run's.
pub fn lost_by_now((held, own): (Option<&super::shared::Held>, Option<&Held>)) -> Option<Lost> {
    match (held, own) {
        (Some(h), _) => Some((h.named(), h.refused()?)),
        (None, Some(l)) => Some((format!("namespace {}", l.name), l.lost()?)),
        (None, None) => None,
    }
}

/// The run's lease lost mid-run (`lost_by_now`, read where the checks ended): the finding
/// that says so, naming the lease, why, and what became of what the run made. The report
/// carries it beside the checks done.
pub fn lost(
    (lease, cause): Lost,
    (cleaned_up, clean_up_error): (bool, &Option<String>),
) -> crate::health::judge::Finding {
    let fate = match (clean_up_error, cleaned_up) {
        (_, true) => "the run stopped and deleted what it made".to_owned(),
        (Some(e), false) => format!("the run stopped; what it made is not deleted: {e}"),
        (None, false) => "the run stopped; what it made is left to the next run".to_owned(),
    };
    let code = crate::health::judge::Code::VerifyLeaseLost;
    crate::health::judge::Finding::new(
        code,
        lease.clone(),
        format!("the run's lease on {lease} was lost: {cause}; {fate}"),
        code.remedy(),
    )
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
        assert_eq!(crate::verify::options::REFUSALS_BEFORE_LOST, 3);
    }
}
