//! What an install makes of a node's renewal grant (`renewal::Grant`): its Role and RoleBinding
//! created where missing, each flagged in the install's journal before it is created, and
//! marked with the run's nonce (`NONCE`) so that a create whose answer was lost (a POST that
//! committed, then timed out) is known for ours when it is read back.

use super::create::{CREATE_TIMEOUT, create_within, may_be_there, throttled};
use super::foreign::{refuse_binding, refuse_role};
use super::renewal::{Grant, GrantUids, Known, MANAGED_BY, node_owner, remove_parts};
use crate::cluster::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, poll_quietly};
use crate::k8s_name::NodeName;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::Api;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

pub use super::foreign::refuse_foreign;
pub use super::renewal::NONCE;

/// The objects of a grant an install creates, journaled from before their create until the
/// install record names them, so a run cut off in between leaves them to the next install or
/// to uninstall. One found there before stays out of it: a rollback deletes only what is
/// flagged here.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Making {
    pub namespace: String,
    pub name: String,
    /// Set before this install creates the Role (or the RoleBinding); cleared when another's
    /// was there first (409, not carrying `nonce`).
    #[serde(default)]
    pub role: bool,
    #[serde(default)]
    pub binding: bool,
    /// Each one's uid once the server gave it (or, after a cut-off run, the one found carrying
    /// our label).
    #[serde(default, skip_serializing_if = "GrantUids::is_empty")]
    pub uids: GrantUids,
    /// The nonce this install marks what it creates with (annotation `NONCE`), journaled
    /// before the first create: an object carrying it is this install's, whatever answer its
    /// create got. Not a secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nonce: Option<String>,
}

impl Making {
    /// Nothing made yet of `g`.
    pub fn of(g: &Grant) -> Self {
        Self {
            namespace: g.namespace.clone(),
            name: g.name.clone(),
            ..Self::default()
        }
    }

    /// Whether this is `g`'s.
    pub fn is_of(&self, g: &Grant) -> bool {
        (&self.namespace, &self.name) == (&g.namespace, &g.name)
    }

    /// Whether this install creates either object.
    pub fn makes_any(&self) -> bool {
        self.role || self.binding
    }

    /// The parts (Role, RoleBinding) whose create's fate is not known: flagged, no uid had
    /// (its answer lost, or the run cut off while it waited). Such a create may still commit
    /// (`remove_made` waits it out).
    pub fn unsettled(&self) -> (bool, bool) {
        (
            self.role && self.uids.role.is_none(),
            self.binding && self.uids.binding.is_none(),
        )
    }

    /// Given a nonce, unless it has one (a cut-off run's, which this run continues).
    pub fn with_nonce(mut self) -> Self {
        if self.nonce.is_none() {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            self.nonce = Some(format!("{:x}-{nanos:x}", std::process::id()));
        }
        self
    }

    /// The kinds and names of what it made, each with the command that deletes it by hand.
    pub fn objects(&self) -> Vec<(&'static str, String)> {
        let one = |kind: &str| format!("kubectl -n {} delete {kind} {}", self.namespace, self.name);
        let mut v = Vec::new();
        if self.binding {
            v.push(("RoleBinding", one("rolebinding")));
        }
        if self.role {
            v.push(("Role", one("role")));
        }
        v
    }

    /// What a removal may wait for (`unsettled`), said before it.
    pub fn wait_note(&self) -> Option<String> {
        let kinds = match self.unsettled() {
            (false, false) => return None,
            (true, true) => "Role and RoleBinding",
            (true, false) => "Role",
            (false, true) => "RoleBinding",
        };
        Some(format!(
            "the create of the {kinds} {} in {} got no answer and may still commit: it is read again for up to {} s before it is taken as never made",
            self.name,
            self.namespace,
            SETTLE_WITHIN.as_secs()
        ))
    }

    /// How to remove what it made by hand.
    pub fn delete_command(&self) -> String {
        let kinds = match (self.role, self.binding) {
            (true, true) => "rolebinding,role",
            (true, false) => "role",
            _ => "rolebinding",
        };
        format!("kubectl -n {} delete {kinds} {}", self.namespace, self.name)
    }

    /// Whether the object is known for ours without reading its content: the uid the record
    /// (`recorded`) or this journal (`made`) names, or this run's nonce. Any other is checked
    /// (`refuse_role`, `refuse_binding`).
    fn knows(&self, meta: &ObjectMeta, recorded: &Option<String>, made: &Option<String>) -> bool {
        let uid = meta.uid.as_ref();
        uid.is_some_and(|u| Some(u) == recorded.as_ref() || Some(u) == made.as_ref())
            || self.marked(meta)
    }

    /// Whether `meta` carries this install's nonce.
    fn marked(&self, meta: &ObjectMeta) -> bool {
        let theirs = meta.annotations.as_ref().and_then(|a| a.get(NONCE));
        self.nonce.is_some() && theirs == self.nonce.as_ref()
    }
}

/// Creates the grant's Role and RoleBinding where missing, each flagged in `making` and saved
/// (`save`, into the journal) before its create and again with its uid. The uids for the
/// install record: of one made here, else the one `g` recorded, else (unless `g` keeps uids)
/// of one there with our label (`found`). Another's is used only when it is what ours would be
/// (`refuse_role`).
pub fn ensure(
    c: &Cluster,
    g: &Grant,
    node: &NodeName,
    making: &mut Making,
    save: &mut Save<'_>,
) -> anyhow::Result<GrantUids> {
    let owner = node_owner(c, node)?;
    let role = Kind {
        plural: "roles",
        part: |m| (&mut m.role, &mut m.uids.role),
        recorded: &g.uids.role,
        refuse: &|r: &Role| refuse_role(g, r),
    };
    let role = ensure_one(c, g, role, || g.role(owner.clone()), (making, save))?;
    let binding = Kind {
        plural: "rolebindings",
        part: |m| (&mut m.binding, &mut m.uids.binding),
        recorded: &g.uids.binding,
        refuse: &|b: &RoleBinding| refuse_binding(g, b),
    };
    let binding = ensure_one(c, g, binding, || g.binding(owner), (making, save))?;
    Ok(GrantUids { role, binding })
}

/// The Role or the RoleBinding of a grant, as `ensure` makes it.
struct Kind<'a, K> {
    plural: &'a str,
    part: Part,
    /// Its uid as the install record names it.
    recorded: &'a Option<String>,
    /// Refuses one there that is not ours and not what ours would be.
    refuse: &'a dyn Fn(&K) -> anyhow::Result<()>,
}

/// `ensure` of one object: the one there judged and adopted, or `make`'s created.
fn ensure_one<K>(
    c: &Cluster,
    g: &Grant,
    kind: Kind<'_, K>,
    make: impl FnOnce() -> K,
    (making, save): (&mut Making, &mut Save<'_>),
) -> anyhow::Result<Option<String>>
where
    K: kube::Resource<DynamicType = (), Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + std::fmt::Debug
        + Serialize
        + serde::de::DeserializeOwned,
{
    let api: Api<K> = Api::namespaced(c.client.clone(), &g.namespace);
    let what = format!("{}/{} in {}", kind.plural, g.name, g.namespace);
    if let Some(there) = c.call_opt("get", &what, api.get(&g.name))? {
        let made = (kind.part)(making).1.clone();
        if !making.knows(there.meta(), kind.recorded, &made) {
            (kind.refuse)(&there)?;
        }
        let adopt = !g.uids_kept;
        let recorded = (kind.recorded, adopt);
        return found_saved(making, kind.part, recorded, there.meta(), save);
    }
    let mut obj = make();
    obj.meta_mut().annotations = making
        .nonce
        .clone()
        .map(|n| BTreeMap::from([(NONCE.to_owned(), n)]));
    // Each create is sent once: kube's own retry of a POST whose answer was lost (a 504 after
    // it committed) would get a 409 for our own object; it is read back instead (`settle`).
    let once = &c.client_without_retries;
    let create = || c.call("create", &what, create_within(once, &obj));
    let read = || c.call_opt("get", &what, api.get(&g.name));
    create_flagged(making, kind.part, (create, read), save)
}

/// Saves `Making` into the install's journal.
type Save<'a> = dyn FnMut(&Making) -> anyhow::Result<()> + 'a;

/// Which of `Making`'s objects: its flag and uid.
type Part = fn(&mut Making) -> (&mut bool, &mut Option<String>);

/// `found`, with what it learnt (a uid, a part let go) saved in the journal, so a later rollback
/// neither waits for a known part nor takes one let go for ours.
fn found_saved(
    making: &mut Making,
    part: Part,
    recorded: (&Option<String>, bool),
    meta: &ObjectMeta,
    save: &mut Save<'_>,
) -> anyhow::Result<Option<String>> {
    let before = making.clone();
    let uid = found(making, part, recorded, meta);
    if *making != before {
        save(making)?;
    }
    Ok(uid)
}

/// The uid of an object found there: one a cut-off run of this install made (adopted), else
/// the recorded one, else its own when it carries our label and the record may leave it out
/// (`adopt`: no record, or an older version's without uids).
fn found(
    making: &mut Making,
    part: Part,
    (recorded, adopt): (&Option<String>, bool),
    meta: &ObjectMeta,
) -> Option<String> {
    let marked = making.marked(meta);
    let (made, made_uid) = part(making);
    if *made {
        if made_uid.is_none() {
            // Flagged, its answer never had: ours only with our nonce. Another's is let go, kept.
            if !marked {
                *made = false;
                // Its uid is never recorded, so no `uninstall --purge` deletes it.
                return recorded.clone();
            }
            *made_uid = meta.uid.clone();
        }
        return made_uid.clone();
    }
    recorded.clone().or_else(|| ours(meta).filter(|_| adopt))
}

/// One object created, flagged and saved first, its uid saved once made. A 409 or a lost
/// answer is settled by reading the object back: ours with our nonce; missing after a lost
/// answer, the error stands, flagged (`Making::unsettled`). A 4xx refusal is unflagged.
fn create_flagged<T: kube::Resource>(
    making: &mut Making,
    part: Part,
    (create, read): (
        impl Fn() -> Result<T, ClusterError>,
        impl FnOnce() -> Result<Option<T>, ClusterError>,
    ),
    save: &mut Save<'_>,
) -> anyhow::Result<Option<String>> {
    *part(making).0 = true;
    save(making)?;
    let (made, uid) = match throttled(create) {
        Ok(made) => (true, made.meta().uid.clone()),
        Err(e) if may_be_there(&e) => match read()? {
            Some(there) if making.marked(there.meta()) => (true, there.meta().uid.clone()),
            Some(_) => (false, None),
            None if matches!(e, ClusterError::Api { code: 409, .. }) => (false, None),
            None => return Err(e.into()),
        },
        Err(e @ ClusterError::Api { .. }) => {
            *part(making).0 = false;
            save(making)?;
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    let (flag, kept) = part(making);
    *flag = made;
    kept.clone_from(&uid);
    save(making)?;
    Ok(uid)
}

/// The uid of an object when it carries our label.
fn ours(meta: &ObjectMeta) -> Option<String> {
    crate::cluster::labelled(meta, MANAGED_BY)
        .then(|| meta.uid.clone())
        .flatten()
}

/// Deletes what an install made of a grant, as `renewal::remove` does. A part flagged without
/// its uid is deleted only with this install's nonce; one not
/// there yet (`Making::unsettled`) is read again for `SETTLE_WITHIN`, and deleted if it comes.
pub fn remove_made(c: &Cluster, m: &Making) -> Result<Vec<String>, ClusterError> {
    let at = (m.namespace.as_str(), m.name.as_str());
    let parts = |parts| {
        let known = Known {
            uids: &m.uids,
            nonce: m.nonce.as_deref(),
            uids_kept: false,
        };
        remove_parts(c, at, known, parts)
    };
    let (mut left, seen) = parts((m.role, m.binding))?;
    let (role, binding) = m.unsettled();
    let mut waiting = (role && !seen.0, binding && !seen.1);
    if waiting == (false, false) {
        return Ok(left);
    }
    let look = || -> Result<Look<(), ()>, ClusterError> {
        let (more, seen) = parts(waiting)?;
        left.extend(more);
        waiting = (waiting.0 && !seen.0, waiting.1 && !seen.1);
        Ok(match waiting {
            (false, false) => Look::Done(()),
            _ => Look::Pending(()),
        })
    };
    let deadline = std::time::Instant::now() + SETTLE_WITHIN;
    let pauses = Pauses::every(std::time::Duration::from_secs(2));
    poll_quietly(deadline, pauses, look, Ok)?;
    Ok(left)
}

/// How long a create whose answer was lost may still commit: the request deadline it asked
/// for (`CREATE_TIMEOUT`, `create_within`), when its handler's context and storage write end
/// (kube-apiserver pkg/endpoints/handlers/finisher/finisher.go), and as long again for one
/// already handed to etcd; counted from a read after the create was sent.
pub const SETTLE_WITHIN: std::time::Duration = CREATE_TIMEOUT.saturating_mul(2);
