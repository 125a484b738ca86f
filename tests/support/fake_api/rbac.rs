//! Who a bearer token is and what RBAC lets it do, as kube-apiserver decides it.
//!
//! Follows Kubernetes v1.33: `plugin/pkg/auth/authorizer/rbac/rbac.go` (a request is allowed
//! when some binding that applies to the user grants a rule that allows it; RoleBindings
//! only in their namespace, ClusterRoleBindings everywhere) and
//! `pkg/apis/rbac/v1/evaluation_helpers.go` (`VerbMatches`, `APIGroupMatches`,
//! `ResourceMatches` with `*` and `*/subresource`, `ResourceNameMatches`: an empty list
//! matches every name, a create of a new object has no name). A service account's user is
//! `system:serviceaccount:NS:NAME` in the groups `system:serviceaccounts`,
//! `system:serviceaccounts:NS` and `system:authenticated`
//! (`staging/src/k8s.io/apiserver/pkg/authentication/serviceaccount/util.go`). Not modelled:
//! aggregated ClusterRoles, non-resource URLs, users and groups other than service accounts'
//! (every other accepted token is the admin, `system:masters`).

use serde_json::Value;
use std::collections::BTreeMap;

/// Who made a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Identity {
    /// The admin token: `system:masters`, allowed everything.
    Admin,
    ServiceAccount {
        namespace: String,
        name: String,
    },
}

/// What a request asks to do.
pub struct Request<'a> {
    pub verb: &'a str,
    /// The API group: `""` for the core group.
    pub group: &'a str,
    /// The resource, `serviceaccounts/token` for a subresource.
    pub resource: &'a str,
    pub namespace: Option<&'a str>,
    /// The object's name; `None` for a list or the create of a new object.
    pub name: Option<&'a str>,
}

/// The identity of a token issued for a service account (its `sub` claim).
pub fn identity(claims: &Value) -> Identity {
    claims["sub"]
        .as_str()
        .and_then(|s| s.strip_prefix("system:serviceaccount:"))
        .and_then(|s| s.split_once(':'))
        .map_or(Identity::Admin, |(ns, name)| Identity::ServiceAccount {
            namespace: ns.to_owned(),
            name: name.to_owned(),
        })
}

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// Whether RBAC, from the Roles, ClusterRoles and bindings among `objects`, allows `req`.
pub fn allows(objects: &BTreeMap<String, Value>, who: &Identity, req: &Request) -> bool {
    let Identity::ServiceAccount { namespace, name } = who else {
        return true;
    };
    let applies = |binding: &Value| {
        binding["subjects"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|s| subject_is(s, namespace, name))
    };
    let in_kind = |kind: &'static str| {
        objects
            .iter()
            .filter(move |(p, _)| p.starts_with(RBAC) && p.rsplit('/').nth(1) == Some(kind))
            .map(|(_, o)| o)
    };
    let cluster_wide = in_kind("clusterrolebindings")
        .filter(|b| applies(b))
        .any(|b| role_allows(objects, &b["roleRef"], None, req));
    if cluster_wide {
        return true;
    }
    let Some(ns) = req.namespace else {
        return false;
    };
    in_kind("rolebindings")
        .filter(|b| b["metadata"]["namespace"] == ns && applies(b))
        .any(|b| role_allows(objects, &b["roleRef"], Some(ns), req))
}

/// A subject naming the service account, or one of its groups.
fn subject_is(s: &Value, namespace: &str, name: &str) -> bool {
    match s["kind"].as_str() {
        Some("ServiceAccount") => s["namespace"] == namespace && s["name"] == name,
        Some("Group") => {
            let g = s["name"].as_str().unwrap_or_default();
            g == "system:serviceaccounts"
                || g == "system:authenticated"
                || g == format!("system:serviceaccounts:{namespace}")
        }
        Some("User") => s["name"] == format!("system:serviceaccount:{namespace}:{name}").as_str(),
        _ => false,
    }
}

/// Whether the role a binding refers to (a Role in `namespace`, or a ClusterRole) allows it.
fn role_allows(
    objects: &BTreeMap<String, Value>,
    role_ref: &Value,
    namespace: Option<&str>,
    req: &Request,
) -> bool {
    let name = role_ref["name"].as_str().unwrap_or_default();
    let path = match (role_ref["kind"].as_str(), namespace) {
        (Some("ClusterRole"), _) => format!("{RBAC}/clusterroles/{name}"),
        (Some("Role"), Some(ns)) => format!("{RBAC}/namespaces/{ns}/roles/{name}"),
        _ => return false,
    };
    objects.get(&path).is_some_and(|role| {
        role["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|rule| rule_allows(rule, req))
    })
}

fn has(list: &Value, want: &str) -> bool {
    list.as_array()
        .into_iter()
        .flatten()
        .any(|v| v == "*" || v == want)
}

/// `RuleAllows` for a resource request.
fn rule_allows(rule: &Value, req: &Request) -> bool {
    let resource = rule["resources"].as_array().into_iter().flatten().any(|r| {
        let r = r.as_str().unwrap_or_default();
        r == "*"
            || r == req.resource
            || req
                .resource
                .split_once('/')
                .is_some_and(|(_, sub)| r.strip_prefix("*/") == Some(sub))
    });
    let names = rule["resourceNames"]
        .as_array()
        .is_none_or(|n| n.is_empty() || req.name.is_some_and(|name| n.iter().any(|v| v == name)));
    has(&rule["verbs"], req.verb) && has(&rule["apiGroups"], req.group) && resource && names
}
