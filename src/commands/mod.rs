//! One file per command; each reads like the recipe of that command.

mod config_show;
pub mod detach;
mod diags;
mod fetch;
mod flags;
mod fleet;
mod import_ps1;
mod install;
mod lint;
mod preflight;
mod reconfigure;
mod render;
pub mod service;
mod status;
mod uninstall;

use crate::cli::{Command, ConfigCommand, FetchCommand, FleetCommand, LintCommand, ServiceCommand};
use crate::context::Context;
use crate::error::{CliError, Recogniser, UsageError, recognise};

/// Every error type that knows its exit code and hint (`error::Diagnose`).
const KNOWN_ERRORS: &[Recogniser] = &[
    recognise::<crate::config::ConfigError>,
    recognise::<crate::render::RenderError>,
    recognise::<crate::host::lock::LockError>,
    recognise::<crate::checks::Blocked>,
    recognise::<crate::cluster::ClusterError>,
    recognise::<crate::cluster::drain::DrainError>,
    recognise::<crate::cluster::credentials::CredentialError>,
    recognise::<crate::cluster::etcd::EtcdError>,
    recognise::<crate::supervise::SuperviseError>,
    recognise::<crate::error::UsageError>,
    recognise::<crate::release::ReleaseError>,
    recognise::<crate::apply::ReadyError>,
    recognise::<crate::host::HostError>,
    recognise::<crate::policy::PolicyError>,
    recognise::<crate::commands::lint::Findings>,
    recognise::<crate::files::OutFileError>,
    recognise::<crate::cluster::credentials::TokenFileError>,
];

/// The error a command failed with, with its exit code and hint.
pub fn failure(error: anyhow::Error) -> CliError {
    CliError::new(error, KNOWN_ERRORS)
}

/// Runs the chosen command.
pub fn run(command: &Command, ctx: &mut Context) -> Result<(), CliError> {
    refuse_unread_settings(command, ctx).map_err(failure)?;
    match command {
        Command::Render(args) => render::run(args, ctx),
        Command::Preflight(args) => preflight::run(args, ctx),
        Command::Install(args) => install::run(args, ctx),
        Command::Uninstall(args) => uninstall::run(args, ctx),
        Command::Reconfigure(args) => reconfigure::run(args, ctx),
        Command::Status(args) => status::run(args, ctx),
        Command::Service(ServiceCommand::Run(args)) => service::run(args, ctx),
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
        Command::Fleet(FleetCommand::Plan(args)) => fleet::plan(args, ctx),
        Command::Fleet(FleetCommand::Rbac(args)) => fleet::rbac(args, ctx),
        Command::Lint(LintCommand::Policies(args)) => lint::policies(args, ctx),
    }
    .map_err(failure)
}

/// After a successful install or reconfigure, the node's annotations say what runs on it, for
/// engines that roll work over the nodes: the Calico release, calicoctl-win's version and a
/// hash of the rendered configuration (its files' checksums, from the install record). A node
/// that cannot be annotated is a warning: the node itself is as it should be.
pub(crate) fn annotate_node(
    ctx: &mut Context,
    cluster: Option<&crate::cluster::Cluster>,
    host: &dyn crate::host::Host,
    root: &str,
    node: &str,
) {
    let Some(c) = cluster else {
        ctx.log("no cluster: the node is not annotated");
        return;
    };
    let rec = match crate::installed::record::read(host, root) {
        Ok(Some(r)) => r,
        Ok(None) => return,
        Err(e) => {
            ctx.printer.warn(&format!("node {node} not annotated: {e}"));
            return;
        }
    };
    let annotations = crate::installed::record::annotations_for(&rec);
    if let Err(e) = crate::cluster::node::annotate(c, node, &annotations) {
        ctx.printer.warn(&format!(
            "node {node} not annotated with the installed Calico version and config hash: {e}"
        ));
    }
}

/// `completions SHELL`: the shell's tab-completion script, generated from the command line's
/// own definition (JSON: `{"shell", "script"}`).
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
    ctx.printer
        .json(&serde_json::json!({"shell": args.shell.to_string(), "script": script}));
    Ok(())
}

/// A `--set` or `--config` on a command that never reads the configuration would be silently
/// ignored: the
/// service body runs from the files install wrote, `fetch release` and `config import-ps1`
/// work on what they are given.
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
        _ => return Ok(()),
    };
    // A --config flag, not CALICOCTL_WIN_CONFIG, which a machine-wide environment may hand
    // to the services too.
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

/// The journal an interrupted run of `command` left under the install root, after saying
/// that this run continues it; another command's unfinished journal is refused.
pub(crate) fn continue_journal(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    path: &str,
    command: &str,
) -> anyhow::Result<Option<crate::apply::journal::Journal>> {
    let Some(j) = crate::apply::journal::Journal::load(host, path)? else {
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
        crate::duration::time_text(j.started),
        j.entries.len()
    ));
    Ok(Some(j))
}

/// Prints a plan for people, one numbered line per action (a dry run's output).
pub(crate) fn print_plan(ctx: &mut Context, actions: &[crate::apply::Action]) {
    ctx.printer.text("Plan:");
    for (i, a) in actions.iter().enumerate() {
        ctx.printer
            .text(&format!("  {:>2}. {}", i + 1, a.describe()));
    }
}

/// Runs a plan, printing and logging each step as it starts; the warnings of a run that
/// succeeded (a route with nowhere to go) are printed and returned for the JSON document.
/// What a rollback left, measured: the host compared with `before` (taken before the command
/// changed anything), each difference with the command that puts it back; "the node is as it
/// was" only when nothing differs.
pub(crate) fn after_rollback(
    host: &dyn crate::host::Host,
    scope: &crate::apply::snapshot::Scope,
    before: &crate::apply::snapshot::Snapshot,
    command: &str,
) -> String {
    let now = match crate::apply::snapshot::take(host, scope) {
        Ok(now) => now,
        Err(e) => return format!("the node could not be compared with before the {command}: {e}"),
    };
    let left = crate::apply::snapshot::differences(before, &now);
    if left.is_empty() {
        return format!(
            "the node is as it was (its services, files, registry values, HNS networks, addresses, routes and firewall rules compared with before the {command})"
        );
    }
    let lines: Vec<String> = left.iter().map(|d| format!("\n  - {d}")).collect();
    format!(
        "the node differs from before the {command} in {} way(s), each with the command that puts it back:{}",
        left.len(),
        lines.concat()
    )
}

/// Runs the plan like `execute_plan`, with a snapshot of what it touches taken first: a
/// failure comes back with what its rollback left, measured (`after_rollback`), when there
/// was a rollback. `Err` only when the host cannot be read before.
#[allow(clippy::type_complexity)]
pub(crate) fn execute_measured(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    actions: &[crate::apply::Action],
    opts: crate::apply::Options,
    command: &str,
) -> anyhow::Result<Result<Vec<String>, Box<(crate::apply::ExecError, Option<String>)>>> {
    let scope = crate::apply::snapshot::Scope::of_plan(actions);
    let before = anyhow::Context::with_context(crate::apply::snapshot::take(host, &scope), || {
        format!("cannot read the host before the {command}")
    })?;
    Ok(execute_plan(ctx, host, actions, opts).map_err(|e| {
        let measured = e
            .rollback_failures
            .is_some()
            .then(|| after_rollback(host, &scope, &before, command));
        Box::new((e, measured))
    }))
}

/// After an install or reconfigure: the installed files' sizes and times, which
/// spare `status` hashing them (`plan::file_stat`). Only a warning when they cannot be kept:
/// status then hashes every file.
pub(crate) fn keep_file_stats(ctx: &mut Context, host: &dyn crate::host::Host, root: &str) {
    let kept = crate::installed::record::read(host, root)
        .map_err(anyhow::Error::from)
        .and_then(|rec| match rec {
            Some(rec) => crate::installed::file_stat::FileStats::write(host, &rec),
            None => Ok(()),
        });
    if let Err(e) = kept {
        let w = format!(
            "cannot keep the installed files' sizes and times (status hashes every file instead): {e:#}"
        );
        ctx.printer.warn(&w);
        ctx.log(&format!("warning: {w}"));
    }
}

pub(crate) fn execute_plan(
    ctx: &mut Context,
    host: &dyn crate::host::Host,
    actions: &[crate::apply::Action],
    opts: crate::apply::Options,
) -> Result<Vec<String>, crate::apply::ExecError> {
    let warnings = crate::apply::execute(host, actions, opts, &mut |i, n, a| {
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
