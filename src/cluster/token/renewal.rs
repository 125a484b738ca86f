//! The one right a node keeps besides Calico's own: calico-node may request its own tokens
//! (`create serviceaccounts/token calico-node` in Calico's namespace), so CalicoNode renews the
//! token and no node holds an admin credential. Each node gets its own Role and RoleBinding
//! (`calicoctl-win-token-renewal-<node>`), made by install, deleted by `uninstall --purge`, and
//! owned by the Node, so the garbage collector removes them with it.

use crate::cluster::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::Api;
use kube::api::{DeleteParams, ObjectMeta};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The prefix of the Role's and RoleBinding's name; the node's name follows.
pub const NAME_PREFIX: &str = "calicoctl-win-token-renewal-";
/// The annotation carrying the nonce of the install run that created the object
/// (`making::Making::nonce`).
pub const NONCE: &str = "calicoctl-win/install-nonce";
pub(super) const MANAGED_BY: (&str, &str) = ("app.kubernetes.io/managed-by", "calicoctl-win");

/// A node's grant: where it is and whom it lets renew.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    pub namespace: String,
    /// The name of both the Role and the RoleBinding.
    pub name: String,
    pub service_account: String,
    /// The uids of the Role and RoleBinding install made (or found carrying our label):
    /// uninstall deletes those only; one made again since has another uid and stays.
    #[serde(default, skip_serializing_if = "GrantUids::is_empty")]
    pub uids: GrantUids,
    /// Whether `uids` names every object of the grant that is ours (a part without one is
    /// another's and stays), as every record written since uids are kept says. False in older
    /// records, whose objects the managed-by label alone tells, and in a grant not yet made
    /// (`for_node`).
    #[serde(default)]
    pub uids_kept: bool,
}

/// The uids of a grant's Role and RoleBinding, each as install knew it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GrantUids {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binding: Option<String>,
}

impl GrantUids {
    pub fn is_empty(&self) -> bool {
        self.role.is_none() && self.binding.is_none()
    }
}

impl Grant {
    pub fn for_node(namespace: &str, node: &NodeName, service_account: &str) -> Self {
        Self {
            namespace: namespace.into(),
            name: format!("{NAME_PREFIX}{node}"),
            service_account: service_account.into(),
            uids: GrantUids::default(),
            uids_kept: false,
        }
    }

    /// The Role: `create` on `serviceaccounts/token` for this one service account.
    pub fn role(&self, owner: Option<OwnerReference>) -> Role {
        Role {
            metadata: self.metadata(owner),
            rules: Some(vec![PolicyRule {
                api_groups: Some(vec![String::new()]),
                resources: Some(vec!["serviceaccounts/token".into()]),
                resource_names: Some(vec![self.service_account.clone()]),
                verbs: vec!["create".into()],
                ..PolicyRule::default()
            }]),
        }
    }

    /// The RoleBinding of the Role to the service account itself.
    pub fn binding(&self, owner: Option<OwnerReference>) -> RoleBinding {
        RoleBinding {
            metadata: self.metadata(owner),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: self.name.clone(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: self.service_account.clone(),
                namespace: Some(self.namespace.clone()),
                ..Subject::default()
            }]),
        }
    }

    fn metadata(&self, owner: Option<OwnerReference>) -> ObjectMeta {
        ObjectMeta {
            name: Some(self.name.clone()),
            namespace: Some(self.namespace.clone()),
            labels: Some(BTreeMap::from([(MANAGED_BY.0.into(), MANAGED_BY.1.into())])),
            owner_references: owner.map(|o| vec![o]),
            ..ObjectMeta::default()
        }
    }

    /// How to remove it by hand, when uninstall cannot reach the cluster.
    pub fn delete_command(&self) -> String {
        format!(
            "kubectl -n {} delete rolebinding,role {}",
            self.namespace, self.name
        )
    }
}

/// The Node as owner, when it exists (a node that has not joined yet has none: its grant
/// then stays until uninstall --purge).
pub(super) fn node_owner(
    c: &Cluster,
    node: &NodeName,
) -> Result<Option<OwnerReference>, ClusterError> {
    Ok(crate::cluster::node::get(c, node)?.and_then(|n| {
        Some(OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: n.metadata.name?,
            uid: n.metadata.uid?,
            ..OwnerReference::default()
        })
    }))
}

impl Cluster {
    /// Deletes the node's grant's RoleBinding and Role when they are ours (our label and the
    /// recorded uid; in an older record without uids, the label alone), each on the uid read as
    /// a precondition (kube-apiserver's `Store.Delete` checks `preconditions.uid`). What it
    /// left, said.
    pub fn remove_grant(
        &self,
        namespace: &str,
        name: &str,
        (uids, uids_kept): (&GrantUids, bool),
    ) -> anyhow::Result<Vec<String>> {
        let known = Known {
            uids,
            nonce: None,
            uids_kept,
        };
        Ok(remove_parts(self, (namespace, name), known, (true, true))?.0)
    }
}

/// What tells the grant's objects that are ours: the uids recorded, the nonce of the run that
/// made them (for a part flagged without its uid), and `Grant::uids_kept`.
pub(super) struct Known<'a> {
    pub uids: &'a GrantUids,
    pub nonce: Option<&'a str>,
    pub uids_kept: bool,
}

/// `remove`'s deletes, of the parts asked (Role, RoleBinding); what stays, and which of them
/// were there.
pub(super) fn remove_parts(
    c: &Cluster,
    (namespace, name): (&str, &str),
    known: Known<'_>,
    (role, binding): (bool, bool),
) -> Result<(Vec<String>, (bool, bool)), ClusterError> {
    let roles: Api<Role> = Api::namespaced(c.client.clone(), namespace);
    let bindings: Api<RoleBinding> = Api::namespaced(c.client.clone(), namespace);
    let mut left = Vec::new();
    let mut seen = (false, false);
    if binding && let Some(b) = c.get_in::<RoleBinding>(namespace, name)? {
        seen.1 = true;
        let at = (&b.metadata, known.uids.binding.as_deref(), &known);
        left.extend(delete_if_ours(c, &bindings, at, ("rolebinding", name))?);
    }
    if role && let Some(r) = c.get_in::<Role>(namespace, name)? {
        seen.0 = true;
        let at = (&r.metadata, known.uids.role.as_deref(), &known);
        left.extend(delete_if_ours(c, &roles, at, ("role", name))?);
    }
    Ok((left, seen))
}

/// Deletes the object when it carries our label and is the recorded one, else (none recorded)
/// carries the nonce given, else (none given) when the record keeps no uids; on its uid. Else
/// what was left and why.
fn delete_if_ours<K>(
    c: &Cluster,
    api: &Api<K>,
    (meta, recorded, known): (&ObjectMeta, Option<&str>, &Known<'_>),
    (kind, name): (&str, &str),
) -> Result<Option<String>, ClusterError>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let namespace = meta.namespace.as_deref().unwrap_or_default();
    let what = &format!("{kind}s/{name} in {namespace}");
    let nonce = known.nonce;
    if !crate::cluster::labelled(meta, MANAGED_BY) {
        return Ok(Some(format!(
            "{what} stays: it does not carry the label {}={}, so it is not the one calicoctl-win made",
            MANAGED_BY.0, MANAGED_BY.1
        )));
    }
    if let Some(uid) = recorded
        && meta.uid.as_deref() != Some(uid)
    {
        return Ok(Some(format!(
            "{what} stays: it is not the one install made (uid {uid}); it was made again since, by someone else (remove it with 'kubectl -n {namespace} delete {kind} {name}' if it is not wanted)"
        )));
    }
    if recorded.is_none() && nonce.is_none() && known.uids_kept {
        return Ok(Some(format!(
            "{what} stays: the install record names no uid of it, so calicoctl-win did not make it (it was there before, or made by someone else; remove it with 'kubectl -n {namespace} delete {kind} {name}' if it is not wanted)"
        )));
    }
    let theirs = meta.annotations.as_ref().and_then(|a| a.get(NONCE));
    if recorded.is_none()
        && let Some(n) = nonce
        && theirs.map(String::as_str) != Some(n)
    {
        return Ok(Some(format!(
            "{what} stays: it does not carry this install's nonce ({}), so this install did not make it",
            NONCE
        )));
    }
    let dp = DeleteParams {
        preconditions: Some(kube::api::Preconditions {
            uid: meta.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match c.call_opt("delete", what, api.delete(name, &dp)) {
        Ok(_) => Ok(None),
        Err(ClusterError::Api { code: 409, .. }) => Ok(Some(format!(
            "{what} stays: it was made again while it was being removed"
        ))),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_grants_one_service_account_its_own_tokens_and_nothing_else() {
        let g = Grant::for_node("calico-system", &"win-1".into(), "calico-node");
        assert_eq!(g.name, "calicoctl-win-token-renewal-win-1");
        let role = serde_json::to_value(g.role(None)).expect("json");
        assert_eq!(
            role["rules"],
            serde_json::json!([{"apiGroups": [""], "resources": ["serviceaccounts/token"],
                "resourceNames": ["calico-node"], "verbs": ["create"]}])
        );
        let binding = serde_json::to_value(g.binding(None)).expect("json");
        assert_eq!(
            binding["subjects"],
            serde_json::json!([{"kind": "ServiceAccount", "name": "calico-node", "namespace": "calico-system"}])
        );
        assert_eq!(binding["roleRef"]["name"], role["metadata"]["name"]);
    }
}
