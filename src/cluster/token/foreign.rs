//! A Role or RoleBinding of a node's grant's name that is not calicoctl-win's: used as it is
//! when it is what ours would be, else refused before any change (`making::ensure` refuses
//! it too, should one appear between that look and the create).

use super::renewal::Grant;
use crate::cluster::Cluster;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding, Subject};

/// Refuses a Role of the grant's name that is not ours (`r`) when its rules are not the
/// grant's: the RoleBinding would give calico-node's service account its rules.
pub(super) fn refuse_role(g: &Grant, r: &Role) -> anyhow::Result<()> {
    if r.rules == g.role(None).rules {
        return Ok(());
    }
    anyhow::bail!(
        "the Role {} in {} is not calicoctl-win's and its rules are not the renewal grant's (create on serviceaccounts/token {}): binding calico-node's service account to it would give it those rules; delete it ('kubectl -n {} delete role {}') or give it only that rule, then install again",
        g.name,
        g.namespace,
        g.service_account,
        g.namespace,
        g.name
    )
}

/// Refuses a RoleBinding of the grant's name that is not ours unless it binds what ours would
/// (the Role of that name, to the one service account alone): else calico-node's token would
/// go unrenewed, or others get the right. Used as it is then, never recorded as ours.
pub(super) fn refuse_binding(g: &Grant, b: &RoleBinding) -> anyhow::Result<()> {
    let want = g.binding(None);
    // As kube-apiserver reads a subject (kubernetes pkg/apis/rbac/validation/validation.go
    // `ValidateRoleBindingSubject`: a ServiceAccount's apiGroup is empty, its namespace may
    // be left out in a RoleBinding; plugin/pkg/auth/authorizer/rbac/rbac.go `appliesToUser`:
    // then it is the binding's own).
    let subject = |s: &Subject| {
        let ns = (s.namespace.clone().filter(|n| !n.is_empty())).unwrap_or(g.namespace.clone());
        let group = s.api_group.clone().unwrap_or_default();
        (s.kind.clone(), s.name.clone(), ns, group)
    };
    let subjects =
        |b: &RoleBinding| -> Vec<_> { b.subjects.iter().flatten().map(subject).collect() };
    let (have, ours) = (subjects(b), subjects(&want));
    if b.role_ref == want.role_ref && have == ours {
        return Ok(());
    }
    // What it does wrong: calico-node not bound to the grant's Role, or others bound too.
    let unrenewed = b.role_ref != want.role_ref || !ours.iter().all(|s| have.contains(s));
    let why = match (unrenewed, have.iter().any(|s| !ours.contains(s))) {
        (true, true) => {
            "calico-node could not renew its token through it, and others would get its right"
        }
        (true, false) => "calico-node could not renew its token through it",
        _ => "it gives others than calico-node the right to request calico-node's tokens",
    };
    let named: Vec<String> = (b.subjects.iter().flatten())
        .map(|s| match &s.namespace {
            Some(ns) => format!("{} {ns}/{}", s.kind, s.name),
            None => format!("{} {}", s.kind, s.name),
        })
        .collect();
    let (ns, name) = (&g.namespace, &g.name);
    anyhow::bail!(
        "the RoleBinding {name} in {ns} is not calicoctl-win's and does not bind what the renewal grant needs (the Role {name} to ServiceAccount {ns}/{} alone): it binds {} {} to {}; {why}; see it with 'kubectl -n {ns} get rolebinding {name} -o yaml', then delete it ('kubectl -n {ns} delete rolebinding {name}') or make it bind only that, and install again",
        g.service_account,
        b.role_ref.kind,
        b.role_ref.name,
        if named.is_empty() {
            "no one".to_owned()
        } else {
            named.join(", ")
        }
    )
}

/// `ensure`'s refusals (`refuse_role`, `refuse_binding`), read before any change (the dry
/// run's too), of any object but the one the record names by uid (one with our label alone
/// too).
pub fn refuse_foreign(c: &Cluster, g: &Grant) -> anyhow::Result<()> {
    if let Some(r) = c.get_in::<Role>(&g.namespace, &g.name)?
        && (r.metadata.uid.is_none() || r.metadata.uid != g.uids.role)
    {
        refuse_role(g, &r)?;
    }
    if let Some(b) = c.get_in::<RoleBinding>(&g.namespace, &g.name)?
        && (b.metadata.uid.is_none() || b.metadata.uid != g.uids.binding)
    {
        refuse_binding(g, &b)?;
    }
    Ok(())
}
