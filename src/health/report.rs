//! The node as `status` reports it, one typed value: its JSON is `status -o json`.

use super::sections as s;
use crate::health::judge::Finding;
use crate::host::HnsNetwork;
use crate::installed::endpoints;
use crate::installed::file_stat::FileDrift;
use serde::Serialize;

/// The node as `status` reports it: one JSON document (`status -o json`), its keys those
/// scripts read.
#[derive(Serialize)]
#[serde(untagged)]
pub enum NodeReport {
    Installed(Box<InstalledReport>),
    NotInstalled(NotInstalledReport),
}

/// A node with an install record; in the node's own look (`Mode::Own`) also one without,
/// `installed` false. What only status's look gathers (it needs the config or the cluster as
/// the admin kubeconfig reads it) is `None` or empty in the node's own.
#[derive(Default, Serialize)]
pub struct InstalledReport {
    pub installed: bool,
    pub install_root: String,
    pub calico_version: Option<String>,
    pub backend: Option<String>,
    pub services: Vec<s::Service>,
    pub networks: Vec<HnsNetwork>,
    pub endpoints: Vec<endpoints::Judged>,
    pub hns_restart: Option<crate::installed::hns_restart::HnsRestart>,
    pub felix_health: Option<crate::installed::felix_health::FelixHealth>,
    pub vni: Option<s::Vni>,
    pub address: s::Address,
    pub addressing: Option<s::AddressingNow>,
    pub drift: Vec<FileDrift>,
    pub node: Option<s::NodeState>,
    pub ipam: Option<s::Ipam>,
    pub token: Option<s::Token>,
    pub kube_proxy: Option<s::KubeProxy>,
    /// The known-issues check for this build, update and installed release (preflight's).
    pub known_issues: Option<s::KubeProxy>,
    pub dir_access: Vec<s::DirAccess>,
    pub admin_kubeconfigs: Vec<String>,
    pub under_way: Option<s::UnderWay>,
    pub calico_api: Option<s::CalicoApi>,
    pub healthy: bool,
    pub problems: Vec<String>,
    pub findings: Vec<Finding>,
    /// What the text shows beside the sections (`text`).
    #[serde(skip)]
    pub shown: s::Shown,
    /// What the node's own look read of the Node with calico-node's credential.
    #[serde(skip)]
    pub own: s::NodeRead,
}

/// No install record: what is under way, or that Calico is not installed. The same keys
/// `findings` and `problems` as an installed node's.
#[derive(Serialize)]
pub struct NotInstalledReport {
    pub installed: bool,
    pub install_root: String,
    pub healthy: bool,
    pub under_way: Option<s::UnderWay>,
    pub problems: Vec<String>,
    pub findings: Vec<Finding>,
}

impl NodeReport {
    pub fn healthy(&self) -> bool {
        match self {
            Self::Installed(r) => r.healthy,
            Self::NotInstalled(_) => false,
        }
    }

    pub fn findings(&self) -> &[Finding] {
        match self {
            Self::Installed(r) => &r.findings,
            Self::NotInstalled(r) => &r.findings,
        }
    }
}
