//! A grant an install made under a name or namespace it no longer uses (the config changed:
//! the node's name; or the cluster moved Calico from kube-system to calico-system) is removed
//! after the install that replaced it is committed, and only while it is positively that
//! install's: its recorded uids, its owner annotation, deleted on the uid and resourceVersion
//! read. One made again, or taken by a new node of the old name, stays, said; a refused delete
//! leaves it in the record for the next run or `uninstall --purge`; a rollback keeps it;
//! uninstall without the cluster lists only what the record says is ours.

#![cfg(unix)]

use crate::grant_journal::{GRANT, LATER_STEP_FAILS, binding, role};
use crate::support::Node;
use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use serde_json::{Value, json};

const GRANT_2: &str = "calicoctl-win-token-renewal-win-2";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";
const RECORD: &str = "calicowindows/calicoctl-win-install.json";
const OWNER: &str = "calicoctl-win/grant-owner";
/// The config changed: the node is named win-2, so its grant is named after it.
const AS_WIN_2: [&str; 4] = ["--set", "node.name=win-2", "--skip", "node-name"];

fn role_2() -> String {
    format!("{RBAC}/roles/{GRANT_2}")
}

fn binding_2() -> String {
    format!("{RBAC}/rolebindings/{GRANT_2}")
}

fn record(node: &Node) -> Value {
    serde_json::from_str(&fs_err::read_to_string(node.c_drive(RECORD)).unwrap()).unwrap()
}

/// A node installed as win-1, its grant made and recorded; the install's arguments.
fn installed(api: &FakeApi) -> (Node, Vec<String>) {
    api.healthy_calico();
    let node = Node::new(api);
    let args = install_args(&node);
    let (code, _, stderr) = node.run(&strs(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    (node, args)
}

fn install_args(node: &Node) -> Vec<String> {
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    ["install", "--no-start", "--release-zip"]
        .into_iter()
        .map(str::to_owned)
        .chain([zip.display().to_string()])
        .collect()
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `args` as win-2.
fn as_win_2(args: &[String]) -> Vec<&str> {
    [&strs(args)[..], &AS_WIN_2[..]].concat()
}

fn win_2_granted(api: &FakeApi) -> bool {
    api.get(&role_2()).is_some() && api.get(&binding_2()).is_some()
}

/// The dry run shows the earlier grant's removal and changes nothing; the run makes win-2's
/// grant and then deletes win-1's on the uid and resourceVersion read, and its record names no
/// earlier grant left.
#[test]
fn a_reinstall_under_another_name_removes_the_earlier_grant_by_its_uids() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let uids = record(&node)["renewal"]["uids"].clone();
    let (code, doc, stderr) = node.run(&[&as_win_2(&args)[..], &["--dry-run"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let last = doc["actions"].as_array().and_then(|a| a.last()).cloned();
    let last = last.expect("a step");
    assert_eq!(last["action"], "remove-earlier-grant", "{doc}");
    assert_eq!(
        (&last["name"], &last["uids"]),
        (&json!(GRANT), &uids),
        "{doc}"
    );
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());

    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_none() && api.get(&binding()).is_none(),
        "{stderr}"
    );
    assert!(win_2_granted(&api), "{stderr}");
    let rec = record(&node);
    assert_eq!(rec["renewal"]["name"], GRANT_2, "{rec}");
    assert!(rec.get("renewal_earlier").is_none(), "{rec}");
    let deletes = api.lock().delete_options.clone();
    let of_role = deletes.iter().find(|(p, _)| *p == role()).expect("deleted");
    assert_eq!(
        of_role.1["preconditions"]["uid"], uids["role"],
        "{deletes:?}"
    );
    assert!(
        of_role.1["preconditions"]["resourceVersion"].is_string(),
        "{deletes:?}"
    );
}

/// win-1's Role was deleted and made again by an administrator (a new uid, our label and
/// owner annotation copied): it stays, said; win-1's RoleBinding goes.
#[test]
fn an_earlier_grant_made_again_by_someone_else_stays_and_is_said() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let mut theirs = api.get(&role()).expect("role");
    theirs["metadata"]["uid"] = json!("uid-made-again");
    api.put(&role(), theirs.clone());
    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(api.get(&role()), Some(theirs), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(stderr.contains(&format!("delete role {GRANT}")), "{stderr}");
    assert!(win_2_granted(&api));
    assert!(record(&node).get("renewal_earlier").is_none());
}

/// The node renamed win-2 may not delete in the namespace (403): the install succeeds and says
/// so with the command, its record keeps win-1's grant. A new node then installed as win-1
/// takes that grant by its label (its owner annotation rewritten): the renamed node's next
/// install leaves it, said, and drops it from its record.
#[test]
fn an_earlier_grant_a_new_node_of_its_name_adopted_is_not_deleted() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.forbid("delete", "rolebindings");
    api.forbid("delete", "roles");
    // Its check of the kubeconfig's rights would stop it first.
    let skip = ["--skip", "rbac"];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &skip[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains(&format!("delete rolebinding {GRANT}")),
        "{stderr}"
    );
    assert_eq!(record(&node)["renewal_earlier"][0]["name"], GRANT);
    api.lock().forbidden.clear();

    let ours = api.get(&role()).expect("role")["metadata"]["annotations"][OWNER].clone();
    assert!(ours.is_string(), "{ours}");
    let new_node = Node::new(&api);
    let (code, _, stderr) = new_node.run(&strs(&install_args(&new_node)));
    assert_eq!(code, 0, "{stderr}");
    let taken = api.get(&role()).expect("role");
    assert_ne!(taken["metadata"]["annotations"][OWNER], ours, "{taken}");

    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_some() && api.get(&binding()).is_some(),
        "{stderr}"
    );
    assert!(stderr.contains("no longer positively"), "{stderr}");
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
}

/// The install as win-2 fails at a later step and rolls back: win-1's grant, which the record
/// put back names, is still there; win-2's is undone.
#[test]
fn a_rollback_of_a_failed_reinstall_keeps_the_earlier_grant() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let fault = ["--sim-fault", LATER_STEP_FAILS];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &fault[..]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_some() && api.get(&binding()).is_some(),
        "{stderr}"
    );
    assert_eq!(record(&node)["renewal"]["name"], GRANT, "{stderr}");
    assert!(!win_2_granted(&api), "{stderr}");
}

/// The install as win-2 killed at each of its host steps in turn (the record's writes among
/// them): the grant its record names is there after the kill, and the rerun leaves win-2's
/// grant and nothing of win-1's.
#[test]
fn a_reinstall_killed_at_any_step_is_finished_by_the_rerun() {
    for n in 1.. {
        let api = FakeApi::start();
        let (node, args) = installed(&api);
        let fault = format!("crash:{n}");
        let (code, _) = node.run_raw(&[&as_win_2(&args)[..], &["--sim-fault", &fault]].concat());
        if code != 86 {
            assert_eq!(code, 0, "step {n}");
            assert!(n > 5, "the faults did not reach the run's steps");
            break;
        }
        let rec = record(&node);
        let at = format!("{RBAC}/roles/{}", rec["renewal"]["name"].as_str().unwrap());
        assert!(
            api.get(&at).is_some(),
            "step {n}: the node's grant is gone: {rec}"
        );
        let (code, _, stderr) = node.run(&as_win_2(&args));
        assert_eq!(code, 0, "step {n}: {stderr}");
        assert!(win_2_granted(&api), "step {n}: {stderr}");
        assert!(api.get(&role()).is_none(), "step {n}: {stderr}");
        assert!(api.get(&binding()).is_none(), "step {n}: {stderr}");
    }
}

/// The delete of win-1's RoleBinding commits but its answer is lost (504): the install is
/// committed all the same and its rerun finds it gone and drops it from the record.
#[test]
fn an_earlier_grant_whose_delete_answer_is_lost_is_finished_by_the_rerun() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let writes = api.writes().len();
    let (code, _, _) = node.run(&as_win_2(&args));
    assert_eq!(code, 0);
    // The same run again on a fresh cluster, its first delete answered 504.
    let deletes_from = api.writes()[writes..]
        .iter()
        .position(|(m, _)| m == "DELETE")
        .expect("a delete");
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.timeout_write_at(deletes_from + 1);
    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(win_2_granted(&api), "{stderr}");
    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_none() && api.get(&binding()).is_none(),
        "{stderr}"
    );
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
}

/// `uninstall --purge` without the cluster lists only the grant parts the record names a uid
/// of (the Role was an administrator's, there before the install), the earlier grant still to
/// remove among them.
#[test]
fn uninstall_without_the_cluster_lists_only_the_grant_parts_the_record_names() {
    let api = FakeApi::start();
    let (node, _theirs) = crate::grant_foreign::installed_over_administrators_role(&api);
    let (code, doc, stderr) = node.run(&["uninstall", "--purge", "--skip-cluster"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        doc["cluster_left"],
        json!([{"kind": "RoleBinding", "namespace": "calico-system", "name": GRANT,
            "delete": format!("kubectl -n calico-system delete rolebinding {GRANT}")}]),
        "{doc}"
    );
}

/// An earlier grant the record still names is listed by `uninstall --purge --skip-cluster`,
/// and removed by `uninstall --purge` with the cluster.
#[test]
fn uninstall_lists_and_removes_the_earlier_grant_still_to_remove() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.forbid("delete", "rolebindings");
    api.forbid("delete", "roles");
    let skip = ["--skip", "rbac"];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &skip[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    api.lock().forbidden.clear();
    let (code, doc, stderr) = node.run(&["uninstall", "--purge", "--skip-cluster", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    let names: Vec<&Value> = (doc["cluster_left"].as_array().into_iter().flatten())
        .map(|l| &l["name"])
        .collect();
    assert!(names.contains(&&json!(GRANT)), "{doc}");
    assert!(names.contains(&&json!(GRANT_2)), "{doc}");
    let (code, _, stderr) = node.run(&[&["uninstall", "--purge"][..], &AS_WIN_2[..2]].concat());
    assert_eq!(code, 0, "{stderr}");
    for gone in [role(), binding(), role_2(), binding_2()] {
        assert!(api.get(&gone).is_none(), "{gone}: {stderr}");
    }
}

/// The earlier grant whose delete was refused (403) is removed by the next command that finds
/// the install committed: here `repair`, which has nothing else to do.
#[test]
fn repair_finishes_the_removal_of_the_earlier_grant() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.forbid("delete", "rolebindings");
    api.forbid("delete", "roles");
    let skip = ["--skip", "rbac"];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &skip[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    api.lock().forbidden.clear();
    let (code, _, stderr) = node.run(&["repair"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_none() && api.get(&binding()).is_none(),
        "{stderr}"
    );
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
    assert!(win_2_granted(&api), "{stderr}");
}

const RBAC_KUBE_SYSTEM: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system";

/// A node installed while Calico ran in kube-system (no calico-system namespace: a manifest
/// install), its grant made there; the cluster then moved to the operator's calico-system.
/// The install's arguments and its grant's uids.
fn installed_in_kube_system(api: &FakeApi) -> (Node, Vec<String>, Value) {
    api.healthy_calico();
    api.remove("/api/v1/namespaces/calico-system");
    api.put(
        "/api/v1/namespaces/kube-system/serviceaccounts/calico-node",
        crate::support::fake_api::meta("v1", "ServiceAccount", "calico-node", Some("kube-system")),
    );
    let node = Node::new(api);
    let args = install_args(&node);
    let (code, _, stderr) = node.run(&strs(&args));
    assert_eq!(code, 0, "{stderr}");
    let rec = record(&node);
    assert_eq!(rec["renewal"]["namespace"], "kube-system", "{rec}");
    assert!(api.get(&kube_system("roles")).is_some(), "{stderr}");
    api.healthy_calico();
    (node, args, rec["renewal"]["uids"].clone())
}

/// `args` with a new token asked for (the kept one is kube-system's calico-node's, whose
/// namespace the grant follows: `install::prepare`).
fn anew(args: &[String]) -> Vec<&str> {
    [&strs(args)[..], &["--token-keep-if-valid-for", "100y"][..]].concat()
}

fn kube_system(kind: &str) -> String {
    format!("{RBAC_KUBE_SYSTEM}/{kind}/{GRANT}")
}

/// The reinstall after the move makes the grant in calico-system and deletes the one in
/// kube-system on the uids recorded of it.
#[test]
fn a_reinstall_in_another_namespace_removes_the_earlier_grant_by_its_uids() {
    let api = FakeApi::start();
    let (node, args, uids) = installed_in_kube_system(&api);
    let (code, _, stderr) = node.run(&anew(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    for kind in ["roles", "rolebindings"] {
        assert!(api.get(&kube_system(kind)).is_none(), "{kind}: {stderr}");
    }
    let rec = record(&node);
    assert_eq!(rec["renewal"]["namespace"], "calico-system", "{rec}");
    assert!(rec.get("renewal_earlier").is_none(), "{rec}");
    let deletes = api.lock().delete_options.clone();
    for (kind, part) in [("roles", "role"), ("rolebindings", "binding")] {
        let of = deletes.iter().find(|(p, _)| *p == kube_system(kind));
        let of = of.expect("deleted");
        assert_eq!(of.1["preconditions"]["uid"], uids[part], "{deletes:?}");
    }
}

/// RBAC refuses the delete in kube-system only: the install succeeds, says what of the grant
/// stays there with the command that removes it, and its record keeps that grant to remove.
#[test]
fn an_earlier_grant_in_a_namespace_refusing_its_delete_is_left_and_said() {
    let api = FakeApi::start();
    let (node, args, _) = installed_in_kube_system(&api);
    api.forbid_in("delete", "rolebindings", "kube-system");
    api.forbid_in("delete", "roles", "kube-system");
    let (code, _, stderr) = node.run(&anew(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    for kind in ["roles", "rolebindings"] {
        assert!(api.get(&kube_system(kind)).is_some(), "{kind}: {stderr}");
    }
    for kind in ["role", "rolebinding"] {
        let command = format!("kubectl -n kube-system delete {kind} {GRANT}");
        assert!(stderr.contains(&command), "{stderr}");
    }
    let rec = record(&node);
    assert_eq!(rec["renewal"]["namespace"], "calico-system", "{rec}");
    let earlier = &rec["renewal_earlier"][0];
    assert_eq!(
        (&earlier["namespace"], &earlier["name"]),
        (&json!("kube-system"), &json!(GRANT)),
        "{rec}"
    );
}

/// Another client writes win-1's Role (its content the same, its resourceVersion moved) just
/// before its delete arrives: the delete on the resourceVersion read is refused (409); the
/// Role, read again, is still positively the install's and is deleted on its new one.
#[test]
fn an_earlier_grant_changed_while_it_is_deleted_is_read_again_and_deleted() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.lock().touched_before_delete.insert(role(), 1);
    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_none() && api.get(&binding()).is_none(),
        "{stderr}"
    );
    let deletes = api.lock().delete_options.clone();
    assert_eq!(
        deletes.iter().filter(|(p, _)| *p == role()).count(),
        2,
        "{deletes:?}"
    );
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
}

/// A reinstall after an uninstall (which keeps the grant) takes it by its label and writes its
/// owner annotation on the resourceVersion read; another client writes the Role just before
/// (its resourceVersion moved): the patch is refused (409), the Role read again, still the
/// same, and patched on its new resourceVersion.
#[test]
fn a_grant_written_while_it_is_taken_is_read_again_and_taken() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    api.lock().status_written_before_patch.insert(role());
    let (code, _, stderr) = node.run(&strs(&args));
    assert_eq!(code, 0, "{stderr}");
    let patches = api.writes();
    let patches = patches.iter().filter(|(m, p)| m == "PATCH" && *p == role());
    assert_eq!(patches.count(), 2, "{stderr}");
    let owner = record(&node)["renewal"]["owner"].clone();
    assert!(owner.is_string(), "{owner}");
    let taken = api.get(&role()).expect("role");
    assert_eq!(taken["metadata"]["annotations"][OWNER], owner, "{taken}");
}

/// `uninstall --purge` while RBAC still refuses the delete in kube-system, where the earlier
/// grant stays: its check of the kubeconfig's rights covers that namespace too, so the grant
/// is not left in a warning alone with the record that named it deleted: it is in
/// `cluster_left`, with its command.
#[test]
fn uninstall_refused_in_the_earlier_grants_namespace_lists_it_as_left() {
    let api = FakeApi::start();
    let (node, args, _) = installed_in_kube_system(&api);
    api.forbid_in("delete", "rolebindings", "kube-system");
    api.forbid_in("delete", "roles", "kube-system");
    let (code, _, stderr) = node.run(&anew(&args));
    assert_eq!(code, 0, "{stderr}");
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    for kind in ["roles", "rolebindings"] {
        assert!(api.get(&kube_system(kind)).is_some(), "{kind}: {stderr}");
    }
    let left = doc["cluster_left"].as_array().cloned().unwrap_or_default();
    for kind in ["role", "rolebinding"] {
        let command = json!(format!("kubectl -n kube-system delete {kind} {GRANT}"));
        assert!(left.iter().any(|l| l["delete"] == command), "{doc}");
    }
}

/// The node renamed win-2 may not delete win-1's grant at first (403), so its record keeps it.
/// A new node then installed as win-1 by a version that takes the grant by its label without
/// writing its owner annotation (the Role and RoleBinding unchanged) annotates Node win-1 with
/// its config hash: the renamed node's next install sees another install's config on win-1 and
/// leaves the grant, said, and drops it from its record.
#[test]
fn an_earlier_grant_whose_node_another_install_runs_as_is_not_deleted() {
    const HASH: &str = "calicoctl-win/config-hash";
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.forbid("delete", "rolebindings");
    api.forbid("delete", "roles");
    let skip = ["--skip", "rbac"];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &skip[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(record(&node)["renewal_earlier"][0]["name"], GRANT);
    api.lock().forbidden.clear();

    let mut win_1 = api.get("/api/v1/nodes/win-1").expect("node");
    let hash = &mut win_1["metadata"]["annotations"][HASH];
    assert!(hash.is_string(), "{win_1}");
    *hash = json!("sha256:another-install");
    api.put("/api/v1/nodes/win-1", win_1);

    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&role()).is_some() && api.get(&binding()).is_some(),
        "{stderr}"
    );
    assert!(stderr.contains("another install's config"), "{stderr}");
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
}
