//! The fake API server's RBAC for one namespace object: kube-apiserver judges
//! `DELETE /api/v1/namespaces/NAME` in the namespace NAME (its request info names NAME as the
//! request's namespace), so a RoleBinding in NAME may grant it and one elsewhere does not.

use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::ClusterError;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use serde_json::json;

const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1";

/// A RoleBinding in `ns` of the ClusterRole `namespace-deleter` to kube-system/deleter.
fn bind_in(api: &FakeApi, ns: &str) {
    let mut b = meta(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        "deleter",
        Some(ns),
    );
    b["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
        "name": "namespace-deleter"});
    b["subjects"] =
        json!([{"kind": "ServiceAccount", "name": "deleter", "namespace": "kube-system"}]);
    api.put(&format!("{RBAC}/namespaces/{ns}/rolebindings/deleter"), b);
}

/// The namespaces `names` and the service account `kube-system/deleter`.
fn namespaces_and_deleter(api: &FakeApi, names: &[&str]) {
    for ns in names {
        api.put(
            &format!("/api/v1/namespaces/{ns}"),
            meta("v1", "Namespace", ns, None),
        );
    }
    api.put(
        "/api/v1/namespaces/kube-system/serviceaccounts/deleter",
        meta("v1", "ServiceAccount", "deleter", Some("kube-system")),
    );
}

#[test]
fn a_rolebinding_in_a_namespace_grants_deleting_that_namespace_alone() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    namespaces_and_deleter(&api, &["kube-system", "target", "elsewhere"]);
    let mut role = meta(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "namespace-deleter",
        None,
    );
    role["rules"] = json!([{"apiGroups": [""], "resources": ["namespaces"], "verbs": ["delete"]}]);
    api.put(&format!("{RBAC}/clusterroles/namespace-deleter"), role);
    let kubeconfig =
        crate::support::service_account_kubeconfig(&api, dir.path(), "kube-system", "deleter");
    let c = crate::support::connect(&kubeconfig);
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let delete = |name: &str| {
        c.call(
            "delete",
            "namespaces",
            namespaces.delete(name, &Default::default()),
        )
    };

    // Bound in another namespace: refused, judged in the namespace deleted.
    bind_in(&api, "elsewhere");
    let err = delete("target").expect_err("a binding elsewhere grants nothing here");
    let ClusterError::Api { code, message, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, 403, "{err}");
    assert!(
        message.ends_with(
            "cannot delete resource \"namespaces\" in API group \"\" in the namespace \"target\""
        ),
        "{err}"
    );
    assert!(api.get("/api/v1/namespaces/target").is_some());

    // Bound in the namespace itself: allowed.
    bind_in(&api, "target");
    delete("target").expect("a RoleBinding in target grants deleting target");
}

/// `status` and `finalize` after a namespace's name are that Namespace's subresources, as
/// kube-apiserver's request info reads them (`namespaceSubresources`), judged in that
/// namespace: not a resource named `status` in it.
#[test]
fn a_namespaces_status_and_finalize_are_its_subresources() {
    let api = FakeApi::start();
    namespaces_and_deleter(&api, &["kube-system", "target"]);
    api.put("/api/v1/nodes/win-1", meta("v1", "Node", "win-1", None));
    let token = api.pod_token("kube-system", "deleter", "win-1");
    for sub in ["status", "finalize"] {
        let (code, body) = api.get_as(&token, &format!("/api/v1/namespaces/target/{sub}"));
        assert_eq!(code, 403, "{body}");
        let said = format!(
            "cannot get resource \"namespaces/{sub}\" in API group \"\" in the namespace \"target\""
        );
        assert!(
            body["message"]
                .as_str()
                .unwrap_or_default()
                .ends_with(&said),
            "{body}"
        );
    }
    let mut role = meta(
        "rbac.authorization.k8s.io/v1",
        "ClusterRole",
        "namespace-deleter",
        None,
    );
    role["rules"] =
        json!([{"apiGroups": [""], "resources": ["namespaces/status"], "verbs": ["get"]}]);
    api.put(&format!("{RBAC}/clusterroles/namespace-deleter"), role);
    bind_in(&api, "target");
    let (code, body) = api.get_as(&token, "/api/v1/namespaces/target/status");
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["metadata"]["name"], "target", "{body}");
}
