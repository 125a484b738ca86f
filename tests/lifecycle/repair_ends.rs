//! How `repair` ends after its run: which findings fail it (docs/commands/repair.md, "Which
//! findings fail a repair"), and a stop during its wait for the node's health. Unix: the node's
//! codes are read as `node_health` reads them, and the stop is a signal.
#![cfg(unix)]

use crate::node_health::{broken, codes_of};
use crate::support::Node;
use serde_json::{Value, json};

/// Felix's own metrics rule, open to every address (`felix-metrics-rule`).
fn felix_rule_open(node: &Node) {
    let felix_rule = "Calico Prometheus Ports (calico-managed rule)";
    node.edit_state(|s| {
        s["firewall"][felix_rule.to_ascii_lowercase()] = json!({
            "name": felix_rule, "protocol": "tcp", "local_port": 9091, "allow": true,
            "enabled": true, "profiles": 2147483647u32
        });
    });
}

/// A finding repair does not mend, there before it ran (an address that differs between the
/// layers), fails a repair that changed something (exit 1, each named with its fix), and
/// Felix's leftover metrics rule, no problem of the node, does not; a run with nothing to
/// repair judges nothing more and exits 0.
#[test]
fn a_finding_repair_does_not_mend_fails_its_run_and_not_a_run_with_nothing_to_do() {
    let node = broken();
    let path = "/api/v1/nodes/win-1";
    let mut n = node.api().get(path).expect("node");
    n["metadata"]["annotations"] = json!({"projectcalico.org/IPv4Address": "10.0.0.6/24"});
    node.api().put(path, n);
    felix_rule_open(&node);

    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 1, "{err} {doc}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert_eq!(codes_of(&doc), ["address-mismatch"], "{doc}");
    for f in doc["findings"].as_array().expect("findings") {
        assert!(f["remedy"].as_str().is_some_and(|r| !r.is_empty()), "{f}");
    }

    let (code, doc, err) = node.run(&["repair"]);
    assert_eq!(code, 0, "{err} {doc}");
    assert_eq!(doc["changed"], false, "{doc}");
    assert!(doc.get("findings").is_none(), "{doc}");
}

/// Records the endpoint `name` as at fault since `secs` ago, beside the faults recorded.
fn seen_since(node: &Node, name: &str, secs: i64) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs() as i64;
    node.edit_state(|state| {
        let id = crate::support::items(state, "endpoints")
            .find(|e| e["name"] == name)
            .and_then(|e| e["id"].as_str())
            .expect("the endpoint")
            .to_ascii_lowercase();
        let value = &mut state["registry"][r"hklm\software\tigera\calico"]["endpointfaults"];
        let mut seen: serde_json::Map<String, Value> =
            serde_json::from_str(value["data"].as_str().expect("the record")).expect("JSON");
        seen.insert(id, json!(now - secs));
        value["data"] = json!(Value::Object(seen).to_string());
    });
}

/// A stop (SIGTERM, as Ctrl-C) during the wait for the node's health after the run ends the
/// wait: the document says what was done (`changed`, the actions), that it was stopped
/// (`interrupted`) and what the last look found at fault, and the exit code is 1, as a stopped
/// reconfigure's. The wait has a fault to wait on: a stale endpoint seen 45 s before the
/// plan, not yet past the 60 s grace then (so not repaired), past it when the run ends, held
/// until then by a disruption budget refusing the eviction the plan begins with.
#[test]
fn a_stop_during_the_wait_after_the_run_prints_what_was_done_and_exits_1() {
    let node = broken();
    node.add_endpoints(&[("late_Calico", "10.244.1.60", 3, false)]);
    let seen = std::time::Instant::now();
    seen_since(&node, "late_Calico", 45);
    {
        let mut st = node.api().lock();
        st.eviction_blocked.insert("default/web-1".to_owned());
        st.pdb_retry_after = 1;
    }
    let log = node.dir.path().join("repair.log");
    let log_file = log.display().to_string();
    let args = ["repair", "--grace", "60s", "--wait-timeout", "10m"];
    let mut child = node.spawn(&[&args[..], &["--log-file", &log_file]].concat(), true);
    // The plan is made once the eviction is asked for; the budget lets it go once the stale
    // endpoint has been at fault past the grace period.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while node.api().lock().evictions.is_empty()
        || seen.elapsed() < std::time::Duration::from_secs(16)
    {
        assert!(
            std::time::Instant::now() < deadline && child.try_wait().expect("wait").is_none(),
            "repair never asked for the eviction"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    node.api().lock().eviction_blocked.clear();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while !fs_err::read_to_string(&log)
        .unwrap_or_default()
        .contains("still at fault; looking again")
    {
        assert!(
            std::time::Instant::now() < deadline && child.try_wait().expect("wait").is_none(),
            "repair never waited on a fault: {}",
            fs_err::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(child.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .expect("SIGTERM");
    let out = child.wait_with_output().expect("ends");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    let doc = crate::support::json(&out.stdout);
    assert_eq!(doc["interrupted"], true, "{doc}");
    assert_eq!(doc["changed"], true, "{doc}");
    assert!(
        doc["actions"].as_array().is_some_and(|a| !a.is_empty()),
        "{doc}"
    );
    let remaining: Vec<&str> = crate::support::items(&doc, "remaining")
        .filter_map(|e| e["name"].as_str())
        .collect();
    assert_eq!(remaining, ["late_Calico"], "{doc}");
    assert!(!doc["actions"].to_string().contains("late_Calico"), "{doc}");
    assert!(
        err.contains(
            "stopped (Ctrl-C or a termination signal) while waiting for the repaired endpoints"
        ),
        "{err}"
    );
}
