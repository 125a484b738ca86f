//! What a service body runs with: settings, environment, the release's layout, its errors.

use super::log::LogSettings;
use crate::host::{Host, HostError};
use crate::layout::Role;
use crate::release::{Binary, CalicoVersion, Features};
use std::collections::BTreeMap;
use std::time::Duration;

/// Why a service body stopped with an error. Stopping on request is not an error.
#[derive(Debug, thiserror::Error)]
pub enum SuperviseError {
    #[error("the service environment {path} is missing")]
    NoEnvironment { path: String },
    #[error("neither calico.exe nor calico-node.exe is in {root}")]
    NoCalicoBinary { root: String },
    #[error("the External network document {path} is missing")]
    NoExternalSpec { path: String },
    #[error(
        "no usable IPv4 address after {}s (addresses seen: {})",
        .waited.as_secs(), if .seen.is_empty() { "none".to_owned() } else { .seen.join(", ") }
    )]
    NoUsableIp { waited: Duration, seen: Vec<String> },
    #[error(
        "the adapter {adapter} had no stable IPv4 address (Preferred, not 169.254/16) after {}s, so the vSwitch was not made on it (it holds: {})",
        .waited.as_secs(), if .seen.is_empty() { "nothing".to_owned() } else { .seen.join(", ") }
    )]
    AdapterAddress {
        adapter: String,
        waited: Duration,
        seen: Vec<String>,
    },
    #[error(
        "the vSwitch's host adapter for {uplink} (MAC {mac}, named vEthernet, holding {ip}) did not appear within {}s",
        .after.as_secs()
    )]
    VswitchAdapter {
        uplink: String,
        mac: String,
        ip: std::net::Ipv4Addr,
        after: Duration,
    },
    #[error("could not create the External HNS network within {}s: {last}", .after.as_secs())]
    ExternalNetwork { after: Duration, last: String },
    #[error("the External HNS network got no management IP within {}s", .after.as_secs())]
    ManagementIp { after: Duration },
    #[error("HNS networks {names} are still there {}s after deleting them", .after.as_secs())]
    NetworksRemain { names: String, after: Duration },
    #[error("could not restart RemoteAccess for BGP")]
    RemoteAccess(#[source] HostError),
    #[error("calico-node startup did not succeed after {attempts} attempts (last: {last})")]
    Startup { attempts: u32, last: String },
    #[error("CalicoNode has not finished initialising in this boot")]
    NotInitialised,
    #[error(
        "unknown boot: Windows gave no boot time, so CalicoNode cannot tell a restart from a reboot and changes nothing"
    )]
    UnknownBoot,
    #[error("kube-proxy is not at {path:?} (kube_proxy.path)")]
    NoKubeProxy { path: String },
    #[error(
        "kube-proxy cannot run on Calico's overlay network: its version is {found} (1.14 or later needed)"
    )]
    KubeProxyVersion { found: String },
    #[error("{what} did not appear within {}s", .after.as_secs())]
    KubeProxyWait { what: String, after: Duration },
    #[error(transparent)]
    Host(#[from] HostError),
    /// A restart's stop given up on (`hns_watch::stop_given_up`), which may still be taken.
    #[error(transparent)]
    StopGivenUp(HostError),
    /// A child that could not be looked at or stopped: the service ends rather than start a
    /// second copy; the next start waits for it (`child::earlier`).
    #[error(
        "{program} (pid {pid}) could not be stopped: {error}; the service ends so that no second copy runs beside it ({})",
        if *.in_job { "its job object ends it with the service; the next start waits for it to end" } else { "it is in no job of the service's and may run on; the next start waits for it to end" }
    )]
    NotStopped {
        program: String,
        pid: u32,
        error: String,
        in_job: bool,
    },
    /// A child an earlier run started still runs after the wait for it: no failed start.
    #[error(
        "{program} (pid {pid}) that an earlier run of this service started still runs after {}s; no second copy is started beside it until it has ended: end that process",
        .after.as_secs()
    )]
    EarlierStillRuns {
        program: String,
        pid: u32,
        after: Duration,
    },
    /// A stop was requested; the body returns without error.
    #[error("stopped")]
    Stopped,
}

/// A wait the stop ended (`duration::poll_until`) ends the body as any stop does.
impl From<crate::duration::Stopped> for SuperviseError {
    fn from(_: crate::duration::Stopped) -> Self {
        Self::Stopped
    }
}

impl SuperviseError {
    pub fn hint(&self) -> Option<&'static str> {
        Some(match self {
            Self::NoEnvironment { .. } | Self::NoExternalSpec { .. } => {
                "run 'calicoctl-win install' (it renders the service files), or check --install-root"
            }
            Self::NoCalicoBinary { .. } => {
                "run 'calicoctl-win install' to unpack the Calico release, or check --install-root"
            }
            Self::NoUsableIp { .. } => {
                "the NIC has no address yet (DHCP?); raise node.startup_valid_ip_timeout if it is only slow"
            }
            Self::AdapterAddress { .. } => {
                "the vSwitch is made only once its adapter holds a stable address, so that HNS does not take a tentative or APIPA one as the node's provider address: check DHCP (or the static address) on the adapter; the service restarts and waits again"
            }
            Self::VswitchAdapter { .. } => {
                "check 'Get-NetAdapter' and 'Get-NetIPAddress': the vSwitch's host adapter should carry the adapter's MAC and address; the service restarts and looks again"
            }
            Self::ExternalNetwork { .. }
            | Self::ManagementIp { .. }
            | Self::NetworksRemain { .. } => {
                "check the hns and vmcompute services and 'Get-HnsNetwork'; the service restarts and tries again"
            }
            Self::RemoteAccess(_) => {
                "check 'Get-Service RemoteAccess' (windows-bgp needs the RemoteAccess feature)"
            }
            Self::NotInitialised => "start CalicoNode first and read its log, calico-node.log",
            Self::UnknownBoot => {
                "the pods' networks were left as they are; the service tries again when restarted (check NtQuerySystemInformation's boot time with 'Get-CimInstance Win32_OperatingSystem | Select LastBootUpTime')"
            }
            Self::NoKubeProxy { .. } => {
                "put kube-proxy.exe there, or set kube_proxy.path and run 'calicoctl-win reconfigure'"
            }
            Self::KubeProxyVersion { .. } => {
                "use kube-proxy 1.14 or later (the cluster's version is best)"
            }
            Self::KubeProxyWait { .. } => {
                "check CalicoNode (calicoctl-win status, calico-node.log); the service restarts and waits again"
            }
            _ => return None,
        })
    }

    /// Whether it gave up waiting (exit code 4).
    pub fn is_timeout(&self) -> bool {
        matches!(
            self,
            Self::NoUsableIp { .. }
                | Self::AdapterAddress { .. }
                | Self::VswitchAdapter { .. }
                | Self::ExternalNetwork { .. }
                | Self::ManagementIp { .. }
                | Self::NetworksRemain { .. }
                | Self::KubeProxyWait { .. }
        )
    }
}

pub type Result<T, E = SuperviseError> = std::result::Result<T, E>;

/// Intervals of the loops; tests shorten them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timing {
    /// How often a wait looks again (HNS, the marker, a running child).
    pub poll: Duration,
    /// How often CalicoNode looks for a new kubelet process (the scripts: 10 s).
    pub kubelet_poll: Duration,
    /// How often the address wait looks (the scripts: 5 s).
    pub ip_poll: Duration,
    /// Restart delays: doubling from `backoff_min` up to `backoff_max`.
    pub backoff_min: Duration,
    pub backoff_max: Duration,
    /// The networking stack's grace period after the vSwitch appears (the scripts: 10 s).
    pub settle: Duration,
    /// How long a start waits for a child an earlier run left (TerminateProcess remarks).
    pub earlier_wait: Duration,
    /// How often CalicoNode looks at the node's health and Calico's API group.
    pub look: Duration,
}

impl Default for Timing {
    fn default() -> Self {
        Self {
            poll: Duration::from_secs(1),
            kubelet_poll: Duration::from_secs(10),
            ip_poll: Duration::from_secs(5),
            backoff_min: Duration::from_secs(1),
            backoff_max: Duration::from_secs(60),
            settle: Duration::from_secs(10),
            earlier_wait: Duration::from_secs(60),
            look: crate::supervise::condition::EVERY,
        }
    }
}

/// What one service body needs, from its command line (`service run ROLE ...`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub role: Role,
    /// The install root on the host (`C:\CalicoWindows`).
    pub install_root: crate::layout::InstallRoot,
    pub log: LogSettings,
    /// How long a stopping child gets before it is killed.
    pub stop_timeout: Duration,
    /// How long felix and confd wait for CalicoNode before warning (then they keep waiting).
    pub init_timeout: Duration,
    /// Bound on HNS work: deleting old networks, creating External, its management IP.
    pub network_timeout: Duration,
    /// How long the External adapter gets to hold a stable address before the vSwitch.
    pub adapter_address_timeout: Duration,
    /// Bound on one calico-node startup run.
    pub startup_timeout: Duration,
    /// After a boot, delete every non-NAT HNS network as Calico's scripts do.
    pub delete_all_non_nat_networks: bool,
    pub probes: crate::installed::platform::Probes,
    /// The platform as configured; `Auto` probes.
    pub platform: crate::config::types::PlatformChoice,
    /// The port of calicoctl-win's metrics endpoint (CalicoNode), when metrics are on.
    pub metrics_port: Option<u16>,
    /// Whether the metrics endpoint answers `GET /diags` too (`metrics.diags`).
    pub diags: bool,
    /// The namespace of the ServiceAccount `GET /diags` takes (`metrics.diags_namespace`).
    pub diags_namespace: String,
    pub timing: Timing,
    /// Runs this program instead of the installed binary, with the same arguments (tests).
    pub program: Option<String>,
    /// The installed release, which decides the start-up flags (unknown: common ones only).
    pub calico_version: Option<CalicoVersion>,
    /// What children take from the service's environment, under the role's env file.
    pub inherited: BTreeMap<String, String>,
}

/// What a service body tells the SCM to allow beyond its own stop timeout (its wait hint).
pub const STOP_HINT_SLACK: Duration = Duration::from_secs(5);

impl Settings {
    /// How long a service running this body may take to stop: its stop timeout and the slack
    /// of its SCM wait hint.
    pub fn service_stop_wait(&self) -> Duration {
        self.stop_timeout + STOP_HINT_SLACK
    }

    pub fn new(role: Role, install_root: &str) -> Self {
        Self {
            role,
            install_root: crate::layout::InstallRoot::new(install_root),
            log: LogSettings::default(),
            stop_timeout: Duration::from_secs(10),
            init_timeout: Duration::from_secs(300),
            network_timeout: Duration::from_secs(300),
            adapter_address_timeout: Duration::from_secs(120),
            startup_timeout: Duration::from_secs(300),
            delete_all_non_nat_networks: false,
            probes: crate::installed::platform::Probes::default(),
            platform: crate::config::types::PlatformChoice::Auto,
            metrics_port: None,
            diags: false,
            diags_namespace: crate::config::DIAGS_NAMESPACE.into(),
            timing: Timing::default(),
            program: None,
            calico_version: None,
            inherited: BTreeMap::new(),
        }
    }

    pub(super) fn path(&self, name: &str) -> String {
        self.install_root.path(name)
    }
}

/// The service's rendered environment, `<install root>\calico-<role>.env`.
pub fn environment(host: &dyn Host, s: &Settings) -> Result<BTreeMap<String, String>> {
    let path = s.path(s.role.env_file());
    let bytes = host
        .read_file(&path)?
        .ok_or(SuperviseError::NoEnvironment { path })?;
    let mut env = s.inherited.clone();
    env.extend(parse_env(&String::from_utf8_lossy(&bytes)));
    Ok(env)
}

/// The variables a child takes from the service's environment: where Windows and its tools are
/// (confd up to 3.27.1 runs `powershell`), temporary files, and the proxy (Go's
/// `http.ProxyFromEnvironment`). Nothing else.
pub const INHERITED: &[&str] = &[
    "SystemRoot",
    "SystemDrive",
    "windir",
    "PATH",
    "PATHEXT",
    "ComSpec",
    "TEMP",
    "TMP",
    "ProgramData",
    "ProgramFiles",
    "ProgramFiles(x86)",
    "ProgramW6432",
    "CommonProgramFiles",
    "ALLUSERSPROFILE",
    "PSModulePath",
    "COMPUTERNAME",
    "NUMBER_OF_PROCESSORS",
    "PROCESSOR_ARCHITECTURE",
    "OS",
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
];

/// The allow-listed variables of `env`, names without regard to case (`Path` is `PATH`).
pub fn inherited(env: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    let windows_names = cfg!(windows);
    env.iter()
        .filter_map(|(k, v)| {
            let name = INHERITED.iter().find(|n| {
                if windows_names {
                    n.eq_ignore_ascii_case(k)
                } else {
                    **n == k.as_str()
                }
            })?;
            Some(((*name).to_owned(), v.clone()))
        })
        .collect()
}

/// `NAME=VALUE` lines, as install renders them (`render::env::parse`).
pub use crate::render::env::parse as parse_env;

/// The installed release's binary and the start-up flags it knows (`release::version`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout(pub Features);

/// What a role runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Component {
    Startup,
    Felix,
    Confd,
}

impl Layout {
    /// Reads the binary's name (checked to exist, never read) and the installed version's flags.
    pub fn detect(host: &dyn Host, s: &Settings) -> Result<Self> {
        let binary = if host.file_access(&s.path("calico.exe"))?.is_some() {
            Binary::Calico
        } else if host.file_access(&s.path("calico-node.exe"))?.is_some() {
            Binary::CalicoNode
        } else {
            return Err(SuperviseError::NoCalicoBinary {
                root: s.install_root.to_string(),
            });
        };
        Ok(Self::of(binary, s.calico_version.as_ref()))
    }

    /// The layout of `binary` in `version`; another binary's version counts only its name.
    pub fn of(binary: Binary, version: Option<&CalicoVersion>) -> Self {
        match version.map(CalicoVersion::features) {
            Some(f) if f.binary == binary => Self(f),
            _ => Self(Features::of_binary(binary)),
        }
    }

    /// The program and arguments of a component.
    pub fn command(self, s: &Settings, c: Component) -> (String, Vec<String>) {
        let f = self.0;
        let confdir = s.path("confd");
        let (node_confd, calico_confd) = (
            format!("-confd-confdir={confdir}"),
            format!("--confdir={confdir}"),
        );
        let args: &[&str] = match (f.binary, c) {
            (Binary::CalicoNode, Component::Startup) if f.complete_startup => {
                &["-startup", "-complete-startup"]
            }
            (Binary::CalicoNode, Component::Startup) => &["-startup"],
            (Binary::CalicoNode, Component::Felix) => &["-felix"],
            (Binary::CalicoNode, Component::Confd) => &["-confd", &node_confd],
            (Binary::Calico, Component::Startup) if f.complete_startup => {
                &["component", "node", "startup", "--complete-startup"]
            }
            (Binary::Calico, Component::Startup) => &["component", "node", "startup"],
            (Binary::Calico, Component::Felix) => &["component", "felix"],
            (Binary::Calico, Component::Confd) => &["component", "confd", &calico_confd],
        };
        let args = args.iter().map(|a| (*a).to_owned()).collect();
        (s.path(f.binary.file_name()), args)
    }
}

/// A component to run: the program, its arguments, its working directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Launch {
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) cwd: Option<String>,
}

/// How to run a component: the installed binary in the root (confd in its confdir), or `program`.
pub(super) fn required(host: &dyn Host, s: &Settings, c: Component) -> Result<Launch> {
    let layout = match &s.program {
        Some(_) => Layout::of(Binary::CalicoNode, s.calico_version.as_ref()),
        None => Layout::detect(host, s)?,
    };
    let (exe, args) = layout.command(s, c);
    Ok(match &s.program {
        Some(p) => Launch {
            program: p.clone(),
            args,
            cwd: None,
        },
        None => Launch {
            program: exe,
            args,
            cwd: Some(match c {
                Component::Confd => s.path("confd"),
                _ => s.install_root.to_string(),
            }),
        },
    })
}

/// The node's networking backend (`CALICO_NETWORKING_BACKEND`, vxlan when unset).
pub(super) fn backend(env: &BTreeMap<String, String>) -> &str {
    env.get(crate::layout::env::EnvVars::CALICO_NETWORKING_BACKEND)
        .map_or("vxlan", String::as_str)
}
