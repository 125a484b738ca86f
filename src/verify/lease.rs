//! A run's Lease (coordination.k8s.io/v1) in the namespace it runs in, renewed every `RENEW`
//! (`keeper`): a create refused 409 keeps two runs apart; run out as client-go reads it
//! (`tools/leaderelection/resourcelock/leaselock.go`), against the server's `Date`.

use super::keeper::{self, server_time_sent};
use super::matrix::{PlanError, RunError};
use super::objects::{Names, OWNER_LABEL, OWNER_VALUE, RUN_LABEL};
use super::options::{Options, REFUSALS_BEFORE_LOST};
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, NO_LIMIT, Pauses, Stop, Stopped, Wait, poll_until};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::options::{LEASE, RENEW};
/// A Lease without `renewTime` older than this is a killed run's.
const LEFTOVER_AGE_S: i64 = super::options::LEFTOVER_AGE.as_secs() as i64;
/// Seconds from now to the end of a lease written now.
const LEASE_S: i64 = LEASE.as_secs() as i64;

/// The run's Lease as it holds it: the object it last wrote (its resourceVersion the
/// precondition of the next write).
#[derive(Debug)]
pub struct Held {
    pub names: Names,
    ns: String,
    /// The Lease's uid: the probe pods' controller (`objects::controller`).
    pub uid: String,
    last: Mutex<Lease>,
    /// The Lease was deleted, or made again by someone else, while the run ran.
    lost: AtomicBool,
    /// Requested when the renewals end (the run over, its stop, or the Lease not its own any
    /// more): wakes their wait and cuts a renewal under way.
    ending: Stop,
    /// Why the renewals were refused until the Lease would run out, once they were.
    refused: Mutex<Option<String>>,
}

impl Held {
    /// Whether the Lease was deleted (or made again by someone else) while the run ran.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// The renewals stopped: one under way ends first (it holds the lock), none follows.
    pub fn stop(&self) {
        self.ending.request();
        let _last = self.last.lock().unwrap_or_else(|e| e.into_inner());
    }

    /// Why the renewals were refused until the Lease would run out (the run was stopped for
    /// it), if they were.
    pub fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// The Lease's name, as a run's messages say it.
    pub fn named(&self) -> String {
        format!("leases/{} in namespace {}", self.names.lease(), self.ns)
    }

    fn ours(&self, l: &Lease) -> bool {
        l.metadata.uid.as_deref() == Some(self.uid.as_str())
            && l.metadata.deletion_timestamp.is_none()
            && l.spec.as_ref().and_then(|s| s.holder_identity.as_deref())
                == Some(self.names.id.as_str())
    }

    /// One renewal, to run out `LEASE` from `at_s` (`None`: no time from the API server),
    /// its every call cut by `ending` or at `by`: `Some(true)` written (or nothing to write:
    /// over, or a Lease made without a `renewTime`, judged by its age), `Some(false)` not the
    /// run's any more, `None` not renewed this time (twice in conflict).
    pub fn renew_by(
        &self,
        c: &Cluster,
        at_s: Option<i64>,
        by: Instant,
    ) -> Result<Option<bool>, ClusterError> {
        let mut last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        if self.ending.requested() {
            return Ok(Some(true));
        }
        let Some(at_s) = at_s else {
            return Ok(renewed(&last).is_none().then_some(true));
        };
        let written = write(c, self, &mut last, (Some(at_s), LEASE_S), by)?;
        if written == Some(false) {
            self.lost.store(true, Ordering::SeqCst);
            self.ending.request();
        }
        Ok(written)
    }

    /// Why, when the Lease is not the run's any more.
    pub fn gone(&self) -> String {
        format!(
            "{} was deleted, or made again by someone else",
            self.named()
        )
    }
}

/// The Lease renewed at `renew_s` (none: judged by its age) for `for_s` seconds, on the
/// resourceVersion the run last wrote (kube-apiserver answers another 409), every call by `by`.
/// On a 409 a Lease still the run's is read and written once more; one deleted or not the
/// run's is `Some(false)`, two conflicts in a row `None`.
fn write(
    c: &Cluster,
    held: &Held,
    last: &mut Lease,
    (renew_s, for_s): (Option<i64>, i64),
    by: Instant,
) -> Result<Option<bool>, ClusterError> {
    let api: Api<Lease> = Api::namespaced(c.client.clone(), &held.ns);
    let name = held.names.lease();
    let what = format!("leases/{name}");
    let (never, pp) = (Stop::never(), PostParams::default());
    let left = || by.saturating_duration_since(Instant::now());
    for _ in 0..2 {
        let mut out = last.clone();
        let spec = out.spec.get_or_insert_with(Default::default);
        spec.renew_time = renew_s.and_then(micro);
        spec.lease_duration_seconds = Some(i32::try_from(for_s).unwrap_or(i32::MAX));
        let replace = api.replace(&name, &pp, &out);
        let read = match c.call_unless(&never, left(), ("update", &what), replace) {
            Ok(w) => {
                *last = w;
                return Ok(Some(true));
            }
            Err(ClusterError::Api { code: 409, .. }) => {
                match c.call_unless(&never, left(), ("get", &what), api.get(&name)) {
                    Ok(r) => Some(r),
                    Err(e) if e.is_not_found() => None,
                    Err(e) => return Err(e),
                }
            }
            Err(ClusterError::Api { code: 404, .. }) => None,
            Err(e) => return Err(e),
        };
        match read.filter(|r| held.ours(r)) {
            Some(r) => *last = r,
            None => return Ok(Some(false)),
        }
    }
    Ok(None)
}

fn micro(s: i64) -> Option<MicroTime> {
    jiff::Timestamp::from_second(s).ok().map(MicroTime)
}

/// When the Lease was last renewed (unix seconds), if it says.
fn renewed(l: &Lease) -> Option<i64> {
    let spec = l.spec.as_ref()?;
    Some(spec.renew_time.as_ref()?.0.as_second())
}

/// Whether a Lease has run out at `now` (the API server's time): its `renewTime` and
/// `leaseDurationSeconds`, the times the run wrote by the server's clock; without them, its
/// creation (the server's clock too) and `LEFTOVER_AGE`.
pub fn run_out(l: &Lease, now: i64) -> bool {
    let held_s = l.spec.as_ref().and_then(|s| s.lease_duration_seconds);
    match (renewed(l), held_s) {
        (Some(t), Some(d)) => now > t + i64::from(d),
        _ => older(&l.metadata, now),
    }
}

pub fn older(meta: &ObjectMeta, now: i64) -> bool {
    meta.creation_timestamp
        .as_ref()
        .is_some_and(|t| now > t.0.as_second() + LEFTOVER_AGE_S)
}

/// The run's Lease made in `ns` for `LEASE` by the API server's time (`keep` renews it);
/// without that time, without `renewTime`: judged by its age.
pub fn take(c: &Cluster, ns: &str, o: &Options) -> Result<Held, ClusterError> {
    let names = o.names();
    let now = keeper::server_time(c);
    let lease = Lease {
        metadata: ObjectMeta {
            name: Some(names.lease()),
            labels: Some(BTreeMap::from([
                (OWNER_LABEL.into(), OWNER_VALUE.into()),
                (RUN_LABEL.into(), names.id.clone()),
            ])),
            ..Default::default()
        },
        spec: Some(LeaseSpec {
            holder_identity: Some(names.id.clone()),
            lease_duration_seconds: Some(LEASE_S as i32),
            acquire_time: now.and_then(micro),
            renew_time: now.and_then(micro),
            ..Default::default()
        }),
    };
    let api: Api<Lease> = Api::namespaced(c.client.clone(), ns);
    let what = format!("leases/{}", names.lease());
    let made = c.call("create", &what, api.create(&Default::default(), &lease))?;
    Ok(Held {
        names,
        ns: ns.to_owned(),
        uid: made.metadata.uid.clone().unwrap_or_default(),
        last: Mutex::new(made),
        lost: AtomicBool::new(false),
        ending: o.stop.part(),
        refused: Mutex::new(None),
    })
}

/// The Lease's first renewal, before any pod is made, proves the run may renew it; refused,
/// the Lease (or the namespace the run made, `made`) is deleted by its uid.
pub fn prove(c: &Cluster, held: &Held, made: Option<&str>) -> Result<(), RunError> {
    let Some(now) = keeper::server_time(c) else {
        return Ok(());
    };
    let by = Instant::now() + RENEW;
    let cause = match held.renew_by(c, Some(now), by) {
        Ok(Some(true) | None) => return Ok(()),
        Ok(Some(false)) => held.gone(),
        Err(e) => format!("{e} ({})", e.hint()),
    };
    held.stop();
    let ns = &held.ns;
    let fate = match made {
        Some(uid) => match probe::delete_namespace(c, ns, (Some(uid), None), None) {
            Ok(_) => format!(
                "nothing was run: namespace {ns}, which held nothing yet, was deleted at once (by its uid)"
            ),
            Err(d) => {
                format!("deleting namespace {ns} failed too ({d}): 'kubectl delete namespace {ns}'")
            }
        },
        None => match delete_lease(c, held, Instant::now() + RENEW) {
            Ok(()) => "nothing was run: the Lease was deleted".to_owned(),
            Err(e) => format!(
                "nothing was run; deleting the Lease failed too ({e}): it runs out within a minute"
            ),
        },
    };
    Err(RunError::Plan(PlanError::LeaseLost {
        lease: held.named(),
        cause,
        fate,
    }))
}

/// What the run made kept (`--keep-on-failure`): its Lease written to hold `for_s` more
/// seconds, after which the next run's sweep deletes them.
pub fn keep_for(c: &Cluster, held: &Held, for_s: i64) -> Result<(), ClusterError> {
    let now = keeper::server_time(c);
    held.ending.request();
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    write(c, held, &mut last, (now, for_s), Instant::now() + RENEW).map(|_| ())
}

/// A lease lost: the lease, named, and why.
pub type Lost = (String, String);

/// The run's Lease as lost by now, if it was (the run stopped for it): the Lease, named, and why.
pub fn lost_by_now(held: &Held) -> Option<Lost> {
    Some((held.named(), held.refused()?))
}

/// The run's Lease lost mid-run (`lost_by_now`, read where the checks ended): the finding
/// that says so, naming the Lease, why, and what became of what the run made.
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

/// The Lease deleted while it is the one this run last wrote (uid and resourceVersion).
pub fn delete_lease(c: &Cluster, held: &Held, until: Instant) -> Result<(), ClusterError> {
    let api: Api<Lease> = Api::namespaced(c.client.clone(), &held.ns);
    let name = held.names.lease();
    let what = format!("leases/{name}");
    let version = held
        .last
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .metadata
        .resource_version
        .clone();
    let dp = super::probe::only(Some(&held.uid), version.as_deref());
    probe::gone(c.call_opt_by(until, ("delete", &what), api.delete(&name, &dp)))
}

/// Renews `lease` every `every`, on a thread of its own beside the run, until the run is
/// over; the run is stopped (`Held::lose`) after `REFUSALS_BEFORE_LOST` intervals without a
/// renewal, or at once when the lease is not the run's any more.
pub fn keep(c: &Cluster, lease: &Held, (run, every): (&Stop, Duration), say: &mut dyn FnMut(&str)) {
    let what = format!("the run's end, renewing {}", lease.named());
    let (mut first, mut written) = (true, Instant::now());
    let lost_after = every.saturating_mul(REFUSALS_BEFORE_LOST);
    let ending = &lease.ending;
    // The Lease lost to refused renewals, `why`: kept for the run's report.
    let lose = |why: String| -> Result<Look<(), ()>, Stopped> {
        *lease.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
        run.request();
        Ok(Look::Done(()))
    };
    let look = || -> Result<Look<(), ()>, Stopped> {
        // The lease was just written (and proven): the first renewal is one `RENEW` later.
        if std::mem::take(&mut first) {
            return Ok(Look::Pending(()));
        }
        let begun = Instant::now();
        // The server's `Date` not read: a renewal failed, nothing written (`server_time_sent`).
        let failed = match server_time_sent(c, Some((ending, every))) {
            Err(_) if ending.requested() => return Err(Stopped),
            Err(e) => format!(
                "the API server's time could not be read: {e} ({})",
                e.hint()
            ),
            Ok(at) => match lease.renew_by(c, at, begun + every) {
                Ok(Some(true)) => {
                    written = begun;
                    return Ok(Look::Pending(()));
                }
                Ok(Some(false)) => return lose(lease.gone()),
                Ok(None) if at.is_none() => "the API server's time could not be read".to_owned(),
                Ok(None) => "it was not renewed: two conflicts in a row".to_owned(),
                Err(_) if ending.requested() => return Err(Stopped),
                Err(e) => format!("{e} ({})", e.hint()),
            },
        };
        if ending.requested() {
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
        stop: ending,
        say,
    };
    let _ = poll_until(wait, look, |()| Ok::<(), Stopped>(()));
}

#[cfg(test)]
mod tests {
    use super::*;

    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

    fn lease(renewed: Option<i64>, for_s: Option<i32>, created: i64) -> Lease {
        Lease {
            metadata: ObjectMeta {
                creation_timestamp: jiff::Timestamp::from_second(created).ok().map(Time),
                ..Default::default()
            },
            spec: Some(LeaseSpec {
                renew_time: renewed.and_then(micro),
                lease_duration_seconds: for_s,
                ..Default::default()
            }),
        }
    }

    /// A Lease runs out by its `renewTime` and `leaseDurationSeconds` against the server's
    /// time, whatever its age; one without them, by its age.
    #[test]
    fn a_lease_runs_out_by_its_renewal_else_by_its_age() {
        assert!(!run_out(&lease(Some(1000), Some(60), 0), 1060));
        assert!(run_out(&lease(Some(1000), Some(60), 0), 1061));
        assert!(!run_out(&lease(None, None, 1000), 1000 + LEFTOVER_AGE_S));
        assert!(run_out(&lease(None, None, 1000), 1001 + LEFTOVER_AGE_S));
    }
}
