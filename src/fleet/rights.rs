//! The fleet's and the migration's roles, the admission policies on calico-node's token and
//! the objects that grant an identity its rights (`fleet rbac`), from the table of every API
//! call in `cluster::rights`.

use crate::cluster::rights::{
    CALICO_NODE_TOKEN_POLICY, INSTALLER, Right, Scope, installer, policy_rules, r,
};
pub use crate::cluster::rights::{account, role};
use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};

/// What the fleet's jobs call (`reconfigure`, the readiness `status`, `service keep-token`):
/// the installer's reads, the node's annotations and the drain, and calico-node's token (by
/// `resourceNames`; bound to the caller's own Node, by `token_policy`); no grant.
pub const FLEET: &[Right] = &[
    INSTALLER[0],  // namespaces
    INSTALLER[1],  // nodes
    INSTALLER[3],  // pods
    INSTALLER[4],  // endpointslices
    INSTALLER[5],  // pods/eviction
    INSTALLER[6],  // clusterinformations
    INSTALLER[7],  // felixconfigurations
    INSTALLER[8],  // ipamconfigs
    INSTALLER[9],  // ippools
    INSTALLER[11], // ipamblocks
    INSTALLER[12], // servicecidrs
    INSTALLER[13], // installations
    INSTALLER[14], // kube-dns
    INSTALLER[15], // calico-config
    INSTALLER[16], // serviceaccounts/token, calico-node's only: the node's renewer of last resort
];

/// The fleet DaemonSet's turns (`reconfigure --turn`, `fleet::turn`): a Role `<fleet>-turn`
/// bound to `sa` that may get and update the `count` Leases `<fleet>-turn-<i>` by name, and
/// create Leases ("You cannot restrict create ... requests by their resource name":
/// kubernetes.io RBAC docs).
pub fn turn_role(sa: &str, namespace: &str, fleet: &str, count: u32) -> Vec<Value> {
    let names: Vec<String> = (0..count).map(|i| format!("{fleet}-turn-{i}")).collect();
    let leases = |verbs: &[&str]| json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": verbs});
    let mut named = leases(&["get", "update"]);
    named["resourceNames"] = json!(names);
    let rules = json!([named, leases(&["create"])]);
    let subjects = json!([{"kind": "ServiceAccount", "name": sa, "namespace": namespace}]);
    role(&format!("{fleet}-turn"), Some(namespace), rules, &subjects).into()
}

/// What `migrate` calls besides the installer's rights (`fleet plan --migrate`'s jobs).
#[rustfmt::skip]
pub const MIGRATE_EXTRA: &[Right] = &[
    r(Scope::Cluster, "operator.tigera.io", "installations", &["patch"], &["default", "overlay"],
        "migrate: the operator's DaemonSet affinity and windowsDataplane (in overlay where it sets them)"),
    r(Scope::Cluster, "", "nodes", &["list"], &[],
        "migrate: the Windows nodes calicoctl-win installed, to label them"),
    r(Scope::Cluster, "apps", "deployments", &["list"], &[],
        "migrate to-operator: where the operator runs (its Deployment, by its label k8s-app=tigera-operator)"),
    r(Scope::Cluster, "operator.tigera.io", "tigerastatuses", &["get"],
        &["calico", "calico-windows"], "migrate to-operator: whether the operator renders the Installation (not Degraded)"),
    r(Scope::Calico, "apps", "daemonsets", &["get"], &["calico-node-windows"],
        "migrate to-operator: the operator's Windows DaemonSet, rendered and placed on the node"),
    r(Scope::TigeraOperator, "", "configmaps", &["get"], &["kubernetes-services-endpoint"],
        "migrate to-operator: the API server's address the operator gives Windows nodes"),
];

/// The migration jobs' rights: the installer's for the kubernetes datastore (the operator's
/// Windows DaemonSet has `DATASTORE_TYPE: kubernetes` only: tigera/operator release-v1.44
/// `pkg/render/windows.go`) and `MIGRATE_EXTRA`.
pub fn migrate() -> Vec<Right> {
    let mut out = installer(false);
    out.extend_from_slice(MIGRATE_EXTRA);
    out
}

/// What the admission policy needs of the cluster, said where it is written.
pub const TOKEN_POLICY_NEEDS: &str = "the admission policies calicoctl-win-token-per-node and calicoctl-win-token-calico-node keep each node's pod to its own node's calico-node token, and a calico-node token's requests for Node-bound calico-node tokens to its own Node's (Calico's own unbound requests are not judged), of at most a year: they need Kubernetes 1.30 or later (ValidatingAdmissionPolicy; an older server refuses the manifests, and the fleet's and calico-node's accounts may then ask for calico-node's token for any node), the node claim in pod tokens (on by default from 1.30, GA in 1.32) and tokens bound to Nodes (on by default from 1.31, GA in 1.33): where they are not, the policies refuse the renewers' requests, and a refused token is replaced with 'fetch kubeconfig'";

/// The name of the admission policy that keeps the fleet's token requests to its own Node.
pub const TOKEN_POLICY: &str = "calicoctl-win-token-per-node";

/// The longest token either policy admits: install's default lifetime, one year, which the
/// renewers never exceed (`supervise::renew`, `commands::keep_token`).
pub const TOKEN_LIFETIME_CAP: std::time::Duration = std::time::Duration::from_secs(365 * 86400);

/// A ValidatingAdmissionPolicy (Kubernetes 1.30 and later) and its binding that admit a
/// TokenRequest by the fleet's account `sa` only when bound to the Node of the caller's node
/// claim (kubernetes `test/e2e/auth/per_node_update.go`'s pattern) and of at most
/// `TOKEN_LIFETIME_CAP`. Without the node claim every request is refused (docs/security.md).
pub fn token_policy(sa: &str, namespace: &str) -> Vec<Value> {
    per_node_policy(TOKEN_POLICY, sa, namespace, None)
}

/// The same policy for `calico-node` (its renewal grant lets it make its own tokens), judging
/// only Node-bound requests (CalicoNode's renewer's): Calico's own are unbound (calico v3.25.2
/// to v3.32.1 `node/pkg/cni/token_watch.go` `UpdateToken`) and stay unjudged (docs/security.md).
pub fn calico_node_token_policy(calico_namespace: &str) -> Vec<Value> {
    let bound = json!({"name": "node-bound-only", "expression": NODE_BOUND});
    per_node_policy(
        CALICO_NODE_TOKEN_POLICY,
        "calico-node",
        calico_namespace,
        Some(bound),
    )
}

/// A TokenRequest bound to a Node, as calicoctl-win's renewers ask (`supervise::renew`,
/// `commands::keep_token`, through `credentials::token_request_body`).
const NODE_BOUND: &str =
    "has(object.spec.boundObjectRef) && object.spec.boundObjectRef.kind == 'Node'";

/// The policy and its binding for `sa`'s requests for calico-node's token, and `also` as a
/// match condition (the fleet's account is calicoctl-win's own: all its requests are judged).
fn per_node_policy(name: &str, sa: &str, namespace: &str, also: Option<Value>) -> Vec<Value> {
    let user = format!("system:serviceaccount:{namespace}:{sa}");
    let claim = "request.userInfo.extra['authentication.kubernetes.io/node-name']";
    let cap = TOKEN_LIFETIME_CAP.as_secs();
    let mut conditions = vec![
        json!({"name": "this-account-only",
            "expression": format!("request.userInfo.username == '{user}'")}),
        // Only calico-node's own token (`calico-cni-plugin`'s is asked too).
        json!({"name": "calico-node-token-only", "expression": "request.name == 'calico-node'"}),
    ];
    conditions.extend(also);
    vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["serviceaccounts/token"]}]},
                "matchConditions": conditions,
                "validations": [
                    {"expression": format!("'authentication.kubernetes.io/node-name' in request.userInfo.extra && {NODE_BOUND} && object.spec.boundObjectRef.name == {claim}[0]"),
                        "message": format!("{sa} may only request a token bound to its own Node"),
                        "reason": "Forbidden"},
                    // kube-apiserver defaults an absent expirationSeconds to an hour.
                    {"expression": format!("!has(object.spec.expirationSeconds) || object.spec.expirationSeconds <= {cap}"),
                        "message": format!("{sa} may only request a token of at most {cap} seconds"),
                        "reason": "Forbidden"}]}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name},
            "spec": {"policyName": name, "validationActions": ["Deny"]}}),
    ]
}

/// The operator's namespace in Calico's manifest (`tigera-operator`, `common.OperatorNamespace()`'s
/// default), where `fleet plan --migrate` grants migrate's reads unless told another.
pub const OPERATOR_NAMESPACE: &str = "tigera-operator";

/// The objects that give an identity `rights`: its ServiceAccount, a ClusterRole and a Role in
/// each namespace it needs, each bound to it; all named `name`.
pub fn manifests(
    rights: &[Right],
    (name, namespace): (&str, &str),
    calico_namespace: &str,
    operator_namespace: &str,
) -> Vec<Value> {
    let subject = json!([{"kind": "ServiceAccount", "name": name, "namespace": namespace}]);
    let mut out = vec![account(name, namespace)];
    let cluster = policy_rules(rights, Scope::Cluster);
    if !cluster.is_empty() {
        out.extend(role(name, None, json!(cluster), &subject));
    }
    // One Role a namespace: where Calico's namespace is kube-system (a manifest install) both
    // sets of rules go in one, as `kubectl apply` keeps the last of two objects of one name.
    let mut namespaces: Vec<(&str, Vec<PolicyRule>)> = Vec::new();
    for (scope, ns) in [
        (Scope::Calico, calico_namespace),
        (Scope::KubeSystem, "kube-system"),
        (Scope::TigeraOperator, operator_namespace),
    ] {
        let rules = policy_rules(rights, scope);
        match namespaces.iter_mut().find(|(n, _)| *n == ns) {
            Some((_, have)) => {
                for rule in rules {
                    if !have.contains(&rule) {
                        have.push(rule);
                    }
                }
            }
            None => namespaces.push((ns, rules)),
        }
    }
    for (ns, rules) in namespaces.into_iter().filter(|(_, r)| !r.is_empty()) {
        out.extend(role(name, Some(ns), json!(rules), &subject));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (Each object once: tests/cluster/fleet.rs
    /// `fleet_rbac_for_calico_in_kube_system_writes_each_object_once`.)
    #[test]
    fn calicos_namespace_in_kube_system_gets_one_role_with_both_sets_of_rules() {
        let all = installer(false);
        for calico_ns in ["kube-system", "calico-system"] {
            let who = ("calicoctl-win-installer", "kube-system");
            let docs = manifests(&all, who, calico_ns, OPERATOR_NAMESPACE);
            let rules_in = |ns: &str| -> usize {
                docs.iter()
                    .filter(|d| d["kind"] == "Role" && d["metadata"]["namespace"] == ns)
                    .map(|d| d["rules"].as_array().map_or(0, Vec::len))
                    .sum()
            };
            let calico = policy_rules(&all, Scope::Calico).len();
            let kube_system = policy_rules(&all, Scope::KubeSystem).len();
            if calico_ns == "kube-system" {
                assert_eq!(rules_in("kube-system"), calico + kube_system);
            } else {
                assert_eq!(rules_in("calico-system"), calico);
                assert_eq!(rules_in("kube-system"), kube_system);
            }
        }
    }

    #[test]
    fn the_fleet_has_the_installers_reads_and_drain_and_calico_nodes_token_only() {
        assert!(FLEET.iter().all(|r| INSTALLER.contains(r)));
        assert!(FLEET.iter().all(|r| r.group != "rbac.authorization.k8s.io"));
        let tokens: Vec<&Right> = FLEET
            .iter()
            .filter(|r| r.resource == "serviceaccounts/token")
            .collect();
        assert_eq!(tokens.len(), 1);
        assert_eq!(tokens[0].names, ["calico-node"]);
        assert_eq!(tokens[0].verbs, ["create"]);
        assert_eq!(FLEET.len(), INSTALLER.len() - 4);
    }

    #[test]
    fn no_rule_has_a_wildcard() {
        for r in INSTALLER.iter().chain(MIGRATE_EXTRA) {
            assert!(
                !r.group.contains('*')
                    && !r.resource.contains('*')
                    && r.verbs.iter().all(|v| !v.contains('*'))
                    && r.names.iter().all(|n| !n.contains('*')),
                "{r:?}"
            );
        }
    }
}
