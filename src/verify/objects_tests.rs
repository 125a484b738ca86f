use super::*;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
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

fn ns(name: &str, owned: bool, created: i64) -> Namespace {
    let mut n = namespace("x");
    n.metadata.name = Some(name.into());
    if !owned {
        n.metadata.labels = None;
    }
    n.metadata.creation_timestamp = Some(Time(jiff::Timestamp::from_second(created).unwrap()));
    n
}

#[test]
fn only_our_old_namespaces_are_leftovers() {
    let found = [
        ns("calicoctl-win-verify-old", true, 1000),
        ns("calicoctl-win-verify-now", true, 9900),
        ns("calicoctl-win-verify-foreign", false, 1000),
        ns("team-a", true, 1000),
    ];
    let names = |l: Vec<&Namespace>| -> Vec<String> {
        l.iter().filter_map(|n| n.metadata.name.clone()).collect()
    };
    assert_eq!(
        names(leftovers(&found, 10_000, 600)),
        ["calicoctl-win-verify-old"]
    );
    let made = serde_json::to_value(namespace("ab12")).unwrap();
    assert_eq!(made["metadata"]["name"], "calicoctl-win-verify-ab12");
    assert_eq!(made["metadata"]["labels"][OWNER_LABEL], OWNER_VALUE);
}

fn owner() -> k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference {
    controller(("v1", "ConfigMap"), "calicoctl-win-verify-run", "uid-1")
}

/// A namespace with a run's lease is judged by it, not by its age: a young one whose lease ran
/// out is a killed run's, an old one whose lease is renewed is a living run's (a long image
/// pull); one without the annotation is judged by its age.
#[test]
fn a_namespace_with_a_lease_is_a_leftover_once_its_lease_ran_out_whatever_its_age() {
    let leased =
        |name: &str, created: i64, expires: i64| leased_until(ns(name, true, created), expires);
    let found = [
        leased("calicoctl-win-verify-killed", 9_900, 9_960),
        leased("calicoctl-win-verify-living", 1_000, 10_050),
        ns("calicoctl-win-verify-undated", true, 9_900),
    ];
    let left: Vec<_> = leftovers(&found, 10_000, 600)
        .iter()
        .filter_map(|n| n.metadata.name.clone())
        .collect();
    assert_eq!(left, ["calicoctl-win-verify-killed"]);
    assert_eq!(
        lease_expires(&found[0]),
        Some(9_960),
        "written as RFC 3339 and read back"
    );
}

/// A namespace being deleted is never deleted again, but one whose lease ran out (a killed
/// run's, or one without a lease older than the age) is looked at for what holds it, a kept
/// one too (someone deleted it); a living run's (its lease ahead) is not.
#[test]
fn terminating_namespaces_whose_lease_ran_out_are_looked_at_not_deleted_again() {
    let deleting = |n: Namespace| {
        let mut n = n;
        n.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::from_second(9_990).unwrap()));
        n
    };
    let leased = |name: &str, expires: i64| deleting(leased_until(ns(name, true, 9_900), expires));
    let found = [
        leased("calicoctl-win-verify-killed", 9_960),
        leased("calicoctl-win-verify-living", 10_050),
        deleting(marked_kept(
            leased_until(ns("calicoctl-win-verify-kept", true, 9_000), 9_100),
            "x",
        )),
        deleting(ns("calicoctl-win-verify-undated", true, 1_000)),
        deleting(ns("calicoctl-win-verify-foreign", false, 1_000)),
        ns("calicoctl-win-verify-old", true, 1_000),
    ];
    let names = |l: Vec<&Namespace>| -> Vec<String> {
        l.iter().filter_map(|n| n.metadata.name.clone()).collect()
    };
    assert_eq!(
        names(terminating_leftovers(&found, 10_000, 600)),
        [
            "calicoctl-win-verify-killed",
            "calicoctl-win-verify-kept",
            "calicoctl-win-verify-undated"
        ]
    );
    assert_eq!(
        names(leftovers(&found, 10_000, 600)),
        ["calicoctl-win-verify-old"]
    );
}
