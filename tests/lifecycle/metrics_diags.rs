//! `metrics.diags`: CalicoNode is told to answer `GET /diags` on its metrics port only when it is
//! set, and it is refused without the metrics endpoint it is served on; `metrics.enabled` turns
//! Felix's Prometheus endpoint on in the environment CalicoFelix is started with.

use crate::support::Node;

fn node_command_line(s: &Node) -> String {
    s.state()["services"]["caliconode"]["command_line"]
        .as_str()
        .expect("CalicoNode")
        .to_owned()
}

#[test]
fn metrics_diags_makes_calico_node_serve_diags_and_needs_metrics_on() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let (code, _, stderr) = s.install(&["--set", "metrics.diags=true"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("metrics.diags"), "{stderr}");
    let on = [
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ];
    let (code, _, stderr) = s.install(&on);
    assert_eq!(code, 0, "{stderr}");
    assert!(!node_command_line(&s).contains("--diags"));
    let (code, _, stderr) = s.install(&[&on[..], &["--set", "metrics.diags=true"]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        node_command_line(&s).contains("--metrics-port 9095 --diags"),
        "{}",
        node_command_line(&s)
    );
    assert!(!node_command_line(&s).contains("--diags-namespace"));
    // The namespace whose calicoctl-win-diags tokens it takes, when not the default.
    let elsewhere = ["--set", "metrics.diags_namespace=fleet"];
    let (code, _, stderr) =
        s.install(&[&on[..], &["--set", "metrics.diags=true"], &elsewhere[..]].concat());
    assert_eq!(code, 0, "{stderr}");
    assert!(
        node_command_line(&s).contains("--diags --diags-namespace fleet"),
        "{}",
        node_command_line(&s)
    );
    let (code, _, stderr) =
        s.install(&[&on[..], &["--set", "metrics.diags_namespace=Not_A_Label"]].concat());
    assert_eq!(code, 2, "{stderr}");
}

/// Felix's Prometheus settings in the CalicoFelix environment install wrote: on with
/// `metrics.enabled` (Felix's config parameters `PrometheusMetricsEnabled` and
/// `PrometheusMetricsPort`, as `FELIX_` variables: calico v3.32.1
/// `felix/config/config_params.go`); without it neither is rendered (Calico's scripts set none).
#[test]
fn metrics_enabled_turns_felix_prometheus_on_in_its_environment() {
    let s = Node::healthy()
        .created()
        .serving("3.30.2", "calico-node.exe")
        .build();
    let felix_env = |s: &Node| {
        fs_err::read_to_string(s.c_drive("calicowindows/calico-felix.env")).expect("env")
    };
    let has = |env: &str, line: &str| env.lines().any(|l| l.trim_end() == line);
    let (code, _, stderr) = s.install(&[]);
    assert_eq!(code, 0, "{stderr}");
    let env = felix_env(&s);
    // Off leaves Felix's Prometheus to the cluster, as Calico's scripts do.
    assert!(!env.contains("FELIX_PROMETHEUS"), "{env}");
    assert!(!env.contains("FELIX_WINDOWSMANAGEFIREWALLRULES"), "{env}");
    let (code, _, stderr) = s.install(&[
        "--set",
        "metrics.enabled=true",
        "--set",
        "metrics.source_ranges=10.0.0.0/8",
    ]);
    assert_eq!(code, 0, "{stderr}");
    let env = felix_env(&s);
    assert!(has(&env, "FELIX_PROMETHEUSMETRICSENABLED=true"), "{env}");
    assert!(has(&env, "FELIX_PROMETHEUSMETRICSPORT=9091"), "{env}");
}
