//! What gathering the fleet's diagnostics calls (`fleet::diags`), as the RBAC rules that allow
//! it, and the objects that give them to an identity: list the Windows nodes (a ClusterRole),
//! get the DaemonSet (its uid, which its own pods name as their controller), list its pods
//! and `get pods/proxy` in the DaemonSet's namespace alone (a Role there). Not `pods/exec`, which runs any command in the pod as SYSTEM on the node. The pod
//! proxy is narrower but not only `/diags`: it takes any port and path
//! (`pods/NAME:PORT/proxy/...`), and the DaemonSet's pods share the node's network, so it
//! reaches every TCP port of the node the API server's address may reach (docs/security.md).
//!
//! Each node's `GET /diags` asks a token of `auth::ACCOUNT` for that node's audience, so
//! the identity may `create serviceaccounts/token` of that one account (by resource name); and
//! CalicoNode reviews it, so calico-node's account may `create tokenreviews` (a ClusterRole of
//! its own, `REVIEW`: the API has no narrower scope for it, as a TokenReview names no object).

use crate::cluster::rights::{Right, Scope, policy_rules};
use serde_json::{Value, json};

const fn r(resource: &'static str, verb: &'static [&'static str], why: &'static str) -> Right {
    Right {
        scope: Scope::Cluster,
        group: "",
        resource,
        verbs: verb,
        names: &[],
        why,
    }
}

/// Cluster-wide (a ClusterRole): which nodes are asked.
pub const CLUSTER: &[Right] = &[r("nodes", &["list"], "the Windows nodes selected")];

/// In the DaemonSet's namespace (a Role there).
pub const IN_NAMESPACE: &[Right] = &[
    Right {
        group: "apps",
        names: &[],
        ..r(
            "daemonsets",
            &["get"],
            "the DaemonSet's uid, which its own pods name as their controller",
        )
    },
    r("pods", &["list"], "each node's pod of the DaemonSet"),
    r("pods/proxy", &["get"], "each pod's GET /diags"),
    Right {
        names: &[super::auth::ACCOUNT],
        ..r(
            "serviceaccounts/token",
            &["create"],
            "a token for each node's GET /diags",
        )
    },
];

/// The ClusterRole (and its binding to calico-node's account) that lets CalicoNode review the
/// tokens its `GET /diags` is given.
pub const REVIEW: &str = "calicoctl-win-diags-review";

/// calico-node's right: review a token (cluster-wide, as TokenReviews are).
pub const CALICO_NODE: &[Right] = &[Right {
    group: "authentication.k8s.io",
    ..r(
        "tokenreviews",
        &["create"],
        "CalicoNode's review of the token of each GET /diags",
    )
}];

/// The ServiceAccount `name` in `sa_namespace`, the ClusterRole and the Role in the
/// DaemonSet's namespace `ds_namespace`, each bound to it, all named `name`; the
/// ServiceAccount the nodes take tokens of (`auth::ACCOUNT`, in `ds_namespace`); and
/// calico-node's review right (`REVIEW`) for its account in `calico_namespace`.
pub fn manifests(
    name: &str,
    (sa_namespace, ds_namespace): (&str, &str),
    calico_namespace: &str,
) -> Vec<Value> {
    let labels = json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
    let subject = json!([{"kind": "ServiceAccount", "name": name, "namespace": sa_namespace}]);
    let role_ref =
        |kind: &str| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name});
    let rules = |r: &[Right]| policy_rules(r, Scope::Cluster);
    let account = super::auth::ACCOUNT;
    let review_subject =
        json!([{"kind": "ServiceAccount", "name": "calico-node", "namespace": calico_namespace}]);
    let mut docs = vec![
        json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": name, "namespace": sa_namespace, "labels": labels}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": labels}, "rules": rules(CLUSTER)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": labels},
            "roleRef": role_ref("ClusterRole"), "subjects": subject}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": name, "namespace": ds_namespace, "labels": labels},
            "rules": rules(IN_NAMESPACE)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": name, "namespace": ds_namespace, "labels": labels},
            "roleRef": role_ref("Role"), "subjects": subject}),
    ];
    if (name, sa_namespace) != (account, ds_namespace) {
        docs.push(json!({"apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": account, "namespace": ds_namespace, "labels": labels}}));
    }
    docs.extend([
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": REVIEW, "labels": labels}, "rules": rules(CALICO_NODE)}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": REVIEW, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": REVIEW},
            "subjects": review_subject}),
    ]);
    docs
}
