//! `calicoctl-win fleet diags` through its command line, on the fake API server with RBAC
//! enforced, as the identity `fleet rbac --identity diags` makes: a zip per node and the index
//! in --out, the document with -o json, and the exit codes (0 all gathered, 1 some failed, 2
//! usage, 4 the run's timeout).

use super::fleet_diags::{CALICO_NS, NS, PORT, SA, bundle, node_with_pod, serve};
use crate::support::fake_api::FakeApi;
use crate::support::fake_api::diags::Answer;
use calicoctl_win::fleet::diags::rights;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// Three nodes serving a bundle, and the diags identity's kubeconfig.
fn cluster(dir: &Path) -> (FakeApi, PathBuf) {
    let api = FakeApi::start();
    for (i, node) in ["win-a", "win-b", "win-c"].iter().enumerate() {
        node_with_pod(&api, node, &format!("10.0.0.{}", i + 10));
        serve(&api, node, Answer::Bundle(bundle(i as u32, 1000).into()));
    }
    for m in rights::manifests(SA, (NS, NS), CALICO_NS) {
        assert!(api.apply(&m), "{m}");
    }
    let kubeconfig = crate::support::service_account_kubeconfig(&api, dir, NS, SA);
    (api, kubeconfig)
}

fn fleet_diags(kubeconfig: &Path, out: &Path, more: &[&str]) -> (i32, Value, String) {
    let run = crate::support::cmd()
        .args(["-o", "json", "--kubeconfig"])
        .arg(kubeconfig)
        .args(["fleet", "diags", "--namespace", NS, "--out"])
        .arg(out)
        .args(more)
        .output()
        .expect("runs");
    let doc = serde_json::from_slice(&run.stdout).unwrap_or(Value::Null);
    (
        run.status.code().expect("code"),
        doc,
        String::from_utf8_lossy(&run.stderr).into_owned(),
    )
}

fn results(doc: &Value) -> Vec<(String, String)> {
    doc["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|n| {
            let why = n["reason"]
                .as_str()
                .unwrap_or(n["result"].as_str().unwrap_or_default());
            (
                n["node"].as_str().unwrap_or_default().to_owned(),
                why.to_owned(),
            )
        })
        .collect()
}

#[test]
fn fleet_diags_gathers_each_node_and_exits_by_what_it_gathered() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, kubeconfig) = cluster(dir.path());
    let port = PORT.to_string();

    let out = dir.path().join("all");
    let (code, doc, err) = fleet_diags(&kubeconfig, &out, &["--port", &port]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(doc["gathered"], 3, "{doc}");
    assert_eq!(doc["out"], out.display().to_string());
    for node in ["win-a", "win-b", "win-c"] {
        assert!(out.join(format!("{node}.zip")).is_file(), "{node}");
    }
    assert!(out.join("index.json").is_file() && out.join("index.txt").is_file());

    // A node that does not answer is named after its own timeout: exit 1.
    serve(&api, "win-b", Answer::Silent);
    let out = dir.path().join("one-silent");
    let (code, doc, err) = fleet_diags(
        &kubeconfig,
        &out,
        &["--port", &port, "--node-timeout", "1s"],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(
        results(&doc),
        [
            ("win-a".into(), "ok".into()),
            ("win-b".into(), "timed-out".into()),
            ("win-c".into(), "ok".into()),
        ]
    );
    assert!(err.contains("1 of 3 node(s) gave no diags zip"), "{err}");

    // The run's timeout first: exit 4, with the index still written.
    let out = dir.path().join("run-timeout");
    let (code, doc, err) = fleet_diags(
        &kubeconfig,
        &out,
        &[
            "--port",
            &port,
            "--node-timeout",
            "1h",
            "--timeout",
            "1s",
            "--concurrency",
            "1",
        ],
    );
    assert_eq!(code, 4, "{err}");
    assert_eq!(doc["run_timed_out"], true, "{doc}");
    assert!(out.join("index.json").is_file());

    // The wrong port is each node's failure, not the run's.
    let out = dir.path().join("wrong-port");
    let (code, doc, err) = fleet_diags(&kubeconfig, &out, &["--port", "1"]);
    assert_eq!(code, 1, "{err}");
    assert!(
        results(&doc).iter().all(|(_, why)| why == "unreachable"),
        "{doc}"
    );

    // No node selected is no bundle gathered: exit 1, said.
    let out = dir.path().join("none");
    let (code, doc, err) = fleet_diags(
        &kubeconfig,
        &out,
        &["--port", &port, "--selector", "pool=b"],
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(doc["nodes"], serde_json::json!([]));
    assert!(err.contains("no Windows node"), "{err}");
}

/// Bad input is refused before anything is asked (exit 2): an output directory that holds
/// something, a config whose nodes serve no /diags, a --set, a concurrency of 0.
#[test]
fn fleet_diags_refuses_bad_input_with_exit_2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, kubeconfig) = cluster(dir.path());
    let full = dir.path().join("full");
    fs_err::create_dir_all(&full).expect("dir");
    fs_err::write(full.join("x"), "x").expect("file");
    let (code, _, err) = fleet_diags(&kubeconfig, &full, &[]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not empty (it holds x)"), "{err}");

    let config = dir.path().join("calico-windows.yaml");
    fs_err::write(
        &config,
        "metrics:\n  enabled: true\n  source_ranges: [10.0.0.0/8]\n",
    )
    .expect("config");
    let out = dir.path().join("out");
    let run = |extra: &[&str]| {
        let r = crate::support::cmd()
            .args(extra)
            .args(["--kubeconfig"])
            .arg(&kubeconfig)
            .args(["fleet", "diags", "--namespace", NS, "--out"])
            .arg(&out)
            .output()
            .expect("runs");
        (
            r.status.code().expect("code"),
            String::from_utf8_lossy(&r.stderr).into_owned(),
        )
    };
    let config_flag = config.display().to_string();
    let (code, err) = run(&["--config", &config_flag]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("serve no /diags"), "{err}");
    let (code, err) = run(&["--set", "metrics.port=1"]);
    assert_eq!(code, 2, "{err}");
    let (code, err) = run(&["--concurrency", "0"]);
    assert_eq!(code, 2, "{err}");
    assert!(!out.exists(), "the output directory was made");

    // With metrics.diags on, the port is the config's metrics.port.
    fs_err::write(
        &config,
        format!("metrics:\n  enabled: true\n  diags: true\n  port: {PORT}\n  source_ranges: [10.0.0.0/8]\n"),
    )
    .expect("config");
    let (code, err) = run(&["--config", &config_flag]);
    assert_eq!(code, 0, "{err}");
    assert!(out.join("win-a.zip").is_file());
    drop(api);
}

/// Without the DaemonSet, the run names it and its namespace (exit 1), not Calico.
#[test]
fn fleet_diags_without_the_daemonset_names_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, kubeconfig) = cluster(dir.path());
    api.remove(&format!(
        "/apis/apps/v1/namespaces/{NS}/daemonsets/calicoctl-win"
    ));
    let (code, doc, err) = fleet_diags(&kubeconfig, &dir.path().join("out"), &[]);
    assert_eq!(code, 1, "{err}");
    let said = doc["error"].to_string();
    assert!(
        said.contains(&format!(
            "the DaemonSet calicoctl-win does not exist in namespace {NS}"
        )),
        "{said}"
    );
    assert!(said.contains("fleet plan --engine daemonset"), "{said}");
    assert!(!said.contains("Calico installed"), "{said}");
}

/// The names in `dir`, sorted, each with its content.
fn contents(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut all: Vec<_> = fs_err::read_dir(dir)
        .expect("dir")
        .map(|e| {
            let e = e.expect("entry");
            let name = e.file_name().to_string_lossy().into_owned();
            (name, fs_err::read(e.path()).expect("read"))
        })
        .collect();
    all.sort();
    all
}

/// Each run writes a new directory: a second run into one a run wrote is refused (exit 2),
/// changing nothing; a run whose gathering fails (the node list refused) leaves no directory.
#[test]
fn fleet_diags_writes_each_run_into_a_new_directory() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (api, kubeconfig) = cluster(dir.path());
    let port = PORT.to_string();
    let out = dir.path().join("out");
    let (code, _, err) = fleet_diags(&kubeconfig, &out, &["--port", &port]);
    assert_eq!(code, 0, "{err}");
    let names: Vec<String> = contents(&out).into_iter().map(|(n, _)| n).collect();
    assert_eq!(
        names,
        [
            "index.json",
            "index.txt",
            "win-a.zip",
            "win-b.zip",
            "win-c.zip"
        ]
    );
    let before = contents(&out);
    let (code, _, err) = fleet_diags(&kubeconfig, &out, &["--port", &port]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is not empty"), "{err}");
    assert_eq!(contents(&out), before, "a refusal changes nothing");

    api.forbid("list", "nodes");
    let failed = dir.path().join("failed");
    let (code, _, err) = fleet_diags(&kubeconfig, &failed, &["--port", &port]);
    assert_ne!(code, 0, "{err}");
    assert!(!failed.exists(), "the failed run left its directory");
}
