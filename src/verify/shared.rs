//! A run's Lease (coordination.k8s.io/v1, k8s-openapi's type), in whichever namespace it
//! runs: one it made (run.rs) or one it is given (`--namespace`; `fleet rbac --identity verify`
//! makes `calicoctl-win-verify`). Each run names its objects with its run id
//! (`objects::Names`) and labels them with it (`objects::RUN_LABEL`), and holds one Lease
//! named for it, written by the API server's time and renewed every `RENEW` for `LEASE`
//! while the run lives (`keeper::keep`). Its create refusing a name taken (409:
//! kube-apiserver's `Create`, `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/
//! store.go`) is what keeps two runs' ids apart.
//!
//! A run's sweep deletes what killed runs left: a Lease run out as client-go reads one
//! (`renewTime` + `leaseDurationSeconds`: `tools/leaderelection/resourcelock/leaselock.go`),
//! judged against the API server's `Date` (never this host's clock, which a step could move)
//! is deleted with preconditions, the uid and resourceVersion it was judged by (the generic
//! registry's `Delete` refuses another, 409: `staging/src/k8s.io/apiserver/pkg/storage/
//! interfaces.go` `Preconditions.Check`), so that a living run that renewed it meanwhile keeps
//! it; only once that delete is done are its run's objects deleted, each by its uid (in a
//! namespace of its own, the namespace: sweep.rs). Objects of a run with no Lease (killed
//! before it wrote one, or after a sweep deleted it) go once older than `LEFTOVER_AGE`. Only
//! objects carrying verify's labels are listed, and so touched.

use super::keeper;
use super::matrix::{NodeFacts, PlanError, RunError};
use super::objects::{Names, OWNER_LABEL, OWNER_VALUE, RUN_LABEL};
use super::options::Options;
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, Stop, poll_quietly};
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::api::core::v1::{Event, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::{DeleteParams, ListParams, Preconditions};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use super::options::{LEASE, RENEW};
const POLL: Duration = Duration::from_secs(1);
/// A run's objects without its Lease older than this are a killed run's.
const LEFTOVER_AGE_S: i64 = super::options::LEFTOVER_AGE.as_secs() as i64;

/// The run's Lease as it holds it: the object it last wrote (its resourceVersion the
/// precondition of the next write); `done` once the run is over or the Lease is not its own
/// any more (deleted by a sweep that judged it run out).
#[derive(Debug)]
pub struct Held {
    pub names: Names,
    ns: String,
    /// The Lease's uid: the probe pods' controller (`objects::controller`).
    pub uid: String,
    last: Mutex<Lease>,
    done: AtomicBool,
    /// The Lease was deleted, or made again by someone else, while the run ran.
    lost: AtomicBool,
    /// Requested when the renewals end (the run over, or its stop): wakes their wait.
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
        self.done.store(true, Ordering::SeqCst);
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
}

impl Held {
    /// Requested when the renewals end (the run over, or its stop): wakes their wait and cuts
    /// a renewal under way.
    pub fn ending(&self) -> &Stop {
        &self.ending
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
        if self.done.load(Ordering::SeqCst) || self.ending.requested() {
            return Ok(Some(true));
        }
        let Some(at_s) = at_s else {
            return Ok(renewed(&last).is_none().then_some(true));
        };
        let written = write(c, self, &mut last, (Some(at_s), keeper::lease_s()), by)?;
        if written == Some(false) {
            self.lost.store(true, Ordering::SeqCst);
            self.done.store(true, Ordering::SeqCst);
        }
        Ok(written)
    }

    /// The Lease lost to refused renewals, `why`: kept for the run's report.
    pub fn lose(&self, why: String) {
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    /// Why, when the Lease is not the run's any more.
    pub fn gone(&self) -> String {
        format!(
            "{} was deleted, or made again by someone else",
            self.named()
        )
    }
}

/// The Lease renewed at `renew_s` (none: judged by its age) for `for_s` seconds
/// (`keeper::write`, its resourceVersion the precondition).
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
    let change = |mut l: Lease| {
        let spec = l.spec.get_or_insert_with(Default::default);
        spec.renew_time = renew_s.and_then(micro);
        spec.lease_duration_seconds = Some(i32::try_from(for_s).unwrap_or(i32::MAX));
        l
    };
    let ours = |l: &Lease| held.ours(l);
    keeper::write(
        c,
        (&api, &name, &what),
        last,
        (&change, &ours),
        (&Stop::never(), by),
    )
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

/// The run's Lease taken in the namespace given `ns`, after the sweep of what killed runs
/// left there: the Lease held and the runs swept (`NS/ID`).
pub fn claim(c: &Cluster, ns: &str, o: &Options) -> Result<(Held, Vec<String>), RunError> {
    let swept = match probe::server_now(c)? {
        Some(now) => {
            c.note_server_date(now);
            sweep(c, ns, now)?
        }
        // No `Date` from the server: nothing is judged run out.
        None => Vec::new(),
    };
    Ok((take(c, ns, o)?, swept))
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
            lease_duration_seconds: Some(i32::try_from(keeper::lease_s()).unwrap_or(60)),
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
        done: AtomicBool::new(false),
        lost: AtomicBool::new(false),
        ending: o.stop.part(),
        refused: Mutex::new(None),
    })
}

/// Renews the Lease every `every` until the run is over or it is not the run's any more
/// (`keeper::keep`): run beside the run, on a thread of its own.
pub fn keep(c: &Cluster, held: &Held, (run, every): (&Stop, Duration), say: &mut dyn FnMut(&str)) {
    let what = format!("the run's end, renewing {}", held.named());
    keeper::keep(c, held, (&what, run, every), say);
}

/// The Lease's first renewal, before any pod is made: proves that the run may renew it (the
/// identity's `update leases`), so that a run that could not keep it refuses before it runs;
/// refused, the Lease is deleted, or the namespace the run made (`made`: its uid), by its uid
/// (nothing of the run's is in it yet).
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
        Some(uid) => match probe::delete_namespace(c, ns, (Some(uid), None)) {
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
/// seconds by the API server's time (without that time, without `renewTime`: judged by its
/// age, which `for_s` is), after which the next run's sweep deletes them.
pub fn keep_for(c: &Cluster, held: &Held, for_s: i64) -> Result<(), ClusterError> {
    let now = keeper::server_time(c);
    held.ending.request();
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    held.done.store(true, Ordering::SeqCst);
    write(c, held, &mut last, (now, for_s), Instant::now() + RENEW).map(|_| ())
}

/// A lease lost: the lease, named, and why.
pub type Lost = (String, String);

/// The run's Lease as lost by now, if it was (its renewals refused or unanswered until it
/// would run out; the run was stopped for it): the Lease, named, and why. Read where the
/// checks end: a loss during the clean-up, every check judged, is the clean-up's to report.
pub fn lost_by_now(held: &Held) -> Option<Lost> {
    Some((held.named(), held.refused()?))
}

/// The run's Lease lost mid-run (`lost_by_now`, read where the checks ended): the finding
/// that says so, naming the Lease, why, and what became of what the run made.
pub fn lost(
    (lease, cause): Lost,
    (cleaned_up, clean_up_error): (bool, &Option<String>),
) -> crate::installed::health::Finding {
    let fate = match (clean_up_error, cleaned_up) {
        (_, true) => "the run stopped and deleted what it made".to_owned(),
        (Some(e), false) => format!("the run stopped; what it made is not deleted: {e}"),
        (None, false) => "the run stopped; what it made is left to the next run".to_owned(),
    };
    let code = crate::installed::health::Code::VerifyLeaseLost;
    crate::installed::health::Finding::new(
        code,
        lease.clone(),
        format!("the run's lease on {lease} was lost: {cause}; {fate}"),
        code.remedy(),
    )
}

/// The run's clean-up in a namespace given: its objects deleted (by its label, each by its
/// uid), its pods waited for until `until`, then its Lease deleted. Whether all is gone; pods still terminating
/// leave the Lease to run out, and the next run deletes what is left.
pub fn release(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<bool, ClusterError> {
    held.stop();
    remove_run(c, ns, &held.names.id, until)?;
    if !pods_left(c, ns, &held.names.selector(), until)?.is_empty() {
        return Ok(false);
    }
    delete_lease(c, held, until)?;
    Ok(true)
}

/// The Lease deleted while it is the one this run last wrote (uid and resourceVersion).
fn delete_lease(c: &Cluster, held: &Held, until: Instant) -> Result<(), ClusterError> {
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
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: Some(held.uid.clone()),
            resource_version: version,
        }),
        ..Default::default()
    };
    gone(c.call_opt_by(until, ("delete", &what), api.delete(&name, &dp)))
}

/// The sweep at a run's start in `ns`, judged at `now` (the API server's time): the runs
/// whose Lease ran out (`judge`), then their objects; the objects of runs without a Lease,
/// older than `LEFTOVER_AGE`. The runs swept, as `NS/ID`.
fn sweep(c: &Cluster, ns: &str, now: i64) -> Result<Vec<String>, RunError> {
    let until = Instant::now() + super::sweep::GONE_WAIT + RENEW;
    let (living, ran_out) = judge(c, ns, now, until)?;
    let mut swept = Vec::new();
    for id in ran_out {
        remove_run(c, ns, &id, until)?;
        swept.push(format!("{ns}/{id}"));
    }
    // Runs without a Lease: their objects once old.
    for id in leaseless(c, ns, &living, now, until)? {
        remove_run(c, ns, &id, until)?;
        swept.push(format!("{ns}/{id}"));
    }
    Ok(swept)
}

/// The runs' Leases in `ns`, judged at `now`: the ids of the living runs, and of those whose
/// Lease ran out (`run_out`) and was deleted as judged (a 409: renewed, or made again, since
/// it was read: a living run's).
pub fn judge(
    c: &Cluster,
    ns: &str,
    now: i64,
    until: Instant,
) -> Result<(BTreeSet<String>, Vec<String>), ClusterError> {
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), ns);
    let ours = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    let found = c
        .call_by(until, ("list", "leases"), leases.list(&ours))?
        .items;
    let (mut living, mut ran_out) = (BTreeSet::new(), Vec::new());
    for l in &found {
        let Some(id) = l.metadata.labels.as_ref().and_then(|m| m.get(RUN_LABEL)) else {
            continue;
        };
        if !run_out(l, now) {
            living.insert(id.clone());
            continue;
        }
        let name = l.metadata.name.clone().unwrap_or_default();
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: l.metadata.uid.clone(),
                resource_version: l.metadata.resource_version.clone(),
            }),
            ..Default::default()
        };
        let what = format!("leases/{name}");
        match c.call_opt_by(until, ("delete", &what), leases.delete(&name, &dp)) {
            Ok(_) => ran_out.push(id.clone()),
            Err(ClusterError::Api { code: 409, .. }) => {
                living.insert(id.clone());
            }
            Err(e) => return Err(e),
        }
    }
    Ok((living, ran_out))
}

/// The ids of the runs whose objects in `ns` are older than `LEFTOVER_AGE` and whose Lease is
/// not among the `living`, nor there now.
fn leaseless(
    c: &Cluster,
    ns: &str,
    living: &BTreeSet<String>,
    now: i64,
    until: Instant,
) -> Result<BTreeSet<String>, ClusterError> {
    let lp = ListParams::default().labels(RUN_LABEL);
    let mut old = BTreeSet::new();
    let mut add = |meta: &ObjectMeta| {
        let id = meta.labels.as_ref().and_then(|m| m.get(RUN_LABEL));
        if let Some(id) = id.filter(|id| !living.contains(*id))
            && probe::labelled_ours(meta)
            && older(meta, now)
        {
            old.insert(id.clone());
        }
    };
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    for p in c.call_by(until, ("list", "pods"), pods.list(&lp))?.items {
        add(&p.metadata);
    }
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    for s in c
        .call_by(until, ("list", "services"), services.list(&lp))?
        .items
    {
        add(&s.metadata);
    }
    let policies: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let what = ("list", "networkpolicies");
    for p in c.call_by(until, what, policies.list(&lp))?.items {
        add(&p.metadata);
    }
    // A Lease there now (made since the list) is a living run's.
    let leases: Api<Lease> = Api::namespaced(c.client.clone(), ns);
    let mut gone_runs = BTreeSet::new();
    for id in old {
        let name = Names::new(&id, true).lease();
        let what = format!("leases/{name}");
        if c.call_opt_by(until, ("get", &what), leases.get(&name))?
            .is_none()
        {
            gone_runs.insert(id);
        }
    }
    Ok(gone_runs)
}

/// Deletes the objects of the run `id` in `ns`, each by its uid as listed by its label: its
/// pods (those Terminating on a node not Ready or gone at once, `wedged`), their events
/// (matched by the pods' uids), its Service and its policy.
fn remove_run(c: &Cluster, ns: &str, id: &str, until: Instant) -> Result<(), ClusterError> {
    let lp = ListParams::default().labels(&format!("{RUN_LABEL}={id}"));
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let listed = c.call_by(until, ("list", "pods"), pods.list(&lp))?.items;
    let listed: Vec<Pod> = listed
        .into_iter()
        .filter(|p| probe::labelled_ours(&p.metadata))
        .collect();
    super::wedged::force_dead(c, ns, &listed, until)?;
    for p in &listed {
        delete(c, &pods, (&p.metadata, "pods"), until)?;
    }
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    for s in c
        .call_by(until, ("list", "services"), services.list(&lp))?
        .items
    {
        delete(c, &services, (&s.metadata, "services"), until)?;
    }
    let policies: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let what = ("list", "networkpolicies");
    for p in c.call_by(until, what, policies.list(&lp))?.items {
        delete(c, &policies, (&p.metadata, "networkpolicies"), until)?;
    }
    let uids: Vec<&str> = listed
        .iter()
        .filter_map(|p| p.metadata.uid.as_deref())
        .collect();
    let events: Api<Event> = Api::namespaced(c.client.clone(), ns);
    for e in probe::events_by(c, ns, Some(until))? {
        if e.involved_object
            .uid
            .as_deref()
            .is_some_and(|u| uids.contains(&u))
        {
            delete(c, &events, (&e.metadata, "events"), until)?;
        }
    }
    Ok(())
}

/// One object deleted by its uid (`DeleteOptions.preconditions`), if it carries verify's
/// label; gone already, or no longer the object listed, is fine.
fn delete<K>(
    c: &Cluster,
    api: &Api<K>,
    (meta, kind): (&ObjectMeta, &str),
    until: Instant,
) -> Result<(), ClusterError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let name = meta.name.clone().unwrap_or_default();
    let what = format!("{kind}/{name}");
    let dp = probe::only(meta.uid.as_deref());
    gone(c.call_opt_by(until, ("delete", &what), api.delete(&name, &dp)))
}

/// The run's pods in `ns` (by `selector`), waited for (until `until`) to be gone: those not
/// gone.
fn pods_left(
    c: &Cluster,
    ns: &str,
    selector: &str,
    until: Instant,
) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(selector);
    // Quietly, and not cut by the stop: a stopped run's clean-up comes after it.
    let mut seen: Option<Vec<Pod>> = None;
    poll_quietly(
        super::step::last_look(until),
        Pauses::every(POLL),
        || {
            let left = match c.call_by(until, ("list", "pods"), pods.list(&lp)) {
                Ok(l) => l.items,
                Err(ClusterError::Timeout { .. }) if seen.is_some() => {
                    return Ok(Look::Pending(seen.clone().unwrap_or_default()));
                }
                Err(e) => return Err(e),
            };
            seen = Some(left.clone());
            Ok(if left.is_empty() {
                Look::Done(left)
            } else {
                Look::Pending(left)
            })
        },
        Ok,
    )
}

/// A delete's answer: gone already (404) or no longer the object listed (409) is fine.
fn gone<T>(r: Result<T, ClusterError>) -> Result<(), ClusterError> {
    match r {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The nodes, the one under test taken as usable when `--while-cordoned`: the fleet Plan's
/// job runs on it, cordoned by system-upgrade-controller for the change (its drain, then the
/// upgrade container; `pkg/upgrade/job/job.go`), and the probe pods tolerate every
/// `NoSchedule` taint, the cordon's `node.kubernetes.io/unschedulable` too.
pub fn while_cordoned(mut nodes: Vec<NodeFacts>, o: &super::options::Options) -> Vec<NodeFacts> {
    if o.while_cordoned {
        for n in nodes.iter_mut().filter(|n| n.name == o.node) {
            n.usable = true;
        }
    }
    nodes
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A lease of a minute renewed every 15 s is lost at the third refusal in a row: the
    /// fourth renewal would come after it ran out.
    #[test]
    fn the_lease_is_lost_at_the_refusal_after_which_the_next_renewal_is_too_late() {
        assert_eq!(crate::verify::options::REFUSALS_BEFORE_LOST, 3);
    }
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
