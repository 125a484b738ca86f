//! Pod Security admission, as kube-apiserver runs it on a pod's create: the namespace's
//! `pod-security.kubernetes.io/enforce` level (and `enforce-version`) held against the pod
//! (kubernetes `staging/src/k8s.io/pod-security-admission/admission/admission.go`,
//! `EvaluatePod`: a 403 Forbidden, `pods "NAME" is forbidden: violates PodSecurity
//! "LEVEL:VERSION": REASON (DETAIL), ...`, each check's reason and detail joined by
//! `policy.AggregateCheckResults`). Modelled: the `restricted` checks a probe pod could fail
//! (`policy/check_runAsNonRoot.go`, `check_allowPrivilegeEscalation.go`,
//! `check_capabilities_restricted.go`, `check_seccompProfile_restricted.go`), with their
//! exemption of a pod whose `spec.os.name` is windows from version 1.25
//! (`allowPrivilegeEscalation_1_25`, `capabilitiesRestricted_1_25`,
//! `seccompProfileRestrictedV1Dot25`), and `baseline`'s host namespaces and privileged
//! containers (`check_hostNamespaces.go`, `check_privileged.go`).

use serde_json::Value;
use std::collections::BTreeMap;

/// The refusal's message, when the namespace's level refuses the pod.
pub fn refuse(objects: &BTreeMap<String, Value>, ns: &str, pod: &Value) -> Option<String> {
    let labels = &objects.get(&format!("/api/v1/namespaces/{ns}"))?["metadata"]["labels"];
    let level = labels["pod-security.kubernetes.io/enforce"].as_str()?;
    let version = labels["pod-security.kubernetes.io/enforce-version"]
        .as_str()
        .unwrap_or("latest");
    // "v1.24": before 1.25 a Windows pod is held to Linux's controls too.
    let minor = version
        .strip_prefix("v1.")
        .and_then(|m| m.parse::<u32>().ok())
        .unwrap_or(u32::MAX);
    let spec = &pod["spec"];
    let windows = spec["os"]["name"] == "windows" && minor >= 25;
    let containers: Vec<&Value> = spec["containers"].as_array()?.iter().collect();
    let sc = |c: &Value, k: &str| c["securityContext"][k].clone();
    let mut out = Vec::new();
    if ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .any(|k| spec[*k] == true)
    {
        out.push("host namespaces (hostNetwork=true)".to_owned());
    }
    let bad = |f: &dyn Fn(&Value) -> bool| -> Vec<String> {
        containers
            .iter()
            .filter(|c| f(c))
            .map(|c| format!("\"{}\"", c["name"].as_str().unwrap_or_default()))
            .collect()
    };
    let privileged = bad(&|c| sc(c, "privileged") == true);
    if !privileged.is_empty() {
        out.push(format!(
            "privileged (container {} must not set securityContext.privileged=true)",
            privileged.join(", ")
        ));
    }
    if level == "restricted" {
        let pod_non_root = spec["securityContext"]["runAsNonRoot"] == true;
        let root = bad(&|c| !pod_non_root && sc(c, "runAsNonRoot") != true);
        if !root.is_empty() {
            out.push(format!("runAsNonRoot != true (pod or container {} must set securityContext.runAsNonRoot=true)", root.join(", ")));
        }
        if !windows {
            let escalate = bad(&|c| sc(c, "allowPrivilegeEscalation") != false);
            if !escalate.is_empty() {
                out.push(format!("allowPrivilegeEscalation != false (container {} must set securityContext.allowPrivilegeEscalation=false)", escalate.join(", ")));
            }
            let caps = bad(&|c| {
                !sc(c, "capabilities")["drop"]
                    .as_array()
                    .is_some_and(|d| d.iter().any(|x| x == "ALL"))
            });
            if !caps.is_empty() {
                out.push(format!("unrestricted capabilities (container {} must set securityContext.capabilities.drop=[\"ALL\"])", caps.join(", ")));
            }
            let profile =
                |v: &Value| matches!(v["type"].as_str(), Some("RuntimeDefault" | "Localhost"));
            let pod_seccomp = profile(&spec["securityContext"]["seccompProfile"]);
            if !bad(&|c| !pod_seccomp && !profile(&sc(c, "seccompProfile"))).is_empty() {
                out.push("seccompProfile (pod or containers must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")".to_owned());
            }
        }
    }
    (!out.is_empty()).then(|| {
        format!(
            "pods \"{}\" is forbidden: violates PodSecurity \"{level}:{version}\": {}",
            pod["metadata"]["name"].as_str().unwrap_or_default(),
            out.join(", ")
        )
    })
}
