//! The one context value passed to every command: the environment captured at start-up,
//! the printer, the run log, and the global flags.

use crate::cluster::{Cluster, ClusterError};
use crate::config::{self, ConfigError, Inputs, Loaded};
use crate::host::select::{self, HostChoice, Intent};
use crate::host::{Host, HostKind};
use crate::output::Printer;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

/// Where Calico's quickstart and most join scripts leave the admin kubeconfig on a node.
pub const HOST_KUBECONFIG: &str = r"C:\k\config";

/// Global options that commands read.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub config: Option<PathBuf>,
    pub kubeconfig: Option<PathBuf>,
    pub dry_run: bool,
    pub yes: bool,
    pub sets: Vec<String>,
    pub host: HostChoice,
    /// Whether a person can answer a question: stdin and stderr are terminals.
    pub interactive: bool,
    /// A kubeconfig's credential plugin may run (the process is elevated).
    pub allow_exec_plugin: bool,
}

/// The source `cluster_kubeconfig` names for a pod's service account.
pub const IN_CLUSTER: &str = "in-cluster service account";
/// Where `cluster_kubeconfig` found the host's `C:\k\config`: read through the host's files.
pub const ON_HOST: &str = "default, on the host";

/// Everything a command may touch of the outside world.
pub struct Context {
    pub printer: Printer,
    pub options: Options,
    /// The process environment, read once in `main`; nothing else reads it.
    pub env: BTreeMap<String, String>,
    /// The `host` configuration layer, read when the host is opened.
    host_layer: BTreeMap<&'static str, config::Raw>,
    /// The host's drives, to check every path setting is on a fixed one (empty: unknown).
    host_drives: BTreeMap<char, crate::host::DriveKind>,
    /// The host's `C:\k\config` with the files it names (or why unreadable), read through the
    /// host's files once it is opened.
    host_kubeconfig: Option<Result<crate::cluster::OnHost, String>>,
    log: Option<Box<dyn Write>>,
    /// The host lock, held from `open_host_to_change` until the command or its change ends.
    lock: Option<crate::host::lock::HostLock>,
    /// What starting a calicoctl-win service does on a simulated host (set by `main`).
    sim_start_hook: Option<crate::host::sim::StartHook>,
    /// When the command started (unix seconds): `--verify` takes a `CalicoWindowsReady` since.
    pub started_s: i64,
    /// The stop the stop signal requests, once caught (`catch_stop`).
    stop: Option<crate::duration::Stop>,
}

impl Context {
    pub fn new(
        printer: Printer,
        options: Options,
        env: BTreeMap<String, String>,
        log: Option<Box<dyn Write>>,
    ) -> Self {
        Self {
            printer,
            options,
            env,
            host_layer: BTreeMap::new(),
            host_drives: BTreeMap::new(),
            host_kubeconfig: None,
            lock: None,
            log,
            sim_start_hook: None,
            started_s: crate::duration::now(),
            stop: None,
        }
    }

    /// The stop Ctrl-C, a termination signal or a console's control event requests: `stop`,
    /// or the one caught before (a process catches it once). When it cannot be caught, a
    /// warning ends with `without`, what a Ctrl-C does then.
    pub fn catch_stop(
        &mut self,
        stop: crate::duration::Stop,
        without: &str,
    ) -> crate::duration::Stop {
        if let Some(caught) = &self.stop {
            return caught.clone();
        }
        if let Err(e) = crate::host::stop::on_stop(stop.clone()) {
            self.printer
                .warn(&format!("Ctrl-C will not clean up ({e}): {without}"));
        }
        self.stop = Some(stop.clone());
        stop
    }

    /// The host lock, handed to the change that holds it (`commands::change::Change`).
    pub fn take_lock(&mut self) -> Option<crate::host::lock::HostLock> {
        self.lock.take()
    }

    /// Simulated hosts opened from now on run `hook` when a calicoctl-win service starts.
    pub fn set_sim_start_hook(&mut self, hook: crate::host::sim::StartHook) {
        self.sim_start_hook = Some(hook);
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

    /// Asks a yes/no question on the terminal (`--yes` answers yes; without a terminal it is an
    /// error). `shown`, what it is about, goes to stderr, which `-o json`, `-q` or a redirect
    /// do not hide.
    pub fn confirm(
        &mut self,
        shown: &[String],
        question: &str,
    ) -> Result<bool, crate::error::UsageError> {
        if self.options.yes {
            return Ok(true);
        }
        if !self.options.interactive {
            return Err(crate::error::UsageError::new(
                format!("{question} needs confirmation, and there is no terminal to ask on"),
                "pass --yes to confirm, or --dry-run to only show the changes",
            ));
        }
        let mut text = String::new();
        for line in shown {
            text.push_str(line);
            text.push('\n');
        }
        self.printer.prompt(&format!("{text}{question} [y/N] "));
        let mut answer = String::new();
        let _ = std::io::stdin().read_line(&mut answer);
        Ok(matches!(answer.trim(), "y" | "Y" | "yes" | "Yes" | "YES"))
    }

    /// The configuration from the file, the environment, `--set` and the host's defaults.
    pub fn load_config(&mut self) -> Result<Loaded, ConfigError> {
        self.load_config_with(BTreeMap::new())
    }

    /// Like `load_config`, with values read from the cluster filling unset settings.
    pub fn load_config_with(
        &mut self,
        cluster: BTreeMap<&'static str, config::Raw>,
    ) -> Result<Loaded, ConfigError> {
        let file = config::read_file(self.options.config.as_deref())?;
        if let Some((path, _)) = &file {
            let line = format!("reading config file {}", path.display());
            self.log(&line);
        }
        let loaded = config::load(&Inputs {
            file,
            env: self.env.clone(),
            sets: self.options.sets.clone(),
            host: self.host_layer.clone(),
            cluster,
        })?;
        config::host::on_fixed_drives(&loaded, &self.host_drives)?;
        Ok(loaded)
    }

    /// The host the command works on (`host::select`); `--dry-run` only reads it.
    pub fn open_host(&mut self, intent: Intent) -> anyhow::Result<Box<dyn Host>> {
        let intent = if self.options.dry_run {
            Intent::Read
        } else {
            intent
        };
        let mut opened = select::open(&self.options.host, intent)?;
        if let (Some(sim), Some(hook)) = (opened.as_sim_mut(), &self.sim_start_hook) {
            sim.set_start_hook(hook.clone());
        }
        let host = opened.into_host();
        self.adopt_winhttp_proxy(host.as_ref());
        self.host_layer = config::host::HostDefaults::read(host.as_ref()).layer();
        self.host_drives = host.system_facts().map(|f| f.drives).unwrap_or_default();
        let read = |p: &str| host.read_file(p).map_err(|e| e.to_string());
        self.host_kubeconfig = crate::cluster::OnHost::read(HOST_KUBECONFIG, &read).transpose();
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

    /// The machine's WinHTTP proxy for a command that opens no host (`fetch release`).
    pub fn adopt_machine_proxy(&mut self) {
        match select::open(&self.options.host, Intent::Read) {
            Ok(opened) => self.adopt_winhttp_proxy(opened.into_host().as_ref()),
            Err(e) => self.log(&format!("the WinHTTP proxy was not read: {e:#}")),
        }
    }

    /// Without a proxy variable, the machine's WinHTTP proxy (`netsh winhttp set proxy`, what
    /// Windows services use) becomes one, its bypass list `NO_PROXY` unless that is set.
    fn adopt_winhttp_proxy(&mut self, host: &dyn Host) {
        const SET: &[&str] = &["HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy"];
        if SET
            .iter()
            .any(|v| self.env.get(*v).is_some_and(|x| !x.trim().is_empty()))
        {
            return;
        }
        let proxy = match host.system_facts() {
            Ok(f) => f.winhttp_proxy,
            Err(e) => {
                self.log(&format!("the WinHTTP proxy was not read: {e}"));
                return;
            }
        };
        let Some(proxy) = proxy else { return };
        let vars = crate::net::winhttp_proxy_env(&proxy);
        let names: Vec<&str> = vars.iter().map(|(k, _)| *k).collect();
        for (name, value) in vars {
            let taken = name == "NO_PROXY"
                && ["NO_PROXY", "no_proxy"]
                    .iter()
                    .any(|v| self.env.contains_key(*v));
            if !taken {
                self.env.insert(name.to_owned(), value);
            }
        }
        self.log(&format!(
            "using the WinHTTP proxy {:?} (bypass {:?}) as {}",
            proxy.proxy,
            proxy.bypass.as_deref().unwrap_or(""),
            names.join(", ")
        ));
    }

    /// Opens the host for `command` to change it, holding the host lock (`host::lock`); a
    /// `--dry-run` or a throw-away in-memory host takes none.
    pub fn open_host_to_change(&mut self, command: &str) -> anyhow::Result<Box<dyn Host>> {
        // The lock first: a simulated host reads its state as it opens. A lock held already
        // (migrate from-operator's install) is kept: another command could take it between.
        if !self.options.dry_run
            && self.lock.is_none()
            && let Some(dir) = self.planned_state_dir()
        {
            let lock = crate::host::lock::acquire(&dir, command)?;
            self.log(&format!("holding the host lock {}", dir.display()));
            self.lock = Some(lock);
        }
        self.open_host(Intent::Change)
    }

    /// The chosen host's state directory before it is opened; `None` where a change is
    /// refused anyway (another OS without `--sim-host`).
    fn planned_state_dir(&self) -> Option<PathBuf> {
        if let Some(dir) = &self.options.host.sim_dir {
            return Some(dir.clone());
        }
        cfg!(windows).then(|| crate::host::lock::windows_state_dir(&self.env))
    }

    /// Where calicoctl-win keeps its own state on this machine (`host::lock::state_dir`).
    pub fn state_dir(&self, host: &dyn Host) -> Option<PathBuf> {
        crate::host::lock::state_dir(host, &self.env)
    }

    /// Connects to the cluster with the admin kubeconfig; `None` when there is none.
    pub fn connect_cluster(&mut self) -> Result<Option<Cluster>, ClusterError> {
        let (path, source) = self.cluster_kubeconfig();
        if source == IN_CLUSTER
            && let Some(sa) = crate::cluster::InCluster::detect(&self.env)
        {
            self.log(&format!(
                "reading the cluster at {} as the pod's service account ({})",
                sa.server,
                sa.dir.display()
            ));
            return Cluster::connect_in_cluster(&sa, &self.env).map(Some);
        }
        if source == ON_HOST {
            self.log(&format!(
                "reading the cluster through {HOST_KUBECONFIG} ({source})"
            ));
        }
        if source == ON_HOST
            && let Some(k) = &self.host_kubeconfig
        {
            let k = k.as_ref().map_err(|e| ClusterError::Kubeconfig {
                path: PathBuf::from(HOST_KUBECONFIG),
                source: e.clone().into(),
            })?;
            return Cluster::connect_on_host(k, &self.env, self.options.allow_exec_plugin)
                .map(Some);
        }
        let Some(path) = path.filter(|p| source != "default" || p.is_file()) else {
            return Ok(None);
        };
        self.log(&format!(
            "reading the cluster through {} ({source})",
            path.display()
        ));
        let paths = match source {
            "env KUBECONFIG" => self.kubeconfig_list(),
            _ => vec![path],
        };
        Cluster::connect(&paths, &self.env, self.options.allow_exec_plugin).map(Some)
    }

    /// Like `connect_cluster`, for commands that cannot work without the cluster.
    pub fn require_cluster(&mut self) -> Result<Cluster, ClusterError> {
        let (path, _) = self.cluster_kubeconfig();
        self.connect_cluster()?.ok_or(ClusterError::NoKubeconfig {
            path: path.unwrap_or_else(|| PathBuf::from("~/.kube/config")),
        })
    }

    /// `$KUBECONFIG` as kubectl reads it (client-go `tools/clientcmd/loader.go`,
    /// `filepath.SplitList`): empty items dropped, missing files skipped while one exists.
    pub fn kubeconfig_list(&self) -> Vec<PathBuf> {
        let Some(value) = self.env.get("KUBECONFIG").filter(|k| !k.is_empty()) else {
            return Vec::new();
        };
        let listed: Vec<PathBuf> = std::env::split_paths(value)
            .filter(|p| !p.as_os_str().is_empty())
            .collect();
        let (present, missing): (Vec<PathBuf>, Vec<PathBuf>) =
            listed.into_iter().partition(|p| p.is_file());
        if present.is_empty() { missing } else { present }
    }

    /// The admin kubeconfig and where the choice came from: `--kubeconfig`, `$KUBECONFIG`,
    /// `~/.kube/config`, a pod's service account (`IN_CLUSTER`), then the host's
    /// `C:\k\config`; the defaults only when the file exists.
    pub fn cluster_kubeconfig(&self) -> (Option<PathBuf>, &'static str) {
        if let Some(k) = &self.options.kubeconfig {
            return (Some(k.clone()), "flag --kubeconfig");
        }
        if let Some(first) = self.kubeconfig_list().first() {
            return (Some(first.clone()), "env KUBECONFIG");
        }
        let home = self
            .env
            .get("USERPROFILE")
            .or_else(|| self.env.get("HOME"))
            .map(|h| PathBuf::from(h).join(".kube").join("config"));
        if let Some(h) = home.as_ref().filter(|h| h.is_file()) {
            return (Some(h.clone()), "default");
        }
        // In a pod its service account comes before the host's (often kubelet's) kubeconfig.
        if let Some(sa) = crate::cluster::InCluster::detect(&self.env) {
            return (Some(sa.dir.join("token")), IN_CLUSTER);
        }
        if self.host_kubeconfig.is_some() {
            return (Some(PathBuf::from(HOST_KUBECONFIG)), ON_HOST);
        }
        (home, "default")
    }
}
