//! `preflight --fix`: the documented cluster patches for IPIP and IPAM strict affinity, as
//! data first (so they can be shown, confirmed or only printed) and applied second.

use super::calico_api::{Group, Kind};
use super::facts::ClusterFacts;
use super::{Cluster, ClusterError};
use crate::config::types::Backend;
use kube::Api;
use kube::api::{DynamicObject, Patch, PatchParams, PostParams};
use serde::Serialize;
use serde_json::{Value, json};

/// One merge patch of a Calico resource.
#[derive(Clone, Debug, Serialize)]
pub struct Fix {
    /// The check it fixes.
    pub check: &'static str,
    pub kind: &'static str,
    pub plural: &'static str,
    /// The API group and version it is patched in (`cluster::calico_api`).
    pub api_version: String,
    pub name: String,
    pub patch: Value,
    /// Create the object with the patch as its content when it does not exist.
    pub create_if_missing: bool,
    /// The same change as a `kubectl` command, for the record.
    pub command: String,
    #[serde(skip)]
    group: Group,
    #[serde(skip)]
    resource: Kind,
}

impl Fix {
    fn new(
        check: &'static str,
        (group, resource): (Group, Kind),
        name: &str,
        patch: Value,
    ) -> Self {
        let (kind, plural) = group.names(resource);
        let command = format!(
            "kubectl patch {plural}.{} {name} --type merge -p '{patch}'",
            group.group()
        );
        Self {
            check,
            kind,
            plural,
            api_version: group.api_version().to_owned(),
            name: name.to_owned(),
            patch,
            create_if_missing: false,
            command,
            group,
            resource,
        }
    }
}

/// The patches that would make `ipip-disabled` and `strict-affinity` pass. IPv4 pools with
/// IPIP become VXLAN pools for the vxlan backend (Calico's documented IPIP-to-VXLAN migration)
/// and plain pools for windows-bgp.
pub fn plan(f: &ClusterFacts, backend: Backend) -> Vec<Fix> {
    let g = f.calico_api;
    let mut fixes = Vec::new();
    if f.felix.ipip_enabled == Some(true) {
        fixes.push(Fix::new(
            "ipip-disabled",
            (g, Kind::FelixConfiguration),
            "default",
            json!({"spec": {"ipipEnabled": false}}),
        ));
    }
    let ipip = |p: &&crate::cluster::facts::IpPool| {
        !p.ipv6 && crate::cluster::facts::encapsulation_on(&p.ipip_mode)
    };
    for pool in f.ip_pools.iter().filter(ipip) {
        let spec = match backend {
            Backend::Vxlan => json!({"ipipMode": "Never", "vxlanMode": "Always"}),
            _ => json!({"ipipMode": "Never"}),
        };
        fixes.push(Fix::new(
            "ipip-disabled",
            (g, Kind::IpPool),
            &pool.name,
            json!({ "spec": spec }),
        ));
    }
    if f.calico_version.is_some() && f.strict_affinity != Some(true) {
        let mut fix = Fix::new(
            "strict-affinity",
            (g, Kind::IpamConfig),
            "default",
            json!({"spec": {"strictAffinity": true}}),
        );
        fix.create_if_missing = true;
        fixes.push(fix);
    }
    fixes
}

/// Applies the fixes in order; stops at the first that the server refuses.
pub fn apply(c: &Cluster, fixes: &[Fix]) -> Result<(), ClusterError> {
    for fix in fixes {
        let ar = fix.group.resource(fix.resource);
        let api: Api<DynamicObject> = Api::all_with(c.client.clone(), &ar);
        let what = format!("{}/{}", fix.plural, fix.name);
        let patched = c.call_opt(
            "patch",
            &what,
            api.patch(
                &fix.name,
                &PatchParams::default(),
                &Patch::Merge(&fix.patch),
            ),
        )?;
        if patched.is_none() {
            if !fix.create_if_missing {
                return Err(ClusterError::Api {
                    server: c.server.clone(),
                    verb: "patch".into(),
                    resource: what,
                    code: 404,
                    message: "it no longer exists".into(),
                });
            }
            let mut object = DynamicObject::new(&fix.name, &ar);
            object.data = fix.patch.clone();
            // v1's CRD requires `autoAllocateBlocks` (libcalico-go/config/crd/
            // crd.projectcalico.org_ipamconfigs.yaml at v3.30.7), and IPAM's own default is
            // true (libcalico-go/lib/ipam/ipam.go:1931); v3's CRD defaults it to true itself
            // (api/config/crd/projectcalico.org_ipamconfigurations.yaml at v3.32.1).
            if fix.kind == "IPAMConfig" {
                object.data["spec"]["autoAllocateBlocks"] = json!(true);
            }
            c.call(
                "create",
                fix.plural,
                api.create(&PostParams::default(), &object),
            )?;
        }
    }
    Ok(())
}
