//! Between the plan install shows and the plan it runs, the node's grant is made (its uids go
//! into the install record): the plan run is the one shown, the record's write aside, and a
//! host changed meanwhile is refused with the grant undone — the objects this run made, by
//! the uids the cluster gave them, not the ones an earlier install recorded.

#![cfg(unix)]

use crate::support::Node;

const GRANT: &str = "calicoctl-win-token-renewal-win-1";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";

/// Installed; the grant's objects deleted (the Node deleted and registered again: the garbage
/// collector removes them); install again makes new ones, and while it makes the Role a file
/// of the install goes. The run refuses, changes nothing of the host, and removes both new
/// objects without a word about someone else's.
#[test]
fn a_host_changed_while_the_grant_is_made_is_refused_and_the_new_grant_undone() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let role = format!("{RBAC}/roles/{GRANT}");
    let binding = format!("{RBAC}/rolebindings/{GRANT}");
    api.remove(&role);
    api.remove(&binding);
    api.lock().uid_generation = 1;
    let gone = node.c_drive("program files/containerd/cni/bin/calico-ipam.exe");
    assert!(gone.exists(), "{}", gone.display());
    api.pause_write_at(1);
    let (code, doc, stderr) = std::thread::scope(|s| {
        let run = s.spawn(|| node.run(&["install", "--no-start", "--release-zip", &zip]));
        while !api.lock().held {
            assert!(!run.is_finished(), "install never made the grant");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        fs_err::remove_file(&gone).expect("remove");
        api.release_write();
        run.join().expect("install")
    });
    assert_ne!(code, 0, "{stderr}");
    assert!(stderr.contains("the host changed"), "{stderr}");
    assert!(
        !gone.exists(),
        "the run wrote a file the plan shown did not"
    );
    assert!(api.get(&role).is_none(), "{stderr}");
    assert!(api.get(&binding).is_none(), "{stderr}");
    assert!(
        !format!("{doc}{stderr}").contains("someone else"),
        "{stderr}"
    );
}

/// The same without the host changing: the plan shown runs, its record with the new uids.
#[test]
fn a_grant_made_again_is_recorded_by_the_plan_shown() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    api.remove(&format!("{RBAC}/roles/{GRANT}"));
    api.remove(&format!("{RBAC}/rolebindings/{GRANT}"));
    api.lock().uid_generation = 1;
    let (code, doc, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["actions"], serde_json::json!([]), "{doc}");
    let record = fs_err::read_to_string(node.c_drive("calicowindows/calicoctl-win-install.json"))
        .expect("record");
    assert!(record.contains(&format!("uid-{GRANT}-1")), "{record}");
}
