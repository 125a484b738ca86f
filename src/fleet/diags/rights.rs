//! What `fleet diags` calls, as RBAC rules, and the objects that grant them: list the Windows
//! nodes; get the DaemonSet, list its pods, `get pods/proxy` (not `pods/exec`, which runs any
//! command as SYSTEM; the proxy reaches any TCP port of the node: docs/security.md) and
//! `auth::ACCOUNT`'s tokens in its namespace; and CalicoNode's `create tokenreviews` (`REVIEW`).

use crate::cluster::rights::{Right, Scope, policy_rules, r};
use crate::fleet::rights::{account, role};
use serde_json::{Value, json};

/// Cluster-wide (a ClusterRole): which nodes are asked.
#[rustfmt::skip]
pub const CLUSTER: &[Right] =
    &[r(Scope::Cluster, "", "nodes", &["list"], &[], "the Windows nodes selected")];

/// In the DaemonSet's namespace (a Role there).
#[rustfmt::skip]
pub const IN_NAMESPACE: &[Right] = &[
    r(Scope::Cluster, "apps", "daemonsets", &["get"], &[],
        "the DaemonSet's uid, which its own pods name as their controller"),
    r(Scope::Cluster, "", "pods", &["list"], &[], "each node's pod of the DaemonSet"),
    r(Scope::Cluster, "", "pods/proxy", &["get"], &[], "each pod's GET /diags"),
    r(Scope::Cluster, "", "serviceaccounts/token", &["create"], &[super::auth::ACCOUNT],
        "a token for each node's GET /diags"),
];

/// The ClusterRole (and its binding to calico-node's account) that lets CalicoNode review the
/// tokens its `GET /diags` is given.
pub const REVIEW: &str = "calicoctl-win-diags-review";

/// calico-node's right: review a token (cluster-wide, as TokenReviews are).
#[rustfmt::skip]
pub const CALICO_NODE: &[Right] = &[r(Scope::Cluster, "authentication.k8s.io", "tokenreviews",
    &["create"], &[], "CalicoNode's review of the token of each GET /diags")];

/// The ServiceAccount `name` in `sa_namespace` with its ClusterRole and its Role in
/// `ds_namespace`, all named `name`; `auth::ACCOUNT` in `ds_namespace`; and calico-node's
/// review right (`REVIEW`) for calico-node in `calico_namespace`.
pub fn manifests(
    name: &str,
    (sa_namespace, ds_namespace): (&str, &str),
    calico_namespace: &str,
) -> Vec<Value> {
    let rules = |r: &[Right]| json!(policy_rules(r, Scope::Cluster));
    let subject = json!([{"kind": "ServiceAccount", "name": name, "namespace": sa_namespace}]);
    let mut docs = vec![account(name, sa_namespace)];
    docs.extend(role(name, None, rules(CLUSTER), &subject));
    let in_namespace = rules(IN_NAMESPACE);
    docs.extend(role(name, Some(ds_namespace), in_namespace, &subject));
    let token_account = super::auth::ACCOUNT;
    if (name, sa_namespace) != (token_account, ds_namespace) {
        docs.push(account(token_account, ds_namespace));
    }
    let calico_node =
        json!([{"kind": "ServiceAccount", "name": "calico-node", "namespace": calico_namespace}]);
    docs.extend(role(REVIEW, None, rules(CALICO_NODE), &calico_node));
    docs
}
