//! The journal a plan keeps on the host while it runs: each action with what undoes it and
//! whether it is done, the routes and addresses before the run, and what the run created.

use crate::host::{Access, FirewallRule, Host, HostError, RegValue, Route, ServiceSpec};
use anyhow::Context as _;
use serde::{Deserialize, Serialize};

/// What undoes one action.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "undo", rename_all = "kebab-case")]
pub enum Undo {
    Nothing,
    RemoveFile {
        path: String,
        /// Directories the write created, outermost first.
        new_dirs: Vec<String>,
    },
    RestoreFile {
        path: String,
        backup: String,
        secret: bool,
    },
    DeleteService {
        name: String,
    },
    RegisterService {
        spec: ServiceSpec,
    },
    RestoreServiceConfig {
        spec: ServiceSpec,
    },
    StartService {
        name: String,
    },
    StopService {
        name: String,
    },
    RestoreRegistryValue {
        key: String,
        name: String,
        previous: Option<RegValue>,
        /// The key and parents the write creates, outermost first.
        new_keys: Vec<String>,
    },
    RemoveFirewallRule {
        name: String,
        /// The rule the action added, removed only while it is the one rule of its name as
        /// added; `None` in a journal written before it was kept.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rule: Option<FirewallRule>,
    },
    AddFirewallRule {
        rule: FirewallRule,
    },
    Uncordon {
        node: crate::k8s_name::NodeName,
    },
    /// A patch of the operator's Installation that puts back what one changed, applied only
    /// while every field `applied` set still holds what it set (a journal written before
    /// `applied` was kept restores as it always did).
    PatchInstallation {
        name: String,
        patch: serde_json::Value,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        applied: Option<serde_json::Value>,
    },
    /// `migrate`'s cordon annotation removed again.
    UnmarkCordoned {
        node: crate::k8s_name::NodeName,
    },
    /// A directory made by `ProtectDir`: these, outermost first, are removed when empty.
    RemoveDirs {
        new_dirs: Vec<String>,
    },
    /// A directory's owner and access list as they were (SDDL).
    RestoreSecurity {
        path: String,
        sddl: String,
    },
}

/// The journal kept on the host while a plan runs.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Journal {
    pub command: String,
    /// Unix seconds when the first run of this plan started.
    pub started: i64,
    /// Directories the journal itself needed, outermost first.
    pub new_dirs: Vec<String>,
    /// The host's routes when the first run started.
    pub routes_before: Vec<Route>,
    /// The IPv4 addresses then (`routes::place`).
    #[serde(default)]
    pub addresses_before: Vec<crate::host::InterfaceAddress>,
    /// Uninstall: the record it works from, so that a run cut off after the record file is
    /// gone can be finished.
    #[serde(default)]
    pub record: Option<crate::installed::record::InstallRecord>,
    /// The services' logs directory when the run started (a rollback by a later command,
    /// which may not read the config, still finds it).
    #[serde(default)]
    pub logs_dir: Option<String>,
    /// A download cache this journal's run created: everything in it came from that run (a
    /// partial or refused download, an unpacked release), so undoing the run removes it whole.
    #[serde(default)]
    pub owned_cache: Option<String>,
    /// Install: the node's renewal grant, its objects flagged before this run creates them
    /// (`making::Making`), so that a run cut off before its record names them leaves them to
    /// the next install or to uninstall, not to nobody.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<crate::cluster::making::Making>,
    pub entries: Vec<Entry>,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Entry {
    pub action: String,
    pub undo: Undo,
    pub done: bool,
    /// Once such an action has started, a failure no longer rolls back: the run is finished
    /// by running the command again (deleting an HNS network cannot be undone).
    #[serde(default)]
    pub irreversible: bool,
}

impl Journal {
    /// The journal an interrupted run left, if any.
    pub fn load(host: &dyn Host, path: &str) -> anyhow::Result<Option<Journal>> {
        let Some(bytes) = host.read_file(path)? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes).map(Some).with_context(|| {
            format!("the journal {path} is not readable; delete it to start afresh")
        })
    }

    /// Writes the journal (atomically, as every host file).
    pub fn save(&self, host: &dyn Host, path: &str) -> anyhow::Result<()> {
        let text = serde_json::to_vec_pretty(self)?;
        host.write_file(path, &text, Access::Normal)
            .with_context(|| format!("cannot write the journal {path}"))?;
        Ok(())
    }

    /// Directories created by the journaled actions, and by the journal.
    pub fn created_dirs(&self) -> Vec<String> {
        let mut dirs = self.new_dirs.clone();
        for e in &self.entries {
            if let Undo::RemoveFile { new_dirs, .. } | Undo::RemoveDirs { new_dirs } = &e.undo {
                dirs.extend(new_dirs.iter().cloned());
            }
        }
        dirs
    }

    /// Whether the run wrote `path` (its install record) before it was cut off: the record
    /// then names everything the run owns.
    pub fn wrote(&self, path: &str) -> bool {
        self.entries.iter().any(|e| {
            e.done
                && match &e.undo {
                    Undo::RemoveFile { path: p, .. } | Undo::RestoreFile { path: p, .. } => {
                        p.eq_ignore_ascii_case(path)
                    }
                    _ => false,
                }
        })
    }
}

/// The registry key and those of its parents that do not exist, outermost first (never a
/// root or `HKLM\Software` itself).
pub fn missing_keys(host: &dyn Host, key: &str) -> Result<Vec<String>, HostError> {
    let mut out = Vec::new();
    let mut cur = key.trim_end_matches('\\').to_owned();
    while cur.matches('\\').count() >= 2 && !host.reg_key_exists(&cur)? {
        out.push(cur.clone());
        match cur.rsplit_once('\\') {
            Some((parent, _)) => cur = parent.to_owned(),
            None => break,
        }
    }
    out.reverse();
    Ok(out)
}
