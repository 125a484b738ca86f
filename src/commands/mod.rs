//! One file per command; each reads like the recipe of that command.

mod change;
mod common;
mod config_show;
pub mod detach;
mod diags;
#[cfg(test)]
mod documents_tests;
mod fetch;
mod fetched;
mod flags;
mod fleet;
mod fleet_diags;
mod fleet_status;
mod import_ps1;
mod install;
mod keep_token;
mod keep_token_verify;
mod known_errors;
mod lint;
mod logs;
mod logs_position;
mod migrate;
mod preflight;
mod reconfigure;
mod render;
mod repair;
pub mod service;
mod status;
mod turn;
mod uninstall;
mod verify;
pub mod verify_restarted;

use crate::cli::{
    Command, ConfigCommand, FetchCommand, FleetCommand, LintCommand, MigrateCommand, ServiceCommand,
};
use crate::context::Context;
use crate::error::{CliError, UsageError};

pub use known_errors::failure;

/// Runs the chosen command.
pub fn run(command: &Command, ctx: &mut Context) -> Result<(), CliError> {
    refuse_unread_settings(command, ctx).map_err(failure)?;
    match command {
        Command::Render(args) => render::run(args, ctx),
        Command::Preflight(args) => preflight::run(args, ctx),
        Command::Install(args) => install::run(args, ctx),
        Command::Uninstall(args) => uninstall::run(args, ctx),
        // The fleet DaemonSet's pod: its change in one of the fleet's turns (a dry run takes none).
        Command::Reconfigure(args) => match &args.turn {
            Some((ns, name)) if !ctx.options.dry_run => turn::run(args, ctx, (ns, name)),
            _ => reconfigure::run(args, ctx),
        },
        Command::Status(args) => status::run(args, ctx),
        Command::Repair(args) => repair::run(args, ctx),
        Command::Service(ServiceCommand::Run(args)) => service::run(args, ctx),
        Command::Service(ServiceCommand::KeepToken(args)) => keep_token::run(args, ctx),
        Command::Fetch(FetchCommand::Kubeconfig(args)) => fetch::kubeconfig(args, ctx),
        Command::Fetch(FetchCommand::InstallerKubeconfig(args)) => {
            fetch::installer_kubeconfig(args, ctx)
        }
        Command::Fetch(FetchCommand::EtcdCerts(args)) => fetch::etcd_certs(args, ctx),
        Command::Fetch(FetchCommand::Release(args)) => fetch::release(args, ctx),
        Command::Config(ConfigCommand::Show(args)) => config_show::run(args, ctx),
        Command::Config(ConfigCommand::ImportPs1(args)) => import_ps1::run(args, ctx),
        Command::Completions(args) => completions(args, ctx),
        Command::Diags(args) => diags::run(args, ctx),
        Command::Logs(args) => logs::run(args, ctx),
        Command::Fleet(FleetCommand::Plan(args)) => fleet::plan(args, ctx),
        Command::Fleet(FleetCommand::Rbac(args)) => fleet::rbac(args, ctx),
        Command::Fleet(FleetCommand::Status(args)) => fleet_status::run(args, ctx),
        Command::Fleet(FleetCommand::Diags(args)) => fleet_diags::run(args, ctx),
        Command::Lint(LintCommand::Policies(args)) => lint::policies(args, ctx),
        Command::Migrate(MigrateCommand::ToOperator(args)) => migrate::to_operator(args, ctx),
        Command::Migrate(MigrateCommand::FromOperator(args)) => migrate::from_operator(args, ctx),
        Command::Verify(args) => verify::run(args, ctx),
    }
    .map_err(failure)
}

/// `completions SHELL`'s document.
#[derive(serde::Serialize)]
#[cfg_attr(test, derive(Default))]
pub(crate) struct Completions<'a> {
    pub shell: String,
    pub script: &'a str,
}

fn completions(args: &crate::cli::CompletionsArgs, ctx: &mut Context) -> anyhow::Result<()> {
    use clap::CommandFactory;
    let mut script = Vec::new();
    clap_complete::generate(
        args.shell,
        &mut crate::cli::Cli::command(),
        "calicoctl-win",
        &mut script,
    );
    let script = String::from_utf8_lossy(&script);
    ctx.printer.text(script.trim_end());
    ctx.printer.json(&Completions {
        shell: args.shell.to_string(),
        script: &script,
    });
    Ok(())
}

/// Refuses a `--set` or `--config` a command would silently ignore: it reads no configuration.
fn refuse_unread_settings(command: &Command, ctx: &Context) -> anyhow::Result<()> {
    // The service body has no dry run: it would start calico-node for real.
    if matches!(command, Command::Service(ServiceCommand::Run(_))) && ctx.options.dry_run {
        return Err(UsageError::new(
            "service run has no --dry-run: it is the body of a Windows service and starts Calico for real",
            "see what install or reconfigure would register with their --dry-run",
        )
        .into());
    }
    let (name, instead) = match command {
        Command::Service(ServiceCommand::Run(_)) => (
            "service run",
            "it runs from the files install wrote under the install root: change the setting in the config and run 'calicoctl-win reconfigure'",
        ),
        Command::Fetch(FetchCommand::Release(_)) => (
            "fetch release",
            "it takes the release from its own flags (--release-zip, --calico-version, --sha256)",
        ),
        Command::Config(ConfigCommand::ImportPs1(_)) => (
            "config import-ps1",
            "it converts the config.ps1 it is given; set the value in the YAML it writes",
        ),
        Command::Fleet(FleetCommand::Status(_)) => (
            "fleet status",
            "it reads each node's annotations and condition from the cluster",
        ),
        _ => return Ok(()),
    };
    // Not CALICOCTL_WIN_CONFIG, which a machine-wide environment may hand the services too.
    let config_flag = ctx.options.config.as_ref().filter(|c| {
        ctx.env
            .get("CALICOCTL_WIN_CONFIG")
            .map(std::path::PathBuf::from)
            != Some(c.to_path_buf())
    });
    let given = match (ctx.options.sets.first(), config_flag) {
        (Some(set), _) => format!("--set {set}"),
        (None, Some(c)) => format!("--config {}", c.display()),
        (None, None) => return Ok(()),
    };
    Err(crate::error::UsageError::new(
        format!("{given}: '{name}' does not read the configuration"),
        instead,
    )
    .into())
}
