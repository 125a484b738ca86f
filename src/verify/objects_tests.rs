use super::*;
use serde_json::json;

fn server() -> Placement {
    Placement {
        role: Role::Server,
        node: "win-a".into(),
        os: Os::Windows,
        windows_build: Some("10.0.20348".into()),
    }
}

#[test]
fn a_windows_probe_pod_selects_the_nodes_build_and_is_pinned_by_name() {
    let p = serde_json::to_value(pod(
        "ns1",
        &server(),
        super::super::image::AGNHOST,
        (&owner(), &Names::new("r1", false)),
    ))
    .unwrap();
    let spec = &p["spec"];
    assert_eq!(
        spec["nodeSelector"],
        json!({"kubernetes.io/os": "windows", "node.kubernetes.io/windows-build": "10.0.20348"})
    );
    let term = &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"][0]["matchFields"][0];
    assert_eq!(
        term,
        &json!({"key": "metadata.name", "operator": "In", "values": ["win-a"]})
    );
    let c = &spec["containers"][0];
    assert_eq!(c["image"], "registry.k8s.io/e2e-test-images/agnhost:2.62");
    assert_eq!(
        c["args"],
        json!(["netexec", "--http-port=8080", "--udp-port=8081"])
    );
    assert_eq!(
        c["readinessProbe"]["httpGet"],
        json!({"path": "/healthz", "port": 8080})
    );
    assert_eq!(p["metadata"]["labels"][ROLE_LABEL], "server");
    assert_eq!(p["metadata"]["labels"][RUN_LABEL], "r1");
}

#[test]
fn only_the_server_has_the_readiness_probe_and_linux_pods_select_linux() {
    let mut linux = server();
    linux.role = Role::Linux;
    linux.os = Os::Linux;
    linux.windows_build = None;
    let run = Names::new("r1", false);
    let p = serde_json::to_value(pod("ns1", &linux, "m/agnhost:1", (&owner(), &run))).unwrap();
    assert_eq!(
        p["spec"]["nodeSelector"],
        json!({"kubernetes.io/os": "linux"})
    );
    assert!(p["spec"]["containers"][0].get("readinessProbe").is_none());
    assert_eq!(p["metadata"]["name"], "client-linux");
}

/// In a namespace given, the Service and the policy are the run's own by name and select
/// only its own server (another run's goes on beside it).
#[test]
fn the_service_and_the_policy_select_the_runs_own_server() {
    let run = Names::new("r1", true);
    let s = serde_json::to_value(service("ns1", &run)).unwrap();
    assert_eq!(s["metadata"]["name"], "server-r1");
    let own = json!({ROLE_LABEL: "server", RUN_LABEL: "r1"});
    assert_eq!(s["spec"]["selector"], own);
    assert_eq!(s["spec"]["ports"][0]["port"], 80);
    assert_eq!(s["spec"]["ports"][0]["targetPort"], 8080);
    let n = serde_json::to_value(deny_server_ingress("ns1", &run)).unwrap();
    assert_eq!(n["metadata"]["name"], "deny-server-ingress-r1");
    assert_eq!(n["spec"]["podSelector"]["matchLabels"], own);
    assert_eq!(n["spec"]["policyTypes"], json!(["Ingress"]));
    assert!(
        n["spec"].get("ingress").is_none(),
        "no rule: every ingress is denied"
    );
}

#[test]
fn the_namespace_is_named_and_labelled_as_ours() {
    let made = serde_json::to_value(namespace("ab12")).unwrap();
    assert_eq!(made["metadata"]["name"], "calicoctl-win-verify-ab12");
    assert_eq!(made["metadata"]["labels"][OWNER_LABEL], OWNER_VALUE);
}

fn owner() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
    controller(
        ("coordination.k8s.io/v1", "Lease"),
        "calicoctl-win-verify-t1",
        "uid-1",
    )
}
