//! The API server's time a run's Lease (lease.rs) is written by, never this host's clock.

use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::Stop;
use std::time::Duration;

/// The API server's time: its `Date` now, else the last one moved on by the monotonic time
/// while younger than `RENEW` (`Cluster::server_clock`); `None` otherwise, never this host's
/// wall clock (a lease written behind the server's clock would be expired at once).
pub fn server_time(c: &Cluster) -> Option<i64> {
    server_time_sent(c, None)
        .ok()
        .flatten()
        .or_else(|| c.server_clock(super::options::RENEW))
}

/// `server_time`, its call (cut by `stop` when given) failed an error: the renewal writes
/// nothing then, and counts as refused.
pub(super) fn server_time_sent(
    c: &Cluster,
    stop: Option<(&Stop, Duration)>,
) -> Result<Option<i64>, ClusterError> {
    let sent = probe::server_date(c, stop)?;
    match sent {
        Some(t) => {
            c.note_server_date(t);
            Ok(Some(t))
        }
        None => Ok(c.server_clock(super::options::RENEW)),
    }
}
