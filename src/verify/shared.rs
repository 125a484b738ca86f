//! `verify --namespace NS`: the run in a namespace it is given (`fleet rbac --identity verify`
//! makes `calicoctl-win-verify`) instead of one of its own, so that its rights can be a Role
//! in that namespace (no namespace made or deleted, no pod made elsewhere). Its objects have
//! fixed names, so runs in the one namespace take turns: a run holds the ConfigMap
//! `calicoctl-win-verify-run`, which says which run holds it and until when (`run`,
//! `expires`), renewed every `RENEW` for `LEASE` while the run lives: a run killed outright
//! (a console closed, its pod's container stopped, a kill) holds it at most `LEASE`. Its create is refused, 409, while another run holds it
//! (kube-apiserver's create of an existing name, `staging/src/k8s.io/apiserver/pkg/registry/
//! generic/registry/store.go` `Create`); a turn that ran out by the API server's clock is a
//! killed run's and is taken over by an update that carries the resourceVersion read, so that
//! of two runs taking it over one gets 409 Conflict and waits (`store.go` `Update`). The
//! holder deletes the killed run's objects, runs, deletes what it made (its pods by the uids
//! listed, and their events, matched by those uids), and gives the turn back with a delete that carries the uid and resourceVersion it wrote
//! (preconditions: a turn someone else took over meanwhile is theirs and stays; one its own
//! renewal moved meanwhile is read again and deleted by that, `give_back`). When its
//! pods are not gone in time, it hands the turn on as run out, for the next run to sweep.

use super::keeper;
use super::matrix::{NodeFacts, PlanError, RunError};
use super::objects::{OWNER_LABEL, OWNER_VALUE, POLICY_NAME};
use super::options::Options;
use super::probe;
use super::wedged;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, Stop, Stopped, Wait, poll_quietly, poll_until};
use k8s_openapi::api::core::v1::{ConfigMap, Event, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams, Preconditions};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// What a run whose turn another run took over (or deleted) deleted: the objects of the same
/// names are the other run's now.
pub const ONLY_OWN_PODS: &str =
    "only this run's own pods were deleted (the Service, policy and turn are that run's)";
/// The ConfigMap a run holds while it runs in the namespace.
pub const TURN: &str = crate::cluster::verify_rights::TURN;
const POLL: Duration = Duration::from_secs(1);
/// How long a takeover waits for a killed run's pods: half the lease it just wrote, since the
/// renewals start only once the turn is claimed.
const TAKEOVER_WAIT: Duration = Duration::from_secs(LEASE.as_secs() / 2);
pub use super::options::{LEASE, REFUSALS_BEFORE_LOST, RENEW};
/// A turn written without `expires` (by an older calicoctl-win) runs out this long after its
/// creation: longer than any run and its clean-up, as a killed run's namespace (run.rs).
const UNDATED_TURN_AGE_S: i64 = super::options::LEFTOVER_AGE.as_secs() as i64;

/// The turn as this run holds it: its run and the resourceVersion it last wrote, which its
/// renewals, release and hand-on carry as their precondition; `done` once given back, kept
/// or lost (the renewals stop).
#[derive(Debug)]
pub struct Held {
    run: String,
    /// The namespace given.
    ns: String,
    /// The turn's uid: the probe pods' controller (`objects::controller`). A takeover is an
    /// update, so the uid stays the ConfigMap's.
    pub uid: String,
    /// The turn as this run last wrote (or read) it: its resourceVersion the precondition of
    /// the next write.
    last: std::sync::Mutex<ConfigMap>,
    done: AtomicBool,
    /// Another run took the turn over, or it was deleted: set only by `keep`'s 409 or 404.
    lost: AtomicBool,
    /// The uids of the pods this run made: its clean-up deletes only those.
    made: std::sync::Mutex<Vec<String>>,
    /// The uids of the Service and the policy this run made (`Named`): its clean-up deletes
    /// them by those (`preconditions`), never by name alone.
    named: std::sync::Mutex<[Option<String>; 2]>,
    /// A create of this run got no answer it could trust (an error, a timeout, a cut): what
    /// it made may be there without a uid this run knows, so its clean-up hands the turn on
    /// for the next run to sweep by name instead of giving it back.
    unsettled: AtomicBool,
    /// Requested when the renewals end (the turn given back, kept or lost, or the run's
    /// stop): wakes their wait and cuts a renewal under way.
    ending: Stop,
    /// Why the renewals were refused until the turn would run out, once they were (`keep`).
    refused: std::sync::Mutex<Option<String>>,
}

impl Held {
    /// Whether another run took the turn over (or it was deleted) while this one ran.
    pub fn lost(&self) -> bool {
        self.lost.load(Ordering::SeqCst)
    }

    /// A pod this run made, by its uid.
    pub fn made(&self, uid: Option<String>) {
        if let Some(u) = uid {
            self.made.lock().unwrap_or_else(|e| e.into_inner()).push(u);
        }
    }

    /// The Service or the policy this run made, by its uid.
    pub fn made_named(&self, what: Named, uid: Option<String>) {
        self.named.lock().unwrap_or_else(|e| e.into_inner())[what as usize] = uid;
    }

    /// A create whose answer leaves open whether it made its object (`probe::may_have_made`):
    /// what it made, if anything, has no uid here.
    pub fn made_unsettled(&self) {
        self.unsettled.store(true, Ordering::SeqCst);
    }

    /// The uid of the Service or the policy this run made, if it made it.
    pub fn named(&self, what: Named) -> Option<String> {
        self.named.lock().unwrap_or_else(|e| e.into_inner())[what as usize].clone()
    }

    /// The renewals stopped (the run is over).
    pub fn stop(&self) {
        drop(self.last());
    }

    /// Why the turn's renewals were refused until it would run out (the run was stopped for
    /// it), if they were.
    pub fn refused(&self) -> Option<String> {
        self.refused
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Whether the turn as read is still this run's: its uid (a takeover is an update, a
    /// delete and create makes another), not being deleted, and its `run` this run's (a
    /// takeover writes the other run's).
    fn ours(&self, t: &ConfigMap) -> bool {
        t.metadata.uid.as_deref() == Some(self.uid.as_str())
            && t.metadata.deletion_timestamp.is_none()
            && t.data.as_ref().and_then(|d| d.get("run")) == Some(&self.run)
    }

    /// The version last written, with the renewals stopped for good: the renewals' wait is
    /// ended (a renewal under way cut), then the lock taken, so that none follows.
    fn last(&self) -> Option<String> {
        self.ending.request();
        let v = self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.done.store(true, Ordering::SeqCst);
        v.metadata.resource_version.clone()
    }
}

/// An object of a fixed name the run makes besides its pods.
#[derive(Clone, Copy, Debug)]
pub enum Named {
    Service,
    Policy,
}

impl keeper::Lease for Held {
    fn ending(&self) -> &Stop {
        &self.ending
    }

    /// Taken over (or deleted), the turn is another run's now, never taken back. A turn
    /// made without `expires` (no time from the server then) is judged by its age: nothing
    /// to renew until the server's time is known.
    fn renew_by(
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
            let dated = last
                .data
                .as_ref()
                .is_some_and(|d| d.contains_key("expires"));
            return Ok((!dated).then_some(true));
        };
        let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), &self.ns);
        let what = format!("configmaps/{TURN}");
        let change = |t: ConfigMap| turn(&self.run, Some(at_s), t.metadata.resource_version);
        let ours = |t: &ConfigMap| self.ours(t);
        let written = keeper::write(
            c,
            (&api, TURN, &what),
            &mut last,
            (&change, &ours),
            (&self.ending, by),
        )?;
        if written == Some(false) {
            self.lost.store(true, Ordering::SeqCst);
            self.done.store(true, Ordering::SeqCst);
        }
        Ok(written)
    }

    fn lose(&self, why: String) {
        *self.refused.lock().unwrap_or_else(|p| p.into_inner()) = Some(why);
    }

    fn gone(&self) -> String {
        format!(
            "another run took the turn in {} over, or deleted it",
            self.ns
        )
    }
}

/// The turn taken: held, and the killed run (`NS/run`) whose objects were deleted, if any.
#[derive(Debug)]
pub struct Claimed {
    pub held: Held,
    pub swept: Vec<String>,
}

/// The turn of `run`, running out at `expires_s` (none: judged by its creation's age).
fn turn(run: &str, expires_s: Option<i64>, version: Option<String>) -> ConfigMap {
    let mut data = BTreeMap::from([("run".into(), run.to_owned())]);
    if let Some(t) = expires_s {
        data.insert("expires".into(), crate::duration::time_text(t));
    }
    ConfigMap {
        metadata: ObjectMeta {
            name: Some(TURN.into()),
            labels: Some(BTreeMap::from([(OWNER_LABEL.into(), OWNER_VALUE.into())])),
            resource_version: version,
            ..Default::default()
        },
        data: Some(data),
        ..Default::default()
    }
}

fn held((run, ns): (&str, &str), written: &ConfigMap, stop: &Stop) -> Held {
    Held {
        ending: stop.part(),
        refused: std::sync::Mutex::new(None),
        run: run.to_owned(),
        ns: ns.to_owned(),
        uid: written.metadata.uid.clone().unwrap_or_default(),
        last: std::sync::Mutex::new(written.clone()),
        done: AtomicBool::new(false),
        lost: AtomicBool::new(false),
        made: std::sync::Mutex::new(Vec::new()),
        named: std::sync::Mutex::new([None, None]),
        unsettled: AtomicBool::new(false),
    }
}

/// Renews the turn every `every` until it is given back, kept or lost (`keeper::keep`): run
/// beside the run, on a thread of its own.
pub fn keep(
    c: &Cluster,
    ns: &str,
    held: &Held,
    (run, every): (&Stop, Duration),
    say: &mut dyn FnMut(&str),
) {
    let what = format!("the run's end, renewing its turn in {ns}");
    keeper::keep(c, held, (&what, run, every), say);
}

/// The turn's first renewal, before any pod is made: proves that the run may renew it (the
/// identity's `update` on it, which `fleet rbac --identity verify` grants), so that a run
/// that could not keep its turn refuses before it runs. Refused, the turn is given back
/// (nothing of the run's is in the namespace yet) and the error says so.
pub fn prove(c: &Cluster, ns: &str, held: &Held) -> Result<(), RunError> {
    // Not renewed for want of the server's time, or by two conflicts, the turn just made
    // still runs on; taken over or deleted already, the run refuses.
    let cause = match renew(c, held, RENEW) {
        Ok(Some(true) | None) => return Ok(()),
        Ok(Some(false)) => format!("another run took the turn in {ns} over, or deleted it"),
        Err(e) => format!("{e} ({})", e.hint()),
    };
    let fate = match release(c, ns, held, Instant::now() + RENEW) {
        Ok(_) => "nothing was run: the turn was given back".to_owned(),
        Err(r) => format!(
            "nothing was run; giving the turn back failed too ({r}): it runs out within a minute"
        ),
    };
    Err(RunError::Plan(PlanError::LeaseLost {
        lease: format!("configmaps/{TURN} in namespace {ns}"),
        cause,
        fate,
    }))
}

/// One renewal of the turn, by the API server's time (`keeper::server_time`), the whole of
/// it (that time read, a 409's re-read and retry) ended by the renewals' end or `within`:
/// whether the turn is still this run's (`None`: not renewed this time, the lease runs on
/// to the next).
pub fn renew(c: &Cluster, held: &Held, within: Duration) -> Result<Option<bool>, ClusterError> {
    let by = Instant::now() + within;
    let at = keeper::server_time_unless(c, Some((&held.ending, within)));
    keeper::Lease::renew_by(held, c, at.map(|t| t + keeper::lease_s()), by)
}

/// When a turn runs out (unix seconds): its `expires`, else (one written without it) its
/// creation and `leftover_age_s`.
pub fn expiry(cm: &ConfigMap, leftover_age_s: i64) -> Option<i64> {
    let written = cm.data.as_ref().and_then(|d| d.get("expires"));
    match written {
        Some(t) => t.parse::<jiff::Timestamp>().ok().map(|t| t.as_second()),
        None => cm
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_second() + leftover_age_s),
    }
}

/// Takes the namespace's turn for `LEASE` (`keep` renews it), waiting (within `deadline`,
/// a look every `POLL`, ended by the run's stop) while another run holds it; a turn that ran
/// out is taken over and its run's objects deleted. Waited out (or stopped), the last
/// refusal (409) is the error.
pub fn claim(
    c: &Cluster,
    (ns, run): (&str, &str),
    deadline: Instant,
    o: &Options,
) -> Result<Claimed, RunError> {
    let what = format!("the turn in {ns} (configmaps/{TURN}) that another run holds");
    let mut last: Option<ClusterError> = None;
    let started = Instant::now();
    let look = || -> Result<Look<Claimed, ()>, Claiming> {
        match try_claim(c, (ns, run), deadline, &o.stop)? {
            Ok(claimed) => Ok(Look::Done(claimed)),
            Err(refused) => {
                last = Some(refused);
                Ok(Look::Pending(()))
            }
        }
    };
    let wait = Wait {
        what: &what,
        timeout: super::step::last_look(deadline).saturating_duration_since(started),
        pauses: Pauses::every(POLL),
        stop: &o.stop,
        say: &mut |l| o.said.say(l),
    };
    let ended = poll_until(wait, look, |()| Err(Claiming::WaitedOut));
    match ended {
        Ok(claimed) => Ok(claimed),
        Err(Claiming::Run(e)) => Err(e),
        Err(Claiming::WaitedOut | Claiming::Stopped) => Err(last
            .unwrap_or_else(|| ClusterError::Timeout {
                server: c.server.clone(),
                what: format!("claim the turn in {ns}: stopped before it was asked"),
                after: started.elapsed(),
            })
            .into()),
    }
}

/// How a wait for the turn ended, other than with it.
enum Claiming {
    Run(RunError),
    WaitedOut,
    Stopped,
}

impl From<Stopped> for Claiming {
    fn from(_: Stopped) -> Self {
        Self::Stopped
    }
}

impl From<RunError> for Claiming {
    fn from(e: RunError) -> Self {
        Self::Run(e)
    }
}

impl From<ClusterError> for Claiming {
    fn from(e: ClusterError) -> Self {
        Self::Run(e.into())
    }
}

/// One try at the turn: taken (made, or taken over from a killed run, whose objects are
/// deleted), or the refusal while another run holds it.
fn try_claim(
    c: &Cluster,
    (ns, run): (&str, &str),
    deadline: Instant,
    stop: &Stop,
) -> Result<Result<Claimed, ClusterError>, RunError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let what = format!("configmaps/{TURN}");
    let pp = PostParams::default();
    // Its `expires` by the API server's time: its `Date`, else the last `Date` it sent this
    // client moved on by the monotonic time since; without either, none (judged by its age):
    // never this host's wall clock, which a step would put behind the server's.
    let now = probe::server_now(c)?;
    if let Some(t) = now {
        c.note_server_date(t);
    }
    let server = now.or_else(|| c.server_clock(RENEW));
    let expires = server.map(|t| t + keeper::lease_s());
    let refused = match c.call("create", &what, api.create(&pp, &turn(run, expires, None))) {
        Ok(made) => {
            return Ok(Ok(Claimed {
                held: held((run, ns), &made, stop),
                swept: Vec::new(),
            }));
        }
        Err(e @ ClusterError::Api { code: 409, .. }) => e,
        Err(e) => return Err(e.into()),
    };
    // Run out by the API server's clock (none is taken over without its `Date`).
    if let Some(now) = now
        && let Some(current) = c.call_opt("get", &what, api.get(TURN))?
        && expiry(&current, UNDATED_TURN_AGE_S).is_some_and(|t| now > t)
    {
        let version = current.metadata.resource_version.clone();
        match c.call(
            "update",
            &what,
            api.replace(TURN, &pp, &turn(run, expires, version)),
        ) {
            Ok(taken) => {
                let killed = current.data.and_then(|d| d.get("run").cloned());
                let held = held((run, ns), &taken, stop);
                // The killed run's objects go before this run makes its own, of the same
                // names; a failure hands the turn on for the next run.
                let until = takeover_until(Instant::now(), deadline);
                if let Err(e) = sweep_killed(c, ns, until) {
                    let _ = hand_on(c, ns, &held, Instant::now() + RENEW);
                    return Err(e);
                }
                let name = killed.as_deref().unwrap_or(TURN);
                return Ok(Ok(Claimed {
                    held,
                    swept: vec![format!("{ns}/{name}")],
                }));
            }
            // Another run took it over first: its turn now.
            Err(ClusterError::Api { code: 409, .. }) => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(Err(refused))
}

/// When a takeover's clean-up of a killed run's objects, begun `now`, must end: within half
/// the lease just written (no renewal runs yet), and within the run's `deadline`.
fn takeover_until(now: Instant, deadline: Instant) -> Instant {
    (now + TAKEOVER_WAIT).min(deadline)
}

/// A killed run's objects deleted (until `until`); its pods still Terminating on a node not
/// Ready (or gone) deleted at once (`wedged`); pods still there, named in an error (no pod
/// of this run is made: theirs have the same names).
fn sweep_killed(c: &Cluster, ns: &str, until: Instant) -> Result<(), RunError> {
    let left = remove_objects(c, ns, None, until)?;
    if left.is_empty() {
        return Ok(());
    }
    let left = if wedged::force_dead(c, ns, &left, until)?.is_empty() {
        left
    } else {
        pods_left(c, ns, None, Instant::now() + 3 * POLL)?
    };
    if left.is_empty() {
        return Ok(());
    }
    let pods = wedged::stuck(&left)
        .iter()
        .map(|s| format!("{} on node {}", s.pod, s.node))
        .collect::<Vec<_>>()
        .join(", ");
    Err(RunError::Plan(PlanError::Wedged {
        namespace: ns.to_owned(),
        pods,
    }))
}

/// How a release ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Released {
    /// The run's objects gone and the turn given back.
    Done,
    /// Pods not gone in time: the turn handed on as run out, for the next run to sweep.
    PodsLeft,
    /// The objects gone, the turn not deleted (still this run's after a second 409): it
    /// remains until its lease runs out.
    TurnLeft,
    /// The turn was another run's (taken over) or deleted: only this run's pods deleted.
    Lost,
    /// The run's objects known by uid gone, but a create of this run got an error for its
    /// answer (it may have made an object this run cannot name by uid): the turn handed on as
    /// run out, for the next run to sweep by name.
    Unsettled,
    /// The run's objects gone (by their uids), the turn found another run's (taken over) or
    /// deleted when it was to be given back.
    LostAtGiveBack,
}

/// Deletes the run's objects, waits (until `until`) for its pods to be gone, then gives the
/// turn back; pods not gone by then, it hands the turn on as run out. How it ended.
pub fn release(
    c: &Cluster,
    ns: &str,
    held: &Held,
    until: Instant,
) -> Result<Released, ClusterError> {
    if held.lost() || !still_ours(c, ns, held, until)? {
        held.lost.store(true, Ordering::SeqCst);
        release_lost(c, ns, held, until)?;
        return Ok(Released::Lost);
    }
    // The turn may change hands from here on: what is deleted is this run's by its uids.
    if !remove_objects(c, ns, Some(held), until)?.is_empty() {
        hand_on(c, ns, held, until)?;
        return Ok(Released::PodsLeft);
    }
    // A create answered with an error may have committed all the same (kube-apiserver's
    // handler goes on after the request's deadline, `finisher.go` `asyncFinisher`; a client
    // retry of a committed POST meets 409 AlreadyExists): its object has no uid here. Handed
    // on as run out, the turn is the next run's to take over at once, and a takeover sweeps
    // every pod of the owner label, the Service and the policy by name (`sweep_killed`).
    if held.unsettled.load(Ordering::SeqCst) {
        hand_on(c, ns, held, until)?;
        return Ok(Released::Unsettled);
    }
    give_back(c, ns, held, until)
}

/// The turn deleted while it is the one this run last wrote: the delete carries its uid and
/// resourceVersion as `DeleteOptions.preconditions`, which kube-apiserver checks against the
/// object it is about to delete and refuses with 409 Conflict when either differs
/// (`staging/src/k8s.io/apiserver/pkg/storage/interfaces.go` `Preconditions.Check`, called
/// by the generic registry's `Delete`, `staging/src/k8s.io/apiserver/pkg/registry/generic/
/// registry/store.go`). A 409 is read again: a renewal the run gave up on (cut by the
/// release's end of the renewals) that the server committed all the same moved the
/// resourceVersion, and the turn, still this run's (`Held::ours`), is deleted once more by
/// the one read, within `until`; taken over or gone, it is the other run's (or no one's) and
/// stays, and the turn is lost. A second 409 leaves it to run out within its lease
/// (`TurnLeft`).
fn give_back(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<Released, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let what = format!("configmaps/{TURN}");
    let mut version = held.last();
    for again in [false, true] {
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                resource_version: version.clone(),
                uid: Some(held.uid.clone()).filter(|u| !u.is_empty()),
            }),
            ..Default::default()
        };
        match c.call_opt_by(until, ("delete", &what), api.delete(TURN, &dp)) {
            Ok(_) => return Ok(Released::Done),
            Err(ClusterError::Api { code: 409, .. }) if !again => {
                match c.call_opt_by(until, ("get", &what), api.get(TURN))? {
                    Some(now) if held.ours(&now) => version = now.metadata.resource_version,
                    // Taken over meanwhile (this run outlived its turn): the other run's now.
                    _ => {
                        held.lost.store(true, Ordering::SeqCst);
                        return Ok(Released::LostAtGiveBack);
                    }
                }
            }
            // Still this run's after a second 409: it runs out within its lease.
            Err(ClusterError::Api { code: 409, .. }) => return Ok(Released::TurnLeft),
            Err(e) => return Err(e),
        }
    }
    Ok(Released::TurnLeft)
}

/// Whether the turn is still this run's: another run's takeover, or a delete, is seen before
/// anything is deleted by name. The one this run last wrote (its resourceVersion) is; one of
/// another resourceVersion is judged as the renewals judge it (`Held::ours`): a renewal the
/// run gave up on that the server committed all the same moved it. That turn, as read, is
/// then the one held, so that the turn's delete carries its resourceVersion.
fn still_ours(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<bool, ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let version = |l: &ConfigMap| l.metadata.resource_version.clone();
    let before = version(&held.last.lock().unwrap_or_else(|e| e.into_inner()));
    let what = format!("configmaps/{TURN}");
    let Some(current) = c.call_opt_by(until, ("get", &what), api.get(TURN))? else {
        return Ok(false);
    };
    if version(&current) == before {
        return Ok(true);
    }
    if !held.ours(&current) {
        return Ok(false);
    }
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    // A renewal written since the read is newer than the turn read: it stays the one held.
    if version(&last) == before {
        *last = current;
    }
    Ok(true)
}

/// A run that lost its turn deletes only the pods it made, by their uids: the Service, the
/// policy, the events and the turn are the new holder's (same names), and stay.
fn release_lost(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<(), ClusterError> {
    held.stop();
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let made = held.made.lock().unwrap_or_else(|e| e.into_inner()).clone();
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    let listed = c.call_by(until, ("list", "pods"), pods.list(&lp))?.items;
    for p in listed
        .iter()
        .filter(|p| p.metadata.uid.as_ref().is_some_and(|u| made.contains(u)))
    {
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = probe::only(p.metadata.uid.as_deref());
        let what = format!("pods/{name}");
        gone(c.call_opt_by(until, ("delete", &what), pods.delete(&name, &dp)))?;
    }
    Ok(())
}

/// The turn written as run out, while it is still this run's: the next run takes it over
/// at once and deletes what is left.
fn hand_on(c: &Cluster, ns: &str, held: &Held, until: Instant) -> Result<(), ClusterError> {
    hold_until(c, ns, held, Some(0), until)
}

/// What the run made kept (`--keep-on-failure`): the turn held for `for_s` more seconds by
/// the API server's time (`keeper::server_time`), then the next run takes it over and
/// deletes them; without that time, written without `expires`: judged by its age
/// (`UNDATED_TURN_AGE_S`, which `for_s` is), never by this host's clock.
pub fn keep_for(c: &Cluster, ns: &str, held: &Held, for_s: i64) -> Result<(), ClusterError> {
    let now = keeper::server_time(c);
    hold_until(c, ns, held, now.map(|t| t + for_s), Instant::now() + RENEW)
}

/// The turn's last write, while it is still this run's: `expires` at `until_s` (none:
/// judged by its age), no renewal after it.
fn hold_until(
    c: &Cluster,
    ns: &str,
    held: &Held,
    until_s: Option<i64>,
    until: Instant,
) -> Result<(), ClusterError> {
    let api: Api<ConfigMap> = Api::namespaced(c.client.clone(), ns);
    let version = held.last();
    let out = turn(&held.run, until_s, version);
    let what = format!("configmaps/{TURN}");
    let pp = PostParams::default();
    match c.call_opt_by(until, ("update", &what), api.replace(TURN, &pp, &out)) {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// Deletes a run's objects in `ns` and waits (until `until`) for its pods to be gone: the
/// next run makes pods of the same names. The pods not gone. A killed run's (`own` none,
/// swept by the run that just took its turn over): every pod of the owner label, the Service
/// and the policy by name. This run's own (`own`): only the pods, the Service and the policy
/// it made, each deleted by its uid (`DeleteOptions.preconditions`, which kube-apiserver's
/// `Delete` checks against the object, 409 Conflict on a mismatch: `staging/src/k8s.io/
/// apiserver/pkg/registry/generic/registry/store.go`), so that a run that took the turn over
/// meanwhile keeps what it made of the same names (a 409 there: not this run's, left).
fn remove_objects(
    c: &Cluster,
    ns: &str,
    own: Option<&Held>,
    until: Instant,
) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    let listed = c.call_by(until, ("list", "pods"), pods.list(&lp))?.items;
    let made = own.map(|h| h.made.lock().unwrap_or_else(|e| e.into_inner()).clone());
    let uids: Vec<String> = listed
        .iter()
        .filter_map(|p| p.metadata.uid.clone())
        .filter(|u| made.as_ref().is_none_or(|m| m.contains(u)))
        .collect();
    for p in &listed {
        let Some(uid) = p
            .metadata
            .uid
            .as_deref()
            .filter(|u| uids.iter().any(|o| o == u))
        else {
            continue;
        };
        let name = p.metadata.name.clone().unwrap_or_default();
        let dp = probe::only(Some(uid));
        let what = format!("pods/{name}");
        gone(c.call_opt_by(until, ("delete", &what), pods.delete(&name, &dp)))?;
    }
    // This run's own Service and policy by the uids it recorded (one it did not make, its
    // create refused, is not its to delete); a killed run's by the uid of the one of that
    // name found carrying the owner label (an administrator's `server` Service is not ours).
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    let policies: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let service = super::dial::SERVICE_NAME;
    let uid = match own {
        Some(h) => h.named(Named::Service),
        None => labelled_uid(c, &services, service, until)?,
    };
    if let Some(uid) = uid {
        let what = format!("services/{service}");
        let dp = probe::only(Some(&uid));
        let gone_now = services.delete(service, &dp);
        gone(c.call_opt_by(until, ("delete", &what), gone_now))?;
    }
    let uid = match own {
        Some(h) => h.named(Named::Policy),
        None => labelled_uid(c, &policies, POLICY_NAME, until)?,
    };
    if let Some(uid) = uid {
        let what = format!("networkpolicies/{POLICY_NAME}");
        let dp = probe::only(Some(&uid));
        let gone_now = policies.delete(POLICY_NAME, &dp);
        gone(c.call_opt_by(until, ("delete", &what), gone_now))?;
    }
    // The pods' events go too, matched by the pods' uids (probe.rs reads them so).
    let events: Api<Event> = Api::namespaced(c.client.clone(), ns);
    let all = probe::events_by(c, ns, Some(until))?;
    let ours = |e: &Event| {
        e.involved_object
            .uid
            .as_ref()
            .is_some_and(|u| uids.contains(u))
    };
    for e in all.iter().filter(|e| ours(e)) {
        let name = e.metadata.name.clone().unwrap_or_default();
        let dp = probe::only(e.metadata.uid.as_deref());
        let what = format!("events/{name}");
        gone(c.call_opt_by(until, ("delete", &what), events.delete(&name, &dp)))?;
    }
    // The next run makes pods of the same names: the turn is given back once they are gone.
    pods_left(c, ns, made.as_deref(), until)
}

/// The uid of the object `name` when it is there and carries the owner label (a killed run's
/// of a fixed name), else none: what is not labelled ours is not deleted.
fn labelled_uid<K>(
    c: &Cluster,
    api: &Api<K>,
    name: &str,
    until: Instant,
) -> Result<Option<String>, ClusterError>
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let found = c.call_opt_by(until, ("get", name), api.get(name))?;
    Ok(found
        .filter(|o| probe::labelled_ours(o.meta()))
        .and_then(|o| o.meta().uid.clone()))
}

/// The run's pods in `ns` (only those of the uids `made`, when given), waited for (until
/// `until`) to be gone: those not gone.
fn pods_left(
    c: &Cluster,
    ns: &str,
    made: Option<&[String]>,
    until: Instant,
) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    // Quietly, and not cut by the stop: a stopped run's clean-up comes after it.
    // The last look, at `until`, has no time left: the pods seen before are those left.
    let mut seen: Option<Vec<Pod>> = None;
    poll_quietly(
        super::step::last_look(until),
        Pauses::every(POLL),
        || {
            let left: Vec<Pod> = match c.call_by(until, ("list", "pods"), pods.list(&lp)) {
                Ok(l) => l
                    .items
                    .into_iter()
                    .filter(|p| {
                        let uid = p.metadata.uid.as_ref();
                        made.is_none_or(|m| uid.is_some_and(|u| m.contains(u)))
                    })
                    .collect(),
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
mod takeover_tests {
    use super::*;

    /// A takeover's clean-up of a killed run's objects ends at half the lease it just wrote
    /// (no renewal runs until the turn is claimed, so the lease must outlast it), or at the
    /// run's deadline when that comes first. Instants made up, no time passes.
    #[test]
    fn a_takeovers_clean_up_is_capped_by_half_the_lease_and_the_runs_deadline() {
        let now = Instant::now();
        let far = now + Duration::from_secs(600);
        assert_eq!(takeover_until(now, far), now + LEASE / 2);
        let near = now + Duration::from_secs(10);
        assert_eq!(takeover_until(now, near), near);
    }
}
