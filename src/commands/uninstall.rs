//! `uninstall`: removes what install created, read from its install record.

use super::fetch::now;
use super::install::{legacy_error, legacy_services};
use crate::cli::UninstallArgs;
use crate::context::Context;
use crate::host::select::Intent;
use crate::plan::exec::{Journal, Options};
use crate::plan::record;
use crate::plan::{self, uninstall};
use anyhow::Context as _;
use serde_json::json;

/// Where Calico is installed when neither the flag nor a readable config says.
const DEFAULT_ROOT: &str = r"C:\CalicoWindows";

pub fn run(args: &UninstallArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let host = ctx.open_host(Intent::Change)?;
    // The config is only a hint for where the record is: a broken one does not stop uninstall.
    let root = match &args.install_root {
        Some(r) => r.trim_end_matches('\\').to_owned(),
        None => match ctx.load_config() {
            Ok(l) => crate::plan::install::install_root(&l.config),
            Err(e) => {
                ctx.printer.warn(&format!(
                    "the config cannot be read ({e}); looking for the install record in {DEFAULT_ROOT} (--install-root DIR for another)"
                ));
                DEFAULT_ROOT.to_owned()
            }
        },
    };
    let dry_run = ctx.options.dry_run;
    let journal_path = uninstall::journal_path(&root);
    let journal = Journal::load(host.as_ref(), &journal_path)?;
    let record = match (record::read(host.as_ref(), &root)?, &journal) {
        (Some(r), _) => Some(r),
        (None, Some(j)) => {
            ctx.printer.note(&format!(
                "an uninstall started at {} did not finish: this run finishes it",
                super::fetch::time_text(j.started)
            ));
            j.record.clone()
        }
        (None, None) => None,
    };
    let Some(rec) = record else {
        let legacy = legacy_services(host.as_ref())?;
        if !legacy.is_empty() {
            let e = legacy_error(&legacy);
            return Err(crate::error::UsageError::new(
                format!(
                    "{}, which calicoctl-win did not install and does not remove",
                    e.message
                ),
                "remove it with its own uninstall-calico.ps1, or replace it with 'calicoctl-win install --migrate-legacy'",
            )
            .into());
        }
        ctx.printer.text(&format!(
            "Nothing to uninstall: there is no install record in {root}"
        ));
        ctx.printer.json(
            &json!({"dry_run": dry_run, "install_root": root, "actions": [], "changed": false}),
        );
        return Ok(());
    };
    let actions = uninstall::plan(
        host.as_ref(),
        &rec,
        &uninstall::Options {
            purge: args.purge,
            remove_logs: args.remove_logs,
        },
    )?;
    ctx.printer.text(&format!(
        "Uninstall Calico {} from {root}{}",
        rec.calico_version.as_deref().unwrap_or("(version unknown)"),
        if args.purge { ", purging" } else { "" }
    ));
    let actions_json = plan::to_json(&actions).context("cannot show the plan as JSON")?;
    let doc = |changed: bool| {
        json!({
            "dry_run": dry_run,
            "install_root": root,
            "purge": args.purge,
            "actions": actions_json,
            "changed": changed,
        })
    };
    if dry_run {
        super::print_plan(ctx, &actions);
        if !args.purge {
            ctx.printer.text(
                "HNS networks, the registry key and the firewall rule stay (--purge removes them).",
            );
        }
        ctx.printer.note("--dry-run: nothing was changed");
        ctx.printer.json(&doc(false));
        return Ok(());
    }
    let opts = Options {
        command: "uninstall",
        journal_path,
        rollback: false,
        stop_timeout: args.service_timeout,
        start_timeout: args.service_timeout,
        previous: journal,
        routes_before: Vec::new(),
        record: Some(rec.clone()),
        logs_dir: None,
        now: now(),
        cluster: None,
    };
    let result = super::execute_plan(ctx, host.as_ref(), &actions, opts);
    if let Err(e) = result {
        let done = e.index - 1;
        return Err(anyhow::Error::new(e).context(format!(
            "uninstall stopped after {done} step(s); the install record is kept, so running uninstall again finishes it"
        )));
    }
    if !args.purge {
        ctx.printer.text(
            "Uninstalled. HNS networks Calico created stay until the node is drained; 'uninstall --purge' removes them.",
        );
    } else {
        ctx.printer.text("Uninstalled and purged.");
    }
    ctx.printer.json(&doc(true));
    Ok(())
}
