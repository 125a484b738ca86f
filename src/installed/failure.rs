//! What CalicoNode failed at that install and reconfigure wait for (a route it could not put
//! back, an initialisation that gave up), kept in Calico's registry key where their wait reads
//! it: the wait then ends at once with the service's own error instead of running out its
//! timeout on something that will not come. Each failure also goes to the service's log and,
//! as a warning, to the Application event log.

use crate::host::{Host, HostResult};
use crate::layout::CALICO_KEY;
use crate::layout::FAILURES_VALUE;
use serde::{Deserialize, Serialize};

/// At most this many are kept; the oldest go first.
const KEPT: usize = 16;

/// What a failure stands in the way of.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "name", rename_all = "kebab-case")]
pub enum Blocks {
    /// A route the node had before, `169.254.169.254/32`.
    Route(String),
    /// CalicoNode's initialisation as a whole (the init-done marker never comes).
    Init,
}

/// One failure of CalicoNode's start.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    pub service: String,
    /// What it could not do, `add the metadata route 169.254.169.254/32`.
    pub what: String,
    /// The error with its causes, the OS's code among them.
    pub error: String,
    pub blocks: Blocks,
    /// Unix seconds when it failed.
    pub at: i64,
}

/// The failures recorded so far (none when the value is missing or unreadable).
pub fn recorded(host: &dyn Host) -> HostResult<Vec<Failure>> {
    Ok(super::calico_json(host, FAILURES_VALUE)?.unwrap_or_default())
}

/// The failures recorded at or after `since` (Unix seconds): those of the start a command
/// is waiting for, not of an earlier one.
pub fn recorded_since(host: &dyn Host, since: i64) -> HostResult<Vec<Failure>> {
    Ok(recorded(host)?
        .into_iter()
        .filter(|f| f.at >= since)
        .collect())
}

/// A new start begins with none.
pub fn clear(host: &dyn Host) -> HostResult<()> {
    host.reg_delete_value(CALICO_KEY, FAILURES_VALUE)
}

/// Adds a failure to the record the waits read (the oldest go beyond `KEPT`).
pub fn record(host: &dyn Host, failure: Failure) -> HostResult<()> {
    let mut all = recorded(host)?;
    all.push(failure);
    let extra = all.len().saturating_sub(KEPT);
    all.drain(..extra);
    super::keep_json(host, FAILURES_VALUE, &all)
}
