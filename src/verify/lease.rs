//! The run's own namespace as a lease, as the turn is in a namespace given (shared.rs): its
//! annotation `EXPIRES` says until when the run that made it lives, by the API server's
//! clock. It is written at the namespace's creation for `shared::LEASE` and renewed every
//! `shared::RENEW` while the run lives (its clean-up included) by an update that carries the
//! resourceVersion the run last wrote (kube-apiserver's `Update` refuses another, 409:
//! `staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go`). A run killed
//! outright stops renewing, so the next run deletes its namespace once `EXPIRES` has passed,
//! with a delete whose preconditions are the uid and resourceVersion it judged by (the
//! namespace's `Delete` checks both, 409 otherwise: `pkg/registry/core/namespace/storage/
//! storage.go`): a living run that renewed meanwhile keeps its namespace. A namespace without
//! the annotation (an older calicoctl-win's) is judged by its age (`objects::leftovers`).

use super::probe;
use super::shared::{LEASE, RENEW};
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use kube::api::PostParams;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

pub use super::objects::{
    LEASE_EXPIRES as EXPIRES, lease_expires as expires, leased_until as until,
};

/// Seconds from now to the end of a lease written now.
pub fn lease_s() -> i64 {
    i64::try_from(LEASE.as_secs()).unwrap_or(60)
}

/// The API server's clock less this host's, from the last `Date` the server sent this process
/// (`i64::MIN`: none yet).
static OFFSET: std::sync::atomic::AtomicI64 = std::sync::atomic::AtomicI64::new(i64::MIN);

/// The API server's time: its `Date` now, else this host's clock moved by the difference the
/// last `Date` showed; `None` when the server has sent none (never this host's clock alone: a
/// lease written by a clock behind the server's would be expired at once, and another run
/// would delete a living run's namespace).
pub fn server_time(c: &Cluster) -> Option<i64> {
    let local = crate::duration::now();
    match probe::server_now(c).ok().flatten() {
        Some(t) => {
            OFFSET.store(t - local, Ordering::SeqCst);
            Some(t)
        }
        None => offset_time(local, OFFSET.load(Ordering::SeqCst)),
    }
}

/// `local` moved by `offset`, when one is known.
fn offset_time(local: i64, offset: i64) -> Option<i64> {
    (offset != i64::MIN).then(|| local.saturating_add(offset))
}

/// The run's namespace as it holds it: the object it last wrote (its resourceVersion the
/// precondition of the next write); `done` once the run is over or the namespace is not its
/// own any more (deleted, or its lease written by someone else).
#[derive(Debug)]
pub struct Held {
    pub name: String,
    pub uid: String,
    last: Mutex<Namespace>,
    done: AtomicBool,
}

impl Held {
    pub fn new(written: Namespace) -> Self {
        Self {
            name: written.metadata.name.clone().unwrap_or_default(),
            uid: written.metadata.uid.clone().unwrap_or_default(),
            last: Mutex::new(written),
            done: AtomicBool::new(false),
        }
    }

    /// The renewals stopped: one under way ends first (it holds the lock), none follows.
    pub fn stop(&self) {
        let _last = self.last.lock().unwrap_or_else(|e| e.into_inner());
        self.done.store(true, Ordering::SeqCst);
    }
}

/// One write of the lease, to run out at `at_s`, unless the run is over: whether the
/// namespace is still the run's.
pub fn renew(c: &Cluster, held: &Held, at_s: i64) -> Result<bool, ClusterError> {
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    if held.done.load(Ordering::SeqCst) {
        return Ok(true);
    }
    write(c, held, &mut last, at_s)
}

/// The lease's last write (`--keep-on-failure`: what the run made is kept until `at_s`), the
/// renewals stopped: whether the namespace is still the run's.
pub fn hold_until(c: &Cluster, held: &Held, at_s: i64) -> Result<bool, ClusterError> {
    let mut last = held.last.lock().unwrap_or_else(|e| e.into_inner());
    held.done.store(true, Ordering::SeqCst);
    write(c, held, &mut last, at_s)
}

/// The lease written, to run out at `at_s`. A 409 is looked at again: a change by someone
/// else (a label added) that left the lease as the run wrote it is no loss, and the write is
/// tried once more on the object read; a lease written by another, or a namespace deleted
/// or made again, is not the run's any more.
fn write(c: &Cluster, held: &Held, last: &mut Namespace, at_s: i64) -> Result<bool, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{}", held.name);
    for _ in 0..2 {
        let out = until(last.clone(), at_s);
        match c.call_opt(
            "update",
            &what,
            api.replace(&held.name, &PostParams::default(), &out),
        ) {
            Ok(Some(w)) => {
                *last = w;
                return Ok(true);
            }
            Ok(None) => return Ok(false),
            Err(ClusterError::Api { code: 409, .. }) => {
                let Some(now) = c.call_opt("get", &what, api.get(&held.name))? else {
                    return Ok(false);
                };
                let ours = now.metadata.uid.as_deref() == Some(held.uid.as_str())
                    && now.metadata.deletion_timestamp.is_none()
                    && expires(&now) == expires(last);
                if !ours {
                    return Ok(false);
                }
                *last = now;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// Renews the lease every `RENEW` (for `LEASE` from the API server's time) until the run is
/// over or the namespace is no longer its own: run beside the run, on a thread of its own.
pub fn keep(c: &Cluster, held: &Held) {
    // A failed write is tried again at the next renewal, within the lease.
    // Without the server's time the renewal waits for the next (the lease runs on meanwhile).
    keep_every(held, RENEW, || match server_time(c) {
        Some(t) => renew(c, held, t + lease_s()).unwrap_or(true),
        None => true,
    });
}

/// Calls `renew` every `every` until the run is over or `renew` says the namespace is no
/// longer the run's.
fn keep_every(held: &Held, every: Duration, mut renew: impl FnMut() -> bool) {
    let mut next = Instant::now() + every;
    while !held.done.load(Ordering::SeqCst) {
        if Instant::now() < next {
            std::thread::sleep(Duration::from_millis(200).min(every));
            continue;
        }
        next = Instant::now() + every;
        if !held.done.load(Ordering::SeqCst) && !renew() {
            held.done.store(true, Ordering::SeqCst);
        }
    }
}

#[cfg(test)]
mod clock_tests {
    /// Without a `Date` from the server there is no lease time, never this host's clock alone;
    /// with one seen, this host's clock moved by the difference it showed.
    #[test]
    fn no_server_time_without_a_date_seen() {
        assert_eq!(super::offset_time(1_000, i64::MIN), None);
        assert_eq!(super::offset_time(1_000, -90), Some(910));
        assert_eq!(super::offset_time(1_000, 0), Some(1_000));
    }
}
