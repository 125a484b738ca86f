//! `service run ROLE`: the body of a Calico Windows service, under the SCM or in the console.

use crate::cli::{ServiceRole, ServiceRunArgs};
use crate::context::Context;
use crate::error::UsageError;
use crate::host::Host;
use crate::host::select::Intent;
use crate::host::sim::{ServiceStart, SimHost, StartHook};
use crate::layout::Role;
use crate::supervise::{self, LogSettings, Settings, Stop};
use clap::Parser as _;
use std::sync::Arc;

pub fn run(args: &ServiceRunArgs, ctx: &mut Context) -> anyhow::Result<()> {
    let mut settings = settings(args);
    settings.inherited = supervise::inherited(&ctx.env);
    // `--sim-pace` (a simulated host only): CalicoNode looks at the node N times as often.
    settings.timing.look /= ctx.options.host.sim_pace.unwrap_or(1);
    if !args.console {
        return under_scm(settings, ctx);
    }
    let host = ctx.open_host(Intent::Change)?;
    let settings = for_host(settings, &*host);
    let stop = Stop::new();
    let handler = stop.clone();
    ctrlc::set_handler(move || handler.request())
        .map_err(|e| anyhow::anyhow!("cannot catch Ctrl-C: {e}"))?;
    let env = supervise::environment(&*host, &settings).ok();
    let log = supervise::open_log(&*host, &settings, env.as_ref(), true)?;
    log.info(&format!(
        "calicoctl-win {} runs {} in the console; Ctrl-C stops it",
        env!("CARGO_PKG_VERSION"),
        Role::service_name(settings.role)
    ));
    supervise::run(&*host, &settings, &stop, &log)?;
    Ok(())
}

/// The service settings from the command line.
pub fn settings(args: &ServiceRunArgs) -> Settings {
    let role = match args.role {
        ServiceRole::Node => Role::Node,
        ServiceRole::Felix => Role::Felix,
        ServiceRole::Confd => Role::Confd,
        ServiceRole::KubeProxy => Role::KubeProxy,
    };
    let mut s = Settings::new(role, &args.install_root);
    s.log = LogSettings {
        max_size: args.log_max_size,
        rotate_every: args.log_rotate_every,
        keep: args.log_keep,
    };
    s.stop_timeout = args.stop_timeout;
    s.init_timeout = args.init_timeout;
    s.network_timeout = args.network_timeout;
    s.startup_timeout = args.startup_timeout;
    s.delete_all_non_nat_networks = args.delete_all_non_nat_networks;
    s.probes.ec2 = args.ec2_metadata_url.clone();
    s.probes.gce = args.gce_metadata_url.clone();
    s.program = args.program.clone();
    s.calico_version = args.calico_version.clone();
    s.platform = args.platform;
    s.metrics_port = args.metrics_port;
    s.diags = args.diags;
    s.diags_namespace.clone_from(&args.diags_namespace);
    s
}

/// A simulated host is on no cloud (its probes stay on loopback, never 169.254.169.254) and
/// needs no time to settle after the vSwitch appears.
fn for_host(mut s: Settings, host: &dyn Host) -> Settings {
    if host.kind() != crate::host::HostKind::Windows {
        s.timing.settle = std::time::Duration::ZERO;
        for url in [&mut s.probes.ec2, &mut s.probes.gce] {
            if !(url.starts_with("http://127.") || url.starts_with("http://localhost")) {
                url.clear();
            }
        }
    }
    s
}

#[cfg(windows)]
fn under_scm(settings: Settings, ctx: &mut Context) -> anyhow::Result<()> {
    if ctx.options.host.sim_dir.is_some() {
        return Err(not_under_scm().into());
    }
    let name = settings.role.service_name();
    let hint = settings.service_stop_wait();
    let body: supervise::scm::Body = Box::new(move |stop| {
        let host = crate::host::windows::WindowsHost::new();
        let env = supervise::environment(&host, &settings).ok();
        let log = match supervise::open_log(&host, &settings, env.as_ref(), false) {
            Ok(log) => log,
            Err(_) => return 1,
        };
        log.info(&format!(
            "calicoctl-win {} runs {name} (pid {})",
            env!("CARGO_PKG_VERSION"),
            std::process::id()
        ));
        match supervise::run(&host, &settings, stop, &log) {
            Ok(()) => 0,
            Err(e) if e.is_timeout() => 4,
            Err(_) => 1,
        }
    });
    supervise::scm::run(name, hint, body).map_err(|e| match e {
        windows_service::Error::Winapi(io) if io.raw_os_error() == Some(1063) => {
            not_under_scm().into()
        }
        other => anyhow::Error::new(other).context("the service dispatcher failed"),
    })
}

#[cfg(not(windows))]
fn under_scm(_settings: Settings, _ctx: &mut Context) -> anyhow::Result<()> {
    Err(not_under_scm().into())
}

fn not_under_scm() -> UsageError {
    UsageError::new(
        "'service run' without --console must be started by the Windows service control manager",
        "add --console to run it in the foreground (Ctrl-C stops it); 'calicoctl-win install' registers the services",
    )
}

/// What starting one of calicoctl-win's services does on a simulated host: the role's
/// start-up phase, for real, logged to the role's log on the simulated host.
pub fn sim_start_hook() -> StartHook {
    Arc::new(|host: &SimHost, start: &ServiceStart| {
        let argv = std::iter::once("calicoctl-win".to_owned()).chain(start.args.iter().cloned());
        let cli = crate::cli::Cli::try_parse_from(argv)
            .map_err(|e| anyhow::anyhow!("{}: bad service command line: {e}", start.name))?;
        let crate::cli::Command::Service(crate::cli::ServiceCommand::Run(args)) = cli.command
        else {
            anyhow::bail!("{}: not a 'service run' command line", start.name);
        };
        let host: &dyn Host = host;
        let settings = for_host(settings(&args), host);
        let env = supervise::environment(host, &settings).ok();
        let log = supervise::open_log(host, &settings, env.as_ref(), false)?;
        log.info(&format!("{} started on the simulated host", start.name));
        supervise::start_phase(host, &settings, &log)?;
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::{Cli, Command, ServiceCommand};
    use std::time::Duration;

    fn parsed(args: &[&str]) -> Settings {
        let argv = ["calicoctl-win", "service", "run"].iter().chain(args);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Service(ServiceCommand::Run(a)) => settings(&a),
            other => panic!("not service run: {other:?}"),
        }
    }

    #[test]
    fn the_command_line_sets_every_service_setting() {
        let s = parsed(&[
            "confd",
            "--install-root",
            r"D:\Calico\",
            "--log-max-size",
            "1MB",
            "--log-rotate-every",
            "12h",
            "--log-keep",
            "3",
            "--stop-timeout",
            "30s",
            "--delete-all-non-nat-networks",
        ]);
        assert_eq!(s.role, Role::Confd);
        assert_eq!(s.install_root.as_str(), r"D:\Calico");
        assert_eq!(
            s.log,
            LogSettings {
                max_size: 1024 * 1024,
                rotate_every: Duration::from_secs(12 * 3600),
                keep: 3
            }
        );
        assert_eq!(s.stop_timeout, Duration::from_secs(30));
        assert!(s.delete_all_non_nat_networks);
        let d = parsed(&["node"]);
        assert_eq!(d.log, LogSettings::default());
        assert_eq!(d.install_root.as_str(), r"C:\CalicoWindows");
        assert!(!d.delete_all_non_nat_networks);
    }

    #[test]
    fn a_simulated_host_never_probes_the_real_metadata_service() {
        let host = crate::host::sim::SimHost::in_memory("ws2022").expect("host");
        let mut s = parsed(&["node", "--gce-metadata-url", "http://127.0.0.1:9"]);
        s = for_host(s, &host);
        assert_eq!(s.probes.ec2, "", "169.254.169.254 is not probed");
        assert_eq!(s.probes.gce, "http://127.0.0.1:9", "loopback stays");
        assert_eq!(s.timing.settle, Duration::ZERO);
    }
}
