//! `preflight --fix`: the documented cluster patches for IPIP and IPAM strict affinity, as
//! data first (so they can be shown, confirmed or only printed) and applied second.

use super::facts::{ClusterFacts, calico};
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
    pub name: String,
    pub patch: Value,
    /// Create the object with the patch as its content when it does not exist.
    pub create_if_missing: bool,
    /// The same change as a `kubectl` command, for the record.
    pub command: String,
}

impl Fix {
    fn new(
        check: &'static str,
        kind: &'static str,
        plural: &'static str,
        name: &str,
        patch: Value,
    ) -> Self {
        let command = format!(
            "kubectl patch {plural}.crd.projectcalico.org {name} --type merge -p '{patch}'"
        );
        Self {
            check,
            kind,
            plural,
            name: name.to_owned(),
            patch,
            create_if_missing: false,
            command,
        }
    }
}

/// The patches that would make `ipip-disabled` and `strict-affinity` pass. IPv4 pools with
/// IPIP become VXLAN pools for the vxlan backend (Calico's documented IPIP-to-VXLAN migration)
/// and plain pools for windows-bgp.
pub fn plan(f: &ClusterFacts, backend: Backend) -> Vec<Fix> {
    let mut fixes = Vec::new();
    if f.felix.ipip_enabled == Some(true) {
        fixes.push(Fix::new(
            "ipip-disabled",
            "FelixConfiguration",
            "felixconfigurations",
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
            "IPPool",
            "ippools",
            &pool.name,
            json!({ "spec": spec }),
        ));
    }
    if f.calico_version.is_some() && f.strict_affinity != Some(true) {
        let mut fix = Fix::new(
            "strict-affinity",
            "IPAMConfig",
            "ipamconfigs",
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
        let ar = calico(fix.kind, fix.plural);
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
