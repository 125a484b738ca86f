//! `verify`'s sweep of the namespaces killed runs left, refused (403): a missing right (RBAC,
//! kube-apiserver's `forbiddenMessage`) is named as the right the sweep needs, verb, resource
//! and scope; an admission webhook's denial (its `ToStatusErr`) is named as the webhook's, not
//! read as a missing right.

use super::verify::{cluster, ours};
use crate::support::Node;
use crate::support::fake_api::FakeApi;
use serde_json::Value;

const KILLED: &str = "calicoctl-win-verify-killed";

/// A killed run's namespace, two hours old, without a Lease.
fn killed_run(api: &FakeApi) {
    ours(
        api,
        KILLED,
        jiff::Timestamp::now().as_second() - 7200,
        false,
    );
}

/// `verify` on win-a: its exit code, its error document and stderr.
fn refused_run(api: &FakeApi) -> (i32, Value, String) {
    let (code, doc, err) = Node::new(api).run(&["verify", "--node", "win-a"]);
    (code, doc["error"].clone(), err)
}

/// The sweep may not delete namespaces: the hint names that right (verb, resource, its scope)
/// as the sweep's, and what grants it; the killed run's namespace is left as it was.
#[test]
fn a_sweep_refused_by_rbac_names_the_right_it_lacks() {
    let (api, _dir) = cluster();
    killed_run(&api);
    api.forbid("delete", "namespaces");
    let (code, error, err) = refused_run(&api);
    assert_eq!(code, 1, "{error}\n{err}");
    let hint = error["hint"].as_str().unwrap_or_default();
    // kube-apiserver judges the delete of one namespace in that namespace.
    assert!(
        hint.contains(&format!(
            "may not delete namespaces {KILLED} (the namespace itself: a ClusterRoleBinding or a RoleBinding in {KILLED} grants it)"
        )),
        "{error}"
    );
    assert!(hint.contains("killed runs"), "{error}");
    assert!(
        hint.contains(&format!(
            "run: kubectl auth can-i delete namespaces/{KILLED} -n {KILLED} --as "
        )),
        "{error}"
    );
    assert!(!hint.contains("webhook"), "{error}");
    let left = api.get(&format!("/api/v1/namespaces/{KILLED}"));
    assert!(left.is_some_and(|n| n["metadata"]["deletionTimestamp"].is_null()));
    // Nor may it list them: that right named, at its scope.
    api.lock().forbidden = vec![("list".into(), "namespaces".into())];
    let (code, error, err) = refused_run(&api);
    assert_eq!(code, 1, "{error}\n{err}");
    let hint = error["hint"].as_str().unwrap_or_default();
    assert!(
        hint.contains("may not list namespaces at the cluster scope"),
        "{error}"
    );
}

/// An admission webhook denies the sweep's delete: the hint names the webhook and what it
/// said, and does not send the administrator to grant a right the identity has.
#[test]
fn a_sweep_denied_by_an_admission_webhook_is_the_webhooks_not_a_missing_right() {
    let (api, _dir) = cluster();
    killed_run(&api);
    api.deny_by_webhook(
        "delete",
        "namespaces",
        "protect.namespaces.example.com",
        "namespaces labelled app.kubernetes.io/managed-by may not be deleted",
    );
    let (code, error, err) = refused_run(&api);
    assert_eq!(code, 1, "{error}\n{err}");
    let hint = error["hint"].as_str().unwrap_or_default();
    assert!(
        hint.contains("admission webhook \"protect.namespaces.example.com\""),
        "{error}"
    );
    assert!(hint.contains("may not be deleted"), "{error}");
    assert!(!hint.contains("grant"), "{error}");
    assert!(!hint.contains("can-i"), "{error}");
    let left = api.get(&format!("/api/v1/namespaces/{KILLED}"));
    assert!(left.is_some_and(|n| n["metadata"]["deletionTimestamp"].is_null()));
}
