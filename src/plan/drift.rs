//! Drift: how the installed node differs from its install record and from the config.

use super::install::DesiredFile;
use crate::host::Host;
use crate::installed::file_stat::FileStats;
use crate::installed::file_stat::host_sha256;
use crate::installed::record::InstallRecord;

pub use crate::installed::file_stat::{FileDrift, FileState};

/// Files install wrote that changed or went since, then rendered files whose recorded contents
/// differ from what the config renders now. With `stats`, a file whose size and time match its
/// last matching look is not hashed again. `renewed` (the token file CalicoNode rewrites) is
/// drift only when absent.
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
