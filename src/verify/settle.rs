//! Each fault named once: a check that failed because one under it failed is `blocked` by
//! that one, and a client pod the API server cannot reach is not asked again.
//!
//! cluster-ip needs pod-to-pod and the kubelet's probe; the DNS checks cluster-ip and
//! windows-to-linux (the DNS pods usually run on Linux); the policy checks pod-to-pod.

use super::judge::{Outcome, Verdict};
use super::matrix::{CheckId, Role};
use std::collections::BTreeMap;

/// The checks a check's failure is blamed on first, when they failed. Every check asked
/// through the pod proxy stands on `api-to-pods` (the API server reaches the pods).
pub fn under(id: CheckId) -> &'static [CheckId] {
    use CheckId::*;
    match id {
        PodAddress | ApiToPods | KubeletProbe => &[ImagePull],
        // kube-proxy balances to Ready endpoints only (the EndpointSlice controller marks a
        // pod not Ready as such): a server the kubelet never found Ready has none.
        ClusterIp => &[ApiToPods, PodToPod, KubeletProbe],
        DnsService | DnsKubernetes => &[ApiToPods, ClusterIp, WindowsToLinux],
        PolicyApplied => &[ApiToPods, PodToPod],
        PolicyRemoved => &[ApiToPods, PodToPod, PolicyApplied],
        ImagePull => &[],
        _ => &[ApiToPods],
    }
}

/// Why a check is not run: a check under it that did not pass; the policy checks need
/// pod-to-pod to have passed (a deny seen where nothing connects proves nothing).
pub fn blocker(id: CheckId, ledger: &Ledger) -> Option<CheckId> {
    if let Some(by) = under(id).iter().copied().find(|d| ledger.not_passed(*d)) {
        return Some(by);
    }
    let passed = |d| {
        ledger
            .verdicts
            .iter()
            .any(|v| v.check == d && v.outcome == Outcome::Pass)
    };
    let policy = matches!(id, CheckId::PolicyApplied | CheckId::PolicyRemoved);
    (policy && !passed(CheckId::PodToPod)).then_some(CheckId::PodToPod)
}

/// The verdicts so far, in the order the checks ran.
#[derive(Debug, Default)]
pub struct Ledger {
    pub verdicts: Vec<Verdict>,
    unreachable: BTreeMap<Role, CheckId>,
}

impl Ledger {
    pub fn not_passed(&self, id: CheckId) -> bool {
        self.verdicts.iter().any(|v| {
            v.check == id && matches!(v.outcome, Outcome::Fail { .. } | Outcome::Blocked { .. })
        })
    }

    /// The check that already stands in the way of asking `from` at all: the API server could
    /// not reach that client pod before.
    pub fn unreachable(&self, from: Role) -> Option<CheckId> {
        self.unreachable.get(&from).copied()
    }

    /// Records a verdict: a failure whose cause lies under it becomes `blocked` by that check.
    /// `lost` names the client pod the API server could not reach for this check.
    pub fn record(&mut self, mut v: Verdict, lost: Option<Role>) {
        if let Some(r) = lost {
            self.unreachable.entry(r).or_insert(v.check);
        }
        if matches!(v.outcome, Outcome::Fail { .. })
            && let Some(by) = under(v.check).iter().copied().find(|d| self.not_passed(*d))
        {
            v.outcome = Outcome::Blocked { by };
        }
        self.verdicts.push(v);
    }

    /// Records `ids` as not run because the run was stopped (Ctrl-C, a termination signal, its
    /// lease lost): none is judged, none blamed on a layer.
    pub fn stopped(&mut self, ids: &[CheckId]) {
        let each = ids.iter().map(|&c| unjudged(c, Outcome::Stopped));
        self.verdicts.extend(each);
    }

    /// Records every check of `planned` not judged yet as not run because the run's deadline
    /// came first: each check planned is in the report.
    pub fn timed_out(&mut self, planned: impl IntoIterator<Item = CheckId>) {
        for check in planned {
            if !self.verdicts.iter().any(|v| v.check == check) {
                self.verdicts.push(unjudged(check, Outcome::TimedOut));
            }
        }
    }

    /// Whether every check passed or was skipped: exit 0.
    pub fn passed(&self) -> bool {
        self.verdicts
            .iter()
            .all(|v| matches!(v.outcome, Outcome::Pass | Outcome::Skipped { .. }))
    }
}

/// A check not judged, `outcome` saying why.
fn unjudged(check: CheckId, outcome: Outcome) -> Verdict {
    Verdict {
        check,
        outcome,
        took_ms: 0,
        attempts: 0,
        delay_ms: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::health::judge::{Code, Finding};

    fn v(check: CheckId, ok: bool) -> Verdict {
        let outcome = if ok {
            Outcome::Pass
        } else {
            Outcome::Fail {
                finding: Finding::new(Code::TrafficDns, "client-local", "x", "y"),
            }
        };
        Verdict {
            check,
            outcome,
            took_ms: 1,
            attempts: 1,
            delay_ms: None,
        }
    }

    #[test]
    fn a_failure_under_a_check_blocks_it_and_a_pass_does_not() {
        let mut l = Ledger::default();
        l.record(v(CheckId::PodToPod, true), None);
        l.record(v(CheckId::WindowsToLinux, false), None);
        l.record(v(CheckId::ClusterIp, true), None);
        l.record(v(CheckId::DnsService, false), None);
        l.record(v(CheckId::DnsKubernetes, true), None);
        assert_eq!(
            l.verdicts[3].outcome,
            Outcome::Blocked {
                by: CheckId::WindowsToLinux
            }
        );
        assert_eq!(l.verdicts[4].outcome, Outcome::Pass, "a pass stays a pass");
        assert!(!l.passed());
    }

    #[test]
    fn a_client_lost_once_is_not_asked_again() {
        let mut l = Ledger::default();
        assert_eq!(l.unreachable(Role::Linux), None);
        l.record(v(CheckId::LinuxToWindows, false), Some(Role::Linux));
        assert_eq!(l.unreachable(Role::Linux), Some(CheckId::LinuxToWindows));
        assert_eq!(l.unreachable(Role::Local), None);
    }

    #[test]
    fn the_policy_is_not_run_unless_pod_to_pod_passed() {
        let mut l = Ledger::default();
        assert_eq!(
            blocker(CheckId::PolicyApplied, &l),
            Some(CheckId::PodToPod),
            "pod-to-pod never judged: inconclusive"
        );
        l.record(v(CheckId::PodToPod, true), None);
        assert_eq!(blocker(CheckId::PolicyApplied, &l), None);
        let mut l = Ledger::default();
        l.record(v(CheckId::ApiToPods, false), None);
        assert_eq!(blocker(CheckId::PodToPod, &l), Some(CheckId::ApiToPods));
        assert_eq!(blocker(CheckId::KubeletProbe, &l), None);
    }
}
