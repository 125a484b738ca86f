//! Defaults from the Windows host the tool works on, never from the machine running it: the
//! node name (kubelet's --hostname-override, else the host's name), the container runtime and
//! containerd's CNI directories, and the admin kubeconfig at C:\k\config.

use crate::support::fake_api::FakeApi;
use crate::support::{cmd, json};
use serde_json::Value;
use std::path::Path;

/// `calicoctl-win ARGS -o json --sim-host DIR`, with no flags that set a value.
fn run(sim: &Path, args: &[&str]) -> (i32, Value, String) {
    let out = cmd()
        .args(args)
        .args(["-o", "json", "--sim-host"])
        .arg(sim)
        .output()
        .expect("run");
    (
        out.status.code().expect("code"),
        json(&out.stdout),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Edits the simulated host's state.
fn edit(sim: &Path, f: impl FnOnce(&mut Value)) {
    let p = sim.join("state.json");
    let mut state: Value =
        serde_json::from_str(&fs_err::read_to_string(&p).expect("state")).expect("json");
    f(&mut state);
    fs_err::write(&p, state.to_string()).expect("write state");
}

fn setting<'a>(doc: &'a Value, key: &str) -> (&'a Value, &'a str) {
    let s = &doc["settings"][key];
    (&s["value"], s["source"].as_str().expect("source"))
}

#[test]
fn a_fresh_dry_run_install_passes_every_host_check_with_the_hosts_own_node_name() {
    // No --set node.name: the name comes from the simulated host, not from this machine.
    let out = cmd()
        .args(["install", "--dry-run", "-o", "json"])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    // No check blocks: the dry run ends with the real install's refusal past its checks,
    // no admin kubeconfig (exit 2), not at the checks (exit 3).
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no admin kubeconfig"), "{stderr}");
    let doc = json(&out.stdout);
    let checks = doc["checks"].as_array().expect("checks");
    assert!(
        checks.iter().all(|c| c["verdict"] != "fail"),
        "{}",
        doc["checks"]
    );
    let node = checks
        .iter()
        .find(|c| c["id"] == "node-name")
        .expect("node-name check");
    assert_eq!(node["verdict"], "pass", "{node}");
}

#[test]
fn the_node_name_is_kubelets_override_else_the_hosts_name_in_lower_case() {
    let dir = tempfile::tempdir().expect("tmp");
    let sim = dir.path().join("host");
    let (code, doc, stderr) = run(&sim, &["config", "show", "--offline"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(setting(&doc, "node.name"), (&Value::from("win-1"), "host"));

    // kubelet without --hostname-override: the host's own name, lower-cased.
    edit(&sim, |s| {
        s["services"]["kubelet"]["command_line"] =
            Value::from(r"C:\k\kubelet.exe --config=C:\var\lib\kubelet\config.yaml");
        s["system"]["hostname"] = Value::from("WIN-ABC123");
    });
    let (code, doc, stderr) = run(&sim, &["config", "show", "--offline"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        setting(&doc, "node.name"),
        (&Value::from("win-abc123"), "host")
    );
    // The file (and flags, env) still win over the host.
    let (_, doc, _) = run(
        &sim,
        &["config", "show", "--offline", "--set", "node.name=other"],
    );
    assert_eq!(setting(&doc, "node.name"), (&Value::from("other"), "flag"));

    // A host whose name cannot be read and whose kubelet has no override: a clear problem.
    edit(&sim, |s| s["system"]["hostname"] = Value::Null);
    let (code, doc, _) = run(&sim, &["config", "show", "--offline"]);
    assert_eq!(code, 2);
    assert!(
        doc["error"].to_string().contains("set node.name"),
        "{}",
        doc["error"]
    );
}

#[test]
fn the_runtime_and_cni_dirs_come_from_the_hosts_services_and_containerds_config() {
    let dir = tempfile::tempdir().expect("tmp");
    let docker = dir.path().join("docker");
    let out = cmd()
        .args([
            "config",
            "show",
            "--offline",
            "-o",
            "json",
            "--sim-profile",
            "ws2022-docker",
            "--sim-host",
        ])
        .arg(&docker)
        .output()
        .expect("run");
    let doc = json(&out.stdout);
    assert_eq!(
        setting(&doc, "container_runtime"),
        (&Value::from("docker"), "host")
    );
    assert_eq!(
        setting(&doc, "cni.bin_dir"),
        (&Value::from(r"c:\k\cni"), "default")
    );

    // containerd with its own CNI dirs in config.toml (forward slashes, as often written).
    let sim = dir.path().join("containerd");
    run(&sim, &["config", "show", "--offline"]);
    fs_err::write(
        sim.join("fs/c/program files/containerd/config.toml"),
        "version = 2\n[plugins.\"io.containerd.grpc.v1.cri\".cni]\n  bin_dir = \"c:/opt/cni/bin\"\n  conf_dir = \"c:/etc/cni/net.d\"\n",
    )
    .expect("write config.toml");
    let (code, doc, stderr) = run(&sim, &["config", "show", "--offline"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        setting(&doc, "cni.bin_dir"),
        (&Value::from(r"c:\opt\cni\bin"), "host")
    );
    assert_eq!(
        setting(&doc, "cni.conf_dir"),
        (&Value::from(r"c:\etc\cni\net.d"), "host")
    );
    // Choosing docker in the config drops containerd's dirs for docker's.
    let (_, doc, _) = run(
        &sim,
        &[
            "config",
            "show",
            "--offline",
            "--set",
            "container_runtime=docker",
        ],
    );
    assert_eq!(
        setting(&doc, "cni.conf_dir"),
        (&Value::from(r"c:\k\cni\config"), "default")
    );

    // containerd installed but stopped: docker, as Calico's scripts decide.
    edit(&sim, |s| {
        s["services"]["containerd"]["state"] = Value::from("stopped");
    });
    let (_, doc, _) = run(&sim, &["config", "show", "--offline"]);
    assert_eq!(
        setting(&doc, "container_runtime"),
        (&Value::from("docker"), "host")
    );
}

#[test]
fn the_admin_kubeconfig_is_found_at_c_k_config_after_the_usual_places() {
    let api = FakeApi::calico();
    let dir = tempfile::tempdir().expect("tmp");
    let sim = dir.path().join("host");
    let (_, doc, _) = run(&sim, &["config", "show"]);
    assert_eq!(doc["cluster"]["read"], false, "{doc}");
    // As a join script leaves it: the CA and the token in files beside it, named relative to
    // its directory (kubectl resolves them from there: client-go `ResolveLocalPaths`), all
    // read through the host's files.
    let admin = api.kubeconfig(dir.path(), None);
    let text = fs_err::read_to_string(&admin).expect("kubeconfig");
    let ca = dir.path().join("fake-api-ca.pem");
    let text = text
        .replace(&ca.display().to_string(), "ca.pem")
        .replace(&format!("token: {}", api.token), "tokenFile: admin.token");
    fs_err::create_dir_all(sim.join("fs/c/k")).expect("mkdir");
    fs_err::write(sim.join("fs/c/k/config"), &text).expect("write");
    let (code, doc, _) = run(&sim, &["config", "show"]);
    assert_eq!(code, 0);
    assert_eq!(doc["cluster"]["read"], false, "the CA is missing: {doc}");
    assert!(
        doc["cluster"]["reason"]
            .to_string()
            .contains(r"C:\\k\\ca.pem, which it names, does not exist"),
        "{doc}"
    );
    fs_err::copy(&ca, sim.join("fs/c/k/ca.pem")).expect("copy");
    fs_err::write(sim.join("fs/c/k/admin.token"), format!("{}\n", api.token)).expect("token");
    let (code, doc, stderr) = run(&sim, &["config", "show"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(doc["cluster"]["read"], true, "{doc}");
    assert_eq!(doc["cluster_kubeconfig"]["path"], r"C:\k\config", "{doc}");
    // The cluster's VNI and the host's node name, each named by its source.
    assert_eq!(setting(&doc, "node.name").1, "host");
}

#[test]
fn an_unreadable_firewall_fails_its_check_with_the_error_instead_of_passing() {
    // Under Wine the firewall COM API answers E_NOTIMPL; preflight once took that for "no
    // rule yet" and passed, and install then failed on the same read.
    let dir = tempfile::tempdir().expect("tmp");
    let sim = dir.path().join("host");
    run(&sim, &["preflight", "--offline"]);
    edit(&sim, |s| {
        s["settings"]["firewall_unreadable"] = Value::from(true)
    });
    let (code, doc, _) = run(&sim, &["preflight", "--offline"]);
    assert_eq!(code, 3, "{doc}");
    let c = crate::support::items(&doc, "checks")
        .find(|c| c["id"] == "firewall-vxlan")
        .expect("check");
    assert_eq!(c["verdict"], "fail", "{c}");
    assert!(
        c["message"]
            .as_str()
            .is_some_and(|m| m.contains("0x80004001")),
        "{c}"
    );
}

#[test]
fn render_decides_loopback_dsr_from_the_hosts_windows_build() {
    // 17763.1000 predates the DSR update (17763.1432); 20348 has it.
    for (profile, dsr) in [("ws2019-unpatched", false), ("ws2022", true)] {
        let dir = tempfile::tempdir().expect("tmp");
        cmd()
            .args(["render", "--output-dir"])
            .arg(dir.path().join("out"))
            .args(["--sim-profile", profile, "--sim-host"])
            .arg(dir.path().join("host"))
            .assert()
            .success();
        let conf = fs_err::read_to_string(dir.path().join("out/10-calico.conf")).expect("conf");
        assert!(
            conf.contains(&format!("\"windows_loopback_DSR\": {dsr}")),
            "{profile}: {conf}"
        );
    }
}
