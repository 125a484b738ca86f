//! A grant an earlier install made under another name (the config changed since: here the
//! node's name) is removed by the install that replaces it, after the new grant is made, by
//! the uids the earlier record names: what is not ours of it stays, said; a run cut off before
//! the removal, or whose delete is refused, leaves it named in the install record, for the next
//! install or `uninstall --purge` to finish. And uninstall without the cluster lists only what
//! the record says is ours of a grant.

#![cfg(unix)]

use crate::grant_journal::{GRANT, binding, role};
use crate::support::Node;
use crate::support::fake_api::FakeApi;
use crate::support::release::release_zip;
use serde_json::{Value, json};

const GRANT_2: &str = "calicoctl-win-token-renewal-win-2";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";
const RECORD: &str = "calicowindows/calicoctl-win-install.json";
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
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let args: Vec<String> = ["install", "--no-start", "--release-zip"]
        .into_iter()
        .map(str::to_owned)
        .chain([zip.display().to_string()])
        .collect();
    let (code, _, stderr) = node.run(&strs(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    (node, args)
}

fn strs(args: &[String]) -> Vec<&str> {
    args.iter().map(String::as_str).collect()
}

/// `args` as win-2.
fn as_win_2(args: &[String]) -> Vec<&str> {
    [&strs(args)[..], &AS_WIN_2[..]].concat()
}

/// The install as win-2: its dry run shows the earlier grant's removal and changes nothing;
/// the run makes win-2's grant and removes win-1's, each object on its recorded uid; an
/// install after it finds nothing left of win-1's and drops it from the record.
#[test]
fn a_reinstall_under_another_name_removes_the_earlier_grant_by_its_uids() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    let uids = record(&node)["renewal"]["uids"].clone();
    let (code, doc, stderr) = node.run(&[&as_win_2(&args)[..], &["--dry-run"]].concat());
    assert_eq!(code, 0, "{stderr}");
    let actions = doc["actions"].as_array().expect("actions");
    let last = actions.last().expect("a step");
    for key in ["action", "namespace", "name", "uids"] {
        let want = json!({"action": "remove-earlier-grant", "namespace": "calico-system",
            "name": GRANT, "uids": uids});
        assert_eq!(last[key], want[key], "{doc}");
    }
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());

    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(api.get(&role_2()).is_some() && api.get(&binding_2()).is_some());
    let rec = record(&node);
    assert_eq!(rec["renewal"]["name"], GRANT_2, "{rec}");
    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(record(&node).get("renewal_earlier").is_none(), "{stderr}");
    assert!(api.get(&role_2()).is_some() && api.get(&binding_2()).is_some());
}

/// win-1's Role was made again since by someone else under its name (another uid, our label
/// copied): the install as win-2 leaves it, saying so, and removes win-1's RoleBinding.
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
    assert!(stderr.contains("made again since"), "{stderr}");
    assert!(stderr.contains(&format!("delete role {GRANT}")), "{stderr}");
    assert!(api.get(&role_2()).is_some() && api.get(&binding_2()).is_some());
}

/// The install as win-2 is killed while it deletes win-1's RoleBinding, its last step (the
/// delete's answer never comes): its record names win-2's grant and win-1's still to remove,
/// and the rerun removes win-1's.
#[test]
fn an_install_killed_before_it_removes_the_earlier_grant_leaves_it_to_the_rerun() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    // The run's writes: win-2's Role and RoleBinding made (calico-node's token is kept), then
    // the delete of win-1's RoleBinding, held until the run is killed.
    api.hold_write_at(3);
    let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(as_win_2(&args))
        .args(["-o", "json", "--sim-host"])
        .arg(node.sim())
        .arg("--kubeconfig")
        .arg(&node.admin)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("start calicoctl-win");
    while !api.lock().held {
        assert!(child.try_wait().expect("wait").is_none(), "it ended first");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    child.kill().expect("SIGKILL");
    child.wait().expect("reap");
    api.release_write();
    let held = (api.requests().into_iter())
        .filter(|(m, _)| m == "DELETE")
        .collect::<Vec<_>>();
    assert_eq!(held, [("DELETE".to_owned(), binding())]);
    assert!(api.get(&role()).is_some() && api.get(&binding()).is_some());
    assert_eq!(record(&node)["renewal"]["name"], GRANT_2);

    let (code, _, stderr) = node.run(&as_win_2(&args));
    assert_eq!(code, 0, "{stderr}");
    assert!(api.get(&role()).is_none(), "{stderr}");
    assert!(api.get(&binding()).is_none(), "{stderr}");
    assert!(api.get(&role_2()).is_some() && api.get(&binding_2()).is_some());
}

/// The install as win-2 may not delete win-1's grant (403): it succeeds and says so, its
/// record keeps win-1's grant, a reconfigure (which writes the record again) keeps it there, and `uninstall --purge` with a
/// kubeconfig that may removes both grants.
#[test]
fn an_earlier_grant_whose_delete_is_refused_stays_recorded_for_uninstall() {
    let api = FakeApi::start();
    let (node, args) = installed(&api);
    api.forbid("delete", "rolebindings");
    // Its check of the kubeconfig's rights would stop it first.
    let skip = ["--skip", "rbac"];
    let (code, _, stderr) = node.run(&[&as_win_2(&args)[..], &skip[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("uninstall --purge"), "{stderr}");
    assert!(api.get(&binding()).is_some(), "{stderr}");
    let earlier = record(&node)["renewal_earlier"].clone();
    assert_eq!(earlier[0]["name"], GRANT, "{earlier}");

    // (As win-1, which kubelet registers: reconfigure keeps the grant as install made it.)
    let reconfigure = ["reconfigure", "--set", "logs.felix_file_severity=debug"];
    let (code, _, stderr) = node.run(&reconfigure);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(record(&node)["renewal_earlier"], earlier, "{stderr}");

    api.lock().forbidden.clear();
    let (code, _, stderr) = node.run(&[&["uninstall", "--purge"][..], &AS_WIN_2[..2]].concat());
    assert_eq!(code, 0, "{stderr}");
    for gone in [role(), binding(), role_2(), binding_2()] {
        assert!(api.get(&gone).is_none(), "{gone}: {stderr}");
    }
}

/// The record names the uid of the RoleBinding only (the Role was an administrator's, there
/// before the install): `uninstall --purge --skip-cluster` lists the RoleBinding alone as left,
/// with its uid, and says the Role is not ours.
#[test]
fn uninstall_without_the_cluster_lists_only_the_grant_parts_the_record_names() {
    let api = FakeApi::start();
    let (node, _theirs) = crate::grant_foreign::installed_over_administrators_role(&api);
    let uid = record(&node)["renewal"]["uids"]["binding"].clone();
    assert!(uid.is_string(), "{uid}");
    let (code, doc, stderr) = node.run(&["uninstall", "--purge", "--skip-cluster"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        doc["cluster_left"],
        json!([{"kind": "RoleBinding", "namespace": "calico-system", "name": GRANT,
            "delete": format!("kubectl -n calico-system delete rolebinding {GRANT}"),
            "uid": uid}]),
        "{doc}"
    );
    assert!(stderr.contains("names no uid of its Role"), "{stderr}");
}
