//! What one look is given, and what it has seen so far: the types the survey's parts share.

use crate::cluster::read::ClusterRead;
use crate::config::Config;
use crate::health::judge::Finding;
use crate::host::{Host, InstalledService, ServiceSpec};
use crate::installed::endpoints::{Ageing, Remote, Survey};
use crate::installed::file_stat::FileDrift;
use crate::installed::record::InstallRecord;
use crate::layout::InstallRoot;
use std::collections::BTreeMap;

/// What the config wants of the node, from `plan/`: the services as install registers them
/// (and how a registered one differs from one of them), and the files that differ from the
/// install record or from what the config renders now.
pub struct Desired {
    pub services: Vec<ServiceSpec>,
    pub service_changes: fn(&InstalledService, &ServiceSpec, Option<&ServiceSpec>) -> Vec<String>,
    pub files: Vec<FileDrift>,
}

/// What one look is given: the host, the install root, the node's name, the grace period of
/// its endpoints' faults, calicoctl-win's state directory (its host lock, a detached run's
/// files; `None`: a host with no state directory, an in-memory one), and whose look it is.
pub struct Look<'a> {
    pub host: &'a dyn Host,
    pub root: &'a InstallRoot,
    pub node: &'a crate::k8s_name::NodeName,
    pub grace: std::time::Duration,
    pub state_dir: Option<&'a std::path::Path>,
    pub mode: Mode<'a>,
}

/// Whose look: status's, or the node's own. Both take the same steps in the same order; the
/// node's own leaves out only those that need what it has not (`survey` says which).
pub enum Mode<'a> {
    /// `status`: the config, and the cluster as the admin kubeconfig reads it. A read of the
    /// node that fails is the end of the look.
    Status(Admin<'a>),
    /// The node's own look (CalicoNode's minute look, repair's after its run, what `verify`
    /// joins): no config, no admin kubeconfig, calico-node's cluster at most. Lenient: a read
    /// that fails is a finding and the look goes on, so that it always says something.
    Own(Own<'a>),
}

/// What status's look has that the node's own has not: the config, the cluster as seen
/// (`see`), the environment captured at start-up, and how to tell what the config wants of
/// the node as the install record found says it (`plan/`).
pub struct Admin<'a> {
    pub config: &'a Config,
    pub seen: &'a super::seen::Seen,
    pub env: &'a BTreeMap<String, String>,
    pub desired: &'a dyn Fn(&InstallRecord) -> anyhow::Result<Desired>,
}

/// The node's own look: the cluster as calico-node's credential reads it (`None`: without
/// the cluster), whether another host's endpoints are asked about, whether the look ages the
/// faults it sees (CalicoNode's minute look does).
pub struct Own<'a> {
    pub cluster: Option<&'a crate::cluster::Cluster>,
    pub remote: Remote,
    pub ageing: Ageing,
}

impl Look<'_> {
    /// Status's look: what it has that the node's own has not.
    pub(super) fn admin(&self) -> Option<&Admin<'_>> {
        match &self.mode {
            Mode::Status(a) => Some(a),
            Mode::Own(_) => None,
        }
    }

    /// How this look surveys the Calico network's endpoints: status asks the cluster its
    /// admin kubeconfig read about other hosts' endpoints and reads the faults' ages.
    pub(super) fn endpoints(&self) -> Survey<'_> {
        let (cluster, remote, ageing) = match &self.mode {
            Mode::Status(a) => match &a.seen.cluster {
                ClusterRead::Read(c, _) => (Some(c.as_ref()), Remote::Ask, Ageing::Read),
                _ => (None, Remote::Ask, Ageing::Read),
            },
            Mode::Own(o) => (o.cluster, o.remote, o.ageing),
        };
        Survey {
            cluster,
            node: self.node,
            grace: self.grace,
            remote,
            ageing,
        }
    }
}

/// What a survey has seen so far: the findings, and what the text shows beside the sections.
#[derive(Default)]
pub(super) struct Notes {
    pub(super) findings: Vec<Finding>,
    pub(super) shown: super::sections::Shown,
    /// A read of the node that fails is a finding and the look goes on (the node's own look:
    /// the condition must say something every minute), not the end of the look (status).
    pub(super) lenient: bool,
}

impl Notes {
    pub(super) fn problems(&self) -> Vec<String> {
        self.findings.iter().map(|f| f.message.clone()).collect()
    }

    /// A read of the node that failed: the end of status's look, or for a lenient look a
    /// `host-unreadable` finding about `subject` (the read's error with its context) and `None`.
    pub(super) fn unread<T>(
        &mut self,
        read: anyhow::Result<T>,
        subject: &str,
    ) -> anyhow::Result<Option<T>> {
        match read {
            Ok(v) => Ok(Some(v)),
            Err(e) if self.lenient => {
                let said = format!("{e:#}");
                self.findings
                    .push(crate::health::judge::host_unreadable(subject, said));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}
