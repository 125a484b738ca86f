//! The grant an install made under a namespace or name it no longer uses (a reinstall or
//! `reconfigure` changed them: a node renamed), removed once the install that replaced it is
//! committed, and only while it is still positively that install's: its objects of the uids
//! recorded, carrying the install's `OWNER` annotation, deleted on the uid and resourceVersion
//! read (kube-apiserver's `Preconditions`, k8s.io/apimachinery pkg/apis/meta/v1), so that one
//! another install took since (a new node of the old name adopting it by its label rewrites
//! the annotation: `making::claim`, its resourceVersion moved) or one made again stays.

use super::renewal::{Grant, NAME_PREFIX, OWNER, labelled_ours};
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{DeleteParams, Preconditions};
use kube::{Api, Resource};

/// What became of an earlier grant: `settled` when nothing of it is left to remove (deleted,
/// gone, or found not ours: the record then drops it); what stays, said, with its command.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Removal {
    pub settled: bool,
    pub left: Vec<String>,
}

/// Removes what of the earlier grant `g` is still this install's (see the module). A part the
/// cluster does not answer for, or refuses (403: no right in its namespace), is left
/// unsettled, said: the record keeps the grant, for the next install, reconfigure, repair or
/// `uninstall --purge`.
pub fn remove(c: &Cluster, g: &Grant) -> Removal {
    if g.owner.is_none() || g.uids.is_empty() {
        // Made by a version that marked no owner: never positively this install's.
        return Removal {
            settled: true,
            left: vec![format!(
                "the Role and RoleBinding {} in {} an earlier install made to renew calico-node's token stay, if they are there: its record (of an older version) cannot tell them from ones another install took since; '{}' removes them if they are not wanted",
                g.name,
                g.namespace,
                g.delete_command()
            )],
        };
    }
    match another_install(c, g) {
        Ok(None) => {}
        Ok(Some(why)) => {
            return Removal {
                settled: true,
                left: vec![format!(
                    "the Role and RoleBinding {} in {} an earlier install made to renew calico-node's token stay: {why}, whose grant they may be now; '{}' removes them if they are not wanted",
                    g.name,
                    g.namespace,
                    g.delete_command()
                )],
            };
        }
        Err(e) => {
            let left = format!(
                "the Role and RoleBinding {} in {}, of the grant an earlier install made to renew calico-node's token, stay for now: {e}; the install record keeps them, so the next install, reconfigure, repair or 'calicoctl-win uninstall --purge' removes them (or '{}')",
                g.name,
                g.namespace,
                g.delete_command()
            );
            return Removal {
                settled: false,
                left: vec![left],
            };
        }
    }
    let roles: Api<Role> = Api::namespaced(c.client.clone(), &g.namespace);
    let bindings: Api<RoleBinding> = Api::namespaced(c.client.clone(), &g.namespace);
    let mut out = Removal {
        settled: true,
        left: Vec::new(),
    };
    let parts = [
        part(c, &bindings, g, ("rolebinding", g.uids.binding.as_deref())),
        part(c, &roles, g, ("role", g.uids.role.as_deref())),
    ];
    for (p, kind) in parts.into_iter().zip(["rolebinding", "role"]) {
        match p {
            Ok(left) => out.left.extend(left),
            Err(e) => {
                out.settled = false;
                out.left.push(format!(
                    "{kind}s/{} in {}, of the grant an earlier install made to renew calico-node's token, stays for now: {e}; the install record keeps it, so the next install, reconfigure, repair or 'calicoctl-win uninstall --purge' removes it (or '{}')",
                    g.name,
                    g.namespace,
                    delete_command(g, kind)
                ));
            }
        }
    }
    out
}

/// Why the grant `g`, made under an earlier node name, may be another install's now: the Node
/// of that name carries a config hash (`calicoctl-win/config-hash`, as uninstall's
/// `another_install` reads it) other than the one it carried while this install ran as it
/// (`Grant::node_hash`), so another install runs as it (one of an older version takes the
/// grant by its label without writing its owner annotation). `None` for a grant of the same
/// node name (its namespace changed), or no Node of that name.
fn another_install(c: &Cluster, g: &Grant) -> Result<Option<String>, ClusterError> {
    let Some(ours) = g.node_hash.as_ref() else {
        return Ok(None);
    };
    let Some(node) = g.name.strip_prefix(NAME_PREFIX) else {
        return Ok(None);
    };
    let key = crate::cluster::node::ANNOTATION_CONFIG_HASH;
    let annotations = match crate::cluster::node::annotations(c, node) {
        Ok(a) => a,
        Err(ClusterError::Api { code: 404, .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    Ok(annotations.get(key).filter(|theirs| *theirs != ours).map(|theirs| {
        format!("node {node} carries another install's config ({key} {theirs}, this install's there was {ours})")
    }))
}

fn delete_command(g: &Grant, kind: &str) -> String {
    format!("kubectl -n {} delete {kind} {}", g.namespace, g.name)
}

/// How many times a part changed while it was being removed (a 409 on the delete's
/// preconditions) is read and judged again before it is kept for the next run, said.
const TRIES: usize = 3;

/// One part of `g` (`kind`, the uid recorded of it): deleted when positively ours, else what
/// stays of it, said (`None` when gone or never ours to remove). A delete refused as the part
/// changed since it was read (409: another client wrote it) reads it again and judges it again:
/// a write that kept it ours (its uid, label and owner annotation) does not leave it.
fn part<K>(
    c: &Cluster,
    api: &Api<K>,
    g: &Grant,
    (kind, recorded): (&str, Option<&str>),
) -> Result<Option<String>, ClusterError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let Some(uid) = recorded else {
        // No uid recorded: never this install's to remove.
        return Ok(None);
    };
    let mut tries = 1;
    loop {
        match try_part(c, api, g, (kind, uid)) {
            Err(ClusterError::Api { code: 409, .. }) if tries < TRIES => tries += 1,
            // Changed each time: still to judge, kept (`remove`'s unsettled part).
            done => return done,
        }
    }
}

/// What stays of the part `kind` of `g`, and why, said with its command.
fn stays(g: &Grant, kind: &str, why: &str) -> Option<String> {
    Some(format!(
        "{kind}s/{} in {}, of the grant an earlier install made to renew calico-node's token, stays: {why}; '{}' removes it if it is not wanted",
        g.name,
        g.namespace,
        delete_command(g, kind)
    ))
}

/// One read, judgement and delete of a part (see `part`): the 409 of a delete refused as the
/// part changed since it was read, as an error.
fn try_part<K>(
    c: &Cluster,
    api: &Api<K>,
    g: &Grant,
    (kind, uid): (&str, &str),
) -> Result<Option<String>, ClusterError>
where
    K: Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let (ns, name) = (&g.namespace, &g.name);
    let what = format!("{kind}s/{name} in {ns}");
    let Some(there) = c.call_opt("get", &what, api.get(name))? else {
        return Ok(None);
    };
    let meta = there.meta();
    let owner = meta.annotations.as_ref().and_then(|a| a.get(OWNER));
    let ours = meta.uid.as_deref() == Some(uid)
        && labelled_ours(meta)
        && g.owner.is_some()
        && owner == g.owner.as_ref();
    if !ours {
        return Ok(stays(
            g,
            kind,
            "it is no longer positively this install's (made again since, taken by another install, or of an older version that marked none)",
        ));
    }
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: meta.uid.clone(),
            resource_version: meta.resource_version.clone(),
        }),
        ..DeleteParams::default()
    };
    c.call_opt("delete", &what, api.delete(name, &dp))?;
    Ok(None)
}
