//! The objects `verify` makes, as typed Kubernetes values: its namespace (labelled as
//! calicoctl-win's, so a run that was killed is found by the next one), the probe pods, the
//! Service in front of the server and the NetworkPolicy that denies the server's ingress.

use super::dial::{SERVICE_NAME, SERVICE_PORT};
use super::image::{HTTP_PORT, UDP_PORT};
use super::matrix::{Os, Placement, Role};
use crate::k8s_name::NodeName;
use k8s_openapi::api::core::v1::{
    Affinity, Capabilities, Container, ContainerPort, HTTPGetAction, Namespace, NodeAffinity,
    NodeSelector, NodeSelectorRequirement, NodeSelectorTerm, Pod, PodOS, PodSecurityContext,
    PodSpec, Probe, SeccompProfile, SecurityContext, Service, ServicePort, ServiceSpec,
    WindowsSecurityContextOptions,
};
use k8s_openapi::api::networking::v1::{NetworkPolicy, NetworkPolicySpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use std::collections::BTreeMap;

/// The label every namespace `verify` makes carries, and its value.
pub const OWNER_LABEL: &str = "app.kubernetes.io/managed-by";
pub const OWNER_VALUE: &str = "calicoctl-win-verify";
/// The label that tells the probe pods' parts apart.
pub const ROLE_LABEL: &str = "calicoctl-win.projectcalico.org/verify-role";
pub use super::matrix::{Names, RUN_LABEL};
/// The namespace's name before its random suffix.
pub const NAMESPACE_PREFIX: &str = "calicoctl-win-verify-";
/// The NetworkPolicy that denies the server's ingress.
pub const POLICY_NAME: &str = "deny-server-ingress";
/// Pod Security admission's label, and the level the probe pods meet: `restricted`
/// (kubernetes `staging/src/k8s.io/pod-security-admission/api/constants.go`,
/// `EnforceLevelLabel`; the policy checks in `pod-security-admission/policy/`).
pub const ENFORCE_LABEL: &str = "pod-security.kubernetes.io/enforce";
pub use crate::cluster::verify_rights::ENFORCE_LEVEL;
/// The Linux client's user: a number, as the kubelet needs to hold `runAsNonRoot` against an
/// image that names no user (`pkg/kubelet/kuberuntime/security_context_others.go`,
/// `verifyRunAsNonRoot`); netexec's ports, 8080 and 8081, need no privilege.
const LINUX_USER: i64 = 65534;
/// The Windows pods' user: not `ContainerAdministrator`, which the kubelet takes for root
/// (`pkg/kubelet/kuberuntime/security_context_windows.go`, `verifyRunAsNonRoot`).
const WINDOWS_USER: &str = "ContainerUser";

fn labels(pairs: &[(&str, &str)]) -> Option<BTreeMap<String, String>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    )
}

/// A run's object `name` in `ns`, labelled as calicoctl-win's and the run's (and `role`'s).
fn run_meta(ns: &str, run: &Names, name: &str, role: Option<&str>) -> ObjectMeta {
    let mut pairs = vec![(OWNER_LABEL, OWNER_VALUE)];
    pairs.extend(role.map(|r| (ROLE_LABEL, r)));
    pairs.push((RUN_LABEL, &run.id));
    ObjectMeta {
        name: Some(run.of(name)),
        namespace: Some(ns.to_owned()),
        labels: labels(&pairs),
        ..Default::default()
    }
}

/// The namespace, named with the caller's random suffix (lower-case letters and digits).
pub fn namespace(suffix: &str) -> Namespace {
    Namespace {
        metadata: ObjectMeta {
            name: Some(format!("{NAMESPACE_PREFIX}{suffix}")),
            labels: labels(&[(OWNER_LABEL, OWNER_VALUE), (ENFORCE_LABEL, ENFORCE_LEVEL)]),
            ..Default::default()
        },
        ..Default::default()
    }
}

/// The probe pods' controller, the run's Lease: a drain without `--force` evicts them (kubectl
/// `pkg/drain/filters.go`, `unreplicatedFilter`) and the garbage collector deletes them with it.
pub fn controller((api_version, kind): (&str, &str), name: &str, uid: &str) -> OwnerReference {
    OwnerReference {
        api_version: api_version.into(),
        kind: kind.into(),
        name: name.to_owned(),
        uid: uid.to_owned(),
        controller: Some(true),
        block_owner_deletion: None,
    }
}

/// A probe pod: netexec serving HTTP on 8080 and UDP on 8081, placed on its node by name and,
/// on Windows, on the node's OS build (the image variant must match the host's build),
/// controlled by `owner` (`controller`).
pub fn pod(ns: &str, p: &Placement, image: &str, (owner, run): (&OwnerReference, &Names)) -> Pod {
    let role = p.role.pod_name();
    let mut selector = BTreeMap::from([("kubernetes.io/os".to_owned(), os_word(p.os).to_owned())]);
    if let Some(build) = &p.windows_build {
        selector.insert("node.kubernetes.io/windows-build".into(), build.clone());
    }
    Pod {
        metadata: ObjectMeta {
            annotations: p
                .windows_build
                .as_deref()
                .and_then(|b| super::image::variant(image, b))
                .and_then(|v| labels(&[(super::image::VARIANT_ANNOTATION, v)])),
            owner_references: Some(vec![owner.clone()]),
            ..run_meta(ns, run, role, Some(role))
        },
        spec: Some(PodSpec {
            containers: vec![Container {
                security_context: container_security(p.os),
                ..netexec(image, p.role)
            }],
            os: Some(PodOS {
                name: os_word(p.os).to_owned(),
            }),
            security_context: Some(pod_security(p.os)),
            // netexec's `/hostname` answers the role whatever the pod's name: the kubelet
            // names a pod's host by `spec.hostname` when set (kubernetes
            // `pkg/kubelet/kubelet_pods.go`, `GeneratePodHostNameAndDomain`).
            hostname: Some(role.to_owned()),
            node_selector: Some(selector),
            affinity: Some(on_node(&p.node)),
            tolerations: Some(super::matrix::tolerations()),
            automount_service_account_token: Some(false),
            termination_grace_period_seconds: Some(1),
            restart_policy: Some("Always".into()),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// Pod Security's `restricted` profile: every pod non-root (`check_runAsNonRoot.go`), a Linux
/// pod with the runtime's seccomp profile too (`check_seccompProfile_restricted.go`); a
/// Windows pod may not set Linux's fields (pod validation's `validateWindows`).
fn pod_security(os: Os) -> PodSecurityContext {
    match os {
        Os::Linux => PodSecurityContext {
            run_as_non_root: Some(true),
            run_as_user: Some(LINUX_USER),
            seccomp_profile: Some(SeccompProfile {
                type_: "RuntimeDefault".into(),
                ..Default::default()
            }),
            ..Default::default()
        },
        Os::Windows => PodSecurityContext {
            run_as_non_root: Some(true),
            windows_options: Some(WindowsSecurityContextOptions {
                run_as_user_name: Some(WINDOWS_USER.into()),
                ..Default::default()
            }),
            ..Default::default()
        },
    }
}

/// A Linux container drops every capability and may not gain privileges
/// (`check_capabilities_restricted.go`, `check_allowPrivilegeEscalation.go`).
fn container_security(os: Os) -> Option<SecurityContext> {
    (os == Os::Linux).then(|| SecurityContext {
        allow_privilege_escalation: Some(false),
        capabilities: Some(Capabilities {
            drop: Some(vec!["ALL".into()]),
            ..Default::default()
        }),
        ..Default::default()
    })
}

fn os_word(os: Os) -> &'static str {
    match os {
        Os::Windows => "windows",
        Os::Linux => "linux",
    }
}

/// Pinned to one node as the DaemonSet controller pins its pods: a required node affinity on
/// the field `metadata.name`, so the scheduler still weighs everything else.
fn on_node(node: &NodeName) -> Affinity {
    Affinity {
        node_affinity: Some(NodeAffinity {
            required_during_scheduling_ignored_during_execution: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_fields: Some(vec![NodeSelectorRequirement {
                        key: "metadata.name".into(),
                        operator: "In".into(),
                        values: Some(vec![node.to_string()]),
                    }]),
                    ..Default::default()
                }],
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn netexec(image: &str, role: Role) -> Container {
    let port = |n: i32, proto: &str| ContainerPort {
        container_port: n,
        protocol: Some(proto.into()),
        ..Default::default()
    };
    Container {
        name: "netexec".into(),
        image: Some(image.to_owned()),
        args: Some(vec![
            "netexec".into(),
            format!("--http-port={HTTP_PORT}"),
            format!("--udp-port={UDP_PORT}"),
        ]),
        ports: Some(vec![port(HTTP_PORT, "TCP"), port(UDP_PORT, "UDP")]),
        // The server's readiness probe is the kubelet-probe check: the kubelet on the node
        // reaching its own pod.
        readiness_probe: (role == Role::Server).then(|| Probe {
            http_get: Some(HTTPGetAction {
                path: Some("/healthz".into()),
                port: IntOrString::Int(HTTP_PORT),
                ..Default::default()
            }),
            period_seconds: Some(2),
            timeout_seconds: Some(2),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The Service in front of the server: port 80 to netexec's 8080.
pub fn service(ns: &str, run: &Names) -> Service {
    Service {
        metadata: run_meta(ns, run, SERVICE_NAME, None),
        spec: Some(ServiceSpec {
            selector: labels(&[(ROLE_LABEL, Role::Server.pod_name()), (RUN_LABEL, &run.id)]),
            ports: Some(vec![ServicePort {
                port: SERVICE_PORT,
                target_port: Some(IntOrString::Int(HTTP_PORT)),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The policy that denies all ingress to the server: it selects the server and allows no
/// ingress (`policyTypes: [Ingress]` with no rules).
pub fn deny_server_ingress(ns: &str, run: &Names) -> NetworkPolicy {
    NetworkPolicy {
        metadata: run_meta(ns, run, POLICY_NAME, None),
        spec: Some(NetworkPolicySpec {
            pod_selector: Some(LabelSelector {
                match_labels: labels(&[
                    (ROLE_LABEL, Role::Server.pod_name()),
                    (RUN_LABEL, &run.id),
                ]),
                ..Default::default()
            }),
            policy_types: Some(vec!["Ingress".into()]),
            ingress: None,
            ..Default::default()
        }),
    }
}

/// The annotation a `--keep-on-failure` run writes on the namespace it keeps: no run's sweep
/// deletes it, whatever its lease or age; `kubectl delete namespace` does.
pub const KEPT: &str = "calicoctl-win.projectcalico.org/verify-kept";

/// Whether a run kept the namespace (`KEPT`).
pub fn kept(ns: &Namespace) -> bool {
    ns.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(KEPT))
}

/// The merge patch that marks a namespace kept (`KEPT`), saying why, and labels it `KEPT=true`,
/// which only kept namespaces carry: `kubectl delete namespace -l` on it spares the living runs'.
pub fn kept_mark(why: &str) -> serde_json::Value {
    serde_json::json!({"metadata": {"annotations": {KEPT: why}, "labels": {KEPT: "true"}}})
}

#[cfg(test)]
#[path = "objects_tests.rs"]
mod tests;
