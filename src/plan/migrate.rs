//! `migrate`: a node handed to the operator's HostProcess install (`to-operator`), or taken
//! back from it (`from-operator`), one node at a time, with the HNS networks and every pod's
//! endpoint kept. What would break the node is refused first, each reason with its fix.
//!
//! The refusals follow what the operator's scripts do to a node (projectcalico/calico v3.32.1,
//! `node/windows-packaging/CalicoWindows`): `node/node-service.ps1` deletes every non-NAT HNS
//! network when `LastBootTime` is not SYSTEM's `Get-LastBootTime` (`installed::boot_marker`);
//! `uninstall-calico-hpc.ps1` deletes the services, a `kube-proxy` one included; the CNI
//! plugin reuses a network named `Calico` whatever its VSID (`dataplane_windows.go`); the
//! operator's CNI directories (tigera/operator release-v1.44 `pkg/render/windows.go`) may not
//! be containerd's.

use crate::apply::Action;
use crate::cluster::operator::{self, CniDirs, Installation, LABEL_VALUE, Want};
use crate::host::{HnsNetwork, Host, HostResult, RegValue};
use crate::installed::boot_marker::Culture;
use crate::k8s_name::NodeName;
use crate::layout::{BOOT_ID_VALUE, CALICO_KEY, CALICO_NETWORK, LEGACY_BOOT_VALUE};
use std::time::Duration;

/// One reason a migration would break the node, with what fixes it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Refusal {
    /// A stable name (`vni`, `kube-proxy-service`, `boot-marker`, ...).
    pub code: &'static str,
    pub message: String,
    pub fix: String,
}

/// The migration was refused; nothing was changed.
#[derive(Debug, thiserror::Error)]
#[error("migrate {direction} refused: {}", .reasons.iter().map(|r| r.message.as_str()).collect::<Vec<_>>().join("; "))]
pub struct Refused {
    pub direction: &'static str,
    pub reasons: Vec<Refusal>,
}

impl crate::error::Diagnose for Refused {
    fn diagnose(&self) -> Option<crate::error::Diagnosis> {
        crate::error::Diagnosis::new(
            crate::error::Exit::Preflight,
            crate::error::Kind::MigrationRefused,
            self.reasons
                .iter()
                .map(|r| r.fix.as_str())
                .collect::<Vec<_>>()
                .join("; "),
        )
    }
}

/// What both directions judge the node by.
pub struct Facts<'a> {
    pub node: &'a crate::k8s_name::NodeName,
    pub installation: Option<&'a Installation>,
    /// The VNI the cluster's Felix uses.
    pub cluster_vni: u32,
    pub networks: &'a [HnsNetwork],
    /// SYSTEM's culture, or why it cannot be known.
    pub culture: &'a Result<Culture, String>,
    /// This boot on the local wall clock: unmoved by clock steps, and as Windows reports it
    /// now (moved by every step since the boot: what node-service.ps1 formats and compares).
    pub boot_local_seconds: Option<i64>,
    pub boot_local_reported: Option<i64>,
    /// The reported boot by the time zone's rule for its date (`SystemFacts`).
    pub boot_local_dated: Option<i64>,
    /// Whether a service named `kube-proxy` is registered on the host.
    pub kube_proxy_service: bool,
    /// calicoctl-win's CNI directories (its config's: containerd's, which preflight's
    /// `cni-dirs` check compares).
    pub cni: &'a CniDirs,
}

impl Facts<'_> {
    /// The boot time as the operator's node-service.ps1 formats it now
    /// (`LastBootUpTime.ToString("G")`: the boot as Windows reports it, moved by each clock
    /// step since), or why it cannot be.
    pub fn operator_marker(&self) -> Result<String, String> {
        self.marker_of(self.boot_local_reported.or(self.boot_local_seconds))
    }

    /// This boot in SYSTEM's "G", from one reading of it.
    fn marker_of(&self, local: Option<i64>) -> Result<String, String> {
        let culture = self.culture.as_ref().map_err(Clone::clone)?;
        culture.general(local.ok_or("the host did not say when it booted")?)
    }

    /// Whether a stored `LastBootTime` says this boot: as Windows reports it now, or as it
    /// was before any clock step (the operator wrote it when its pod started; a step since
    /// then moved the reported boot, not the boot).
    pub fn is_this_boot(&self, stored: &str) -> bool {
        [
            self.boot_local_reported,
            self.boot_local_seconds,
            self.boot_local_dated,
        ]
        .into_iter()
        .filter_map(|l| self.marker_of(l).ok())
        .any(|m| m == stored)
    }

    fn no_installation(&self) -> Option<Refusal> {
        let Some(inst) = self.installation else {
            return Some(Refusal {
                code: "no-installation",
                message: "the cluster has no operator Installation named default".into(),
                fix: "install the Tigera operator and its Installation first (calicoctl-win migrates nodes between itself and an operator that runs Calico on the cluster)".into(),
            });
        };
        inst.overlay_unreadable.as_ref().map(|why| Refusal {
            code: "installation-overlay",
            message: format!(
                "the operator's Installation overlay, whose fields override default's, cannot be read ({why}), so where the operator runs is not known"
            ),
            fix: "let the identity get installations.operator.tigera.io named overlay: apply the roles 'calicoctl-win fleet rbac' (or 'fleet plan') writes now, or use an admin kubeconfig".into(),
        })
    }

    fn vni(&self) -> Option<Refusal> {
        let vsid = self
            .networks
            .iter()
            .find(|n| n.name == CALICO_NETWORK)
            .and_then(HnsNetwork::vsid)?;
        (vsid != self.cluster_vni).then(|| Refusal {
            code: "vni",
            message: format!(
                "the HNS network {CALICO_NETWORK} has VSID {vsid}, not the cluster's VXLAN VNI {}, and the operator's CNI plugin reuses the network without comparing",
                self.cluster_vni
            ),
            fix: format!(
                "make the network again with the cluster's VNI first: 'calicoctl-win reconfigure --set vxlan.vni={} --drain'",
                self.cluster_vni
            ),
        })
    }

    /// The operator's CNI directories are not calicoctl-win's: the one side's CNI config
    /// would go where containerd does not read it, and the node would make no new pod's
    /// network.
    fn cni_dirs(&self, to_operator: bool) -> Option<Refusal> {
        let inst = self.installation?;
        // With Windows off, to-operator writes containerd's directories itself, with
        // windowsDataplane (`enable_windows`): the operator refuses them while it is off.
        if to_operator && !inst.windows_enabled() {
            return None;
        }
        let theirs = inst.windows_cni_dirs();
        let differ: Vec<(&str, &str, &str, &str)> = [
            (
                "cniBinDir",
                "cni.bin_dir",
                theirs.bin.as_str(),
                self.cni.bin.as_str(),
            ),
            (
                "cniConfigDir",
                "cni.conf_dir",
                theirs.conf.as_str(),
                self.cni.conf.as_str(),
            ),
        ]
        .into_iter()
        .filter(|(_, _, a, b)| !crate::host::runtime::same_dir(a, b))
        .collect();
        if differ.is_empty() {
            return None;
        }
        let said = differ
            .iter()
            .map(|(spec, key, theirs, ours)| {
                format!("the Installation's windowsNodes.{spec} is {theirs} where {key} is {ours}")
            })
            .collect::<Vec<_>>()
            .join(", ");
        let (message, fix) = if to_operator {
            let dirs = differ
                .iter()
                .map(|(spec, _, _, ours)| format!("\"{spec}\":\"{}\"", ours.replace('\\', "/")))
                .collect::<Vec<_>>()
                .join(",");
            (
                format!(
                    "{said}: the operator would write its CNI config and plugins where containerd does not read them, and this node would make no new pod's network"
                ),
                format!(
                    "point the operator at containerd's directories (every Windows node it runs on must use them): kubectl patch installation default --type merge -p '{{\"spec\":{{\"windowsNodes\":{{{dirs}}}}}}}'"
                ),
            )
        } else {
            let sets = differ
                .iter()
                .map(|(_, key, theirs, _)| format!("--set {key}=\"{theirs}\""))
                .collect::<Vec<_>>()
                .join(" ");
            (
                format!(
                    "{said}: calicoctl-win would write its CNI config and plugins where containerd does not read them (it reads the operator's)"
                ),
                format!(
                    "give calicoctl-win the operator's directories, which containerd reads: pass {sets}, or set them in calico-windows.yaml"
                ),
            )
        };
        Some(Refusal {
            code: "cni-dirs",
            message,
            fix,
        })
    }

    /// A daylight-saving change since the boot: the boot reads one way by the bias of its
    /// date and another by today's, and which of the two node-service.ps1 formats is not
    /// certain here; the wrong one makes it delete every HNS network.
    fn boot_marker_dst(&self) -> Option<Refusal> {
        let (Some(dated), Some(reported)) = (self.boot_local_dated, self.boot_local_reported)
        else {
            return None;
        };
        if dated == reported {
            return None;
        }
        let (a, b) = (
            self.marker_of(Some(dated)).ok()?,
            self.marker_of(Some(reported)).ok()?,
        );
        Some(Refusal {
            code: "boot-marker-dst",
            message: format!(
                "daylight saving time changed since the boot: the boot reads {a:?} by the time zone's rule for its date and {b:?} by today's bias, and a marker the operator's node-service.ps1 reads as another boot makes it delete every HNS network"
            ),
            fix: format!(
                "hand the node over after its next reboot, or drain it first ('kubectl drain {} --ignore-daemonsets') so that no pod's network is at stake",
                self.node
            ),
        })
    }

    fn boot_marker(&self) -> Option<Refusal> {
        let why = self.operator_marker().err()?;
        Some(Refusal {
            code: "boot-marker",
            message: format!(
                "the boot marker cannot be written as the operator's node-service.ps1 reads it ({why}), and a marker it reads as another boot makes it delete every HNS network"
            ),
            fix: format!(
                "give SYSTEM a date format calicoctl-win can write: set {}'s sShortDate and sTimeFormat to numeric patterns (for example M/d/yyyy and h:mm:ss tt), or copy the settings to the system accounts (intl.cpl, Administrative, Copy settings)",
                crate::installed::boot_marker::SYSTEM_INTERNATIONAL
            ),
        })
    }
}

/// Why `to-operator` must not run now; empty when it may.
pub fn to_operator_refusals(f: &Facts<'_>) -> Vec<Refusal> {
    let mut out: Vec<Refusal> = [
        f.boot_marker_dst(),
        f.no_installation(),
        f.vni(),
        f.cni_dirs(true),
        f.boot_marker(),
    ]
    .into_iter()
    .flatten()
    .collect();
    if f.kube_proxy_service {
        out.push(Refusal {
            code: "kube-proxy-service",
            message: "kube-proxy runs here as the Windows service kube-proxy, which the operator's init container deletes (uninstall-calico-hpc.ps1, when Calico is the CNI)".into(),
            fix: format!(
                "run kube-proxy as a HostProcess DaemonSet pod on node {} first (sig-windows-tools' kube-proxy DaemonSet, with KUBE_NETWORK=Calico), then remove the service ('calicoctl-win reconfigure --set kube_proxy.path=' for calicoctl-win's)",
                f.node
            ),
        });
    }
    out
}

/// Why `from-operator` must not run now; empty when it may. `stored` is the operator's
/// `LastBootTime`.
pub fn from_operator_refusals(f: &Facts<'_>, stored: Option<&str>) -> Vec<Refusal> {
    let mut out: Vec<Refusal> = [
        f.no_installation(),
        f.vni(),
        f.cni_dirs(false),
        f.boot_marker(),
    ]
    .into_iter()
    .flatten()
    .collect();
    if let (Ok(now), Some(stored)) = (f.operator_marker(), stored)
        && !f.is_this_boot(stored)
    {
        out.push(Refusal {
            code: "not-initialised",
            message: format!(
                "the operator's LastBootTime {stored:?} is not this boot as Windows reports it ({now:?}): the operator has not initialised this node in this boot, so its networks may be an earlier boot's, or a clock step since its pod started moved the reported boot time"
            ),
            fix: format!(
                "drain node {node} ('kubectl drain {node} --ignore-daemonsets'), delete its {ds} pod so that the operator initialises the node again in this boot (its node-service.ps1 then makes the HNS networks again), and run migrate from-operator once that pod is ready; or reboot the node and let the pod start",
                node = f.node,
                ds = operator::DAEMONSET,
            ),
        });
    }
    out
}

/// The cluster steps that keep the operator off calicoctl-win's nodes before it runs on
/// Windows: the affinity (when the Installation lacks it), then the label on `label` (nodes
/// that run calicoctl-win and lack it).
pub fn keep_operator_off(inst: &Installation, label: &[NodeName]) -> Vec<Action> {
    let mut actions = Vec::new();
    if let Some(affinity) = inst.excluding_affinity() {
        actions.push(Action::PatchInstallation {
            name: inst.affinity_in.to_owned(),
            what: format!(
                "calicoNodeWindowsDaemonSet affinity: not on nodes labelled {}={LABEL_VALUE}{}",
                operator::LABEL,
                match inst.effective_affinity() {
                    Some(_) => ", with the requirements it had",
                    None => "",
                }
            ),
            patch: operator::affinity_patch(Some(&affinity)),
            restore: None,
        });
    }
    for node in label {
        actions.push(Action::SetNodeLabel {
            node: node.clone(),
            value: Some(LABEL_VALUE.into()),
        });
    }
    actions
}

/// The cluster steps of `to-operator` before the host is touched: the operator kept off
/// calicoctl-win's nodes, then on Windows, its Windows DaemonSet waited for, this node
/// cordoned (marked first). Run with rollback.
pub fn to_operator_before(
    inst: &Installation,
    label: &[NodeName],
    (node, cni): (&NodeName, &CniDirs),
    cordoned: bool,
    timeout: Duration,
) -> Vec<Action> {
    let mut actions = keep_operator_off(inst, label);
    if !inst.windows_enabled() {
        actions.push(enable_windows(inst, cni));
    }
    actions.push(Action::WaitOperatorDaemonSet {
        node: node.clone(),
        timeout,
    });
    actions.extend(cordon(node, cordoned));
    actions
}

/// `windowsDataplane: HNS`, with `windowsNodes` set to containerd's CNI directories where the
/// Installation has none; the restore takes `windowsNodes` away too, which the operator refuses
/// while Windows is off (tigera/operator release-v1.44 `validation.go`, `fillDefaults`).
fn enable_windows(inst: &Installation, cni: &CniDirs) -> Action {
    let slash = |p: &str| p.replace('\\', "/");
    let unset = inst.cni_bin_dir.is_none() && inst.cni_config_dir.is_none();
    let mut patch = operator::dataplane_patch(Some("HNS"));
    let mut restore = operator::dataplane_patch(inst.windows_dataplane.as_deref());
    let mut what = "calicoNetwork.windowsDataplane: HNS (the operator runs Calico on the Windows nodes its DaemonSet's affinity allows)".to_owned();
    if unset {
        patch["spec"]["windowsNodes"] = serde_json::json!({
            "cniBinDir": slash(&cni.bin),
            "cniConfigDir": slash(&cni.conf),
        });
        restore["spec"]["windowsNodes"] = serde_json::Value::Null;
        what.push_str(&format!(
            ", and windowsNodes' CNI directories containerd's ({}, {})",
            cni.bin, cni.conf
        ));
    }
    Action::PatchInstallation {
        name: inst.dataplane_in.to_owned(),
        what,
        patch,
        restore: Some(restore),
    }
}

/// This migration's cordon of the node, unless it is cordoned already: the mark first.
fn cordon(node: &NodeName, cordoned: bool) -> Vec<Action> {
    if cordoned {
        return Vec::new();
    }
    vec![
        Action::MarkCordoned {
            node: node.clone(),
            on: true,
        },
        Action::Cordon { node: node.clone() },
    ]
}

/// The uncordon of a node this migration cordoned: the mark last.
pub fn uncordon(node: &NodeName) -> Vec<Action> {
    vec![
        Action::Uncordon { node: node.clone() },
        Action::MarkCordoned {
            node: node.clone(),
            on: false,
        },
    ]
}

/// An uninstall's plan without the removal of the CNI directories or one above them:
/// containerd watches the config directory it made at start only (containerd v1.7.34
/// `pkg/cri/server/cni_conf_syncer.go` `newCNINetConfSyncer`), so one made anew is not watched.
pub fn keeping_cni_dirs(actions: Vec<Action>, cni: &CniDirs) -> Vec<Action> {
    let under = |dir: &str, path: &str| {
        let (dir, path) = (
            dir.replace('/', "\\").to_ascii_lowercase(),
            path.replace('/', "\\").to_ascii_lowercase(),
        );
        let path = path.trim_end_matches('\\');
        dir.trim_end_matches('\\') == path || dir.starts_with(&format!("{path}\\"))
    };
    actions
        .into_iter()
        .filter(|a| match a {
            Action::RemoveDir { path } => !under(&cni.conf, path) && !under(&cni.bin, path),
            _ => true,
        })
        .collect()
}

/// The boot marker as the operator reads it, written unless it is so already, and only when
/// CalicoNode initialised the networks in this boot (its `BootId` is this boot's).
pub fn marker_for_operator(
    host: &dyn Host,
    marker: &str,
    boot_id: Option<&str>,
) -> HostResult<Option<Action>> {
    let ours = host.reg_get(CALICO_KEY, BOOT_ID_VALUE)?;
    let this_boot = matches!((&ours, boot_id), (Some(RegValue::Sz(b)), Some(id)) if b == id);
    if !this_boot {
        return Ok(None);
    }
    let now = host.reg_get(CALICO_KEY, LEGACY_BOOT_VALUE)?;
    Ok(
        (now.as_ref() != Some(&RegValue::Sz(marker.to_owned()))).then(|| {
            Action::SetRegistryValue {
                key: CALICO_KEY.into(),
                name: LEGACY_BOOT_VALUE.into(),
                value: RegValue::Sz(marker.to_owned()),
            }
        }),
    )
}

/// The node given to the operator: the label off, the operator's pod waited for, the node
/// uncordoned when this migration cordoned it.
pub fn back_to_operator(node: &NodeName, timeout: Duration, uncordon_it: bool) -> Vec<Action> {
    let mut actions = vec![
        Action::SetNodeLabel {
            node: node.clone(),
            value: None,
        },
        Action::WaitOperatorPod {
            node: node.clone(),
            want: Want::Ready,
            timeout,
        },
    ];
    if uncordon_it {
        actions.extend(uncordon(node));
    }
    actions
}

/// The cluster steps of `to-operator` after the host: the label off, the operator's pod waited
/// for, the node uncordoned (when this migration cordoned it), the renewal grant deleted and
/// the node's calicoctl-win annotations and condition gone; each journaled.
pub fn to_operator_after(
    node: &NodeName,
    timeout: Duration,
    uncordon_it: bool,
    grant: Option<&crate::cluster::renewal::Grant>,
) -> Vec<Action> {
    let mut actions = back_to_operator(node, timeout, uncordon_it);
    if let Some(g) = grant {
        actions.push(Action::RemoveRenewalGrant {
            namespace: g.namespace.clone(),
            name: g.name.clone(),
            uids: g.uids.clone(),
            uids_kept: g.uids_kept,
        });
    }
    actions.push(Action::ForgetNode {
        node: node.clone(),
        left: crate::cluster::node::Left::HandedToOperator,
    });
    actions
}

/// The cluster's facts as install will find them once `from-operator`'s steps before it have
/// run: this node labelled, and the Installation's affinity keeping the operator off it (the
/// checks judge that node, so that a dry run says what the real run does).
pub fn as_handed_back(f: &mut crate::cluster::facts::ClusterFacts) {
    f.node_labels
        .insert(operator::LABEL.to_owned(), LABEL_VALUE.to_owned());
    if let Some(inst) = f.installation.as_mut()
        && let Some(affinity) = inst.excluding_affinity()
    {
        inst.affinity = Some(affinity);
    }
}

/// The files the operator's CNI installer leaves in the CNI config directory (tigera/operator
/// release-v1.44 `pkg/render/windows.go` `CNI_CONF_NAME`): libcni loads every config file there
/// (containernetworking/cni `libcni/conf.go` `ConfFiles`), so one left beside ours would load.
pub const OPERATOR_CNI_FILES: &[&str] = &["10-calico.conflist", "calico-kubeconfig"];

/// The steps of `from-operator` before install: the operator kept off this node, the node
/// cordoned, the operator's pod waited out, the boot marker set to this boot (so CalicoNode's
/// first start keeps the networks), the operator's CNI files and addressing record removed.
pub fn from_operator_before(
    host: &dyn Host,
    inst: &Installation,
    node: &NodeName,
    steps: FromOperator<'_>,
) -> HostResult<Vec<Action>> {
    // The cordon before the label: no new pod lands on the node once its operator pod
    // starts to go.
    let mut actions = keep_operator_off(inst, &[]);
    actions.extend(cordon(node, steps.cordoned));
    if !steps.labelled {
        actions.push(Action::SetNodeLabel {
            node: node.clone(),
            value: Some(LABEL_VALUE.into()),
        });
    }
    actions.push(Action::WaitOperatorPod {
        node: node.clone(),
        want: Want::Gone,
        timeout: steps.timeout,
    });
    if let Some(boot) = steps.boot_id {
        let set = RegValue::Sz(boot.to_owned());
        if host.reg_get(CALICO_KEY, BOOT_ID_VALUE)?.as_ref() != Some(&set) {
            actions.push(Action::SetRegistryValue {
                key: CALICO_KEY.into(),
                name: BOOT_ID_VALUE.into(),
                value: set,
            });
        }
    }
    for name in OPERATOR_CNI_FILES {
        let path = crate::layout::join(steps.cni_conf_dir, name);
        if host.file_access(&path)?.is_some() {
            actions.push(Action::RemoveFile { path });
        }
    }
    // An addressing record left from before the operator belongs to no network of ours.
    actions.extend(super::uninstall::forget_addressing(host)?);
    Ok(actions)
}

/// What `from_operator_before` is told of the node.
pub struct FromOperator<'a> {
    pub labelled: bool,
    pub cordoned: bool,
    pub timeout: Duration,
    /// The current boot, when the operator initialised the node in it.
    pub boot_id: Option<&'a str>,
    pub cni_conf_dir: &'a str,
}

#[cfg(test)]
#[path = "migrate_tests.rs"]
pub(super) mod tests;
