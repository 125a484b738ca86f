//! The `host` layer: defaults read from the Windows node the tool works on, below the file
//! and above the cluster and the built-in defaults:
//! - `node.name`: kubelet's `--hostname-override` when kubelet's service has one, else the
//!   host's own name in lower case (config.ps1's `$(hostname).ToLower()`);
//! - `container_runtime`: containerd when its service runs, else docker (Calico's
//!   `Get-IsContainerdRunning`), when either is registered;
//! - `cni.bin_dir` / `cni.conf_dir`: containerd's, from its `config.toml` (else Calico's
//!   derivation from the service's directory).

use super::layer::Raw;
use crate::host::runtime::{self, RuntimeFacts};
use crate::host::{Host, flag, split_command_line};
use std::collections::BTreeMap;

/// What the host says about the settings it decides; what cannot be read stays `None`.
#[derive(Clone, Debug, Default)]
pub struct HostDefaults {
    pub hostname: Option<String>,
    /// The kubelet service's command line.
    pub kubelet: Option<String>,
    pub runtime: Option<RuntimeFacts>,
}

impl HostDefaults {
    /// Reads them; a fact the host cannot give is left out (the setting then needs a value).
    pub fn read(h: &dyn Host) -> Self {
        Self {
            hostname: h.system_facts().ok().and_then(|f| f.hostname),
            kubelet: h
                .service_query("kubelet")
                .ok()
                .flatten()
                .map(|s| s.command_line),
            runtime: runtime::detect(h).ok().flatten(),
        }
    }

    /// The node name kubelet registers, and where that came from.
    pub fn node_name(&self) -> Option<(String, &'static str)> {
        if let Some(o) = self.kubelet.as_deref().and_then(hostname_override) {
            return Some((o.to_ascii_lowercase(), "--hostname-override"));
        }
        let h = self
            .hostname
            .as_deref()
            .map(str::trim)
            .filter(|h| !h.is_empty())?;
        Some((h.to_ascii_lowercase(), "the host name"))
    }

    /// The layer's values, by setting key.
    pub fn layer(&self) -> BTreeMap<&'static str, Raw> {
        let mut out = BTreeMap::new();
        if let Some((name, _)) = self.node_name() {
            out.insert("node.name", Raw::Scalar(name));
        }
        if let Some(rt) = &self.runtime {
            let containerd = rt.name == "containerd" && rt.running;
            let name = if containerd { "containerd" } else { "docker" };
            out.insert("container_runtime", Raw::Scalar(name.into()));
            if containerd {
                let win = |p: &String| Raw::Scalar(p.replace('/', "\\"));
                if let Some(bin) = &rt.cni_bin_dir {
                    out.insert("cni.bin_dir", win(bin));
                }
                if let Some(conf) = &rt.cni_conf_dir {
                    out.insert("cni.conf_dir", win(conf));
                }
            }
        }
        out
    }
}

/// kubelet's `--hostname-override`, written `--hostname-override=NAME` or
/// `--hostname-override NAME`.
pub fn hostname_override(command_line: &str) -> Option<String> {
    let (_, args) = split_command_line(command_line);
    flag(&args, "hostname-override")
        .filter(|n| !n.is_empty())
        .map(str::to_owned)
}

/// Every path setting on a fixed local drive of the host (a removable or network drive's files
/// are another's, which the services would run as SYSTEM); `drives` empty checks nothing.
pub fn on_fixed_drives(
    loaded: &super::Loaded,
    drives: &BTreeMap<char, crate::host::DriveKind>,
) -> Result<(), super::ConfigError> {
    if drives.is_empty() {
        return Ok(());
    }
    let problems: Vec<super::problem::Problem> = loaded
        .config
        .path_settings()
        .into_iter()
        .filter_map(|(key, path)| {
            let letter = path.as_str().chars().next()?.to_ascii_uppercase();
            let why = match drives.get(&letter) {
                Some(crate::host::DriveKind::Fixed) => return None,
                Some(kind) => format!("{letter}: is {}", kind.describe()),
                None => format!("this host has no drive {letter}:"),
            };
            let source = loaded.shown.get(key).map(|s| s.source.clone());
            Some(super::problem::Problem::new(
                key,
                Some(path.to_string()),
                source,
                format!("allowed: a path on a fixed local drive ({why})"),
            ))
        })
        .collect();
    if problems.is_empty() {
        return Ok(());
    }
    Err(super::ConfigError::Invalid {
        file: loaded.file.clone(),
        problems,
    })
}
