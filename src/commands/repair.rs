//! `repair`: the Calico network's stuck and stale HNS endpoints removed, the pods that held the
//! stuck ones evicted so that their controllers recreate them, Felix (and kube-proxy) restarted,
//! then a wait until no endpoint is at fault.

use super::change::Change;
use super::preflight::{ClusterRead, read_cluster, with_cluster};
use crate::apply;
use crate::cli::RepairArgs;
use crate::cluster::Cluster;
use crate::cluster::drain::DrainOptions;
use crate::context::Context;
use crate::error::UsageError;
use crate::host::Host;
use crate::installed::endpoints::{self, Judged};
use crate::installed::record;
use crate::layout::join;
use crate::plan::repair;
use anyhow::Context as _;
use serde_json::json;
use std::time::{Duration, Instant};

/// What a repair works on: the node's name, the install root and record, the cluster.
struct Target {
    node: String,
    root: String,
    rec: record::InstallRecord,
    cluster: Box<Cluster>,
}

/// The node, its install and the cluster; no install, or no cluster, is refused.
fn target(ctx: &mut Context, host: &dyn Host) -> anyhow::Result<Target> {
    let base = ctx.load_config()?;
    let node = base.config.node.name.to_string();
    let cluster = read_cluster(false, ctx, &node)?;
    let loaded = with_cluster(ctx, &cluster, base)?;
    let root = crate::plan::install::install_root(&loaded.config);
    let Some(rec) = record::read(host, &root)? else {
        return Err(UsageError::new(
            format!("Calico is not installed in {root}: there is nothing to repair"),
            "install it first ('calicoctl-win install')",
        )
        .into());
    };
    let cluster = match cluster {
        ClusterRead::Read(c, _) => c,
        ClusterRead::Skipped(why) => anyhow::bail!("repair needs the cluster, which was {why}"),
        ClusterRead::Failed(e) => {
            return Err(anyhow::Error::new(e).context("repair needs the cluster"));
        }
    };
    Ok(Target {
        node,
        root,
        rec,
        cluster,
    })
}

pub fn run(args: &RepairArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host_to_change("repair")?;
    let Target {
        node,
        root,
        rec,
        cluster: c,
    } = target(ctx, host.as_ref())?;
    let journal_path = join(&root, crate::layout::JOURNAL_FILE);
    let mut change = Change::begin(ctx, host.as_ref(), "repair", &root, journal_path)?;
    let interrupted = change.journal.take();
    let judged = survey(host.as_ref(), &c, &node, args.grace)?;
    let installed: Vec<String> = rec.services.iter().map(|s| s.name.clone()).collect();
    let actions = repair::plan(&repair::Inputs {
        node: &node,
        judged: &judged,
        drain: drain_options(args),
        installed: &installed,
        interrupted: interrupted.is_some(),
    })
    .map_err(|u| refused(&node, u))?;
    let faults: Vec<&Judged> = judged.iter().filter(|j| j.verdict.is_fault()).collect();
    let mut doc = json!({
        "dry_run": ctx.options.dry_run,
        "node": node,
        "endpoints": faults,
        "actions": apply::to_json(&actions).context("cannot show the plan as JSON")?,
        "changed": false,
    });
    if actions.is_empty() {
        ctx.printer
            .text("No HNS endpoint of the Calico network is stuck or stale: nothing to repair.");
        ctx.printer.json(&doc);
        return Ok(());
    }
    ctx.printer.text(&format!(
        "Repair {} HNS endpoint(s) on node {node}:",
        faults.len()
    ));
    if ctx.options.dry_run {
        change.show(ctx, &actions);
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc);
        return Ok(());
    }
    let opts = options(args, change.journal_path.clone(), interrupted, &c);
    if let Err(f) = change.run(ctx, &actions, opts)? {
        let e = f.error;
        let step = e.action.clone();
        return Err(anyhow::Error::new(e).context(format!(
            "repair stopped at '{step}'; the steps before it stay done (deleted endpoints and evictions cannot be undone); run 'calicoctl-win repair' again to finish"
        )));
    }
    doc["changed"] = json!(true);
    let left = wait_healthy(ctx, host.as_ref(), &c, &node, args)?;
    doc["remaining"] = json!(left);
    ctx.printer.json(&doc);
    finished(ctx, actions.len(), &left)
}

/// After the plan ran: done, or what is still at fault (exit 1).
fn finished(ctx: &mut Context, steps: usize, left: &[Judged]) -> anyhow::Result<()> {
    if left.is_empty() {
        ctx.printer.text(&format!(
            "Repaired: {steps} step(s); no endpoint is at fault."
        ));
        return Ok(());
    }
    Err(super::status::Degraded(
        left.iter()
            .map(|j| {
                format!(
                    "after the repair, HNS endpoint {} ({}) is still {}",
                    j.name,
                    j.ip.as_deref().unwrap_or("no address"),
                    j.verdict.word()
                )
            })
            .collect(),
    )
    .into())
}

/// The Calico network's endpoints, judged against the cluster (none without the network).
fn survey(
    host: &dyn Host,
    c: &Cluster,
    node: &str,
    grace: Duration,
) -> anyhow::Result<Vec<Judged>> {
    let remote = endpoints::Remote::Ask;
    Ok(endpoints::survey_calico(host, Some(c), node, grace, remote)?.unwrap_or_default())
}

/// After the repair, until `--wait-timeout`: the endpoints still at fault (none when healthy).
/// A recreated pod's new endpoint that is still attaching is no fault.
fn wait_healthy(
    ctx: &mut Context,
    host: &dyn Host,
    c: &Cluster,
    node: &str,
    args: &RepairArgs,
) -> anyhow::Result<Vec<Judged>> {
    let deadline = Instant::now() + args.wait_timeout;
    let mut pause = Duration::from_millis(100);
    loop {
        let left: Vec<Judged> = survey(host, c, node, args.grace)?
            .into_iter()
            .filter(|j| j.verdict.is_fault())
            .collect();
        if left.is_empty() || Instant::now() >= deadline {
            return Ok(left);
        }
        ctx.log(&format!(
            "{} endpoint(s) still at fault; looking again",
            left.len()
        ));
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_secs(5));
    }
}

/// A repair evicts pods with emptyDir data too: they have no network to use it with.
fn drain_options(args: &RepairArgs) -> DrainOptions {
    args.evict.options(true)
}

/// Pods with a stuck endpoint that nothing recreates: refused before anything changes.
fn refused(node: &str, u: repair::Unmanaged) -> anyhow::Error {
    UsageError::new(
        format!(
            "the endpoints of pod(s) {} on node {node} are stuck, and no controller recreates them once evicted; nothing was changed",
            u.0.join(", ")
        ),
        "recreate them yourself, or pass --force to evict them all the same",
    )
    .of_kind(crate::error::Kind::DrainRefused)
    .into()
}

/// How the plan runs: journaled, no rollback (a deleted endpoint or an evicted pod cannot be
/// brought back), with the cluster for the evictions.
fn options<'a>(
    args: &RepairArgs,
    journal_path: String,
    journal: Option<crate::apply::journal::Journal>,
    cluster: &'a Cluster,
) -> apply::Options<'a> {
    let cluster = Some(cluster as &dyn crate::cluster::drain::NodeControl);
    apply::Options::for_change(
        "repair",
        journal_path,
        false,
        args.service_timeout,
        journal,
        cluster,
    )
}
