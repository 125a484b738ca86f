//! The installer's roles (`fleet rbac`, from `cluster::rights`) are sufficient and minimal:
//! install, status, reconfigure with its drain, uninstall --purge and preflight run under a
//! service account bound to exactly them, on the fake API server, which enforces RBAC as
//! kube-apiserver does (`crate::support::fake_api::rbac`); and taking away any one rule makes some
//! command fail with an error that names the right it lacked.

use crate::support::fake_api::FakeApi;
use crate::support::{Node, files_holding, on_node, token_in};
use serde_json::Value;
use std::path::Path;

/// The manifests `fleet rbac` writes.
fn manifests() -> Vec<Value> {
    let out = on_node()
        .args(["fleet", "rbac", "-o", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    doc["manifests"].as_array().expect("manifests").clone()
}

/// The installer's kubeconfig, as an admin writes it with `fetch installer-kubeconfig` (2 h);
/// nothing of the admin's is left beside it for the node to find.
fn installer_kubeconfig(api: &FakeApi, dir: &Path) -> std::path::PathBuf {
    crate::support::service_account_kubeconfig(api, dir, "kube-system", "calicoctl-win-installer")
}

/// install, status, repair (of a stuck endpoint and another host's stale one), reconfigure
/// --drain, uninstall --purge and preflight on a new node as `kubeconfig`'s identity: the
/// first that fails, with its error document.
fn lifecycle(api: &FakeApi, kubeconfig: &Path) -> Option<(String, Value)> {
    let node = Node::new(api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    api.set_felix_vni(4096);
    let steps: [&[&str]; 6] = [
        &["preflight"],
        &["install", "--release-zip", &zip, "--taint-windows"],
        &["status"],
        &["repair"],
        &["reconfigure", "--drain", "--set", "vxlan.vni=4097"],
        &["uninstall", "--purge"],
    ];
    for args in steps {
        if args[0] == "repair" {
            break_endpoints(api, &node);
            // A look first (one look never deletes), then the faults have lasted.
            let out = on_node()
                .args(["repair", "-o", "json", "--sim-host"])
                .arg(node.sim())
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .output()
                .expect("runs");
            if out.status.code() != Some(0) {
                return Some((
                    "repair (the first look)".into(),
                    serde_json::from_slice(&out.stdout).unwrap_or(Value::Null),
                ));
            }
            node.age_endpoint_faults(600);
        }
        if args[0] == "reconfigure" {
            api.set_felix_vni(4097);
            api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
        }
        let out = on_node()
            .args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(node.sim())
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .output()
            .expect("runs");
        let doc: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        let failed = out.status.code() != Some(0)
            || doc["warnings"].to_string().contains("forbidden")
            || doc["checks"].to_string().contains("forbidden");
        if failed {
            return Some((args.join(" "), doc));
        }
        if args[0] == "install" {
            // Nothing calicoctl-win wrote on the node holds the installer's credential.
            let token = token_in(kubeconfig);
            let mut found = Vec::new();
            files_holding(&node.sim(), &token, &mut found);
            assert!(found.is_empty(), "the installer's token is in {found:?}");
        }
    }
    None
}

/// A pod on win-1 whose HNS endpoint is still Created (stuck), and another host's endpoint for
/// an address no pod has (remote-stale): what repair evicts, looks up and deletes.
fn break_endpoints(api: &FakeApi, node: &Node) {
    api.put_pod("default", "stuck", "win-1", Some("ReplicaSet"));
    api.set_pod_ip("default", "stuck", "10.244.1.9");
    node.add_endpoints(&[
        ("stuck_Calico", "10.244.1.9", 1, false),
        ("gone", "10.244.9.9", 3, true),
    ]);
}

fn cluster() -> FakeApi {
    let api = FakeApi::calico();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api
}

#[test]
fn the_installer_roles_are_enough_for_the_whole_lifecycle() {
    let api = cluster();
    for m in manifests() {
        assert!(api.apply(&m));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = installer_kubeconfig(&api, dir.path());
    // Short-lived, readable by its owner only.
    let claims = crate::support::fake_api::claims(&token_in(&kubeconfig));
    assert_eq!(
        claims["exp"].as_i64().expect("exp") - claims["iat"].as_i64().expect("iat"),
        7200
    );
    assert_eq!(
        claims["sub"],
        "system:serviceaccount:kube-system:calicoctl-win-installer"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs_err::metadata(&kubeconfig)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    assert_eq!(lifecycle(&api, &kubeconfig), None);
    // And without the roles, the identity can do nothing.
    for m in manifests().iter().filter(|m| m["kind"] != "ServiceAccount") {
        api.remove(&crate::support::fake_api::rbac_path(m).expect("rbac"));
    }
    assert!(lifecycle(&api, &kubeconfig).is_some());
}

/// Each rule is needed: without it some command fails, and its error names the resource.
#[test]
fn every_installer_rule_is_needed() {
    let all = manifests();
    let roles: Vec<(usize, usize)> = all
        .iter()
        .enumerate()
        .filter(|(_, m)| m["rules"].is_array())
        .flat_map(|(i, m)| (0..m["rules"].as_array().expect("rules").len()).map(move |j| (i, j)))
        .collect();
    assert!(roles.len() >= 10, "{roles:?}");
    let mut unused = Vec::new();
    for (i, j) in roles {
        let api = cluster();
        let mut objects = all.clone();
        let rule = objects[i]["rules"].as_array_mut().expect("rules").remove(j);
        for m in &objects {
            assert!(api.apply(m));
        }
        let dir = tempfile::tempdir().expect("tempdir");
        let kubeconfig = installer_kubeconfig(&api, dir.path());
        match lifecycle(&api, &kubeconfig) {
            None => unused.push(rule.to_string()),
            Some((command, doc)) => {
                let resource = rule["resources"][0].as_str().expect("resource");
                let plural = resource.split('/').next().unwrap_or(resource);
                assert!(
                    doc.to_string().contains(plural),
                    "without {rule}, '{command}' failed without naming {resource}: {doc}"
                );
            }
        }
    }
    assert!(unused.is_empty(), "rules no command needs: {unused:#?}");
}

/// An installer credential lives at most a day; the TokenRequest API's least is 10 minutes.
#[test]
fn an_installer_kubeconfig_lives_between_ten_minutes_and_a_day() {
    let api = cluster();
    let dir = tempfile::tempdir().expect("tempdir");
    let admin = api.kubeconfig(dir.path(), None);
    for lifetime in ["25h", "5m"] {
        let out = on_node()
            .args([
                "fetch",
                "installer-kubeconfig",
                "--lifetime",
                lifetime,
                "--kubeconfig",
            ])
            .arg(&admin)
            .arg("--out-file")
            .arg(dir.path().join("x"))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(2), "{lifetime}");
        assert!(!dir.path().join("x").exists());
        // Said as given: 25h, not 1d1h.
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!("--lifetime {lifetime} ")),
            "{stderr}"
        );
    }
    let out = on_node()
        .args([
            "fetch",
            "installer-kubeconfig",
            "--lifetime",
            "0s",
            "--kubeconfig",
        ])
        .arg(&admin)
        .arg("--out-file")
        .arg(dir.path().join("x"))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no time at all"), "{stderr}");
}

/// status names a kubeconfig left on the node whose identity is cluster-admin; the
/// installer's, with its narrow roles, is not one.
#[test]
fn status_names_an_admin_kubeconfig_left_on_the_node() {
    let api = cluster();
    for m in manifests() {
        assert!(api.apply(&m));
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let installer = installer_kubeconfig(&api, dir.path());
    let admin = api.kubeconfig(dir.path(), None);
    let node = Node::new(&api);
    let zip = crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let run = |args: &[&str]| {
        let out = on_node()
            .args(args)
            .args(["-o", "json", "--sim-host"])
            .arg(node.sim())
            .arg("--kubeconfig")
            .arg(&installer)
            .output()
            .expect("runs");
        serde_json::from_slice::<Value>(&out.stdout).expect("json")
    };
    let doc = run(&["install", "--release-zip", zip.to_str().expect("utf-8")]);
    assert_eq!(doc["changed"], true, "{doc}");
    let k_config = node.c_drive("k/config");
    fs_err::create_dir_all(k_config.parent().expect("dir")).expect("dir");
    fs_err::copy(&admin, &k_config).expect("the node-join scripts' admin kubeconfig");
    let doc = run(&["status"]);
    assert_eq!(
        doc["admin_kubeconfigs"],
        serde_json::json!([r"C:\k\config"]),
        "{doc}"
    );
    assert!(
        doc["problems"].to_string().contains("cluster-admin"),
        "{doc}"
    );
    fs_err::copy(&installer, &k_config).expect("the installer's instead");
    let doc = run(&["status"]);
    assert_eq!(doc["admin_kubeconfigs"], serde_json::json!([]), "{doc}");
}

/// The fleet's roles (`fleet plan`'s) are what its jobs need, each rule of them: on a node an
/// admin installed, the DaemonSet's job (`reconfigure --drain` with a VNI change), its
/// readiness `status` and its renewer of last resort (`service keep-token`, once calico-node's
/// token is refused) run as the fleet's service account, and fail without any one rule,
/// naming the resource.
#[test]
fn every_fleet_rule_is_needed_and_enough() {
    let out = crate::support::cmd()
        .args(["--config", "templates/calico-windows.yaml", "-o", "json"])
        .args([
            "fleet",
            "plan",
            "--image",
            "registry.example.com/calicoctl-win:1",
            // The DaemonSet that changes its node, in its turn (with the turns' Role).
            "--engine",
            "daemonset",
        ])
        .current_dir(crate::support::root())
        .assert()
        .success()
        .get_output()
        .clone();
    let doc: Value = serde_json::from_slice(&out.stdout).expect("json");
    every_rule_is_needed(&doc, "the fleet's jobs", |objects| {
        let api = cluster();
        for m in objects {
            assert!(api.apply(m));
        }
        let node = Node::new(&api);
        let zip =
            crate::support::release::release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
        let (code, _, err) = node.run(&["install", "--release-zip", zip.to_str().expect("utf-8")]);
        assert_eq!(code, 0, "{err}");
        let (_dir, fleet) = crate::support::account(&api, "system-upgrade", "calicoctl-win-fleet");
        api.set_felix_vni(4097);
        api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
        let mut failed = None;
        for args in [
            // In its turn, as the DaemonSet runs it (`fleet plan`'s default name and
            // concurrency): the Leases got, made and given back.
            &[
                "reconfigure",
                "--drain",
                "--turn=system-upgrade/calicoctl-win",
                "--turns=2",
                "--set",
                "vxlan.vni=4097",
            ][..],
            &["status"][..],
            &["service", "keep-token", "--once"][..],
        ] {
            if args == ["status"] {
                // Another host's endpoint, which status looks for in the EndpointSlices (on
                // the network reconfigure made again).
                node.add_endpoints(&[("remote_gone", "10.244.9.9", 3, true)]);
            }
            if args[0] == "service" {
                // calico-node's token refused: the renewer of last resort makes a new one.
                api.recreate_service_account("calico-system", "calico-node");
            }
            let out = on_node()
                .args(args)
                .args(["-o", "json", "--sim-host"])
                .arg(node.sim())
                .arg("--kubeconfig")
                .arg(&fleet)
                .output()
                .expect("runs");
            if out.status.code() != Some(0) {
                failed = Some(String::from_utf8_lossy(&out.stdout).into_owned());
                break;
            }
        }
        failed
    });
}

/// `fleet rbac --identity fleet` writes the same ServiceAccount and roles `fleet plan` does.
#[test]
fn fleet_rbac_writes_the_fleets_roles_as_fleet_plan_does() {
    let rbac = on_node()
        .args(["fleet", "rbac", "--identity", "fleet", "-o", "json"])
        .assert()
        .success()
        .get_output()
        .clone();
    let rbac: Value = serde_json::from_slice(&rbac.stdout).expect("json");
    let plan = crate::support::cmd()
        .args(["--config", "templates/calico-windows.yaml", "-o", "json"])
        .args([
            "fleet",
            "plan",
            "--image",
            "registry.example.com/calicoctl-win:1",
        ])
        .current_dir(crate::support::root())
        .output()
        .expect("runs");
    let plan: Value = serde_json::from_slice(&plan.stdout).expect("json");
    let from_plan: Vec<&Value> = crate::support::items(&plan, "manifests")
        .filter(|m| {
            m["kind"].as_str().is_some_and(|k| {
                k.contains("Role")
                    || k == "ServiceAccount"
                    || k.starts_with("ValidatingAdmissionPolicy")
            })
        })
        // The DaemonSet's turn Role is fleet plan's alone: its slots are the plan's.
        .filter(|m| {
            !m["metadata"]["name"]
                .as_str()
                .is_some_and(|n| n.ends_with("-turn"))
        })
        .collect();
    let from_rbac: Vec<&Value> = crate::support::items(&rbac, "manifests").collect();
    assert_eq!(from_rbac, from_plan);
}

/// `fleet rbac --help` lists the rights it grants: each resource of the code's table is named
/// there and in docs/commands/fleet.md, so neither can drift from what is granted.
#[test]
fn the_help_and_the_docs_name_every_granted_resource() {
    let help = on_node()
        .args(["fleet", "rbac", "--help"])
        .output()
        .expect("runs");
    let help = String::from_utf8_lossy(&help.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let docs = fs_err::read_to_string(crate::support::root().join("docs/commands/fleet.md"))
        .expect("docs");
    for m in manifests().iter().filter(|m| m["rules"].is_array()) {
        for rule in m["rules"].as_array().expect("rules") {
            let resource = rule["resources"][0].as_str().expect("resource");
            assert!(help.contains(resource), "--help does not name {resource}");
            assert!(docs.contains(resource), "fleet.md does not name {resource}");
            for name in rule["resourceNames"].as_array().into_iter().flatten() {
                let name = name.as_str().expect("name");
                assert!(
                    help.contains(name),
                    "--help does not name {resource} {name}"
                );
                assert!(
                    docs.contains(name),
                    "fleet.md does not name {resource} {name}"
                );
            }
        }
    }
}

/// Each rule of the roles in `doc`'s manifests is needed and all are enough: `run` (which
/// applies the objects it is given and runs what `who` runs, returning the JSON of the first
/// run that failed) succeeds with all of them, and fails without any one, naming its resource.
pub(crate) fn every_rule_is_needed(
    doc: &Value,
    who: &str,
    run: impl Fn(&[Value]) -> Option<String>,
) {
    let rbac: Vec<Value> = crate::support::items(doc, "manifests")
        .filter(|m| {
            m["kind"]
                .as_str()
                .is_some_and(|k| k.contains("Role") || k == "ServiceAccount")
        })
        .cloned()
        .collect();
    let rules: Vec<(usize, Option<usize>)> = std::iter::once((0, None))
        .chain(rbac.iter().enumerate().flat_map(|(i, m)| {
            (0..m["rules"].as_array().map_or(0, Vec::len)).map(move |j| (i, Some(j)))
        }))
        .collect();
    let mut unused = Vec::new();
    for (i, j) in rules {
        let mut objects = rbac.clone();
        let removed = j.map(|j| objects[i]["rules"].as_array_mut().expect("rules").remove(j));
        match (removed, run(&objects)) {
            (None, None) => {}
            (None, Some(doc)) => panic!("the roles of {who} are not enough: {doc}"),
            (Some(rule), None) => unused.push(rule.to_string()),
            (Some(rule), Some(doc)) => {
                let resource = rule["resources"][0].as_str().expect("resource");
                let plural = resource.split('/').next().unwrap_or(resource);
                assert!(doc.contains(plural), "without {rule}: {doc}");
            }
        }
    }
    assert!(unused.is_empty(), "rules {who} never need: {unused:#?}");
}
