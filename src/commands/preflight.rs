//! `preflight`: check that this node can run Calico, before changing anything.

use crate::checks::{self, Blocked};
use crate::cli::PreflightArgs;
use crate::context::Context;
use crate::error::UsageError;
use crate::host::select::Intent;
use serde_json::json;

pub fn run(args: &PreflightArgs, ctx: &mut Context) -> anyhow::Result<()> {
    if let Some(bad) = args
        .skip
        .iter()
        .find(|s| !checks::host::IDS.contains(&s.as_str()))
    {
        return Err(UsageError::new(
            format!("--skip {bad}: there is no check with that id"),
            format!("check ids: {}", checks::host::IDS.join(", ")),
        )
        .into());
    }
    let loaded = ctx.load_config()?;
    let host = ctx.open_host(Intent::Read)?;
    let snapshot = checks::host::snapshot(host.as_ref(), ctx.hostname.clone());
    let mut results = checks::host::evaluate(&snapshot, &loaded.config);
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
        "blocking": blocking,
    }));
    if blocking.is_empty() {
        Ok(())
    } else {
        Err(Blocked { ids: blocking }.into())
    }
}
