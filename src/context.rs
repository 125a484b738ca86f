//! The one context value passed to every command: the environment captured at start-up,
//! the printer, the run log, and the global flags.

use crate::config::{self, ConfigError, Inputs, Loaded};
use crate::host::select::{self, HostChoice, Intent};
use crate::host::{Host, HostKind};
use crate::output::Printer;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Global options that commands read.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub kubeconfig: Option<PathBuf>,
    pub dry_run: bool,
    pub yes: bool,
    pub sets: Vec<String>,
    pub host: HostChoice,
}

/// Everything a command may touch of the outside world.
pub struct Context {
    pub printer: Printer,
    pub options: Options,
    /// The process environment, read once in `main`; nothing else reads it.
    pub env: BTreeMap<String, String>,
    pub hostname: Option<String>,
    log: Option<Box<dyn Write>>,
}

impl Context {
    pub fn new(
        printer: Printer,
        options: Options,
        env: BTreeMap<String, String>,
        hostname: Option<String>,
        log: Option<Box<dyn Write>>,
    ) -> Self {
        Self {
            printer,
            options,
            env,
            hostname,
            log,
        }
    }

    /// Appends a line to the `--log-file`, if one was given, and shows it with `-v`.
    pub fn log(&mut self, line: &str) {
        if let Some(log) = &mut self.log {
            let secs = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_secs())
                .unwrap_or(0);
            let _ = writeln!(log, "{secs} {line}");
        }
        self.printer.detail(line);
    }

    /// The effective configuration from `--config` (or the default file), the environment
    /// and `--set`.
    pub fn load_config(&mut self) -> Result<Loaded, ConfigError> {
        let file = config::read_file(self.options.config.as_deref())?;
        if let Some((path, _)) = &file {
            let line = format!("reading config file {}", path.display());
            self.log(&line);
        }
        config::load(&Inputs {
            file,
            env: self.env.clone(),
            sets: self.options.sets.clone(),
            hostname: self.hostname.clone(),
        })
    }

    /// The host the command works on (see `host::select`); `--dry-run` only reads it. Says so
    /// when it is a throw-away simulated host.
    pub fn open_host(&mut self, intent: Intent) -> anyhow::Result<Box<dyn Host>> {
        let intent = if self.options.dry_run {
            Intent::Read
        } else {
            intent
        };
        let host = select::open(&self.options.host, intent)?.into_host();
        match host.kind() {
            HostKind::InMemory { profile } => self.printer.note(&format!(
                "this machine is not Windows: using a simulated {profile} host (--sim-host DIR keeps one, --sim-profile NAME picks another)"
            )),
            HostKind::Simulated { dir, profile } => {
                self.log(&format!("simulated host {profile} in {dir}"))
            }
            HostKind::Windows => {}
        }
        Ok(host)
    }

    /// The admin kubeconfig that cluster commands use, and where that choice came from.
    pub fn cluster_kubeconfig(&self) -> (Option<PathBuf>, &'static str) {
        if let Some(k) = &self.options.kubeconfig {
            return (Some(k.clone()), "flag --kubeconfig");
        }
        if let Some(k) = self.env.get("KUBECONFIG").filter(|k| !k.is_empty()) {
            return (Some(PathBuf::from(k)), "env KUBECONFIG");
        }
        let home = self.env.get("USERPROFILE").or_else(|| self.env.get("HOME"));
        (
            home.map(|h| PathBuf::from(h).join(".kube").join("config")),
            "default",
        )
    }
}
