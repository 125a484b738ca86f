//! Debian's `kubectl` against the fake API server: an independent client shows that the
//! double's answers are well-formed Kubernetes (discovery, lists, objects, TokenRequest).

use crate::support::fake_api::{FakeApi, claims};
use crate::support::tool;
use std::path::Path;

/// Runs kubectl with a clean environment (its cache in `home`) and the admin kubeconfig.
fn run(bin: &Path, home: &Path, kubeconfig: &Path, args: &[&str]) -> std::process::Output {
    std::process::Command::new(bin)
        .env_clear()
        .env("HOME", home)
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .output()
        .expect("run kubectl")
}

/// Like `run`, for a command that must succeed; returns its stdout.
fn kubectl(bin: &Path, home: &Path, kubeconfig: &Path, args: &[&str]) -> String {
    let out = run(
        bin,
        home,
        kubeconfig,
        &[&["--request-timeout", "10s"], args].concat(),
    );
    assert!(
        out.status.success(),
        "kubectl {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

/// kubectl (or `None`: skipped), a fake API server with Calico, a temp dir (kubectl's home) and
/// an admin kubeconfig in it.
fn setup() -> Option<(
    std::path::PathBuf,
    FakeApi,
    tempfile::TempDir,
    std::path::PathBuf,
)> {
    let bin = tool("kubectl")?;
    let (api, dir, admin) = FakeApi::calico_admin();
    Some((bin, api, dir, admin))
}

/// The client's minor version, like 32 for v1.32.4.
fn minor_version(bin: &Path) -> u32 {
    let out = std::process::Command::new(bin)
        .env_clear()
        .args(["version", "--client", "-o", "json"])
        .output()
        .expect("kubectl version");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("version JSON");
    v["clientVersion"]["minor"]
        .as_str()
        .and_then(|m| m.trim_end_matches('+').parse().ok())
        .expect("minor version")
}

#[test]
fn kubectl_reads_nodes_and_calico_crds_and_creates_a_token() {
    let Some((bin, _api, dir, admin)) = setup() else {
        return;
    };
    let home = dir.path();

    let nodes = kubectl(&bin, home, &admin, &["get", "nodes", "-o", "name"]);
    assert_eq!(nodes.trim(), "node/win-1");
    // The human table (kubectl prints the list itself when the server sends no Table).
    let table = kubectl(&bin, home, &admin, &["get", "nodes"]);
    assert!(table.contains("win-1"), "{table}");

    let vni = kubectl(
        &bin,
        home,
        &admin,
        &[
            "get",
            "felixconfigurations.crd.projectcalico.org",
            "default",
            "-o",
            "jsonpath={.spec.vxlanVNI}",
        ],
    );
    assert_eq!(vni, "4096");
    let pools = kubectl(&bin, home, &admin, &["get", "ippools", "-o", "name"]);
    assert_eq!(
        pools.trim(),
        "ippool.crd.projectcalico.org/default-ipv4-ippool"
    );

    // `kubectl create token` arrived in 1.24; Debian bookworm's kubernetes-client is 1.20, so
    // older clients post the same TokenRequest with `create --raw`.
    let token = if minor_version(&bin) >= 24 {
        kubectl(
            &bin,
            home,
            &admin,
            &[
                "create",
                "token",
                "calico-node",
                "-n",
                "calico-system",
                "--duration",
                "2h",
            ],
        )
    } else {
        let request = dir.path().join("token-request.json");
        fs_err::write(
            &request,
            r#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":7200}}"#,
        )
        .expect("write request");
        let answer = kubectl(
            &bin,
            home,
            &admin,
            &[
                "create",
                "--raw",
                "/api/v1/namespaces/calico-system/serviceaccounts/calico-node/token",
                "-f",
                request.to_str().expect("utf-8 path"),
            ],
        );
        let answer: serde_json::Value = serde_json::from_str(&answer).expect("TokenRequest JSON");
        assert_eq!(answer["kind"], "TokenRequest");
        answer["status"]["token"]
            .as_str()
            .expect("token")
            .to_owned()
    };
    let token = token.trim();
    let c = claims(token);
    assert_eq!(c["sub"], "system:serviceaccount:calico-system:calico-node");
    let lifetime = c["exp"].as_i64().expect("exp") - c["iat"].as_i64().expect("iat");
    assert_eq!(lifetime, 7200);
    // The new token is accepted by the server, and a wrong one is not.
    let as_node = kubectl(
        &bin,
        home,
        &admin,
        &["--token", token, "get", "node", "win-1", "-o", "name"],
    );
    assert_eq!(as_node.trim(), "node/win-1");
    // RBAC as the server enforces it: calico-node's ClusterRole has get on nodes, not list,
    // and kubectl reads the 403 as a real server's.
    let listed = run(&bin, home, &admin, &["--token", token, "get", "nodes"]);
    assert!(!listed.status.success());
    let said = String::from_utf8_lossy(&listed.stderr);
    assert!(
        said.contains("Forbidden")
            && said.contains(r#"User "system:serviceaccount:calico-system:calico-node" cannot list resource "nodes""#),
        "{said}"
    );
    let refused = run(
        &bin,
        home,
        &admin,
        &["--token", "not-a-token", "get", "nodes"],
    );
    assert!(!refused.status.success());
    assert!(
        String::from_utf8_lossy(&refused.stderr).contains("Unauthorized"),
        "{}",
        String::from_utf8_lossy(&refused.stderr)
    );
}

#[test]
fn kubectl_sees_conflicts_and_missing_objects() {
    let Some((bin, _api, dir, admin)) = setup() else {
        return;
    };
    let home = dir.path();
    let created = kubectl(
        &bin,
        home,
        &admin,
        &["create", "namespace", "demo", "-o", "name"],
    );
    assert_eq!(created.trim(), "namespace/demo");
    let again = run(&bin, home, &admin, &["create", "namespace", "demo"]);
    let err = String::from_utf8_lossy(&again.stderr);
    assert!(
        !again.status.success() && err.contains("AlreadyExists"),
        "{err}"
    );
    let patched = kubectl(
        &bin,
        home,
        &admin,
        &[
            "patch",
            "ipamconfigs.crd.projectcalico.org",
            "default",
            "--type",
            "merge",
            "--patch",
            r#"{"spec": {"strictAffinity": false}}"#,
            "-o",
            "jsonpath={.spec.strictAffinity}",
        ],
    );
    assert_eq!(patched, "false");
}

#[test]
fn kubectl_drain_evicts_through_the_eviction_api_and_sees_429() {
    let Some((bin, api, dir, admin)) = setup() else {
        return;
    };
    api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
    api.put_pod("default", "web-2", "win-1", Some("ReplicaSet"));
    api.lock()
        .eviction_blocked
        .insert("default/web-2".to_owned());
    let drain = |timeout: &str| {
        run(
            &bin,
            dir.path(),
            &admin,
            &[
                "drain",
                "win-1",
                "--ignore-daemonsets",
                "--timeout",
                timeout,
            ],
        )
    };
    let blocked = drain("3s");
    let err = String::from_utf8_lossy(&blocked.stderr);
    assert!(!blocked.status.success(), "{err}");
    assert!(err.contains("disruption budget"), "{err}");
    assert!(api.get("/api/v1/namespaces/default/pods/web-1").is_none());
    assert!(api.get("/api/v1/namespaces/default/pods/web-2").is_some());
    let node = api.get("/api/v1/nodes/win-1").expect("node");
    assert_eq!(node["spec"]["unschedulable"], true, "drain cordons first");

    api.lock().eviction_blocked.clear();
    let done = drain("10s");
    assert!(
        done.status.success(),
        "{}",
        String::from_utf8_lossy(&done.stderr)
    );
    assert!(api.get("/api/v1/namespaces/default/pods/web-2").is_none());
}
