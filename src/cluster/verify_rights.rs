//! What `verify` calls, as the RBAC rules that allow it (cluster-wide: its namespace is random; no account is written for them, docs/commands/verify.md), beside
//! the other identities' in rights.rs.

use super::rights::{Right, Scope};

const fn r(
    group: &'static str,
    resource: &'static str,
    verbs: &'static [&'static str],
    why: &'static str,
) -> Right {
    Right {
        scope: Scope::Cluster,
        group,
        resource,
        verbs,
        names: &[],
        why,
    }
}

/// What `verify` calls: its own namespace made, read and deleted (and a killed run's found by
/// its label), the nodes listed, the probe pods, the Service and the NetworkPolicy made in it,
/// the pods and their events read, the `kubernetes` Service's address read, and each client
/// pod's netexec asked through the pod proxy (no `pods/exec`). The namespace's name is random,
/// so the rules are cluster-wide; deleting the namespace deletes what is in it (the namespace
/// controller's own rights), so no delete of pods or Services is needed. One verb a rule, so
/// that `tests/cluster/verify_rights.rs` proves each needed.
pub const VERIFY: &[Right] = &[
    r("", "namespaces", &["create"], "verify: its namespace"),
    r(
        "",
        "namespaces",
        &["delete"],
        "verify: its namespace, and a killed run's, deleted",
    ),
    r(
        "",
        "namespaces",
        &["get"],
        "verify: waiting until its namespace is gone",
    ),
    r(
        "",
        "namespaces",
        &["list"],
        "verify: a killed run's namespace, by its label",
    ),
    r("", "nodes", &["list"], "verify: where the probe pods go"),
    r("", "pods", &["create"], "verify: the probe pods"),
    r(
        "",
        "pods",
        &["list"],
        "verify: the probe pods' addresses and readiness",
    ),
    r(
        "",
        "pods/proxy",
        &["get"],
        "verify: each client pod's netexec asked to dial",
    ),
    r(
        "",
        "events",
        &["list"],
        "verify: why a probe pod has no address",
    ),
    r(
        "",
        "services",
        &["create"],
        "verify: the Service in front of the server",
    ),
    r(
        "",
        "services",
        &["get"],
        "verify: its Service's and the kubernetes Service's ClusterIP",
    ),
    r(
        "networking.k8s.io",
        "networkpolicies",
        &["create"],
        "verify: the policy that denies the server's ingress",
    ),
    r(
        "networking.k8s.io",
        "networkpolicies",
        &["delete"],
        "verify: the policy lifted",
    ),
];
