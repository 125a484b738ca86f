//! `preflight`: check that this node and its cluster can run Calico, before changing anything;
//! with `--fix`, apply the documented cluster patches first.

use crate::checks::{self, Blocked, Check, Verdict};
use crate::cli::PreflightArgs;
use crate::cluster::fix::{self, Fix};
use crate::cluster::{Cluster, ClusterError, facts};
use crate::config::{Loaded, Source};
use crate::context::Context;
use crate::error::UsageError;
use crate::host::select::Intent;
use serde_json::json;

/// Refuses a `--skip` that names no check.
/// `--allow-known-issue` names entries of the known-issues table only.
pub(crate) fn check_known_issue_ids(allowed: &[String]) -> Result<(), UsageError> {
    match checks::known_issues::unknown_ids(allowed).first() {
        Some(bad) => Err(UsageError::new(
            format!("--allow-known-issue {bad}: there is no known issue with that id"),
            format!(
                "ids: {} (docs/known-issues.md)",
                checks::known_issues::KNOWN_ISSUES
                    .iter()
                    .map(|k| k.id)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        )),
        None => Ok(()),
    }
}

pub(crate) fn check_skips(skip: &[String]) -> Result<(), UsageError> {
    let known = |id: &str| {
        checks::host::IDS.contains(&id)
            || checks::cluster::IDS.contains(&id)
            || id == checks::known_issues::ID
    };
    match skip.iter().find(|s| !known(s)) {
        Some(bad) => Err(UsageError::new(
            format!("--skip {bad}: there is no check with that id"),
            format!(
                "check ids: {}, {}, {}",
                checks::host::IDS.join(", "),
                checks::cluster::IDS.join(", "),
                checks::known_issues::ID
            ),
        )),
        None => Ok(()),
    }
}

/// What became of reading the cluster.
pub(crate) enum ClusterRead {
    Skipped(&'static str),
    Failed(ClusterError),
    Read(Box<Cluster>, Box<facts::ClusterFacts>),
}

pub fn run(args: &PreflightArgs, ctx: &mut Context) -> anyhow::Result<()> {
    check_skips(&args.skip)?;
    check_known_issue_ids(&args.allow_known_issue)?;
    let host = ctx.open_host(Intent::Read)?;
    let base = ctx.load_config()?;
    let snapshot = checks::host::snapshot(host.as_ref());
    let node = base.config.node.name.to_string();
    let mut cluster = read_cluster(args.offline, ctx, &node, facts::Rights::Ask)?;
    let mut loaded = with_cluster(ctx, &cluster, base)?;

    let mut fixes = Vec::new();
    if args.fix
        && let ClusterRead::Read(c, f) = &mut cluster
    {
        fixes = fix::plan(f, loaded.config.backend);
        if apply_fixes(ctx, c, &fixes)? {
            **f = facts::gather(c, &node, facts::Rights::Ask)?;
            loaded = with_cluster(ctx, &cluster, loaded)?;
        }
    }

    let mut results = checks::host::evaluate(&snapshot, &loaded.config);
    let mut access = checks::host::dir_access(host.as_ref(), &loaded.config);
    if args.fix && access.verdict == Verdict::Fail {
        access = fix_dir_access(ctx, &loaded.config)?;
    }
    results.push(access);
    results.extend(cluster_checks(&cluster, &loaded));
    let calico = match &cluster {
        ClusterRead::Read(_, f) => f.calico_version.clone(),
        _ => None,
    };
    results.push(checks::host::known_issues(
        &snapshot,
        &loaded.config,
        calico.as_deref(),
        &args.allow_known_issue,
    ));
    checks::accept_skipped(&mut results, &args.skip);
    let blocking = checks::blocking(&results);

    ctx.printer.text(checks::table(&results).trim_end());
    let cluster_facts = match &cluster {
        ClusterRead::Read(_, f) => Some(f.as_ref()),
        _ => None,
    };
    ctx.printer.json(&json!({
        "checks": results,
        "host": {
            "kind": host.kind(),
            "system": snapshot.system.as_ref().ok(),
            "container_runtime": snapshot.runtime.as_ref().ok().cloned().flatten(),
            "hns_networks": snapshot.hns.as_ref().map(|n| n.iter().map(|n| n.name.clone()).collect::<Vec<_>>()).ok(),
        },
        "cluster": cluster_facts,
        "fixes": args.fix.then_some(&fixes),
        "blocking": blocking,
    }));
    if blocking.is_empty() {
        Ok(())
    } else {
        Err(Blocked { ids: blocking }.into())
    }
}

/// `--fix` for `dir-access`: each directory someone else may change gets the protected
/// access list (with the host lock, as any change), and the check runs again.
fn fix_dir_access(ctx: &mut Context, config: &crate::config::Config) -> anyhow::Result<Check> {
    let host = ctx.open_host_to_change("preflight --fix")?;
    for (dir, who) in checks::host::weak_dirs(host.as_ref(), config) {
        host.set_security(&dir, crate::host::acl::PROTECTED_DIR)?;
        ctx.printer.note(&format!(
            "protected {dir}: only SYSTEM and Administrators may change it now (before: {})",
            who.join("; ")
        ));
    }
    Ok(checks::host::dir_access(host.as_ref(), config))
}

/// The cluster, unless `--offline` or there is no admin kubeconfig.
/// A kubeconfig that was given (a flag, `KUBECONFIG`) but cannot be read or used is bad input
/// (exit 2), not a cluster that fails every check.
pub(crate) fn read_cluster(
    offline: bool,
    ctx: &mut Context,
    node: &str,
    rights: facts::Rights,
) -> Result<ClusterRead, ClusterError> {
    if offline {
        return Ok(ClusterRead::Skipped("skipped with --offline"));
    }
    Ok(match ctx.connect_cluster() {
        Ok(None) => ClusterRead::Skipped(
            "no admin kubeconfig (--kubeconfig, $KUBECONFIG, ~/.kube/config or C:\\k\\config)",
        ),
        Ok(Some(c)) => match facts::gather(&c, node, rights) {
            Ok(f) => ClusterRead::Read(Box::new(c), Box::new(f)),
            Err(e) => ClusterRead::Failed(e),
        },
        Err(
            e @ (ClusterError::NoKubeconfig { .. }
            | ClusterError::Kubeconfig { .. }
            | ClusterError::ExpiredToken { .. }),
        ) => {
            return Err(e);
        }
        Err(e) => ClusterRead::Failed(e),
    })
}

/// The configuration with what the cluster says filling unset settings.
pub(crate) fn with_cluster(
    ctx: &mut Context,
    cluster: &ClusterRead,
    base: Loaded,
) -> anyhow::Result<Loaded> {
    match cluster {
        ClusterRead::Read(_, f) => Ok(ctx.load_config_with(f.settings())?),
        _ => Ok(base),
    }
}

/// The cluster checks: evaluated, skipped (with why), or failed with the reason and its hint.
pub(crate) fn cluster_checks(cluster: &ClusterRead, loaded: &Loaded) -> Vec<Check> {
    match cluster {
        ClusterRead::Skipped(why) => checks::cluster::all(Verdict::Skip, why, None),
        ClusterRead::Failed(e) => {
            let msg = format!("cannot read the cluster: {e}{}", causes(e));
            checks::cluster::unreadable(&msg, &e.hint())
        }
        ClusterRead::Read(_, f) => {
            let asked = checks::cluster::Asked {
                vni_explicit: loaded
                    .shown
                    .get("vxlan.vni")
                    .is_some_and(|s| !matches!(s.source, Source::Default | Source::Cluster)),
            };
            checks::cluster::evaluate(f, &loaded.config, &asked)
        }
    }
}

/// Shows the fixes and applies them once confirmed; returns whether anything was applied.
fn apply_fixes(ctx: &mut Context, c: &Cluster, fixes: &[Fix]) -> anyhow::Result<bool> {
    if fixes.is_empty() {
        ctx.printer
            .note("--fix: ipip-disabled and strict-affinity need no cluster change");
        return Ok(false);
    }
    let mut shown = vec![format!("Cluster patches for {}:", c.server)];
    shown.extend(
        fixes
            .iter()
            .map(|f| format!("  [{}] {}", f.check, f.command)),
    );
    shown.push(String::new());
    let question = format!(
        "Apply {} patch(es) to the cluster at {}?",
        fixes.len(),
        c.server
    );
    // Asked on a terminal, the patches show with the question (stderr); otherwise they are
    // part of the result.
    let asks = ctx.options.interactive && !ctx.options.yes && !ctx.options.dry_run;
    if !asks {
        for line in &shown {
            ctx.printer.text(line);
        }
    }
    if ctx.options.dry_run {
        ctx.printer
            .note("--dry-run: the patches above were not applied");
        return Ok(false);
    }
    if !ctx.confirm(&shown, &question)? {
        ctx.printer.note("not applied");
        return Ok(false);
    }
    for f in fixes {
        ctx.log(&format!("applying {}", f.command));
    }
    fix::apply(c, fixes)?;
    ctx.printer.note(&format!(
        "applied {} patch(es); checking again",
        fixes.len()
    ));
    Ok(true)
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

#[cfg(test)]
mod tests {
    /// `--skip`'s hint lists every id `--skip` takes, `known-issues` too: each one it names is
    /// one it accepts.
    #[test]
    fn the_skip_hint_names_every_valid_id() {
        let err = super::check_skips(&["nope".into()]).expect_err("unknown");
        let hint = err.hint.clone().expect("a hint");
        assert!(hint.contains(crate::checks::known_issues::ID), "{hint}");
        let ids: Vec<String> = hint
            .trim_start_matches("check ids: ")
            .split(", ")
            .map(str::to_owned)
            .collect();
        assert!(ids.len() > 10, "{ids:?}");
        for id in ids {
            assert!(
                super::check_skips(std::slice::from_ref(&id)).is_ok(),
                "{id}"
            );
        }
    }
}
