//! Command-line definitions (clap derive) only.

use crate::output::Format;
use clap::{Args, Parser, Subcommand};
use std::path::PathBuf;

/// `--version`: the version, the commit and the commit's date.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("CALICOCTL_WIN_COMMIT"),
    ", ",
    env!("CALICOCTL_WIN_BUILD_DATE"),
    ")"
);

/// Installs, runs and maintains Calico networking on Windows Kubernetes nodes.
#[derive(Debug, Parser)]
#[command(name = "calicoctl-win", version, long_version = LONG_VERSION, max_term_width = 100)]
#[command(
    long_about = "Installs, runs and maintains Calico networking on Windows Kubernetes nodes.\n\n\
Settings come from calico-windows.yaml (--config), environment variables with config.ps1's names \
(VXLAN_VNI, K8S_SERVICE_CIDR, ...), and --set KEY=VALUE, in the order flag > env > file > default. \
'calicoctl-win config show' prints every setting and where it came from.\n\n\
Exit codes: 0 success, 1 failed, 2 bad usage or config (nothing changed), 3 preflight blocked, 4 timed out, 5 another calicoctl-win command is changing this host, 6 the change needs the node drained (nothing changed)."
)]
pub struct Cli {
    #[command(flatten)]
    pub global: Global,
    #[command(subcommand)]
    pub command: Command,
}

/// Flags every command accepts.
#[derive(Debug, Args)]
pub struct Global {
    /// Configuration file (calico-windows.yaml). Default: $CALICOCTL_WIN_CONFIG when it is not empty, then on a node C:\CalicoWindows\calico-windows.yaml if present
    #[arg(long, global = true, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Admin kubeconfig for talking to the cluster (default: $KUBECONFIG, then ~/.kube/config)
    #[arg(long, global = true, value_name = "FILE")]
    pub kubeconfig: Option<PathBuf>,
    /// Let a kubeconfig's credential plugin (user.exec, an auth-provider's cmd-path) run, elevated as calicoctl-win is
    #[arg(long, global = true)]
    pub allow_exec_plugin: bool,
    /// Override one setting, like --set vxlan.vni=4097 (repeatable; lists comma-separated;
    /// extra environment as --set extra_env.felix.NAME=VALUE)
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Output format: text for people, json for scripts (stdout then holds one JSON document)
    #[arg(short = 'o', long = "output", visible_alias = "output-format", global = true, value_enum, default_value_t = Format::Text)]
    pub output_format: Format,
    /// Show what would change and change nothing
    #[arg(long, global = true)]
    pub dry_run: bool,
    /// Answer yes to confirmations (required without a terminal)
    #[arg(long, global = true)]
    pub yes: bool,
    /// Append a log of what this run does to FILE
    #[arg(long, global = true, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Show more detail on stderr
    #[arg(short, long, global = true, action = clap::ArgAction::Count, conflicts_with = "quiet")]
    pub verbose: u8,
    /// Print only warnings, errors and the JSON document (no results, notes or progress)
    #[arg(short, long, global = true)]
    pub quiet: bool,
    /// Colour on stderr: auto (on a terminal, unless NO_COLOR is set), always or never
    #[arg(long, global = true, value_enum, value_name = "WHEN", default_value_t = crate::output::ColorChoice::Auto)]
    pub color: crate::output::ColorChoice,
    /// Work on a simulated Windows host kept in DIR (created when new) instead of this machine:
    /// for rehearsals and tests on any OS
    #[arg(long, global = true, value_name = "DIR")]
    pub sim_host: Option<PathBuf>,
    /// Profile of a new simulated host: ws2019, ws2019-unpatched, ws20h2, ws2022 (default),
    /// ws2025, ws2025-april2026, ws2022-docker, ws2022-no-hns, ws2022-flannel, ws2022-aks,
    /// ws2022-two-nics, ws2022-legacy-calico
    #[arg(long, global = true, value_name = "NAME")]
    pub sim_profile: Option<String>,
    /// Make the simulated host fail (fail:N), refuse as the OS does with access denied
    /// (deny:N), crash (crash:N) or stop to be killed from outside (pause:N) at its Nth
    /// mutating call, or at the first whose description holds TEXT (fail:~TEXT)
    #[arg(
        long,
        global = true,
        hide = true,
        value_name = "fail:N|deny:N|crash:N|pause:N"
    )]
    pub sim_fault: Option<crate::host::sim::Fault>,
    /// Make the waits a test on a simulated host would sit through N times shorter: verify's
    /// settle, policy, pods and dial windows, and how often CalicoNode looks at the node
    /// (`service run`)
    #[arg(long, global = true, hide = true, value_name = "N",
        value_parser = clap::value_parser!(u32).range(1..=100))]
    pub sim_pace: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Render every file the install would write into a directory, touching nothing else
    #[command(
        long_about = "Renders the CNI config (10-calico.conf), the environment of each Calico service \
(calico-node.env, calico-felix.env, calico-confd.env for windows-bgp) and the External HNS network \
(external-network.json) into --output-dir, and prints their paths.\n\n\
Changes on the host: writes only those files, atomically, and only when their content changed. \
With --dry-run nothing is written. With the none backend there is no CNI config and no External network."
    )]
    Render(RenderArgs),
    /// Check that this node can run Calico, before changing anything
    #[command(
        long_about = "Checks the Windows host (OS build, architecture, elevation, TLS 1.2, HNS, \
the container runtime and its CNI directories, RemoteAccess, the VXLAN firewall port, a \
foreign CNI, the node name, kube-proxy) and, through the admin kubeconfig, the cluster \
(Calico version, IPIP, strictAffinity, IP pools, VXLAN VNI and port, WireGuard, datastore, \
rights, pods per block); without a kubeconfig, or with --offline, the cluster checks are \
skipped and say so. Each check prints pass, warn, FAIL or skip and, when something is \
wrong, the command that fixes it. Off Windows, without --sim-host, the checks run against \
a simulated Windows Server 2022 host.\n\nExits 3 when a check fails; --skip ID accepts a \
known failure. docs/commands/preflight.md describes every check.\n\nChanges on the host: \
nothing. With --fix: the fixes the flag names, each shown first; then checks again."
    )]
    Preflight(PreflightArgs),
    /// Install Calico on this node: release, checks, credentials, files, services, running node
    #[command(
        long_about = "Installs Calico for Windows on this node: preflight checks (a blocking \
failure stops it before any change; --skip ID accepts a known one), the release zip \
(--release-zip FILE or URL, by default the official asset of --calico-version, checked \
against --sha256), calico-node's credentials, the rendered files, the CNI plugins, the \
services CalicoNode, CalicoFelix (and CalicoConfd for windows-bgp), the registry key, the \
VXLAN firewall rule and the install record; then it starts the services and waits until \
CalicoNode has initialised and the Calico HNS network exists (--wait-timeout).\n\nEvery \
change is journaled: a failed step undoes the steps done, a run cut off is continued by \
the next install, and installing again with the same inputs changes nothing. --dry-run \
prints the plan and changes nothing. A legacy NSSM-based install is refused unless \
--migrate-legacy. docs/commands/install.md has the details."
    )]
    Install(InstallArgs),
    /// Remove what install created, from its install record (works without a valid config)
    #[command(
        long_about = "Removes what install created, from its install record (<install \
root>\\calicoctl-win-install.json), so it works when the config or the kubeconfig is \
broken or gone: stops and deletes the Calico services and removes exactly the files \
install wrote. HNS networks stay unless --purge, which also deletes the Calico and \
External networks, puts back the routes, and removes the registry key, the firewall rule, \
the directories install created and, with the admin kubeconfig, the node's token-renewal \
Role and RoleBinding. The services' logs stay unless --remove-logs. --skip-cluster does \
not contact the cluster and lists each cluster object left (JSON: cluster_left) with the \
kubectl command that deletes it.\n\nIf a step fails, the record is kept: run it again to \
finish. --dry-run prints the plan."
    )]
    Uninstall(UninstallArgs),
    /// Converge an installed node to a changed config; drains it and makes the Calico HNS network again when needed
    #[command(
        long_about = "Compares what is installed with the config (--config NEW, --set ...) and \
applies the difference. A change to files only rewrites them and restarts the services \
concerned. A change HNS cannot make on an existing network (the VXLAN VNI, MAC prefix or \
adapter, the backend, windows_use_single_network) needs the Calico network made again, \
which disconnects every pod on the node: it is refused (exit 6) unless --drain, which \
cordons the node, evicts its pods as kubectl drain does, makes the network again and \
uncordons the node; with --drain=external an engine has cordoned and drained the node \
already, and it stays cordoned. A VNI other than the cluster's FelixConfiguration vxlanVNI \
is refused unless --allow-vni-mismatch.\n\nEvery step is journaled: a failure before the \
network is deleted undoes what was done; after it, running reconfigure again finishes it. \
--dry-run prints the plan with the pods that would be evicted. Needs the admin kubeconfig \
for a network change. docs/commands/reconfigure.md has the details."
    )]
    Reconfigure(ReconfigureArgs),
    /// Show the services, HNS networks, drift from the config, the node and the token; exit 1 when degraded
    #[command(
        long_about = "Reports, from the install record and the host: each Calico service (state, pid) and whether \
its registration matches the config; the Calico and External HNS networks (id, type, subnets, VSID, management \
IP); drift (installed files changed or missing since install, rendered files that differ from what the config \
renders now, the VXLAN VNI in HNS vs the config vs the cluster's FelixConfiguration); the node (Ready, \
cordoned, pods on it) when the admin kubeconfig is available; and the expiry of calico-node's token.\n\n\
Exits 0 when healthy, 1 when degraded, with every reason listed (-o json: \"problems\"). Changes nothing."
    )]
    Status(StatusArgs),
    /// Remove the Calico network's HNS endpoints that break pods and evict the pods that held them (nothing is restarted)
    #[command(
        long_about = "Deletes the Calico HNS network's endpoints at fault for longer than --grace: \
a pod's endpoint made by Calico's CNI plugin that is stuck or stale, and kube-proxy's \
endpoint for another host's Service backend that no pod or EndpointSlice has while \
kube-proxy does not run; no other endpoint is deleted. It evicts the pods whose endpoints \
were stuck and the pods left with none, as a drain does (--drain-timeout, --force, \
--drain-concurrency), so that their controllers recreate them, and waits up to \
--wait-timeout until no endpoint is at fault. Nothing is restarted: Felix and kube-proxy \
keep running. A repair that cannot finish says what remains (exit 1).\n\nEvery step is \
journaled; a run cut off is finished by the next one. --dry-run prints the plan. Needs the \
admin kubeconfig (or a reader's that may evict pods)."
    )]
    Repair(RepairArgs),
    /// Run a Calico service body: what the CalicoNode, CalicoFelix, CalicoConfd and kube-proxy services run
    #[command(subcommand)]
    Service(ServiceCommand),
    /// Fetch calico-node's credentials from the cluster: a kubeconfig or the etcd TLS files
    #[command(subcommand)]
    Fetch(FetchCommand),
    /// Show the effective configuration or convert a legacy config.ps1
    #[command(subcommand)]
    Config(ConfigCommand),
    /// Print the tab-completion script for a shell (powershell, bash, zsh, fish)
    #[command(
        long_about = "Print the tab-completion script for a shell.\n\nPowerShell: add this line to your profile ($PROFILE):\n  calicoctl-win completions powershell | Out-String | Invoke-Expression\nbash: source <(calicoctl-win completions bash)\nzsh: calicoctl-win completions zsh > \"${fpath[1]}/_calicoctl-win\"\nfish: calicoctl-win completions fish | source"
    )]
    Completions(CompletionsArgs),
    /// Collect one zip for a support case, with every token and key redacted
    #[command(
        long_about = "Writes one zip for a support case: what config show, status and preflight \
answer, the service registrations, the HNS networks with their endpoints, the addresses \
and routes, the VXLAN firewall rule, the install record and any journal, the tail of every \
Calico service log, and the versions of the OS, Calico, calicoctl-win, kubelet and \
kube-proxy (diags.json lists the files and what could not be collected).\n\nEvery file is \
redacted: the secret values install wrote wherever they appear, and anything shaped like a \
secret. Changes on the host: none; the zip is written to --out-file, by default \
calicoctl-win-diags-<node>-<UTC time>.zip in the current directory."
    )]
    Diags(DiagsArgs),
    /// Show the services' logs, rotated files in order, secrets redacted; --follow to follow them
    #[command(
        long_about = "Shows a service's log as one stream, its rotated files in order then the \
current one: node, felix, confd, kube-proxy, or calicoctl-win (a detached install's log); \
without a role, every log, each line prefixed with its role. Every line is redacted as \
diags redacts.\n\n--tail N starts N lines from the end; --since DURATION starts at lines \
from that long ago; --follow keeps reading across rotations and truncation; --position \
FILE keeps where it is, so that a follower restarted with it goes on where it stopped. \
Changes on the host: none."
    )]
    Logs(LogsArgs),
    /// Write the manifests that roll calicoctl-win over the Windows nodes with an engine in the cluster
    #[command(subcommand)]
    Fleet(FleetCommand),
    /// Check the cluster's network policies for what they cost Windows nodes
    #[command(subcommand)]
    Lint(LintCommand),
    /// Move this node to the operator's HostProcess install, or back, keeping its pods' networks
    #[command(subcommand)]
    Migrate(MigrateCommand),
    /// Prove a Windows node passes traffic: pods, Services, DNS, both operating systems, policy enforced
    #[command(long_about = "Places agnhost probe pods in a namespace of its own \
(calicoctl-win-verify-<random>): a server behind a Service and a client on the node, and \
clients on a Linux node and on another Windows node when the cluster has them. Through the \
API server's pod proxy it checks pod-address, kubelet-probe, pod-to-pod, windows-to-linux, \
linux-to-windows, windows-to-windows, cluster-ip, api-server, dns-service, dns-kubernetes, \
egress (--egress), policy-applied and policy-removed; a failure names its layer and the \
next step (docs/findings.md).\n\nThe namespace is deleted at the end unless \
--keep-on-failure and a check failed; one a killed run left is deleted by the next run. \
With --namespace NS it runs in NS and deletes only what it made there.\n\nExits 0 when \
every check passes, 1 when one fails, 2 for bad usage (not a Windows node, or a build the \
image has no variant for), 4 when --timeout passed first. Changes in the cluster: only its \
own namespace.")]
    Verify(VerifyArgs),
}

#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// The Windows nodes to verify, each with a server of its own (repeatable, or several
    /// names after one --node; default: this node's Kubernetes name from the configuration,
    /// node.k8s_node_ref)
    #[arg(long, value_name = "NAME", num_args = 1.., value_parser = crate::k8s_name::NodeName::parse)]
    pub node: Vec<crate::k8s_name::NodeName>,
    /// The longest the whole run may take once the images are present, the sweep of a killed
    /// run's namespace and the cleanup included (exit 4 when it passes; at most 10m)
    #[arg(long, value_name = "DURATION", default_value = "120s", value_parser = crate::verify::options::timeout_flag)]
    pub timeout: std::time::Duration,
    /// The longest the probe image may take to pull on the nodes, outside --timeout (a pull
    /// still going then fails the image-pull check, exit 1; at most 15m)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::verify::options::pull_timeout_flag)]
    pub pull_timeout: std::time::Duration,
    /// The probe image: agnhost, or a mirror of it for an air-gapped cluster
    #[arg(long, value_name = "IMAGE", default_value = crate::verify::image::AGNHOST, value_parser = crate::verify::options::image_flag)]
    pub image: String,
    /// An address outside the cluster a pod must reach (HOST:PORT, HTTP; the host an IPv4
    /// address or a DNS name)
    #[arg(long, value_name = "HOST:PORT", value_parser = crate::verify::options::egress_flag)]
    pub egress: Option<String>,
    /// The cluster's DNS domain, kubelet's clusterDomain (default: the one the configuration's
    /// dns.search names as svc.DOMAIN on a node calicoctl-win installed, else cluster.local)
    #[arg(long, value_name = "DOMAIN", value_parser = crate::verify::options::domain_flag)]
    pub cluster_domain: Option<String>,
    /// Keep the namespace and its pods when a check fails, to look at them
    #[arg(long)]
    pub keep_on_failure: bool,
    /// Verify the node though it is cordoned (what the fleet Plan's job does: the controller
    /// cordoned it for the change, and uncordons it when the job passes)
    #[arg(long)]
    pub while_cordoned: bool,
    /// Run in this existing namespace instead of one of its own (no namespace made or
    /// deleted; runs in it go at once): 'fleet rbac --identity verify' makes
    /// calicoctl-win-verify and the Role verify needs there
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum MigrateCommand {
    /// Hand this node to the operator's calico-node-windows DaemonSet, its HNS networks and pods' endpoints kept
    #[command(
        name = "to-operator",
        long_about = "Hands this node to the operator's HostProcess install (Installation calicoNetwork.windowsDataplane: HNS, the calico-node-windows DaemonSet) without taking its pods' networking down: the HNS networks, every endpoint and the boot marker stay.\n\nRefused (exit 3, nothing changed), each with its fix, when: the cluster has no operator Installation; the Calico network's VSID is not the cluster's VNI (the operator's CNI reuses the network without comparing); the Installation's Windows CNI directories (spec.windowsNodes, else /opt/cni/bin and /etc/cni/net.d) are not cni.bin_dir and cni.conf_dir (containerd's), so the operator's CNI config would go where containerd does not read it; a service named kube-proxy runs here (the operator's init container deletes it); the boot marker cannot be written in SYSTEM's date format, as the operator's node-service.ps1 compares it (a mismatch makes it delete every HNS network); node.name is not kubelet's; the operator cannot be found (one Deployment labelled k8s-app=tigera-operator, whose namespace, or its OPERATOR_NAMESPACE, is where it reads its settings); the operator would refuse its Installation for Windows (the kubernetes-services-endpoint ConfigMap in the operator's namespace, spec.serviceCIDRs, a VXLAN or unencapsulated IPv4 pool), or the identity may not read that ConfigMap there ('fleet plan --migrate --operator-namespace' writes the Role); or the operator's address detection (nodeAddressAutodetectionV4, firstFound by default) would not pick the Node's InternalIP on this host.\n\nChanges in the cluster (admin kubeconfig): the Installation's calicoNodeWindowsDaemonSet affinity keeps the DaemonSet off nodes labelled calicoctl-win/runs-calico=true (the provider's own requirements kept); every node calicoctl-win installed gets that label; windowsDataplane is set to HNS; the operator's DaemonSet is waited for (rendered for this node, TigeraStatus not Degraded; if it does not come, windowsDataplane is put back and nothing on the node changes, exit 4); this node is cordoned (the DaemonSet tolerates every taint, so a cordon does not stop it, but it stops new pods meeting no CNI). On the host: calicoctl-win's services are stopped and deleted, the files it recorded removed, LastBootTime written as the operator reads it. Then this node's label is removed, the operator's pod waited for (--pod-timeout; exit 4 if it is not running and ready, the node left cordoned), the node uncordoned if this command cordoned it, the node's token-renewal grant deleted and its calicoctl-win annotations removed.\n\nEvery step is journaled: run it again to finish a run that stopped. --dry-run prints the plan."
    )]
    ToOperator(MigrateArgs),
    /// Take this node from the operator's DaemonSet and install calicoctl-win over its HNS networks, pods' endpoints kept
    #[command(
        name = "from-operator",
        long_about = "Takes this node out of the operator's calico-node-windows DaemonSet and installs calicoctl-win over the HNS networks the operator made, deleting none: its pods' endpoints stay.\n\nRefused (exit 3, nothing changed), each with its fix, when: the cluster has no operator Installation; the Calico network's VSID is not the cluster's VNI; the Installation's Windows CNI directories are not cni.bin_dir and cni.conf_dir; SYSTEM's date format is unknown; the operator's boot marker says it has not initialised this node in this boot; or node.name is not kubelet's.\n\nInstall's own checks (its flags, the release and its checksum, the host and the cluster) and its plan come first: whatever install would refuse is refused before the node leaves the operator. Steps: the Installation's affinity keeps the DaemonSet off labelled nodes (written when missing); this node is cordoned and labelled calicoctl-win/runs-calico=true; the operator's pod is waited out (--pod-timeout, exit 4); CalicoNode's boot marker is set to this boot (the operator initialised the networks in it, so CalicoNode keeps them); the operator's 10-calico.conflist and calico-kubeconfig are removed from the CNI config directory; then install runs as 'calicoctl-win install' with the same flags; NetworkUnavailable (which the operator pod's preStop set True) is set False and the node uncordoned if this command cordoned it. Every step is journaled: a run that stopped anywhere is finished by running it again.\n\n--dry-run prints the steps before and after install, and install's own plan, and exits as the real run would."
    )]
    FromOperator(Box<MigrateFromArgs>),
}

#[derive(Debug, Args)]
pub struct MigrateArgs {
    /// How long to wait for the operator's pod on this node
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse)]
    pub pod_timeout: std::time::Duration,
    /// How long to wait for a service to stop
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::duration::parse)]
    pub service_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct MigrateFromArgs {
    /// How long to wait for the operator's pod on this node to be gone
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse)]
    pub pod_timeout: std::time::Duration,
    #[command(flatten)]
    pub install: InstallArgs,
}

#[derive(Debug, Subcommand)]
pub enum LintCommand {
    /// Count the HNS ACLs Felix programs for each network policy on the Windows nodes, and find the costly and the broken ones
    #[command(
        long_about = "Reads Calico and Kubernetes network policies (staged kinds and Tiers \
included), Pods, Namespaces, ServiceAccounts and Nodes from the cluster or from manifests \
(--from-file PATH, repeatable: YAML or JSON files, or directories of them), renders each \
policy as Felix on Windows renders it, and prints for each the Windows endpoints it \
applies to, the HNS ACLs Felix programs for it and the address pairs inside them; then \
findings, each with a code and a suggestion. docs/commands/lint.md states the model, its \
sources and its limits.\n\nExits 0 without findings, 3 with findings, 2 when the input \
cannot be read or is invalid. Changes nothing."
    )]
    Policies(LintPoliciesArgs),
}

#[derive(Debug, Args)]
pub struct LintPoliciesArgs {
    /// Read the objects from FILE or a directory of YAML and JSON files instead of the cluster
    /// (repeatable)
    #[arg(long, value_name = "PATH")]
    pub from_file: Vec<PathBuf>,
    /// Render as this Calico release's Felix does (3.31 or v3.31.7; default: the cluster's
    /// ClusterInformation, else 3.31)
    #[arg(long, value_name = "VERSION", value_parser = crate::policy::felix::modelled)]
    pub calico_version: Option<crate::policy::felix::Release>,
}

#[derive(Debug, Subcommand)]
pub enum FleetCommand {
    /// Write a system-upgrade-controller Plan and a HostProcess DaemonSet that run calicoctl-win on each Windows node
    #[command(
        long_about = "Writes the manifests for an engine already in the cluster to change many \
Windows nodes a few at a time, with the config file (--config FILE, required) in a Secret \
(--config-secret): a system-upgrade-controller Plan that cordons, drains and runs \
'calicoctl-win reconfigure --drain=external' on --concurrency nodes at a time (with \
--verify, then 'calicoctl-win verify'), and a HostProcess DaemonSet that keeps each node's \
token (with --engine daemonset, it runs 'calicoctl-win reconfigure --drain' itself, paced \
by turns; with --verify-every, it runs verify that often). A node that fails stays \
cordoned and the rollout stops there.\n\n--migrate to-operator or from-operator writes a \
Plan that runs 'calicoctl-win migrate' instead, one node at a time.\n\nThe jobs run as \
--service-account with the narrow roles the manifests hold. The manifests go to standard \
output as YAML (-o json: one document), or to --out-file. Changes nothing on this machine \
or in the cluster: apply them with kubectl. docs/commands/fleet.md has the details."
    )]
    Plan(Box<FleetPlanArgs>),
    /// Write the installer's ServiceAccount and the narrow roles install, reconfigure, uninstall, status and preflight need
    #[command(
        long_about = "Writes a ServiceAccount (--name, in --namespace) and the roles that allow exactly \
the Kubernetes API calls install, reconfigure (with its drain), uninstall --purge, status and preflight \
make, bound to it: a ClusterRole (get namespaces calico-system and kube-system; get and patch nodes; list \
pods; patch nodes/status, for uninstall's CalicoWindowsReady condition; list discovery.k8s.io endpointslices, for another host's HNS endpoints; create pods/eviction; get Calico's clusterinformations, felixconfigurations and ipamconfigs named \
default; list ippools and ipamblocks; list migration.projectcalico.org datastoremigrations, for a migration of \
Calico's datastore under way (the installer only); get servicecidrs named kubernetes and the operator's installations named default and overlay; \
in projectcalico.org, with ipamconfigurations, where the cluster serves Calico's resources there: --calico-api), \
a Role in --calico-namespace (get configmaps calico-config and kube-root-ca.crt; create \
serviceaccounts/token of calico-node; get, create and delete roles and rolebindings, for each node's \
grant to renew its token; with --datastore etcdv3 get secrets calico-etcd-secrets) and a Role in \
kube-system (get services kube-dns). No wildcard. The list is the code's own \
(src/cluster/rights.rs), tested against an API server that enforces RBAC.\n\n\
--identity fleet writes the fleet jobs' account and roles instead (as 'fleet plan' does); a node's own \
right to renew its token is made per node by install.\n\n\
--identity verify writes the namespace calicoctl-win-verify (Pod Security restricted enforced), a Role \
there (create, delete, list pods; get pods/proxy; create, delete, get, list services; create, delete, list \
networking.k8s.io networkpolicies; list, delete events; create, get, list, update, delete coordination.k8s.io \
leases, its runs' own), a Role \
in default (get services named kubernetes) and a ClusterRole (list nodes): for 'verify --namespace \
calicoctl-win-verify', which makes and deletes no namespace; and, as documents of their own after \
those, a ValidatingAdmissionPolicy and its binding (admissionregistration.k8s.io/v1, Kubernetes 1.30 or \
later; on an older cluster kubectl refuses those two and applies the rest) that refuse the account's \
pods there any image but --verify-image's and any hostNetwork, hostPID, hostIPC, privileged or \
HostProcess pod.\n\n\
--identity diags writes 'fleet diags' roles: a ClusterRole (list nodes) and a Role in --namespace, \
the fleet DaemonSet's (get daemonsets; list pods; get pods/proxy, which reaches any TCP port of those pods' nodes the API server may reach, \
not only /diags; create serviceaccounts/token of calicoctl-win-diags alone, the per-node token each \
/diags request carries), with the ServiceAccount there and calicoctl-win-diags, whose tokens the nodes \
take; and the ClusterRole calicoctl-win-diags-review (create tokenreviews, which cannot be narrowed: \
a TokenReview names no object) bound to calico-node in --calico-namespace, with which CalicoNode \
reviews each request's token (without it a node refuses every request, says why in calico-node.log \
and keeps it for status: diags-review-refused).\n\n\
The manifests go to standard output as YAML for 'kubectl apply -f -' (-o json: one document with \
'manifests'), or to --out-file. Changes nothing on this machine or in the cluster."
    )]
    Rbac(FleetRbacArgs),
    /// Show every Windows node: calicoctl-win and Calico versions, config hash, Calico's condition
    #[command(
        long_about = "Prints one line for each node labelled kubernetes.io/os=windows: the \
calicoctl-win version, Calico release and config hash it was installed with, kubelet's \
Ready, the CalicoWindowsReady condition, and the CalicoWindowsTraffic verdict (stale when \
older than two of the DaemonSet's --verify-every intervals); then the nodes whose config \
differs from the fleet's, and the DaemonSet's turns. Needs a kubeconfig that may list \
nodes. Changes nothing.\n\nExit 0 when every node is ready, Calico is ready on it, it has \
the fleet's config and its traffic verdict, if any, is neither False nor stale; 1 \
otherwise, with each reason."
    )]
    Status(FleetStatusArgs),
    /// Gather every Windows node's diags zip through the fleet DaemonSet's pods, one zip per node and an index
    #[command(
        long_about = "Asks each Windows node (and --selector) for its redacted 'calicoctl-win \
diags' zip through the API server's pod proxy to the 'fleet plan' DaemonSet's pod (--name \
in --namespace), at most --concurrency at once, and writes NODE.zip for each into --out \
with index.json and index.txt (each node's size and sha256, or why it failed). A node that \
does not answer within --node-timeout is named and skipped; --timeout bounds the whole \
run.\n\nThe nodes must serve it (metrics.enabled, metrics.diags, metrics.source_ranges); \
each request carries a token made for that node alone, which the node reviews. 'fleet rbac \
--identity diags' writes the roles it needs. Changes nothing on the nodes. Exit 0 when \
every node's zip was gathered, 1 when any failed, 4 when --timeout came first. \
docs/commands/fleet-diags.md has the details."
    )]
    Diags(FleetDiagsArgs),
}

#[derive(Debug, Args)]
pub struct FleetStatusArgs {
    /// The 'fleet plan' DaemonSet's name: its --verify-every interval judges the nodes'
    /// CalicoWindowsTraffic verdicts stale
    #[arg(long, value_name = "NAME", default_value = "calicoctl-win")]
    pub name: String,
    /// The DaemonSet's namespace
    #[arg(long, value_name = "NS", default_value = "system-upgrade")]
    pub namespace: String,
}

#[derive(Debug, Args)]
pub struct FleetDiagsArgs {
    /// Labels the nodes must have besides kubernetes.io/os=windows (a label selector, like pool=a)
    #[arg(long, value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// The directory the zips and the index go to (made; an existing one must be empty)
    #[arg(long, value_name = "DIR", default_value = "calicoctl-win-fleet-diags")]
    pub out: PathBuf,
    /// How many nodes are asked at once
    #[arg(long, value_name = "N", default_value_t = crate::fleet::diags::CONCURRENCY as u16, value_parser = clap::value_parser!(u16).range(1..=64))]
    pub concurrency: u16,
    /// How long one node may take to answer whole [default: 110s, the node's own bounds (45s to
    /// build, 30s to send, 25s to review the token) and 10s for the token and the proxy]
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    pub node_timeout: Option<std::time::Duration>,
    /// How long the whole run may take
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse)]
    pub timeout: std::time::Duration,
    /// The nodes' metrics port (default: metrics.port of --config, else 9095)
    #[arg(long, value_name = "PORT", value_parser = clap::value_parser!(u16).range(1..))]
    pub port: Option<u16>,
    /// The 'fleet plan' DaemonSet's name: its pods carry app.kubernetes.io/name=NAME
    #[arg(long, value_name = "NAME", default_value = "calicoctl-win")]
    pub name: String,
    /// The DaemonSet's namespace
    #[arg(long, value_name = "NS", default_value = "system-upgrade")]
    pub namespace: String,
}

/// The datastores `fleet rbac` writes roles for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RbacDatastore {
    Kubernetes,
    Etcdv3,
}

/// The API group of Calico's resources that roles name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum CalicoApi {
    Auto,
    V1,
    V3,
}

/// Whose roles `fleet rbac` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum RbacIdentity {
    /// install, reconfigure, uninstall, status and preflight, run by provisioning
    Installer,
    /// the fleet's jobs (the same objects 'fleet plan' writes)
    Fleet,
    /// 'verify --namespace calicoctl-win-verify': that namespace, and Roles in it alone
    Verify,
    /// 'fleet diags': list nodes; list pods, get pods/proxy and calicoctl-win-diags' tokens in
    /// the DaemonSet's namespace; calico-node's right to review those tokens
    Diags,
}

#[derive(Debug, Args)]
pub struct FleetRbacArgs {
    /// Whose roles: the installer's, or the fleet jobs' (a node's own right to renew its
    /// token is made by install, per node)
    #[arg(long, value_enum, default_value = "installer")]
    pub identity: RbacIdentity,
    /// The ServiceAccount and its roles' name (default: calicoctl-win-installer,
    /// calicoctl-win-fleet, calicoctl-win-verify, or calicoctl-win-diags)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// The ServiceAccount's namespace (default: kube-system, or system-upgrade); with
    /// --identity diags also the DaemonSet's, where its Role is
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// Calico's namespace (calico-system for an operator install, kube-system for a manifest
    /// one), where calico-node's account is
    #[arg(long, value_name = "NS", default_value = "calico-system")]
    pub calico_namespace: String,
    /// The cluster's Calico datastore: etcdv3 adds reading the secret calico-etcd-secrets
    #[arg(long, value_enum, default_value = "kubernetes")]
    pub datastore: RbacDatastore,
    /// The API group of Calico's resources the roles name: v1 (crd.projectcalico.org), v3
    /// (projectcalico.org, a cluster installed with v3 CRDs), or auto: the cluster's, read
    /// with the admin kubeconfig when there is one, else v1
    #[arg(long, value_enum, default_value = "auto")]
    pub calico_api: CalicoApi,
    /// Write the manifests to FILE instead of standard output
    #[arg(long, value_name = "FILE")]
    pub out_file: Option<PathBuf>,
    /// With --identity verify: the one probe image its account's pods may run (repeat for
    /// more; default: agnhost, which 'verify' and 'fleet plan --verify' run; a mirror for an
    /// air-gapped cluster, as 'verify --image' is given)
    #[arg(long, value_name = "IMAGE", value_parser = crate::verify::options::image_flag)]
    pub verify_image: Vec<String>,
}

/// The engines `fleet plan` writes manifests for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Engine {
    /// system-upgrade-controller's Plan
    SystemUpgradeController,
    /// A HostProcess DaemonSet that changes each node (paced by turns) and keeps its token
    Daemonset,
    /// The Plan changes the nodes; the DaemonSet only keeps their tokens (and --verify-every,
    /// --metrics-service, --log-containers)
    Both,
}

/// Which way `fleet plan --migrate` moves the nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum MigrateDirection {
    /// from calicoctl-win's services to the operator's HostProcess DaemonSet
    ToOperator,
    /// from the operator's DaemonSet to calicoctl-win's services
    FromOperator,
}

#[derive(Debug, Args)]
pub struct FleetPlanArgs {
    /// The image with calicoctl-win.exe at its root, run as a HostProcess container
    #[arg(long, value_name = "IMAGE")]
    pub image: String,
    /// Which engine's manifests to write
    #[arg(long, value_enum, default_value = "both")]
    pub engine: Engine,
    /// The name of the Plan and the DaemonSet (default: calicoctl-win; with --migrate,
    /// calicoctl-win-to-operator or calicoctl-win-from-operator)
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Their namespace (system-upgrade-controller's own, for the Plan)
    #[arg(long, value_name = "NS", default_value = "system-upgrade")]
    pub namespace: String,
    /// The service account the jobs run as, written with the narrow roles of what they call
    /// (default: calicoctl-win-fleet; with --migrate, calicoctl-win-migrate)
    #[arg(long, value_name = "NAME")]
    pub service_account: Option<String>,
    /// Calico's namespace, where the jobs read calico-config
    #[arg(long, value_name = "NS", default_value = "calico-system")]
    pub calico_namespace: String,
    /// With --migrate only: the namespace the operator reads its settings in (its
    /// OPERATOR_NAMESPACE), where the migrate account may get configmaps kubernetes-services-endpoint
    #[arg(
        long,
        value_name = "NS",
        default_value = "tigera-operator",
        requires = "migrate"
    )]
    pub operator_namespace: String,
    /// The API group of Calico's resources the fleet's roles name (as `fleet rbac`)
    #[arg(long, value_enum, default_value = "auto")]
    pub calico_api: CalicoApi,
    /// The Secret that holds the config file (default: calicoctl-win-config; with --migrate,
    /// calicoctl-win-migrate-config)
    #[arg(long, value_name = "NAME")]
    pub config_secret: Option<String>,
    /// How many nodes are changed at once (default 2; 1 with --verify; a migration moves one at
    /// a time)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub concurrency: Option<u32>,
    /// A label the nodes must have besides kubernetes.io/os=windows (repeatable)
    #[arg(long, value_name = "KEY=VALUE")]
    pub node_selector: Vec<String>,
    /// How long a node's drain may take (a migration drains nothing)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse, conflicts_with = "migrate")]
    pub drain_timeout: std::time::Duration,
    /// Evict pods without a controller too
    #[arg(long, conflicts_with = "migrate")]
    pub force: bool,
    /// Evict pods with emptyDir data too (their data is lost)
    #[arg(long, conflicts_with = "migrate")]
    pub delete_emptydir_data: bool,
    /// The Plan's version: the tag of an image named without one (default: this calicoctl-win's)
    #[arg(long, value_name = "VERSION")]
    pub version: Option<String>,
    /// After each node's reconfigure, the Plan's job runs 'verify' for it (in the namespace
    /// calicoctl-win-verify, which the manifests make, with its roles for the jobs' account):
    /// a node that does not pass traffic fails its job, stays cordoned and stops the rollout.
    /// One node at a time unless --concurrency; the job's deadline is the
    /// drain's, reconfigure's and verify's bounds
    #[arg(long, conflicts_with = "migrate")]
    pub verify: bool,
    /// The DaemonSet's pod runs 'verify' for its node this often (off by default; at least
    /// 10m), each node at its own moment of it, and publishes the result in the Node's
    /// condition CalicoWindowsTraffic (Unknown when a run could not judge the node, or the last
    /// True is older than two intervals)
    #[arg(long, value_name = "DURATION", value_parser = verify_every, conflicts_with = "migrate")]
    pub verify_every: Option<std::time::Duration>,
    /// The probe image of --verify and --verify-every (verify's --image): a mirror of agnhost,
    /// for an air-gapped cluster or a Windows build agnhost is not published for (default:
    /// agnhost)
    #[arg(long, value_name = "IMAGE", value_parser = crate::verify::options::image_flag, conflicts_with = "migrate")]
    pub verify_image: Option<String>,
    /// The DaemonSet's pod also gets a container per service log ('kubectl logs POD -c
    /// felix'), copying that log into kubelet's container logs (off by default: see fleet.md)
    #[arg(long, conflicts_with = "migrate")]
    pub log_containers: bool,
    /// Roll a migration instead of a reconfigure: a Plan that runs 'migrate to-operator' or
    /// 'migrate from-operator' on each Windows node, one at a time
    #[arg(long, value_enum, value_name = "WAY")]
    pub migrate: Option<MigrateDirection>,
    /// With --migrate: how long each node waits for its operator pod to come (or to go)
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = crate::duration::parse, requires = "migrate")]
    pub pod_timeout: std::time::Duration,
    /// With --migrate from-operator: the release zip each node installs: an https:// URL, or
    /// its absolute path where every node has it
    #[arg(long, value_name = "URL")]
    pub release_zip: Option<ZipLocation>,
    /// With --migrate from-operator and --release-zip: the zip's SHA-256 checksum
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// With --migrate from-operator: the Calico version each node installs (default: the
    /// cluster's)
    #[arg(long, value_name = "X.Y.Z")]
    pub calico_version: Option<String>,
    /// Also write the headless Service a Prometheus scrapes the DaemonSet's nodes through
    /// (calicoctl-win's and Felix's metrics ports; the config must turn metrics.enabled on)
    #[arg(long, conflicts_with = "migrate")]
    pub metrics_service: bool,
    /// Write the manifests here instead of standard output
    #[arg(long, value_name = "FILE")]
    pub out_file: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct DiagsArgs {
    /// Where to write the zip (default: calicoctl-win-diags-<node>-<UTC time>.zip here)
    #[arg(long, value_name = "FILE")]
    pub out_file: Option<PathBuf>,
    /// Do not read the cluster (status, preflight, config show and the node's versions)
    #[arg(long)]
    pub offline: bool,
    /// How much of the end of each service log to include, in bytes
    #[arg(long, value_name = "BYTES", default_value_t = 1 << 20, value_parser = clap::value_parser!(u64).range(1..=1 << 30))]
    pub log_tail_bytes: u64,
}

/// A log `logs` reads: a service's, or calicoctl-win's own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum LogRole {
    Node,
    Felix,
    Confd,
    KubeProxy,
    #[value(name = crate::layout::OWN_LOG_ROLE)]
    CalicoctlWin,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// The logs to show (default: every one there is)
    #[arg(value_enum, value_name = "ROLE")]
    pub roles: Vec<LogRole>,
    /// Keep reading what is written, across rotations
    #[arg(short, long)]
    pub follow: bool,
    /// Start at lines from this long ago (like 10m, 2h)
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse, conflicts_with = "tail")]
    pub since: Option<std::time::Duration>,
    /// Start this many lines from the end (default: all; with --follow, 100)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=100_000_000))]
    pub tail: Option<u64>,
    /// With --follow and one role: keep the position in FILE (an absolute path, like
    /// C:\log-positions\felix.json) and go on from it when restarted
    #[arg(long, value_name = "FILE", requires = "follow", value_parser = local_path)]
    pub position: Option<String>,
}

#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Debug, Subcommand)]
pub enum FetchCommand {
    /// Write the kubeconfig calico-node uses, with a token for its service account
    #[command(
        long_about = "Requests a token for the calico-node service account through the \
TokenRequest API (--lifetime; the API server may grant less) and writes a kubeconfig with \
it, the API server and the CA, to the config's kubeconfig setting (default \
<install_root>\\calico-kube-config), readable only by SYSTEM and Administrators; the token \
goes to <kubeconfig>.token, which CalicoNode then renews itself. --legacy-secret uses a \
long-lived service-account token secret instead. --refresh-if-expiring-within DURATION \
does nothing while the token is valid for longer.\n\nChanges on the host: writes the token \
file and the kubeconfig (only when their content changes). On the cluster: with \
--legacy-secret, may create the secret. --dry-run changes nothing and requests no token."
    )]
    Kubeconfig(FetchKubeconfigArgs),
    /// Write a short-lived kubeconfig of the installer's service account, to hand a new node
    #[command(
        name = "installer-kubeconfig",
        long_about = "Run once by an admin: requests a token for the installer's service account \
(what 'fleet rbac' makes) that lives --lifetime (at most 24h), and writes a kubeconfig \
with it to --out-file (readable only by its owner), for provisioning to hand a new node \
for 'calicoctl-win install --kubeconfig FILE'. Remove it after the install.\n\nChanges on \
this machine: writes --out-file. In the cluster: nothing (a token is issued)."
    )]
    InstallerKubeconfig(FetchInstallerArgs),
    /// Write the etcd client TLS files from Calico's secret, after checking them against etcd
    #[command(
        name = "etcd-certs",
        long_about = "Reads the secret (--secret, in Calico's namespace) with the keys etcd-key, \
etcd-cert and etcd-ca, checks the PEM, that key and certificate belong together, and that \
every etcd endpoint answers GET /health over mutual TLS within --timeout; only then writes \
<install_root>\\etcd-tls\\server.key, server.crt and ca.crt (readable only by SYSTEM and \
Administrators).\n\nChanges on the host: those three files (only when their content \
changes). --dry-run checks everything and writes nothing."
    )]
    EtcdCerts(FetchEtcdArgs),
    /// Download, verify and extract a Calico for Windows release zip, nothing else
    #[command(
        long_about = "Obtains the release zip as install does (--release-zip FILE or URL, by \
default the official asset of --calico-version, checked against --sha256), extracts it \
safely into --output-dir and reports its layout and version: for preparing an offline \
node.\n\nChanges on this machine: --output-dir gets the zip and a CalicoWindows folder. \
Nothing on the node."
    )]
    Release(FetchReleaseArgs),
}

#[derive(Debug, Args)]
pub struct FetchReleaseArgs {
    #[command(flatten)]
    pub release: ReleaseArgs,
    /// Where the zip and the extracted CalicoWindows folder go
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
}

#[derive(Debug, Args)]
pub struct FetchInstallerArgs {
    /// The installer's service account
    #[arg(long, value_name = "NAME", default_value = "calicoctl-win-installer")]
    pub service_account: String,
    /// Its namespace
    #[arg(long, value_name = "NS", default_value = "kube-system")]
    pub namespace: String,
    /// How long the token lives, at most 24h
    #[arg(long, value_name = "DURATION", default_value = "2h", value_parser = crate::duration::parse)]
    pub lifetime: std::time::Duration,
    /// Where to write the kubeconfig
    #[arg(long, value_name = "FILE")]
    pub out_file: PathBuf,
}

#[derive(Debug, Args)]
pub struct FetchKubeconfigArgs {
    /// The service account whose token calico-node uses
    #[arg(long, value_name = "NAME", default_value = "calico-node")]
    pub service_account: String,
    /// Its namespace (default: calico-system if it exists, else kube-system)
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// How long the token should live, like 8760h or 30d (the server may cap it)
    #[arg(long, value_name = "DURATION", default_value = "1y", value_parser = crate::duration::parse)]
    pub lifetime: std::time::Duration,
    /// Use a long-lived service-account token secret instead of the TokenRequest API
    #[arg(long)]
    pub legacy_secret: bool,
    /// Do nothing while the current kubeconfig's token is valid for longer than DURATION
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    pub refresh_if_expiring_within: Option<std::time::Duration>,
    /// How long to wait for the token controller to fill a new legacy token secret
    #[arg(long, value_name = "DURATION", default_value = "30s", value_parser = crate::duration::parse)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct FetchEtcdArgs {
    /// The secret with the keys etcd-key, etcd-cert and etcd-ca
    #[arg(long, value_name = "NAME", default_value = "calico-etcd-secrets")]
    pub secret: String,
    /// Its namespace (default: calico-system if it exists, else kube-system)
    #[arg(long, value_name = "NS")]
    pub namespace: Option<String>,
    /// How long each etcd endpoint may take to answer GET /health
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    pub timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct RenderArgs {
    /// Directory to write the files into (created if missing)
    #[arg(long, value_name = "DIR")]
    pub output_dir: PathBuf,
    /// Windows build of the node, BUILD or BUILD.UBR, like 17763.1432; decides loopback DSR
    /// (default: the host's)
    #[arg(long, value_name = "BUILD")]
    pub os_build: Option<crate::render::OsBuild>,
    /// The Calico release the files are for, like 3.31.7: the CNI config gets the cniVersion
    /// that release's own template gives (default: Calico's template as calicoctl-win ships it)
    #[arg(long, value_name = "VERSION", value_parser = crate::release::version::CalicoVersion::parse_release)]
    pub calico_version: Option<crate::release::version::CalicoVersion>,
}

#[derive(Debug, Args)]
pub struct PreflightArgs {
    /// Accept a known failure of check ID (repeatable), like --skip os-build
    #[arg(long, value_name = "ID")]
    pub skip: Vec<String>,
    /// Accept one known breakage (an id of the known-issues check, like
    /// confd-bgp-never-in-sync; repeatable; docs/known-issues.md lists them)
    #[arg(long, value_name = "ID")]
    pub allow_known_issue: Vec<String>,
    /// Check only the host; skip the cluster checks
    #[arg(long)]
    pub offline: bool,
    /// Apply the fixes of failed checks: the documented cluster patches for ipip-disabled and
    /// strict-affinity (shown first; asks on a terminal, needs --yes otherwise; --dry-run only
    /// shows them), and for dir-access the protected access list on each directory others may
    /// change (with --offline, only the host's)
    #[arg(long)]
    pub fix: bool,
}

/// `--release-zip` as given: a path, or a URL that may carry a credential (an Azure SAS
/// `sig=`, a token as its user), which its `Debug` redacts (`redact::shown`).
#[derive(Clone, PartialEq, Eq)]
pub struct ZipLocation(String);

impl std::str::FromStr for ZipLocation {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

impl std::ops::Deref for ZipLocation {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for ZipLocation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&crate::redact::shown(&self.0), f)
    }
}

#[derive(Debug, Args)]
pub struct ReleaseArgs {
    /// The release zip: a file, or an https:// URL (default: the official asset of --calico-version)
    #[arg(long, value_name = "PATH|URL")]
    pub release_zip: Option<ZipLocation>,
    /// The Calico version (default: the cluster's, from ClusterInformation; else 3.31.0); a given
    /// zip must be this version
    #[arg(long, value_name = "X.Y.Z")]
    pub calico_version: Option<String>,
    /// The zip's SHA-256 checksum (HEX or sha256:HEX); for a URL, a SHA256SUMS file beside the zip gives it when this is not passed
    #[arg(long, value_name = "HEX")]
    pub sha256: Option<String>,
    /// Download without a checksum (the zip is then trusted as it arrives)
    #[arg(long)]
    pub insecure_skip_checksum: bool,
    /// Allow a plain http:// URL (a mirror on your own network)
    #[arg(long)]
    pub allow_http: bool,
    /// Also trust these CA certificates (PEM) for the download, like a TLS-inspecting proxy's
    #[arg(long, value_name = "FILE")]
    pub release_ca_cert: Option<PathBuf>,
    /// Give up a download that has not finished after this long (what it got is resumed by
    /// the next run)
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = crate::duration::parse)]
    pub download_timeout: std::time::Duration,
    /// Give up a download when nothing arrives for this long (a stalled server or proxy)
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::duration::parse)]
    pub download_idle_timeout: std::time::Duration,
}

#[derive(Debug, Args)]
pub struct InstallArgs {
    #[command(flatten)]
    pub release: ReleaseArgs,
    /// Accept a known failure of preflight check ID (repeatable)
    #[arg(long, value_name = "ID")]
    pub skip: Vec<String>,
    /// Accept one known breakage (an id of the known-issues check, like
    /// confd-bgp-never-in-sync; repeatable; docs/known-issues.md lists them)
    #[arg(long, value_name = "ID")]
    pub allow_known_issue: Vec<String>,
    /// Register the services without starting them
    #[arg(long)]
    pub no_start: bool,
    /// Install a Calico release older than the cluster's (refused without it)
    #[arg(long)]
    pub allow_downgrade: bool,
    /// Remove a legacy NSSM-based Calico install (its services) first
    #[arg(long)]
    pub migrate_legacy: bool,
    /// Taint the node os=windows:NoSchedule, so that only pods tolerating it land here
    #[arg(long)]
    pub taint_windows: bool,
    /// Run as a process of its own that outlives this session (the vSwitch creation can cut a
    /// WinRM or SSH session): log to --log-file or <state dir>\install.log, record the exit
    /// code and the JSON result in <state dir>\install.result.json, and return at once
    #[arg(long)]
    pub detach: bool,
    /// How long to wait for CalicoNode to initialise and the Calico network to appear
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub wait_timeout: std::time::Duration,
    /// How long to wait for a service to stop or start
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::duration::parse)]
    pub service_timeout: std::time::Duration,
    /// Lifetime asked for calico-node's token (the API server may cap it)
    #[arg(long, value_name = "DURATION", default_value = "1y", value_parser = crate::duration::parse)]
    pub token_lifetime: std::time::Duration,
    /// Keep an existing calico-node kubeconfig whose token is valid for longer than this
    #[arg(long, value_name = "DURATION", default_value = "30d", value_parser = crate::duration::parse)]
    pub token_keep_if_valid_for: std::time::Duration,
    #[command(flatten)]
    pub verify: VerifyAfterArgs,
}

/// install's and reconfigure's `--verify`.
#[derive(Debug, Args)]
pub struct VerifyAfterArgs {
    /// After the change, prove this node passes traffic ('calicoctl-win verify' for it, with
    /// the admin kubeconfig): the command fails when it does not (exit 1, 4 on verify's 120 s
    /// timeout), what it changed stays, and the document's 'verify' says what to look at
    #[arg(long)]
    pub verify: bool,
    /// The probe image of --verify: agnhost, or a mirror of it for an air-gapped cluster
    #[arg(long, value_name = "IMAGE", default_value = crate::verify::image::AGNHOST, requires = "verify")]
    pub verify_image: String,
    /// --verify's --timeout (tests)
    #[arg(long, hide = true, value_name = "DURATION", default_value = "120s", requires = "verify", value_parser = crate::verify::options::timeout_flag)]
    pub verify_timeout: std::time::Duration,
}

impl VerifyAfterArgs {
    /// `--verify`'s probe image and timeout, when `--verify` is asked for.
    pub fn with(&self) -> Option<(&str, std::time::Duration)> {
        self.verify
            .then_some((self.verify_image.as_str(), self.verify_timeout))
    }
}

#[derive(Debug, Args)]
pub struct StatusArgs {
    /// Do not read the cluster with the admin kubeconfig (node, FelixConfiguration); whether
    /// the API server takes calico-node's token is still asked, once, with its own kubeconfig
    #[arg(long)]
    pub offline: bool,
    /// Hash every installed file against the install record (without it, a file with its
    /// recorded size and modification time is not hashed again)
    #[arg(long)]
    pub verify: bool,
    /// How long a pod's HNS endpoint may take to attach, and a new endpoint's address to be
    /// claimed by a pod, before it counts as stuck or stale (like 90s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::duration::parse)]
    pub grace: std::time::Duration,
}

/// Who drains the node around a network change.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum DrainBy {
    /// calicoctl-win cordons, drains and uncordons the node
    #[value(name = "self")]
    Itself,
    /// the engine running calicoctl-win did; the node must be cordoned already
    External,
}

#[derive(Debug, Args)]
pub struct ReconfigureArgs {
    /// Accept one known breakage (an id of the known-issues check, like
    /// confd-bgp-never-in-sync; repeatable; docs/known-issues.md lists them)
    #[arg(long, value_name = "ID")]
    pub allow_known_issue: Vec<String>,
    /// Allow a network-immutable change: cordon and drain the node, make the Calico network
    /// again. --drain=external: an engine (system-upgrade-controller, a DaemonSet rollout) has
    /// cordoned and drained the node; it is neither cordoned, drained nor uncordoned here
    #[arg(long, value_enum, value_name = "BY", num_args = 0..=1, require_equals = true, default_missing_value = "self")]
    pub drain: Option<DrainBy>,
    #[command(flatten)]
    pub evict: EvictArgs,
    /// Evict pods with emptyDir volumes too (their data is deleted), as kubectl drain does
    #[arg(long)]
    pub delete_emptydir_data: bool,
    /// Accept a VXLAN VNI other than the cluster's FelixConfiguration vxlanVNI (this node then
    /// cannot reach pods on the other nodes until they change too)
    #[arg(long)]
    pub allow_vni_mismatch: bool,
    /// How long to wait for CalicoNode, the new Calico network and the node to be Ready
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub wait_timeout: std::time::Duration,
    /// How long to wait for a service to stop or start
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::duration::parse)]
    pub service_timeout: std::time::Duration,
    #[command(flatten)]
    pub verify: VerifyAfterArgs,
    /// Before changing the node, take one of the fleet's turns (the Leases NAME-turn-0 ..
    /// in NAMESPACE; fleet plan's DaemonSet passes it), held until the node is healthy again
    #[arg(long, value_name = "NAMESPACE/NAME", value_parser = parse_turn)]
    pub turn: Option<(String, String)>,
    /// With --turn: how many nodes change at once (the fleet's --concurrency)
    #[arg(long, value_name = "N", default_value_t = 1, requires = "turn", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub turns: u32,
    /// With --turn: how long to wait for a turn (then exit 4; the DaemonSet's container
    /// restarts and waits again)
    #[arg(long, value_name = "DURATION", default_value = "24h", requires = "turn", value_parser = crate::duration::parse)]
    pub turn_timeout: std::time::Duration,
    /// The duration of a turn held without renewal (tests)
    #[arg(long, hide = true, value_name = "DURATION", default_value = "60s", value_parser = crate::duration::parse)]
    pub turn_lease: std::time::Duration,
}

/// `--turn NAMESPACE/NAME`: two Kubernetes names.
fn parse_turn(s: &str) -> Result<(String, String), String> {
    match s.split_once('/') {
        Some((ns, name)) if crate::k8s_name::is_label(ns) && crate::k8s_name::is_label(name) => {
            Ok((ns.to_owned(), name.to_owned()))
        }
        _ => Err(
            "give NAMESPACE/NAME, two Kubernetes names (like system-upgrade/calicoctl-win)".into(),
        ),
    }
}

/// How pods are evicted, by a drain's rules (reconfigure's drain, repair).
#[derive(Debug, Args)]
pub struct EvictArgs {
    /// Evict pods without a controller too (nothing recreates them), as kubectl drain --force
    #[arg(long)]
    pub force: bool,
    /// Eviction requests in flight at once (1 to 256)
    #[arg(long, value_name = "N", default_value_t = crate::cluster::drain::DEFAULT_CONCURRENCY as u16, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub drain_concurrency: u16,
    /// How long evictions may be refused (PodDisruptionBudget) and pods take to go
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub drain_timeout: std::time::Duration,
    /// Seconds each evicted pod gets to stop (default: the pod's own grace period)
    #[arg(long, value_name = "SECONDS")]
    pub grace_period: Option<u32>,
}

impl EvictArgs {
    /// The drain's options, with whether pods with emptyDir data may go too.
    pub fn options(&self, delete_emptydir_data: bool) -> crate::cluster::drain::DrainOptions {
        crate::cluster::drain::DrainOptions {
            timeout: self.drain_timeout,
            grace_period: self.grace_period,
            force: self.force,
            delete_emptydir_data,
            concurrency: usize::from(self.drain_concurrency),
        }
    }
}

#[derive(Debug, Args)]
pub struct RepairArgs {
    /// How long a pod's HNS endpoint may take to attach, and a fault must last, before it
    /// counts as stuck or stale (at least 1m; like 90s, 2m)
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::duration::parse)]
    pub grace: std::time::Duration,
    /// Repair even when more than half of the node's pod endpoints are judged at fault (by
    /// default that is taken for a misjudgement and refused)
    #[arg(long)]
    pub allow_majority: bool,
    #[command(flatten)]
    pub evict: EvictArgs,
    /// How long to wait, after the repair, until no endpoint is at fault
    #[arg(long, value_name = "DURATION", default_value = "2m", value_parser = crate::duration::parse)]
    pub wait_timeout: std::time::Duration,
    /// Accepted and ignored, so that scripts written for earlier releases keep working: repair
    /// restarts no service, so it waits for none (hidden from the help).
    #[arg(long, value_name = "DURATION", hide = true, value_parser = crate::duration::parse)]
    pub service_timeout: Option<std::time::Duration>,
}

#[derive(Debug, Args)]
pub struct UninstallArgs {
    /// Also delete the Calico and External HNS networks, restore the routes the vSwitch took,
    /// remove the registry key, the firewall rule and the directories install created
    #[arg(long)]
    pub purge: bool,
    /// Also remove the services' logs (calico-node.log, calico-felix.log, their rotations)
    #[arg(long)]
    pub remove_logs: bool,
    /// Where Calico is installed (default: the config's install_root, else C:\CalicoWindows):
    /// a local absolute path
    #[arg(long, value_name = "DIR", value_parser = local_path)]
    pub install_root: Option<String>,
    /// How long to wait for a service to stop
    #[arg(long, value_name = "DURATION", default_value = "1m", value_parser = crate::duration::parse)]
    pub service_timeout: std::time::Duration,
    /// The cluster is gone: do not contact it; remove everything on the node and list each
    /// cluster object left, with the kubectl command that deletes it
    #[arg(long)]
    pub skip_cluster: bool,
}

#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Print every setting, its effective value and where it came from
    #[command(
        long_about = "Prints every setting with its effective value and its source: flag (--set), \
env NAME, file:LINE, default, or cluster (settings left unset are read from the cluster \
with an admin kubeconfig, unless --offline). Reports every problem at once and exits 2 if \
the configuration is invalid.\n\nChanges on the host: nothing."
    )]
    Show(ShowArgs),
    /// Convert a legacy config.ps1 into calico-windows.yaml
    #[command(
        name = "import-ps1",
        long_about = "Reads a config.ps1 from Calico for Windows (both the Set-EnvVarIfNotSet and \
the $env:X = \"Y\" forms) and writes the equivalent calico-windows.yaml; placeholders are \
left unset, every line not understood is listed, and nothing in the file is \
executed.\n\nChanges on the host: writes --out-file FILE if given (refusing to overwrite \
an existing file without --yes); otherwise prints the YAML."
    )]
    ImportPs1(ImportArgs),
}

#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Do not read the cluster: show only flags, environment, file and defaults
    #[arg(long)]
    pub offline: bool,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// The config.ps1 to read
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Where to write the YAML (default: print it)
    #[arg(long, value_name = "FILE")]
    pub out_file: Option<PathBuf>,
}

/// Whether a command line asks for JSON output, read before clap parses it: a line clap
/// refuses still gets its error as JSON.
pub fn wants_json(args: &[String]) -> bool {
    let mut it = args.iter().skip(1).take_while(|a| *a != "--");
    while let Some(a) = it.next() {
        let value = match a.as_str() {
            "-o" | "--output" | "--output-format" => it.next().map(String::as_str),
            other => other
                .strip_prefix("--output=")
                .or_else(|| other.strip_prefix("--output-format="))
                .or_else(|| other.strip_prefix("-o="))
                .or_else(|| other.strip_prefix("-o")),
        };
        if value == Some("json") {
            return true;
        }
    }
    false
}

/// Every value of `flag` before `--`, as `FLAG VALUE` or `FLAG=VALUE` (`args` without the
/// program): clap keeps a global flag's values at the deepest subcommand only
/// (`--set a=1 preflight --set b=2` would lose `a=1`).
pub fn flag_values(args: impl IntoIterator<Item = std::ffi::OsString>, flag: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut args = args.into_iter();
    let inline = format!("{flag}=");
    while let Some(a) = args.next() {
        let a = a.to_string_lossy();
        if a == "--" {
            break;
        }
        if a == flag {
            if let Some(v) = args.next() {
                out.push(v.to_string_lossy().into_owned());
            }
        } else if let Some(v) = a.strip_prefix(&inline) {
            out.push(v.to_owned());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::wants_json;
    use clap::CommandFactory;

    fn args(s: &str) -> Vec<String> {
        std::iter::once("calicoctl-win")
            .chain(s.split_whitespace())
            .map(str::to_owned)
            .collect()
    }

    #[test]
    fn json_output_is_recognised_in_every_spelling_and_only_there() {
        for yes in [
            "-o json install",
            "install -ojson",
            "status --output json",
            "--output=json status",
            "--output-format json render",
            "--output-format=json render",
        ] {
            assert!(wants_json(&args(yes)), "{yes}");
        }
        for no in [
            "install",
            "-o text install",
            "render --output-dir json",
            "config import-ps1 x.ps1 --out-file json",
            "service run node -- -o json",
        ] {
            assert!(!wants_json(&args(no)), "{no}");
        }
    }

    #[test]
    fn sets_before_and_after_the_command_all_count() {
        let args = [
            "calicoctl-win",
            "--set",
            "a=1",
            "preflight",
            "--set=b=2",
            "--set",
            "c=3",
            "--",
            "--set",
            "d",
        ];
        let sets = super::flag_values(args.iter().skip(1).map(std::ffi::OsString::from), "--set");
        assert_eq!(sets, ["a=1", "b=2", "c=3"]);
    }

    /// The argument structs' `Debug` never shows a `--release-zip` URL's credential.
    #[test]
    fn a_release_zip_credential_is_not_in_the_arguments_debug() {
        use clap::Parser;
        let sas =
            "https://acct.blob.core.windows.net/rel/calico.zip?sv=2022-11-02&sp=r&sig=SASSIGNATURE";
        let token = "https://GHTOKEN@example.com/calico.zip";
        for line in [
            vec!["install", "--release-zip", sas],
            vec!["install", "--release-zip", token],
            vec![
                "fleet",
                "plan",
                "--image",
                "registry.example/calicoctl-win:1",
                "--migrate",
                "from-operator",
                "--release-zip",
                sas,
            ],
        ] {
            let cli =
                super::Cli::try_parse_from(std::iter::once("calicoctl-win").chain(line.clone()))
                    .unwrap_or_else(|e| panic!("{line:?}: {e}"));
            let shown = format!("{cli:?}");
            assert!(shown.contains("calico.zip"), "{line:?}: {shown}");
            for secret in ["SASSIGNATURE", "GHTOKEN"] {
                assert!(!shown.contains(secret), "{line:?}: {shown}");
            }
        }
    }

    #[test]
    fn the_command_line_definition_is_consistent() {
        super::Cli::command().debug_assert();
    }
}

#[derive(Debug, Subcommand)]
pub enum ServiceCommand {
    /// Run one Calico service: under the service control manager, or in the foreground with --console
    #[command(
        long_about = "The body of a Calico Windows service: install registers CalicoNode, \
CalicoFelix and CalicoConfd as 'calicoctl-win.exe service run ROLE --install-root DIR', in \
place of NSSM and Calico's service scripts. node: after a boot makes Calico's HNS networks \
ready (the External network, routes), writes the init-done marker, then runs calico-node \
startup whenever kubelet's process changes. felix and confd: wait for the marker and run \
their program, restarting it on exit. kube-proxy (opt-in, kube_proxy.path): waits for the \
Calico network and runs kube-proxy on it.\n\nThe child's environment is exactly <install \
root>\\calico-<role>.env. Its output and the service's own lines go to <logs \
dir>\\calico-<role>.log, rotated by size and age. On stop the child is asked to stop, then \
killed after --stop-timeout. docs/commands/service-run.md has the details."
    )]
    Run(Box<ServiceRunArgs>),
    /// Keep calico-node's token valid as the node's renewer of last resort (the fleet DaemonSet's container)
    #[command(
        long_about = "Run by the fleet DaemonSet's HostProcess container (fleet plan; after its reconfigure with --engine daemonset): on a node whose kubeconfig (the kubeconfig setting) reads its token from the file install writes beside it, every --every it reads this node's Node with calico-node's token; when the API server refuses that token (401: its ServiceAccount made again, the issuer or signing key changed, the token revoked), it asks the TokenRequest API for a new one with the pod's own service-account token, which kubelet renews, bound to this node's Node, and writes it atomically over calico-node's token file, recorded as CalicoNode records its own renewals. No admin credential is on the node and no service is restarted: Felix, confd and the CNI plugin read the file again. The fleet's account may create only calico-node's token (resourceNames), and the admission policy fleet plan writes admits only a token bound to the caller's own Node."
    )]
    KeepToken(KeepTokenArgs),
}

#[derive(Debug, Args)]
pub struct KeepTokenArgs {
    /// How often calico-node's token is checked
    #[arg(long, value_name = "DURATION", default_value = "20s", value_parser = crate::duration::parse)]
    pub every: std::time::Duration,
    /// Check (and replace) once, then exit
    #[arg(long)]
    pub once: bool,
    /// Also run 'verify' for this node every DURATION, at the node's own moment of it (in
    /// calicoctl-win-verify, with this pod's account), and publish the result in the Node's
    /// condition CalicoWindowsTraffic (with --once: once, at once)
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    pub verify_every: Option<std::time::Duration>,
    /// The probe image of --verify-every's runs (verify's --image; default: agnhost)
    #[arg(long, value_name = "IMAGE", value_parser = crate::verify::options::image_flag, requires = "verify_every")]
    pub verify_image: Option<String>,
}

/// Which service body to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum ServiceRole {
    /// CalicoNode: node start-up and calico-node startup
    Node,
    /// CalicoFelix: the policy agent
    Felix,
    /// CalicoConfd: BGP configuration (windows-bgp)
    Confd,
    /// kube-proxy on Calico's network (kube_proxy.path)
    KubeProxy,
}

#[derive(Debug, Args)]
pub struct ServiceRunArgs {
    #[arg(value_enum)]
    pub role: ServiceRole,
    /// Run in the foreground, the log also on stderr, until Ctrl-C; without it the service control manager must have started the process
    #[arg(long)]
    pub console: bool,
    /// Where Calico is installed: the Calico binary, calico-<role>.env, external-network.json
    #[arg(long, value_name = "DIR", default_value = r"C:\CalicoWindows")]
    pub install_root: String,
    /// Rotate the log when it would grow past this size (like 10MB, 512KB)
    #[arg(long, value_name = "SIZE", default_value = "10MB", value_parser = crate::supervise::parse_size)]
    pub log_max_size: u64,
    /// Rotate the log when it is this old
    #[arg(long, value_name = "DURATION", default_value = "1d", value_parser = crate::duration::parse)]
    pub log_rotate_every: std::time::Duration,
    /// How many rotated logs to keep
    #[arg(long, value_name = "N", default_value_t = 10)]
    pub log_keep: usize,
    /// How long a stopping child gets before it is killed
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = crate::duration::parse)]
    pub stop_timeout: std::time::Duration,
    /// felix and confd: warn when CalicoNode has not initialised after this long (they keep waiting)
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub init_timeout: std::time::Duration,
    /// node: give up on HNS (old networks gone, External created, its management IP) after this long
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub network_timeout: std::time::Duration,
    /// node: stop one calico-node startup run that takes longer than this, and try again
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = crate::duration::parse)]
    pub startup_timeout: std::time::Duration,
    /// node: after a boot delete every non-NAT HNS network, as Calico's scripts did, not only Calico's own
    #[arg(long)]
    pub delete_all_non_nat_networks: bool,
    /// EC2 metadata service base URL (tests point it at loopback)
    #[arg(long, hide = true, default_value = "http://169.254.169.254")]
    pub ec2_metadata_url: String,
    /// GCE metadata server base URL
    #[arg(long, hide = true, default_value = "http://metadata.google.internal")]
    pub gce_metadata_url: String,
    /// Run this program instead of the installed Calico binary (tests)
    #[arg(long, hide = true, value_name = "PATH")]
    pub program: Option<String>,
    /// The installed Calico release, which decides how its binary is started (-complete-startup
    /// from 3.31, calico.exe from 3.33); install sets it
    #[arg(long, value_name = "X.Y.Z", value_parser = crate::release::CalicoVersion::parse_release)]
    pub calico_version: Option<crate::release::CalicoVersion>,
    /// The cloud (node.platform; install sets it unless it is auto): without it CalicoNode
    /// probes the EC2 and GCE metadata services
    #[arg(long, value_name = "PLATFORM", default_value = "auto", value_parser = |s: &str| <crate::config::types::PlatformChoice as crate::config::types::Setting>::parse(s))]
    pub platform: crate::config::types::PlatformChoice,
    /// Serve calicoctl-win's metrics on this TCP port (metrics.enabled; install sets it)
    #[arg(long, value_name = "PORT")]
    pub metrics_port: Option<u16>,
    /// Answer GET /diags on the metrics port with the node's redacted diags zip (metrics.diags;
    /// install sets it)
    #[arg(long, requires = "metrics_port")]
    pub diags: bool,
    /// The namespace of the ServiceAccount calicoctl-win-diags whose tokens GET /diags takes
    /// (metrics.diags_namespace; install sets it)
    #[arg(long, value_name = "NS", default_value = crate::config::DIAGS_NAMESPACE, value_parser = namespace_arg)]
    pub diags_namespace: String,
}

/// A namespace's name (a DNS-1123 label), refused with why otherwise.
fn namespace_arg(raw: &str) -> Result<String, String> {
    crate::k8s_name::is_label(raw)
        .then(|| raw.to_owned())
        .ok_or_else(|| "a namespace's name: a-z, 0-9 and '-', at most 63 characters".into())
}

/// A local absolute Windows path, refused with why otherwise (`config::types::WinPath`'s rule).
fn local_path(raw: &str) -> Result<String, String> {
    match crate::config::types::local_path_problem(raw) {
        None => Ok(raw.to_owned()),
        Some(why) => Err(why),
    }
}

/// Instead of clap's nearest spelling (`--log-file` for `--offline`), a tip for a flag this
/// command lacks: the setting it names (`--vni 4097` is `--set vxlan.vni=4097`, its value
/// taken from `args`), or the commands that have it.
pub fn unknown_flag_tip(flag: &str, args: &[String]) -> Option<String> {
    use clap::CommandFactory;
    let (name, inline) = match flag.trim_start_matches('-').split_once('=') {
        Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
        None => (flag.trim_start_matches('-').to_owned(), None),
    };
    if name.is_empty() {
        return None;
    }
    let value = inline.or_else(|| {
        let prefix = format!("{flag}=");
        args.iter()
            .find_map(|a| a.strip_prefix(&prefix).map(str::to_owned))
    });
    let value = value.or_else(|| {
        args.iter()
            .skip_while(|a| a.as_str() != flag)
            .nth(1)
            .filter(|v| !v.starts_with('-'))
            .cloned()
    });
    let dashed = |k: &str| k.replace(['.', '_'], "-");
    let setting = crate::config::spec::SETTINGS
        .iter()
        .map(|s| s.key)
        .find(|k| dashed(k) == name)
        .or_else(|| {
            let mut ends = crate::config::spec::SETTINGS
                .iter()
                .map(|s| s.key)
                .filter(|k| dashed(k).ends_with(&format!("-{name}")));
            let one = ends.next()?;
            ends.next().is_none().then_some(one)
        });
    if let Some(key) = setting {
        return Some(format!(
            "settings are given with --set: --set {key}={} (or in the config file)",
            value.as_deref().unwrap_or("VALUE")
        ));
    }
    let mut cli = Cli::command();
    cli.build();
    let mut have = Vec::new();
    fn walk(c: &clap::Command, path: &str, name: &str, have: &mut Vec<String>) {
        for s in c.get_subcommands() {
            let p = format!(
                "{path}{}{}",
                if path.is_empty() { "" } else { " " },
                s.get_name()
            );
            if s.get_arguments()
                .any(|a| a.get_long() == Some(name) && !a.is_global_set())
            {
                have.push(p.clone());
            }
            walk(s, &p, name, have);
        }
    }
    walk(&cli, "", &name, &mut have);
    have.dedup();
    (!have.is_empty()).then(|| format!("--{name} is a flag of: {}", have.join(", ")))
}

/// `--verify-every`: at least 10 minutes (a run takes up to 120 s; the nodes share a namespace).
fn verify_every(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::duration::parse(s)?;
    if d < std::time::Duration::from_secs(600) {
        return Err(format!("{s} is shorter than 10m"));
    }
    Ok(d)
}
