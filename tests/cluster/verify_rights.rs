//! `verify`'s role (`fleet rbac --identity verify`, from `cluster::verify_rights`) is enough and
//! minimal: on the fake API server, which enforces RBAC as kube-apiserver does, `verify
//! --namespace calicoctl-win-verify` runs under a service account bound to exactly those roles
//! (a killed run's objects removed, a healthy run, a failing one whose pod's event is read,
//! everything it made deleted and the namespace kept), and without any one rule some part of
//! that fails, the API server's 403 named.

use crate::support::fake_api::{FakeApi, meta};
use crate::support::{Node, on_node};
use serde_json::{Value, json};

const NS: &str = "calicoctl-win-verify";

/// The kinds an identity's rights come in, in the order `fleet rbac` and `fleet plan` write them.
pub(crate) const ACCOUNT_KINDS: [&str; 9] = [
    "ServiceAccount",
    "ClusterRole",
    "ClusterRoleBinding",
    "Role",
    "RoleBinding",
    "Role",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// Verify's admission policy matches `account`'s requests in verify's namespace and admits
/// the default agnhost image.
pub(crate) fn verify_policy_admits(policy: &Value, account: &str) {
    assert_eq!(
        policy["spec"]["matchConditions"][0]["expression"],
        format!(
            "request.namespace == 'calicoctl-win-verify' && request.userInfo.username == 'system:serviceaccount:{account}'"
        )
    );
    let images = policy["spec"]["validations"][0]["expression"].to_string();
    assert!(
        images.contains("['registry.k8s.io/e2e-test-images/agnhost:2.62']"),
        "{images}"
    );
}

fn manifests() -> Vec<Value> {
    let doc = crate::support::json_of(on_node().args([
        "fleet",
        "rbac",
        "--identity",
        "verify",
        "-o",
        "json",
    ]));
    doc["manifests"].as_array().expect("manifests").clone()
}

/// The manifests applied as `kubectl apply` would (the namespace, then the RBAC objects and
/// the admission policy, which the fake stores and does not evaluate for pods).
fn apply(api: &FakeApi, all: &[Value]) {
    for m in all {
        if m["kind"] == "Namespace" {
            api.put(&format!("/api/v1/namespaces/{NS}"), m.clone());
        } else {
            assert!(api.apply(m), "{m}");
        }
    }
}

/// What of a run is left in the namespace (its RBAC objects are not a run's).
fn left(api: &FakeApi) -> Vec<String> {
    let inside = format!("/api/v1/namespaces/{NS}/");
    let leases = format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/");
    let st = api.lock();
    st.objects
        .keys()
        .filter(|k| k.starts_with(&inside) || k.starts_with(&leases))
        .cloned()
        .collect()
}

/// Runs what `verify` does as `calicoctl-win-verify`: what went wrong first, if anything.
fn workload(api: &FakeApi, dir: &std::path::Path) -> Option<String> {
    let kubeconfig =
        crate::support::service_account_kubeconfig(api, dir, "kube-system", "calicoctl-win-verify");
    // A killed run's Lease (run out long ago) and its server pod.
    let labels = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify",
        "calicoctl-win.projectcalico.org/verify-run": "killed1"});
    let name = "calicoctl-win-verify-killed1";
    let mut lease = meta("coordination.k8s.io/v1", "Lease", name, Some(NS));
    lease["metadata"]["labels"] = labels.clone();
    lease["spec"] = json!({"holderIdentity": "killed1", "leaseDurationSeconds": 60,
        "renewTime": "2026-01-01T00:00:00.000000Z"});
    api.put(
        &format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/{name}"),
        lease,
    );
    let mut pod = meta("v1", "Pod", "server-killed1", Some(NS));
    pod["metadata"]["labels"] = labels;
    api.put(&format!("/api/v1/namespaces/{NS}/pods/server-killed1"), pod);
    // And an old pod of a run killed before it wrote its Lease (its Lease looked for by name).
    let mut pod = meta("v1", "Pod", "server-gone1", Some(NS));
    pod["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win-verify",
        "calicoctl-win.projectcalico.org/verify-run": "gone1"});
    api.put(&format!("/api/v1/namespaces/{NS}/pods/server-gone1"), pod);
    let node = Node::new(api);
    let args = [
        "verify",
        "--node",
        "win-a",
        "--namespace",
        NS,
        "--sim-pace",
        "10",
    ];
    let (code, all, err) = node.run_as(&kubeconfig, &args);
    // One report a node (`{passed, nodes}`).
    let doc = &all["nodes"][0];
    if code != 0 || doc["cleaned_up"] != true {
        return Some(format!("a healthy run: exit {code}, {err}, {doc}"));
    }
    if doc["leftovers_removed"] != json!([format!("{NS}/killed1"), format!("{NS}/gone1")]) {
        return Some(format!("the killed run's objects: {doc}"));
    }
    api.lock().dataplane.stuck_on.insert("linux-1".into());
    let (code, all, err) = node.run_as(&kubeconfig, &args);
    let doc = &all["nodes"][0];
    let message = doc["checks"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["check"] == "pod-address"))
        .and_then(|c| c["finding"]["message"].as_str())
        .unwrap_or_default();
    if code != 1 || !message.contains("FailedCreatePodSandBox") || doc["cleaned_up"] != true {
        return Some(format!("a run with a stuck pod: exit {code}, {err}, {doc}"));
    }
    let left = left(api);
    if !left.is_empty() {
        return Some(format!("left behind: {left:?}"));
    }
    None
}

#[test]
fn the_verify_role_is_enough_and_every_rule_is_needed() {
    let all = manifests();
    let kinds: Vec<&str> = all.iter().filter_map(|m| m["kind"].as_str()).collect();
    assert_eq!(kinds, [&["Namespace"][..], &ACCOUNT_KINDS].concat());
    // Pod Security restricted in the namespace (the probe pods meet it); no namespace right, nothing outside it but
    // listing nodes and reading the kubernetes Service.
    assert_eq!(
        all[0]["metadata"]["labels"]["pod-security.kubernetes.io/enforce"],
        "restricted"
    );
    assert_eq!(
        all[2]["rules"],
        json!([{"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}])
    );
    assert_eq!(all[4]["metadata"]["namespace"], NS);
    assert_eq!(
        all[6]["rules"],
        json!([{"apiGroups": [""], "resources": ["services"], "verbs": ["get"],
            "resourceNames": ["kubernetes"]}])
    );
    let roles: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, m)| m["kind"] == "ClusterRole" || m["kind"] == "Role")
        .map(|(i, _)| i)
        .collect();
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, _) = super::verify::cluster();
    apply(&api, &all);
    assert_eq!(workload(&api, dir.path()), None);
    let mut unused = Vec::new();
    let mut unclear = Vec::new();
    for &role in &roles {
        let rules = all[role]["rules"].as_array().expect("rules").len();
        for j in 0..rules {
            let (api, _) = super::verify::cluster();
            let mut objects = all.clone();
            let rule = objects[role]["rules"]
                .as_array_mut()
                .expect("rules")
                .remove(j);
            apply(&api, &objects);
            let dir = tempfile::tempdir().expect("tempdir");
            match workload(&api, dir.path()) {
                None => unused.push(rule.to_string()),
                // The failure names the API server's refusal.
                Some(why) if !(why.contains("403") && why.contains("forbidden")) => {
                    unclear.push(format!("{rule}: {why}"))
                }
                Some(_) => {}
            }
        }
    }
    assert!(unused.is_empty(), "rules verify does not need: {unused:#?}");
    assert!(
        unclear.is_empty(),
        "refused without saying so: {unclear:#?}"
    );
    // And without the roles the identity can do nothing.
    let (api, _) = super::verify::cluster();
    apply(&api, &all[..2]);
    assert!(workload(&api, dir.path()).is_some());
}

/// A manifest read into Kubernetes' types (k8s-openapi): a mistyped field fails the decode, an
/// unknown one is dropped by it and named.
fn typed_problems<T: serde::de::DeserializeOwned + serde::Serialize>(m: &Value) -> Vec<String> {
    let typed: T = match serde_json::from_value(m.clone()) {
        Ok(t) => t,
        Err(e) => return vec![e.to_string()],
    };
    let back = serde_json::to_value(&typed).expect("json");
    let mut out = Vec::new();
    super::fleet::dropped_fields(m, &back, "", &mut out);
    out
}

/// The admission policy and its binding decode strictly into Kubernetes' types; the policy
/// matches only the verify account's pods in its namespace and names the default image, or
/// the ones --verify-image gives; an image that would end the CEL string is refused.
#[test]
fn the_admission_policy_is_valid_and_names_the_account_and_the_image() {
    use k8s_openapi::api::admissionregistration::v1::{
        ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
    };
    let all = manifests();
    let policy = &all[8];
    assert_eq!(
        typed_problems::<ValidatingAdmissionPolicy>(policy),
        Vec::<String>::new()
    );
    assert_eq!(
        typed_problems::<ValidatingAdmissionPolicyBinding>(&all[9]),
        Vec::<String>::new()
    );
    let mut unknown = policy.clone();
    unknown["spec"]["validationz"] = json!([]);
    assert_eq!(
        typed_problems::<ValidatingAdmissionPolicy>(&unknown),
        vec![".spec.validationz".to_owned()]
    );
    verify_policy_admits(policy, "kube-system:calicoctl-win-verify");
    let doc = crate::support::json_of(
        on_node()
            .args(["fleet", "rbac", "--identity", "verify", "-o", "json"])
            .args(["--verify-image", "mirror.local/agnhost:2.52"])
            .args(["--verify-image", "mirror.local/agnhost@sha256:00ff"]),
    );
    let images = doc["manifests"][8]["spec"]["validations"][0]["expression"].to_string();
    assert!(
        images.contains("['mirror.local/agnhost:2.52', 'mirror.local/agnhost@sha256:00ff']"),
        "{images}"
    );
    for bad in [
        &["--identity", "verify", "--verify-image", "x' || true || '"][..],
        &[
            "--identity",
            "installer",
            "--verify-image",
            "mirror.local/agnhost:2.52",
        ][..],
    ] {
        let out = on_node()
            .args(["fleet", "rbac"])
            .args(bad)
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{bad:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("--verify-image"));
    }
}

/// An administrator's pod of a probe's role name (no verify label) under the verify role: the
/// run's pods are named for the run, so it passes beside it, and the pod is kept.
#[test]
fn an_administrators_pod_of_a_probes_name_is_left_alone() {
    let (api, dir) = super::verify::cluster();
    apply(&api, &manifests());
    let kubeconfig = crate::support::service_account_kubeconfig(
        &api,
        dir.path(),
        "kube-system",
        "calicoctl-win-verify",
    );
    let path = format!("/api/v1/namespaces/{NS}/pods/client-local");
    let mut theirs = meta("v1", "Pod", "client-local", Some(NS));
    theirs["metadata"]["uid"] = json!("uid-admins");
    api.put(&path, theirs);
    let node = Node::new(&api);
    let args = [
        "verify",
        "--node",
        "win-a",
        "--namespace",
        NS,
        "--timeout",
        "20s",
    ];
    let (code, doc, err) = node.run_as(&kubeconfig, &args);
    assert_eq!(code, 0, "{doc}\n{err}");
    let kept = api.get(&path).map(|p| p["metadata"]["uid"].clone());
    assert_eq!(kept, Some(json!("uid-admins")));
}
