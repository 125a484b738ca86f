//! Every rendered file, for every scenario, against reviewed golden files in tests/golden/.

use crate::support::{assert_golden, cmd, json, root};
use std::collections::BTreeSet;

fn render_case(case: &str) {
    let dir = root().join("tests/golden").join(case);
    let out = tempfile::tempdir().expect("tempdir");
    let args = fs_err::read_to_string(dir.join("args")).unwrap_or_default();
    let output = cmd()
        .arg("--config")
        .arg(dir.join("config.yaml"))
        .args(["-o", "json", "render", "--output-dir"])
        .arg(out.path())
        .args(args.split_whitespace())
        .output()
        .expect("runs");
    assert!(
        output.status.success(),
        "{case}: {}",
        String::from_utf8_lossy(&output.stderr)
    );

    // The JSON lists exactly the files in the directory, each with its hash.
    let listed = json(&output.stdout);
    let listed = listed["files"].as_array().expect("a list");
    let on_disk: BTreeSet<String> = fs_err::read_dir(out.path())
        .expect("read out dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(listed.len(), on_disk.len(), "{case}: no stray files");

    let expected_dir = dir.join("expected");
    for name in &on_disk {
        let contents = fs_err::read_to_string(out.path().join(name)).expect("read rendered");
        assert_golden(&expected_dir.join(name), &contents);
    }
    if expected_dir.exists() {
        let expected: BTreeSet<String> = fs_err::read_dir(&expected_dir)
            .expect("read expected")
            .filter_map(|e| {
                let name = e.expect("entry").file_name().to_string_lossy().into_owned();
                name.strip_suffix(".snap").map(str::to_owned)
            })
            .collect();
        assert_eq!(on_disk, expected, "{case}: the set of rendered files");
    }
}

#[test]
fn vxlan_kubernetes_containerd() {
    render_case("vxlan-kubernetes-containerd");
}

#[test]
fn vxlan_docker() {
    render_case("vxlan-docker");
}

#[test]
fn windows_bgp() {
    render_case("windows-bgp");
}

#[test]
fn none_backend_with_azure_kube_network() {
    render_case("none-azure");
}

#[test]
fn etcdv3_with_tls() {
    render_case("etcdv3-tls");
}

#[test]
fn dsr_off_on_unpatched_2019() {
    render_case("dsr-off");
}

#[test]
fn two_service_cidrs() {
    render_case("two-service-cidrs");
}

#[test]
fn user_template() {
    render_case("user-template");
}
