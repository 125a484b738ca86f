//! The CNI config withheld while Calico's network is not ready after a boot: a pod started
//! before CalicoNode remakes the HNS networks loses its networking (projectcalico/calico#5828).
//! The config is moved aside at shutdown (or at the first start of a boot) and put back once
//! calico-node startup has finished; kubelet waits meanwhile.

use super::log::Log;
use crate::host::{Access, Host, HostResult};
use crate::layout::WITHHELD_SUFFIX;
use crate::layout::env::EnvVars;
use crate::layout::join;
use std::collections::BTreeMap;

/// The CNI config's path, from the service environment (`CNI_CONF_DIR`, `CNI_CONF_FILENAME`).
fn config_path(env: &BTreeMap<String, String>) -> Option<String> {
    let dir = env.get(EnvVars::CNI_CONF_DIR).filter(|d| !d.is_empty())?;
    let name = env
        .get(EnvVars::CNI_CONF_FILENAME)
        .filter(|n| !n.is_empty())?;
    Some(join(dir, name))
}

/// Moves the CNI config aside; true when it did.
pub fn withhold(
    host: &dyn Host,
    env: &BTreeMap<String, String>,
    why: &str,
    log: &Log,
) -> HostResult<bool> {
    let Some(conf) = config_path(env) else {
        return Ok(false);
    };
    let Some(bytes) = host.read_file(&conf)? else {
        return Ok(false);
    };
    // Written, then removed: a stop between the two leaves both, which `release` sorts out.
    host.replace_file(&format!("{conf}{WITHHELD_SUFFIX}"), &bytes, Access::Normal)?;
    host.remove_file(&conf)?;
    log.info(&format!(
        "{why}: withheld the CNI config {conf} until calico-node startup has finished, so that no pod gets a network that is about to be made again"
    ));
    Ok(true)
}

/// Puts a withheld CNI config back; one written since (by install or reconfigure) wins.
pub fn release(host: &dyn Host, env: &BTreeMap<String, String>, log: &Log) -> HostResult<()> {
    let Some(conf) = config_path(env) else {
        return Ok(());
    };
    let withheld = format!("{conf}{WITHHELD_SUFFIX}");
    let Some(bytes) = host.read_file(&withheld)? else {
        return Ok(());
    };
    if host.read_file(&conf)?.is_none() {
        host.replace_file(&conf, &bytes, Access::Normal)?;
        log.info(&format!(
            "calico-node startup has finished: the CNI config {conf} is back"
        ));
    }
    host.remove_file(&withheld)?;
    Ok(())
}
