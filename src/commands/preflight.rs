//! `preflight`: check that this node and its cluster can run Calico, before changing anything.

use crate::checks::{self, Blocked, Check, Verdict};
use crate::cli::PreflightArgs;
use crate::cluster::{Cluster, facts};
use crate::config::{Loaded, Source};
use crate::context::Context;
use crate::error::UsageError;
use crate::host::select::Intent;
use serde_json::json;

pub fn run(args: &PreflightArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let known = |id: &str| checks::host::IDS.contains(&id) || checks::cluster::IDS.contains(&id);
    if let Some(bad) = args.skip.iter().find(|s| !known(s)) {
        return Err(UsageError::new(
            format!("--skip {bad}: there is no check with that id"),
            format!(
                "check ids: {}, {}",
                checks::host::IDS.join(", "),
                checks::cluster::IDS.join(", ")
            ),
        )
        .into());
    }
    let loaded = ctx.load_config()?;
    let host = ctx.open_host(Intent::Read)?;
    let snapshot = checks::host::snapshot(host.as_ref(), ctx.hostname.clone());
    let mut results = checks::host::evaluate(&snapshot, &loaded.config);
    let (cluster_checks, cluster_facts) = cluster(args, ctx, &loaded);
    results.extend(cluster_checks);
    checks::accept_skipped(&mut results, &args.skip);
    let blocking = checks::blocking(&results);

    ctx.printer.text(checks::table(&results).trim_end());
    ctx.printer.json(&json!({
        "checks": results,
        "host": {
            "kind": host.kind(),
            "system": snapshot.system.as_ref().ok(),
            "container_runtime": snapshot.runtime.as_ref().ok().cloned().flatten(),
            "hns_networks": snapshot.hns.as_ref().map(|n| n.iter().map(|n| n.name.clone()).collect::<Vec<_>>()).ok(),
        },
        "cluster": cluster_facts,
        "blocking": blocking,
    }));
    if blocking.is_empty() {
        Ok(())
    } else {
        Err(Blocked { ids: blocking }.into())
    }
}

/// The cluster checks, skipped without a kubeconfig or with `--offline`, failed (with the
/// reason and its hint) when the cluster cannot be read.
fn cluster(
    args: &PreflightArgs,
    ctx: &mut Context,
    loaded: &Loaded,
) -> (Vec<Check>, Option<facts::ClusterFacts>) {
    if args.offline {
        return (
            checks::cluster::all(Verdict::Skip, "skipped with --offline", None),
            None,
        );
    }
    let (path, source) = ctx.cluster_kubeconfig();
    let Some(path) = path.filter(|p| source != "default" || p.is_file()) else {
        let msg = "no admin kubeconfig (--kubeconfig, $KUBECONFIG or ~/.kube/config): cluster checks skipped";
        return (checks::cluster::all(Verdict::Skip, msg, None), None);
    };
    ctx.log(&format!(
        "reading the cluster through {} ({source})",
        path.display()
    ));
    let node = loaded.config.node.name.to_string();
    let gathered = Cluster::connect(&path).and_then(|c| facts::gather(&c, &node));
    match gathered {
        Ok(f) => {
            let asked = checks::cluster::Asked {
                vni_explicit: loaded
                    .shown
                    .get("vxlan.vni")
                    .is_some_and(|s| s.source != Source::Default),
            };
            (
                checks::cluster::evaluate(&f, &loaded.config, &asked),
                Some(f),
            )
        }
        Err(e) => {
            let msg = format!("cannot read the cluster: {e}{}", causes(&e));
            (
                checks::cluster::all(Verdict::Fail, &msg, Some(&e.hint())),
                None,
            )
        }
    }
}

fn causes(e: &dyn std::error::Error) -> String {
    let mut out = String::new();
    let mut cur = e.source();
    while let Some(c) = cur {
        out.push_str(&format!(": {c}"));
        cur = c.source();
    }
    out
}
