//! `preflight`: check that this node and its cluster can run Calico, before changing anything;
//! with `--fix`, apply the documented cluster patches first.

use super::common::{
    ClusterRead, adapter_checks, check_known_issue_ids, check_skips, cluster_checks, read_cluster,
    with_cluster,
};
use crate::checks::{self, Blocked, Check, Verdict};
use crate::cli::PreflightArgs;
use crate::cluster::fix::{self, Fix};
use crate::cluster::{Cluster, facts};
use crate::context::Context;
use crate::host::select::Intent;

/// Preflight's document.
#[derive(serde::Serialize)]
pub(crate) struct Preflight<'a> {
    pub checks: &'a [Check],
    pub host: HostRead<'a>,
    pub cluster: Option<&'a facts::ClusterFacts>,
    pub fixes: Option<&'a [Fix]>,
    pub blocking: &'a [&'static str],
}

/// What preflight read of the host (each `null` when it could not be read).
#[derive(serde::Serialize)]
pub(crate) struct HostRead<'a> {
    pub kind: crate::host::HostKind,
    pub system: Option<&'a crate::host::SystemFacts>,
    pub container_runtime: Option<&'a crate::host::runtime::RuntimeFacts>,
    pub hns_networks: Option<Vec<&'a str>>,
}

pub fn run(args: &PreflightArgs, ctx: &mut Context) -> anyhow::Result<()> {
    check_skips(&args.skip)?;
    check_known_issue_ids(&args.allow_known_issue)?;
    let host = ctx.open_host(Intent::Read)?;
    let base = ctx.load_config()?;
    let mut snapshot = checks::host::snapshot(host.as_ref());
    let node = base.config.node.name.clone();
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

    let mut access = checks::host::dir_access(host.as_ref(), &loaded.config);
    if args.fix && access.verdict == Verdict::Fail {
        access = fix_dir_access(ctx, &loaded.config)?;
    }
    let protected = access.verdict == Verdict::Pass;
    judge_by(
        host.as_ref(),
        &mut snapshot,
        (&cluster, &loaded.config),
        protected,
    );
    let mut results = checks::host::evaluate(&snapshot, &loaded.config);
    results.push(access);
    results.extend(adapter_checks(
        host.as_ref(),
        &snapshot,
        &cluster,
        &loaded.config,
    ));
    results.extend(cluster_checks(&cluster, &loaded, None));
    let cluster_facts = cluster.facts();
    results.push(checks::host::known_issues(
        &snapshot,
        &loaded.config,
        cluster_facts.and_then(|f| f.calico_version.as_deref()),
        &args.allow_known_issue,
    ));
    checks::accept_skipped(&mut results, &args.skip);
    let blocking = checks::blocking(&results);

    ctx.printer.text(checks::table(&results).trim_end());
    let hns = snapshot.hns.as_ref().ok();
    ctx.printer.json(&Preflight {
        checks: &results,
        host: HostRead {
            kind: host.kind(),
            system: snapshot.system.as_ref().ok(),
            container_runtime: snapshot.runtime.as_ref().ok().and_then(Option::as_ref),
            hns_networks: hns.map(|n| n.iter().map(|n| n.name.as_str()).collect()),
        },
        cluster: cluster_facts,
        fixes: args.fix.then_some(&fixes),
        blocking: &blocking,
    });
    if blocking.is_empty() {
        Ok(())
    } else {
        Err(Blocked { ids: blocking }.into())
    }
}

/// The versions judged: the runtime's the Node's; kube-proxy's the one calicoctl-win's service
/// recorded, else its binary's answer once its folder is `protected`, else the Node's word.
fn judge_by(
    h: &dyn crate::host::Host,
    s: &mut checks::host::HostSnapshot,
    (cluster, config): (&ClusterRead, &crate::config::Config),
    protected: bool,
) {
    let kp = checks::kube_proxy::own_version(h, &s.kube_proxy)
        .or_else(|| checks::kube_proxy::binary_version(h, config, protected));
    if let ClusterRead::Read(_, f) = cluster {
        s.kube_proxy.version = f.kube_proxy_version();
        s.runtime_version = f.runtime_version();
    }
    s.kube_proxy.node_reported = kp.is_none() && s.kube_proxy.version.is_some();
    s.kube_proxy.version = kp.or(s.kube_proxy.version.take());
}

/// `--fix` for `dir-access`: each directory others may change protected (under the host
/// lock), then checked again.
fn fix_dir_access(ctx: &mut Context, config: &crate::config::Config) -> anyhow::Result<Check> {
    let host = ctx.open_host_to_change("preflight --fix")?;
    for (dir, who) in crate::installed::protection::weak_dirs(host.as_ref(), config) {
        host.set_security(&dir, crate::host::acl::PROTECTED_DIR)?;
        ctx.printer.note(&format!(
            "protected {dir}: only SYSTEM and Administrators may change it now (before: {})",
            who.join("; ")
        ));
    }
    Ok(checks::host::dir_access(host.as_ref(), config))
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
    // Asked on a terminal, the patches show with the question (stderr); else in the result.
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

#[cfg(test)]
mod tests {
    /// `--skip`'s hint lists every id `--skip` takes, `known-issues` too: each one it names is
    /// one it accepts.
    #[test]
    fn the_skip_hint_names_every_valid_id() {
        let err = super::super::common::check_skips(&["nope".into()]).expect_err("unknown");
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
                super::super::common::check_skips(std::slice::from_ref(&id)).is_ok(),
                "{id}"
            );
        }
    }
}
