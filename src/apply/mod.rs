//! The engine that runs any plan: the `Action` type and how each is shown, the executor and
//! its journal, undo and rollback, the snapshot a rollback is compared with, the ready wait.

pub mod detached;
pub mod exec;
pub mod journal;
mod ready;
pub mod snapshot;
mod snapshot_diff;
pub mod undo;

pub use exec::{ExecError, Progress, execute};
pub use ready::ReadyError;

/// How to run a plan.
pub struct Options<'a> {
    pub command: &'static str,
    pub journal_path: String,
    /// Roll back on failure (install) or stop and keep what is done (uninstall).
    pub rollback: bool,
    pub stop_timeout: std::time::Duration,
    pub start_timeout: std::time::Duration,
    /// The journal of an interrupted run, continued by this one.
    pub previous: Option<journal::Journal>,
    pub routes_before: Vec<crate::host::Route>,
    pub record: Option<crate::installed::record::InstallRecord>,
    /// The services' logs directory: a rollback that removes the directory holding it also
    /// removes the logs the started services wrote there.
    pub logs_dir: Option<String>,
    pub now: i64,
    /// The cluster, for plans that cordon, drain or wait for the node.
    pub cluster: Option<&'a crate::cluster::Cluster>,
    /// Asked just before each HNS endpoint is deleted, with its id: why it is kept after all
    /// (no longer at fault on a new look), or `None` to delete it.
    pub recheck: Option<&'a Recheck<'a>>,
    /// The command's stop (Ctrl-C), which ends the cluster steps' waits and the run before its
    /// next step; never requested unless the command catches the signal.
    pub stop: crate::duration::Stop,
}

/// A look at one endpoint again before it is deleted (`Options::recheck`).
pub type Recheck<'a> = dyn Fn(&str) -> anyhow::Result<Option<String>> + 'a;

impl<'a> Options<'a> {
    /// How a command runs a plan that changes an installed node (no install record, routes
    /// or logs directory of its own to keep): `rollback` on failure or not, services stopped
    /// and started within `service_timeout`, continuing `previous`.
    pub fn for_change(
        command: &'static str,
        journal_path: String,
        rollback: bool,
        service_timeout: std::time::Duration,
        previous: Option<journal::Journal>,
        cluster: Option<&'a crate::cluster::Cluster>,
    ) -> Self {
        Self {
            command,
            journal_path,
            rollback,
            stop_timeout: service_timeout,
            start_timeout: service_timeout,
            previous,
            routes_before: Vec::new(),
            record: None,
            logs_dir: None,
            now: crate::duration::now(),
            cluster,
            recheck: None,
            stop: crate::duration::Stop::never(),
        }
    }

    /// The cluster, for a step that needs it.
    pub fn cluster(&self) -> anyhow::Result<&'a crate::cluster::Cluster> {
        self.cluster.ok_or_else(|| {
            anyhow::anyhow!("this step needs the cluster, and no admin kubeconfig was given")
        })
    }
}

use crate::host::{FirewallRule, RegValue, Route, ServiceSpec};
use crate::k8s_name::NodeName;
use serde::Serialize;
use std::path::PathBuf;
use std::time::Duration;

/// Where a file's bytes come from. `Debug` shows the size of rendered bytes, never the bytes:
/// they can be a kubeconfig with its token.
#[derive(Clone, Default)]
pub enum Content {
    /// Rendered in memory.
    Bytes(Vec<u8>),
    /// A file on this machine (calicoctl-win itself, a release a dry run extracted).
    Local(PathBuf),
    /// A file on the node (the release staged under the install root's cache), copied with
    /// the host's own copy.
    OnNode(String),
    /// Known only once the release is downloaded (a dry run without the zip).
    #[default]
    Pending,
}

/// One change to the host.
#[derive(Clone, Debug, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Action {
    StopService {
        name: String,
    },
    StartService {
        name: String,
    },
    /// Deletes a registered service; `restore` re-registers it if the plan is rolled back.
    DeleteService {
        name: String,
        #[serde(skip)]
        restore: Option<ServiceSpec>,
    },
    CreateService {
        spec: ServiceSpec,
    },
    UpdateService {
        spec: ServiceSpec,
        changes: Vec<String>,
        #[serde(skip)]
        old: Option<ServiceSpec>,
    },
    WriteFile {
        path: String,
        /// What the file is: `rendered`, `credentials`, `release CalicoWindows\cni\calico.exe` ...
        from: String,
        /// `None` until the release is downloaded.
        sha256: Option<String>,
        secret: bool,
        /// Whether a file is there already (with other contents or access).
        replaces: bool,
        /// Who else may change the file there now (its owner, an entry of its access list):
        /// a file with the right bytes is written anew, never kept with a planted owner.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        foreign: Vec<String>,
        #[serde(skip)]
        content: Content,
    },
    RemoveFile {
        path: String,
    },
    /// A secret file whose contents are right but whose access is not: restricted again,
    /// with nothing restarted.
    RestrictFile {
        path: String,
    },
    SetRegistryValue {
        key: String,
        name: String,
        value: RegValue,
    },
    DeleteRegistryKey {
        key: String,
    },
    DeleteRegistryValue {
        key: String,
        name: String,
    },
    AddFirewallRule {
        rule: FirewallRule,
    },
    /// Removes the rule of this name while it is `made` alone under it (`firewall::ours`;
    /// `None`: a rule an older journal named only), else keeps it, with a warning.
    RemoveFirewallRule {
        name: String,
        made: Option<FirewallRule>,
    },
    DeleteNetwork {
        id: String,
        name: String,
    },
    /// Adds the routes of this list that are missing (the vSwitch took them).
    RestoreRoutes {
        routes: Vec<Route>,
        /// The addresses when the routes were recorded, to find where a route goes whose
        /// interface is gone (`routes::place`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        addresses: Vec<crate::host::InterfaceAddress>,
    },
    /// Waits until CalicoNode reports initialisation done and these HNS networks exist (the
    /// Calico network with this VSID, when one is given).
    WaitReady {
        networks: Vec<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        vsid: Option<u32>,
        /// Routes the node must have again (the cloud metadata route it had before).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        routes: Vec<Route>,
        /// The CNI config, which CalicoNode withholds after a boot until calico-node startup
        /// has finished: ready means it is back.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cni_config: Option<String>,
        #[serde(serialize_with = "crate::duration::text::serialize")]
        timeout: Duration,
    },
    /// Marks the node unschedulable.
    Cordon {
        node: NodeName,
    },
    /// Evicts the node's pods (not DaemonSet or mirror pods) and waits until they are gone.
    Drain {
        node: NodeName,
        /// The pods that would be evicted when the plan was made.
        evict: Vec<String>,
        /// DaemonSet and mirror pods, which stay.
        skipped: Vec<String>,
        #[serde(flatten)]
        options: crate::cluster::drain::DrainOptions,
    },
    /// Waits until the node reports Ready.
    WaitNodeReady {
        node: NodeName,
        #[serde(serialize_with = "crate::duration::text::serialize")]
        timeout: Duration,
    },
    /// Marks the node schedulable again.
    Uncordon {
        node: NodeName,
    },
    /// A JSON merge patch of the operator's Installation `default`, or of its `overlay` where
    /// that sets the field (`migrate`).
    PatchInstallation {
        /// What it changes, for people.
        what: String,
        /// `default` or `overlay`.
        name: String,
        patch: serde_json::Value,
        /// The patch that puts back what this one changes, when a rollback should.
        #[serde(skip)]
        restore: Option<serde_json::Value>,
    },
    /// Sets calicoctl-win's node label (`cluster::operator::LABEL`), or removes it (`None`):
    /// the operator's DaemonSet keeps off labelled nodes.
    SetNodeLabel {
        node: NodeName,
        value: Option<String>,
    },
    /// Waits until the operator's `calico-node-windows` pod on the node is running and ready,
    /// or gone.
    WaitOperatorPod {
        node: NodeName,
        want: crate::cluster::operator::Want,
        #[serde(serialize_with = "crate::duration::text::serialize")]
        timeout: Duration,
    },
    /// The node's `NetworkUnavailable` condition False, as calico-node sets it when it runs.
    ClearNetworkUnavailable {
        node: NodeName,
    },
    /// Sets (or removes) the node annotation that says `migrate` cordoned the node
    /// (`cluster::operator::CORDONED_ANNOTATION`): set just before its cordon, removed just
    /// after its uncordon, so that it is never there without the cordon it marks.
    MarkCordoned {
        node: NodeName,
        on: bool,
    },
    /// Waits until the operator has rendered its `calico-node-windows` DaemonSet, that
    /// DaemonSet's placement would take this node once calicoctl-win's label is off, and its
    /// TigeraStatus `calico` is not Degraded.
    WaitOperatorDaemonSet {
        node: NodeName,
        #[serde(serialize_with = "crate::duration::text::serialize")]
        timeout: Duration,
    },
    /// Deletes the Role and RoleBinding that let this node's CalicoNode renew calico-node's
    /// token (one that is gone already is skipped).
    RemoveRenewalGrant {
        namespace: String,
        name: String,
        /// The uids install recorded (`renewal::Grant::uids`): only those objects go.
        #[serde(
            default,
            skip_serializing_if = "crate::cluster::renewal::GrantUids::is_empty"
        )]
        uids: crate::cluster::renewal::GrantUids,
        /// Whether `uids` names all that is ours (`renewal::Grant::uids_kept`); false in
        /// journals of older versions, whose grant the label alone tells.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        uids_kept: bool,
    },
    /// The node no longer says calicoctl-win runs Calico there: its `calicoctl-win/*`
    /// annotations removed and `CalicoWindowsReady` False, for the reason `left` says
    /// (`HandedToOperator`, or `NotInstalled` after uninstall).
    ForgetNode {
        node: NodeName,
        /// Not shown for `migrate to-operator`'s, whose document had no reason.
        #[serde(skip_serializing_if = "crate::cluster::node::Left::is_handed_to_operator")]
        left: crate::cluster::node::Left,
    },
    /// After the Calico network was made again: evicts the node's DaemonSet pods that have a
    /// network of their own (a drain leaves them, as `kubectl drain` does, and the network
    /// under them is gone), so that their DaemonSets make them again on the new network; waits
    /// until they are gone.
    #[serde(rename = "recreate-daemonset-pods")]
    RecreateDaemonSetPods {
        node: NodeName,
        #[serde(flatten)]
        options: crate::cluster::drain::DrainOptions,
    },
    /// Evicts these pods of the node through the Eviction API, as a drain does (their
    /// PodDisruptionBudgets honoured), and waits until they are gone; a pod that is gone
    /// already is skipped.
    EvictPods {
        node: NodeName,
        /// `namespace/name`.
        pods: Vec<String>,
        #[serde(flatten)]
        options: crate::cluster::drain::DrainOptions,
    },
    /// Deletes one HNS endpoint, taken out of the HCN namespace it is still in first (as
    /// containerd does: hcsshim `RemoveNamespaceEndpoint`); one that is gone already is skipped.
    DeleteEndpoint {
        id: String,
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        ip: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        namespace: Option<String>,
        /// Why it goes: its verdict and the reason.
        why: String,
    },
    /// Removes a directory if it is empty.
    RemoveDir {
        path: String,
    },
    /// Makes a directory whose files run as SYSTEM (when missing) and gives it the protected
    /// access list (`host::acl::PROTECTED_DIR`): only SYSTEM and Administrators may change it.
    ProtectDir {
        path: String,
        /// Who else could change it, as found (empty when it is made now).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        writers: Vec<String>,
    },
    /// Gives a directory back the owner and access list it had before install (uninstall).
    RestoreSecurity {
        path: String,
        sddl: String,
    },
}

impl std::fmt::Debug for Content {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Bytes(b) => write!(f, "Bytes({} bytes)", b.len()),
            Self::Local(p) => f.debug_tuple("Local").field(p).finish(),
            Self::OnNode(p) => f.debug_tuple("OnNode").field(p).finish(),
            Self::Pending => f.write_str("Pending"),
        }
    }
}

impl Action {
    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Self::StopService { name } => format!("stop service {name}"),
            Self::StartService { name } => format!("start service {name}"),
            Self::DeleteService { name, .. } => format!("delete service {name}"),
            Self::CreateService { spec } => format!(
                "register service {} ({}): {}{}",
                spec.name,
                spec.display_name,
                spec.command_line(),
                if spec.dependencies.is_empty() {
                    String::new()
                } else {
                    format!(", after {}", spec.dependencies.join(", "))
                }
            ),
            Self::UpdateService { spec, changes, .. } => {
                format!("reconfigure service {} ({})", spec.name, changes.join(", "))
            }
            Self::WriteFile { .. } => write_text(self),
            Self::RemoveFile { path } => format!("remove {path}"),
            Self::RestrictFile { path } => format!(
                "restrict {path} to SYSTEM and Administrators again (its contents are right)"
            ),
            Self::SetRegistryValue { key, name, value } => {
                format!("set {key}\\{name} = {}", show_reg(value))
            }
            Self::DeleteRegistryKey { key } => format!("delete registry key {key}"),
            Self::DeleteRegistryValue { key, name } => {
                format!("delete registry value {key}\\{name}")
            }
            Self::AddFirewallRule { rule } => adding(rule),
            Self::RemoveFirewallRule { name, .. } => format!("remove firewall rule \"{name}\""),
            Self::DeleteNetwork { id, name } => format!("delete HNS network {name} ({id})"),
            Self::RestoreRoutes { routes, .. } => format!(
                "restore the routes the vSwitch took: {}",
                routes
                    .iter()
                    .map(|r| format!("{}/{} via {}", r.destination, r.prefix_len, r.next_hop))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::WaitReady {
                networks,
                vsid,
                routes,
                timeout,
                ..
            } => wait_ready_text(networks, *vsid, routes, *timeout),
            Self::Cordon { node } => format!("cordon node {node}"),
            Self::Drain {
                node,
                evict,
                skipped,
                options,
            } => drain_text(node, evict, skipped, options),
            Self::WaitNodeReady { node, timeout } => format!(
                "wait up to {} for node {node} to be Ready",
                crate::duration::show(*timeout)
            ),
            Self::Uncordon { node } => format!("uncordon node {node}"),

            Self::EvictPods { .. } | Self::DeleteEndpoint { .. } => repair_text(self),
            Self::RecreateDaemonSetPods { node, options } => format!(
                "evict node {node}'s DaemonSet pods with a pod network, so their DaemonSets make them again on the new network (wait up to {})",
                crate::duration::show(options.timeout)
            ),
            Self::RemoveDir { path } => format!("remove {path} if empty"),
            Self::ProtectDir { path, writers } => protect_text(path, writers),
            Self::RestoreSecurity { path, .. } => {
                format!("give {path} back the access list it had before install")
            }
            _ => operator_text(self),
        }
    }
}

/// `Action::describe` of migrate's actions.
fn operator_text(action: &Action) -> String {
    use crate::cluster::operator::{DAEMONSET, LABEL, Want};
    match action {
        Action::PatchInstallation { what, name, .. } => {
            format!("patch the operator's Installation {name}: {what}")
        }
        Action::SetNodeLabel {
            node,
            value: Some(v),
        } => format!("label node {node} {LABEL}={v}"),
        Action::SetNodeLabel { node, value: None } => format!(
            "remove label {LABEL} from node {node}, so that the operator's {DAEMONSET} DaemonSet runs there"
        ),
        Action::WaitOperatorPod {
            node,
            want,
            timeout,
        } => format!(
            "wait up to {} for the operator's {DAEMONSET} pod on node {node} to be {}",
            crate::duration::show(*timeout),
            match want {
                Want::Ready => "running and ready",
                Want::Gone => "gone",
            }
        ),
        Action::ClearNetworkUnavailable { node } => format!(
            "set node {node}'s NetworkUnavailable condition False (the operator pod's preStop set it True)"
        ),
        Action::MarkCordoned { node, on: true } => format!(
            "annotate node {node} {}=true: this migration cordons it, and the run that finishes it uncordons it",
            crate::cluster::operator::CORDONED_ANNOTATION
        ),
        Action::MarkCordoned { node, on: false } => format!(
            "remove annotation {} from node {node}",
            crate::cluster::operator::CORDONED_ANNOTATION
        ),
        Action::WaitOperatorDaemonSet { node, timeout } => format!(
            "wait up to {} for the operator to render its {DAEMONSET} DaemonSet for node {node} (TigeraStatus calico not Degraded)",
            crate::duration::show(*timeout)
        ),
        Action::RemoveRenewalGrant {
            namespace, name, ..
        } => format!(
            "delete Role and RoleBinding {name} in {namespace} (CalicoNode's grant to renew calico-node's token)"
        ),
        Action::ForgetNode { node, left } => format!(
            "remove node {node}'s calicoctl-win annotations and set its CalicoWindowsReady condition False ({})",
            left.reason().0
        ),
        other => format!("{other:?}"),
    }
}

/// `Action::describe` of repair's actions.
fn repair_text(action: &Action) -> String {
    match action {
        Action::EvictPods {
            node,
            pods,
            options,
        } => format!(
            "evict pod(s) {} from node {node} and wait up to {} until they are gone",
            pods.join(", "),
            crate::duration::show(options.timeout)
        ),
        Action::DeleteEndpoint {
            id,
            name,
            ip,
            namespace,
            why,
        } => format!(
            "{}delete HNS endpoint {name} ({}, {id}): {why}",
            namespace.as_deref().map_or(String::new(), |n| format!(
                "take it out of namespace {n} and "
            )),
            ip.as_deref().unwrap_or("no address")
        ),
        _ => String::new(),
    }
}

/// `Action::describe` of a `WriteFile`.
fn write_text(action: &Action) -> String {
    let Action::WriteFile {
        path,
        from,
        sha256,
        secret,
        replaces,
        foreign,
        ..
    } = action
    else {
        return String::new();
    };
    let (secret, replaces) = (*secret, *replaces);
    let verb = if replaces { "replace" } else { "write" };
    let hash = sha256
        .as_deref()
        .map_or("contents known once fetched".to_owned(), |h| {
            format!("sha256 {}", &h[..12.min(h.len())])
        });
    let secret = if secret {
        ", SYSTEM and Administrators only"
    } else {
        ""
    };
    let text = format!("{verb} {path} ({from}, {hash}{secret})");
    if foreign.is_empty() {
        return text;
    }
    format!(
        "{text}: its bytes are right but {}, so it is written anew",
        foreign.join("; ")
    )
}

/// `Action::describe` of a `ProtectDir`.
fn protect_text(path: &str, writers: &[String]) -> String {
    let now = match writers {
        [] => "Users read and run".to_owned(),
        some => format!("now {}", some.join("; ")),
    };
    format!("protect {path}: only SYSTEM and Administrators may change it ({now})")
}

/// `Action::describe` of a `WaitReady`.
fn wait_ready_text(
    networks: &[String],
    vsid: Option<u32>,
    routes: &[Route],
    timeout: Duration,
) -> String {
    let plural = |n: usize| if n == 1 { "" } else { "s" };
    let routes = if routes.is_empty() {
        String::new()
    } else {
        format!(
            ", and the route{} to {} again",
            plural(routes.len()),
            routes
                .iter()
                .map(|r| format!("{}/{}", r.destination, r.prefix_len))
                .collect::<Vec<_>>()
                .join(", ")
        )
    };
    format!(
        "wait up to {} for CalicoNode to initialise and HNS network{} {} to exist{}{routes}",
        crate::duration::show(timeout),
        plural(networks.len()),
        networks.join(", "),
        vsid.map(|v| format!(" (Calico with VSID {v})"))
            .unwrap_or_default(),
    )
}

/// `Action::describe` of a `Drain`.
fn drain_text(
    node: &NodeName,
    evict: &[String],
    skipped: &[String],
    options: &crate::cluster::drain::DrainOptions,
) -> String {
    let what = if evict.is_empty() {
        "no pods to evict now".to_owned()
    } else {
        format!("evict {} pod(s): {}", evict.len(), evict.join(", "))
    };
    let kept = if skipped.is_empty() {
        String::new()
    } else {
        format!("; DaemonSet and mirror pods stay: {}", skipped.join(", "))
    };
    format!(
        "drain node {node} ({what}{kept}); wait up to {} for them to go",
        crate::duration::show(options.timeout)
    )
}

fn show_reg(v: &RegValue) -> String {
    match v {
        RegValue::Sz(s) | RegValue::ExpandSz(s) => format!("\"{s}\""),
        RegValue::Dword(d) => d.to_string(),
        RegValue::MultiSz(v) => format!("{v:?}"),
    }
}

/// One action as a changing command's document shows it: its fields, then its place in the
/// plan (from 1) and its line for people.
#[derive(Debug, Serialize)]
pub struct Shown {
    #[serde(flatten)]
    pub action: Action,
    pub index: usize,
    pub description: String,
}

/// The plan as printed: one [`Shown`] per action.
pub fn shown(actions: &[Action]) -> Vec<Shown> {
    let each = |(i, a): (usize, &Action)| Shown {
        action: a.clone(),
        index: i + 1,
        description: a.describe(),
    };
    actions.iter().enumerate().map(each).collect()
}

/// An added firewall rule in words, with the sources it admits when it is scoped.
fn adding(rule: &crate::host::FirewallRule) -> String {
    let from = match rule.remote_addresses.as_slice() {
        [] => String::new(),
        some => format!(" from {}", some.join(", ")),
    };
    format!(
        "add firewall rule \"{}\" allowing inbound {:?} {}{from}",
        rule.name, rule.protocol, rule.local_port
    )
    .replace("Udp", "UDP")
    .replace("Tcp", "TCP")
}

#[cfg(test)]
mod rule_tests;
#[cfg(test)]
mod tests;
