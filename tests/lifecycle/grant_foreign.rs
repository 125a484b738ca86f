//! What is not ours of the renewal grant stays another's: a record that keeps uids and names
//! none of a part leaves that part to `uninstall --purge` (an older record keeps the label
//! rule); a RoleBinding of the grant's name that is not ours and binds anything else refuses
//! the install before any change, while one that binds what ours would is used, not taken.

#![cfg(unix)]

use crate::grant_journal::{GRANT, binding, role};
use crate::support::Node;
use crate::support::fake_api::{FakeApi, meta};
use crate::support::release::release_zip;
use serde_json::{Value, json};

const RECORD: &str = "calicowindows/calicoctl-win-install.json";

fn fresh(api: &FakeApi) -> (Node, String) {
    api.healthy_calico();
    let node = Node::new(api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    (node, zip.display().to_string())
}

/// An administrator's object of the grant's name and `kind`, without our label.
fn administrators(kind: &str, uid: &str) -> Value {
    let mut o = meta(
        "rbac.authorization.k8s.io/v1",
        kind,
        GRANT,
        Some("calico-system"),
    );
    o["metadata"]["uid"] = json!(uid);
    o
}

/// The Role an administrator made before the install, with the grant's rule, unlabelled.
fn administrators_role() -> Value {
    let mut r = administrators("Role", "uid-administrators-role");
    r["rules"] = json!([{"apiGroups": [""], "resources": ["serviceaccounts/token"],
        "resourceNames": ["calico-node"], "verbs": ["create"]}]);
    r
}

fn administrators_binding(subjects: Value) -> Value {
    let mut b = administrators("RoleBinding", "uid-administrators-binding");
    b["roleRef"] = json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GRANT});
    b["subjects"] = subjects;
    b
}

fn record(node: &Node) -> Value {
    serde_json::from_str(&fs_err::read_to_string(node.c_drive(RECORD)).unwrap()).unwrap()
}

/// Install over an administrator's Role (the grant's rule, not ours: used, its uid not
/// recorded); the administrator then gives it our label (copied from our RoleBinding).
fn installed_over_administrators_role(api: &FakeApi) -> (Node, Value) {
    let (node, zip) = fresh(api);
    api.put(&role(), administrators_role());
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let renewal = record(&node)["renewal"].clone();
    assert_eq!(renewal["uids_kept"], true, "{renewal}");
    assert!(renewal["uids"]["role"].is_null(), "{renewal}");
    let mut theirs = api.get(&role()).expect("role");
    theirs["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
    api.put(&role(), theirs.clone());
    (node, theirs)
}

/// A record that keeps uids and names none of the Role: a second install does not adopt the
/// administrator's Role, labelled as ours, and `uninstall --purge` leaves it, saying so with
/// the command that deletes it; our RoleBinding goes.
#[test]
fn purge_by_a_record_that_keeps_uids_leaves_a_labelled_role_it_names_no_uid_of() {
    let api = FakeApi::start();
    let (node, theirs) = installed_over_administrators_role(&api);
    let zip = node.dir.path().join("calico-windows-v3.30.2.zip");
    let zip = zip.display().to_string();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let renewal = record(&node)["renewal"].clone();
    assert!(renewal["uids"]["role"].is_null(), "adopted: {renewal}");
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        api.get(&role()),
        Some(theirs),
        "the administrator's Role was deleted: {stderr}"
    );
    assert!(api.get(&binding()).is_none(), "{stderr}");
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("names no uid of it"), "{doc}");
    assert!(
        warnings.contains(&format!("kubectl -n calico-system delete role {GRANT}")),
        "{doc}"
    );
}

/// A record of an older version (no `uids_kept`, no uids) keeps its rule: what carries our
/// label is taken for ours, the administrator's labelled copy too.
#[test]
fn purge_by_an_older_record_keeps_the_label_rule() {
    let api = FakeApi::start();
    let (node, _) = installed_over_administrators_role(&api);
    let path = node.c_drive(RECORD);
    let mut rec = record(&node);
    let renewal = rec["renewal"].as_object_mut().expect("renewal");
    renewal.remove("uids_kept");
    renewal.remove("uids");
    fs_err::write(&path, rec.to_string()).unwrap();
    let (code, _, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
}

/// An administrator's RoleBinding of the grant's name binding another subject: install is
/// refused before any change (its dry run too), saying what is there and how to look at it.
#[test]
fn a_foreign_rolebinding_binding_others_refuses_the_install_before_any_change() {
    let api = FakeApi::start();
    let (node, zip) = fresh(&api);
    let theirs = administrators_binding(json!([{"kind": "ServiceAccount",
        "name": "ci-runner", "namespace": "build"}]));
    api.put(&binding(), theirs.clone());
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, dry) = node.run(&[&args[..], &["--dry-run"]].concat());
    assert_ne!(code, 0, "{dry}");
    assert!(dry.contains("RoleBinding"), "{dry}");
    assert!(dry.contains("ServiceAccount build/ci-runner"), "{dry}");
    let writes_before = api.writes().len();
    let (code, _, stderr) = node.run(&args);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("is not calicoctl-win's"), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "kubectl -n calico-system get rolebinding {GRANT} -o yaml"
        )),
        "{stderr}"
    );
    assert_eq!(api.get(&binding()), Some(theirs), "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    let rbac_writes: Vec<_> = (api.writes().into_iter().skip(writes_before))
        .filter(|(_, p)| p.contains("rbac.authorization.k8s.io"))
        .collect();
    assert!(rbac_writes.is_empty(), "{rbac_writes:?}");
    assert!(!node.c_drive("calicowindows").exists(), "{stderr}");
}

/// One that binds exactly what ours would (the Role of that name to calico-node alone, the
/// subject's namespace left to the binding's) is used: the install goes on, records no uid
/// of it, and `uninstall --purge` leaves it.
#[test]
fn a_foreign_rolebinding_binding_what_ours_would_is_used_not_taken() {
    let api = FakeApi::start();
    let (node, zip) = fresh(&api);
    let theirs = administrators_binding(json!([{"kind": "ServiceAccount", "name": "calico-node"}]));
    api.put(&binding(), theirs.clone());
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let renewal = record(&node)["renewal"].clone();
    assert!(renewal["uids"]["binding"].is_null(), "{renewal}");
    assert!(renewal["uids"]["role"].is_string(), "{renewal}");
    let (code, _, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(api.get(&binding()), Some(theirs), "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
}

/// A RoleBinding carrying our label, found by a fresh install (which would adopt it by the
/// label), that binds calico-node and also every service account of calico-system: its
/// content is read as another's would be, and the install is refused before any change,
/// saying that others get the right.
#[test]
fn a_labelled_rolebinding_binding_others_too_refuses_the_install() {
    let api = FakeApi::start();
    let (node, zip) = fresh(&api);
    let mut theirs = administrators_binding(json!([
        {"kind": "ServiceAccount", "name": "calico-node", "namespace": "calico-system"},
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io",
            "name": "system:serviceaccounts:calico-system"}]));
    theirs["metadata"]["labels"] = json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
    api.put(&binding(), theirs.clone());
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, dry) = node.run(&[&args[..], &["--dry-run"]].concat());
    assert_ne!(code, 0, "{dry}");
    let (code, _, stderr) = node.run(&args);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("gives others"), "{stderr}");
    assert!(!stderr.contains("could not renew"), "{stderr}");
    assert_eq!(api.get(&binding()), Some(theirs), "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(!node.c_drive("calicowindows").exists(), "{stderr}");
}
