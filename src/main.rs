//! calicoctl-win: installs, runs and maintains Calico networking on Windows Kubernetes nodes.

use calicoctl_win::{cli, commands, context, error, host, output};
use clap::Parser;
use context::{Context, Options};
use error::{CliError, Exit};
use std::io::IsTerminal;
use std::process::ExitCode;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    // One TLS crypto provider for the whole process (kube's client uses rustls with ring).
    let _ = rustls::crypto::ring::default_provider().install_default();
    let g = &cli.global;
    let env: std::collections::BTreeMap<String, String> = std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .collect();
    // The proxy variables are read from `env` only (`cluster::proxy`). kube 5 would read them
    // from the process, match NO_PROXY against the proxy instead of the API server, and refuse
    // a NO_PROXY with an empty item (`a,,b` or a trailing comma).
    for name in ["HTTPS_PROXY", "https_proxy", "NO_PROXY", "no_proxy"] {
        // SAFETY: nothing has started a thread yet, so no other code reads the environment.
        unsafe { std::env::remove_var(name) };
    }
    let colour = std::io::stderr().is_terminal() && !env.contains_key("NO_COLOR");
    let printer = output::Printer::new(
        g.output_format,
        Box::new(std::io::stdout()),
        Box::new(std::io::stderr()),
        colour,
        g.verbose,
    );
    let options = Options {
        config: g.config.clone(),
        kubeconfig: g.kubeconfig.clone(),
        dry_run: g.dry_run,
        yes: g.yes,
        sets: cli::all_sets(std::env::args_os()),
        interactive: std::io::stdin().is_terminal() && std::io::stderr().is_terminal(),
        host: host::select::HostChoice {
            sim_dir: g.sim_host.clone(),
            sim_profile: g.sim_profile.clone(),
            sim_fault: g.sim_fault.clone(),
        },
    };
    let log = match &g.log_file {
        Some(path) => match fs_err::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            Ok(f) => Some(Box::new(f) as Box<dyn std::io::Write>),
            Err(e) => {
                let mut printer = printer;
                printer.error(&CliError {
                    exit: Exit::Usage,
                    kind: error::Kind::Usage,
                    error: e.into(),
                    hint: Some("pass a writable --log-file path".into()),
                });
                return ExitCode::from(Exit::Usage as u8);
            }
        },
        None => None,
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
    ExitCode::from(code as u8)
}
