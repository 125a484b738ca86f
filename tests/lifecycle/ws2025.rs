//! Windows Server 2025 as a node: the simulated host before the April 2026 update (26100.1742)
//! and at it (26100.32690, KB5082063); the profiles differ only in the update revision. Each
//! with Calico v3.31.7 and v3.28.5: install, preflight, status, repair and `lint policies` run
//! on each, and preflight's and status's known-issue verdicts are the table's
//! (src/checks/known_issues.rs).

use crate::support::fake_api::FakeApi;
use crate::support::node::Node;
use calicoctl_win::checks::Verdict;
use calicoctl_win::host::sim::SimHost;
use serde_json::{Value, json};

/// The node's configuration as the library loads it.
fn config() -> calicoctl_win::config::Config {
    let inputs = calicoctl_win::config::Inputs {
        sets: vec!["node.name=win-1".into()],
        ..Default::default()
    };
    calicoctl_win::config::load(&inputs).expect("config").config
}

const CLUSTER_INFO: &str = "/apis/crd.projectcalico.org/v1/clusterinformations/default";

/// The ws2025 known-issue ids `message` names (`id: what breaks`).
fn ws2025_ids(message: &str) -> Vec<&str> {
    message
        .split_whitespace()
        .filter_map(|w| w.strip_suffix(':'))
        .filter(|w| w.starts_with("ws2025-"))
        .collect()
}

#[test]
fn server_2025_is_judged_by_its_update_and_its_felix_in_preflight_and_status() {
    for (profile, version, want) in [
        ("ws2025", "3.31.7", Some("ws2025-acl-policies")),
        ("ws2025", "3.28.5", Some("ws2025-acl-policies")),
        ("ws2025-april2026", "3.31.7", None),
        ("ws2025-april2026", "3.28.5", None),
    ] {
        let what = format!("{profile} with Calico {version}");
        let api = FakeApi::calico();
        let mut info = api.get(CLUSTER_INFO).expect("info");
        info["spec"]["calicoVersion"] = json!(format!("v{version}"));
        api.put(CLUSTER_INFO, info);
        let node = Node::on(&api)
            .profile(profile)
            .release(version, "calico-node.exe")
            .installed()
            .build();
        let (code, doc, err) = node.run(&["preflight"]);
        assert!(code == 0 || code == 3, "{what}: {err}");
        let check = crate::support::items(&doc, "checks")
            .find(|c| c["id"] == "known-issues")
            .cloned()
            .unwrap_or_else(|| panic!("{what}: no known-issues check: {doc}"));
        let os = crate::support::items(&doc, "checks")
            .find(|c| c["id"] == "os-build")
            .cloned()
            .expect("os-build");
        assert_eq!(os["verdict"], "pass", "{what}: {os}");
        let message = check["message"].as_str().expect("message");
        assert_eq!(
            ws2025_ids(message),
            want.into_iter().collect::<Vec<_>>(),
            "{what}: preflight {check}"
        );

        let (_, doc, err) = node.run(&["status"]);
        let status = &doc["known_issues"];
        let said = status["message"]
            .as_str()
            .unwrap_or_else(|| panic!("{what}: {doc} {err}"));
        assert_eq!(
            ws2025_ids(said),
            want.into_iter().collect::<Vec<_>>(),
            "{what}: status {status}"
        );
        assert_eq!(
            status["verdict"], check["verdict"],
            "{what}: status and preflight differ"
        );
        // status takes no --allow-known-issue: its remedy names the commands that do.
        if let Some(remedy) = status["remedy"].as_str() {
            assert!(
                remedy.contains("(preflight, install, reconfigure)"),
                "{what}: {remedy}"
            );
        }

        let (code, doc, err) = node.run(&["repair"]);
        assert_eq!(code, 0, "{what}: repair {doc} {err}");
        let (code, doc, err) = node.run(&["lint", "policies"]);
        assert_eq!(code, 0, "{what}: lint policies {doc} {err}");
        assert!(
            doc.get("policies").is_some_and(Value::is_array),
            "{what}: {doc}"
        );
    }
}

/// The Node's kube-proxy (`status.nodeInfo.kubeProxyVersion`) is judged on Server 2025 by
/// preflight and status: 1.33.1 has ModifyLoadBalancer's breakage on HNS 15.4 (fixed in 1.33.2),
/// 1.33.6 has neither it nor the stale remote endpoints (fixed in 1.33.6); containerd 1.7 is out
/// of support, 2.3 is not on the day given (2026-11-28).
#[test]
fn the_nodes_kube_proxy_is_warned_with_its_fix_until_the_fixed_release() {
    for (version, runtime, warned) in [
        ("v1.33.1", "containerd://1.7.20", true),
        ("v1.33.6", "containerd://2.3.4", false),
    ] {
        let api = FakeApi::calico();
        let path = "/api/v1/nodes/win-1";
        let mut n = api.get(path).expect("node");
        n["status"]["nodeInfo"] = json!({"architecture": "amd64", "bootID": "", "containerRuntimeVersion": runtime,
            "kernelVersion": "10.0.26100.32690", "kubeProxyVersion": version, "kubeletVersion": version,
            "machineID": "win-1", "operatingSystem": "windows", "osImage": "Windows Server 2025 Datacenter", "systemUUID": ""});
        api.put(path, n);
        let node = Node::on(&api)
            .profile("ws2025-april2026")
            .installed()
            .build();
        let (_, doc, err) = node.run(&["preflight"]);
        let check = doc["checks"]
            .as_array()
            .unwrap_or_else(|| panic!("{err}"))
            .iter()
            .find(|c| c["id"] == "kube-proxy")
            .cloned()
            .expect("kube-proxy check");
        // containerd's support, from the Node's containerRuntimeVersion: 1.7's ended on
        // 2026-09-30, so preflight warns of it whatever day it runs.
        let runtime_check = crate::support::items(&doc, "checks")
            .find(|c| c["id"] == "container-runtime")
            .cloned()
            .expect("container-runtime check");
        if warned {
            assert_eq!(
                runtime_check["verdict"], "warn",
                "{runtime}: {runtime_check}"
            );
        }
        // Each judged on this host on an injected day (the snapshot's `now`), never the clock.
        let host = SimHost::open_or_create(&node.sim(), None).expect("host");
        let mut s = calicoctl_win::checks::host::snapshot(&host);
        s.runtime_version = Some(runtime.into());
        s.now = "2026-11-28T12:00:00Z"
            .parse::<jiff::Timestamp>()
            .expect("day")
            .as_second();
        let judged = calicoctl_win::checks::host::evaluate(&s, &config())
            .into_iter()
            .find(|c| c.id == "container-runtime")
            .expect("container-runtime check");
        let want = if warned { Verdict::Warn } else { Verdict::Pass };
        assert_eq!(judged.verdict, want, "{runtime}: {judged:?}");
        let (_, status, _) = node.run(&["status"]);
        let said = [check.to_string(), status["kube_proxy"].to_string()];
        for s in said {
            assert_eq!(
                s.contains("kube-proxy 1.32.6, 1.33.2, 1.34.0 or later"),
                warned,
                "{version}: {s}"
            );
            assert_eq!(s.contains("ModifyLoadBalancer"), warned, "{version}: {s}");
        }
    }
}

/// The kube-proxy calicoctl-win runs (`kube_proxy.path`) is judged by what its binary answers
/// to `--version`, not by the Node's `kubeProxyVersion` (the kubelet's version, KEP-4004): a
/// 1.33.1 binary is warned with its fix though the Node says 1.33.6, a 1.33.6 one is not
/// though the Node says 1.33.1.
#[test]
fn the_kube_proxy_calicoctl_win_runs_is_judged_by_its_binary() {
    for (binary, node_says, warned) in [("v1.33.1", "v1.33.6", true), ("v1.33.6", "v1.33.1", false)]
    {
        let api = FakeApi::start();
        api.healthy_calico();
        let path = "/api/v1/nodes/win-1";
        let mut n = api.get(path).expect("node");
        n["status"]["nodeInfo"]["kubeProxyVersion"] = json!(node_says);
        api.put(path, n);
        let node = Node::on(&api)
            .profile("ws2025-april2026")
            .release("3.30.2", "calico-node.exe")
            .build();
        fs_err::create_dir_all(node.c_drive("k")).expect("k");
        fs_err::write(
            node.c_drive("k/kube-proxy.exe"),
            format!("kube-proxy {binary} (simulated)\n"),
        )
        .expect("kube-proxy.exe");
        let with = ["--set", r"kube_proxy.path=C:\k\kube-proxy.exe"];
        let (code, doc, err) = node.install_local(&with);
        assert_eq!(code, 0, "{err} {doc}");
        let (_, doc, err) = node.run(&[&with[..], &["preflight"]].concat());
        let check = doc["checks"]
            .as_array()
            .unwrap_or_else(|| panic!("{err}"))
            .iter()
            .find(|c| c["id"] == "kube-proxy")
            .cloned()
            .expect("kube-proxy check");
        let (_, status, _) = node.run(&[&with[..], &["status"]].concat());
        for s in [check.to_string(), status["kube_proxy"].to_string()] {
            assert_eq!(s.contains("ModifyLoadBalancer"), warned, "{binary}: {s}");
            assert_eq!(s.contains(&format!("kube-proxy {binary}")), warned, "{s}");
        }
    }
}

/// `kube-proxy --version` runs elevated: preflight runs `kube_proxy.path`'s only once its folder
/// passed `dir-access`, and status runs none (it is the fleet's readiness probe): it judges
/// the version the kube-proxy service recorded when it started kube-proxy.
#[test]
fn kube_proxy_runs_only_from_a_protected_folder_and_never_for_status() {
    let api = FakeApi::start();
    api.healthy_calico();
    let node = Node::on(&api)
        .profile("ws2025-april2026")
        .release("3.30.2", "calico-node.exe")
        .build();
    fs_err::create_dir_all(node.c_drive("k")).expect("k");
    fs_err::write(
        node.c_drive("k/kube-proxy.exe"),
        "kube-proxy v1.33.1 (simulated)\n",
    )
    .expect("kube-proxy.exe");
    let runs = || {
        let state = node.state();
        let started = state["started"].as_array().cloned().unwrap_or_default();
        started
            .iter()
            .filter(|c| c.as_str().is_some_and(|c| c.ends_with("--version")))
            .count()
    };
    let with = ["--set", r"kube_proxy.path=C:\k\kube-proxy.exe"];
    let kube_proxy = |doc: &Value| {
        let checks = doc["checks"].as_array().cloned().unwrap_or_default();
        let found = checks.into_iter().find(|c| c["id"] == "kube-proxy");
        found.unwrap_or_else(|| panic!("no kube-proxy check: {doc}"))
    };
    // Every user may change C:\k: its binary is not run.
    node.edit_state(|st| {
        st["security"][r"c:\k"] = json!("O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;BU)");
    });
    let (_, doc, err) = node.run(&[&with[..], &["preflight", "--offline"]].concat());
    assert_eq!(runs(), 0, "{doc} {err}");
    assert!(
        !kube_proxy(&doc).to_string().contains("ModifyLoadBalancer"),
        "{doc}"
    );
    // Protected, it is run and judged.
    let (_, doc, err) = node.run(&[&with[..], &["preflight", "--offline", "--fix"]].concat());
    assert_eq!(runs(), 1, "{doc} {err}");
    assert!(
        kube_proxy(&doc).to_string().contains("kube-proxy v1.33.1:"),
        "{doc}"
    );
    let (code, doc, err) = node.install_local(&with);
    assert_eq!(code, 0, "{err} {doc}");
    let before = runs();
    let (_, status, err) = node.run(&[&with[..], &["status"]].concat());
    assert_eq!(runs(), before, "status ran a process: {err}");
    let said = status["kube_proxy"].to_string();
    assert!(said.contains("kube-proxy v1.33.1:"), "{status}");
    // Installed, preflight too judges the recorded version, whoever may change C:\k now.
    node.edit_state(|st| {
        st["security"][r"c:\k"] = json!("O:BAD:P(A;OICI;FA;;;SY)(A;OICI;FA;;;BA)(A;OICI;FA;;;BU)");
    });
    let (_, doc, err) = node.run(&[&with[..], &["preflight"]].concat());
    assert_eq!(runs(), before, "{doc} {err}");
    assert!(
        kube_proxy(&doc).to_string().contains("kube-proxy v1.33.1:"),
        "{doc}"
    );
}
