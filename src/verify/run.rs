//! One `verify` run: the leftovers of killed runs removed, the matrix planned, the probe
//! objects made in a namespace of their own, each check run and judged, and the namespace
//! deleted (and waited for) whatever happened, unless kept on failure. Every wait is bounded,
//! and all of them by the run's deadline.

use super::dial::{self, Addresses};
use super::judge::{self, Outcome, PodState, Verdict};
use super::lease;
use super::matrix::{self, CheckId, Matrix, Role, Skipped};
use super::objects;
pub use super::options::Options;
use super::probe;
use super::settle::{self, Ledger};
use super::shared;
use super::step::{POLL, interrupted, ms};
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, poll_quietly};
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use serde::Serialize;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The longest the namespace's deletion is waited for, kept out of `--timeout`'s checks so
/// that the whole run stays within it (a quarter of it when it is short).
pub const CLEANUP_WAIT: Duration = Duration::from_secs(30);
/// The run's Lease, the probe pods' controller.
const LEASE_KIND: (&str, &str) = ("coordination.k8s.io/v1", "Lease");

/// What the run found.
#[derive(Debug, Default, Serialize)]
pub struct Report {
    pub node: String,
    pub namespace: String,
    /// The run's id: the value of the label its objects carry (`objects::RUN_LABEL`).
    pub run: String,
    pub image: String,
    /// The other nodes chosen to carry a client pod (a Linux node, another Windows node).
    pub peers: Vec<matrix::Peer>,
    pub checks: Vec<Verdict>,
    pub skipped: Vec<Skipped>,
    pub passed: bool,
    pub timed_out: bool,
    /// Ctrl-C or a termination signal stopped it.
    pub interrupted: bool,
    /// The run's lease was lost mid-run and the run stopped for it (`verify-lease-lost`): the
    /// checks judged by then keep their verdicts, the rest are `stopped`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lease_lost: Option<crate::health::judge::Finding>,
    /// The namespaces of killed runs this run deleted (a Terminating one: once seen gone).
    pub leftovers_removed: Vec<String>,
    /// The Terminating namespaces of killed runs this run left, each with why.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub leftovers_left: Vec<String>,
    /// Whether the namespace is gone at the end (kept on failure, or its deletion not done);
    /// in a namespace given (`--namespace`), whether what the run made there is.
    pub cleaned_up: bool,
    /// How long the deletion of the namespace was waited for.
    pub cleanup_ms: u64,
    /// The namespace was given (`--namespace`): neither made nor deleted by the run.
    pub namespace_given: bool,
    /// Why what the run made in a namespace given could not be deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clean_up_error: Option<String>,
    /// The whole run, the image pull included.
    pub took_ms: u64,
    /// This node's own health findings, when `verify` runs on the node it verifies.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub node_health: Vec<crate::health::judge::Finding>,
    /// The failing checks whose layer one of `node_health` explains (`node_health::join`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub explained: Vec<super::judge::Explained>,
}

pub use super::matrix::RunError;

/// Runs `verify` for one node. `--timeout` bounds it all, the sweep of leftovers and the
/// cleanup included; the image pull is added to it, up to its own limit.
pub fn run(c: &Cluster, o: &Options) -> Result<Report, RunError> {
    // `install --verify` waits for Ready within a `--timeout` of its own, before the checks'.
    if o.wait_ready {
        super::ready::wait(c, o, Instant::now() + o.timeout)?;
    }
    // A stop of the whole (Ctrl-C, a container's stop), told from the run's own stop for a
    // lost lease.
    let whole = o.stop.clone();
    // The run's own stop (a part of Ctrl-C's, requested alone by a lost lease) cuts this
    // thread's calls in flight until the guard is dropped.
    c.cut_on(&o.stop);
    let o = &Options {
        stop: o.stop.part(),
        ..o.clone()
    };
    let _cut = crate::cluster::cut_here(&o.stop);
    let start = Instant::now();
    let reserve = CLEANUP_WAIT.min(o.timeout / 4);
    let checks_until = start + o.timeout - reserve;
    let swept = match &o.namespace {
        None => super::sweep::sweep(
            c,
            (super::options::GONE_WAIT.min(o.timeout / 10), checks_until),
        )?,
        // A killed run's objects in a namespace given are swept before its Lease is taken.
        Some(_) => Default::default(),
    };
    for line in &swept.left {
        o.said.say(line);
    }
    let mut leftovers_removed = swept.removed;
    let nodes = shared::while_cordoned(probe::nodes(c)?, o);
    let m = matrix::plan(&o.node, &nodes, &o.image, o.egress.as_deref())?;
    let (name, held, made) = take_namespace(c, o, &mut leftovers_removed)?;
    // The probe pods' controller (`objects::controller`): the run's Lease.
    let owner = objects::controller(LEASE_KIND, &held.names.lease(), &held.uid);
    let run = Begun {
        owner: &owner,
        start,
        reserve,
        checks_until,
        name: &name,
        held: &held,
        made: made.as_deref(),
    };
    let (mut report, cleaned, lost) = std::thread::scope(|s| {
        // The run's Lease renewed while the run lives, until its clean-up ends it.
        let every = (&o.stop, o.renew);
        let h = &held;
        s.spawn(move || lease::keep(c, h, every, &mut |l| o.said.say(l)));
        let done = checks_and_clean_up(c, o, &m, &run);
        held.stop();
        done
    })?;
    lease_lost(&mut report, lost, &held, &whole);
    report.leftovers_removed = leftovers_removed;
    report.leftovers_left = swept.left;
    report.peers = m.peers();
    report.skipped = m.skipped;
    report.cleanup_ms = ms(cleaned.elapsed());
    report.took_ms = ms(start.elapsed());
    Ok(report)
}

/// A lease lost by the checks' end fails the run (exit 1), `interrupted` only when `whole`
/// (Ctrl-C) was stopped too; one lost during the clean-up is said in its error alone.
fn lease_lost(
    report: &mut Report,
    lost: Option<lease::Lost>,
    held: &lease::Held,
    whole: &crate::duration::Stop,
) {
    let taken_over = held.lost();
    let Some(lost) = lost else {
        let later = lease::lost_by_now(held);
        if let Some((lease, cause)) = later.filter(|_| !taken_over && !report.cleaned_up) {
            let lease_lost =
                format!("the run's lease on {lease} was lost during its clean-up: {cause}");
            report.clean_up_error = Some(match report.clean_up_error.take() {
                Some(e) => format!("{e}; {lease_lost}"),
                None => lease_lost,
            });
        }
        return;
    };
    let ended = (report.cleaned_up, &report.clean_up_error);
    report.lease_lost = Some(lease::lost(lost, ended));
    report.passed = false;
    report.interrupted = whole.requested();
}

/// The run's namespace and its Lease there (proven by a first renewal): a namespace made (its uid,
/// `made`), or, given, the Lease taken there after the sweep of killed runs, added to `swept`.
fn take_namespace(
    c: &Cluster,
    o: &Options,
    swept: &mut Vec<String>,
) -> Result<(String, lease::Held, Option<String>), RunError> {
    Ok(match &o.namespace {
        None => {
            let (api, ns) = (
                Api::<Namespace>::all(c.client.clone()),
                objects::namespace(&o.suffix),
            );
            let ns = c.call("create", "namespaces", api.create(&Default::default(), &ns))?;
            let name = ns.metadata.name.unwrap_or_default();
            let uid = ns.metadata.uid.unwrap_or_default();
            let held = lease::take(c, &name, o).map_err(|e| owner_not_made(c, (&name, &uid), e))?;
            lease::prove(c, &held, Some(&uid))?;
            (name, held, Some(uid))
        }
        Some(ns) => {
            let (held, killed) = shared::claim(c, ns, o)?;
            swept.extend(killed);
            lease::prove(c, &held, None)?;
            (ns.clone(), held, None)
        }
    })
}

/// A run under way: its start, the clean-up's reserve, the checks' end, its namespace and
/// the Lease it holds there.
struct Begun<'a> {
    start: Instant,
    reserve: Duration,
    checks_until: Instant,
    name: &'a str,
    held: &'a lease::Held,
    /// The namespace's uid, when the run made it.
    made: Option<&'a str>,
    owner: &'a OwnerReference,
}

/// The checks run, then what the run made deleted (or kept on failure): the report, when
/// the clean-up began, and the run's lease if it was lost by the checks' end.
fn checks_and_clean_up(
    c: &Cluster,
    o: &Options,
    m: &Matrix,
    run: &Begun,
) -> Result<(Report, Instant, Option<lease::Lost>), RunError> {
    let (name, held) = (run.name, (run.held, run.made));
    let (mut ledger, timed_out, pull) = match checks(c, o, m, (name, run.owner), run.checks_until) {
        Ok(done) => done,
        // A call the stop cut before the checks: the run was interrupted, none judged.
        Err(_) if interrupted(o) => {
            let mut ledger = Ledger::default();
            let all: Vec<CheckId> = m.checks.iter().map(|c| c.id).collect();
            ledger.stopped(&all);
            (ledger, false, Duration::ZERO)
        }
        Err(e) => {
            // What was made goes, whatever stopped the run, unless kept (and marked so, or
            // the next run's sweep would delete it).
            if o.keep_on_failure {
                keep_all(c, (name, held), &format!("kept after: {e}"));
            } else {
                let until = cleanup_until(o, Instant::now() + run.reserve.max(POLL));
                clean_up(c, (name, held), until, &mut None);
            }
            return Err(pod_security(e, name));
        }
    };
    // The lease as the checks ended: a loss in the clean-up after them judges no check.
    let lost = lease::lost_by_now(run.held);
    let stopped = interrupted(o);
    let timed_out = timed_out && !stopped;
    if timed_out {
        ledger.timed_out(m.checks.iter().map(|c| c.id));
    }
    let passed = ledger.passed() && !timed_out && !stopped;
    let cleaning = Instant::now();
    let mut clean_up_error = None;
    // A stopped run (Ctrl-C, a container's stop, or its lease lost, which stops it) failed no
    // check: it deletes what it made, within the stopped clean-up's bound.
    let cleaned_up = if o.keep_on_failure && !passed && !stopped {
        clean_up_error = keep_all(c, (name, held), "a check failed");
        false
    } else {
        let until = cleanup_until(o, (run.start + o.timeout + pull).max(cleaning + POLL));
        clean_up(c, (name, held), until, &mut clean_up_error)
    };
    let report = Report {
        node: o.node.to_string(),
        namespace: name.to_owned(),
        run: o.suffix.clone(),
        image: o.image.clone(),
        checks: ledger.verdicts,
        passed,
        timed_out,
        interrupted: stopped,
        cleaned_up,
        namespace_given: o.namespace.is_some(),
        clean_up_error,
        ..Report::default()
    };
    Ok((report, cleaning, lost))
}

/// A refusal by Pod Security admission, told apart from a missing right (both are 403s):
/// its message says "violates PodSecurity \"LEVEL:VERSION\"" (kubernetes
/// `staging/src/k8s.io/pod-security-admission/admission/admission.go`, `EvaluatePod`).
fn pod_security(e: ClusterError, ns: &str) -> RunError {
    let level = match &e {
        ClusterError::Api {
            code: 403, message, ..
        } => message
            .split_once("violates PodSecurity \"")
            .and_then(|(_, rest)| rest.split_once('"'))
            // "restricted:latest": the enforce label's level, then its enforce-version.
            .map(|(level, _)| level.split(':').next().unwrap_or(level).to_owned()),
        _ => None,
    };
    match (level, e) {
        (Some(level), ClusterError::Api { message, .. }) => {
            RunError::Plan(matrix::PlanError::PodSecurity {
                namespace: ns.to_owned(),
                level,
                message,
            })
        }
        (_, e) => RunError::Cluster(e),
    }
}

/// The run's Lease refused after its namespace was made: the namespace is deleted at once, by
/// its uid, and the error says whether that was done.
fn owner_not_made(c: &Cluster, (ns, uid): (&str, &str), e: ClusterError) -> RunError {
    let deleted = probe::delete_namespace(c, ns, (Some(uid), None), None)
        .map_err(|d| format!("{d} ({})", d.hint()));
    RunError::Plan(matrix::PlanError::OwnerNotMade {
        namespace: ns.to_owned(),
        cause: format!("{e} ({})", e.hint()),
        deleted: deleted.map(|_| ()),
    })
}

/// What the run made kept (`--keep-on-failure`), `why`: in a namespace given, its Lease
/// written to hold `LEFTOVER_AGE`, after which the next run deletes them; its own namespace
/// marked kept (`objects::KEPT`), which no run's sweep deletes. Why not, if not.
fn keep_all(c: &Cluster, (ns, (held, made)): (&str, HeldIn), why: &str) -> Option<String> {
    if made.is_none() {
        let for_s = super::options::LEFTOVER_AGE.as_secs() as i64;
        return lease::keep_for(c, held, for_s)
            .err()
            .map(|e| format!("{e} ({})", e.hint()));
    }
    held.stop();
    let api: Api<Namespace> = Api::all(c.client.clone());
    let mark = kube::api::Patch::Merge(objects::kept_mark(why));
    let what = format!("namespaces/{ns}");
    let marked = c.call("patch", &what, api.patch(ns, &Default::default(), &mark));
    marked.err().map(|e| {
        format!("marking namespace {ns} kept failed ({e}): the next run deletes it once its Lease runs out")
    })
}

/// The run's Lease, and its namespace's uid when the run made it.
type HeldIn<'a> = (&'a lease::Held, Option<&'a str>);

/// How long a stopped run's clean-up may take, every call included: a closed console gives
/// about 5 s (Microsoft's `HandlerRoutine`), as hcsshim gives a HostProcess job (`host::stop`).
pub const STOPPED_CLEANUP_WAIT: Duration = Duration::from_secs(3);

/// The end of the clean-up's wait: `until`, or soon when the run was stopped.
fn cleanup_until(o: &Options, until: Instant) -> Instant {
    if interrupted(o) {
        until.min(Instant::now() + STOPPED_CLEANUP_WAIT)
    } else {
        until
    }
}

/// Deletes the namespace the run made and waits until it is gone, or `until`; in a namespace
/// given, what the run made there, and its Lease.
fn clean_up(
    c: &Cluster,
    (ns, (held, made)): (&str, HeldIn),
    until: Instant,
    error: &mut Option<String>,
) -> bool {
    let Some(uid) = made else {
        let over = "its Lease was deleted by another run, which judged it run out";
        return match (shared::release(c, ns, held, until), held.lost()) {
            (Ok(true), _) => true,
            (Ok(false), lost) => {
                *error = Some(match lost {
                    true => format!("{over}; its pods are still terminating"),
                    false => "its pods are still terminating: the next run deletes them once this run's Lease runs out, within a minute".to_owned(),
                });
                false
            }
            (Err(e), _) => {
                *error = Some(format!("{e} ({})", e.hint()));
                false
            }
        };
    };
    // The renewals end before the delete: the namespace controller deletes the Lease.
    held.stop();
    let left = |why: String| {
        format!(
            "namespace {ns} {why}: the next verify run deletes it ('kubectl delete namespace {ns}' now)"
        )
    };
    if let Err(e) = probe::delete_namespace(c, ns, (Some(uid), None), Some(until)) {
        *error = Some(left(format!("was not deleted ({e})")));
        return false;
    }
    match wait_gone(c, ns, until) {
        Ok(()) => true,
        Err(why) => {
            *error = Some(left(why));
            false
        }
    }
}

/// Waits until the run's namespace, deleted, is gone, or `until`: why not, if not. Our probe
/// pods Terminating on a node not Ready are deleted at once at each look (wedged.rs).
fn wait_gone(c: &Cluster, ns: &str, until: Instant) -> Result<(), String> {
    let unforced = std::cell::RefCell::new(None);
    let (api, what) = (
        Api::<Namespace>::all(c.client.clone()),
        format!("namespaces/{ns}"),
    );
    // Quietly, and not cut by the stop: a stopped run's clean-up comes after it.
    poll_quietly(
        super::step::last_look(until),
        Pauses::every(POLL),
        || match c.call_opt_by(until, ("get", &what), api.get(ns)) {
            Ok(None) => Ok(Look::Done(())),
            Ok(Some(_)) => {
                let forced = super::wedged::ours_in(c, ns, until)
                    .and_then(|pods| super::wedged::force_dead(c, ns, &pods, until));
                match forced {
                    Ok(_) | Err(ClusterError::Timeout { .. }) => {}
                    Err(e) => *unforced.borrow_mut() = Some(e),
                }
                Ok(Look::Pending(()))
            }
            // The last look, at `until`, with no time left: still there as last seen.
            Err(ClusterError::Timeout { .. }) if Instant::now() >= until => Ok(Look::Pending(())),
            Err(e) => Err(format!("is not known to be gone ({e})")),
        },
        |()| {
            Err(match unforced.borrow_mut().take() {
                Some(e) => format!(
                    "is still being deleted (its pods on a node not Ready could not be deleted at once: {e})"
                ),
                None => "is still being deleted".to_owned(),
            })
        },
    )
}

/// Makes the objects, waits for the pods, runs every check: the verdicts, whether the
/// deadline cut the run short, and how long the image pull took (added to the deadline).
fn checks(
    c: &Cluster,
    o: &Options,
    m: &Matrix,
    (ns, owner): (&str, &OwnerReference),
    deadline: Instant,
) -> Result<(Ledger, bool, Duration), ClusterError> {
    let mut ledger = Ledger::default();
    let made = make(c, o, m, (ns, owner), deadline)?;
    let deadline = deadline + made.pull;
    let all: Vec<PodState> = made.states.values().cloned().collect();
    let still: Vec<&PodState> = all.iter().filter(|s| judge::pulling(s)).collect();
    let pull = Verdict {
        check: CheckId::ImagePull,
        outcome: judge::image_pull(&all, &still, o.pull_timeout.as_secs()),
        took_ms: ms(made.pull),
        attempts: 0,
        delay_ms: None,
    };
    let rest: Vec<CheckId> = m
        .checks
        .iter()
        .map(|c| c.id)
        .filter(|id| *id != CheckId::ImagePull)
        .collect();
    // A stop during the pods' wait: the pull not judged either.
    if made.cut && interrupted(o) {
        ledger.stopped(&[CheckId::ImagePull]);
        ledger.stopped(&rest);
        return Ok((ledger, true, made.pull));
    }
    ledger.record(pull, None);
    if made.cut {
        return Ok((ledger, true, made.pull));
    }
    let states = made.states;
    let addresses = match addresses(c, o, ns, &states) {
        Ok(a) => a,
        // A stop that cut the Services' reads: the pull stays judged, the rest not run.
        Err(_) if interrupted(o) => {
            ledger.stopped(&rest);
            return Ok((ledger, true, made.pull));
        }
        Err(e) => return Err(e),
    };
    let run = super::step::Step {
        c,
        o,
        ns,
        states: &states,
        addresses: &addresses,
        deadline,
        policy: std::cell::RefCell::new(None),
        cut: std::cell::Cell::new(false),
    };
    let cut = each_check(&run, m, (&all, &rest), &mut ledger)?;
    Ok((ledger, cut, made.pull))
}

/// What the checks dial: the pods' addresses, the probe Service's and the API server's
/// ClusterIPs, the cluster's domain.
fn addresses(
    c: &Cluster,
    o: &Options,
    ns: &str,
    states: &BTreeMap<Role, PodState>,
) -> Result<Addresses, ClusterError> {
    Ok(Addresses {
        namespace: ns.to_owned(),
        names: o.names(),
        pods: states
            .iter()
            .filter_map(|(r, s)| Some((*r, s.ip.clone()?)))
            .collect(),
        service_ip: probe::cluster_ip(c, ns, &o.names().of(dial::SERVICE_NAME))?,
        api_server_ip: probe::cluster_ip(c, "default", "kubernetes")?,
        cluster_domain: o.cluster_domain.clone(),
    })
}

/// Runs the checks after the pull in order (`rest`), each judged into the ledger, until the
/// run's deadline or its stop: whether either cut the run short (the rest left `stopped`).
fn each_check(
    run: &super::step::Step,
    m: &Matrix,
    (all, rest): (&[PodState], &[CheckId]),
    ledger: &mut Ledger,
) -> Result<bool, ClusterError> {
    let o = run.o;
    for (i, check) in m
        .checks
        .iter()
        .filter(|c| c.id != CheckId::ImagePull)
        .enumerate()
    {
        // Cut short by the stop (the rest left `stopped`) or the deadline.
        let cut = |ledger: &mut Ledger| {
            if interrupted(o) {
                ledger.stopped(&rest[i..]);
            }
            Ok(true)
        };
        if interrupted(o) || Instant::now() >= run.deadline {
            return cut(ledger);
        }
        let started = Instant::now();
        let judged = match settle::blocker(check.id, ledger) {
            Some(by) => Ok((Outcome::Blocked { by }, None, 0, None)),
            None => match check.id {
                CheckId::PodAddress => Ok((judge::pods(all), None, 0, None)),
                CheckId::KubeletProbe => Ok((run.kubelet(), None, 0, None)),
                CheckId::ApiToPods => run.baseline(),
                CheckId::PolicyApplied | CheckId::PolicyRemoved => run.policy(check),
                _ => run.dial(check, ledger),
            },
        };
        let (outcome, lost, attempts, delay_ms) = match judged {
            Err(_) if interrupted(o) => return cut(ledger),
            judged => judged?,
        };
        if run.cut.get() {
            // The wait ended at the run's deadline or its stop, not with an answer: no verdict.
            return cut(ledger);
        }
        let v = Verdict {
            check: check.id,
            outcome,
            took_ms: ms(started.elapsed()),
            attempts,
            delay_ms,
        };
        ledger.record(v, lost);
    }
    Ok(false)
}

/// The pods as the wait for them ended, whether the run's deadline cut it, and how long the
/// image pull took.
struct Made {
    states: BTreeMap<Role, PodState>,
    cut: bool,
    pull: Duration,
}

/// Makes the Service and the pods, named and labelled for the run (`objects::Names`), and waits
/// until they run (or one cannot). The time while a pod pulls its image is counted apart, up
/// to `--pull-timeout`, and added to the deadline.
fn make(
    c: &Cluster,
    o: &Options,
    m: &Matrix,
    (ns, owner): (&str, &OwnerReference),
    deadline: Instant,
) -> Result<Made, ClusterError> {
    let run = o.names();
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    probe::create(c, &services, "services", &objects::service(ns, &run))?;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    for p in &m.pods {
        let pod = objects::pod(ns, p, &o.image, (owner, &run));
        c.call("create", "pods", pods.create(&Default::default(), &pod))?;
    }
    let made_at = Instant::now();
    let window = deadline.saturating_duration_since(made_at);
    let (mut pull, mut last) = (Duration::ZERO, made_at);
    // The pods' wait takes at most half the checks' window: a server that never gets Ready,
    // or a pod without an address, is then judged from the states in hand (`pod-address`,
    // `kubelet-probe`) instead of ending the run as a timeout.
    let pods_wait = o.pods_wait.min(window / 2);
    // Each look says when the wait ends (the pull moves it); this bounds them all.
    let most = deadline.min(made_at + pods_wait) + o.pull_timeout + 2 * POLL;
    let what = "the probe pods to run, or one to fail for good";
    let ended = super::step::poll(o, what, most, || {
        let states = probe::pods(c, (ns, &run))?;
        let now = Instant::now();
        let pulling = states.iter().any(judge::pulling);
        if pulling {
            pull += now - last;
        }
        last = now;
        let own = made_at + pods_wait + pull;
        let until = (deadline + pull).min(own);
        // The kubelet retries a failed sandbox (kubernetes/kubernetes
        // pkg/kubelet/kuberuntime/kuberuntime_manager.go `SyncPod` step 4): an answer only
        // once it persists past half the pods' wait.
        let sandbox_persists = now >= made_at + pods_wait / 2 + pull;
        let settled = states.iter().all(|s| {
            // A pull that fails or a container that cannot run is an answer (the kubelet
            // retries them, but the check has what it needs to name the layer).
            let sandbox = sandbox_persists
                && s.events
                    .iter()
                    .any(|e| e.starts_with("FailedCreatePodSandBox"));
            (judge::usable(s) && s.ready) || judge::image_fault(s) || sandbox
        });
        let pull_out = pulling && pull >= o.pull_timeout;
        if settled || pull_out || now + POLL >= until {
            // Cut by the run's deadline before its own limit: the run timed out.
            let cut = !settled && !pull_out && deadline + pull < own;
            return Ok(Look::Done((states, cut)));
        }
        // Ended here only by the run's stop: cut.
        Ok(Look::Pending((states, true)))
    })?;
    let (states, cut) = ended.map_or((Vec::new(), true), |((states, cut), how)| {
        (states, cut || how != super::step::Ended::Done)
    });
    Ok(Made {
        states: by_role(m, states),
        cut,
        pull,
    })
}

fn by_role(m: &Matrix, states: Vec<PodState>) -> BTreeMap<Role, PodState> {
    m.pods
        .iter()
        .map(|p| {
            let s = states
                .iter()
                .find(|s| p.role.is(&s.name))
                .cloned()
                .unwrap_or(PodState {
                    name: p.role.pod_name().to_owned(),
                    node: p.node.to_string(),
                    phase: "not made".into(),
                    ..Default::default()
                });
            (p.role, s)
        })
        .collect()
}
