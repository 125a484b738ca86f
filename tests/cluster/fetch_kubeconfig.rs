//! `fetch kubeconfig` through the binary, against the fake API server, on a simulated host.

use crate::support::fake_api::{FakeApi, claims};
use crate::support::{Node, on_node, tool};
use serde_json::Value;

const SA_TOKEN: &str = "/api/v1/namespaces/calico-system/serviceaccounts/calico-node/token";

impl Node {
    /// The kubeconfig as the simulated host holds it at C:\CalicoWindows\calico-kube-config.
    fn written(&self) -> Option<String> {
        fs_err::read_to_string(self.c_drive("calicowindows/calico-kube-config")).ok()
    }

    fn fetch_kubeconfig(&self, extra: &[&str]) -> (i32, Value, String) {
        self.run(&[&["fetch", "kubeconfig"], extra].concat())
    }
}

/// The token the kubeconfig holds: in the file it names (`tokenFile`), beside it.
fn token_in(node: &Node, kubeconfig: &str) -> String {
    let doc: Value = serde_json::from_str(kubeconfig).expect("the kubeconfig is JSON-shaped YAML");
    let user = &doc["users"][0]["user"];
    assert!(user.get("token").is_none(), "no inline token: {user}");
    assert_eq!(
        user["tokenFile"],
        r"C:\CalicoWindows\calico-kube-config.token"
    );
    fs_err::read_to_string(node.c_drive("calicowindows/calico-kube-config.token"))
        .expect("the token file")
}

fn token_posts(api: &FakeApi) -> usize {
    api.requests()
        .iter()
        .filter(|(m, p)| m == "POST" && p == SA_TOKEN)
        .count()
}

#[test]
fn a_token_request_kubeconfig_is_written_with_the_admin_server_and_ca() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_kubeconfig(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["method"], "token-request");
    assert_eq!(doc["namespace"], "calico-system");
    assert_eq!(doc["changed"], true);
    let text = node.written().expect("kubeconfig written");
    let k: Value = serde_json::from_str(&text).expect("JSON");
    assert_eq!(k["clusters"][0]["cluster"]["server"], api.url.as_str());
    assert!(!text.contains("insecure"), "{text}");
    let ca = k["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .expect("ca data");
    use base64::Engine;
    let ca = String::from_utf8(
        base64::engine::general_purpose::STANDARD
            .decode(ca)
            .expect("base64"),
    )
    .expect("pem");
    let body = |pem: &str| {
        pem.lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<String>()
    };
    assert_eq!(body(&ca), body(&api.ca_pem));
    let token = token_in(&node, &text);
    let c = claims(&token);
    assert_eq!(c["sub"], "system:serviceaccount:calico-system:calico-node");
    assert_eq!(
        c["exp"].as_i64().expect("exp") - c["iat"].as_i64().expect("iat"),
        365 * 86_400,
        "the default lifetime is one year"
    );
    // The token is nowhere in the output, and the secret file is the only place it is.
    assert!(!doc.to_string().contains(&token) && !stderr.contains(&token));
    assert_eq!(token_posts(&api), 1);

    // The written kubeconfig works for an independent client.
    if let Some(kubectl) = tool("kubectl") {
        // The token file where this machine can read it; calico-node's ClusterRole (as
        // Calico's manifest has it, in the fake cluster) lets it list nodes.
        let token_file = node.dir.path().join("node.token");
        fs_err::write(&token_file, &token).expect("copy");
        let path = node.dir.path().join("node.kubeconfig");
        let local = text.replace(
            r"C:\\CalicoWindows\\calico-kube-config.token",
            &token_file.display().to_string(),
        );
        assert_ne!(local, text);
        fs_err::write(&path, &local).expect("copy");
        let out = std::process::Command::new(kubectl)
            .env_clear()
            .env("HOME", node.dir.path())
            .arg("--kubeconfig")
            .arg(&path)
            .args(["get", "node", "win-1", "-o", "name"])
            .output()
            .expect("kubectl");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout).trim(),
            "node/win-1",
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

#[test]
fn the_server_may_grant_less_and_the_user_is_told() {
    let api = FakeApi::calico();
    api.lock().max_token_seconds = Some(86_400);
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_kubeconfig(&["--lifetime", "30d"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("granted 1d of the 30d"), "{stderr}");
    assert!(doc["expires"].is_string());
}

#[test]
fn refresh_if_expiring_within_only_refreshes_a_token_that_expires_soon() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    assert_eq!(node.fetch_kubeconfig(&["--lifetime", "60d"]).0, 0);
    let first = node.written().expect("written");
    let first_token = token_in(&node, &first);

    let (code, doc, stderr) = node.fetch_kubeconfig(&["--refresh-if-expiring-within", "720h"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["refreshed"], false, "{doc}");
    assert_eq!(token_posts(&api), 1, "a valid token needs no new one");
    assert_eq!(node.written().as_deref(), Some(first.as_str()));

    let (code, doc, _) = node.fetch_kubeconfig(&["--refresh-if-expiring-within", "61d"]);
    assert_eq!(code, 0);
    assert_eq!(doc["refreshed"], true);
    assert_eq!(token_posts(&api), 2);
    assert_ne!(
        token_in(&node, &node.written().expect("written")),
        first_token
    );
}

#[test]
fn a_legacy_secret_is_created_once_and_its_token_never_expires() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_kubeconfig(&["--legacy-secret"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["method"], "legacy-secret");
    assert_eq!(doc["expires"], Value::Null);
    let secret = api
        .get("/api/v1/namespaces/calico-system/secrets/calico-node-token")
        .expect("secret created");
    assert_eq!(secret["type"], "kubernetes.io/service-account-token");
    let token = token_in(&node, &node.written().expect("written"));
    assert!(claims(&token).get("exp").is_none());
    // A second run reuses the secret; --refresh-if-expiring-within leaves a token that never
    // expires alone.
    assert_eq!(node.fetch_kubeconfig(&["--legacy-secret"]).0, 0);
    let (_, doc, _) = node.fetch_kubeconfig(&["--refresh-if-expiring-within", "1y"]);
    assert_eq!(doc["refreshed"], false);
    let creates = api
        .requests()
        .iter()
        .filter(|(m, p)| m == "POST" && p.ends_with("/secrets"))
        .count();
    assert_eq!(creates, 1);
}

#[test]
fn a_token_secret_the_controller_never_fills_times_out_with_exit_4() {
    let api = FakeApi::calico();
    api.lock().token_controller = false;
    let node = Node::new(&api);
    let started = std::time::Instant::now();
    let (code, _, stderr) = node.fetch_kubeconfig(&["--legacy-secret", "--timeout", "2s"]);
    assert!(started.elapsed() < std::time::Duration::from_secs(20));
    assert_eq!(code, 4, "{stderr}");
    assert!(
        stderr.contains("was not filled by the token controller within 2s"),
        "{stderr}"
    );
    assert!(node.written().is_none());
}

fn assert_fails_writing_nothing(node: &Node, args: &[&str], code: i32, needles: &[&str]) {
    let (got, doc, stderr) = node.fetch_kubeconfig(args);
    assert_eq!(got, code, "{stderr}");
    for n in needles {
        assert!(stderr.contains(n), "missing {n:?} in: {stderr}");
    }
    assert!(doc["error"]["message"].is_string(), "{doc}");
    assert!(node.written().is_none(), "nothing may be written");
}

#[test]
fn bad_input_fails_clearly_and_writes_nothing() {
    // No service account.
    let api = FakeApi::calico();
    api.remove("/api/v1/namespaces/calico-system/serviceaccounts/calico-node");
    let node = Node::new(&api);
    assert_fails_writing_nothing(
        &node,
        &[],
        1,
        &[
            "service account calico-system/calico-node does not exist",
            "install Calico first",
        ],
    );
    assert_fails_writing_nothing(&node, &["--legacy-secret"], 1, &["does not exist"]);

    // Forbidden to create tokens.
    let api = FakeApi::calico();
    api.forbid("create", "serviceaccounts/token");
    let node = Node::new(&api);
    assert_fails_writing_nothing(
        &node,
        &[],
        1,
        &[
            "403",
            "kubectl auth can-i create serviceaccounts/calico-node/token",
        ],
    );

    // An admin token the server rejects.
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let dir = node.dir.path();
    api.kubeconfig(dir, Some("revoked-token"));
    assert_fails_writing_nothing(&node, &[], 1, &["401", "renew the token"]);

    // A server certificate from another CA.
    let api = FakeApi::calico();
    let other = FakeApi::start();
    let node = Node::new(&api);
    fs_err::write(node.dir.path().join("fake-api-ca.pem"), &other.ca_pem).expect("write");
    assert_fails_writing_nothing(&node, &[], 1, &["cannot reach", "CA in the kubeconfig"]);
    assert!(api.requests().is_empty());
}

#[test]
fn an_unreachable_server_fails_in_bounded_time() {
    let api = FakeApi::start();
    let node = Node::new(&api);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("port")
        .port();
    let text = fs_err::read_to_string(&node.admin)
        .expect("read")
        .replace(&api.url, &format!("https://127.0.0.1:{port}"));
    fs_err::write(&node.admin, text).expect("write");
    let started = std::time::Instant::now();
    assert_fails_writing_nothing(&node, &[], 1, &["cannot reach", &port.to_string()]);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
}

#[test]
fn dry_run_requests_no_token_and_writes_nothing() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let (code, doc, stderr) = node.fetch_kubeconfig(&["--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["dry_run"], true);
    assert!(api.writes().is_empty(), "{:?}", api.writes());
    assert!(node.written().is_none());
}

#[test]
fn off_windows_it_needs_a_simulated_host() {
    let (api, _dir, admin) = FakeApi::calico_admin();
    on_node()
        .args(["fetch", "kubeconfig", "--kubeconfig"])
        .arg(&admin)
        .assert()
        .code(2);
    assert!(api.requests().is_empty());
}

#[test]
fn an_admin_kubeconfig_without_a_ca_takes_the_clusters_and_never_copies_insecure() {
    let api = FakeApi::calico();
    let node = Node::new(&api);
    let text = fs_err::read_to_string(&node.admin).expect("read");
    let insecure: String = text
        .lines()
        .map(|l| {
            if l.trim_start().starts_with("certificate-authority:") {
                "    insecure-skip-tls-verify: true".to_owned()
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(insecure.contains("insecure-skip-tls-verify"));
    fs_err::write(&node.admin, insecure).expect("write");
    assert_fails_writing_nothing(
        &node,
        &[],
        1,
        &["no CA certificate for", "certificate-authority-data"],
    );

    let mut root_ca = crate::support::fake_api::meta(
        "v1",
        "ConfigMap",
        "kube-root-ca.crt",
        Some("calico-system"),
    );
    root_ca["data"] = serde_json::json!({"ca.crt": api.ca_pem});
    api.put(
        "/api/v1/namespaces/calico-system/configmaps/kube-root-ca.crt",
        root_ca,
    );
    let (code, _, stderr) = node.fetch_kubeconfig(&[]);
    assert_eq!(code, 0, "{stderr}");
    let written = node.written().expect("written");
    assert!(!written.contains("insecure"), "{written}");
    let k: Value = serde_json::from_str(&written).expect("JSON");
    use base64::Engine;
    let ca = base64::engine::general_purpose::STANDARD
        .decode(
            k["clusters"][0]["cluster"]["certificate-authority-data"]
                .as_str()
                .expect("ca"),
        )
        .expect("base64");
    assert_eq!(String::from_utf8(ca).expect("pem"), api.ca_pem);
}
