//! `fleet diags`: every selected Windows node's `diags` zip gathered through the fleet
//! DaemonSet's pods (`fleet::diags`), one zip per node and an index of each node's
//! result; exit 1 when any node's failed, 4 when the run's timeout came first.

use crate::cli::FleetDiagsArgs;
use crate::context::Context;
use crate::error::{Diagnose, Diagnosis, Exit, Kind, UsageError};
use crate::fleet::diags::{self, Gather, Index};
use anyhow::Context as _;

/// `fleet diags`' document: where the zips went, then the index written there.
#[derive(serde::Serialize)]
pub(crate) struct FleetDiags<'a> {
    pub out: String,
    #[serde(flatten)]
    pub index: &'a Index,
}

/// Why the run did not gather every node's zip.
#[derive(Debug, thiserror::Error)]
pub enum NotGathered {
    #[error("{failed} of {nodes} node(s) gave no diags zip (index.txt in {out} says why)")]
    Failed {
        failed: usize,
        nodes: usize,
        out: String,
    },
    #[error("no Windows node matches (kubernetes.io/os=windows{selector}): nothing was gathered")]
    NoNodes { selector: String },
    #[error(
        "the DaemonSet {name} does not exist in namespace {namespace}: nothing was gathered (its pods answer for their nodes)"
    )]
    NoDaemonSet { name: String, namespace: String },
    #[error(
        "the run's timeout came before every node answered: {failed} of {nodes} node(s) gave no diags zip (index.txt in {out})"
    )]
    TimedOut {
        failed: usize,
        nodes: usize,
        out: String,
    },
}

impl Diagnose for NotGathered {
    fn diagnose(&self) -> Option<Diagnosis> {
        match self {
            Self::NoNodes { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::Failed,
                "check --selector against 'kubectl get nodes -l kubernetes.io/os=windows --show-labels'",
            ),
            Self::NoDaemonSet { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::Failed,
                "apply the DaemonSet 'fleet plan --engine daemonset' writes, or give its --name and --namespace ('kubectl get daemonsets -A -l app.kubernetes.io/name')",
            ),
            Self::Failed { .. } => Diagnosis::new(
                Exit::Failed,
                Kind::Failed,
                "index.txt tells the node's own answers from the API server's; a node gives its zip only with metrics.enabled and metrics.diags set, metrics.source_ranges holding the addresses the pod proxy connects from (the API server's, or the Konnectivity agents'), metrics.diags_namespace naming --namespace and calico-node allowed to review the tokens ('fleet rbac --identity diags'); run 'calicoctl-win diags' on a node that still fails",
            ),
            Self::TimedOut { .. } => Diagnosis::new(
                Exit::Timeout,
                Kind::Timeout,
                "give --timeout more, or --concurrency more nodes at once",
            ),
        }
    }
}

pub fn run(args: &FleetDiagsArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let port = port(args, ctx)?;
    let node_timeout = node_timeout(args);
    if node_timeout.is_zero() || args.timeout.is_zero() {
        return Err(UsageError::new(
            "--node-timeout and --timeout must be longer than 0s",
            "give each a duration like 60s or 10m",
        )
        .into());
    }
    let c = ctx.require_cluster()?;
    let taken =
        diags::prepare_out(&args.out).map_err(|e| UsageError::new(format!("{e}"), e.hint()))?;
    let g = Gather {
        namespace: args.namespace.clone(),
        daemon_set: args.name.clone(),
        pod_selector: format!("app.kubernetes.io/name={}", args.name),
        port,
        node_selector: args.selector.clone(),
        out: args.out.clone(),
        concurrency: usize::from(args.concurrency),
        node_timeout,
        total_timeout: args.timeout,
        cap: diags::BUNDLE_CAP,
    };
    // A gathering that fails asks no node: the directory is given back as it was.
    let index = match diags::gather(&c, &g) {
        Ok(index) => index,
        Err(e) => {
            taken.abandon();
            return Err(match e {
                // Only the DaemonSet's GET answers 404: a list in a namespace that is not
                // there is empty.
                crate::cluster::ClusterError::Api {
                    code: 404,
                    resource,
                    ..
                } if resource == "daemonsets" => NotGathered::NoDaemonSet {
                    name: g.daemon_set.clone(),
                    namespace: g.namespace.clone(),
                }
                .into(),
                e => anyhow::Error::from(e),
            });
        }
    };
    let out = args.out.display().to_string();
    diags::write_index(taken.path(), &index)
        .with_context(|| format!("cannot write the index into {out}"))?;
    ctx.printer.text(diags::summary(&index).trim_end());
    ctx.printer.json(&FleetDiags {
        out: out.clone(),
        index: &index,
    });
    let (failed, nodes) = (index.failed, index.nodes.len());
    if index.run_timed_out {
        return Err(NotGathered::TimedOut { failed, nodes, out }.into());
    }
    if nodes == 0 {
        let selector = args.selector.as_ref().map(|s| format!(",{s}"));
        return Err(NotGathered::NoNodes {
            selector: selector.unwrap_or_default(),
        }
        .into());
    }
    if failed > 0 {
        return Err(NotGathered::Failed { failed, nodes, out }.into());
    }
    Ok(())
}

/// `--node-timeout`, else `diags::NODE_TIMEOUT`: the node's own bounds and the way to it.
fn node_timeout(args: &FleetDiagsArgs) -> std::time::Duration {
    args.node_timeout.unwrap_or(diags::NODE_TIMEOUT)
}

/// `--port`, else `metrics.port` of `--config` (which must serve `/diags`), else the default.
fn port(args: &FleetDiagsArgs, ctx: &Context) -> anyhow::Result<u16> {
    if let Some(set) = ctx.options.sets.first() {
        return Err(UsageError::new(
            format!("--set {set}: 'fleet diags' reads only metrics.port of --config"),
            "give --port, or --config FILE (the file 'fleet plan' gave the nodes)",
        )
        .into());
    }
    if let Some(p) = args.port {
        return Ok(p);
    }
    let Some(path) = ctx.options.config.as_deref() else {
        return Ok(crate::config::default_metrics_port());
    };
    let (path, text) = crate::config::read_file(Some(path))?
        .with_context(|| format!("cannot read {}", path.display()))?;
    let m = crate::config::metrics_of_file(&text)?;
    if !(m.enabled && m.diags) {
        return Err(UsageError::new(
            format!(
                "{}: the nodes given this config serve no /diags",
                path.display()
            ),
            "set metrics.enabled: true, metrics.diags: true and metrics.source_ranges (with the addresses the pod proxy connects from: the API server's, or the Konnectivity agents') in it and roll it out with 'fleet plan', or give --port",
        )
        .into());
    }
    Ok(m.port.0)
}

#[cfg(test)]
mod tests {
    use crate::cli::{Cli, Command, FleetCommand};
    use crate::fleet::diags::{NODE_BUILD_TIME, NODE_REVIEW_TIME, NODE_SEND_TIME, NODE_TIMEOUT};
    use clap::{CommandFactory, Parser};

    /// Without --node-timeout a node gets longer than its own bounds (building, sending, the
    /// token's review), so that one that answers within them is never cut short; the help says
    /// how long.
    #[test]
    fn the_default_node_timeout_covers_the_nodes_own_bounds() {
        let cli = Cli::try_parse_from(["calicoctl-win", "fleet", "diags"]).expect("parses");
        let Command::Fleet(FleetCommand::Diags(args)) = cli.command else {
            panic!("not fleet diags");
        };
        let given = super::node_timeout(&args);
        assert!(
            given > NODE_BUILD_TIME + NODE_SEND_TIME + NODE_REVIEW_TIME,
            "{given:?}"
        );
        assert_eq!(
            crate::supervise::diags_server::BUILD_TIME,
            NODE_BUILD_TIME,
            "the node's limit is the one counted"
        );
        let mut cmd = Cli::command();
        let help = cmd
            .find_subcommand_mut("fleet")
            .and_then(|f| f.find_subcommand_mut("diags"))
            .expect("fleet diags")
            .render_long_help()
            .to_string();
        let said = format!("default: {}s", NODE_TIMEOUT.as_secs());
        assert!(help.contains(&said), "{help}");
    }
}
