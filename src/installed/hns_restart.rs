//! The last HNS restart CalicoNode's watchdog answered, as it records it in Calico's registry
//! key (`HnsRestart`, JSON) for `status` and the node's condition.

use crate::host::{Host, HostResult, ServiceState};
use crate::layout::HNS_RESTART_VALUE;
use serde::{Deserialize, Serialize};

/// The last HNS restart CalicoNode saw and what it did (`HnsRestart`, JSON).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HnsRestart {
    /// When it was seen, in seconds since 1970.
    pub at: i64,
    pub from_pid: u32,
    pub to_pid: u32,
    /// The services restarted.
    pub restarted: Vec<String>,
    /// The services that could not be restarted, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub failed: Vec<String>,
}

impl HnsRestart {
    /// The services it could not restart that still do not run (one restarted since, by the
    /// SCM's recovery or by hand, is no fault any more), with why.
    pub fn still_failing<'a>(&'a self, host: &dyn Host) -> Vec<&'a str> {
        self.failed
            .iter()
            .filter(|f| {
                let name = f.split_once(':').map_or(f.as_str(), |(n, _)| n);
                !matches!(
                    host.service_query(name),
                    Ok(Some(q)) if q.state == ServiceState::Running
                )
            })
            .map(String::as_str)
            .collect()
    }
}

/// Records a restart as the last one.
pub fn keep(host: &dyn Host, r: &HnsRestart) -> HostResult<()> {
    super::keep_json(host, HNS_RESTART_VALUE, r)
}

/// The last HNS restart CalicoNode recorded, if any (a value that does not read is none).
pub fn last(host: &dyn Host) -> Option<HnsRestart> {
    super::calico_json(host, HNS_RESTART_VALUE).ok().flatten()
}
