//! `install` with the etcd datastore through the binary: the TLS files come from the cluster's
//! `calico-etcd-secrets`, are checked against a real etcd (mutual TLS), written for SYSTEM and
//! Administrators only, named in the services' environment, and removed by uninstall.

use crate::support::etcd::Etcd;
use crate::support::fake_api::{FakeApi, TestCa, meta};
use crate::support::release::release_zip;
use crate::support::snapshot::{assert_same, snapshot};
use crate::support::{Node, tool};
use serde_json::json;

/// An operator install whose datastore is etcd at `url`: calico-config names the endpoints,
/// calico-etcd-secrets holds calico-node's client certificate and key and the CA.
fn etcd_cluster(url: &str, ca: &TestCa, (cert, key): (&str, &str)) -> FakeApi {
    let api = FakeApi::calico();
    api.put_secret(
        "calico-system",
        "calico-etcd-secrets",
        &[
            ("etcd-key", key.as_bytes()),
            ("etcd-cert", cert.as_bytes()),
            ("etcd-ca", ca.pem().as_bytes()),
        ],
    );
    let mut cm = meta("v1", "ConfigMap", "calico-config", Some("calico-system"));
    cm["data"] = json!({"etcd_endpoints": url});
    api.put(
        "/api/v1/namespaces/calico-system/configmaps/calico-config",
        cm,
    );
    api
}

#[test]
fn install_fetches_the_etcd_files_checks_them_and_uninstall_removes_them() {
    let Some(bin) = tool("etcd") else { return };
    let ca = TestCa::new("etcd-ca");
    let work = tempfile::tempdir().expect("tempdir");
    let etcd = Etcd::start(&bin, work.path(), &ca);
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);

    let api = etcd_cluster(&etcd.url, &ca, (&cert, &key));
    let node = Node::new(&api);
    let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
    let zip = zip.display().to_string();
    node.run(&["preflight", "--offline"]);
    let initial = snapshot(&node.sim());

    let (code, doc, err) = node.run(&["install", "--release-zip", &zip]);
    assert_eq!(code, 0, "{err}");
    let dir = node.c_drive("calicowindows/etcd-tls");
    for (file, want) in [
        ("server.key", &key),
        ("server.crt", &cert),
        ("ca.crt", &ca.pem()),
    ] {
        assert_eq!(
            &fs_err::read_to_string(dir.join(file)).expect(file),
            want,
            "{file}"
        );
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs_err::metadata(dir.join(file))
                .expect("meta")
                .permissions()
                .mode();
            assert_eq!(mode & 0o777, 0o600, "{file} is a secret");
        }
    }
    assert!(
        !node.c_drive("calicowindows/calico-kube-config").exists(),
        "no kubeconfig for the etcd datastore"
    );
    let env = fs_err::read_to_string(node.c_drive("calicowindows/calico-node.env")).expect("env");
    assert!(env.contains(&etcd.url), "{env}");
    assert!(
        env.contains(r"C:\CalicoWindows\etcd-tls\server.key"),
        "{env}"
    );
    assert!(
        !doc.to_string().contains("PRIVATE KEY"),
        "no key in the output"
    );
    assert!(!err.contains("PRIVATE KEY"), "no key in the log");

    // Again: nothing changes; then uninstall --purge gives back the initial host.
    let (code, doc, err) = node.run(&["install", "--release-zip", &zip]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["changed"], false, "{doc}");
    let (code, _, err) = node.run(&["uninstall", "--purge", "--remove-logs"]);
    assert_eq!(code, 0, "{err}");
    assert_same(&snapshot(&node.sim()), &initial, "after uninstall --purge");
}

/// With the etcd datastore, the installer's roles (`fleet rbac --datastore etcdv3`) are enough
/// for install, and the one rule etcd adds (get the secret calico-etcd-secrets) is needed:
/// without it preflight's rbac check names it, and install fails naming the secret.
#[test]
fn an_etcd_install_runs_with_the_installers_etcd_roles_and_needs_the_secret_rule() {
    let Some(bin) = tool("etcd") else { return };
    let ca = TestCa::new("etcd-ca");
    let work = tempfile::tempdir().expect("tempdir");
    let etcd = Etcd::start(&bin, work.path(), &ca);
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);
    for with_secret_rule in [true, false] {
        let api = etcd_cluster(&etcd.url, &ca, (&cert, &key));
        api.set_node_ready("win-1", "True", "kubelet is posting ready status");
        let datastore = if with_secret_rule {
            "etcdv3"
        } else {
            "kubernetes"
        };
        let out = crate::support::on_node()
            .args(["fleet", "rbac", "-o", "json", "--datastore", datastore])
            .output()
            .expect("runs");
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
        for m in doc["manifests"].as_array().expect("manifests") {
            assert!(api.apply(m));
        }
        let (_dir, installer) =
            crate::support::account(&api, "kube-system", "calicoctl-win-installer");
        let node = Node::new(&api);
        let zip = release_zip(node.dir.path(), "3.30.2", "calico-node.exe");
        let run = |args: &[&str]| {
            let out = crate::support::on_node()
                .args(args)
                .args(["-o", "json", "--sim-host"])
                .arg(node.sim())
                .arg("--kubeconfig")
                .arg(&installer)
                .output()
                .expect("runs");
            let doc: serde_json::Value =
                serde_json::from_slice(&out.stdout).unwrap_or(serde_json::Value::Null);
            (out.status.code(), doc)
        };
        let (code, doc) = run(&["preflight"]);
        let rbac = doc["checks"]
            .as_array()
            .and_then(|c| c.iter().find(|c| c["id"] == "rbac"))
            .cloned()
            .expect("rbac check");
        let (install_code, install) =
            run(&["install", "--release-zip", zip.to_str().expect("utf-8")]);
        if with_secret_rule {
            assert_eq!(code, Some(0), "{doc}");
            assert_eq!(install_code, Some(0), "{install}");
        } else {
            assert_eq!(rbac["verdict"], "fail", "{rbac}");
            assert!(
                rbac["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("get secrets calico-etcd-secrets in calico-system")),
                "{rbac}"
            );
            assert_ne!(install_code, Some(0));
            assert!(install.to_string().contains("secrets"), "{install}");
        }
    }
}
