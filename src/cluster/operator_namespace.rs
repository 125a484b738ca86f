//! Where the Tigera operator reads its settings (`common.OperatorNamespace()`, tigera/operator
//! v1.43.0 `pkg/common/operator_namespace.go`): `OPERATOR_NAMESPACE` when set, else its pod's
//! namespace (else `tigera-operator`), which the Helm chart makes any (projectcalico/calico v3.32.1
//! `charts/tigera-operator/templates/tigera-operator/02-tigera-operator.yaml`): so the operator
//! is found by its Deployment, labelled `k8s-app: tigera-operator`.

use super::{Cluster, ClusterError};
use k8s_openapi::api::apps::v1::Deployment;
use kube::api::{Api, ListParams};

/// The label of the operator's Deployment in Calico's manifest and Helm chart.
pub const SELECTOR: &str = "k8s-app=tigera-operator";

/// The operator's namespace as its Deployment says (`Ok`), or why it cannot be told (`Err`:
/// no such Deployment, or several). Without the label, the Deployment Calico's manifest makes
/// (`tigera-operator` in `tigera-operator`, `common.OperatorName()`'s default) is the one.
pub fn locate(c: &Cluster) -> Result<Result<String, String>, ClusterError> {
    let all: Api<Deployment> = Api::all(c.client.clone());
    let lp = ListParams::default().labels(SELECTOR);
    let mut found = c.call("list", "deployments", all.list(&lp))?.items;
    if found.is_empty() {
        // A list of the one name, as migrate's roles grant `list deployments` and not `get`.
        let at: Api<Deployment> = Api::namespaced(c.client.clone(), DEFAULT);
        let lp = ListParams::default().fields(&format!("metadata.name={DEFAULT}"));
        found = c.call("list", "deployments", at.list(&lp))?.items;
    }
    Ok(judge(&found))
}

/// The operator's default namespace and Deployment name (`common.OperatorNamespace()`,
/// `common.OperatorName()`).
const DEFAULT: &str = "tigera-operator";

/// The namespace the operator of these Deployments (one only: two would disagree) reads:
/// `OPERATOR_NAMESPACE` when set at all (`os.LookupEnv`: set empty, the empty namespace;
/// `fieldRef: metadata.namespace`, the pod's; the last of several entries, as Kubernetes
/// gives it), else the Deployment's own namespace.
pub fn judge(found: &[Deployment]) -> Result<String, String> {
    let [one] = found else {
        if found.is_empty() {
            return Err(format!(
                "no Deployment labelled {SELECTOR} in any namespace, and no Deployment {DEFAULT} in {DEFAULT}"
            ));
        }
        let names: Vec<String> = found
            .iter()
            .map(|d| {
                let m = &d.metadata;
                let ns = m.namespace.as_deref().unwrap_or_default();
                format!("{ns}/{}", m.name.as_deref().unwrap_or_default())
            })
            .collect();
        return Err(format!(
            "several Deployments labelled {SELECTOR}: {}",
            names.join(", ")
        ));
    };
    let containers = one
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .map(|s| s.containers.as_slice())
        .unwrap_or_default();
    let own = one.metadata.namespace.as_deref();
    let env = containers
        .iter()
        .flat_map(|c| c.env.iter().flatten())
        .rfind(|e| e.name == "OPERATOR_NAMESPACE");
    let set = match env {
        None => None,
        Some(e) => match (&e.value, &e.value_from) {
            (_, Some(from)) => match from.field_ref.as_ref().map(|f| f.field_path.as_str()) {
                Some("metadata.namespace") => own,
                _ => {
                    return Err(
                        "the operator's OPERATOR_NAMESPACE comes from a source calicoctl-win does not read (only a value, or fieldRef metadata.namespace)".into(),
                    );
                }
            },
            (value, None) => Some(value.as_deref().unwrap_or_default()),
        },
    };
    match set.or(own) {
        Some(ns) => Ok(ns.to_owned()),
        None => Err("the operator's Deployment names no namespace".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deployment(ns: &str, env: Option<&str>) -> Deployment {
        let mut v = serde_json::json!({
            "metadata": {"name": "tigera-operator", "namespace": ns,
                "labels": {"k8s-app": "tigera-operator"}},
            "spec": {"selector": {"matchLabels": {"name": "tigera-operator"}},
                "template": {"spec": {"containers": [{"name": "tigera-operator"}]}}}
        });
        if let Some(value) = env {
            v["spec"]["template"]["spec"]["containers"][0]["env"] =
                serde_json::json!([{"name": "OPERATOR_NAMESPACE", "value": value}]);
        }
        serde_json::from_value(v).expect("deployment")
    }

    /// The Deployment's namespace (a Helm release's), unless OPERATOR_NAMESPACE says another.
    #[test]
    fn the_operators_namespace_is_its_deployments_unless_its_env_says_otherwise() {
        assert_eq!(
            judge(&[deployment("calico-operator", None)]),
            Ok("calico-operator".into())
        );
        assert_eq!(
            judge(&[deployment("x", Some("elsewhere"))]),
            Ok("elsewhere".into())
        );
        // `os.LookupEnv`: set, even empty, it is the namespace.
        assert_eq!(judge(&[deployment("x", Some(""))]), Ok(String::new()));
        assert!(judge(&[]).is_err_and(|e| e.contains("no Deployment")));
        let two = [deployment("a", None), deployment("b", None)];
        assert!(judge(&two).is_err_and(|e| e.contains("a/tigera-operator, b/tigera-operator")));
    }

    /// `OPERATOR_NAMESPACE` from the pod's own namespace is the Deployment's; from anything
    /// else (a ConfigMap, a Secret) it cannot be told, said.
    #[test]
    fn an_operator_namespace_from_the_pods_field_is_its_deployments() {
        let with = |from: serde_json::Value| {
            let mut d = serde_json::to_value(deployment("calico-operator", None)).expect("json");
            d["spec"]["template"]["spec"]["containers"][0]["env"] =
                serde_json::json!([{"name": "OPERATOR_NAMESPACE", "valueFrom": from}]);
            serde_json::from_value::<Deployment>(d).expect("deployment")
        };
        let field = serde_json::json!({"fieldRef": {"fieldPath": "metadata.namespace"}});
        assert_eq!(judge(&[with(field)]), Ok("calico-operator".into()));
        let map = serde_json::json!({"configMapKeyRef": {"name": "m", "key": "ns"}});
        assert!(judge(&[with(map)]).is_err_and(|e| e.contains("OPERATOR_NAMESPACE")));
    }
}
