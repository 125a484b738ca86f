//! The node's renewal grant is journaled before install creates it: an install killed after
//! the grant and before its record leaves it to the next install, which undoes it when it
//! fails, or to uninstall, which undoes it with the rest of the interrupted run. A grant that
//! was there before the install is never deleted by its rollback.

#![cfg(unix)]

use crate::support::Node;
use crate::support::fake_api::{FakeApi, meta};
use crate::support::release::release_zip;

pub(super) const GRANT: &str = "calicoctl-win-token-renewal-win-1";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";
/// The plan's first write after the grant (its steps 1 to 3 protect directories): the run is
/// killed there, its record not written.
pub(super) const AFTER_GRANT: &str = "crash:~write C:\\CalicoWindows\\calico-node.exe";
/// A later step of the plan that fails: the run rolls back.
pub(super) const LATER_STEP_FAILS: &str = "fail:~write C:\\CalicoWindows\\calico-node.env";

pub(super) fn role() -> String {
    format!("{RBAC}/roles/{GRANT}")
}

pub(super) fn binding() -> String {
    format!("{RBAC}/rolebindings/{GRANT}")
}

/// A fresh node whose install was killed right after it made the grant.
pub(super) fn killed_after_grant(api: &FakeApi) -> (Node, String) {
    api.healthy_calico();
    let node = Node::new(api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _) = node.run_raw(&[&args[..], &["--sim-fault", AFTER_GRANT]].concat());
    assert_eq!(code, 86, "the install was not killed where the test meant");
    assert!(
        !node
            .c_drive("calicowindows/calicoctl-win-install.json")
            .exists()
    );
    (node, zip)
}

/// Install killed after the grant; install again, and that run fails at a later step: its
/// rollback deletes the grant the killed run made (it adopted it, but it is ours).
#[test]
fn a_rerun_that_fails_undoes_the_grant_a_killed_install_made() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(&[&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("continues it"), "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    // And a run that succeeds records it again, made anew.
    let (code, _, stderr) = node.run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
}

/// Install killed after the grant; uninstall undoes the interrupted run, the grant with it
/// (no `--purge` needed: the install never finished, so the grant was never installed).
#[test]
fn uninstall_undoes_the_grant_of_an_install_killed_after_it() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
}

/// A Role of the grant's name was there before (an administrator's, carrying our label as a
/// copy would, and the grant's rule): install makes only the RoleBinding. Killed after the grant, then uninstalled,
/// and after a failed install: the RoleBinding it made goes, the Role stays.
#[test]
fn a_grant_there_before_the_install_is_kept_by_its_undoing() {
    let api = FakeApi::start();
    let mut theirs = meta(
        "rbac.authorization.k8s.io/v1",
        "Role",
        GRANT,
        Some("calico-system"),
    );
    theirs["metadata"]["labels"] =
        serde_json::json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
    theirs["metadata"]["uid"] = serde_json::json!("uid-administrators");
    // The grant's rule: a Role with others would refuse the install.
    theirs["rules"] = serde_json::json!([{"apiGroups": [""],
        "resources": ["serviceaccounts/token"], "resourceNames": ["calico-node"],
        "verbs": ["create"]}]);
    api.put(&role(), theirs.clone());
    let (node, zip) = killed_after_grant(&api);
    assert!(api.get(&binding()).is_some());
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(api.get(&role()), Some(theirs.clone()), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");

    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(&[&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert_eq!(api.get(&role()), Some(theirs), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
}

/// An install that fails past the point of no return rolls nothing back and keeps its journal
/// for a rerun to finish: the grant the installed services renew their token with stays, and
/// the rerun finishes with it. (No install plan has an irreversible step today; the journal of
/// the killed run is marked as past one, as a step that cannot be undone would have left it.)
#[test]
fn an_install_failing_past_the_point_of_no_return_keeps_the_grant() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let mut journal: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).unwrap()).unwrap();
    journal["entries"][0]["irreversible"] = serde_json::json!(true);
    fs_err::write(&path, journal.to_string()).unwrap();
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(&[&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert!(path.exists(), "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
    assert!(api.get(&binding()).is_some(), "{stderr}");
    let (code, _, stderr) = node.run(&args);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// A rerun that fails while the API refuses to delete the grant: its rollback removes its
/// steps and the journal keeps the grant alone, so that uninstall then removes it.
#[test]
fn a_grant_the_rollback_cannot_delete_stays_in_the_journal() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    // The run's writes to the API: calico-node's token requested, then (its grant there
    // already) the rollback's first delete of the grant, which the server fails.
    api.fail_write_at(2);
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(&[&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert!(path.exists(), "{stderr}");
    assert!(stderr.contains("keeps it"), "{stderr}");
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// Uninstall that cannot delete the grant of an interrupted install fails, naming the
/// command that deletes it, and keeps the journal: uninstall again deletes it.
#[test]
fn uninstall_that_cannot_delete_the_grant_keeps_the_journal() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    api.lock().stalled = true;
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let (code, _, stderr) = node.run(&["uninstall"]);
    api.lock().stalled = false;
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("delete rolebinding,role"), "{stderr}");
    assert!(path.exists(), "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// The same with a kubeconfig that may not delete it (no admin's): a refusal no rerun
/// changes, so uninstall says what stays, with its command, and goes on.
#[test]
fn uninstall_whose_kubeconfig_may_not_delete_the_grant_says_so_and_goes_on() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    api.forbid("delete", "roles");
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("delete rolebinding,role"), "{stderr}");
    assert!(!path.exists(), "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
}

/// Install killed after the grant; a rerun for another node name makes another grant: the
/// killed run's grant is deleted before any change, not dropped with the journal when the
/// rerun succeeds.
#[test]
fn a_rerun_that_makes_another_grant_deletes_the_killed_runs_grant() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(
        &[
            &args[..],
            &["--set", "node.name=win-2", "--skip", "node-name"],
        ]
        .concat(),
    );
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
}

/// The grant's Role is created and the answer lost (kube-apiserver's 504 for a write that
/// committed after its deadline): the Role carries this run's nonce, so it is this install's,
/// and the install that then fails at a later step deletes it with the RoleBinding. A client
/// retrying the POST would get a 409 for its own Role and leave it for good.
#[test]
fn a_grant_whose_create_answer_was_lost_is_undone_by_the_failed_install() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // The run's writes: calico-node's token requested, then the Role created.
    api.timeout_write_at(2);
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (code, _, stderr) = node.run(&[&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat());
    assert_ne!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    let role_posts = (api.lock().requests.iter())
        .filter(|(m, p)| m == "POST" && p.ends_with("/roles"))
        .count();
    assert_eq!(role_posts, 1, "{stderr}");
    // The same lost answer in a run that succeeds: the Role is recorded as made.
    api.timeout_write_at(2);
    let (code, _, stderr) = node.run(&args);
    assert_eq!(code, 0, "{stderr}");
    let rec = node.c_drive("calicowindows/calicoctl-win-install.json");
    let rec: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(rec).unwrap()).unwrap();
    assert_eq!(
        rec["renewal"]["uids"]["role"],
        "uid-".to_owned() + GRANT,
        "{stderr}"
    );
}

/// A Role of the grant's name made by someone else between this run's look and its create
/// (409, without this run's nonce) is not this install's: its failed run leaves it.
#[test]
fn a_role_another_made_first_is_not_taken_for_ours() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // Their Role lands while this run's create of it waits: the create is answered 409.
    api.pause_write_at(2);
    let theirs = {
        let mut r = meta(
            "rbac.authorization.k8s.io/v1",
            "Role",
            GRANT,
            Some("calico-system"),
        );
        r["metadata"]["labels"] =
            serde_json::json!({"app.kubernetes.io/managed-by": "calicoctl-win"});
        r
    };
    let args = ["install", "--no-start", "--release-zip", &zip];
    let all = [&args[..], &["--sim-fault", LATER_STEP_FAILS]].concat();
    let run = std::thread::scope(|s| {
        let h = s.spawn(|| node.run(&all));
        // Bounded: a run that ends or stalls before its write is held fails here, by name.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        while !api.lock().held {
            assert!(
                !h.is_finished(),
                "the install ended before the Role's write was held"
            );
            if std::time::Instant::now() >= deadline {
                // Nothing is held yet; a write held later is let go, so the run can end.
                api.release_write();
                panic!("the install's Role write was never held");
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        api.put(&role(), theirs.clone());
        api.release_write();
        h.join().unwrap()
    });
    let (code, _, stderr) = run;
    assert_ne!(code, 0, "{stderr}");
    assert_eq!(api.get(&role()), Some(theirs), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
}

/// A fresh install whose RoleBinding cannot be made, after it made the Role, and whose
/// rollback may not delete that Role: the journal it began is kept, naming the Role, not
/// dropped with its beginning; uninstall (allowed again) then deletes it.
#[test]
fn a_grant_that_fails_and_cannot_be_undone_keeps_the_journal_the_run_began() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // The run's writes: calico-node's token requested, the Role, then the RoleBinding, which
    // the server refuses (403: nothing written, so nothing of it is waited for); deleting the
    // Role is refused too (the preflight's check of those rights skipped: it would refuse
    // the run before any change).
    api.forbid("create", "rolebindings");
    api.forbid("delete", "roles");
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let args = [
        "install",
        "--no-start",
        "--release-zip",
        &zip,
        "--skip",
        "rbac",
    ];
    let (code, _, stderr) = node.run(&args);
    assert_ne!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some(), "{stderr}");
    assert!(path.exists(), "{stderr}");
    assert!(stderr.contains("keeps it"), "{stderr}");
    api.lock().forbidden.clear();
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// A fresh install that fails at a later step is killed while its rollback deletes the grant
/// (the delete's answer never comes): the journal still names the grant, so uninstall then
/// deletes it. A rollback that dropped the journal first would leave it to nobody.
#[test]
fn a_rollback_killed_while_it_deletes_the_grant_leaves_it_journaled() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // The run's writes: calico-node's token requested, the Role and the RoleBinding made,
    // then the rollback's delete of the RoleBinding, held until the run is killed.
    api.hold_write_at(4);
    let mut child = node.spawn(
        &[
            "install",
            "--no-start",
            "--release-zip",
            &zip,
            "--sim-fault",
            LATER_STEP_FAILS,
        ],
        false,
    );
    while !api.lock().held {
        assert!(child.try_wait().expect("wait").is_none(), "it ended first");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    api.release_write();
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let journal: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("the journal stays")).unwrap();
    assert_eq!(journal["grant"]["name"], GRANT, "{journal}");
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(!path.exists(), "{stderr}");
}

/// Install killed after the grant; a rerun without the admin kubeconfig does not make that
/// grant and cannot remove it: refused, and its dry run is refused alike, before any change.
#[test]
fn a_rerun_that_cannot_remove_the_killed_runs_grant_is_refused_in_its_dry_run_too() {
    let api = FakeApi::start();
    let (node, zip) = killed_after_grant(&api);
    // calico-node's kubeconfig written first, as a node without the admin's installs.
    let (code, _, stderr) = node.run(&["fetch", "kubeconfig"]);
    assert_eq!(code, 0, "{stderr}");
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let journal = fs_err::read_to_string(&path).unwrap();
    let args = ["install", "--no-start", "--release-zip", &zip];
    let (dry_code, _, dry) = node.run_without_kubeconfig(&[&args[..], &["--dry-run"]].concat());
    let (code, _, stderr) = node.run_without_kubeconfig(&args);
    assert_ne!(code, 0, "{stderr}");
    let refusal = "which this run does not make, and it cannot be removed";
    assert!(stderr.contains(refusal), "{stderr}");
    assert_ne!(dry_code, 0, "{dry}");
    assert!(dry.contains(refusal), "{dry}");
    assert_eq!(fs_err::read_to_string(&path).unwrap(), journal);
    assert!(api.get(&role()).is_some());
}

/// Install killed after the grant, and the cluster gone for good (it never answers):
/// `uninstall --skip-cluster` does not contact it, undoes the node's part, and lists the
/// grant's objects it leaves, each with its kubectl delete, in text and in the document.
#[test]
fn uninstall_skipping_a_gone_cluster_lists_the_grant_it_leaves() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    api.lock().stalled = true;
    api.lock().connections = 0;
    let path = node.c_drive("calicowindows/calicoctl-win.journal.json");
    let (code, doc, stderr) = node.run(&["uninstall", "--skip-cluster"]);
    let asked = api.lock().stalled_held;
    api.lock().stalled = false;
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(asked, 0, "the cluster was contacted: {stderr}");
    assert_eq!(
        api.lock().connections,
        0,
        "the cluster was connected to: {stderr}"
    );
    assert!(!path.exists(), "{stderr}");
    assert!(!node.c_drive("calicowindows").exists(), "{stderr}");
    assert!(stderr.contains("delete rolebinding,role"), "{stderr}");
    let left = &doc["cluster_left"];
    let del = |kind: &str| format!("kubectl -n calico-system delete {kind} {GRANT}");
    assert_eq!(
        *left,
        serde_json::json!([
            {"kind": "RoleBinding", "namespace": "calico-system", "name": GRANT, "delete": del("rolebinding")},
            {"kind": "Role", "namespace": "calico-system", "name": GRANT, "delete": del("role")},
        ]),
        "{doc}"
    );
    assert!(api.get(&role()).is_some());
}

/// Without any admin kubeconfig, uninstall of an install killed after the grant goes on: the
/// document lists the grant's objects it leaves, for a script to keep.
#[test]
fn uninstall_without_a_kubeconfig_lists_the_grant_it_leaves() {
    let api = FakeApi::start();
    let (node, _zip) = killed_after_grant(&api);
    let (code, doc, stderr) = node.run_without_kubeconfig(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    let left = doc["cluster_left"].as_array().cloned().unwrap_or_default();
    let kinds: Vec<_> = left.iter().map(|l| l["kind"].clone()).collect();
    assert_eq!(kinds, ["RoleBinding", "Role"], "{doc}");
    assert!(left.iter().all(|l| l["name"] == GRANT), "{doc}");
    assert!(api.get(&role()).is_some());
}
