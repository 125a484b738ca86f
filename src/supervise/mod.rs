//! The body of the Calico Windows services, replacing NSSM and Calico's `node-service.ps1`,
//! `felix-service.ps1` and `confd-service.ps1` (reference §3.2): CalicoNode, CalicoFelix and
//! CalicoConfd. Plain logic on the host traits; the SCM glue is `scm.rs`.

mod agent;
mod api_group;
mod child;
pub mod cni;
pub mod condition;
pub mod diags_review;
pub mod diags_server;
pub mod hns_watch;
mod kube_proxy;
mod log;
pub mod metrics_server;
mod node;
pub mod renew;
#[cfg(windows)]
pub mod scm;
mod settings;
mod turn_away;

pub use crate::duration::Stop;
pub use crate::layout::Role;
pub use child::{EVENT_FAILURE, report_failure};
pub use log::{Clock, Log, LogSettings, parse_size};
pub use node::{StartPhase, init_done};
pub use settings::{
    Component, INHERITED, Layout, Result, Settings, SuperviseError, Timing, environment, inherited,
    parse_env,
};

use crate::host::{EventLevel, Host, Recovery, ServiceSpec, StartType};
use crate::layout::env::EnvVars;
use std::collections::BTreeMap;
use std::time::Duration;

/// The log of a role: `<CALICO_LOG_DIR or root\logs>\calico-<role>.log`, on this machine.
pub fn open_log(
    host: &dyn Host,
    s: &Settings,
    env: Option<&BTreeMap<String, String>>,
    echo: bool,
) -> Result<Log> {
    let dir = env
        .and_then(|e| e.get(EnvVars::CALICO_LOG_DIR))
        .filter(|d| !d.is_empty())
        .cloned()
        .unwrap_or_else(|| s.path("logs"));
    let file = crate::layout::join(&dir, &s.role.log_file());
    Ok(Log::open(host.local_path(&file)?, s.log, echo))
}

pub fn role_name(role: Role) -> &'static str {
    role.name()
}

/// The event ids: a service body started, stopped on request, failed (listed in `layout`).
pub use crate::layout::{EVENT_FAILED, EVENT_STARTED, EVENT_STOPPED};

/// Runs a role until a stop (`Ok`) or a failure, its start, stop and failure in the event log.
pub fn run(host: &dyn Host, s: &Settings, stop: &Stop, log: &Log) -> Result<()> {
    let service = Role::service_name(s.role);
    let event = |level, id, message: String| log.event(host, level, id, &message);
    event(
        EventLevel::Information,
        EVENT_STARTED,
        format!(
            "{service} started (calicoctl-win {}, Calico {}, install root {})",
            env!("CARGO_PKG_VERSION"),
            s.calico_version
                .as_ref()
                .map_or_else(|| "version unknown".to_owned(), ToString::to_string),
            s.install_root
        ),
    );
    let out = match s.role {
        Role::Node => node::run(host, s, stop, log),
        Role::Felix => agent::felix(host, s, stop, log),
        Role::Confd => agent::confd(host, s, stop, log),
        Role::KubeProxy => kube_proxy::run(host, s, stop, log),
    };
    match out {
        Err(SuperviseError::Stopped) | Ok(()) => {
            log.info("stopped");
            event(
                EventLevel::Information,
                EVENT_STOPPED,
                format!("{service} stopped"),
            );
            Ok(())
        }
        Err(e) => {
            let chain = crate::error::chain(&e);
            log.warn(&format!("failed: {chain}"));
            event(
                EventLevel::Error,
                EVENT_FAILED,
                format!("{service} failed: {chain} (its log in the logs directory says more)"),
            );
            Err(e)
        }
    }
}

/// What starting the service does on a simulated host: the role's start-up phase (CalicoNode
/// initialises and runs startup once; felix and confd check what they would run).
pub fn start_phase(host: &dyn Host, s: &Settings, log: &Log) -> Result<()> {
    match s.role {
        Role::Node => node::start_phase(host, s, log).map(|_| ()),
        Role::Felix | Role::Confd => agent::start_phase(host, s, log),
        Role::KubeProxy => kube_proxy::start_phase(host, s, log).map(|_| ()),
    }
}

/// A role's service registration: `service run ROLE`, LocalSystem, automatic, with recovery.
pub fn service_spec(role: Role, exe: &str, args: Vec<String>) -> ServiceSpec {
    let (display, description) = match role {
        Role::Node => (
            "Calico Windows Startup",
            "Calico Windows Startup, configures Calico datamodel resources for this node (run by calicoctl-win).",
        ),
        Role::Felix => (
            "Calico Windows Agent",
            "Calico Windows Per-host Agent, Felix, provides network policy enforcement for Kubernetes (run by calicoctl-win).",
        ),
        Role::Confd => (
            "Calico BGP Agent",
            "Calico BGP Agent, confd, configures BGP routing (run by calicoctl-win).",
        ),
        // As Calico's install-kube-services.ps1 registered it.
        Role::KubeProxy => (
            "kube-proxy service",
            "Kubernetes kube-proxy network proxy (run by calicoctl-win on Calico's network).",
        ),
    };
    ServiceSpec {
        name: Role::service_name(role).into(),
        display_name: display.into(),
        description: description.into(),
        program: exe.into(),
        args,
        dependencies: match role {
            // No dependency on HNS, as Calico's `Install-NodeService` (v3.32.1 `calico.psm1`):
            // CalicoNode starts HNS itself (`hns_watch::ensure_running`).
            Role::Node => Vec::new(),
            Role::Felix | Role::Confd | Role::KubeProxy => vec!["CalicoNode".into()],
        },
        start: StartType::Auto,
        recovery: Some(Recovery {
            restart_after: vec![
                Duration::from_secs(5),
                Duration::from_secs(15),
                Duration::from_secs(60),
            ],
            reset_after: Duration::from_secs(86_400),
            on_non_crash_failures: true,
        }),
    }
}

#[cfg(test)]
mod shared_tests;

// SimHost with shell scripts as fake Calico components.
#[cfg(all(test, unix))]
mod tests;

impl crate::error::Diagnose for SuperviseError {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        let kind = if matches!(self, SuperviseError::AdapterAddress { .. }) {
            crate::error::Kind::AdapterAddress
        } else if self.is_timeout() {
            crate::error::Kind::Timeout
        } else {
            crate::error::Kind::ServiceFailed
        };
        crate::error::Diagnosis::failed_or_timeout(
            self.is_timeout(),
            kind,
            self.hint().map(str::to_owned),
        )
    }
}
