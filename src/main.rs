//! calicoctl-win: installs, runs and maintains Calico networking on Windows Kubernetes nodes.

// Outside tests no value is unwrapped: a failure is an error with its context.
#![cfg_attr(not(test), deny(clippy::unwrap_used, clippy::expect_used))]

use calicoctl_win::{cli, commands, context, error, host, output};
use clap::Parser;
use context::{Context, Options};
use error::{CliError, Exit};
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = match cli::Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => return parse_failed(&e),
    };
    // One TLS crypto provider for the whole process (kube's client uses rustls with ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let g = &cli.global;
    let env: std::collections::BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    // The proxy variables are read from `env` only (`cluster::proxy`): kube 5 would match
    // NO_PROXY against the proxy and refuse one with an empty item.
    for name in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
        // SAFETY: nothing has started a thread yet, so no other code reads the environment.
        unsafe { std::env::remove_var(name) };
    }
    let colour = g.color.paint(
        std::io::stderr().is_terminal(),
        env.contains_key("NO_COLOR"),
    );
    let printer = output::Printer::new(
        g.output_format,
        Box::new(std::io::stdout()),
        Box::new(std::io::stderr()),
        colour,
        g.verbose,
    )
    .with_quiet(g.quiet);
    let options = Options {
        // An empty CALICOCTL_WIN_CONFIG is unset, as an empty KUBECONFIG to kubectl.
        config: g.config.clone().or_else(|| {
            env.get("CALICOCTL_WIN_CONFIG")
                .filter(|v| !v.trim().is_empty())
                .map(std::path::PathBuf::from)
        }),
        kubeconfig: g.kubeconfig.clone(),
        dry_run: g.dry_run,
        yes: g.yes,
        allow_exec_plugin: g.allow_exec_plugin,
        sets: cli::flag_values(std::env::args_os().skip(1), "--set"),
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        host: host::select::HostChoice {
            sim_dir: g.sim_host.clone(),
            sim_profile: g.sim_profile.clone(),
            sim_fault: g.sim_fault.clone(),
            sim_pace: g.sim_pace,
        },
    };
    let log = match pace_on_a_sim_host(g).and_then(|()| open_log(g.log_file.as_deref())) {
        Ok(log) => log,
        Err(e) => {
            let mut printer = printer;
            printer.error(&e);
            return ExitCode::from(Exit::Usage as u8);
        }
    };
    let mut ctx = Context::new(printer, options, env, log);
    ctx.set_sim_start_hook(commands::service::sim_start_hook());
    let code = match commands::run(&cli.command, &mut ctx) {
        Ok(()) => Exit::Ok,
        Err(e) => {
            ctx.log(&format!("failed: {:#}", e.error));
            ctx.printer.error(&e);
            e.exit
        }
    };
    ctx.printer.flush();
    record_detached(&mut ctx, code);
    ExitCode::from(code as u8)
}

/// A detached run (`install --detach`) records how it ended for whoever started it.
fn record_detached(ctx: &mut Context, code: Exit) {
    let Some(result) = ctx.env.get(commands::detach::RESULT_ENV).cloned() else {
        return;
    };
    let output = ctx
        .env
        .get(commands::detach::OUTPUT_ENV)
        .map(std::path::PathBuf::from);
    let started = ctx
        .env
        .get(commands::detach::STARTED_ENV)
        .map(std::path::PathBuf::from);
    if let Err(e) = commands::detach::record(
        std::path::Path::new(&result),
        output.as_deref(),
        started.as_deref(),
        code as u8,
    ) {
        ctx.log(&format!("failed: {e:#}"));
        eprintln!("error: {e:#}");
    }
}

/// `--sim-pace` only with `--sim-host`, as `--sim-fault` (clap's `requires` does not see a
/// global flag given before the subcommand).
fn pace_on_a_sim_host(g: &cli::Global) -> Result<(), CliError> {
    if g.sim_pace.is_none() || g.sim_host.is_some() {
        return Ok(());
    }
    Err(CliError {
        exit: Exit::Usage,
        kind: error::Kind::Usage,
        error: anyhow::anyhow!("--sim-pace needs a simulated host"),
        hint: Some("add --sim-host DIR".into()),
    })
}

/// The `--log-file`, opened for appending.
fn open_log(path: Option<&std::path::Path>) -> Result<Option<Box<dyn std::io::Write>>, CliError> {
    let Some(path) = path else {
        return Ok(None);
    };
    match fs_err::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
    {
        Ok(f) => Ok(Some(Box::new(f))),
        Err(e) => Err(CliError {
            exit: Exit::Usage,
            kind: error::Kind::Usage,
            error: e.into(),
            hint: Some("pass a writable --log-file path".into()),
        }),
    }
}

/// The command line could not be parsed, or asked for help or the version: as clap shows them,
/// or with `-o json` one JSON document (help refused).
fn parse_failed(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind;
    let args: Vec<String> = std::env::args_os()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let tip = match (e.kind(), e.get(clap::error::ContextKind::InvalidArg)) {
        (ErrorKind::UnknownArgument, Some(clap::error::ContextValue::String(flag))) => {
            cli::unknown_flag_tip(flag, &args)
        }
        _ => None,
    };
    if !cli::wants_json(&args) {
        let Some(tip) = &tip else { e.exit() };
        // clap's first line, then ours (its usage line follows its own suggestion).
        let text = e.render().to_string();
        let first = text.lines().next().unwrap_or_default();
        eprintln!("{first}\n\n  tip: {tip}\n\nFor more information, try '--help'.");
        return ExitCode::from(Exit::Usage as u8);
    }
    let (doc, exit) = match e.kind() {
        ErrorKind::DisplayVersion => (
            output::printed(&output::VersionDocument {
                name: "calicoctl-win",
                version: env!("CARGO_PKG_VERSION"),
                commit: env!("CALICOCTL_WIN_COMMIT"),
                build_date: env!("CALICOCTL_WIN_BUILD_DATE"),
            }),
            Exit::Ok,
        ),
        kind => {
            let message = match kind {
                ErrorKind::DisplayHelp | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    "help is text only: run the same command without -o json".to_owned()
                }
                _ => e.render().to_string().trim().to_owned(),
            };
            let hint = tip.unwrap_or_else(|| "'calicoctl-win help' and 'calicoctl-win COMMAND --help' describe every command and flag".to_owned());
            let doc = output::printed(&output::ErrorDocument {
                error: output::ErrorBody {
                    kind: error::Kind::Usage,
                    message: message.clone(),
                    causes: Vec::new(),
                    problems: &[],
                    hint: Some(&hint),
                },
                exit_code: Exit::Usage as i32,
            });
            eprintln!("{message}");
            (doc, Exit::Usage)
        }
    };
    println!("{doc}");
    ExitCode::from(exit as u8)
}
