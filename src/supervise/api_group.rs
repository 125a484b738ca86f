//! Calico's API group under the running components. libcalico-go picks the group once at
//! start (projectcalico/calico v3.32.1 `libcalico-go/lib/backend/k8s/discovery.go`
//! `UsingV3CRDs`), so after a migration deletes `crd.projectcalico.org` the components read a
//! gone group. CalicoNode discovers the group at each look and, when it changed, restarts
//! CalicoFelix, CalicoConfd and calico-node's start-up once.

use super::log::Log;
use crate::cluster::calico_api::Group;
use crate::host::{EventLevel, Host};
use std::collections::BTreeMap;

/// The variable that pins the group (libcalico-go `apiconfig` `CalicoAPIGroup`).
pub const PIN: &str = "CALICO_API_GROUP";

/// The group the components run with, and what a new look changes.
#[derive(Debug, Default)]
pub struct GroupWatch {
    /// The environment pins the group: the components never rediscover it.
    pinned: bool,
    running: Option<Group>,
}

impl GroupWatch {
    pub fn new(env: &BTreeMap<String, String>) -> Self {
        Self {
            pinned: env.get(PIN).is_some_and(|v| !v.is_empty()),
            running: None,
        }
    }

    /// The group now: `Some((from, to))` when the components started with another; never pinned.
    pub fn changed(&mut self, now: Group) -> Option<(Group, Group)> {
        if self.pinned {
            return None;
        }
        match self.running.replace(now) {
            Some(was) if was != now => Some((was, now)),
            _ => None,
        }
    }
}

/// Restarts the registered CalicoFelix and CalicoConfd, said in the log and the event log.
pub fn restart_components(
    host: &dyn Host,
    (from, to): (Group, Group),
    wait: std::time::Duration,
    stop: &crate::duration::Stop,
    log: &Log,
) -> Result<(), crate::duration::Stopped> {
    use crate::layout::Role;
    let what = format!(
        "Calico's API group changed from {} to {}: restarting Calico's components so that they read it",
        from.api_version(),
        to.api_version()
    );
    log.warn(&what);
    let (id, level) = (crate::layout::EVENT_API_GROUP_CHANGED, EventLevel::Warning);
    log.event(host, level, id, &format!("CalicoNode: {what}"));
    let roles = [Role::Felix, Role::Confd];
    let restarted = super::hns_watch::restart_each(host, &roles, wait, "", stop, log);
    restarted.map(|_| ()).map_err(|_| crate::duration::Stopped)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_look_records_a_change_restarts_once_a_pin_never() {
        let mut w = GroupWatch::new(&BTreeMap::new());
        assert_eq!(w.changed(Group::V1), None);
        assert_eq!(w.changed(Group::V1), None);
        assert_eq!(w.changed(Group::V3), Some((Group::V1, Group::V3)));
        assert_eq!(w.changed(Group::V3), None);
        let pinned: BTreeMap<String, String> =
            [(PIN.to_owned(), "projectcalico.org/v3".to_owned())].into();
        let mut w = GroupWatch::new(&pinned);
        assert_eq!(w.changed(Group::V1), None);
        assert_eq!(w.changed(Group::V3), None);
    }
}
