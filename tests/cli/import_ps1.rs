//! `config import-ps1` on realistic config.ps1 files of both forms.

use crate::support::{assert_golden, cmd, json, root};
use std::path::Path;
use std::process::Output;

/// Runs `config import-ps1 PS1 --out-file OUT` with the given global flags.
fn import_ps1(ps1: &Path, out: &Path, flags: &[&str]) -> Output {
    cmd()
        .args(flags)
        .args(["config", "import-ps1"])
        .arg(ps1)
        .arg("--out-file")
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

    let yaml = fs_err::read_to_string(&out).expect("written");
    assert_eq!(doc["yaml"], yaml.as_str());
    assert_golden(
        &root().join("tests/import-ps1").join(format!("{name}.yaml")),
        &yaml,
    );

    let lines: Vec<u64> = crate::support::items(&doc, "not_understood")
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
    // Felix's Prometheus turned on the config.ps1 way is kept, and rendered as given with
    // metrics.enabled off (it was left out, and rendered `false`).
    assert_eq!(
        s["extra_env.felix"]["value"]["FELIX_PROMETHEUSMETRICSENABLED"],
        "true"
    );
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
    fs_err::write(&out, "backend: none\n").expect("seed");
    let ps1 = root().join("tests/import-ps1/v3.16-legacy.ps1");
    let refused = import_ps1(&ps1, &out, &[]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--yes"));
    assert_eq!(
        fs_err::read_to_string(&out).expect("read"),
        "backend: none\n"
    );

    let dry = import_ps1(&ps1, &out, &["--dry-run", "--yes"]);
    assert!(dry.status.success());
    assert_eq!(
        fs_err::read_to_string(&out).expect("read"),
        "backend: none\n",
        "--dry-run writes nothing"
    );

    let forced = import_ps1(&ps1, &out, &["--yes"]);
    assert!(forced.status.success());
    assert!(
        fs_err::read_to_string(&out)
            .expect("read")
            .contains("etcdv3")
    );
}

#[test]
fn a_missing_ps1_is_a_usage_error() {
    cmd()
        .args(["config", "import-ps1", "does-not-exist.ps1"])
        .assert()
        .code(2)
        .stderr(predicates::str::contains("does-not-exist.ps1"));
}

#[test]
fn v3_22_imports_what_calico_uses_not_its_docker_lines() {
    // v3.19–v3.22 set docker's CNI dirs, then containerd's when containerd runs: the
    // directories follow the runtime, so none is imported and the runtime's default applies.
    let shown = import_case("v3.22-quickstart-edited", &[1, 2]);
    let s = &shown["settings"];
    assert_eq!(s["cni.bin_dir"]["source"], "host");
    assert_eq!(
        s["cni.bin_dir"]["value"],
        "C:\\Program Files\\containerd\\cni\\bin"
    );
    assert_eq!(
        s["service_cidrs"]["value"],
        serde_json::json!(["10.96.0.0/12"])
    );
}

#[test]
fn v3_31_with_a_doubled_quote_argument_reads_as_powershell_does() {
    // `-defaultValue ""win-node-7""` is two arguments in PowerShell's argument mode, "" and
    // win-node-7 (an argument that starts with a quoted string ends with it: PowerShell issue
    // 6467); Set-EnvVarIfNotSet's parameters are mandatory and positional ones past them are
    // refused, so the line sets nothing when config.ps1 runs, and the node name stays the
    // host's (here the --set one).
    let shown = import_case("v3.31-quickstart-edited", &[15, 16, 18, 87]);
    let s = &shown["settings"];
    assert_eq!(s["node.name"]["value"], "win-1");
    assert_eq!(s["node.k8s_node_ref"]["value"], "win-1");
    assert_eq!(s["cni.conf_dir"]["source"], "host");
}

/// The YAML an import writes for `bytes` saved as `name`.
fn yaml_of(bytes: &[u8], name: &str) -> (String, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ps1 = dir.path().join(name);
    fs_err::write(&ps1, bytes).expect("write");
    let out = cmd()
        .args(["-o", "json", "config", "import-ps1"])
        .arg(&ps1)
        .assert()
        .success()
        .get_output()
        .clone();
    let doc = json(&out.stdout);
    (doc["yaml"].as_str().expect("yaml").to_owned(), doc)
}

#[test]
fn utf16_and_utf8_files_with_a_byte_order_mark_import_alike() {
    let text = fs_err::read_to_string(root().join("tests/import-ps1/v3.31-quickstart-edited.ps1"))
        .expect("fixture");
    let (plain, _) = yaml_of(text.as_bytes(), "config.ps1");
    // What Windows PowerShell 5.1's Out-File and `>` write: UTF-16LE with a BOM, CRLF.
    let crlf = text.replace('\n', "\r\n");
    let mut utf16 = vec![0xFF, 0xFE];
    utf16.extend(crlf.encode_utf16().flat_map(u16::to_le_bytes));
    let (from_utf16, _) = yaml_of(&utf16, "config.ps1");
    assert_eq!(from_utf16, plain);
    let mut bom = vec![0xEF, 0xBB, 0xBF];
    bom.extend_from_slice(text.as_bytes());
    let (from_bom, _) = yaml_of(&bom, "config.ps1");
    assert_eq!(from_bom, plain);
    assert!(
        plain.contains("0E-2A") && plain.contains("10.96.0.10"),
        "{plain}"
    );
}

#[test]
fn an_unclosed_block_comment_is_reported_with_its_line() {
    let text = "Set-EnvVarIfNotSet -var \"VXLAN_VNI\" -defaultValue 4097\n<# notes\nSet-EnvVarIfNotSet -var \"KUBE_NETWORK\" -defaultValue \"azure.*\"\n";
    let (yaml, doc) = yaml_of(text.as_bytes(), "config.ps1");
    assert!(yaml.contains("4097") && !yaml.contains("azure"), "{yaml}");
    let nu = &doc["not_understood"][0];
    assert_eq!(nu["line"], 2, "{doc}");
    assert!(
        nu["reason"]
            .as_str()
            .is_some_and(|r| r.contains("never closed")),
        "{nu}"
    );
}
