//! Opt-in metrics on the simulated host: a firewall rule per metrics port, scoped to the
//! configured sources, kept in the install record, changed with the range and removed by
//! uninstall.

use crate::support::Node;
use serde_json::{Value, json};

/// The simulated host's metrics rules: (name, port, remote addresses), by name.
fn metrics_rules(s: &Node) -> Vec<(String, u64, Value)> {
    let state = s.state();
    let mut out: Vec<_> = state["firewall"]
        .as_object()
        .expect("firewall")
        .values()
        .filter(|r| r["name"].as_str().is_some_and(|n| n.starts_with("Calico metrics")))
        .map(|r| {
            (
                r["name"].as_str().unwrap_or_default().to_owned(),
                r["local_port"].as_u64().unwrap_or_default(),
                r["remote_addresses"].clone(),
            )
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

#[test]
fn metrics_ports_open_only_to_the_source_range_and_uninstall_closes_them() {
    let s = Node::healthy().created().serving("3.30.2", "calico-node.exe").build();
    let on = ["--set", "metrics.enabled=true", "--set", "metrics.source_ranges=10.0.0.0/8"];
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    let scoped = json!(["10.0.0.0/8"]);
    assert_eq!(
        metrics_rules(&s),
        [
            ("Calico metrics Felix TCP 9091".to_owned(), 9091, scoped.clone()),
            ("Calico metrics calicoctl-win TCP 9095".to_owned(), 9095, scoped),
        ]
    );
    let record: Value = serde_json::from_slice(
        &fs_err::read(s.c_drive("calicowindows/calicoctl-win-install.json")).expect("record"),
    )
    .expect("record json");
    assert_eq!(record["metrics_rules"].as_array().map(Vec::len), Some(2));
    let env = fs_err::read_to_string(s.c_drive("calicowindows/calico-felix.env")).expect("env");
    assert!(env.contains("FELIX_PROMETHEUSMETRICSPORT=9091"), "{env}");

    // Another range: the rules follow it.
    let wider = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8,192.168.0.0/16",
    ];
    let (code, _, stderr) = s.install(&wider);
    assert_eq!(code, 0, "{stderr}");
    let both = json!(["10.0.0.0/8", "192.168.0.0/16"]);
    assert!(metrics_rules(&s).iter().all(|r| r.2 == both), "{:?}", metrics_rules(&s));

    // Metrics off: the rules go; on again, they come back; uninstall removes them.
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s), []);
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s).len(), 2);
    let (code, _, stderr) = s.uninstall(&[]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(metrics_rules(&s), []);
}
