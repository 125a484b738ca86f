//! Every name calicoctl-win and the Windows services share on the node, in one place: Calico's
//! registry key and its values, the event source, the HNS and firewall names, the files under
//! the install root, and the services' roles with their service, environment and log names.
//! A leaf: it imports only `std`, so every layer may read it and none is pulled up by it.

pub mod env;

// Calico's registry key and the values calicoctl-win and the services keep there.

/// Calico's registry key: the init-done marker lives here.
pub const CALICO_KEY: &str = r"HKLM\Software\Tigera\Calico";
/// The marker: the boot identity of the boot CalicoNode last finished initialising in.
pub const BOOT_ID_VALUE: &str = "BootId";
/// What Calico's scripts compared (a culture-formatted boot time), still written for them.
pub const LEGACY_BOOT_VALUE: &str = "LastBootTime";
/// The registry value (REG_SZ, JSON) holding the failures of CalicoNode's current start.
pub const FAILURES_VALUE: &str = "StartFailures";
/// The registry value holding the routes from before the vSwitch until they are restored.
pub const ROUTES_VALUE: &str = "RoutesBeforeVswitch";
/// The registry value (REG_SZ, JSON) holding the last failed renewal; deleted by a success.
pub const RENEWAL_VALUE: &str = "TokenRenewal";
/// The registry value (REG_SZ, JSON) describing the token the last renewal wrote.
pub const ISSUED_VALUE: &str = "TokenIssued";
/// The registry value (REG_SZ, JSON) holding the last HNS restart CalicoNode answered.
pub const HNS_RESTART_VALUE: &str = "HnsRestart";
/// The registry value (REG_SZ, `<boot id>:<pid>`) holding the HNS service's process id as
/// CalicoNode last saw it, so that a restart of CalicoNode does not forget it.
pub const HNS_PID_VALUE: &str = "HnsProcess";
/// The registry value (REG_SZ, seconds since 1970) of when CalicoFelix last started Felix.
pub const FELIX_STARTED_VALUE: &str = "FelixStarted";
/// The registry value (REG_SZ) of `kube-proxy --version`'s answer as calicoctl-win's
/// kube-proxy service read it at its last start (deleted before asking: no answer, no value).
pub const KUBE_PROXY_VERSION_VALUE: &str = "KubeProxyVersion";
/// The registry value (REG_SZ, JSON) holding when CalicoNode or `repair` first saw each HNS
/// endpoint at fault, by endpoint id (`installed::endpoints::seen`).
pub const ENDPOINT_FAULTS_VALUE: &str = "EndpointFaults";
/// The registry value (REG_SZ, JSON) holding the External vSwitch's adapter's addressing from
/// before the vSwitch (`installed::addressing`).
pub const ADDRESSING_VALUE: &str = "AddressingBeforeVswitch";
/// The registry value (REG_SZ, JSON) CalicoNode keeps while it cannot listen on
/// `metrics.port` (`health::metrics_findings::EndpointDown`).
pub const METRICS_ENDPOINT_VALUE: &str = "MetricsEndpoint";
/// The registry value (REG_SZ, JSON) where CalicoNode keeps when its metrics endpoint began to
/// listen and last accepted a connection from beyond the node
/// (`health::metrics_findings::Scrapes`).
pub const METRICS_SCRAPES_VALUE: &str = "MetricsScrapes";
/// The registry value (REG_SZ, JSON) CalicoNode keeps while the API server refuses it the
/// TokenReview of `GET /diags` (`health::metrics_findings::DiagsReviewRefused`).
pub const DIAGS_REVIEW_VALUE: &str = "DiagsReviewRefused";
/// The registry value install sets under `HKLM\Software\Tigera\Calico`.
pub const INSTALL_ROOT_VALUE: &str = "InstallRoot";

/// Every value calicoctl-win and its services keep under `CALICO_KEY` (what `uninstall
/// --purge` deletes and a rollback's snapshot compares).
pub const CALICO_VALUES: [&str; 20] = [
    BOOT_ID_VALUE,
    LEGACY_BOOT_VALUE,
    FAILURES_VALUE,
    ROUTES_VALUE,
    RENEWAL_VALUE,
    ISSUED_VALUE,
    HNS_RESTART_VALUE,
    HNS_PID_VALUE,
    FELIX_STARTED_VALUE,
    KUBE_PROXY_VERSION_VALUE,
    ENDPOINT_FAULTS_VALUE,
    ADDRESSING_VALUE,
    METRICS_ENDPOINT_VALUE,
    METRICS_SCRAPES_VALUE,
    DIAGS_REVIEW_VALUE,
    INSTALL_ROOT_VALUE,
    CHILD_VALUES[0],
    CHILD_VALUES[1],
    CHILD_VALUES[2],
    CHILD_VALUES[3],
];

/// The registry values (REG_SZ, `PID START`) where each service keeps the last child it ran
/// (`Role::child_value`): its next start waits for that process to end (`supervise::child`).
pub const CHILD_VALUES: [&str; 4] = ["NodeChild", "FelixChild", "ConfdChild", "KubeProxyChild"];

/// kube-proxy's image name, however it runs (the service this tool registers, a HostProcess
/// pod, another installer's service): while it runs, another host's HNS endpoints are its own.
pub const KUBE_PROXY_IMAGE: &str = "kube-proxy.exe";

// Felix's health endpoint.

/// The port Felix serves `/liveness` and `/readiness` on: its default `HealthPort`
/// (projectcalico/calico v3.31.7 felix/config/config_params.go), which calico-node's own probe
/// assumes too (node/pkg/health/health.go).
pub const FELIX_HEALTH_PORT: u16 = 9099;

/// kube-proxy's `/healthz` port: its `--healthz-bind-address` default, which calicoctl-win's
/// kube-proxy service leaves (kubernetes `pkg/cluster/ports/ports.go`, `ProxyHealthzPort`).
pub const KUBE_PROXY_HEALTHZ_PORT: u16 = 10256;
/// Where Felix serves it: the loopback only.
pub const FELIX_HEALTH_HOST: &str = "127.0.0.1";

// The Application event log source.

/// The Application event log source the service bodies write under; install registers it
/// (`EVENT_SOURCE_KEY`) and uninstall removes it.
pub const EVENT_SOURCE: &str = "calicoctl-win";
pub const EVENT_SOURCE_KEY: &str =
    r"HKLM\SYSTEM\CurrentControlSet\Services\EventLog\Application\calicoctl-win";
/// The ids of the events written under that source, and `EVENT_IDS`: every one, each once.
macro_rules! events {
    ($($name:ident = $id:literal,)*) => {
        $(pub const $name: u32 = $id;)*
        pub const EVENT_IDS: &[u32] = &[$($name,)*];
    };
}

events! {
    EVENT_STARTED = 1,
    EVENT_STOPPED = 2,
    EVENT_FAILED = 3,
    EVENT_FAILURE = 4,
    EVENT_RENEWAL_FAILED = 5,
    EVENT_HNS_RESTARTED = 6,
    EVENT_ADDRESS_CHANGED = 7,
    EVENT_TOKEN_REPLACED = 8,
    EVENT_API_GROUP_CHANGED = 9,
}

// HNS.

/// Name of the bootstrap network whose creation makes the vSwitch.
pub const EXTERNAL_NETWORK: &str = "External";
/// The pod network calico-node creates.
pub const CALICO_NETWORK: &str = "Calico";
/// The CNI network's name in the CNI config install renders (`templates/cni.conf.template`,
/// `name`): Calico's CNI plugin names each pod's endpoint `<sandbox id>_<this>`.
pub const CNI_NETWORK_NAME: &str = "Calico";
/// The HNS endpoint calico-node makes for the host on the Calico network (block .2,
/// `SetupVxlanNetwork`): kube-proxy's source VIP on overlay.
pub const SOURCE_VIP_ENDPOINT: &str = "Calico_ep";

/// The directory under the install root CalicoNode builds a `GET /diags` bundle in
/// (`supervise::diags_server`), and its files: the zip, its temporary, and the empty
/// configuration read when the root holds none (never the default path's, any user's to make).
pub const DIAGS_SERVE_DIR: &str = "diags-serve";
pub const DIAGS_SERVE_FILES: [&str; 3] = [
    "bundle.zip",
    ".bundle.zip.calicoctl-win.tmp",
    "no-config.yaml",
];

/// calicoctl-win's metrics under the install root, one file per writer: CalicoNode's,
/// repair's and the fleet pod's scheduled verify's (`installed::metrics`).
pub const METRICS_FILES: [&str; 3] = [
    "calicoctl-win-metrics.json",
    "calicoctl-win-metrics-repair.json",
    "calicoctl-win-metrics-verify.json",
];

// Windows Firewall.

/// The firewall rule install creates for VXLAN, and the one Calico's scripts create (their
/// `-DisplayName`, the name the firewall API knows it by).
pub const VXLAN_RULE: &str = "Calico VXLAN UDP 4789";
pub const CALICO_SCRIPT_VXLAN_RULE: &str = "Overlay Traffic 4789 UDP";

// Files and directories.

pub const RECORD_FILE: &str = "calicoctl-win-install.json";
pub const JOURNAL_FILE: &str = "calicoctl-win.journal.json";
/// Uninstall's journal, in the install root's parent (uninstall removes the root itself).
pub const UNINSTALL_JOURNAL_FILE: &str = "calicoctl-win-uninstall.journal.json";
pub const MIGRATE_JOURNAL_FILE: &str = "calicoctl-win-migrate.journal.json";
/// `migrate to-operator`'s cluster steps before the host, undone when they fail.
pub const MIGRATE_CLUSTER_JOURNAL_FILE: &str = "calicoctl-win-migrate.cluster.journal.json";
/// SYSTEM's regional settings (`installed::boot_marker::system_culture`).
pub const SYSTEM_INTERNATIONAL: &str = r"HKU\.DEFAULT\Control Panel\International";
/// The release cache under the install root: downloads and their staging.
pub const CACHE_DIR: &str = "cache";
/// How the directories a release is unpacked into start, in the cache (followed by the
/// process id and the time); what a killed run left is removed by the next.
pub const STAGING_PREFIX: &str = "staging-";
/// How the directories a real run extracts a release into before its first change start, in
/// the state directory; what a killed run left is removed by the next.
pub const LOOK_PREFIX: &str = "release-look-";
/// Appended to a download's name while it arrives (`<zip>.part`); an interrupted one is
/// resumed by the next run.
pub const PARTIAL_SUFFIX: &str = ".part";
/// What a running calicoctl-win.exe that is replaced or removed is renamed to, followed by the
/// process id (`<exe>.calicoctl-win-old-<pid>`); Windows deletes it at the next reboot.
pub const RUNNING_IMAGE_ASIDE: &str = ".calicoctl-win-old-";
/// Beside the install record in the install root.
pub const FILE_STAT_FILE: &str = "calicoctl-win-file-stat.json";
pub const LOCK_FILE: &str = "calicoctl-win.lock";
/// Where the services' logs of a run that is undone go: calicoctl-win's state directory on
/// Windows (`%ProgramData%\calicoctl-win`), in a folder named for the run.
pub const KEPT_LOGS_DIR: &str = r"C:\ProgramData\calicoctl-win";
/// Appended to the CNI config's name while it is withheld: no runtime loads it
/// (containerd and dockershim load `.conf`, `.conflist` and `.json`).
pub const WITHHELD_SUFFIX: &str = ".calicoctl-win-withheld";
/// The file under the install root that holds the External network's document.
pub const EXTERNAL_FILE: &str = "external-network.json";
/// Felix reads extra HNS ACL rules from this file beside its binary
/// (`felix/dataplane/windows/policysets/static_rules.go`).
pub const STATIC_RULES_FILE: &str = "static-rules.json";
/// The directory under the install root that Calico's token refresher got as its
/// `CONTAINER_SANDBOX_MOUNT_POINT` when earlier calicoctl-win versions ran it; uninstall still
/// removes what it left.
pub const REFRESHER_DIR: &str = "token-refresher";
/// What the refresher writes, under its sandbox: the CNI plugin's kubeconfig
/// (`node/pkg/cni/token_watch.go`: `/host/etc/cni/net.d/calico-kubeconfig`).
pub const REFRESHED_KUBECONFIG: &str = r"host\etc\cni\net.d\calico-kubeconfig";
/// What the refresher reads, under its sandbox: the namespace of the service account it asks
/// tokens for (`/var/run/secrets/kubernetes.io/serviceaccount/namespace`; fatal when missing).
pub const REFRESHER_NAMESPACE: &str = r"var\run\secrets\kubernetes.io\serviceaccount\namespace";

/// The host path of a file under a directory.
pub fn join(dir: &str, name: &str) -> String {
    format!("{}\\{name}", dir.trim_end_matches('\\'))
}

/// The install root as one value: the directory trimmed once (no trailing backslash, as the
/// install record and the journal name it) and every path install derives from it, so that no
/// command joins a root and a name by hand (rustup's `InstallPrefix`, `src/dist/prefix.rs`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstallRoot(String);

impl InstallRoot {
    pub fn new(dir: &str) -> Self {
        Self(dir.trim_end_matches(['\\', '/']).to_owned())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A file or directory directly under the root.
    pub fn path(&self, name: &str) -> String {
        join(&self.0, name)
    }

    /// The install record: what install created, which uninstall removes.
    pub fn record(&self) -> String {
        self.path(RECORD_FILE)
    }

    /// The journal of install, reconfigure and repair.
    pub fn journal(&self) -> String {
        self.path(JOURNAL_FILE)
    }

    /// A file in the root's parent: the journals of the commands that remove the root's files.
    fn beside(&self, name: &str) -> String {
        join(
            self.0.rsplit_once('\\').map_or(self.0.as_str(), |(p, _)| p),
            name,
        )
    }

    pub fn uninstall_journal(&self) -> String {
        self.beside(UNINSTALL_JOURNAL_FILE)
    }

    pub fn migrate_journal(&self) -> String {
        self.beside(MIGRATE_JOURNAL_FILE)
    }

    pub fn migrate_cluster_journal(&self) -> String {
        self.beside(MIGRATE_CLUSTER_JOURNAL_FILE)
    }

    /// Every journal a command cut off can leave for this root: install's, reconfigure's and
    /// repair's under it, uninstall's and the migrations' beside it.
    pub fn journals(&self) -> [String; 4] {
        [
            self.journal(),
            self.uninstall_journal(),
            self.migrate_journal(),
            self.migrate_cluster_journal(),
        ]
    }

    /// The file stats kept beside the record.
    pub fn file_stats(&self) -> String {
        self.path(FILE_STAT_FILE)
    }

    /// The release cache: downloads and their staging.
    pub fn cache(&self) -> String {
        self.path(CACHE_DIR)
    }

    /// calicoctl-win itself, which the services run.
    pub fn self_exe(&self) -> String {
        self.path("calicoctl-win.exe")
    }

    /// What Calico's components and the services write under the root while they run (files,
    /// then directories deepest first): calico-node's `nodename`, the metrics, the `GET /diags`
    /// bundle and the sandbox of the token refresher earlier versions ran. Install records none;
    /// uninstall removes them with the recorded files.
    pub fn owned_paths(&self) -> (Vec<String>, Vec<String>) {
        let root = self.as_str();
        let base = join(root, REFRESHER_DIR);
        let files = std::iter::once(join(root, "nodename"))
            .chain(METRICS_FILES.iter().map(|f| join(root, f)))
            .chain(
                DIAGS_SERVE_FILES
                    .iter()
                    .map(|f| join(&join(root, DIAGS_SERVE_DIR), f)),
            )
            .chain(
                [REFRESHER_NAMESPACE, REFRESHED_KUBECONFIG]
                    .iter()
                    .map(|f| join(&base, f)),
            )
            .collect();
        let mut dirs = Vec::new();
        for f in [REFRESHER_NAMESPACE, REFRESHED_KUBECONFIG] {
            let mut d = f;
            while let Some((parent, _)) = d.rsplit_once('\\') {
                let p = join(&base, parent);
                if !dirs.contains(&p) {
                    dirs.push(p);
                }
                d = parent;
            }
        }
        dirs.sort_by_key(|d: &String| std::cmp::Reverse(d.matches('\\').count()));
        dirs.push(base);
        dirs.push(join(root, DIAGS_SERVE_DIR));
        (files, dirs)
    }

    /// A service's environment file.
    pub fn env_file(&self, role: Role) -> String {
        self.path(role.env_file())
    }
}

impl std::fmt::Display for InstallRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

// The services.

/// The role name of calicoctl-win's own log (what `install --detach` wrote) beside the
/// services' (`Role::name`): `logs calicoctl-win` reads it, and the fleet DaemonSet's
/// `install` container follows it by this name.
pub const OWN_LOG_ROLE: &str = "calicoctl-win";

/// A Calico Windows service whose environment is rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Node,
    Felix,
    Confd,
    /// The opt-in kube-proxy service (`kube_proxy.path`).
    KubeProxy,
}

impl Role {
    /// Every role, in start order.
    pub const ALL: [Role; 4] = [Role::Node, Role::Felix, Role::Confd, Role::KubeProxy];
    /// The roles whose programs keep state in HNS (Felix its ACL policies, kube-proxy its load
    /// balancers and remote endpoints): what an HNS restart makes them program again.
    pub const PROGRAMS_HNS: [Role; 2] = [Role::Felix, Role::KubeProxy];

    /// The role's name in its log file (`calico-<name>.log`) and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Role::Node => "node",
            Role::Felix => "felix",
            Role::Confd => "confd",
            Role::KubeProxy => "kube-proxy",
        }
    }

    /// The Windows service that runs it.
    pub fn service_name(self) -> &'static str {
        match self {
            Role::Node => "CalicoNode",
            Role::Felix => "CalicoFelix",
            Role::Confd => "CalicoConfd",
            Role::KubeProxy => "kube-proxy",
        }
    }

    /// The registry value its service keeps its last child in (`CHILD_VALUES`).
    pub fn child_value(self) -> &'static str {
        CHILD_VALUES[self as usize]
    }

    /// Its log file's name in the logs directory (`calico-<name>.log`).
    pub fn log_file(self) -> String {
        format!("calico-{}.log", self.name())
    }

    /// File name of the rendered environment.
    pub fn env_file(self) -> &'static str {
        match self {
            Role::Node => "calico-node.env",
            Role::Felix => "calico-felix.env",
            Role::Confd => "calico-confd.env",
            Role::KubeProxy => "kube-proxy.env",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One name or id means one thing on the node: no value or event id is listed twice.
    #[test]
    fn the_lists_name_each_value_and_event_once() {
        let mut ids = EVENT_IDS.to_vec();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), EVENT_IDS.len(), "{EVENT_IDS:?}");
        let mut values: Vec<String> = CALICO_VALUES.iter().map(|v| v.to_lowercase()).collect();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), CALICO_VALUES.len(), "{CALICO_VALUES:?}");
    }

    /// The root is trimmed once, however it was written, and every path is derived from it:
    /// `C:\CalicoWindows\` and `C:\CalicoWindows` name one record and one journal, and
    /// uninstall's journal lies beside the root it removes.
    #[test]
    fn an_install_root_is_trimmed_once_and_derives_its_paths() {
        let a = InstallRoot::new(r"C:\CalicoWindows\\");
        assert_eq!(a, InstallRoot::new(r"C:\CalicoWindows"));
        assert_eq!(a.record(), r"C:\CalicoWindows\calicoctl-win-install.json");
        assert_eq!(a.journal(), r"C:\CalicoWindows\calicoctl-win.journal.json");
        assert_eq!(
            a.uninstall_journal(),
            r"C:\calicoctl-win-uninstall.journal.json"
        );
        assert_eq!(a.cache(), r"C:\CalicoWindows\cache");
        assert_eq!(
            a.env_file(Role::Felix),
            r"C:\CalicoWindows\calico-felix.env"
        );
        let (files, dirs) = InstallRoot::new(r"D:\c\").owned_paths();
        assert_eq!(files[0], r"D:\c\nodename");
        assert!(files.contains(&r"D:\c\diags-serve\bundle.zip".to_owned()));
        assert_eq!(
            dirs[dirs.len() - 2..],
            [r"D:\c\token-refresher", r"D:\c\diags-serve"]
        );
    }
}
