//! Every Kubernetes API call calicoctl-win makes, as the RBAC rules that allow it: one table,
//! from which `fleet rbac` renders the roles (`fleet::rights`; `verify`'s in verify_rights.rs)
//! and which `tests/cluster/rights.rs` proves sufficient and minimal. No wildcard; names fixed
//! where the object is. A SelfSubjectAccessReview needs no rule (`system:basic-user`).

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::{Value, json};

/// Where a rule applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// Cluster-wide (a ClusterRole): cluster-scoped objects, or objects in any namespace.
    Cluster,
    /// In Calico's namespace (a Role there).
    Calico,
    /// In `kube-system` (a Role there): the cluster DNS Service.
    KubeSystem,
    /// In the operator's namespace (a Role there; `tigera-operator` unless `fleet plan
    /// --operator-namespace` says where a Helm release put it): its own settings (`migrate`).
    TigeraOperator,
}

/// One rule: verbs on a resource of an API group, in a scope, maybe for named objects only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Right {
    pub scope: Scope,
    pub group: &'static str,
    pub resource: &'static str,
    pub verbs: &'static [&'static str],
    pub names: &'static [&'static str],
    /// What needs it, for people reading the roles.
    pub why: &'static str,
}

pub const fn r(
    scope: Scope,
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    names: &'static [&'static str],
    why: &'static str,
) -> Right {
    Right {
        scope,
        group,
        resource,
        verbs,
        names,
        why,
    }
}

const CALICO: &str = "crd.projectcalico.org";

/// What `install`, `reconfigure`, `uninstall --purge`, `status` and `preflight` call with the
/// installer's credential.
#[rustfmt::skip]
pub const INSTALLER: &[Right] = &[
    r(Scope::Cluster, "", "namespaces", &["get"], &["calico-system", "kube-system"],
        "finding Calico's namespace"),
    r(Scope::Cluster, "", "nodes", &["get", "patch"], &[],
        "the node's readiness, its cordon, taint and annotations"),
    r(Scope::Cluster, "", "nodes/status", &["patch"], &[],
        "uninstall's CalicoWindowsReady condition (NotInstalled)"),
    r(Scope::Cluster, "", "pods", &["list"], &[], "the node's pods, for status and the drain"),
    r(Scope::Cluster, "discovery.k8s.io", "endpointslices", &["list"], &[],
        "whether another host's HNS endpoint is a Service backend, for status and repair"),
    r(Scope::Cluster, "", "pods/eviction", &["create"], &[], "the drain"),
    r(Scope::Cluster, CALICO, "clusterinformations", &["get"], &["default"],
        "the cluster's Calico version and datastore"),
    r(Scope::Cluster, CALICO, "felixconfigurations", &["get"], &["default"],
        "the VXLAN VNI, port and IPIP"),
    r(Scope::Cluster, CALICO, "ipamconfigs", &["get"], &["default"], "strict affinity"),
    r(Scope::Cluster, CALICO, "ippools", &["list"], &[], "the IP pools"),
    r(Scope::Cluster, super::calico_api::MIGRATION_GROUP, "datastoremigrations", &["list"], &[],
        "a migration of Calico's datastore under way"),
    r(Scope::Cluster, CALICO, "ipamblocks", &["list"], &[], "the node's IPAM blocks, for status"),
    r(Scope::Cluster, "networking.k8s.io", "servicecidrs", &["get"], &["kubernetes"],
        "the service CIDR"),
    r(Scope::Cluster, "operator.tigera.io", "installations", &["get"], &["default", "overlay"],
        "an operator install's settings (default, and overlay, whose fields override it)"),
    r(Scope::KubeSystem, "", "services", &["get"], &["kube-dns"], "the cluster DNS address"),
    r(Scope::Calico, "", "configmaps", &["get"], &["calico-config", "kube-root-ca.crt"],
        "etcd endpoints; the cluster CA when the kubeconfig has none"),
    r(Scope::Calico, "", "serviceaccounts/token", &["create"], &["calico-node"],
        "calico-node's token"),
    r(Scope::Calico, "rbac.authorization.k8s.io", "roles", &["get", "create", "delete"], &[],
        "the node's grant to renew its token"),
    r(Scope::Calico, "rbac.authorization.k8s.io", "rolebindings", &["get", "create", "delete"],
        &[], "the node's grant to renew its token"),
];

/// What an install with the etcd datastore reads besides: the etcd client's TLS files.
#[rustfmt::skip]
pub const ETCD: &[Right] =
    &[r(Scope::Calico, "", "secrets", &["get"], &["calico-etcd-secrets"], "the etcd TLS files")];

/// The installer's rights for a datastore: `INSTALLER`, with `ETCD` for etcdv3.
pub fn installer(etcd: bool) -> Vec<Right> {
    let mut out = INSTALLER.to_vec();
    if etcd {
        out.extend_from_slice(ETCD);
    }
    out
}

/// The same rights with Calico's resources in the group the cluster serves them in (written
/// for `crd.projectcalico.org`).
pub fn in_group(rights: &[Right], g: super::calico_api::Group) -> Vec<Right> {
    rights
        .iter()
        .map(|r| match r.group {
            CALICO => Right {
                group: g.group(),
                resource: g.plural_of_v1(r.resource),
                ..*r
            },
            _ => *r,
        })
        .collect()
}

/// The name of the admission policy that keeps calico-node's own token requests (the node's
/// renewal grant, `cluster::renewal`) to its own Node.
pub const CALICO_NODE_TOKEN_POLICY: &str = "calicoctl-win-token-calico-node";

/// The rules of one scope, as Kubernetes writes them.
pub fn policy_rules(rights: &[Right], scope: Scope) -> Vec<PolicyRule> {
    rights
        .iter()
        .filter(|r| r.scope == scope)
        .map(|r| PolicyRule {
            api_groups: Some(vec![r.group.to_owned()]),
            resources: Some(vec![r.resource.to_owned()]),
            verbs: r.verbs.iter().map(|v| (*v).to_owned()).collect(),
            resource_names: (!r.names.is_empty())
                .then(|| r.names.iter().map(|n| (*n).to_owned()).collect()),
            ..PolicyRule::default()
        })
        .collect()
}

/// The label of every object `fleet rbac` writes.
pub fn labels() -> Value {
    json!({"app.kubernetes.io/managed-by": "calicoctl-win"})
}

/// The ServiceAccount `name` in `namespace`.
pub fn account(name: &str, namespace: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace, "labels": labels()}})
}

/// A Role in `namespace` (a ClusterRole without one) named `name` with `rules`, and its
/// binding of the same name to `subjects`.
pub fn role(name: &str, namespace: Option<&str>, rules: Value, subjects: &Value) -> [Value; 2] {
    let kind = namespace.map_or("ClusterRole", |_| "Role");
    let mut meta = json!({"name": name});
    if let Some(ns) = namespace {
        meta["namespace"] = json!(ns);
    }
    meta["labels"] = labels();
    [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
            "metadata": meta, "rules": rules}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": format!("{kind}Binding"),
            "metadata": meta,
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": name},
            "subjects": subjects}),
    ]
}
