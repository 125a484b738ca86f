//! Drift: how the installed node differs from its install record and from the config.

use super::install::DesiredFile;
use crate::config::types::Backend;
use crate::host::Host;
use crate::installed::file_stat::FileStats;
use crate::installed::file_stat::host_sha256;
use crate::installed::record::InstallRecord;
use serde::Serialize;

/// A file that is not what it should be.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FileDrift {
    pub path: String,
    pub state: FileState,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum FileState {
    /// Install wrote it and it is gone.
    Missing,
    /// Its contents are not what install wrote.
    ChangedSinceInstall,
    /// What install rendered differs from what the config renders now.
    DiffersFromConfig,
}

impl FileDrift {
    /// The problem, for people.
    pub fn describe(&self) -> String {
        match self.state {
            FileState::Missing => format!("{} is missing", self.path),
            FileState::ChangedSinceInstall => format!("{} changed since install", self.path),
            FileState::DiffersFromConfig => format!(
                "{} differs from what the config renders: run 'calicoctl-win reconfigure'",
                self.path
            ),
        }
    }
}

/// Files install wrote that changed or went since, then rendered files whose recorded
/// contents differ from what the config renders now. With `stats`, a file whose size and
/// modification time are those it had when it last matched the record is not hashed again;
/// without, every file is. `renewed` is calico-node's token file, which CalicoNode rewrites
/// with every renewal: only its absence is drift (status judges the token itself).
pub fn files(
    host: &dyn Host,
    rec: &InstallRecord,
    rendered: &[DesiredFile],
    stats: Option<&FileStats>,
    renewed: Option<&str>,
) -> anyhow::Result<Vec<FileDrift>> {
    let mut out = Vec::new();
    for f in &rec.files {
        let is_renewed = renewed.is_some_and(|r| r.eq_ignore_ascii_case(&f.path));
        if !is_renewed
            && let Some(stats) = stats
            && stats.unchanged(host, &f.path, &f.sha256)?
        {
            continue;
        }
        let state = match host_sha256(host, &f.path)? {
            // Withheld by CalicoNode until calico-node startup has finished after a boot.
            None if host
                .file_access(&format!("{}{}", f.path, crate::layout::WITHHELD_SUFFIX))?
                .is_some() =>
            {
                continue;
            }
            None => FileState::Missing,
            Some(now) if !is_renewed && !f.sha256.is_empty() && now != f.sha256 => {
                FileState::ChangedSinceInstall
            }
            Some(_) => continue,
        };
        out.push(FileDrift {
            path: f.path.clone(),
            state,
        });
    }
    for r in rendered {
        let recorded = rec
            .files
            .iter()
            .find(|f| f.path.eq_ignore_ascii_case(&r.path));
        if recorded.is_some_and(|f| Some(&f.sha256) != r.sha256.as_ref()) {
            out.push(FileDrift {
                path: r.path.clone(),
                state: FileState::DiffersFromConfig,
            });
        }
    }
    Ok(out)
}

/// What is wrong with the VXLAN VNI in HNS and in the cluster, against the config's.
pub fn vni_problems(
    backend: Backend,
    config: u32,
    hns: Option<u32>,
    cluster: Option<u32>,
) -> Vec<String> {
    if backend != Backend::Vxlan {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Some(v) = hns.filter(|v| *v != config) {
        out.push(format!(
            "the Calico network has VSID {v}, the config says VNI {config}: 'calicoctl-win reconfigure --drain' makes the network again"
        ));
    }
    if let Some(v) = cluster.filter(|v| *v != config) {
        out.push(format!(
            "the VNI the cluster's Felix uses is {v} (its FelixConfiguration's vxlanVNI, or Felix's default 4096 when unset), the config says {config}"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_vni_is_compared_with_hns_and_the_cluster_only_for_vxlan() {
        assert!(vni_problems(Backend::Vxlan, 4096, Some(4096), Some(4096)).is_empty());
        assert!(vni_problems(Backend::Vxlan, 4096, None, None).is_empty());
        let p = vni_problems(Backend::Vxlan, 4097, Some(4096), Some(4098));
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].contains("VSID 4096") && p[1].contains("vxlanVNI is 4098"),
            "{p:?}"
        );
        assert!(vni_problems(Backend::WindowsBgp, 4097, Some(4096), Some(4096)).is_empty());
    }
}
