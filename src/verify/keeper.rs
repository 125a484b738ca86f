//! The renewal keeper of a run's Lease (shared.rs): each renewal written by the API server's
//! time on the resourceVersion the run last wrote (kube-apiserver answers another 409).

use super::options::LEASE;
use super::probe;
use crate::cluster::{Cluster, ClusterError};
use crate::duration::Stop;
use kube::Api;
use kube::api::PostParams;
use std::time::{Duration, Instant};

/// Seconds from now to the end of a lease written now.
pub fn lease_s() -> i64 {
    i64::try_from(LEASE.as_secs()).unwrap_or(60)
}

/// The API server's time: its `Date` now, else the last one moved on by the monotonic time
/// while younger than `RENEW` (`Cluster::server_clock`); `None` otherwise, never this host's
/// wall clock (a lease written behind the server's clock would be expired at once).
pub fn server_time(c: &Cluster) -> Option<i64> {
    server_time_unless(c, None)
}

/// `server_time`, its call never begun, or ended, once `stop` is requested or `within` has
/// passed.
pub fn server_time_unless(c: &Cluster, stop: Option<(&Stop, Duration)>) -> Option<i64> {
    server_time_sent(c, stop)
        .ok()
        .flatten()
        .or_else(|| c.server_clock(super::options::RENEW))
}

/// `server_time_unless`, its call failed an error. The keeper writes nothing then: a server
/// that does not answer its look at the time would not take the renewal either, and it
/// counts as refused.
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

/// A lease's change (the object as held to the object to write) and the test of whether an
/// object read is still the run's.
pub type Change<'a, K> = (&'a dyn Fn(K) -> K, &'a dyn Fn(&K) -> bool);

/// One write of a lease: `change` written on `last` (then the object written), every call cut
/// by `ending` or at `by`. On a 409 an object still `ours` is read and written once more; one
/// deleted or not the run's is `Some(false)`, two conflicts in a row `None`.
pub fn write<K>(
    c: &Cluster,
    (api, name, what): (&Api<K>, &str, &str),
    last: &mut K,
    (change, ours): Change<'_, K>,
    (ending, by): (&Stop, Instant),
) -> Result<Option<bool>, ClusterError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let pp = PostParams::default();
    let left = || by.saturating_duration_since(Instant::now());
    for _ in 0..2 {
        let out = change(last.clone());
        let err = match c.call_unless(
            ending,
            left(),
            ("update", what),
            api.replace(name, &pp, &out),
        ) {
            Ok(w) => {
                *last = w;
                return Ok(Some(true));
            }
            Err(e) => e,
        };
        let read = match err {
            ClusterError::Api { code: 409, .. } => {
                match c.call_unless(ending, left(), ("get", what), api.get(name)) {
                    Ok(r) => Some(r),
                    Err(e) if e.is_not_found() => None,
                    Err(e) => return Err(e),
                }
            }
            ClusterError::Api { code: 404, .. } => None,
            e => return Err(e),
        };
        match read.filter(|r| ours(r)) {
            Some(r) => *last = r,
            None => return Ok(Some(false)),
        }
    }
    Ok(None)
}
