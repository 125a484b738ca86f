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
        keep_on_failure: args.keep_on_failure,
        namespace: args.namespace.clone(),
        while_cordoned: args.while_cordoned,
        ..Options::for_node(&node)
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
    match crate::verify::failure::of(&report, args.timeout.as_secs()) {
        None => Ok(()),
        Some(e) => Err(e.into()),
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
    let end = if r.namespace_given {
        given_end(r)
    } else {
        own_end(r)
    };
    out.push_str(&format!("\n{end}; {} s in all\n", r.took_ms / 1000));
    out
}

/// What became of what the run made in a namespace it was given (never the namespace).
fn given_end(r: &Report) -> String {
    match (&r.clean_up_error, r.cleaned_up) {
        (_, true) => format!("what this run made in namespace {} deleted", r.namespace),
        (Some(e), false) => format!(
            "what this run made in namespace {} is not deleted: {e}",
            r.namespace
        ),
        (None, false) => format!(
            "what this run made in namespace {ns} is kept: kubectl -n {ns} delete pods,services,networkpolicies -l {l}={v}, then configmap {t}, when done",
            ns = r.namespace,
            l = crate::verify::objects::OWNER_LABEL,
            v = crate::verify::objects::OWNER_VALUE,
            t = crate::verify::shared::TURN,
        ),
    }
}

fn own_end(r: &Report) -> String {
    match (r.cleaned_up, r.passed) {
        (true, _) => format!("namespace {} deleted", r.namespace),
        (false, false) => format!(
            "namespace {} kept: kubectl delete namespace {} when done",
            r.namespace, r.namespace
        ),
        (false, true) => format!("namespace {} is still being deleted", r.namespace),
    }
}
