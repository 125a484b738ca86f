//! Which API group serves Calico's resources: `crd.projectcalico.org/v1` (the CRDs Calico has
//! always installed) or, on clusters installed from the release that introduced it,
//! `projectcalico.org/v3` as CRDs without `crd.projectcalico.org` (tigera/docs
//! `calico/release-notes/index.mdx`; Kubernetes 1.32 or later). The choice is libcalico-go's
//! (calico v3.32.1 `libcalico-go/lib/backend/k8s/discovery.go` `UsingV3CRDs`). Calico's Nodes
//! are in neither group: they are the Kubernetes Node's annotations (`resources/node.go`).

use super::{Cluster, ClusterError};
use kube::api::{ApiResource, GroupVersionKind};

pub const V1_GROUP: &str = "crd.projectcalico.org";
pub const V3_GROUP: &str = "projectcalico.org";

/// The API group Calico's resources are read through.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Group {
    #[serde(rename = "crd.projectcalico.org/v1")]
    V1,
    #[serde(rename = "projectcalico.org/v3")]
    V3,
}

/// The Calico resources calicoctl-win reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    IpPool,
    IpamConfig,
    IpamBlock,
    FelixConfiguration,
    ClusterInformation,
}

impl Group {
    /// libcalico-go's rule, from the names of the server's API groups.
    pub fn choose<'a>(groups: impl IntoIterator<Item = &'a str>) -> Self {
        let (mut v3, mut v1) = (false, false);
        for g in groups {
            v3 |= g == V3_GROUP;
            v1 |= g == V1_GROUP;
        }
        if v3 && !v1 { Self::V3 } else { Self::V1 }
    }

    /// `group/version`, as `apiVersion` says it.
    pub fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "crd.projectcalico.org/v1",
            Self::V3 => "projectcalico.org/v3",
        }
    }

    pub fn group(self) -> &'static str {
        self.api_version().split_once('/').unwrap_or_default().0
    }

    /// A resource's kind and plural in this group. IPAM's configuration is `IPAMConfig`
    /// (`ipamconfigs`) in v1 and `IPAMConfiguration` (`ipamconfigurations`) in v3
    /// (`api/config/crd/projectcalico.org_ipamconfigurations.yaml`); the rest are the same.
    pub fn names(self, kind: Kind) -> (&'static str, &'static str) {
        match (kind, self) {
            (Kind::IpPool, _) => ("IPPool", "ippools"),
            (Kind::IpamConfig, Self::V1) => ("IPAMConfig", "ipamconfigs"),
            (Kind::IpamConfig, Self::V3) => ("IPAMConfiguration", "ipamconfigurations"),
            (Kind::IpamBlock, _) => ("IPAMBlock", "ipamblocks"),
            (Kind::FelixConfiguration, _) => ("FelixConfiguration", "felixconfigurations"),
            (Kind::ClusterInformation, _) => ("ClusterInformation", "clusterinformations"),
        }
    }

    pub fn resource(self, kind: Kind) -> ApiResource {
        let (k, plural) = self.names(kind);
        let (group, version) = self.api_version().split_once('/').unwrap_or_default();
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, k), plural)
    }

    /// A v1 resource's plural in this group (the rights are written for v1).
    pub fn plural_of_v1(self, v1_plural: &'static str) -> &'static str {
        match (self, v1_plural) {
            (Self::V3, "ipamconfigs") => "ipamconfigurations",
            _ => v1_plural,
        }
    }
}

/// The group the server offers Calico's resources in (`/apis`). Where it offers both, a
/// converged `DatastoreMigration` moves Calico's components to v3 (tigera/docs
/// `calico/operations/crd-migration.mdx`: the operator sets `CALICO_API_GROUP`), and us.
pub fn discover(c: &Cluster) -> Result<Group, ClusterError> {
    let names = served(c)?;
    let both = names.contains(&V1_GROUP.to_owned()) && names.contains(&V3_GROUP.to_owned());
    let names = names.iter().map(String::as_str);
    Ok(match Group::choose(names) {
        Group::V1
            if both
                && read_migration(c)
                    .ok()
                    .flatten()
                    .is_some_and(|m| m.switched()) =>
        {
            Group::V3
        }
        g => g,
    })
}

/// The names of the API groups the server offers (its `/apis` discovery).
fn served(c: &Cluster) -> Result<Vec<String>, ClusterError> {
    if let Some(names) = c.served_groups.get() {
        return Ok(names.clone());
    }
    let groups = c.call("list", "API groups", c.client.list_api_groups())?;
    // The DatastoreMigration's versions (`read_migration` asks only those).
    let migration_versions = groups
        .groups
        .iter()
        .filter(|g| g.name == MIGRATION_GROUP)
        .flat_map(|g| g.versions.iter().map(|v| v.version.clone()))
        .collect();
    let _ = c.migration_versions.set(migration_versions);
    let names: Vec<String> = groups.groups.into_iter().map(|g| g.name).collect();
    Ok(c.served_groups.get_or_init(|| names).clone())
}

/// Each served group's lock as its ClusterInformation `default` says it (`datastoreReady`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct Locks {
    pub v1_served: bool,
    /// `datastoreReady` of the v1 ClusterInformation; `None` unread or unset.
    pub v1_ready: Option<bool>,
    pub v3_served: bool,
    pub v3_ready: Option<bool>,
}

impl Locks {
    /// The group Calico's components must be pinned to (`CALICO_API_GROUP`, the CNI config's
    /// `calico_api_group`): v3 when v1 is gone, or locked while v3 is ready. At `Converged`
    /// only v3 is unlocked (calico v3.32.1 `kube-controllers/pkg/controllers/migration/
    /// controller.go` `unlockV3CRDDatastore`) while discovery still reads v1, and the CNI
    /// plugin refuses an ADD on a locked datastore (`cni-plugin/pkg/plugin/plugin.go` `cmdAdd`).
    pub fn pin(&self) -> Option<Group> {
        let moved = self.v1_ready == Some(false) && self.v3_ready == Some(true);
        (self.v3_served && (!self.v1_served || moved)).then_some(Group::V3)
    }
}

/// The server's Calico groups and each one's lock; `known`: a group whose `datastoreReady` was
/// read already.
pub fn read_locks(c: &Cluster, known: (Group, Option<bool>)) -> Result<Locks, ClusterError> {
    let names = served(c)?;
    let ready = |g: Group| -> Result<Option<bool>, ClusterError> {
        if g == known.0 {
            return Ok(known.1);
        }
        let ar = g.resource(Kind::ClusterInformation);
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(c.client.clone(), &ar);
        let info = c.call_opt(
            "get",
            &format!("{}/default in {}", ar.plural, g.group()),
            api.get("default"),
        )?;
        Ok(info.and_then(|i| i.data.get("spec")?.get("datastoreReady")?.as_bool()))
    };
    let (v1_served, v3_served) = (
        names.iter().any(|n| n == V1_GROUP),
        names.iter().any(|n| n == V3_GROUP),
    );
    Ok(Locks {
        v1_served,
        v1_ready: if v1_served { ready(Group::V1)? } else { None },
        v3_served,
        v3_ready: if v3_served { ready(Group::V3)? } else { None },
    })
}

/// Where Calico's datastore migration is kept (kube-controllers
/// `pkg/controllers/migration/crd/migration.projectcalico.org_datastoremigrations.yaml`:
/// cluster-scoped; `v1beta1` in v3.32, `v1` from v3.33).
pub const MIGRATION_GROUP: &str = "migration.projectcalico.org";

/// A `DatastoreMigration` and the phase its status says (`Pending`, `Migrating`,
/// `WaitingForConflictResolution`, `Converged`, `Complete`, `Failed`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Migration {
    pub name: String,
    pub phase: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Migration {
    /// Whether the components read v3 from now on.
    pub fn switched(&self) -> bool {
        matches!(self.phase.as_str(), "Converged" | "Complete")
    }

    /// Whether it is still under way (every phase before `Complete`).
    pub fn under_way(&self) -> bool {
        self.phase != "Complete"
    }

    /// The one sentence preflight and status say of it (what each phase means: tigera/docs
    /// `calico/operations/crd-migration.mdx`).
    pub fn sentence(&self) -> String {
        let what = match self.phase.as_str() {
            "Pending" | "" => "its prerequisites are being checked",
            "Migrating" => {
                "the datastore is locked while resources are copied to the v3 CRDs: Calico's components pause and keep the data plane as it is, existing pods keep their connectivity, new pods and policy changes wait"
            }
            "WaitingForConflictResolution" => {
                "it waits for conflicting v3 resources to be resolved (kubectl get datastoremigration -o yaml lists them)"
            }
            "Converged" => {
                "the resources are in the v3 CRDs and projectcalico.org/v3 is unlocked; crd.projectcalico.org/v1 stays locked, so a component must be told CALICO_API_GROUP=projectcalico.org/v3 to work"
            }
            "Complete" => {
                "the resources are in the v3 CRDs; crd.projectcalico.org/v1 stays locked until the DatastoreMigration is deleted, which deletes its CRDs"
            }
            "Failed" => "it failed: deleting the DatastoreMigration rolls it back",
            _ => "its phase is not one calicoctl-win knows",
        };
        format!(
            "Calico's datastore migration {} is {}: {what}",
            self.name,
            if self.phase.is_empty() {
                "Pending"
            } else {
                &self.phase
            }
        )
    }
}

/// The cluster's `DatastoreMigration` (`v1`, else `v1beta1`), read once per client and only in
/// the versions discovery offers.
pub fn read_migration(c: &Cluster) -> Result<Option<Migration>, ClusterError> {
    if let Some(m) = c.migration.get() {
        return Ok(m.clone());
    }
    let offered = c.migration_versions.get();
    let mut found = None;
    for version in ["v1", "v1beta1"] {
        if offered.is_some_and(|o| !o.iter().any(|v| v == version)) {
            continue;
        }
        let kind = (
            MIGRATION_GROUP,
            version,
            "DatastoreMigration",
            "datastoremigrations",
        );
        let api = c.dynamic(kind);
        let Some(list) = c.call_opt(
            "list",
            "datastoremigrations",
            api.list(&kube::api::ListParams::default()),
        )?
        else {
            continue;
        };
        found = list.items.first().map(|m| {
            let status = m.data.get("status");
            let text = |k: &str| {
                status
                    .and_then(|s| s.get(k))
                    .and_then(serde_json::Value::as_str)
                    .map(str::to_owned)
            };
            Migration {
                name: m.metadata.name.clone().unwrap_or_default(),
                phase: text("phase").unwrap_or_default(),
                message: text("message"),
            }
        });
        break;
    }
    Ok(c.migration.get_or_init(|| found).clone())
}

impl Cluster {
    /// The group Calico's resources are read through, discovered at the first ask.
    pub fn calico_group(&self) -> Result<Group, ClusterError> {
        if let Some(g) = self.calico_group.get() {
            return Ok(*g);
        }
        let g = discover(self)?;
        Ok(*self.calico_group.get_or_init(|| g))
    }

    /// A Calico resource in that group.
    pub fn calico_resource(&self, kind: Kind) -> Result<ApiResource, ClusterError> {
        Ok(self.calico_group()?.resource(kind))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// discovery.go: "If v3 is present but v1 is not ... use the projectcalico.org/v3 API
    /// group. If both are present ... use crd.projectcalico.org/v1 directly."
    #[test]
    fn v3_only_where_the_server_offers_v3_without_v1() {
        assert_eq!(Group::choose(["apps", V3_GROUP]), Group::V3);
        assert_eq!(Group::choose([V1_GROUP, V3_GROUP]), Group::V1);
        assert_eq!(Group::choose([V1_GROUP]), Group::V1);
        assert_eq!(Group::choose(["apps"]), Group::V1);
        assert_eq!(
            Group::V3.resource(Kind::IpamConfig).plural,
            "ipamconfigurations"
        );
        assert_eq!(
            Group::V3.resource(Kind::IpamConfig).kind,
            "IPAMConfiguration"
        );
        assert_eq!(Group::V1.resource(Kind::IpamConfig).plural, "ipamconfigs");
        assert_eq!(
            Group::V3.resource(Kind::IpPool).api_version,
            "projectcalico.org/v3"
        );
    }
}
