//! No admin credential stays on a node: install writes calico-node's token into a file its
//! kubeconfig names and grants calico-node the one right to renew it; CalicoNode renews it
//! with calico-node's own credential before it expires. Tested against the fake API server
//! with tokens capped at a few seconds (a real server grants at least ten minutes; the cap
//! compresses several lifetimes into one test), RBAC enforced from the objects install made,
//! and the admin kubeconfig deleted once install is done.

#![cfg(unix)]

use crate::support::fake_api::{FakeApi, claims};
use crate::support::release::release_zip;
use crate::support::{Node, files_holding, on_node};
use serde_json::Value;
use std::path::Path;
use std::time::{Duration, Instant};

/// The longest token the server grants, in seconds.
const CAP: i64 = 9;
const GRANT: &str = "calicoctl-win-token-renewal-win-1";
const RBAC: &str = "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system";

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64
}

/// An admin kubeconfig with a token and a client key, as many clusters' admin files have.
fn admin_with_key(api: &FakeApi, dir: &Path) -> (std::path::PathBuf, String) {
    let ca = crate::support::fake_api::TestCa::new("client-ca");
    let (cert, key) = ca.issue("kubernetes-admin", &["kubernetes-admin"]);
    let b64 = |s: &str| crate::support::fake_api::b64(s.as_bytes());
    let path = api.kubeconfig(dir, None);
    let text = fs_err::read_to_string(&path).expect("kubeconfig").replace(
        &format!("    token: {}\n", api.token),
        &format!(
            "    token: {}\n    client-certificate-data: {}\n    client-key-data: {}\n",
            api.token,
            b64(&cert),
            b64(&key)
        ),
    );
    fs_err::write(&path, text).expect("write kubeconfig");
    let key_body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    (path, key_body)
}

/// The token the node's kubeconfig names, as the node has it now.
fn node_token(node: &Node) -> Option<String> {
    let kubeconfig =
        fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config")).ok()?;
    assert!(
        kubeconfig.contains(r"C:\\CalicoWindows\\calico-kube-config.token"),
        "{kubeconfig}"
    );
    let token =
        fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token")).ok()?;
    (!token.is_empty()).then_some(token)
}

/// `status --offline -o json` on the node: its problems.
fn problems(node: &Node) -> Vec<String> {
    let out = on_node()
        .args(["status", "--offline", "-o", "json", "--sim-host"])
        .arg(node.sim())
        .output()
        .expect("status");
    crate::support::status_problems(&crate::support::json(&out.stdout))
}

fn state(node: &Node) -> Value {
    let text = fs_err::read_to_string(node.sim().join("state.json")).expect("state");
    serde_json::from_str(&text).expect("json")
}

#[test]
fn the_node_renews_its_own_token_over_several_lifetimes_without_an_admin_credential() {
    let api = FakeApi::calico();
    api.lock().max_token_seconds = Some(CAP);
    let node = Node::new(&api);
    let (admin, key) = admin_with_key(&api, node.dir.path());
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let out = on_node()
        .args(["install", "--no-start", "-o", "json", "--release-zip"])
        .arg(&zip)
        .arg("--kubeconfig")
        .arg(&admin)
        .arg("--sim-host")
        .arg(node.sim())
        .output()
        .expect("install");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");

    // The grant: one rule, for calico-node's own tokens, owned by the Node.
    let role = api.get(&format!("{RBAC}/roles/{GRANT}")).expect("role");
    assert_eq!(
        role["rules"],
        serde_json::json!([{"apiGroups": [""], "resources": ["serviceaccounts/token"],
            "resourceNames": ["calico-node"], "verbs": ["create"]}])
    );
    assert_eq!(role["metadata"]["ownerReferences"][0]["uid"], "uid-win-1");
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_some());

    // No admin credential anywhere on the node, and none left to use.
    fs_err::remove_file(&admin).expect("remove the admin kubeconfig");
    for secret in [api.token.as_str(), key.as_str(), "admin.kubeconfig"] {
        let mut found = Vec::new();
        files_holding(&node.sim(), secret, &mut found);
        assert!(found.is_empty(), "{secret:.20}... is in {found:?}");
    }

    let first = node_token(&node).expect("the token install wrote");
    let child = crate::support::console_node(&node.sim(), &[]);
    let mut seen = vec![first];
    let started = Instant::now();
    // Watched until the fourth token (renewals at two thirds of a life), at most 4 lifetimes.
    while seen.len() < 4 && started.elapsed() < Duration::from_secs(4 * CAP as u64) {
        let token = node_token(&node).expect("the node's token");
        // Valid throughout: the server accepts it and it has not expired.
        let exp = claims(&token)["exp"].as_i64().expect("exp");
        assert!(exp > now(), "the node's token expired at {exp}");
        assert!(api.lock().tokens.contains(&token));
        if seen.last() != Some(&token) {
            seen.push(token);
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(
        seen.len() >= 4,
        "{} token(s) within 4 lifetimes",
        seen.len()
    );
    assert!(problems(&node).iter().all(|p| !p.contains("renew")));

    // The right taken away: the next renewal is refused, and said well before expiry.
    api.remove(&format!("{RBAC}/rolebindings/{GRANT}"));
    let deadline = Instant::now() + Duration::from_secs(2 * CAP as u64);
    let said = loop {
        let p = problems(&node);
        if let Some(line) = p.into_iter().find(|l| l.contains("could not renew")) {
            break line;
        }
        assert!(Instant::now() < deadline, "no refused renewal reported");
        std::thread::sleep(Duration::from_millis(200));
    };
    let token = node_token(&node).expect("token");
    let left = claims(&token)["exp"].as_i64().expect("exp") - now();
    assert!(left >= CAP / 4, "said with {left}s left: {said}");
    assert!(said.contains("403") || said.contains("forbidden"), "{said}");
    let events = state(&node)["events"].clone();
    assert!(
        events
            .as_array()
            .expect("events")
            .iter()
            .any(|e| e["id"] == 5
                && e["level"] == "warning"
                && e["message"]
                    .as_str()
                    .unwrap_or_default()
                    .contains("could not renew")),
        "{events}"
    );

    // Given back, the next renewal succeeds and the record goes.
    let role = api.get(&format!("{RBAC}/roles/{GRANT}")).expect("role");
    let mut binding = crate::support::fake_api::meta(
        "rbac.authorization.k8s.io/v1",
        "RoleBinding",
        GRANT,
        Some("calico-system"),
    );
    binding["roleRef"] =
        serde_json::json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": GRANT});
    binding["subjects"] = serde_json::json!([{"kind": "ServiceAccount", "name": "calico-node", "namespace": "calico-system"}]);
    api.put(&format!("{RBAC}/rolebindings/{GRANT}"), binding);
    assert!(role.is_object());
    let deadline = Instant::now() + Duration::from_secs(2 * CAP as u64);
    while problems(&node)
        .iter()
        .any(|p| p.contains("could not renew"))
    {
        assert!(
            Instant::now() < deadline,
            "the record stayed after a renewal"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = crate::support::stop_console(child);
    assert!(!log.contains(&api.token), "{log}");

    // uninstall --purge removes the grant, with an admin kubeconfig given for it: the Role
    // install made; the RoleBinding the administrator made again by hand (without
    // calicoctl-win's label) is theirs and stays, said.
    let admin = api.kubeconfig(node.dir.path(), None);
    let out = on_node()
        .args(["uninstall", "--purge", "-o", "json", "--sim-host"])
        .arg(node.sim())
        .arg("--kubeconfig")
        .arg(&admin)
        .assert()
        .success()
        .get_output()
        .clone();
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_none());
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_some());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    assert!(
        doc["warnings"]
            .to_string()
            .contains("is not the one calicoctl-win made"),
        "{doc}"
    );
}

#[test]
fn a_failed_install_removes_the_grant_it_made() {
    let (api, node, zip) = Node::on_calico_with_zip();
    // The first service registration fails: the plan rolls back.
    let (code, _, stderr) = node.run(&[
        "install",
        "--no-start",
        "--release-zip",
        &zip,
        "--sim-fault",
        "deny:~create service CalicoNode",
    ]);
    assert_ne!(code, 0, "{stderr}");
    // It made the grant before the host changed, and took it away again.
    let made = |kind: &str| {
        api.requests()
            .iter()
            .any(|(m, p)| m == "POST" && p == &format!("{RBAC}/{kind}"))
    };
    assert!(
        made("roles") && made("rolebindings"),
        "the grant was never made"
    );
    assert!(
        api.get(&format!("{RBAC}/roles/{GRANT}")).is_none(),
        "{stderr}"
    );
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_none());
}

#[test]
fn uninstall_purge_without_the_cluster_says_how_to_remove_the_grant() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    fs_err::remove_file(&node.admin).expect("remove");
    let out = on_node()
        .env("HOME", node.dir.path())
        .args(["uninstall", "--purge", "-o", "json", "--sim-host"])
        .arg(node.sim())
        .output()
        .expect("uninstall");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let doc = crate::support::json(&out.stdout);
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains(&format!(
            "kubectl -n calico-system delete rolebinding,role {GRANT}"
        )),
        "{warnings}"
    );
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_some());
}
#[cfg(test)]
mod rbac {
    use crate::support::fake_api::rbac::*;
    use serde_json::{Value, json};
    use std::collections::BTreeMap;

    fn objects() -> BTreeMap<String, Value> {
        BTreeMap::from([
            (
                "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system/roles/renew"
                    .to_owned(),
                json!({"rules": [{"apiGroups": [""], "resources": ["serviceaccounts/token"],
                    "resourceNames": ["calico-node"], "verbs": ["create"]}]}),
            ),
            (
                "/apis/rbac.authorization.k8s.io/v1/namespaces/calico-system/rolebindings/renew"
                    .to_owned(),
                json!({"metadata": {"namespace": "calico-system"},
                    "roleRef": {"kind": "Role", "name": "renew"},
                    "subjects": [{"kind": "ServiceAccount", "name": "calico-node", "namespace": "calico-system"}]}),
            ),
        ])
    }

    fn token_for(sa: &str) -> Request<'_> {
        Request {
            verb: "create",
            group: "",
            resource: "serviceaccounts/token",
            namespace: Some("calico-system"),
            name: Some(sa),
        }
    }

    #[test]
    fn a_named_rule_grants_that_name_only() {
        let o = objects();
        let node = identity(&json!({"sub": "system:serviceaccount:calico-system:calico-node"}));
        assert!(allows(&o, &node, &token_for("calico-node")));
        assert!(!allows(&o, &node, &token_for("calico-cni-plugin")));
        let other = identity(&json!({"sub": "system:serviceaccount:calico-system:other"}));
        assert!(!allows(&o, &other, &token_for("calico-node")));
        let get = Request {
            verb: "get",
            ..token_for("calico-node")
        };
        assert!(!allows(&o, &node, &get));
        // The binding counts only in its own namespace.
        let elsewhere = Request {
            namespace: Some("kube-system"),
            ..token_for("calico-node")
        };
        assert!(!allows(&o, &node, &elsewhere));
        assert_eq!(identity(&json!({"sub": "admin"})), Identity::Admin);
    }
}

/// The cluster's steps of uninstall are journaled with the host's: cut off in the cluster (the
/// grant's first delete refused, as a server whose etcd timed out answers), uninstall stops
/// and keeps its record, and the rerun removes the grant and leaves the node's condition
/// saying Calico is not installed. (They ran after the plan as warnings once: a run cut off
/// there left the grant, and the rerun found nothing installed.)
#[test]
fn uninstall_cut_off_in_the_cluster_finishes_there_when_run_again() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    api.fail_write_at(1);
    let (code, _, stderr) = node.run(&["uninstall", "--purge"]);
    assert_ne!(code, 0, "{stderr}");
    assert!(
        stderr.contains("running uninstall again finishes it"),
        "{stderr}"
    );
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_some());
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_none());
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_none());
    let n = api.get("/api/v1/nodes/win-1").expect("node");
    let ready = n["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "CalicoWindowsReady"))
        .unwrap_or_else(|| panic!("no condition: {n} {doc} {stderr}"));
    assert_eq!(ready["reason"], "NotInstalled", "{n}");
    let annotations = n["metadata"]["annotations"].as_object();
    assert!(
        annotations.is_none_or(|a| !a.contains_key("calicoctl-win/config-hash")),
        "{n}"
    );
}

/// A kubeconfig that may read the node but not change it (kubelet's own, say) is asked its
/// rights before any change: uninstall takes the node off the host and says what stays in the
/// cluster, instead of stopping at the refused step on every rerun.
#[test]
fn uninstall_with_a_kubeconfig_that_may_not_change_the_node_says_so_and_finishes() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    api.forbid("patch", "nodes/status");
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    let warnings = doc["warnings"].to_string();
    assert!(
        warnings.contains("may not patch nodes/status win-1"),
        "{warnings}"
    );
    // Nothing in the cluster was changed: the grant and the node's annotations stay, said.
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_some());
    assert!(warnings.contains("rolebinding,role"), "{warnings}");
    let (code, doc, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["changed"], false, "{doc}");
}

/// `uninstall --purge` deletes the renewal grant only when it is calicoctl-win's (the
/// managed-by label install gives it): a Role an administrator made again under that name stays,
/// said as a warning, while our RoleBinding goes.
#[test]
fn uninstall_purge_leaves_a_grant_that_is_not_ours() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let path = format!("{RBAC}/roles/{GRANT}");
    let mut theirs = api.get(&path).expect("role");
    theirs["metadata"]["labels"] = serde_json::json!({"team": "platform"});
    theirs["metadata"]["uid"] = serde_json::json!("made-by-an-admin");
    api.put(&path, theirs);
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&path).is_some(),
        "the administrator's Role was deleted"
    );
    assert!(api.get(&format!("{RBAC}/rolebindings/{GRANT}")).is_none());
    assert!(
        doc["warnings"]
            .to_string()
            .contains("is not the one calicoctl-win made"),
        "{doc}"
    );
}

/// Install records the uids of the Role and RoleBinding it made; `uninstall --purge` deletes
/// those only. A RoleBinding an administrator deleted and made again since, our label copied
/// with the rest (`kubectl get -o yaml` then `kubectl apply`), has another uid and stays, said;
/// the Role install made goes. A second install does not adopt the administrator's either.
#[test]
fn uninstall_purge_leaves_a_grant_made_again_since_install_with_our_label() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let path = format!("{RBAC}/rolebindings/{GRANT}");
    let mut theirs = api.get(&path).expect("rolebinding");
    let made = theirs["metadata"]["uid"].clone();
    let mut found = Vec::new();
    files_holding(&node.sim(), made.as_str().expect("uid"), &mut found);
    assert!(
        found.iter().any(|f| f.contains("calicoctl-win-install")),
        "install recorded the RoleBinding's uid {made}: {found:?}"
    );
    theirs["metadata"]["uid"] = serde_json::json!("made-again-by-an-admin");
    api.put(&path, theirs);
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        api.get(&path).is_some(),
        "the administrator's RoleBinding was deleted"
    );
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_none());
    assert!(
        doc["warnings"]
            .to_string()
            .contains("it is not the one install made"),
        "{doc}"
    );
}

/// A node whose config-hash annotation names another install's config (reinstalled elsewhere
/// under the same name, or a copied config) by an older version, which wrote no install id,
/// is not forgotten: its annotations stay, said.
#[test]
fn uninstall_leaves_a_node_another_install_annotated() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let mut n = api.get("/api/v1/nodes/win-1").expect("node");
    let theirs = format!("sha256:{}", "b".repeat(64));
    n["metadata"]["annotations"]["calicoctl-win/config-hash"] = serde_json::json!(theirs);
    n["metadata"]["annotations"]
        .as_object_mut()
        .and_then(|a| a.remove("calicoctl-win/install-id"))
        .expect("install id");
    api.put("/api/v1/nodes/win-1", n);
    let (code, doc, stderr) = node.run(&["uninstall", "--purge"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        doc["warnings"]
            .to_string()
            .contains("carries another install's config"),
        "{doc}"
    );
    let n = api.get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(
        n["metadata"]["annotations"]["calicoctl-win/config-hash"],
        theirs.as_str(),
        "{n}"
    );
    // The grant named for the node is that install's now: it stays.
    assert!(api.get(&format!("{RBAC}/roles/{GRANT}")).is_some());
}

/// Uninstall forgets the node this host's Calico ran as (calico-node's `nodename` file), not
/// whatever node the config names now: a config edited since, or copied from another node, must
/// not turn a living node's condition NotInstalled.
#[test]
fn uninstall_forgets_the_node_calico_ran_as_not_the_one_the_config_names_now() {
    let api = FakeApi::calico();
    let mut other = api.get("/api/v1/nodes/win-1").expect("node");
    other["metadata"]["name"] = serde_json::json!("win-2");
    other["metadata"]["annotations"] = serde_json::json!({"calicoctl-win/config-hash": "theirs"});
    api.put("/api/v1/nodes/win-2", other);
    let node = Node::new(&api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    // What calico-node writes at its first start (CALICO_NODENAME_FILE).
    fs_err::write(node.c_drive("calicowindows/nodename"), "win-1\r\n").expect("nodename");
    let (code, doc, stderr) = node.run(&["uninstall", "--set", "node.name=win-2"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(doc.to_string().contains("win-1"), "{doc} {stderr}");
    let theirs = api.get("/api/v1/nodes/win-2").expect("node");
    assert_eq!(
        theirs["metadata"]["annotations"]["calicoctl-win/config-hash"], "theirs",
        "{theirs}"
    );
    let ours = api.get("/api/v1/nodes/win-1").expect("node");
    let ready = ours["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "CalicoWindowsReady"))
        .unwrap_or_else(|| panic!("no condition: {ours}"));
    assert_eq!(ready["reason"], "NotInstalled", "{ours}");
}

/// The fleet's verify verdict does not outlive calicoctl-win on the node: uninstall turns a
/// True `CalicoWindowsTraffic` Unknown (`NotInstalled`), since no run refreshes it any more.
#[test]
fn uninstall_turns_the_traffic_verdict_unknown() {
    let (api, node, zip) = Node::on_calico_with_zip();
    let (code, _, stderr) = node.run(&["install", "--no-start", "--release-zip", &zip]);
    assert_eq!(code, 0, "{stderr}");
    let mut n = api.get("/api/v1/nodes/win-1").expect("node");
    let mut cs = n["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    cs.push(
        serde_json::json!({"type": "CalicoWindowsTraffic", "status": "True",
        "reason": "TrafficPasses", "message": "every verify check passed",
        "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}),
    );
    n["status"]["conditions"] = serde_json::json!(cs);
    n["metadata"]["annotations"]["calicoctl-win/traffic-codes"] =
        serde_json::json!(r#"{"heartbeat": "2026-01-01T00:00:00Z", "codes": []}"#);
    api.put("/api/v1/nodes/win-1", n);
    let (code, _, stderr) = node.run(&["uninstall"]);
    assert_eq!(code, 0, "{stderr}");
    let n = api.get("/api/v1/nodes/win-1").expect("node");
    let traffic = n["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == "CalicoWindowsTraffic"))
        .unwrap_or_else(|| panic!("no condition: {n}"));
    assert_eq!(traffic["status"], "Unknown", "{n}");
    assert_eq!(traffic["reason"], "NotInstalled", "{n}");
    // Its codes annotation goes with calicoctl-win's others.
    assert!(
        n["metadata"]["annotations"]
            .get("calicoctl-win/traffic-codes")
            .is_none(),
        "{n}"
    );
}

/// `service keep-token` (no scheduled verify) stops at Ctrl-C (SIGINT) in its pause between
/// looks, an hour long: it returns with 0, having caught the signal, instead of being ended by
/// it.
#[cfg(unix)]
#[test]
fn keep_token_stops_in_its_pause_at_ctrl_c() {
    let node = Node::healthy().installed().build();
    let looked = |node: &Node| {
        node.api()
            .requests()
            .iter()
            .filter(|(verb, path)| verb == "GET" && path.ends_with("/nodes/win-1"))
            .count()
    };
    let before = looked(&node);
    let child = std::process::Command::new(assert_cmd::cargo::cargo_bin("calicoctl-win"))
        .env_clear()
        .current_dir(crate::support::root())
        .args(["--set", "node.name=win-1", "-o", "json", "--sim-host"])
        .arg(node.sim())
        .args(["service", "keep-token", "--every", "1h"])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    // Its first look asked for the Node with calico-node's token: it now pauses.
    for _ in 0..1200 {
        if looked(&node) > before {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(looked(&node) > before, "keep-token looked at the Node");
    let pid = nix::unistd::Pid::from_raw(i32::try_from(child.id()).expect("pid"));
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).expect("signal");
    let out = child.wait_with_output().expect("wait");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
}
