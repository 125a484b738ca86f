//! What `verify --namespace calicoctl-win-verify` calls, as RBAC rules, and the objects
//! `fleet rbac --identity verify` writes for them. One namespace made once with the roles (Pod
//! Security `restricted`, the image held by an admission policy): RBAC cannot narrow a create
//! by name (kubernetes `staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go`: a
//! POST to a collection has no `Name`), so a namespace per run would mean pods anywhere.

use super::rights::{Right, Scope, account, policy_rules, role};
use serde_json::{Value, json};

/// The namespace `fleet rbac --identity verify` makes for `verify --namespace`.
pub const NAMESPACE: &str = "calicoctl-win-verify";

/// A cluster-scope right (verify's roles each go in one place), by resource first.
const fn r(
    resource: &'static str,
    group: &'static str,
    verbs: &'static [&'static str],
    names: &'static [&'static str],
    why: &'static str,
) -> Right {
    super::rights::r(Scope::Cluster, group, resource, verbs, names, why)
}

/// The Pod Security level verify's namespaces enforce, which its probe pods meet
/// (`verify::objects`).
pub const ENFORCE_LEVEL: &str = "restricted";

const NP: &str = "networking.k8s.io";
/// A run's Lease (`verify::shared`).
const CO: &str = "coordination.k8s.io";

/// Cluster-wide (a ClusterRole): where the probe pods go.
pub const CLUSTER: &[Right] = &[r("nodes", "", &["list"], &[], "where the probe pods go")];

/// In `default` (a Role there): the API server's Service, for the api-server check.
#[rustfmt::skip]
pub const DEFAULT: &[Right] =
    &[r("services", "", &["get"], &["kubernetes"], "the kubernetes Service's ClusterIP")];

/// In verify's namespace (a Role there). One verb a rule, so that
/// `tests/cluster/verify_rights.rs` proves each needed.
#[rustfmt::skip]
pub const IN_NAMESPACE: &[Right] = &[
    r("pods", "", &["create"], &[], "the probe pods"),
    r("pods", "", &["delete"], &[], "the probe pods deleted"),
    r("pods", "", &["list"], &[], "the probe pods' addresses, readiness, and their end"),
    r("pods/proxy", "", &["get"], &[], "each client's netexec asked to dial"),
    r("events", "", &["list"], &[], "why a probe pod has no address"),
    r("events", "", &["delete"], &[], "the probe pods' events, before the next run's"),
    r("services", "", &["create"], &[], "the Service in front of the server"),
    r("services", "", &["delete"], &[], "the Service deleted"),
    r("services", "", &["get"], &[], "the Service's ClusterIP"),
    r("services", "", &["list"], &[], "a run's Service found by its label, and a killed run's"),
    r("networkpolicies", NP, &["create"], &[], "the policy denying the server's ingress"),
    r("networkpolicies", NP, &["delete"], &[], "the policy lifted"),
    r("networkpolicies", NP, &["list"], &[],
        "a run's policy found by its label, and a killed run's"),
    r("leases", CO, &["create"], &[], "a run's Lease taken"),
    r("leases", CO, &["update"], &[], "a run's Lease renewed"),
    r("leases", CO, &["get"], &[],
        "a run's Lease read again after a conflict, or found for a run's objects"),
    r("leases", CO, &["list"], &[], "the Leases of killed runs found"),
    r("leases", CO, &["delete"], &[], "a run's Lease given back, or a killed run's deleted"),
];

/// The objects: verify's namespace, the ServiceAccount `name` in `sa_namespace`, the
/// ClusterRole, the Roles in verify's namespace and in `default`, each bound to it.
pub fn manifests(name: &str, sa_namespace: &str) -> Vec<Value> {
    let mut out = vec![namespace(), account(name, sa_namespace)];
    out.extend(bindings(name, sa_namespace, name));
    out
}

/// Verify's namespace, where Pod Security `restricted` (which the probe pods meet) forbids
/// privileged pods, host namespaces, hostPath, host ports and root (kubernetes docs, Pod
/// Security Standards): the account may create only ordinary, unprivileged pods.
pub fn namespace() -> Value {
    json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": NAMESPACE, "labels": {
            "app.kubernetes.io/managed-by": "calicoctl-win",
            "pod-security.kubernetes.io/enforce": ENFORCE_LEVEL}}})
}

/// The roles and their bindings to the ServiceAccount `sa` in `sa_namespace` (also what
/// `fleet plan --verify` gives the fleet's jobs), named `name`.
pub fn bindings(name: &str, sa_namespace: &str, sa: &str) -> Vec<Value> {
    let subject = json!([{"kind": "ServiceAccount", "name": sa, "namespace": sa_namespace}]);
    let rules = |r: &[Right]| json!(policy_rules(r, Scope::Cluster));
    let mut out = role(name, None, rules(CLUSTER), &subject).to_vec();
    for (ns, r) in [(NAMESPACE, IN_NAMESPACE), ("default", DEFAULT)] {
        out.extend(role(name, Some(ns), rules(r), &subject));
    }
    out
}

/// A ValidatingAdmissionPolicy and its binding, named `name` (admissionregistration.k8s.io/v1,
/// Kubernetes 1.30: `+k8s:prerelease-lifecycle-gen:introduced=1.30`): the pods of `sa` in
/// `sa_namespace` run only `images` in every container, and none uses the host's namespaces,
/// is privileged or HostProcess (Pod Security's baseline too, said again should the namespace
/// label go). Last, on their own: an older server refuses these kinds and applies the rest.
pub fn admission(name: &str, sa_namespace: &str, sa: &str, images: &[String]) -> Vec<Value> {
    let labels = super::rights::labels();
    let user = format!("system:serviceaccount:{sa_namespace}:{sa}");
    let listed: Vec<String> = images.iter().map(|i| format!("'{i}'")).collect();
    let listed = listed.join(", ");
    // `cond` of `c` true for every container, init container and ephemeral container
    // (the two latter optional: `has()`).
    let every = |cond: &str| {
        let s = "object.spec";
        format!(
            "{s}.containers.all(c, {cond}) \
             && (!has({s}.initContainers) || {s}.initContainers.all(c, {cond})) \
             && (!has({s}.ephemeralContainers) || {s}.ephemeralContainers.all(c, {cond}))"
        )
    };
    let set = |path: &str, field: &str| format!("(has({path}.{field}) && {path}.{field})");
    let host_process = |o: &str| {
        let w = format!("{o}.securityContext.windowsOptions");
        format!("has({o}.securityContext) && has({w}) && has({w}.hostProcess) && {w}.hostProcess")
    };
    let (host_process, pod_host_process) = (host_process("c"), host_process("object.spec"));
    let validations = json!([
        {"expression": every(&format!("c.image in [{listed}]")),
            "message": format!("{sa} may run only the verify image ({})", images.join(", "))},
        {"expression": format!("!{} && !{} && !{}", set("object.spec", "hostNetwork"),
            set("object.spec", "hostPID"), set("object.spec", "hostIPC")),
            "message": format!("{sa} may not use the host's network, PID or IPC namespace")},
        {"expression": every(&format!("!(has(c.securityContext) && {})",
            set("c.securityContext", "privileged"))),
            "message": format!("{sa} may not run a privileged container")},
        {"expression": format!("!({pod_host_process}) && {}", every(&format!("!({host_process})"))),
            "message": format!("{sa} may not run a HostProcess pod")},
    ]);
    vec![
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {
                    "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": NAMESPACE}},
                    "resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                        "operations": ["CREATE", "UPDATE"],
                        "resources": ["pods", "pods/ephemeralcontainers"]}]},
                "matchConditions": [{"name": "verify-account",
                    "expression": format!("request.namespace == '{NAMESPACE}' && request.userInfo.username == '{user}'")}],
                "validations": validations}}),
        json!({"apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": name, "labels": labels},
            "spec": {"policyName": name, "validationActions": ["Deny"]}}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The policy's CEL names what it is about: the account's username and the namespace in
    /// its match condition, every image in the image rule, each field it refuses, optional
    /// fields behind `has()`. (The API server evaluates it; no CEL evaluator here.)
    #[test]
    fn the_policy_names_the_account_the_namespace_and_the_images() {
        let images = [
            "m.local/agnhost:2.52".to_owned(),
            "m.local/b@sha256:ab".to_owned(),
        ];
        let docs = admission("pol", "ops", "acct", &images);
        let spec = &docs[0]["spec"];
        let when = spec["matchConditions"][0]["expression"].as_str().unwrap();
        assert_eq!(
            when,
            "request.namespace == 'calicoctl-win-verify' \
             && request.userInfo.username == 'system:serviceaccount:ops:acct'"
        );
        let rules: Vec<&str> = spec["validations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["expression"].as_str().unwrap())
            .collect();
        assert!(rules[0].contains("c.image in ['m.local/agnhost:2.52', 'm.local/b@sha256:ab']"));
        for list in ["containers", "initContainers", "ephemeralContainers"] {
            for r in [rules[0], rules[2], rules[3]] {
                assert!(r.contains(&format!("object.spec.{list}.all(c, ")), "{r}");
            }
        }
        assert!(rules[0].contains("!has(object.spec.initContainers) ||"));
        for f in ["hostNetwork", "hostPID", "hostIPC"] {
            assert!(rules[1].contains(&format!("!(has(object.spec.{f}) && object.spec.{f})")));
        }
        assert!(rules[2].contains("c.securityContext.privileged"));
        assert!(rules[3].contains("object.spec.securityContext.windowsOptions.hostProcess"));
        assert!(rules[3].contains("c.securityContext.windowsOptions.hostProcess"));
        // Balanced parentheses and brackets, and quotes in pairs: the expressions parse as
        // far as their shape goes.
        for r in rules.iter().chain([&when]) {
            let mut depth = 0i32;
            for ch in r.chars() {
                depth += match ch {
                    '(' | '[' => 1,
                    ')' | ']' => -1,
                    _ => 0,
                };
                assert!(depth >= 0, "{r}");
            }
            assert_eq!(depth, 0, "{r}");
            assert_eq!(r.matches('\'').count() % 2, 0, "{r}");
        }
        assert_eq!(docs[1]["spec"]["policyName"], "pol");
        assert_eq!(docs[1]["spec"]["validationActions"], json!(["Deny"]));
        assert_eq!(
            spec["matchConstraints"]["namespaceSelector"]["matchLabels"]["kubernetes.io/metadata.name"],
            NAMESPACE
        );
    }
}
