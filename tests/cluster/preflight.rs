//! `preflight` through the binary, on every simulated host profile.

use crate::support::{json, on_node};
use std::collections::BTreeMap;

/// Runs preflight on a fresh simulated host of `profile`; returns the exit code, each check's
/// verdict, and the document.
fn preflight(profile: &str, extra: &[&str]) -> (i32, BTreeMap<String, String>, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = dir.path().join("host");
    let out = on_node()
        .args([
            "preflight",
            "-o",
            "json",
            "--sim-profile",
            profile,
            "--sim-host",
        ])
        .arg(&sim)
        .args(extra)
        .output()
        .expect("run");
    let doc = json(&out.stdout);
    let verdicts = crate::support::items(&doc, "checks")
        .map(|c| {
            for key in ["id", "verdict", "message", "remedy"] {
                assert!(c.get(key).is_some(), "check without {key}: {c}");
            }
            (
                c["id"].as_str().expect("id").to_owned(),
                c["verdict"].as_str().expect("verdict").to_owned(),
            )
        })
        .collect();
    (out.status.code().expect("exit code"), verdicts, doc)
}

/// Runs preflight on a simulated host of `profile` whose state `edit` changed first; returns
/// the `adapter` and `default-routes` checks.
fn preflight_edited(
    profile: &str,
    edit: impl FnOnce(&mut serde_json::Value),
) -> (serde_json::Value, serde_json::Value) {
    let dir = tempfile::tempdir().expect("tempdir");
    let sim = dir.path().join("host");
    let run = || {
        let out = on_node()
            .args([
                "preflight",
                "-o",
                "json",
                "--offline",
                "--sim-profile",
                profile,
                "--sim-host",
            ])
            .arg(&sim)
            .output()
            .expect("run");
        json(&out.stdout)
    };
    run();
    let path = sim.join("state.json");
    let mut state: serde_json::Value =
        serde_json::from_str(&fs_err::read_to_string(&path).expect("state")).expect("json");
    edit(&mut state);
    fs_err::write(&path, state.to_string()).expect("write");
    let doc = run();
    let check = |id: &str| {
        crate::support::items(&doc, "checks")
            .find(|c| c["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no {id} check: {doc}"))
    };
    (check("adapter"), check("default-routes"))
}

/// Ethernet, described as Windows describes an LBFO team's adapter.
fn lbfo(state: &mut serde_json::Value) {
    state["adapters"][0]["description"] = "Microsoft Network Adapter Multiplexor Driver".into();
}

#[test]
fn an_lbfo_team_fails_from_server_2022_on_and_warns_on_2019() {
    let (adapter, _) = preflight_edited("ws2022", lbfo);
    assert_eq!(adapter["verdict"], "fail", "{adapter}");
    assert!(
        adapter["remedy"]
            .as_str()
            .is_some_and(|r| r.contains("Switch Embedded Teaming")),
        "{adapter}"
    );
    let (adapter, _) = preflight_edited("ws2019", lbfo);
    assert_eq!(adapter["verdict"], "warn", "{adapter}");
}

#[test]
fn another_vswitchs_adapter_holding_the_node_ip_fails_naming_it() {
    // The address is on a vEthernet adapter of a vSwitch no HNS network of ours is on.
    let (adapter, _) = preflight_edited("ws2022", |s| {
        s["interfaces"][0]["interface"] = "vEthernet (Ethernet)".into();
        s["interfaces"][0]["index"] = 9.into();
        s["routes"][0]["interface_index"] = 9.into();
        let mut vnic = s["adapters"][0].clone();
        vnic["name"] = "vEthernet (Ethernet)".into();
        vnic["index"] = 9.into();
        vnic["description"] = "Hyper-V Virtual Ethernet Adapter".into();
        s["adapters"].as_array_mut().expect("adapters").push(vnic);
        // kubelet names the node IP, as on a node where the cluster is not read.
        let kubelet = s["services"]["kubelet"]["command_line"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        s["services"]["kubelet"]["command_line"] = format!("{kubelet} --node-ip=10.0.0.5").into();
    });
    assert_eq!(adapter["verdict"], "fail", "{adapter}");
    let said = adapter["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("vEthernet (Ethernet) holds 10.0.0.5 (kubelet's --node-ip) but is the host adapter of a vSwitch calicoctl-win did not make"),
        "{said}"
    );
}

#[test]
fn two_default_routes_that_tie_are_a_warning() {
    let (adapter, routes) = preflight_edited("ws2022-two-nics", |s| {
        // Ethernet 2 gets a default route of the same summed metric as Ethernet's.
        let mut r = s["routes"][0].clone();
        r["interface_index"] = 6.into();
        s["routes"].as_array_mut().expect("routes").push(r);
    });
    assert_eq!(routes["verdict"], "warn", "{routes}");
    assert!(
        routes["message"]
            .as_str()
            .is_some_and(|m| m.contains("Ethernet 2")),
        "{routes}"
    );
    // The adapter is still chosen by the node IP.
    assert_eq!(adapter["verdict"], "pass", "{adapter}");
}

fn failed(verdicts: &BTreeMap<String, String>) -> Vec<&str> {
    verdicts
        .iter()
        .filter(|(_, v)| *v == "fail")
        .map(|(k, _)| k.as_str())
        .collect()
}

#[test]
fn every_profile_gets_the_right_verdicts() {
    let cases: &[(&str, &[&str])] = &[
        ("ws2019", &[]),
        ("ws2019-unpatched", &["os-build"]),
        ("ws20h2", &[]),
        ("ws2022", &[]),
        // A warning, not a failure: Calico does not support Server 2025 yet.
        ("ws2025", &[]),
        // The runtime is the host's (docker here), so the check passes without a setting.
        ("ws2022-docker", &[]),
        ("ws2022-no-hns", &["hns"]),
        ("ws2022-flannel", &["foreign-cni"]),
        // Calico's scripts made C:\CalicoWindows under C:\, where every user may change it.
        ("ws2022-legacy-calico", &["dir-access", "foreign-cni"]),
        // kubelet's --node-ip is on Ethernet 2, which is chosen: nothing fails.
        ("ws2022-two-nics", &[]),
    ];
    for (profile, fails) in cases {
        let (code, verdicts, doc) = preflight(profile, &[]);
        assert_eq!(failed(&verdicts), *fails, "{profile}: {doc}");
        assert_eq!(code, if fails.is_empty() { 0 } else { 3 }, "{profile}");
        assert_eq!(verdicts.len(), 30, "{profile}");
        assert_eq!(doc["host"]["kind"]["profile"], *profile);
        assert_eq!(doc["blocking"].as_array().map(Vec::len), Some(fails.len()));
    }
}

#[test]
fn docker_hosts_pass_when_the_config_says_docker() {
    let (code, verdicts, _) = preflight("ws2022-docker", &["--set", "container_runtime=docker"]);
    assert_eq!(code, 0);
    assert_eq!(verdicts["container-runtime"], "pass");
    assert_eq!(verdicts["cni-dirs"], "skip");
}

#[test]
fn a_known_failure_can_be_accepted_with_skip() {
    let (code, verdicts, doc) = preflight("ws2022-no-hns", &["--skip", "hns"]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(verdicts["hns"], "skip");
    let hns = doc["checks"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["id"] == "hns"))
        .expect("hns");
    assert!(
        hns["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("accepted with --skip hns")),
        "{hns}"
    );
}

#[test]
fn an_unknown_skip_id_is_bad_usage() {
    let out = crate::support::exits(on_node().args(["preflight", "--skip", "hsn"]), 2);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("--skip hsn") && err.contains("os-build"),
        "{err}"
    );
}

#[test]
fn a_failure_prints_the_table_with_remedies_and_exits_3() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::exits(
        on_node()
            .args(["preflight", "--sim-profile", "ws2022-flannel", "--sim-host"])
            .arg(dir.path()),
        3,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("FAIL  foreign-cni"), "{stdout}");
    assert!(stdout.contains("fix: Stop-Service flanneld"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error: preflight failed: foreign-cni"),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint:") && stderr.contains("--skip ID"),
        "{stderr}"
    );
}

#[test]
fn in_json_mode_a_failure_still_prints_exactly_one_document() {
    let (code, _, doc) = preflight("ws2019-unpatched", &[]);
    assert_eq!(code, 3);
    assert!(doc.get("error").is_none(), "{doc}");
}

#[cfg(not(windows))]
#[test]
fn off_windows_without_sim_host_a_throw_away_ws2022_host_is_used_and_named() {
    let out = crate::support::exits(on_node().args(["preflight", "-o", "json"]), 0);
    let doc = json(&out.stdout);
    assert_eq!(doc["host"]["kind"]["kind"], "in-memory");
    assert_eq!(doc["host"]["kind"]["profile"], "ws2022");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("note: this machine is not Windows"), "{err}");
}

#[test]
fn a_simulated_host_keeps_its_profile_and_refuses_another() {
    let dir = tempfile::tempdir().expect("tempdir");
    let run = |profile: Option<&str>| {
        let mut c = on_node();
        c.args(["preflight", "-o", "json", "--sim-host"])
            .arg(dir.path());
        if let Some(p) = profile {
            c.args(["--sim-profile", p]);
        }
        c.output().expect("run")
    };
    assert_eq!(run(Some("ws2019-unpatched")).status.code(), Some(3));
    // Reopened without a profile: still the unpatched host.
    assert_eq!(run(None).status.code(), Some(3));
    let other = run(Some("ws2022"));
    assert_eq!(other.status.code(), Some(2));
    let err = String::from_utf8_lossy(&other.stderr);
    assert!(
        err.contains("ws2019-unpatched") && err.contains("hint:"),
        "{err}"
    );
}

#[test]
fn an_unknown_profile_is_bad_usage_and_lists_the_profiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = crate::support::exits(
        on_node()
            .args(["preflight", "--sim-profile", "ws2016", "--sim-host"])
            .arg(dir.path()),
        2,
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("ws2016") && err.contains("ws2022-legacy-calico"),
        "{err}"
    );
}

#[test]
fn fault_injection_needs_a_simulated_host() {
    on_node()
        .args(["preflight", "--sim-fault", "fail:1"])
        .assert()
        .code(2);
    on_node()
        .args(["preflight", "--sim-fault", "sometimes"])
        .assert()
        .code(2);
}

/// The known-issues check: Windows Server 2025 warns (its ACL policies do not apply); an
/// accepted entry is said and not counted; an id that is no entry is refused.
#[test]
fn known_issues_warn_on_server_2025_and_take_allowed_ids() {
    let (code, verdicts, doc) = preflight("ws2025", &[]);
    assert_eq!(code, 0, "{doc}");
    assert_eq!(verdicts["known-issues"], "warn", "{doc}");
    assert!(doc.to_string().contains("ws2025-acl-policies"), "{doc}");
    let (_, verdicts, _) = preflight("ws2025", &["--allow-known-issue", "ws2025-acl-policies"]);
    assert_eq!(verdicts["known-issues"], "pass");
    let out = on_node()
        .args([
            "preflight",
            "--offline",
            "--allow-known-issue",
            "no-such-entry",
        ])
        .output()
        .expect("run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("no known issue with that id"), "{stderr}");
}
