//! When each HNS endpoint was first seen at fault, kept in the registry (`EndpointFaults`):
//! CalicoNode records its look every minute and `repair` its own, so a fault counts only once
//! it has lasted longer than the grace period, whatever made one look wrong (a pod scheduled
//! late, an address kubelet has not posted yet, a CNI ADD slower than the grace period).

use crate::host::{Host, HostResult};
use crate::layout::ENDPOINT_FAULTS_VALUE;
use std::collections::BTreeMap;

/// At most this many endpoints are remembered: a fault beyond them is never aged, so never
/// repaired (the safe side).
pub const MAX_ENTRIES: usize = 4096;

/// What one look found an endpoint to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Look {
    Fault,
    Healthy,
    /// Not judged (the cluster was not asked): what was remembered stays.
    Unjudged,
}

/// Endpoint id to when it was first seen at fault (seconds since 1970).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Seen(BTreeMap<String, i64>);

impl Seen {
    /// When `id` was first seen at fault, if it is at fault since.
    pub fn first(&self, id: &str) -> Option<i64> {
        self.0.get(&id.to_ascii_lowercase()).copied()
    }

    /// Takes one look in (every endpoint there is, by id): a fault is remembered from the
    /// first look that saw it; an endpoint judged healthy (or gone) is forgotten; one not
    /// judged stays as it was.
    pub fn observe(&mut self, looks: &[(String, Look)], now: i64) {
        let present: BTreeMap<String, Look> = looks
            .iter()
            .map(|(id, look)| (id.to_ascii_lowercase(), *look))
            .collect();
        self.0
            .retain(|id, _| matches!(present.get(id), Some(Look::Fault | Look::Unjudged)));
        for (id, look) in present {
            if look == Look::Fault && self.0.len() < MAX_ENTRIES {
                self.0.entry(id).or_insert(now);
            }
        }
    }
}

/// The record as the registry holds it; one that is missing or not JSON is empty (every
/// fault is then seen for the first time: nothing is repaired on it).
pub fn load(host: &dyn Host) -> Seen {
    Seen(
        crate::installed::calico_json::<BTreeMap<String, i64>>(host, ENDPOINT_FAULTS_VALUE)
            .ok()
            .flatten()
            .unwrap_or_default()
            .into_iter()
            .take(MAX_ENTRIES)
            .collect(),
    )
}

/// Writes the record (deletes the value when it is empty).
pub fn store(host: &dyn Host, seen: &Seen) -> HostResult<()> {
    let kept = (!seen.0.is_empty()).then_some(&seen.0);
    crate::installed::keep_or_forget(host, ENDPOINT_FAULTS_VALUE, kept)
}
