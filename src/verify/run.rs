//! One `verify` run: the leftovers of killed runs removed, the matrix planned, the probe
//! objects made in a namespace of their own, each check run and judged, and the namespace
//! deleted (and waited for) whatever happened, unless kept on failure. Every wait is bounded,
//! and all of them by the run's deadline.

use super::dial::{self, Addresses, Answer};
use super::judge::{self, Change, Outcome, PodState, Verdict};
use super::matrix::{self, Check, CheckId, Matrix, Role, Skipped, Target};
use super::objects;
pub use super::options::{Options, PODS_WAIT, POLICY_WAIT};
use super::probe;
use super::settle::{self, Ledger};
use super::shared;
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::{Namespace, Pod, Service};
use kube::Api;
use serde::Serialize;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long the namespace's deletion is waited for.
pub const CLEANUP_WAIT: Duration = Duration::from_secs(60);
/// A namespace of ours older than this is a killed run's: the longest run (`--timeout` at
/// most 10 minutes) and its clean-up are shorter.
pub const LEFTOVER_AGE_S: i64 = 15 * 60;
const POLL: Duration = Duration::from_secs(1);

fn interrupted(o: &Options) -> bool {
    o.interrupted.load(Ordering::SeqCst)
}

/// What the run found.
#[derive(Debug, Serialize)]
pub struct Report {
    pub node: String,
    pub namespace: String,
    pub image: String,
    pub checks: Vec<Verdict>,
    pub skipped: Vec<Skipped>,
    pub passed: bool,
    pub timed_out: bool,
    /// Ctrl-C or a termination signal stopped it.
    pub interrupted: bool,
    /// The namespaces of killed runs this run deleted.
    pub leftovers_removed: Vec<String>,
    /// Whether the namespace is gone at the end (kept on failure, or its deletion not done);
    /// in a namespace given (`--namespace`), whether what the run made there is.
    pub cleaned_up: bool,
    /// The namespace was given (`--namespace`): neither made nor deleted by the run.
    pub namespace_given: bool,
    /// Why what the run made in a namespace given could not be deleted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub clean_up_error: Option<String>,
    pub took_ms: u64,
}

/// Why the run could not start.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    #[error(transparent)]
    Plan(#[from] matrix::PlanError),
    #[error(transparent)]
    Cluster(#[from] ClusterError),
}

/// Runs `verify` for one node.
pub fn run(c: &Cluster, o: &Options, now_s: i64) -> Result<Report, RunError> {
    let start = Instant::now();
    let deadline = start + o.timeout;
    let leftovers_removed = match &o.namespace {
        None => sweep(c, now_s)?,
        Some(ns) => shared::sweep(c, ns, now_s, LEFTOVER_AGE_S)?,
    };
    let nodes = shared::while_cordoned(probe::nodes(c)?, o);
    let m = matrix::plan(&o.node, &nodes, &o.image, o.egress.as_deref())?;
    let name = match &o.namespace {
        None => {
            let ns = objects::namespace(&o.suffix);
            let api = Api::<Namespace>::all(c.client.clone());
            probe::create(c, &api, "namespaces", &ns)?;
            ns.metadata.name.clone().unwrap_or_default()
        }
        Some(ns) => {
            shared::claim(c, ns, &o.suffix, deadline, &o.interrupted)?;
            ns.clone()
        }
    };
    let (ledger, timed_out) = match checks(c, o, &m, &name, deadline) {
        Ok(done) => done,
        Err(e) => {
            // What was made goes, whatever stopped the run.
            if !o.keep_on_failure {
                clean_up(c, o, &name, &mut None);
            }
            return Err(e.into());
        }
    };
    let stopped = interrupted(o);
    let timed_out = timed_out && !stopped;
    let passed = ledger.passed() && !timed_out && !stopped;
    let mut clean_up_error = None;
    let cleaned_up = if o.keep_on_failure && !passed {
        false
    } else {
        clean_up(c, o, &name, &mut clean_up_error)
    };
    Ok(Report {
        node: o.node.clone(),
        namespace: name,
        image: o.image.clone(),
        checks: ledger.verdicts,
        skipped: m.skipped,
        passed,
        timed_out,
        interrupted: stopped,
        leftovers_removed,
        cleaned_up,
        namespace_given: o.namespace.is_some(),
        clean_up_error,
        took_ms: ms(start.elapsed()),
    })
}

fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Deletes the namespaces killed runs left.
fn sweep(c: &Cluster, now_s: i64) -> Result<Vec<String>, ClusterError> {
    let old = objects::leftovers(&probe::our_namespaces(c)?, now_s, LEFTOVER_AGE_S);
    for n in &old {
        probe::delete_namespace(c, n)?;
    }
    Ok(old)
}

/// Deletes the namespace and waits until it is gone (in a namespace given, what the run made).
fn clean_up(c: &Cluster, o: &Options, ns: &str, error: &mut Option<String>) -> bool {
    if o.namespace.is_some() {
        return shared::release(c, ns, Instant::now() + CLEANUP_WAIT).unwrap_or_else(|e| {
            *error = Some(format!("{e} ({})", e.hint()));
            false
        });
    }
    if probe::delete_namespace(c, ns).is_err() {
        return false;
    }
    let until = Instant::now() + CLEANUP_WAIT;
    while Instant::now() < until {
        match probe::namespace_exists(c, ns) {
            Ok(false) => return true,
            Ok(true) => std::thread::sleep(POLL),
            // Not known to be gone: said, not waited for.
            Err(_) => return false,
        }
    }
    false
}

/// Makes the objects, waits for the pods, runs every check: the verdicts, and whether the
/// deadline cut the run short.
fn checks(
    c: &Cluster,
    o: &Options,
    m: &Matrix,
    ns: &str,
    deadline: Instant,
) -> Result<(Ledger, bool), ClusterError> {
    let mut ledger = Ledger::default();
    let (states, cut) = make(c, o, m, ns, deadline)?;
    if cut {
        return Ok((ledger, true));
    }
    let addresses = Addresses {
        namespace: ns.to_owned(),
        pods: states
            .iter()
            .filter_map(|(r, s)| Some((*r, s.ip.clone()?)))
            .collect(),
        service_ip: probe::cluster_ip(c, ns, dial::SERVICE_NAME)?,
        api_server_ip: probe::cluster_ip(c, "default", "kubernetes")?,
    };
    let all: Vec<PodState> = states.values().cloned().collect();
    let run = Step {
        c,
        ns,
        states: &states,
        addresses: &addresses,
        deadline,
        policy_wait: o.policy_wait,
        cut: std::cell::Cell::new(false),
        interrupted: &o.interrupted,
    };
    for check in &m.checks {
        if Instant::now() >= deadline || interrupted(o) {
            return Ok((ledger, true));
        }
        let started = Instant::now();
        let (outcome, lost) = match check.id {
            CheckId::PodAddress => (judge::pods(&all), None),
            CheckId::KubeletProbe => (run.kubelet(), None),
            CheckId::PolicyApplied | CheckId::PolicyRemoved => (run.policy(check, &ledger)?, None),
            _ => run.dial(check, &ledger),
        };
        if run.cut.get() {
            // The wait ended at the run's deadline, not with an answer: no verdict.
            return Ok((ledger, true));
        }
        let v = Verdict {
            check: check.id,
            outcome,
            took_ms: ms(started.elapsed()),
        };
        ledger.record(v, lost);
    }
    Ok((ledger, false))
}

/// Makes the Service and the pods and waits until they run (or one cannot): their states.
fn make(
    c: &Cluster,
    o: &Options,
    m: &Matrix,
    ns: &str,
    deadline: Instant,
) -> Result<(BTreeMap<Role, PodState>, bool), ClusterError> {
    let services: Api<Service> = Api::namespaced(c.client.clone(), ns);
    probe::create(c, &services, "services", &objects::service(ns))?;
    let pods: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    for p in &m.pods {
        probe::create(c, &pods, "pods", &objects::pod(ns, p, &o.image))?;
    }
    let own = Instant::now() + o.pods_wait;
    let until = deadline.min(own);
    loop {
        let states = probe::pods(c, ns)?;
        let settled = states.iter().all(|s| {
            let runs = s.ip.is_some() && s.phase == "Running";
            // A pull that fails, or a sandbox the CNI plugin failed to make, is an answer
            // (the kubelet retries both, but the check has what it needs to name the layer).
            let pull = s
                .waiting
                .as_deref()
                .is_some_and(|w| w.contains("ImagePull"));
            let sandbox = s
                .events
                .iter()
                .any(|e| e.starts_with("FailedCreatePodSandBox"));
            (runs && (s.ready || s.name != Role::Server.pod_name())) || pull || sandbox
        });
        if settled || Instant::now() + POLL >= until || interrupted(o) {
            // Cut by the run's deadline before its own limit: the run timed out.
            let cut = !settled && (deadline < own || interrupted(o));
            return Ok((by_role(m, states), cut));
        }
        std::thread::sleep(POLL);
    }
}

fn by_role(m: &Matrix, states: Vec<PodState>) -> BTreeMap<Role, PodState> {
    m.pods
        .iter()
        .map(|p| {
            let name = p.role.pod_name();
            let s = states
                .iter()
                .find(|s| s.name == name)
                .cloned()
                .unwrap_or(PodState {
                    name: name.to_owned(),
                    node: p.node.clone(),
                    phase: "not made".into(),
                    ..Default::default()
                });
            (p.role, s)
        })
        .collect()
}

/// What one check needs to run.
struct Step<'a> {
    c: &'a Cluster,
    ns: &'a str,
    states: &'a BTreeMap<Role, PodState>,
    addresses: &'a Addresses,
    deadline: Instant,
    policy_wait: Duration,
    /// A wait was cut by the run's deadline, or by an interruption.
    cut: std::cell::Cell<bool>,
    interrupted: &'a AtomicBool,
}

impl Step<'_> {
    fn state(&self, r: Role) -> PodState {
        self.states.get(&r).cloned().unwrap_or_default()
    }

    fn kubelet(&self) -> Outcome {
        let server = self.state(Role::Server);
        if server.ip.is_none() {
            return Outcome::Blocked {
                by: CheckId::PodAddress,
            };
        }
        judge::kubelet_probe(&server)
    }

    fn dial(&self, check: &Check, ledger: &Ledger) -> (Outcome, Option<Role>) {
        let Some(from) = check.from else {
            return (
                Outcome::Skipped {
                    why: "no client".into(),
                },
                None,
            );
        };
        if let Some(by) = ledger.unreachable(Some(from)) {
            return (Outcome::Blocked { by }, None);
        }
        // A client without an address cannot be asked (the pod-address check names it).
        let Some(d) = dial::dial(from, &check.to, self.addresses)
            .filter(|_| self.addresses.pods.contains_key(&from))
        else {
            return (
                Outcome::Blocked {
                    by: CheckId::PodAddress,
                },
                None,
            );
        };
        let a = probe::ask(self.c, &d.path);
        let lost = matches!(a, Answer::NoProxy(_)).then_some(from);
        let what = describe(&check.to, self.addresses);
        let o = judge::dial(check.id, &self.state(from), &what, &a, d.expect.as_deref());
        (o, lost)
    }

    /// Applies (or deletes) the policy and measures how long until the traffic changes.
    fn policy(&self, check: &Check, ledger: &Ledger) -> Result<Outcome, ClusterError> {
        let on = check.id == CheckId::PolicyApplied;
        if let Some(by) = settle::under(check.id).iter().copied().find(|d| {
            ledger
                .verdicts
                .iter()
                .any(|v| v.check == *d && !matches!(v.outcome, Outcome::Pass))
        }) {
            return Ok(Outcome::Blocked { by });
        }
        let from = check.from.unwrap_or(Role::Local);
        let Some(d) = dial::dial(from, &check.to, self.addresses) else {
            return Ok(Outcome::Blocked {
                by: CheckId::PodAddress,
            });
        };
        // A policy that cannot be changed is the run's failure, not a check's.
        probe::policy(self.c, self.ns, on)?;
        let start = Instant::now();
        let until = self.deadline.min(start + self.policy_wait);
        let change = loop {
            let a = probe::ask(self.c, &d.path);
            let passes = dial::reached(&a, d.expect.as_deref());
            if passes != on && !matches!(a, Answer::NoProxy(_)) {
                break Change::Within {
                    ms: ms(start.elapsed()),
                };
            }
            let stopped = self.interrupted.load(Ordering::SeqCst);
            if Instant::now() + POLL >= until || stopped {
                if self.deadline < start + self.policy_wait || stopped {
                    self.cut.set(true);
                }
                break Change::Never {
                    waited_ms: ms(start.elapsed()),
                    last: a,
                };
            }
            std::thread::sleep(POLL);
        };
        Ok(judge::policy(check.id, &self.state(from), &change))
    }
}

/// The target in words, with its address where known.
fn describe(to: &Target, a: &Addresses) -> String {
    let ip = |o: &Option<String>| o.clone().unwrap_or_default();
    match to {
        Target::Pod(r) => format!(
            "pod {} ({})",
            r.pod_name(),
            a.pods.get(r).cloned().unwrap_or_default()
        ),
        Target::ServiceIp => format!(
            "the Service's ClusterIP {}:{}",
            ip(&a.service_ip),
            dial::SERVICE_PORT
        ),
        Target::ServiceName => format!(
            "the Service by name ({}.{})",
            dial::SERVICE_NAME,
            a.namespace
        ),
        Target::ApiServerIp => format!("the kubernetes Service {}:443", ip(&a.api_server_ip)),
        Target::KubernetesName => "kubernetes.default:443 by name".into(),
        Target::External(addr) => format!("{addr} outside the cluster"),
        Target::Pods => "every probe pod".into(),
    }
}
