//! `status`: the config and the cluster read (`health::see`), the desired state from `plan/`,
//! the node surveyed once (`health::survey`); exit 1 with the findings when degraded.

use super::common::{ClusterRead, Degraded, read_cluster_knowing, with_cluster};
use crate::cli::StatusArgs;
use crate::cluster::facts::Rights;
use crate::config::Config;
use crate::context::Context;
use crate::health::{self, Admin, Desired, Look, Mode};
use crate::host::Host;
use crate::host::select::Intent;
use crate::installed::file_stat::FileStats;
use crate::installed::record::InstallRecord;
use crate::layout::InstallRoot;
use crate::plan::drift;

pub fn run(args: &StatusArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let report = survey(args, ctx)?;
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

/// The node's report, as status prints it (`reconfigure --turn` waits on it).
pub(super) fn survey(args: &StatusArgs, ctx: &mut Context) -> anyhow::Result<health::NodeReport> {
    let host = ctx.open_host(Intent::Read)?;
    let h = host.as_ref();
    let base = ctx.load_config()?;
    let node_name = base.config.node.name.clone();
    let env = ctx.env.clone();
    let seen = health::see(&env, h, &base.config, &node_name, |known| {
        if args.offline {
            return Ok(ClusterRead::Skipped("skipped with --offline"));
        }
        Ok(read_cluster_knowing(ctx, &node_name, Rights::Look, known)?)
    })?;
    let loaded = with_cluster(ctx, &seen.cluster, base)?;
    let config = &loaded.config;
    let root = config.root();
    let want = |rec: &InstallRecord| desired(h, config, (rec, &seen.cluster), &root, args.verify);
    let state_dir = ctx.state_dir(h);
    let report = health::survey(Look {
        host: h,
        root: &root,
        node: &node_name,
        grace: args.grace,
        state_dir: state_dir.as_deref(),
        mode: Mode::Status(Admin {
            config,
            seen: &seen,
            env: &ctx.env,
            desired: &want,
        }),
    })?;
    Ok(report)
}

/// What the config wants of the node (`plan/`): its services, and the files that differ from
/// the record or from what the config renders now.
fn desired(
    h: &dyn Host,
    config: &Config,
    (rec, cluster): (&InstallRecord, &ClusterRead),
    root: &InstallRoot,
    verify: bool,
) -> anyhow::Result<Desired> {
    // The adapter the install chose (a different choice is reconfigure's to make).
    let uplink = rec.network.as_ref().and_then(|n| n.adapter.as_deref());
    let rendered = cluster.rendered_files(h, config, rec.release(), uplink)?;
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
