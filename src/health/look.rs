//! What one look is given, and what it has seen so far: the types the survey's parts share.

use crate::config::Config;
use crate::host::{Host, InstalledService, ServiceSpec};
use crate::installed::file_stat::FileDrift;
use crate::installed::health::Finding;
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

/// What one look is given: the host, the config, the cluster as seen (`see`), the environment
/// captured at start-up, calicoctl-win's state directory (its host lock, a detached run's
/// files), and how to tell what the config wants of an installed node.
pub struct Look<'a> {
    pub host: &'a dyn Host,
    pub config: &'a Config,
    pub root: &'a InstallRoot,
    pub node: &'a str,
    pub seen: &'a super::seen::Seen,
    pub env: &'a BTreeMap<String, String>,
    pub grace: std::time::Duration,
    /// `None`: a host with no state directory (an in-memory one).
    pub state_dir: Option<&'a std::path::Path>,
    /// What the config wants of the node as the install record found says it (`plan/`).
    pub desired: &'a dyn Fn(&InstallRecord) -> anyhow::Result<Desired>,
}

/// What a survey has seen so far: the findings, and what the text shows beside the sections.
#[derive(Default)]
pub(super) struct Notes {
    pub(super) findings: Vec<Finding>,
    pub(super) shown: super::sections::Shown,
    /// A read of the node that fails is a finding and the look goes on (`on_node`: the
    /// condition must say something every minute), not the end of the look (status).
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
                    .push(crate::installed::health::host_unreadable(subject, said));
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }
}
