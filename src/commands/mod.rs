//! One file per command; each reads like the recipe of that command.

mod config_show;
mod fetch;
mod import_ps1;
mod install;
mod preflight;
mod reconfigure;
mod render;
pub mod service;
mod status;
mod uninstall;

use crate::cli::{Command, ConfigCommand, FetchCommand, ServiceCommand};
use crate::context::Context;
use crate::error::CliError;

/// Runs the chosen command.
pub fn run(command: &Command, ctx: &mut Context) -> Result<(), CliError> {
    match command {
        Command::Render(args) => render::run(args, ctx),
        Command::Preflight(args) => preflight::run(args, ctx),
        Command::Install(args) => install::run(args, ctx),
        Command::Uninstall(args) => uninstall::run(args, ctx),
        Command::Reconfigure(args) => reconfigure::run(args, ctx),
        Command::Status(args) => status::run(args, ctx),
        Command::Service(ServiceCommand::Run(args)) => service::run(args, ctx),
        Command::Fetch(FetchCommand::Kubeconfig(args)) => fetch::kubeconfig(args, ctx),
        Command::Fetch(FetchCommand::EtcdCerts(args)) => fetch::etcd_certs(args, ctx),
        Command::Fetch(FetchCommand::Release(args)) => fetch::release(args, ctx),
        Command::Config(ConfigCommand::Show(args)) => config_show::run(args, ctx),
        Command::Config(ConfigCommand::ImportPs1(args)) => import_ps1::run(args, ctx),
    }
    .map_err(CliError::from)
}

/// The journal an interrupted run of `command` left under the install root, after saying
/// that this run continues it; another command's unfinished journal is refused.
pub(crate) fn continue_journal(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    path: &str,
    command: &str,
) -> anyhow::Result<Option<crate::plan::exec::Journal>> {
    let Some(j) = crate::plan::exec::Journal::load(host, path)? else {
        return Ok(None);
    };
    if j.command != command {
        return Err(crate::error::UsageError::new(
            format!(
                "an earlier {} did not finish (its journal is {path})",
                j.command
            ),
            format!("run 'calicoctl-win {}' again to finish it first", j.command),
        )
        .into());
    }
    ctx.printer.note(&format!(
        "an earlier {command} started at {} did not finish ({} step(s) journaled): this run continues it",
        fetch::time_text(j.started),
        j.entries.len()
    ));
    Ok(Some(j))
}

/// Prints a plan for people, one numbered line per action (a dry run's output).
pub(crate) fn print_plan(ctx: &mut Context, actions: &[crate::plan::Action]) {
    ctx.printer.text("Plan:");
    for (i, a) in actions.iter().enumerate() {
        ctx.printer
            .text(&format!("  {:>2}. {}", i + 1, a.describe()));
    }
}

/// Runs a plan, printing and logging each step as it starts; the warnings of a run that
/// succeeded (a route with nowhere to go) are printed and returned for the JSON document.
pub(crate) fn execute_plan(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    actions: &[crate::plan::Action],
    opts: crate::plan::exec::Options,
) -> Result<Vec<String>, crate::plan::ExecError> {
    let warnings = crate::plan::execute(host, actions, opts, &mut |i, n, a| {
        let line = format!("[{i}/{n}] {}", a.describe());
        ctx.printer.text(&line);
        ctx.log(&line);
    })?;
    for w in &warnings {
        ctx.printer.warn(w);
        ctx.log(&format!("warning: {w}"));
    }
    Ok(warnings)
}
