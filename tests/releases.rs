//! Calico releases as they really are: zips of the 3.2x, 3.28–3.32 and 3.33 layouts whose
//! binaries record their version the way Calico's builds do, each installed on a simulated
//! host, and the exact command lines the services start them with (node-service.ps1 at each
//! release tag).

mod support;

use serde_json::Value;
use support::SimNode;
use support::fake_api::FakeApi;
use support::release::{entries_of, write_zip};
use support::snapshot::{assert_same, snapshot};

/// Installs a release zip named without its version (`calico-windows.zip`), so the version can
/// only come from the binary; returns the install's JSON, the host state and the node.
fn install(binary: &str, version: &str) -> (Value, Value, SimNode, FakeApi, Value) {
    let api = FakeApi::start();
    api.healthy_calico();
    let node = SimNode::new(&api);
    let zip = node.dir.path().join("calico-windows.zip");
    write_zip(&zip, &entries_of(binary, Some(version)));
    let (code, _, stderr) = node.run(&["preflight", "--offline"]);
    assert!(code == 0 || code == 3, "{stderr}");
    let initial = snapshot(&node.sim());
    let (code, doc, stderr) = node.run(&[
        "install",
        "--release-zip",
        &zip.display().to_string(),
        "--allow-downgrade",
    ]);
    assert_eq!(code, 0, "{version}: {stderr}");
    let state: Value = serde_json::from_str(
        &std::fs::read_to_string(node.sim().join("state.json")).expect("state"),
    )
    .expect("json");
    (doc, state, node, api, initial)
}

fn started(state: &Value) -> Vec<String> {
    state["started"]
        .as_array()
        .expect("started")
        .iter()
        .map(|s| s.as_str().expect("text").to_owned())
        .collect()
}

#[test]
fn each_release_is_started_with_its_own_command_lines() {
    let root = r"C:\CalicoWindows";
    let cases: &[(&str, &str, &str, Option<&str>)] = &[
        // 3.2x: plain startup, no token refresher.
        (
            "calico-node.exe",
            "3.27.3",
            "calico-node.exe -startup",
            None,
        ),
        // 3.28–3.30: the refresher; still plain startup.
        (
            "calico-node.exe",
            "3.30.2",
            "calico-node.exe -startup",
            Some("calico-node.exe -monitor-token"),
        ),
        // 3.31–3.32: -complete-startup, or the node keeps NetworkUnavailable.
        (
            "calico-node.exe",
            "3.31.0",
            "calico-node.exe -startup -complete-startup",
            Some("calico-node.exe -monitor-token"),
        ),
        // 3.33: calico.exe and its subcommands.
        (
            "calico.exe",
            "3.33.0",
            "calico.exe component node startup --complete-startup",
            Some("calico.exe component node monitor-token"),
        ),
    ];
    for (binary, version, startup, refresher) in cases {
        let (doc, state, node, _api, initial) = install(binary, version);
        // The version came from the binary: the zip's name has none.
        assert_eq!(doc["calico_version"], *version, "{version}");
        let lines = started(&state);
        let want: Vec<String> = std::iter::once(startup)
            .chain(refresher.iter())
            .map(|l| format!(r"{root}\{l}"))
            .collect();
        assert_eq!(lines, want, "{version}");
        // The services carry the version, which decides these lines at every start.
        let node_cmd = state["services"]["caliconode"]["command_line"]
            .as_str()
            .expect("command line");
        assert!(
            node_cmd.ends_with(&format!("--calico-version {version}")),
            "{node_cmd}"
        );
        // From 3.28 the CNI plugin uses the kubeconfig the refresher keeps fresh, which the
        // refresher wrote; before, calico-node's.
        let conf = std::fs::read_to_string(
            node.c_drive("program files/containerd/cni/conf/10-calico.conf"),
        )
        .expect("cni conf");
        let refreshed =
            node.c_drive("calicowindows/token-refresher/host/etc/cni/net.d/calico-kubeconfig");
        if refresher.is_some() {
            assert!(
                conf.contains(r"token-refresher\\host\\etc\\cni\\net.d\\calico-kubeconfig"),
                "{conf}"
            );
            let text = std::fs::read_to_string(&refreshed).expect("refreshed kubeconfig");
            assert!(text.contains("Installed by calico/node"), "{text}");
            let ns = std::fs::read_to_string(node.c_drive(
                "calicowindows/token-refresher/var/run/secrets/kubernetes.io/serviceaccount/namespace",
            ))
            .expect("namespace file");
            assert_eq!(ns, "calico-system");
        } else {
            assert!(
                conf.contains(r"C:\\CalicoWindows\\calico-kube-config"),
                "{conf}"
            );
            assert!(!refreshed.exists());
        }
        // Uninstall removes what the services wrote as well as what install recorded.
        let (code, _, stderr) = node.run(&["uninstall", "--purge", "--remove-logs"]);
        assert_eq!(code, 0, "{stderr}");
        assert_same(&snapshot(&node.sim()), &initial, version);
    }
}

#[test]
fn the_version_follows_the_cluster_and_a_downgrade_needs_to_be_asked_for() {
    let api = FakeApi::start();
    api.healthy_calico(); // ClusterInformation calicoVersion v3.30.2
    let node = SimNode::new(&api);
    let initial_dir = node.sim();

    // No version given: the cluster's, not the built-in default.
    let (code, doc, stderr) = node.run(&["install", "--dry-run"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["calico_version"], "3.30.2");
    assert!(
        doc["prepare"][0]
            .as_str()
            .is_some_and(|p| p.contains("/v3.30.2/calico-windows-v3.30.2.zip")),
        "{}",
        doc["prepare"]
    );

    // A newer one warns; an older one is refused before anything happens.
    let (code, _, stderr) = node.run(&["install", "--dry-run", "--calico-version", "3.31.0"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stderr.contains("newer than the cluster's Calico 3.30.2"),
        "{stderr}"
    );
    let (code, doc, stderr) = node.run(&["install", "--calico-version", "3.29.1"]);
    assert_eq!(code, 2, "{stderr}");
    assert_eq!(doc["error"]["kind"], "downgrade", "{doc}");
    let message = doc["error"].to_string();
    assert!(
        message.contains("older than the cluster's Calico 3.30.2"),
        "{message}"
    );
    assert!(message.contains("--allow-downgrade"), "{message}");
    let (code, _, stderr) = node.run(&[
        "install",
        "--dry-run",
        "--calico-version",
        "3.29.1",
        "--allow-downgrade",
    ]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("older than the cluster's"), "{stderr}");

    // A zip is judged by the version its binary records, whatever its name says.
    let zip = node.dir.path().join("calico-windows-v3.30.2.zip");
    write_zip(&zip, &entries_of("calico-node.exe", Some("3.29.1")));
    let before = snapshot(&initial_dir);
    let (code, doc, stderr) = node.run(&["install", "--release-zip", &zip.display().to_string()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(
        doc["error"]
            .to_string()
            .contains("is Calico 3.29.1, older than"),
        "{}",
        doc["error"]
    );
    assert_same(&snapshot(&initial_dir), &before, "refused downgrade");
}
