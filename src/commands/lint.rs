//! `lint policies`: what each network policy costs the Windows nodes, and what to change.

use crate::cli::LintPoliciesArgs;
use crate::context::Context;
use crate::policy::felix::{DEFAULT_RELEASE, Release, modelled, release_name};
use crate::policy::{self, Collected, Report, input};

/// The most policies the text table shows (JSON lists them all).
const TABLE_ROWS: usize = 50;

/// Findings were made: exit 3, as a failed check, so that a CI job can gate on them.
#[derive(Debug, thiserror::Error)]
#[error("{count} finding(s) in the network policies")]
pub struct Findings {
    pub count: usize,
}

impl crate::error::Diagnose for Findings {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        crate::error::Diagnosis::new(
            crate::error::Exit::Preflight,
            crate::error::Kind::PolicyFindings,
            "apply the suggested rewrites, or see docs/commands/lint.md for what each finding costs",
        )
    }
}

pub fn policies(args: &LintPoliciesArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let mut release = args.calico_version.clone();
    let collected = if args.from_file.is_empty() {
        let c = ctx.require_cluster()?;
        let mut collected = Collected::default();
        input::read_cluster(&c, &mut collected)?;
        if release.is_none() {
            release = cluster_release(ctx, &c);
        }
        collected
    } else {
        input::read_files(&input::files(&args.from_file)?)?
    };
    let release = release.unwrap_or(DEFAULT_RELEASE);
    let mut collected = collected;
    let duplicates = collected.drop_duplicates();
    if duplicates > 0 {
        ctx.printer.note(&format!(
            "{duplicates} object(s) were read more than once (the same kind, namespace and name): each was counted once, as first read"
        ));
    }
    if collected.ignored > 0 {
        ctx.printer.note(&format!(
            "{} object(s) of other kinds were left out",
            collected.ignored
        ));
    }
    let report = policy::lint(&collected, release)?;
    ctx.printer.text(&table(&report));
    ctx.printer.json(&report);
    let count = report.findings.len();
    // The process ends now: freeing a cluster's worth of objects one by one would take a
    // tenth of the run (benches/lint.rs), and the operating system takes the memory back whole.
    std::mem::forget(collected);
    std::mem::forget(report);
    if count == 0 {
        Ok(())
    } else {
        Err(Findings { count }.into())
    }
}

/// The cluster's Calico release (ClusterInformation's `calicoVersion`), when it says one this
/// lint models.
fn cluster_release(ctx: &mut Context, c: &crate::cluster::Cluster) -> Option<Release> {
    let version = match crate::cluster::facts::calico_version(c) {
        Ok(v) => v?,
        Err(e) => {
            ctx.printer.warn(&format!(
                "the cluster's Calico version cannot be read ({e}): rendering as {}; pass --calico-version to choose",
                release_name(&DEFAULT_RELEASE)
            ));
            return None;
        }
    };
    match modelled(&version) {
        Ok(r) => Some(r),
        Err(e) => {
            ctx.printer.warn(&format!(
                "{e}: rendering as {}",
                release_name(&DEFAULT_RELEASE)
            ));
            None
        }
    }
}

fn who(kind: &str, namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// The report for people: the costliest policies, the longest endpoint lists, then each
/// finding with its rewrite.
fn table(r: &Report) -> String {
    let plural = |n: u64, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let mut out = format!(
        "{}, {} (rendered as Felix {} on Windows does)\n\n",
        plural(r.windows_endpoints, "Windows endpoint", "Windows endpoints"),
        plural(r.policies.len() as u64, "policy", "policies"),
        r.calico_version
    );
    let rows: Vec<(String, u64, u64, u64)> = r
        .policies
        .iter()
        .take(TABLE_ROWS)
        .map(|p| {
            (
                who(&p.kind, p.namespace.as_deref(), &p.name),
                p.applies_to,
                p.hns_acls,
                p.address_pairs,
            )
        })
        .collect();
    let width = rows.iter().map(|r| r.0.len()).max().unwrap_or(6).max(6);
    out.push_str(&format!(
        "{:<width$}  {:>10}  {:>10}  {:>15}\n",
        "POLICY", "APPLIES TO", "HNS ACLS", "ADDRESS PAIRS"
    ));
    for (name, applies, acls, pairs) in &rows {
        out.push_str(&format!(
            "{name:<width$}  {applies:>10}  {acls:>10}  {pairs:>15}\n"
        ));
    }
    if r.policies.len() > TABLE_ROWS {
        out.push_str(&format!(
            "... and {} more (-o json lists every policy)\n",
            r.policies.len() - TABLE_ROWS
        ));
    }
    out.push_str(&endpoint_table(r));
    if r.findings.is_empty() {
        out.push_str("\nno findings\n");
    }
    for f in &r.findings {
        out.push_str(&format!(
            "\n{}: {}{}\n  {}\n  suggestion: {}\n",
            f.code,
            who(&f.kind, f.namespace.as_deref(), &f.name),
            if f.rule.is_empty() {
                String::new()
            } else {
                format!(" {}", f.rule)
            },
            f.message,
            f.suggestion.text,
        ));
        if f.before != f.after {
            out.push_str(&format!(
                "  HNS ACLs: {} -> {}; address pairs: {} -> {}\n",
                f.before.hns_acls, f.after.hns_acls, f.before.address_pairs, f.after.address_pairs
            ));
        }
        for doc in f.suggestion.rewrite.iter().flatten() {
            let yaml = serde_saphyr::to_string(doc).unwrap_or_default();
            out.push_str("  ---\n");
            for line in yaml.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out.trim_end().to_owned()
}

/// The endpoints with the longest ACL lists.
fn endpoint_table(r: &Report) -> String {
    if r.endpoints.is_empty() {
        return String::new();
    }
    let width = r
        .endpoints
        .iter()
        .map(|e| e.endpoint.len())
        .max()
        .unwrap_or(8)
        .max(8);
    let mut out = format!(
        "\n{:<width$}  {:>7}  {:>8}  {:>8}  {:>8}  TIERS\n",
        "ENDPOINT", "LIKE IT", "HNS ACLS", "INGRESS", "EGRESS"
    );
    for e in r.endpoints.iter().take(TABLE_ROWS) {
        out.push_str(&format!(
            "{:<width$}  {:>7}  {:>8}  {:>8}  {:>8}  {}\n",
            e.endpoint,
            e.like_it,
            e.hns_acls,
            e.ingress,
            e.egress,
            e.tiers.join(", ")
        ));
    }
    out.push_str(
        "(HNS ACLS counts the node-to-endpoint allow and the host ACL of each direction too)\n",
    );
    out
}
