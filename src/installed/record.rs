//! The install record: what install created, kept under the install root so that uninstall
//! works from it alone, without the config or the cluster.

use crate::host::{Files, FirewallRule, Host, Route, ServiceSpec};
use crate::installed::logs::is_service_log;
use crate::layout::join;
use serde::{Deserialize, Serialize};

/// The record's format version.
pub const FORMAT: u32 = 1;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct InstallRecord {
    pub format: u32,
    pub tool_version: String,
    /// The Calico release, when its version is known.
    pub calico_version: Option<String>,
    pub install_root: String,
    pub logs_dir: String,
    pub backend: String,
    /// Every file install wrote, with the checksum it had then.
    pub files: Vec<RecordedFile>,
    /// Directories install created, parents first.
    pub dirs: Vec<String>,
    /// The services, in start order.
    pub services: Vec<ServiceSpec>,
    pub registry_key: String,
    /// The keys install created, outermost first (`--purge` deletes the first, with what is
    /// under it).
    pub registry_keys_created: Vec<String>,
    /// The keys install created for the Application event log source, outermost first:
    /// uninstall deletes the first, with what is under it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub event_source_keys_created: Vec<String>,
    /// The firewall rule install added; `None` when one was there already.
    pub firewall_rule: Option<FirewallRule>,
    /// The rules install added for the metrics ports, each open to the configured sources.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub metrics_rules: Vec<FirewallRule>,
    /// The routes before Calico's vSwitch existed, which `--purge` puts back.
    pub routes_before: Vec<Route>,
    /// The IPv4 addresses then, to put a route back whose interface is gone.
    #[serde(default)]
    pub addresses_before: Vec<crate::host::InterfaceAddress>,
    /// The HNS networks Calico creates, by name, which `--purge` deletes.
    pub networks: Vec<String>,
    /// The hash of the fleet-wide configuration applied (`config::fleet_hash`), which the
    /// Node is annotated with (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_hash: Option<crate::config::ConfigHash>,
    /// This install's own id, random, made at its first install and kept by every later
    /// install and reconfigure of it, which the Node is annotated with: uninstall tells by it
    /// that the Node is still this install's, not that of another host installed since under
    /// the same name from the same config (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub install_id: Option<String>,
    /// The settings the Calico network was made with, which cannot change without recreating
    /// it (absent in records of older versions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkSettings>,
    /// Directories that were there before install and got the protected access list, with
    /// the owner and access list they had (SDDL), which uninstall gives back.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<ProtectedDir>,
    /// The `cniVersion` of the installed release's own `cni.conf.template`, so that status and
    /// reconfigure render what install rendered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cni_version: Option<String>,
    /// The node's grant in the cluster to renew calico-node's token, which `--purge` deletes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renewal: Option<crate::cluster::renewal::Grant>,
}

/// A directory install protected, and its access list before.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProtectedDir {
    pub path: String,
    pub previous: String,
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordedFile {
    pub path: String,
    pub sha256: String,
    /// Rendered from the config (CNI config, service environment, External network), rather
    /// than taken from the release or the cluster.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub rendered: bool,
}

/// The settings HNS cannot change on an existing network: a change means deleting the
/// Calico network (and External, for the adapter) so that CalicoNode makes it again.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct NetworkSettings {
    pub backend: String,
    pub vni: u32,
    pub mac_prefix: String,
    pub adapter: Option<String>,
    pub single_network: bool,
}

impl NetworkSettings {
    /// The settings of `c`, the External network on `uplink` (the adapter chosen for it:
    /// `plan::desired::choose_uplink`).
    pub fn of(c: &crate::config::Config, uplink: Option<&str>) -> Self {
        Self {
            backend: c.backend.to_string(),
            vni: c.vxlan.vni.get(),
            mac_prefix: c.vxlan.mac_prefix.to_string(),
            adapter: uplink.map(str::to_owned),
            single_network: c.windows_use_single_network,
        }
    }
}

/// Why the record cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    #[error("the install record {path} is not readable: {message}")]
    Corrupt { path: String, message: String },
    #[error(transparent)]
    Host(#[from] crate::host::HostError),
}

/// The record under `install_root`, if there is one.
pub fn read(
    host: &dyn Files,
    install_root: &crate::layout::InstallRoot,
) -> Result<Option<InstallRecord>, RecordError> {
    let path = install_root.record();
    let Some(bytes) = host.read_file(&path)? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| RecordError::Corrupt {
            path,
            message: e.to_string(),
        })
}

impl InstallRecord {
    /// The installed release as rendering needs it: its version and its template's
    /// `cniVersion` (`plan::desired::rendered_files`).
    pub fn release(&self) -> (Option<&str>, Option<&str>) {
        (self.calico_version.as_deref(), self.cni_version.as_deref())
    }

    /// The install root the record names.
    pub fn root(&self) -> crate::layout::InstallRoot {
        crate::layout::InstallRoot::new(&self.install_root)
    }

    pub fn path(&self) -> String {
        self.root().record()
    }

    pub fn to_bytes(&self) -> serde_json::Result<Vec<u8>> {
        let mut text = serde_json::to_string_pretty(self)?;
        text.push('\n');
        Ok(text.into_bytes())
    }
}

/// The services' log files in `dir`, as host paths.
pub fn service_logs(host: &dyn Host, dir: &str) -> anyhow::Result<Vec<String>> {
    let entries = host
        .list_dir(dir)
        .map_err(|e| anyhow::Error::new(e).context(format!("cannot list the logs in {dir}")))?;
    Ok(entries
        .unwrap_or_default()
        .into_iter()
        .filter(|e| !e.is_dir && is_service_log(&e.name))
        .map(|e| join(dir, &e.name))
        .collect())
}

/// A redactor that knows the secret files install wrote (and the token refresher's CNI
/// kubeconfig), so their contents are taken out wherever they appear, whatever their shape.
pub fn redactor(h: &dyn Files, rec: Option<&InstallRecord>) -> crate::redact::Redactor {
    let mut secrets = Vec::new();
    let mut paths = Vec::new();
    if let Some(r) = rec {
        paths.extend(r.files.iter().map(|f| f.path.clone()));
        let refresher = crate::layout::REFRESHER_DIR;
        let cni = format!(r"{refresher}\host\etc\cni\net.d\calico-kubeconfig");
        paths.push(crate::layout::join(&r.install_root, &cni));
    }
    for path in paths {
        if matches!(h.file_access(&path), Ok(Some(crate::host::Access::Secret)))
            && let Ok(Some(bytes)) = h.read_file(&path)
        {
            secrets.push(String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    crate::redact::Redactor::new(&secrets)
}

/// The id of the install `previous` records, else a new one: 16 random bytes from the
/// operating system, in hex.
pub fn install_id(previous: Option<&InstallRecord>) -> anyhow::Result<String> {
    if let Some(id) = previous.and_then(|p| p.install_id.clone()) {
        return Ok(id);
    }
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes)
        .map_err(|e| anyhow::anyhow!("cannot make an install id (no random bytes: {e})"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The annotations for what an install record says: the Calico release, the version of
/// calicoctl-win that wrote it, the hash of the fleet-wide configuration applied
/// (`config::fleet_hash`) and the install id, the last two when the record has them.
pub fn annotations_for(rec: &InstallRecord) -> std::collections::BTreeMap<String, String> {
    use crate::cluster::node::{
        ANNOTATION_CALICO_VERSION, ANNOTATION_CONFIG_HASH, ANNOTATION_INSTALL_ID,
        ANNOTATION_TOOL_VERSION,
    };
    let version = rec.calico_version.clone();
    [
        (
            ANNOTATION_CALICO_VERSION,
            version.or_else(|| Some("unknown".into())),
        ),
        (ANNOTATION_TOOL_VERSION, Some(rec.tool_version.clone())),
        (ANNOTATION_CONFIG_HASH, rec.config_hash.clone().map(|h| h.0)),
        (ANNOTATION_INSTALL_ID, rec.install_id.clone()),
    ]
    .into_iter()
    .filter_map(|(k, v)| Some((k.to_owned(), v?)))
    .collect()
}
