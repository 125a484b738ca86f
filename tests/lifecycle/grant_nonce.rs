//! What install and uninstall take for the renewal grant's own: a part flagged in the journal
//! without its uid only when it carries the run's nonce; a create whose answer was lost and
//! that commits later is read again until it can no longer commit, and undone; a create refused with 429 is sent again; a Role of the
//! grant's name that is another's and grants other rules refuses the install.

#![cfg(unix)]

use crate::grant_journal::{
    AFTER_GRANT, GRANT, LATER_STEP_FAILS, binding, killed_after_grant, role,
};
use crate::support::Node;
use crate::support::fake_api::{FakeApi, meta};

const JOURNAL: &str = "calicowindows/calicoctl-win.journal.json";

/// A labelled Role of the grant's name without any run's nonce (an administrator's copy).
fn administrators_role(rules: serde_json::Value) -> serde_json::Value {
    let mut r = meta(
        "rbac.authorization.k8s.io/v1",
        "Role",
        GRANT,
        Some("calico-system"),
    );
    r["metadata"]["labels"] = serde_json::json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
    r["metadata"]["uid"] = serde_json::json!("uid-administrators");
    r["rules"] = rules;
    r
}

fn grant_rules() -> serde_json::Value {
    serde_json::json!([{"apiGroups": [""], "resources": ["serviceaccounts/token"],
        "resourceNames": ["calico-node"], "verbs": ["create"]}])
}

/// The journal's grant: the Role flagged without its uid (`role: true`), with nonce `n1`.
fn flag_the_role(node: &Node) {
    let path = node.c_drive(JOURNAL);
    let mut journal: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    journal["grant"] = serde_json::json!({"namespace": "calico-system", "name": GRANT,
        "role": true, "nonce": "n1"});
    fs_err::write(&path, journal.to_string()).unwrap();
}

/// An install killed after it flagged the Role (`role: true`, nonce `n1`) and before its
/// create answered; the Role there is an administrator's, without that nonce.
fn flagged_but_not_made(api: &FakeApi) -> (Node, String, serde_json::Value) {
    let (node, zip) = killed_after_grant(api);
    flag_the_role(&node);
    let theirs = administrators_role(grant_rules());
    api.put(&role(), theirs.clone());
    (node, zip, theirs)
}

/// `args` (`ZIP` standing for the release zip) on a node `flagged_but_not_made`: its exit
/// code and stderr, once the administrator's Role is seen left as it was.
fn run_beside_theirs(args: &[&str]) -> (i32, String) {
    let api = FakeApi::start();
    let (node, zip, theirs) = flagged_but_not_made(&api);
    let args: Vec<&str> = args
        .iter()
        .map(|a| if *a == "ZIP" { zip.as_str() } else { a })
        .collect();
    let (code, _, stderr) = node.run(&args);
    assert_eq!(api.get(&role()), Some(theirs), "{stderr}");
    (code, stderr)
}

/// Uninstall does not take a Role flagged without its uid for ours when it lacks the nonce.
#[test]
fn uninstall_keeps_a_flagged_role_that_lacks_the_runs_nonce() {
    let (code, stderr) = run_beside_theirs(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
}

/// Nor does a rerun for another node name, which removes the earlier run's grant.
#[test]
fn a_rerun_for_another_node_keeps_a_flagged_role_that_lacks_the_runs_nonce() {
    let install = ["install", "--no-start", "--release-zip", "ZIP"];
    let other = ["--set", "node.name=win-2", "--skip", "node-name"];
    let (code, stderr) = run_beside_theirs(&[&install[..], &other[..]].concat());
    assert_eq!(code, 0, "{stderr}");
}

/// A rerun for the same node, which fails: its rollback keeps that Role too.
#[test]
fn a_failed_rerun_keeps_a_flagged_role_that_lacks_the_runs_nonce() {
    let install = ["install", "--no-start", "--release-zip", "ZIP"];
    let (code, stderr) =
        run_beside_theirs(&[&install[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
}

/// The Role's create is answered as lost and commits after the run read it back (not found):
/// the failed run reads it again until such a create can no longer commit, finds it, and
/// deletes it (its nonce says it is its own); nothing of the grant stays, nor the journal.
#[test]
fn a_create_that_commits_after_its_read_back_is_waited_for_and_undone() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // The run's writes: calico-node's token requested, then the Role created.
    api.late_write_at(2);
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        api.lock().late.is_none(),
        "the create did not commit late: {stderr}"
    );
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(!node.c_drive(JOURNAL).exists(), "{stderr}");
}

/// A killed install's journal names a Role flagged without its uid (its create's answer
/// never came) that is not there yet, and the create commits after uninstall's first reads:
/// uninstall does not drop the journal on the first "not found", it reads again, finds the
/// Role by the run's nonce and deletes it. (Were the journal dropped, the Role committing
/// after would be nobody's: the test commits a create still pending at the end.)
#[test]
fn uninstall_waits_out_a_journaled_create_that_may_still_commit() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    flag_the_role(&node);
    let path = node.c_drive(JOURNAL);
    let mut ours = api.get(&role()).expect("role");
    api.remove(&role());
    ours["metadata"]["annotations"] = serde_json::json!({"calicoctl-win/install-nonce": "n1"});
    ours["metadata"]["uid"] = serde_json::json!("uid-committed-late");
    let roles = role().rsplit_once('/').expect("path").0.to_owned();
    api.lock().late = Some((roles, ours.clone(), 0));
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    // What was still to commit commits now, after the run.
    let pending = api.lock().late.take();
    if let Some((_, object, _)) = pending {
        api.put(&role(), object);
    }
    let journaled = path.exists() && fs_err::read_to_string(&path).unwrap().contains(GRANT);
    assert!(
        api.get(&role()).is_none() || journaled,
        "the Role committed after uninstall dropped the journal naming it: {stderr}"
    );
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// The Role's create refused with 429 (API Priority and Fairness, nothing written) is sent
/// again, and the install goes on.
#[test]
fn a_create_refused_with_429_is_sent_again() {
    let (api, node, zip) = Node::on_calico_with_zip();
    api.throttle_write_at(2);
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let role_posts = (api.lock().requests.iter())
        .filter(|(m, p)| m == "POST" && p.ends_with("/roles"))
        .count();
    assert_eq!(role_posts, 2, "{stderr}");
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
}

/// The dry run of uninstall that will not reach the cluster lists what the real run leaves
/// of the interrupted install's grant, and contacts nobody.
#[test]
fn uninstall_dry_run_skipping_the_cluster_lists_the_grant_it_would_leave() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    api.lock().connections = 0;
    let (code, doc, stderr) = node.run(&["uninstall", "--skip-cluster", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        api.lock().connections,
        0,
        "the cluster was contacted: {stderr}"
    );
    let kinds: Vec<_> = (doc["cluster_left"].as_array().cloned().unwrap_or_default())
        .iter()
        .map(|l| l["kind"].clone())
        .collect();
    assert_eq!(kinds, ["RoleBinding", "Role"], "{doc}");
}

/// A Role of the grant's name that is not calicoctl-win's and grants other rules: install
/// refuses before any change, its dry run too, rather than bind calico-node to it.
#[test]
fn a_foreign_role_with_other_rules_refuses_the_install() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let mut theirs = administrators_role(serde_json::json!([{"apiGroups": [""],
        "resources": ["secrets"], "verbs": ["get", "list"]}]));
    theirs["metadata"]["labels"] = serde_json::json!({});
    api.put(&role(), theirs.clone());
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, dry) = node.run(&[&args[..], &["--dry-run"]].concat());
    assert_ne!(code, 0, "{dry}");
    assert!(dry.contains("is not calicoctl-win's"), "{dry}");
    let (code, _, stderr) = node.run(&args);
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("is not calicoctl-win's"), "{stderr}");
    assert!(stderr.contains("delete role"), "{stderr}");
    assert_eq!(api.get(&role()), Some(theirs), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(!node.c_drive("calicowindows").exists(), "{stderr}");
}

/// A rerun that adopts the Role a killed run made (flagged, its uid not journaled) saves the
/// uid it found in the journal before going on, so that a rollback or uninstall after it
/// knows the Role by its uid and never waits for it as a create that may still commit.
#[test]
fn a_rerun_saves_the_uid_of_a_part_it_adopts_in_the_journal() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    let path = node.c_drive(JOURNAL);
    let mut journal: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    journal["grant"]["uids"] = serde_json::json!({});
    fs_err::write(&path, journal.to_string()).unwrap();
    let uid = api.get(&role()).expect("role")["metadata"]["uid"].clone();
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _) = node.run_raw(&[&args[..], &["--sim-fault", AFTER_GRANT]].concat());
    assert_eq!(code, 86, "the install was not killed where the test meant");
    let journal: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(journal["grant"]["uids"]["role"], uid, "{journal}");
}

/// Each create of the grant asks kube-apiserver for the client's own deadline (`timeout`
/// query parameter), so that one whose answer was lost stops committing within the window
/// it is read again for, whatever the server's `--request-timeout`.
#[test]
fn the_grants_creates_ask_the_server_for_the_clients_deadline() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let creates: Vec<_> = (api.lock().post_queries.iter())
        .filter(|(p, _)| p.ends_with("/roles") || p.ends_with("/rolebindings"))
        .map(|(_, q)| q.clone())
        .collect();
    assert_eq!(creates, ["timeout=15s", "timeout=15s"], "{stderr}");
}
