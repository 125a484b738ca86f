//! `verify`: proves a Windows node passes traffic with probe pods, then leaves nothing behind
//! (docs/commands/verify.md).

use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::error::UsageError;
use crate::verify::judge::Outcome;
use crate::verify::run::{self, Options, Report, RunError};

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
        image: args.image.clone(),
        egress: args.egress.clone(),
        timeout: args.timeout,
        pull_timeout: args.pull_timeout,
        keep_on_failure: args.keep_on_failure,
        ..Options::for_node(&node)
    };
    on_interrupt(ctx, &o);
    let report = match run::run(&c, &o) {
        Ok(r) => r,
        Err(RunError::Plan(e)) => return Err(e.into()),
        Err(RunError::Cluster(e)) => return Err(e.into()),
    };
    ctx.printer.text(&table(&report));
    ctx.printer.json(&serde_json::json!(report));
    match crate::verify::failure::of(&report, args.timeout.as_secs()) {
        None => Ok(()),
        Some(e) => Err(e.into()),
    }
}

/// Ctrl-C or a termination signal stops the run where it is; it deletes what it made before
/// the command exits. (A kill that cannot be caught leaves the namespace to the next run.)
pub fn on_interrupt(ctx: &mut Context, o: &Options) {
    let flag = o.interrupted.clone();
    if let Err(e) =
        ctrlc::set_handler(move || flag.store(true, std::sync::atomic::Ordering::SeqCst))
    {
        ctx.printer.warn(&format!(
            "Ctrl-C will not clean up ({e}): a run stopped that way leaves its namespace to the next run"
        ));
    }
}

/// The report for people: each check, its result and time, each failure's finding and step.
pub fn table(r: &Report) -> String {
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
            Outcome::Blocked { by } => ("not run", format!("  ({} did not pass)", by.word())),
            Outcome::Skipped { why } => ("skipped", format!("  ({why})")),
        };
        let took = format!("{:.1}s", v.took_ms as f64 / 1000.0);
        let extra = match (v.attempts, v.delay_ms) {
            (_, Some(d)) => format!("  (changed after {:.1}s){extra}", d as f64 / 1000.0),
            (n, None) if n > 1 => format!("  ({n} dials){extra}"),
            _ => extra,
        };
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
    out.push_str(&format!(
        "\n{end} (cleanup {:.1}s); {} s in all\n",
        r.cleanup_ms as f64 / 1000.0,
        r.took_ms / 1000
    ));
    out
}
