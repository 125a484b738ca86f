//! `fetch etcd-certs` through the binary: the secret from the fake API server, checked
//! against a real etcd with mutual TLS, written to a simulated host.

use crate::support::etcd::Etcd;
use crate::support::fake_api::{FakeApi, TestCa};
use crate::support::{Node, tool};
use serde_json::Value;
use std::path::PathBuf;

impl Node {
    fn tls_dir(&self) -> PathBuf {
        self.c_drive("calicowindows/etcd-tls")
    }

    fn fetch_etcd_certs(&self, extra: &[&str]) -> (i32, Value, String) {
        self.run(&[&["fetch", "etcd-certs"], extra].concat())
    }

    fn assert_fails_writing_nothing(&self, extra: &[&str], needles: &[&str]) {
        let (code, _, stderr) = self.fetch_etcd_certs(extra);
        assert_eq!(code, 1, "{stderr}");
        for n in needles {
            assert!(stderr.contains(n), "missing {n:?} in: {stderr}");
        }
        assert!(!self.tls_dir().exists(), "nothing may be written");
    }
}

/// A manifest-installed Calico with the etcd datastore: kube-system, no calico-system.
fn etcd_cluster(api: &FakeApi, key: &str, cert: &str, ca: &str) {
    api.put_secret(
        "kube-system",
        "calico-etcd-secrets",
        &[
            ("etcd-key", key.as_bytes()),
            ("etcd-cert", cert.as_bytes()),
            ("etcd-ca", ca.as_bytes()),
        ],
    );
}

#[test]
fn the_files_are_written_after_etcd_accepts_them() {
    let Some(bin) = tool("etcd") else { return };
    let ca = TestCa::new("etcd-ca");
    let work = tempfile::tempdir().expect("tempdir");
    let etcd = Etcd::start(&bin, work.path(), &ca);
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);
    let api = FakeApi::start();
    etcd_cluster(&api, &key, &cert, &ca.pem());
    // The endpoints come from calico-config when etcd.endpoints is unset.
    let mut cm =
        crate::support::fake_api::meta("v1", "ConfigMap", "calico-config", Some("kube-system"));
    cm["data"] = serde_json::json!({"etcd_endpoints": etcd.url});
    api.put(
        "/api/v1/namespaces/kube-system/configmaps/calico-config",
        cm,
    );
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_etcd_certs(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["endpoints"], serde_json::json!([etcd.url]));
    let dir = node.tls_dir();
    assert_eq!(
        fs_err::read_to_string(dir.join("server.key")).expect("key"),
        key
    );
    assert_eq!(
        fs_err::read_to_string(dir.join("server.crt")).expect("cert"),
        cert
    );
    assert_eq!(
        fs_err::read_to_string(dir.join("ca.crt")).expect("ca"),
        ca.pem()
    );
    let files = doc["files"].as_array().expect("files");
    assert_eq!(files[0]["setting"], "etcd.key_file");
    assert_eq!(files[0]["path"], "C:\\CalicoWindows\\etcd-tls\\server.key");
    assert!(!doc.to_string().contains("PRIVATE KEY"), "{doc}");

    // --dry-run checks against etcd too, and writes nothing.
    let api = FakeApi::start();
    etcd_cluster(&api, &key, &cert, &ca.pem());
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_etcd_certs(&[
        "--dry-run",
        "--set",
        &format!("etcd.endpoints={}", etcd.url),
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["dry_run"], true);
    assert!(!node.tls_dir().exists());
}

#[test]
fn etcd_refusing_the_client_certificate_is_named_and_nothing_is_written() {
    let Some(bin) = tool("etcd") else { return };
    let ca = TestCa::new("etcd-ca");
    let work = tempfile::tempdir().expect("tempdir");
    let etcd = Etcd::start(&bin, work.path(), &ca);
    // The client certificate comes from a CA etcd does not trust.
    let stranger = TestCa::new("stranger-ca");
    let (cert, key) = stranger.issue("calico-node", &["calico-node"]);
    let api = FakeApi::start();
    etcd_cluster(&api, &key, &cert, &ca.pem());
    let node = Node::new(&api);
    let endpoints = format!("etcd.endpoints={}", etcd.url);
    node.assert_fails_writing_nothing(
        &["--set", &endpoints],
        &["refused the client certificate", "--trusted-ca-file"],
    );

    // etcd-ca that did not sign etcd's certificate.
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);
    let api = FakeApi::start();
    etcd_cluster(&api, &key, &cert, &stranger.pem());
    let node = Node::new(&api);
    node.assert_fails_writing_nothing(&["--set", &endpoints], &["etcd-ca does not sign"]);
}

#[test]
fn an_unreachable_endpoint_fails_in_bounded_time() {
    let ca = TestCa::new("etcd-ca");
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);
    let api = FakeApi::start();
    etcd_cluster(&api, &key, &cert, &ca.pem());
    let node = Node::new(&api);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let started = std::time::Instant::now();
    node.assert_fails_writing_nothing(
        &[
            "--set",
            &format!("etcd.endpoints=https://127.0.0.1:{port}"),
            "--timeout",
            "3s",
        ],
        &["cannot reach etcd", &port.to_string()],
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    // Without any endpoint there is nothing to check against: a usage error.
    let (code, _, stderr) = node.fetch_etcd_certs(&[]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("no etcd endpoints"), "{stderr}");
}

#[test]
fn bad_secrets_fail_before_etcd_is_contacted() {
    let ca = TestCa::new("etcd-ca");
    let (cert, key) = ca.issue("calico-node", &["calico-node"]);
    let endpoints = ["--set", "etcd.endpoints=https://127.0.0.1:9"];

    let api = FakeApi::start();
    let node = Node::new(&api);
    node.assert_fails_writing_nothing(
        &endpoints,
        &[
            "secret kube-system/calico-etcd-secrets does not exist",
            "--secret",
        ],
    );

    api.put_secret(
        "kube-system",
        "calico-etcd-secrets",
        &[("etcd-key", key.as_bytes()), ("etcd-cert", cert.as_bytes())],
    );
    node.assert_fails_writing_nothing(&endpoints, &["has no key etcd-ca"]);

    etcd_cluster(&api, "this is not a key", &cert, &ca.pem());
    node.assert_fails_writing_nothing(&endpoints, &["etcd-key is not PEM"]);

    etcd_cluster(
        &api,
        &key,
        "-----BEGIN CERTIFICATE-----\nnot base64!\n-----END CERTIFICATE-----\n",
        &ca.pem(),
    );
    node.assert_fails_writing_nothing(&endpoints, &["etcd-cert"]);

    let (_, other_key) = ca.issue("other", &["other"]);
    etcd_cluster(&api, &other_key, &cert, &ca.pem());
    node.assert_fails_writing_nothing(
        &endpoints,
        &["client key does not belong to the client certificate"],
    );

    api.forbid("get", "secrets");
    node.assert_fails_writing_nothing(&endpoints, &["403", "kubectl auth can-i get"]);
}
