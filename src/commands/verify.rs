//! `verify`: proves a Windows node passes traffic with probe pods, then leaves nothing behind
//! (docs/commands/verify.md).

use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::error::{Diagnose, Diagnosis, Exit, Kind, UsageError};
use crate::verify::judge::Outcome;
use crate::verify::run::{self, Options, Report, RunError};

/// A check failed: exit 1, the report lists which and why.
#[derive(Debug, thiserror::Error)]
#[error("node {node} does not pass traffic: {failed}")]
pub struct NotPassing {
    pub node: String,
    pub failed: String,
}

impl Diagnose for NotPassing {
    fn diagnose(&self) -> Option<Diagnosis> {
        Diagnosis::new(
            Exit::Failed,
            Kind::TrafficFailed,
            "each failed check names its layer and the next step above (-o json: checks[].finding)",
        )
    }
}

/// The run's --timeout passed before every check was judged: exit 4.
#[derive(Debug, thiserror::Error)]
#[error("verify of node {node} did not finish within {timeout_s} s")]
pub struct TimedOut {
    pub node: String,
    pub timeout_s: u64,
}

impl Diagnose for TimedOut {
    fn diagnose(&self) -> Option<Diagnosis> {
        Diagnosis::new(
            Exit::Timeout,
            Kind::Timeout,
            "the checks judged so far are listed; a pod that waits for its image takes longest: pull it first, or give --timeout more",
        )
    }
}

/// Ctrl-C or a termination signal stopped the run: exit 1, what it made deleted.
#[derive(Debug, thiserror::Error)]
#[error("verify of node {node} was interrupted")]
pub struct Interrupted {
    pub node: String,
}

impl Diagnose for Interrupted {
    fn diagnose(&self) -> Option<Diagnosis> {
        Diagnosis::new(
            Exit::Failed,
            Kind::Failed,
            "run it again to judge every check",
        )
    }
}

pub fn run(args: &VerifyArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let node = match &args.node {
        Some(n) => n.clone(),
        None => ctx
            .load_config()
            .map(|l| l.config.node.name.to_string())
            .map_err(|_| {
                UsageError::new(
                    "verify needs the node to verify",
                    "pass --node NAME (on a node calicoctl-win installed, its configured name is the default)",
                )
            })?,
    };
    let c = ctx.require_cluster()?;
    let o = Options {
        node: node.clone(),
        image: args.image.clone(),
        egress: args.egress.clone(),
        timeout: args.timeout,
        keep_on_failure: args.keep_on_failure,
        suffix: suffix(),
        policy_wait: run::POLICY_WAIT,
        pods_wait: run::PODS_WAIT,
        interrupted: Default::default(),
    };
    // Ctrl-C or a termination signal stops the run where it is; it deletes what it made
    // before it exits. (A kill that cannot be caught leaves the namespace to the next run.)
    let flag = o.interrupted.clone();
    if let Err(e) =
        ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst))
    {
        ctx.printer.warn(&format!(
            "Ctrl-C will not clean up ({e}): a run stopped that way leaves its namespace to the next run"
        ));
    }
    let now = jiff::Timestamp::now().as_second();
    let report = match run::run(&c, &o, now) {
        Ok(r) => r,
        Err(RunError::Plan(e)) => return Err(e.into()),
        Err(RunError::Cluster(e)) => return Err(e.into()),
    };
    ctx.printer.text(&table(&report));
    ctx.printer.json(&serde_json::json!(report));
    if report.interrupted {
        return Err(Interrupted { node }.into());
    }
    if report.timed_out {
        return Err(TimedOut {
            node,
            timeout_s: args.timeout.as_secs(),
        }
        .into());
    }
    if report.passed {
        return Ok(());
    }
    let failed: Vec<String> = report
        .checks
        .iter()
        .filter(|v| matches!(v.outcome, Outcome::Fail { .. }))
        .map(|v| v.check.word())
        .collect();
    Err(NotPassing {
        node,
        failed: failed.join(", "),
    }
    .into())
}

/// A random suffix for the namespace: no RNG crate, the clock's nanoseconds and the process id
/// in base 36.
fn suffix() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut n = nanos ^ (u128::from(std::process::id()) << 64);
    let mut out = String::new();
    for _ in 0..8 {
        let d = (n % 36) as u32;
        out.push(char::from_digit(d, 36).unwrap_or('0'));
        n /= 36;
    }
    out
}

/// The report for people: each check, its result and time, each failure's finding and step.
fn table(r: &Report) -> String {
    let mut out = format!(
        "verify node {} (namespace {}, image {})\n\n{:<18} {:<8} {:>8}\n",
        r.node, r.namespace, r.image, "CHECK", "RESULT", "TOOK"
    );
    for v in &r.checks {
        let (word, extra) = match &v.outcome {
            Outcome::Pass => ("pass", String::new()),
            Outcome::Fail { finding } => (
                "FAIL",
                format!(
                    "\n    {} [{}]\n    next: {}",
                    finding.message,
                    finding.code.word(),
                    finding.remedy.clone().unwrap_or_default()
                ),
            ),
            Outcome::Blocked { by } => ("blocked", format!("  (by {})", by.word())),
            Outcome::Skipped { why } => ("skipped", format!("  ({why})")),
        };
        let took = format!("{:.1}s", v.took_ms as f64 / 1000.0);
        out.push_str(&format!(
            "{:<18} {:<8} {:>8}{extra}\n",
            v.check.word(),
            word,
            took
        ));
    }
    for s in &r.skipped {
        out.push_str(&format!(
            "{:<18} {:<8} {:>8}  ({})\n",
            s.id.word(),
            "skipped",
            "-",
            s.why
        ));
    }
    if !r.leftovers_removed.is_empty() {
        out.push_str(&format!(
            "\nremoved what killed runs left: {}\n",
            r.leftovers_removed.join(", ")
        ));
    }
    let end = match (r.cleaned_up, r.passed) {
        (true, _) => format!("namespace {} deleted", r.namespace),
        (false, false) => format!(
            "namespace {} kept: kubectl delete namespace {} when done",
            r.namespace, r.namespace
        ),
        (false, true) => format!("namespace {} is still being deleted", r.namespace),
    };
    out.push_str(&format!("\n{end}; {} s in all\n", r.took_ms / 1000));
    out
}
