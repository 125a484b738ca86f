//! The API group this node's Calico components read, judged against the one the cluster
//! needs them on (`cluster::calico_api::Locks::pin`): after a datastore migration the v1
//! group stays locked, and a component that reads it refuses every new pod.

use super::judge::{Code, Finding};
use crate::cluster::calico_api::{Group, Locks};
use crate::host::Host;
use crate::layout::env::EnvVars;
use crate::layout::{InstallRoot, Role};
use crate::release::version::CalicoVersion;

/// The group calico-node's environment file pins (`CALICO_API_GROUP`), as `apiVersion` says
/// it; `None` when it pins none (or one libcalico-go would not know) or the file is unread.
pub fn pinned(host: &dyn Host, root: &InstallRoot) -> Option<Group> {
    let bytes = host.read_file(&root.env_file(Role::Node)).ok()??;
    let env = crate::render::env::parse(&String::from_utf8_lossy(&bytes));
    let value = env.get(EnvVars::CALICO_API_GROUP)?.trim().to_owned();
    // libcalico-go compares without case (`discovery.go` `strings.EqualFold`).
    [Group::V1, Group::V3]
        .into_iter()
        .find(|g| g.api_version().eq_ignore_ascii_case(&value))
}

/// The group the components read: the pin, else libcalico-go's discovery (v3 only where v1 is
/// not served: v3.32.1 `libcalico-go/lib/backend/k8s/discovery.go` `UsingV3CRDs`).
pub fn read_by_components(locks: &Locks, pin: Option<Group>) -> Group {
    pin.unwrap_or(if locks.v3_served && !locks.v1_served {
        Group::V3
    } else {
        Group::V1
    })
}

/// `api-group`: the components read a locked group while the cluster needs them on another.
/// `release` is the node's Calico release, when known: one before v3.32.0 cannot be told.
pub fn judge(
    locks: &Locks,
    pin: Option<Group>,
    release: Option<&CalicoVersion>,
) -> Option<Finding> {
    let needed = locks.pin()?;
    let reads = read_by_components(locks, pin);
    if reads == needed {
        return None;
    }
    let message = format!(
        "{} is locked (ClusterInformation datastoreReady: false, as a datastore migration leaves it) and this node's Calico components read it{}: the CNI plugin refuses every new pod on this node",
        reads.api_version(),
        if pin.is_some() {
            " (CALICO_API_GROUP pins it)"
        } else {
            ""
        },
    );
    let remedy = match release {
        Some(v) if !v.reads_api_group_pin() => format!(
            "this node's Calico {v} cannot be told the group (CALICO_API_GROUP and the CNI config's calico_api_group are read from v3.32.0): install Calico v3.32.0 or later on this node"
        ),
        _ => format!(
            "calicoctl-win reconfigure: it sets CALICO_API_GROUP={} for calico-node, Felix and confd and calico_api_group in the CNI config, and restarts them",
            needed.api_version()
        ),
    };
    Some(Finding::new(Code::ApiGroup, "CalicoNode", message, remedy))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kube-controllers leaves v1 locked at `Converged` (release-v3.33
    /// `pkg/controllers/migration/controller.go` `unlockV3CRDDatastore`).
    fn converged() -> Locks {
        Locks {
            v1_served: true,
            v1_ready: Some(false),
            v3_served: true,
            v3_ready: Some(true),
        }
    }

    /// An administrator's pin to v1 reads the lock too. The finding and its remedy, a pin to
    /// v3, a migration under way, v1 cleaned up and a release before v3.32.0: lifecycle
    /// `after_a_converged_migration_reconfigure_pins_the_node_to_v3` and
    /// `a_migrating_cluster_pins_nothing_and_an_old_release_is_told_so`.
    #[test]
    fn a_pin_to_the_locked_v1_group_is_a_finding() {
        let f = judge(&converged(), Some(Group::V1), None).expect("finding");
        assert!(f.message.contains("(CALICO_API_GROUP pins it)"), "{f:?}");
    }
}
