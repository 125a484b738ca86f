//! `verify`: proves a Windows node passes traffic with probe pods, then leaves nothing behind
//! (docs/commands/verify.md).

use super::verify_restarted::Restarted;
use crate::cli::VerifyArgs;
use crate::context::Context;
use crate::error::UsageError;
use crate::k8s_name::NodeName;
use crate::verify::judge::Outcome;
use crate::verify::run::{self, Options, Report, RunError};

/// How many nodes are verified at once (each run makes five pods and polls the pod proxy).
pub const AT_ONCE: usize = 3;

/// The command's document: one report for every node named.
#[derive(Debug, serde::Serialize)]
pub struct Verified {
    /// `output::VERIFY_SCHEMA`.
    pub schema: u32,
    pub passed: bool,
    pub nodes: Vec<Report>,
}

pub fn run(args: &VerifyArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let here = super::common::this_node(ctx);
    let nodes = match (&args.node[..], here.as_ref().map(|(n, _)| n)) {
        ([], Some(n)) => vec![n.clone()],
        ([], None) => {
            return Err(UsageError::new(
                "verify needs the node to verify",
                "pass --node NAME (on a node calicoctl-win installed, its configured Kubernetes name, node.k8s_node_ref, is the default)",
            )
            .into());
        }
        (named, _) => named.to_vec(),
    };
    // A run in a namespace given verifies one node.
    if let (Some(ns), [_, _, ..]) = (&args.namespace, &nodes[..]) {
        return Err(UsageError::new(
            format!("verify --namespace {ns} verifies one node a run"),
            "run 'calicoctl-win verify --namespace' once for each node, or leave out --namespace (each node's run then gets a namespace of its own)",
        )
        .into());
    }
    let c = ctx.require_cluster()?;
    let first = Options {
        image: args.image.clone(),
        egress: args.egress.clone(),
        cluster_domain: args
            .cluster_domain
            .clone()
            .or_else(|| here.as_ref().and_then(|(_, d)| d.clone()))
            .unwrap_or_else(|| crate::verify::options::CLUSTER_DOMAIN.to_owned()),
        timeout: args.timeout,
        pull_timeout: args.pull_timeout,
        keep_on_failure: args.keep_on_failure,
        namespace: args.namespace.clone(),
        while_cordoned: args.while_cordoned,
        // The fleet Plan's verify waits for the node's word first (`PlanGate`).
        wait_ready: args.while_cordoned,
        ..Options::for_node(&nodes[0]).paced(ctx.options.host.sim_pace)
    };
    let gate = args.while_cordoned.then(|| plan_gate(ctx, here.as_ref()));
    // Ctrl-C stops the runs where they are; they delete what they made before the command exits.
    ctx.catch_stop(first.stop.clone(), super::common::VERIFY_UNCAUGHT);
    let mut reports = run_all(&c, &nodes, &first, gate.as_ref())?;
    // What the runs' waits said, with -v.
    for line in first.said.take() {
        ctx.printer.detail(&format!("verify: {line}"));
    }
    for r in &mut reports {
        join_node_health(ctx, r);
    }
    for r in &reports {
        ctx.printer.text(&table(r));
    }
    let failed = crate::verify::failure::of_all(&reports, args.timeout.as_secs());
    ctx.printer.json(&Verified {
        schema: crate::output::VERIFY_SCHEMA,
        passed: failed.is_none(),
        nodes: reports,
    });
    match failed {
        None => Ok(()),
        Some(e) => Err(e.into()),
    }
}

/// On the node it verifies: this node's own findings (`health::installed_on_node`, as
/// CalicoNode's look without the cluster) joined to the report (`verify::node_health::join`).
pub fn join_node_health(ctx: &mut Context, r: &mut Report) {
    if super::common::this_node(ctx).is_none_or(|(n, _)| n.as_str() != r.node) {
        return;
    }
    let judged = (|| -> anyhow::Result<Vec<crate::health::judge::Finding>> {
        let host = ctx.open_host(crate::host::select::Intent::Read)?;
        let config = ctx.load_config()?.config;
        let node = config.node.name.clone();
        let state_dir = ctx.state_dir(host.as_ref());
        crate::health::installed_on_node(host.as_ref(), &config.root(), &node, state_dir.as_deref())
    })();
    crate::verify::node_health::join(r, judged.unwrap_or_default());
}

/// The fleet Plan's verify (`--while-cordoned`) takes a `CalicoWindowsReady` True written
/// since CalicoNode's start on this host (`supervise::condition`), else one within
/// `CONDITION_STALE_AFTER`, as `fleet status` does.
struct PlanGate {
    here: Option<NodeName>,
    calico_node_started: Option<i64>,
    fresh_since: i64,
}

impl PlanGate {
    fn since(&self, node: &NodeName) -> i64 {
        match (&self.here, self.calico_node_started) {
            // `written_since` takes a heartbeat after `since`: CalicoNode's start second counts.
            (Some(h), Some(t)) if h == node => t - 1,
            _ => self.fresh_since,
        }
    }
}

/// Every node's run, `AT_ONCE` at a time; the first run refused ends the command.
fn run_all(
    c: &crate::cluster::Cluster,
    nodes: &[NodeName],
    first: &Options,
    gate: Option<&PlanGate>,
) -> anyhow::Result<Vec<Report>> {
    let mut reports = Vec::new();
    for (k, batch) in nodes.chunks(AT_ONCE).enumerate() {
        let done: Vec<Option<Result<Report, RunError>>> = std::thread::scope(|s| {
            let runs: Vec<_> = batch
                .iter()
                .enumerate()
                .map(|(i, node)| {
                    let o = Options {
                        node: node.clone(),
                        // Distinct for runs started in the same instant.
                        suffix: format!("{}{}", first.suffix, k * AT_ONCE + i),
                        calico_since: gate.as_ref().map(|g| g.since(node)),
                        ..first.clone()
                    };
                    s.spawn(move || run::run(c, &o))
                })
                .collect();
            runs.into_iter().map(|h| h.join().ok()).collect()
        });
        for r in done {
            match r {
                Some(Ok(r)) => reports.push(r),
                Some(Err(RunError::Plan(e))) => return Err(e.into()),
                Some(Err(RunError::Cluster(e))) => return Err(e.into()),
                None => anyhow::bail!("a verify run stopped unexpectedly"),
            }
        }
    }
    Ok(reports)
}

fn plan_gate(ctx: &mut Context, here: Option<&(NodeName, Option<String>)>) -> PlanGate {
    let started = (|| -> anyhow::Result<Option<i64>> {
        let host = ctx.open_host(crate::host::select::Intent::Read)?;
        let node = host.service_query(crate::layout::Role::Node.service_name())?;
        Ok(node.and_then(|s| s.since))
    })();
    let stale = crate::cluster::node::CONDITION_STALE_AFTER.as_secs() as i64;
    PlanGate {
        here: here.map(|(n, _)| n.clone()),
        calico_node_started: started.ok().flatten(),
        fresh_since: crate::duration::now() - stale,
    }
}

/// The report for people: each check, its result and time, each failure's finding and step.
pub fn table(r: &Report) -> String {
    let mut out = format!(
        "verify node {} (namespace {}, image {})\n\n",
        r.node, r.namespace, r.image
    );
    if !r.peers.is_empty() {
        let peers: Vec<String> = r
            .peers
            .iter()
            .map(|p| format!("{} on {}", p.role.pod_name(), p.node))
            .collect();
        out.push_str(&format!("(peers: {})\n", peers.join(", ")));
    }
    out.push_str(&format!("{:<18} {:<8} {:>8}\n", "CHECK", "RESULT", "TOOK"));
    for v in &r.checks {
        let (word, extra) = match &v.outcome {
            Outcome::Pass => ("pass", String::new()),
            Outcome::Fail { finding } => ("FAIL", format!("\n    {}", failed(r, v, finding))),
            Outcome::Blocked { by } => ("not run", format!("  ({} did not pass)", by.word())),
            Outcome::Skipped { why } => ("skipped", format!("  ({why})")),
            Outcome::Stopped => ("not run", "  (the run was stopped)".to_owned()),
            Outcome::TimedOut => ("not run", "  (the run's --timeout came first)".to_owned()),
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
    out.push_str(&findings(r));
    if !r.leftovers_removed.is_empty() {
        out.push_str(&format!(
            "\nremoved what killed runs left: {}\n",
            r.leftovers_removed.join(", ")
        ));
    }
    for left in &r.leftovers_left {
        out.push_str(&format!("a killed run's {left}\n"));
    }
    let end = if r.namespace_given {
        given_end(r)
    } else {
        own_end(r)
    };
    out.push_str(&format!(
        "\n{end} (cleanup {:.1}s); {} s in all\n",
        r.cleanup_ms as f64 / 1000.0,
        r.took_ms / 1000
    ));
    out
}

/// A failed check for people: its finding, the next step and this node's own finding beside it.
fn failed(
    r: &Report,
    v: &crate::verify::judge::Verdict,
    finding: &crate::health::judge::Finding,
) -> String {
    let next = finding.remedy.as_deref().unwrap_or_default();
    let own = crate::verify::node_health::said(r, v.check)
        .map(|s| format!("\n    {s}"))
        .unwrap_or_default();
    let (message, code) = (&finding.message, finding.code.word());
    format!("{message} [{code}]\n    next: {next}{own}")
}

/// This node's own findings, then the lost lease's (`verify-lease-lost`), as the table ends.
fn findings(r: &Report) -> String {
    let mut out = String::new();
    for f in &r.node_health {
        out.push_str(&format!("this node: {} [{}]\n", f.message, f.code.word()));
    }
    if let Some(f) = &r.lease_lost {
        let next = f.remedy.as_deref().unwrap_or_default();
        let (message, code) = (&f.message, f.code.word());
        out.push_str(&format!("\n{message} [{code}]\n    next: {next}\n"));
    }
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
            "what this run made in namespace {ns} is kept: kubectl -n {ns} delete pods,services,networkpolicies,leases -l {l}={v} when done",
            ns = r.namespace,
            l = crate::verify::objects::RUN_LABEL,
            v = r.run,
        ),
    }
}

fn own_end(r: &Report) -> String {
    match (r.cleaned_up, &r.clean_up_error, r.passed) {
        (true, _, _) => format!("namespace {} deleted", r.namespace),
        // Not deleted (a stopped run's bound, a refusal): what was left and who removes it.
        (false, Some(e), _) => e.clone(),
        (false, None, false) => format!(
            "namespace {ns} kept (annotated {k}: no verify run deletes it): kubectl delete namespace {ns} when done (every kept one: kubectl delete namespace -l {k}=true)",
            ns = r.namespace,
            k = crate::verify::objects::KEPT,
        ),
        (false, None, true) => format!("namespace {} is still being deleted", r.namespace),
    }
}

/// A restarted Felix or kube-proxy waited for within `--timeout` (`verify_restarted`).
fn services_ready(ctx: &mut Context, r: Restarted, o: &Options) -> anyhow::Result<()> {
    if !r.felix && !r.kube_proxy {
        return Ok(());
    }
    let host = ctx.open_host(crate::host::select::Intent::Read)?;
    let root = ctx.load_config()?.config.root();
    let stop = ctx.catch_stop(crate::duration::Stop::new(), super::common::VERIFY_UNCAUGHT);
    let printer = &mut ctx.printer;
    super::verify_restarted::wait(
        host.as_ref(),
        &root,
        (r, &o.node),
        (o.timeout, &stop),
        &mut |l: &str| printer.note(l),
    )?;
    Ok(())
}

/// A changing command's document, after `--verify`'s run (`what` names the change that stays
/// when the node does not pass traffic; `restarted`, the services it (re)started).
pub fn print_verified(
    ctx: &mut Context,
    (verify, what, restarted): (Option<(&str, std::time::Duration)>, &str, Restarted),
    cluster: Option<&crate::cluster::Cluster>,
    node: &NodeName,
    doc: impl serde::Serialize,
) -> anyhow::Result<()> {
    let Some(with) = verify else {
        ctx.printer.json(&doc);
        return Ok(());
    };
    let (verify, failed) = verify_after(ctx, (cluster, with), node, restarted)?;
    ctx.printer.json(&super::common::WithVerify {
        schema: crate::output::VERIFY_SCHEMA,
        doc,
        verify,
    });
    match failed {
        Some(e) => {
            let said = verified_ending(what, &e);
            Err(anyhow::Error::new(e).context(said))
        }
        None => Ok(()),
    }
}

/// How a changing command ends when `--verify` failed: "did not finish" for a lost lease
/// before any check failed, else the node does not pass traffic.
fn verified_ending(what: &str, e: &crate::verify::failure::Failed) -> String {
    match e {
        crate::verify::failure::Failed::LeaseLost { checks, .. } if checks.is_empty() => {
            format!("{what}, but verify did not finish")
        }
        _ => format!("{what}, but the node does not pass traffic"),
    }
}

/// `--verify` after a change (which stays): `verify` for this node, its failures said; its
/// report and the failure to end with.
pub fn verify_after(
    ctx: &mut Context,
    (cluster, (image, timeout)): (
        Option<&crate::cluster::Cluster>,
        (&str, std::time::Duration),
    ),
    node: &NodeName,
    restarted: Restarted,
) -> anyhow::Result<(Report, Option<crate::verify::failure::Failed>)> {
    let Some(c) = cluster else {
        return Err(crate::error::UsageError::new(
            "--verify needs the cluster, read with the admin kubeconfig",
            "pass --kubeconfig with an admin's, or run 'calicoctl-win verify' where one is",
        )
        .into());
    };
    // The Node object's name, and the cluster's domain, as the configuration names them.
    let (node, domain) = match super::common::this_node(ctx) {
        Some((n, d)) => (n, d),
        None => (node.clone(), None),
    };
    let o = Options {
        image: image.to_owned(),
        timeout,
        cluster_domain: domain.unwrap_or_else(|| crate::verify::options::CLUSTER_DOMAIN.into()),
        // Just changed: the node and CalicoNode may take a while to be Ready.
        wait_ready: true,
        // A CalicoNode (re)started writes a new condition at its start; an older says nothing.
        calico_since: restarted.node.then_some(ctx.started_s),
        // The stop a drain before it caught, if one did: a process catches the signal once.
        stop: ctx.catch_stop(crate::duration::Stop::new(), super::common::VERIFY_UNCAUGHT),
        ..Options::for_node(&node).paced(ctx.options.host.sim_pace)
    };
    services_ready(ctx, restarted, &o)?;
    let ran = run::run(c, &o);
    for line in o.said.take() {
        ctx.printer.detail(&format!("verify: {line}"));
    }
    let mut report = match ran {
        Ok(r) => r,
        Err(RunError::Plan(e)) => return Err(e.into()),
        Err(RunError::Cluster(e)) => return Err(e.into()),
    };
    join_node_health(ctx, &mut report);
    for v in &report.checks {
        if let Outcome::Fail { finding } = &v.outcome {
            let said = failed(&report, v, finding);
            ctx.printer
                .text(&format!("verify {}: {said}", v.check.word()));
        }
    }
    if report.passed {
        ctx.printer.text(&format!(
            "verify: node {node} passes traffic ({} checks)",
            report.checks.len()
        ));
    }
    let failed = crate::verify::failure::of(&report, o.timeout.as_secs());
    Ok((report, failed))
}

#[cfg(test)]
mod ending_tests {
    use crate::verify::failure::Failed;

    /// A check the run's deadline cut is a row of the table, said as not run for it.
    #[test]
    fn a_check_the_deadline_cut_is_in_the_table() {
        use crate::verify::judge::{Outcome, Verdict};
        let report = crate::verify::run::Report {
            node: "win-a".into(),
            timed_out: true,
            checks: vec![Verdict {
                check: crate::verify::matrix::CheckId::PolicyRemoved,
                outcome: Outcome::TimedOut,
                took_ms: 0,
                attempts: 0,
                delay_ms: None,
            }],
            ..Default::default()
        };
        let table = super::table(&report);
        assert!(
            table.contains("policy-removed     not run") && table.contains("--timeout came first"),
            "{table}"
        );
    }

    /// A run stopped for its lost lease ends the command with "verify did not finish" only
    /// when no check had failed before it; with one failed, the node does not pass traffic.
    #[test]
    fn a_lost_lease_after_a_failed_check_says_the_node_does_not_pass_traffic() {
        let lost = |checks: &str| Failed::LeaseLost {
            node: "win-a".into(),
            why: "lost".into(),
            checks: checks.into(),
        };
        assert_eq!(
            super::verified_ending("installed", &lost("")),
            "installed, but verify did not finish"
        );
        assert_eq!(
            super::verified_ending("installed", &lost(" (failed before it: pod-to-pod)")),
            "installed, but the node does not pass traffic"
        );
        let failed = Failed::NotPassing {
            node: "win-a".into(),
            checks: "dns".into(),
        };
        assert_eq!(
            super::verified_ending("installed", &failed),
            "installed, but the node does not pass traffic"
        );
    }
}
