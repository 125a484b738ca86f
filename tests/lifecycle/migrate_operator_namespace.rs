//! `migrate to-operator` finds the operator where it runs: the namespace of its Deployment
//! (labelled `k8s-app=tigera-operator`, as Calico's manifest and Helm chart make it), where it
//! reads its `kubernetes-services-endpoint` ConfigMap (tigera/operator v1.43.0
//! `common.OperatorNamespace()`), and refuses before any change when it cannot tell.

use crate::migrate::installed_with_pods;
use crate::support::operator::FakeOperator;
use crate::support::snapshot::{assert_same, snapshot};

const DEPLOYMENT: &str = "/apis/apps/v1/namespaces/tigera-operator/deployments/tigera-operator";
const ENDPOINT: &str = "/api/v1/namespaces/tigera-operator/configmaps/kubernetes-services-endpoint";

/// An operator the Helm chart put in its release's namespace, its ConfigMap there too: the
/// node is handed over.
#[test]
fn to_operator_reads_the_operators_settings_in_the_namespace_it_runs_in() {
    let node = installed_with_pods();
    let api = node.api();
    for (from, kind) in [(DEPLOYMENT, "deployments"), (ENDPOINT, "configmaps")] {
        let mut o = api.get(from).expect("object");
        o["metadata"]["namespace"] = "calico-operator".into();
        let name = o["metadata"]["name"].as_str().expect("name").to_owned();
        let group = if kind == "deployments" {
            "/apis/apps/v1"
        } else {
            "/api/v1"
        };
        api.remove(from);
        api.put(
            &format!("{group}/namespaces/calico-operator/{kind}/{name}"),
            o,
        );
    }
    let _operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// No operator Deployment to be found: refused before any change, saying why.
#[test]
fn to_operator_without_a_findable_operator_is_refused_changing_nothing() {
    let node = installed_with_pods();
    let _operator = FakeOperator::start(node.api().state.clone(), "win-1", node.sim());
    node.api().remove(DEPLOYMENT);
    let host = snapshot(&node.sim());
    let writes = node.api().writes().len();
    for dry in [true, false] {
        let mut args = vec!["migrate", "to-operator", "--pod-timeout", "5s"];
        if dry {
            args.push("--dry-run");
        }
        let (code, doc, err) = node.run(&args);
        assert_eq!(code, 3, "dry run {dry}: {err} {doc}");
        assert!(
            err.contains("cannot tell where the operator runs: no Deployment labelled k8s-app=tigera-operator"),
            "{err}"
        );
        assert_same(&host, &snapshot(&node.sim()), "refused");
        assert_eq!(
            node.api().writes()[writes..],
            [],
            "the cluster was written to: {err}"
        );
    }
}

/// A Deployment without the label, where Calico's manifest puts it (`tigera-operator` in
/// `tigera-operator`, the operator's own defaults): that is the operator; the node is handed
/// over.
#[test]
fn to_operator_finds_an_unlabelled_operator_at_its_default_name() {
    let node = installed_with_pods();
    let api = node.api();
    let mut o = api.get(DEPLOYMENT).expect("deployment");
    o["metadata"]["labels"] = serde_json::json!({});
    api.put(DEPLOYMENT, o);
    let _operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "30s"]);
    assert_eq!(code, 0, "{err} {doc}");
}

/// `OPERATOR_NAMESPACE` from a ConfigMap: where the operator reads cannot be told; refused
/// before any change, saying why.
#[test]
fn to_operator_with_an_operator_namespace_from_a_config_map_is_refused_changing_nothing() {
    let node = installed_with_pods();
    let api = node.api();
    let mut o = api.get(DEPLOYMENT).expect("deployment");
    o["spec"]["template"]["spec"]["containers"][0]["env"] = serde_json::json!([{
        "name": "OPERATOR_NAMESPACE",
        "valueFrom": {"configMapKeyRef": {"name": "m", "key": "ns"}}
    }]);
    api.put(DEPLOYMENT, o);
    let _operator = FakeOperator::start(api.state.clone(), "win-1", node.sim());
    let host = snapshot(&node.sim());
    let writes = api.writes().len();
    let (code, doc, err) = node.run(&["migrate", "to-operator", "--pod-timeout", "5s"]);
    assert_eq!(code, 3, "{err} {doc}");
    assert!(err.contains("OPERATOR_NAMESPACE comes from"), "{err}");
    assert_same(&host, &snapshot(&node.sim()), "refused");
    assert_eq!(
        api.writes()[writes..],
        [],
        "the cluster was written to: {err}"
    );
}
