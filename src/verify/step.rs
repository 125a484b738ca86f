//! How each check of a `verify` run is run: the pods it needs usable, its dials asked through
//! the pod proxy and retried within the settle window, the policy's delay measured, and the
//! baseline that the API server reaches the pods.

use super::dial::{self, Addresses, Answer};
use super::judge::{self, Change, Outcome, PodState};
use super::matrix::{Check, CheckId, Role, Target};
use super::options::Options;
use super::probe;
use super::settle::Ledger;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, Stopped, Wait, poll_until};
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// How often a wait looks again.
pub const POLL: Duration = Duration::from_secs(1);

/// Whether Ctrl-C or a termination signal stopped the run.
pub fn interrupted(o: &Options) -> bool {
    o.stop.requested()
}

/// Milliseconds, for the report.
pub fn ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// How a wait of the run ended (`poll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ended {
    Done,
    TimedOut,
    Stopped,
}

/// A wait's look failed, or the run's stop ended it.
enum Polled {
    Cluster(ClusterError),
    Stopped,
}

impl From<Stopped> for Polled {
    fn from(_: Stopped) -> Self {
        Self::Stopped
    }
}

/// The run's one wait loop (`duration::poll_until`) until `look` is done, `until` or the run's
/// stop: the last look's value and how the wait ended; `None` when the stop came first.
pub fn poll<T: Clone>(
    o: &Options,
    what: &str,
    until: Instant,
    mut look: impl FnMut() -> Result<Look<T, T>, ClusterError>,
) -> Result<Option<(T, Ended)>, ClusterError> {
    let mut last: Option<T> = None;
    let wait = Wait {
        what,
        timeout: last_look(until).saturating_duration_since(Instant::now()),
        pauses: Pauses::every(POLL),
        stop: &o.stop,
        say: &mut |l| o.said.say(l),
    };
    let ended = poll_until(
        wait,
        || match look() {
            Ok(Look::Done(v)) => Ok(Look::Done((v, Ended::Done))),
            Ok(Look::Pending(p) | Look::Again(p, _)) => {
                last = Some(p.clone());
                Ok(Look::Pending(p))
            }
            Err(e) => Err(Polled::Cluster(e)),
        },
        |p| Ok((p, Ended::TimedOut)),
    );
    match ended {
        Ok(v) => Ok(Some(v)),
        Err(Polled::Cluster(e)) => Err(e),
        Err(Polled::Stopped) => Ok(last.map(|p| (p, Ended::Stopped))),
    }
}

/// A look's answer: done with `v`, or still pending with it.
pub fn done_if<T>(done: bool, v: T) -> Look<T, T> {
    if done {
        Look::Done(v)
    } else {
        Look::Pending(v)
    }
}

/// When a wait that must end by `until` looks for the last time: a `POLL` before it, so that
/// the look (a call of its own) fits, as the waits' pace always had it.
pub fn last_look(until: Instant) -> Instant {
    until.checked_sub(POLL).unwrap_or(until)
}

/// A check's outcome, the client the API server lost, the dials made and the policy's delay.
pub type Judged = (Outcome, Option<Role>, u32, Option<u64>);

/// What one check needs to run.
pub struct Step<'a> {
    pub c: &'a Cluster,
    pub o: &'a Options,
    pub ns: &'a str,
    pub states: &'a BTreeMap<Role, PodState>,
    pub addresses: &'a Addresses,
    pub deadline: Instant,
    /// The uid of the policy this run made: deleted by it.
    pub policy: std::cell::RefCell<Option<String>>,
    /// A wait was cut by the run's deadline, or by an interruption.
    pub cut: std::cell::Cell<bool>,
}

impl Step<'_> {
    fn state(&self, r: Role) -> PodState {
        self.states.get(&r).cloned().unwrap_or_default()
    }

    /// A wait the run's stop ended (before the first call or after some): no verdict, the
    /// last answer not judged, no layer blamed, no call more.
    fn stopped(&self, attempts: u32) -> Result<Judged, ClusterError> {
        self.cut.set(true);
        Ok((Outcome::Stopped, None, attempts, None))
    }

    /// The end of a settle window that starts now.
    fn window(&self, long: Duration) -> Instant {
        self.deadline.min(Instant::now() + long)
    }

    pub fn kubelet(&self) -> Outcome {
        let server = self.state(Role::Server);
        if !judge::usable(&server) {
            return Outcome::Blocked {
                by: CheckId::PodAddress,
            };
        }
        judge::kubelet_probe(&server)
    }

    /// The API server reaches the server pod through its pod proxy (`/healthz`), retried
    /// within the settle window.
    pub fn baseline(&self) -> Result<Judged, ClusterError> {
        let server = self.state(Role::Server);
        if !judge::usable(&server) {
            return blocked(CheckId::PodAddress);
        }
        let until = self.window(self.o.settle);
        let mut attempts = 0;
        let name = server.name.as_str();
        let what = format!("the API server to reach pod {name} (its /healthz)");
        let ended = poll(self.o, &what, until, || {
            attempts += 1;
            Ok(
                match probe::healthz(self.c, self.ns, name, self.o.dial_within)? {
                    Ok(()) => Look::Done(String::new()),
                    Err(why) => Look::Pending(why),
                },
            )
        })?;
        let why = match ended {
            Some((_, Ended::Done)) => return Ok((Outcome::Pass, None, attempts, None)),
            Some((why, Ended::TimedOut)) => why,
            Some((_, Ended::Stopped)) | None => return self.stopped(attempts),
        };
        // The API server reaches the Linux client but not the Windows server: the path
        // between the OSes (the overlay), not the control plane's.
        let linux = self.state(Role::Linux);
        let to_linux = judge::usable(&linux)
            && probe::healthz(self.c, self.ns, &linux.name, self.o.dial_within)?.is_ok();
        let outcome = if to_linux {
            judge::no_overlay_to(&server, &linux, &why)
        } else {
            judge::no_proxy(&server, &why)
        };
        Ok((outcome, None, attempts, None))
    }

    /// Why the check's client or target pod cannot be used, as the check that says so.
    fn unusable(&self, from: Role, to: &Target) -> Option<CheckId> {
        let bad = |r: Role| {
            let s = self.state(r);
            if !judge::usable(&s) {
                Some(CheckId::PodAddress)
            } else if !s.ready {
                Some(CheckId::KubeletProbe)
            } else {
                None
            }
        };
        bad(from).or(match to {
            Target::Pod(r) => bad(*r),
            _ => None,
        })
    }

    /// A client dials its target until the first success, within the settle window (a new
    /// endpoint takes seconds to be programmed by Felix and kube-proxy).
    pub fn dial(&self, check: &Check, ledger: &Ledger) -> Result<Judged, ClusterError> {
        let Some(from) = check.from else {
            let why = "no client".into();
            return Ok((Outcome::Skipped { why }, None, 0, None));
        };
        if let Some(by) = ledger.unreachable(from) {
            return blocked(by);
        }
        // A pod that does not run, or is not Ready, is its own layer's (pod-address, the
        // kubelet's probe), not the network's.
        if let Some(by) = self.unusable(from, &check.to) {
            return blocked(by);
        }
        let Some(d) = dial::dial(from, &check.to, self.addresses) else {
            return blocked(CheckId::PodAddress);
        };
        let until = self.window(self.o.settle);
        let mut attempts = 0;
        let what = format!("{} to answer {}", check.id.word(), from.pod_name());
        let ended = poll(self.o, &what, until, || {
            attempts += 1;
            let a = probe::ask(self.c, &d, self.o.dial_within)?;
            Ok(done_if(dial::reached(&a, d.expect.as_deref()), a))
        })?;
        let a = match ended {
            Some((a, Ended::Done | Ended::TimedOut)) => a,
            Some((_, Ended::Stopped)) | None => return self.stopped(attempts),
        };
        let lost = matches!(a, Answer::NoProxy(_)).then_some(from);
        let what = describe(&check.to, self.addresses);
        let o = judge::dial(check.id, &self.state(from), &what, &a, d.expect.as_deref());
        Ok((o, lost, attempts, None))
    }

    /// Applies (or deletes) the policy and measures the delay until the traffic changes: to
    /// when the first dial refused (answered) after it was sent. netexec gives a dial 5 s
    /// (`createHTTPClient`), so a refusal by timeout is seen 5 s after it was sent.
    pub fn policy(&self, check: &Check) -> Result<Judged, ClusterError> {
        let on = check.id == CheckId::PolicyApplied;
        let from = check.from.unwrap_or(Role::Local);
        let Some(d) = dial::dial(from, &check.to, self.addresses) else {
            return blocked(CheckId::PodAddress);
        };
        // A policy that cannot be changed is the run's failure, not a check's.
        let uid = self.policy.borrow().clone();
        let names = &self.addresses.names;
        let made = probe::policy(self.c, (self.ns, names), on, uid.as_deref())?;
        // Deleted, the policy is no uid of the run's any more; made, its uid is.
        *self.policy.borrow_mut() = made;
        let start = Instant::now();
        let until = self.window(self.o.policy_wait);
        let mut attempts = 0;
        let what = format!("{} (the client's dials to change)", check.id.word());
        let ended = poll(self.o, &what, until, || {
            attempts += 1;
            let sent = ms(start.elapsed());
            let a = probe::ask(self.c, &d, self.o.dial_within)?;
            let changed = if on {
                matches!(a, Answer::Failed(_))
            } else {
                dial::reached(&a, d.expect.as_deref())
            };
            Ok(done_if(changed, (sent, a)))
        })?;
        let change = match ended {
            Some(((sent, _), Ended::Done)) => Change::Within { ms: sent },
            Some(((_, last), Ended::TimedOut)) => {
                if self.deadline < start + self.o.policy_wait {
                    self.cut.set(true);
                }
                Change::Never {
                    waited_ms: ms(start.elapsed()),
                    last,
                }
            }
            Some((_, Ended::Stopped)) | None => return self.stopped(attempts),
        };
        let delay = match change {
            Change::Within { ms } => Some(ms),
            Change::Never { .. } => None,
        };
        let o = judge::policy(check.id, &self.state(from), &change);
        Ok((o, None, attempts, delay))
    }
}

/// Not run: `by` stands under the check.
fn blocked(by: CheckId) -> Result<Judged, ClusterError> {
    Ok((Outcome::Blocked { by }, None, 0, None))
}

/// The target in words, with its address where known.
fn describe(to: &Target, a: &Addresses) -> String {
    let ip = |o: &Option<String>| o.clone().unwrap_or_default();
    match to {
        Target::Pod(r) => format!(
            "pod {} ({})",
            a.names.of(r.pod_name()),
            a.pods.get(r).cloned().unwrap_or_default()
        ),
        Target::ServiceIp => format!(
            "the Service's ClusterIP {}:{}",
            ip(&a.service_ip),
            dial::SERVICE_PORT
        ),
        Target::ServiceName => format!(
            "the Service by name ({}.{})",
            a.names.of(dial::SERVICE_NAME),
            a.namespace
        ),
        Target::ApiServerIp => format!("the kubernetes Service {}:443", ip(&a.api_server_ip)),
        Target::KubernetesName => "kubernetes.default:443 by name".into(),
        Target::External(addr) => format!("{addr} outside the cluster"),
        Target::Pods => "every probe pod".into(),
    }
}
