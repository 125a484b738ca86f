//! Which API group serves Calico's resources: `crd.projectcalico.org/v1` (the CRDs Calico has
//! always installed) or, on clusters installed from the release that introduced it,
//! `projectcalico.org/v3` served as CRDs with no `crd.projectcalico.org` at all (tigera/docs
//! `calico/release-notes/index.mdx`; Kubernetes 1.32 or later).
//!
//! The choice is libcalico-go's (projectcalico/calico v3.32.1
//! `libcalico-go/lib/backend/k8s/discovery.go` `UsingV3CRDs`): v3 when the server offers the
//! group `projectcalico.org` and not `crd.projectcalico.org`; with both, the v3 group is
//! Calico's aggregated API server in front of the v1 CRDs, which are then read directly.
//!
//! Calico's Nodes are in neither group on the Kubernetes datastore: libcalico-go keeps them
//! on the Kubernetes Node, as its annotations (v3.32.1
//! `libcalico-go/lib/backend/k8s/resources/node.go`; neither `api/config/crd` nor
//! `libcalico-go/config/crd` has a Node CRD), so they are read from the Node whichever group
//! serves the rest.

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

    pub fn group(self) -> &'static str {
        match self {
            Self::V1 => V1_GROUP,
            Self::V3 => V3_GROUP,
        }
    }

    pub fn version(self) -> &'static str {
        match self {
            Self::V1 => "v1",
            Self::V3 => "v3",
        }
    }

    /// `group/version`, as `apiVersion` says it.
    pub fn api_version(self) -> String {
        format!("{}/{}", self.group(), self.version())
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

    pub fn plural(self, kind: Kind) -> &'static str {
        self.names(kind).1
    }

    pub fn resource(self, kind: Kind) -> ApiResource {
        let (k, plural) = self.names(kind);
        ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(self.group(), self.version(), k),
            plural,
        )
    }

    /// A v1 resource's plural in this group (the rights are written for v1).
    pub fn plural_of_v1(self, v1_plural: &'static str) -> &'static str {
        match (self, v1_plural) {
            (Self::V3, "ipamconfigs") => "ipamconfigurations",
            _ => v1_plural,
        }
    }
}

/// The group the server offers Calico's resources in (its `/apis` discovery). Where it offers
/// both, a `DatastoreMigration` that has converged moves Calico's components to v3 (tigera/docs
/// `calico/operations/crd-migration.mdx`: at `Converged` the operator sets
/// `CALICO_API_GROUP=projectcalico.org/v3` on every component), and so does calicoctl-win.
pub fn discover(c: &Cluster) -> Result<Group, ClusterError> {
    let groups = c.call("list", "API groups", c.client.list_api_groups())?;
    let migration_versions = groups
        .groups
        .iter()
        .filter(|g| g.name == MIGRATION_GROUP)
        .flat_map(|g| g.versions.iter().map(|v| v.version.clone()))
        .collect();
    let _ = c.migration_versions.set(migration_versions);
    let names: Vec<&str> = groups.groups.iter().map(|g| g.name.as_str()).collect();
    let both = names.contains(&V1_GROUP) && names.contains(&V3_GROUP);
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
    /// Whether the components read v3 from now on (`Converged` and `Complete`).
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
                "the resources are in the v3 CRDs and the datastore is unlocked: components switch to projectcalico.org/v3 ('calicoctl-win reconfigure' sets CALICO_API_GROUP on this node's services)"
            }
            "Complete" => "every component reads projectcalico.org/v3",
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

/// The cluster's `DatastoreMigration`, if one exists (`v1`, else `v1beta1`); none where the
/// group is not served. Read once per client, and only in the versions the server's discovery
/// offers (none asked where it offers the group in no version).
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
        let ar = ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk(MIGRATION_GROUP, version, "DatastoreMigration"),
            "datastoremigrations",
        );
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(c.client.clone(), &ar);
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
