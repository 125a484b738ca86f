//! What install leaves on the host and the services report, read and written through `Host`:
//! the install record (and the node annotations it gives), the file stats with the host hash
//! helper, the routes from before the vSwitch, CalicoNode's start failures, the platform
//! facts (AKS, EC2, ...) the services and install read alike, and the health of the HNS
//! endpoints the pods were given, the directories whose files run as SYSTEM and what protects
//! them, and the services of Calico's legacy script-driven install.

pub mod addressing;
pub mod boot_marker;
pub mod endpoints;
pub mod failure;
pub mod felix_health;
pub mod file_stat;
pub mod hns_restart;
pub mod legacy;
pub mod logs;
pub mod metrics;
pub mod platform;
pub mod protection;
pub mod record;
pub mod routes;
pub mod token_records;

use crate::host::{Host, HostResult, RegValue};
use crate::layout::CALICO_KEY;

/// A text value under Calico's key; an empty one is none. The registry reader refuses a value
/// past `host::registry::MAX_VALUE_BYTES` before reading it.
pub fn calico_text(host: &dyn Host, name: &str) -> HostResult<Option<String>> {
    Ok(match host.reg_get(CALICO_KEY, name)? {
        Some(RegValue::Sz(s)) if !s.is_empty() => Some(s),
        _ => None,
    })
}

/// A JSON value under Calico's key; one that does not read is none.
pub fn calico_json<T: serde::de::DeserializeOwned>(
    host: &dyn Host,
    name: &str,
) -> HostResult<Option<T>> {
    Ok(calico_text(host, name)?.and_then(|t| serde_json::from_str(&t).ok()))
}

/// Keeps `value` as JSON under Calico's key.
pub fn keep_json(host: &dyn Host, name: &str, value: &impl serde::Serialize) -> HostResult<()> {
    let json = serde_json::to_string(value).unwrap_or_default();
    host.reg_set(CALICO_KEY, name, &RegValue::Sz(json))
}

/// Keeps `value` as JSON under Calico's key, or deletes the value (`None`).
pub fn keep_or_forget(
    host: &dyn Host,
    name: &str,
    value: Option<&impl serde::Serialize>,
) -> HostResult<()> {
    match value {
        Some(v) => keep_json(host, name, v),
        None => host.reg_delete_value(CALICO_KEY, name),
    }
}
