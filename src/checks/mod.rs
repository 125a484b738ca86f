//! Preflight checks: each has a stable id, a verdict, a message and a remedy. Verdicts are pure
//! functions of facts gathered beforehand, so every check is tested on Linux.

pub mod adapter;
pub mod cluster;
pub mod host;
pub mod known_issues;
pub mod kube_proxy;

use crate::health::judge::Said;
use serde::Serialize;

/// The outcome of one check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    Warn,
    Fail,
    Skip,
}

impl Verdict {
    fn label(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Warn => "warn",
            Verdict::Fail => "FAIL",
            Verdict::Skip => "skip",
        }
    }
}

/// One check's result: its id and verdict, its sentence and fix in the shape the node's
/// findings have (`health::judge::Said`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    pub id: &'static str,
    pub verdict: Verdict,
    #[serde(flatten)]
    pub said: Said,
}

impl std::ops::Deref for Check {
    type Target = Said;
    fn deref(&self) -> &Said {
        &self.said
    }
}

impl std::ops::DerefMut for Check {
    fn deref_mut(&mut self) -> &mut Said {
        &mut self.said
    }
}

impl Check {
    pub fn pass(id: &'static str, message: impl Into<String>) -> Self {
        Self::new(id, Verdict::Pass, message, None::<String>)
    }

    pub fn skip(id: &'static str, message: impl Into<String>) -> Self {
        Self::new(id, Verdict::Skip, message, None::<String>)
    }

    pub fn warn(id: &'static str, message: impl Into<String>, remedy: impl Into<String>) -> Self {
        Self::new(id, Verdict::Warn, message, Some(remedy))
    }

    pub fn fail(id: &'static str, message: impl Into<String>, remedy: impl Into<String>) -> Self {
        Self::new(id, Verdict::Fail, message, Some(remedy))
    }

    /// A check judged by a finding's judge: its sentence and fix as they are.
    pub fn of(id: &'static str, verdict: Verdict, said: Said) -> Self {
        Self { id, verdict, said }
    }

    pub(crate) fn new(
        id: &'static str,
        verdict: Verdict,
        message: impl Into<String>,
        remedy: Option<impl Into<String>>,
    ) -> Self {
        Self {
            id,
            verdict,
            said: Said {
                message: message.into(),
                remedy: remedy.map(Into::into),
            },
        }
    }
}

/// The `(major, minor)` of a release (`v3.31.0`, `1.7.20`).
pub(crate) fn major_minor(v: &str) -> Option<(u32, u32)> {
    let mut parts = v.trim_start_matches('v').split('.');
    Some((parts.next()?.parse().ok()?, parts.next()?.parse().ok()?))
}

/// Turns the failures the user accepted with `--skip ID` into skips that say so.
pub fn accept_skipped(checks: &mut [Check], skip: &[String]) {
    for c in checks.iter_mut() {
        if skip.iter().any(|s| s == c.id) && c.verdict != Verdict::Skip {
            c.message = format!(
                "accepted with --skip {} (was {}): {}",
                c.id,
                c.verdict.label().to_ascii_lowercase(),
                c.message
            );
            c.verdict = Verdict::Skip;
        }
    }
}

/// Preflight found problems that block the command.
#[derive(Debug, thiserror::Error)]
#[error("preflight failed: {}", .ids.join(", "))]
pub struct Blocked {
    pub ids: Vec<&'static str>,
}

/// The ids of failed checks.
pub fn blocking(checks: &[Check]) -> Vec<&'static str> {
    checks
        .iter()
        .filter(|c| c.verdict == Verdict::Fail)
        .map(|c| c.id)
        .collect()
}

/// The checks as a table for people: verdict, id, message, and the remedy under it. Checks
/// in a row skipped for the same reason (the cluster checks without an admin kubeconfig) are
/// one line that names them all and says the reason once.
pub fn table(checks: &[Check]) -> String {
    let width = checks.iter().map(|c| c.id.len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut i = 0;
    while i < checks.len() {
        let c = &checks[i];
        let same = checks[i..]
            .iter()
            .take_while(|d| {
                c.verdict == Verdict::Skip && d.verdict == Verdict::Skip && d.message == c.message
            })
            .count();
        if same > 1 {
            let ids: Vec<&str> = checks[i..i + same].iter().map(|d| d.id).collect();
            out.push_str(&format!(
                "{:<4}  {:<width$}  {} checks skipped ({}): {}\n",
                c.verdict.label(),
                ids[0],
                same,
                ids.join(", "),
                c.message
            ));
            i += same;
            continue;
        }
        i += 1;
        let shown = Said {
            remedy: c.remedy.clone().filter(|_| c.verdict != Verdict::Pass),
            ..c.said.clone()
        };
        out.push_str(&format!(
            "{:<4}  {:<width$}  {shown:pad$}\n",
            c.verdict.label(),
            c.id,
            pad = width + 8
        ));
    }
    out
}

impl crate::error::Diagnose for Blocked {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        crate::error::Diagnosis::new(
            crate::error::Exit::Preflight,
            crate::error::Kind::PreflightFailed,
            "fix the failed checks with the commands shown, or accept a known failure with --skip ID",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks_skipped_for_one_reason_say_it_once() {
        let checks = vec![
            Check::pass("hns", "HNS answers"),
            Check::skip("calico-version", "no admin kubeconfig"),
            Check::skip("ipip-disabled", "no admin kubeconfig"),
            Check::skip("rbac", "no admin kubeconfig"),
            Check::skip("remote-access", "only for windows-bgp"),
        ];
        let t = table(&checks);
        assert_eq!(t.matches("no admin kubeconfig").count(), 1, "{t}");
        assert!(
            t.contains(
                "3 checks skipped (calico-version, ipip-disabled, rbac): no admin kubeconfig"
            ),
            "{t}"
        );
        assert!(t.contains("remote-access   only for windows-bgp"), "{t}");
    }

    #[test]
    fn a_skipped_failure_stops_blocking_and_says_it_was_accepted() {
        let mut checks = vec![
            Check::fail("hns", "HNS is missing", "Install-WindowsFeature Containers"),
            Check::fail("elevation", "not elevated", "run as administrator"),
        ];
        accept_skipped(&mut checks, &["hns".to_owned()]);
        assert_eq!(blocking(&checks), vec!["elevation"]);
        assert_eq!(checks[0].verdict, Verdict::Skip);
        assert!(
            checks[0]
                .message
                .starts_with("accepted with --skip hns (was fail)")
        );
        let t = table(&checks);
        assert!(t.contains("FAIL  elevation  not elevated\n"), "{t}");
        assert!(t.contains("fix: run as administrator"), "{t}");
    }
}
