//! The grants earlier installs of a node made under another namespace or name than the one
//! install makes now (a config changed since): which of their objects are still ours, so that
//! install's plan removes those (`apply::Action::RemoveEarlierGrant`) and no other.

use super::renewal::{Grant, GrantUids, labelled_ours};
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::{Api, Resource};

/// Each of `earlier` as far as it is still ours: the uids of its objects that are there, carry
/// our label and are the ones recorded (one gone is done with; one made again since, by
/// someone else, under that name stays, said). A grant of a record of an older version, which
/// named no uids, is never deleted by its name alone: what of it is there stays, said, with the
/// command that deletes it. Those with nothing left of ours are not returned: the record that
/// named them drops them.
pub fn still_ours<'g>(
    c: &Cluster,
    earlier: impl IntoIterator<Item = &'g Grant>,
) -> Result<(Vec<Grant>, Vec<String>), ClusterError> {
    let (mut ours, mut said) = (Vec::new(), Vec::new());
    for g in earlier {
        let roles: Api<Role> = Api::namespaced(c.client.clone(), &g.namespace);
        let bindings: Api<RoleBinding> = Api::namespaced(c.client.clone(), &g.namespace);
        let binding = part(c, &bindings, g, ("rolebinding", g.uids.binding.as_deref()))?;
        let role = part(c, &roles, g, ("role", g.uids.role.as_deref()))?;
        let uids = GrantUids {
            role: role.0,
            binding: binding.0,
        };
        said.extend(binding.1.into_iter().chain(role.1));
        if !uids.is_empty() {
            ours.push(Grant {
                uids,
                uids_kept: true,
                ..g.clone()
            });
        }
    }
    Ok((ours, said))
}

/// One object of an earlier grant (`kind`, with the uid recorded of it): its uid when it is
/// still the one recorded, else what stays of it, said.
fn part<K>(
    c: &Cluster,
    api: &Api<K>,
    g: &Grant,
    (kind, recorded): (&str, Option<&str>),
) -> Result<(Option<String>, Option<String>), ClusterError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let (ns, name) = (&g.namespace, &g.name);
    if g.keeps_uids() && recorded.is_none() {
        // Not ours: found there by the earlier install, or never there.
        return Ok((None, None));
    }
    let what = format!("{kind}s/{name} in {ns}");
    let Some(there) = c.call_opt("get", &what, api.get(name))? else {
        return Ok((None, None));
    };
    let meta = there.meta();
    let delete = format!("kubectl -n {ns} delete {kind} {name}");
    let stays = match recorded {
        Some(uid) if meta.uid.as_deref() == Some(uid) && labelled_ours(meta) => {
            return Ok((Some(uid.to_owned()), None));
        }
        Some(uid) => format!(
            "{what}, of the grant an earlier install made to renew calico-node's token, stays: it is not the one that install made (uid {uid}), it was made again since, by someone else; '{delete}' removes it if it is not wanted"
        ),
        None => format!(
            "{what}, of the grant an earlier install made to renew calico-node's token, stays: that install's record (of an older version) names no uid of it, so it cannot be told from one made again since; '{delete}' removes it if it is calicoctl-win's"
        ),
    };
    Ok((None, Some(stays)))
}
