//! `config import-ps1` on realistic config.ps1 files of both forms.

mod support;

use std::path::Path;
use std::process::Output;
use support::{assert_golden, cmd, json, root};

/// Runs `config import-ps1 PS1 --output OUT` with the given global flags.
fn import_ps1(ps1: &Path, out: &Path, flags: &[&str]) -> Output {
    cmd()
        .args(flags)
        .args(["config", "import-ps1"])
        .arg(ps1)
        .arg("--output")
        .arg(out)
        .output()
        .expect("runs")
}

/// Imports one fixture; checks the YAML against its golden file, the lines reported as not
/// understood, and that the YAML loads as a valid configuration.
fn import_case(name: &str, not_understood: &[u64]) -> serde_json::Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("calico-windows.yaml");
    let ps1 = root().join("tests/import-ps1").join(format!("{name}.ps1"));
    let output = import_ps1(&ps1, &out, &["-o", "json"]);
    assert!(
        output.status.success(),
        "{name}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let doc = json(&output.stdout);
    assert_eq!(doc["written"], true);

    let yaml = std::fs::read_to_string(&out).expect("written");
    assert_eq!(doc["yaml"], yaml.as_str());
    assert_golden(
        &root().join("tests/import-ps1").join(format!("{name}.yaml")),
        &yaml,
    );

    let lines: Vec<u64> = doc["not_understood"]
        .as_array()
        .expect("list")
        .iter()
        .map(|s| s["line"].as_u64().expect("line"))
        .collect();
    assert_eq!(lines, not_understood, "{name}: lines not understood");
    assert_eq!(
        doc["problems"],
        serde_json::json!([]),
        "{name}: the import validates"
    );

    let show = cmd()
        .arg("--config")
        .arg(&out)
        .args(["-o", "json", "--set", "node.name=win-1", "config", "show"])
        .output()
        .expect("runs");
    assert!(
        show.status.success(),
        "{name}: imported YAML does not load: {}",
        String::from_utf8_lossy(&show.stderr)
    );
    json(&show.stdout)
}

#[test]
fn v3_23_as_shipped_leaves_placeholders_to_the_defaults() {
    let shown = import_case("v3.23-as-shipped", &[2, 3, 5]);
    let s = &shown["settings"];
    // Placeholders were left unset, so the built-in defaults apply.
    assert_eq!(s["service_cidrs"]["source"], "default");
    assert_eq!(s["datastore"]["source"], "default");
    // containerd's CNI dirs come from container_runtime, not from the file.
    assert_eq!(
        s["cni.bin_dir"]["value"],
        "C:\\Program Files\\containerd\\cni\\bin"
    );
    assert_eq!(s["vxlan.vni"]["value"], 4096);
}

#[test]
fn an_edited_file_keeps_every_value_and_lists_what_it_cannot_import() {
    let shown = import_case("v3.26-quickstart-edited", &[2, 3, 36, 37, 38]);
    let s = &shown["settings"];
    assert_eq!(s["backend"]["value"], "windows-bgp");
    assert_eq!(
        s["dns.servers"]["value"],
        serde_json::json!(["10.96.0.10", "10.96.0.11"])
    );
    assert_eq!(s["node.startup_valid_ip_timeout"]["value"], "120s");
    assert_eq!(s["extra_env.felix"]["value"]["FELIX_HEALTHENABLED"], "true");
    assert_eq!(s["logs.felix_screen_severity"]["value"], "warning");
    assert!(
        s["node.name"]["source"]
            .as_str()
            .is_some_and(|src| src == "flag")
    );
}

#[test]
fn legacy_env_assignments_are_imported() {
    let shown = import_case("v3.16-legacy", &[2]);
    let s = &shown["settings"];
    assert_eq!(s["datastore"]["value"], "etcdv3");
    assert_eq!(
        s["etcd.endpoints"]["value"].as_array().map(Vec::len),
        Some(2)
    );
    assert_eq!(s["cni.bin_dir"]["value"], "c:\\k\\cni");
    assert_eq!(s["logs.dir"]["value"], "C:\\CalicoWindows\\logs");
}

#[test]
fn an_existing_output_is_not_overwritten_without_yes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = dir.path().join("calico-windows.yaml");
    std::fs::write(&out, "backend: none\n").expect("seed");
    let ps1 = root().join("tests/import-ps1/v3.16-legacy.ps1");
    let refused = import_ps1(&ps1, &out, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    assert_eq!(
        std::fs::read_to_string(&out).expect("read"),
        "backend: none\n"
    );

    let dry = import_ps1(&ps1, &out, &["--dry-run", "--yes"]);
    assert!(dry.status.success());
    assert_eq!(
        std::fs::read_to_string(&out).expect("read"),
        "backend: none\n",
        "--dry-run writes nothing"
    );

    let forced = import_ps1(&ps1, &out, &["--yes"]);
    assert!(forced.status.success());
    assert!(
        std::fs::read_to_string(&out)
            .expect("read")
            .contains("etcdv3")
    );
}

#[test]
fn a_missing_ps1_is_a_usage_error() {
    let out = cmd()
        .args(["config", "import-ps1", "does-not-exist.ps1"])
        .output()
        .expect("runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("does-not-exist.ps1"));
}
