//! `status`: the recipe. Read the config and the cluster, the desired state from `plan/`, what
//! is under way from the host lock and a detached run, then survey the node once
//! (`health::survey`) and print the report; exit 1 with the findings' sentences when anything
//! is degraded.

use super::common::{ClusterRead, Degraded, read_cluster_knowing, with_cluster};
use crate::cli::StatusArgs;
use crate::cluster::token_check;
use crate::config::Config;
use crate::context::Context;
use crate::health::{self, Desired, Look, Running};
use crate::host::Host;
use crate::host::select::Intent;
use crate::installed::file_stat::FileStats;
use crate::installed::record::{self, InstallRecord};
use crate::layout::InstallRoot;
use crate::plan::drift;

pub fn run(args: &StatusArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(Intent::Read)?;
    let h = host.as_ref();
    let base = ctx.load_config()?;
    let node_name = base.config.node.name.to_string();
    let (asked, cluster) = look(args, ctx, h, &base.config, &node_name)?;
    let loaded = with_cluster(ctx, &cluster, base)?;
    let config = &loaded.config;
    let root = config.root();
    let running = running(ctx, h)?;
    let installed = match record::read(h, &root)? {
        Some(rec) => {
            let want = desired(h, config, (&rec, &cluster), &root, args.verify)?;
            Some((rec, want))
        }
        None => None,
    };
    let report = health::survey(Look {
        host: h,
        config,
        root: &root,
        node: &node_name,
        cluster: &cluster,
        asked: asked.as_ref(),
        env: &ctx.env,
        grace: args.grace,
        running,
        installed,
    })?;
    for line in health::text::lines(&report) {
        ctx.printer.text(&line);
    }
    ctx.printer.json(&report);
    if report.healthy() {
        Ok(())
    } else {
        Err(Degraded(report.findings().iter().map(Into::into).collect()).into())
    }
}

/// This node's own findings, judged as CalicoNode's minute look judges them
/// (`health::on_node`: its services, Felix's health, the Calico network's endpoints, the HNS
/// restart watchdog): what `verify` joins to its report when run on the node it verifies. None
/// when it is not installed here or cannot be read.
pub fn host_findings(ctx: &mut Context) -> Vec<crate::installed::health::Finding> {
    use crate::installed::endpoints;
    let judged = (|| -> anyhow::Result<Vec<crate::installed::health::Finding>> {
        let host = ctx.open_host(Intent::Read)?;
        let config = ctx.load_config()?.config;
        let root = config.root();
        if crate::installed::record::read(host.as_ref(), &root)?.is_none() {
            return Ok(Vec::new());
        }
        let node = config.node.name.to_string();
        let how = endpoints::Survey {
            cluster: None,
            node: &node,
            grace: endpoints::DEFAULT_GRACE,
            remote: endpoints::Remote::Skip,
            ageing: endpoints::Ageing::Read,
        };
        Ok(health::on_node(host.as_ref(), &root, &how).findings)
    })();
    judged.unwrap_or_default()
}

/// The API server asked whether it takes calico-node's token, offline too (the fleet
/// DaemonSet's readiness), and the cluster read with the admin kubeconfig (not offline): the
/// Node the token's request read is the one this look judges, read once, and so are the
/// node's pods.
fn look(
    args: &StatusArgs,
    ctx: &mut Context,
    host: &dyn Host,
    config: &Config,
    node_name: &str,
) -> anyhow::Result<(Option<token_check::Answer>, ClusterRead)> {
    let mut asked = health::ask_token(&ctx.env, host, config, node_name);
    let known = match &mut asked {
        Some(token_check::Answer::Accepted(node)) => node.take().map(|n| *n),
        _ => None,
    };
    let cluster = if args.offline {
        ClusterRead::Skipped("skipped with --offline")
    } else {
        read_cluster_knowing(ctx, node_name, crate::cluster::facts::Rights::Look, known)?
    };
    if let ClusterRead::Read(c, _) = &cluster {
        c.keep_one_look();
    }
    Ok((asked, cluster))
}

/// A command changing the node now (who holds the host lock); else a detached run that ended
/// without its result, whose result is written now (`detach::settle`).
fn running(ctx: &Context, host: &dyn Host) -> anyhow::Result<Running> {
    let dir = ctx.state_dir(host);
    let holder = dir
        .as_ref()
        .and_then(|d| crate::host::lock::busy(d))
        .map(|h| h.map(|h| h.to_string()));
    let died = match (&holder, &dir) {
        (None, Some(d)) => super::detach::settle(d)?,
        _ => None,
    };
    Ok(Running { holder, died })
}

/// What the config wants of the node (`plan/`): its services, and the files that differ from
/// the record (installed ones changed or missing) or from what the config renders now.
fn desired(
    h: &dyn Host,
    config: &Config,
    (rec, cluster): (&InstallRecord, &ClusterRead),
    root: &InstallRoot,
    verify: bool,
) -> anyhow::Result<Desired> {
    // The External network as the install chose its adapter (re-choosing needs the cluster,
    // and a different choice is reconfigure's to make, which says so).
    let uplink = rec.network.as_ref().and_then(|n| n.adapter.as_deref());
    let pin = cluster.api_group_pin(h, root);
    let rendered = crate::plan::desired::rendered_files(h, config, rec.release(), uplink, pin)?;
    let stats = (!verify).then(|| FileStats::read(h, root));
    // calico-node's token file changes with every renewal: expected, not drift.
    let token_file = config
        .kubeconfig
        .as_ref()
        .map(|k| crate::render::kubeconfig::token_path(k.as_str()));
    let files = drift::files(h, rec, &rendered, stats.as_ref(), token_file.as_deref())?;
    Ok(Desired {
        services: crate::plan::install::services(config, rec.calico_version.as_deref()),
        service_changes: crate::plan::install::service_changes,
        files,
    })
}
