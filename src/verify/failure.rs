//! How a finished `verify` run ends its command: all passed (0), one failed (1), cut short by
//! `--timeout` with none failed (4), by Ctrl-C or by its lease lost (1).

use super::judge::Outcome;
use super::run::Report;
use crate::error::{Diagnose, Diagnosis, Exit, Kind};

#[derive(Debug, thiserror::Error)]
pub enum Failed {
    #[error("node {node} does not pass traffic: {checks}")]
    NotPassing { node: String, checks: String },
    #[error("verify of node {node} did not finish within {timeout_s} s")]
    TimedOut { node: String, timeout_s: u64 },
    #[error("verify of node {node} was interrupted")]
    Interrupted { node: String },
    /// The run's lease was lost mid-run (`verify-lease-lost`); `checks`, those that failed
    /// before it.
    #[error("verify of node {node} stopped: {why}{checks}")]
    LeaseLost {
        node: String,
        why: String,
        checks: String,
    },
}

impl Diagnose for Failed {
    fn diagnose(&self) -> Option<Diagnosis> {
        let failed = |hint: &str| Diagnosis::new(Exit::Failed, Kind::Failed, hint);
        match self {
            Failed::NotPassing { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::TrafficFailed,
                "each failed check names its layer and the next step (-o json: checks[].finding)",
            ),
            Failed::TimedOut { .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::Timeout,
                "the checks judged so far are listed; a pod that waits for its image takes longest: pull it first, or give --timeout more",
            ),
            Failed::Interrupted { .. } => failed("run it again to judge every check"),
            Failed::LeaseLost { .. } => {
                failed(crate::health::judge::Code::VerifyLeaseLost.remedy())
            }
        }
    }
}

/// The run's end as an error, or `None` when every check passed.
pub fn of(r: &Report, timeout_s: u64) -> Option<Failed> {
    let node = r.node.clone();
    if r.interrupted {
        return Some(Failed::Interrupted { node });
    }
    let failed: Vec<String> = r
        .checks
        .iter()
        .filter(|v| matches!(v.outcome, Outcome::Fail { .. }))
        // With what the node itself knows of the check's layer (`node_health::join`).
        .map(|v| match super::node_health::said(r, v.check) {
            Some(s) => format!("{} ({s})", v.check.word()),
            None => v.check.word(),
        })
        .collect();
    // Stopped for its lost lease: that, and the checks that failed before it.
    if let Some(f) = &r.lease_lost {
        let checks = match failed.is_empty() {
            true => String::new(),
            false => format!(" (failed before it: {})", failed.join(", ")),
        };
        let why = f.message.clone();
        return Some(Failed::LeaseLost { node, why, checks });
    }
    // A check that failed is an answer: it is said before the deadline that cut the rest.
    if r.timed_out && failed.is_empty() {
        return Some(Failed::TimedOut { node, timeout_s });
    }
    if r.passed {
        return None;
    }
    let mut checks = failed.join(", ");
    if r.timed_out {
        let n = r
            .checks
            .iter()
            .filter(|v| v.outcome == Outcome::TimedOut)
            .count();
        checks.push_str(&format!(
            " ({n} checks not judged: the run timed out at {timeout_s} s)"
        ));
    }
    Some(Failed::NotPassing { node, checks })
}

/// The end of runs for several nodes: an interruption first, then a timeout, then the nodes
/// that do not pass traffic, all named.
pub fn of_all(reports: &[Report], timeout_s: u64) -> Option<Failed> {
    let ends: Vec<Failed> = reports.iter().filter_map(|r| of(r, timeout_s)).collect();
    let rank = |f: &Failed| match f {
        Failed::Interrupted { .. } => 0,
        Failed::LeaseLost { .. } => 1,
        Failed::TimedOut { .. } => 2,
        Failed::NotPassing { .. } => 3,
    };
    let first = ends.iter().map(rank).min()?;
    let mut same = ends.into_iter().filter(|f| rank(f) == first);
    let one = same.next()?;
    let rest: Vec<Failed> = same.collect();
    if rest.is_empty() {
        return Some(one);
    }
    let Failed::NotPassing { node, checks } = one else {
        return Some(one);
    };
    let mut said = vec![format!("{node} ({checks})")];
    for f in rest {
        if let Failed::NotPassing { node, checks } = f {
            said.push(format!("{node} ({checks})"));
        }
    }
    Some(Failed::NotPassing {
        node: said.join(", "),
        checks: "each node's failed checks above".into(),
    })
}
