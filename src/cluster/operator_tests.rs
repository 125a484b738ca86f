use super::*;

fn pod(name: &str, ns: &str, owner: &str, phase: &str, ready: bool) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": ns,
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": owner,
                "uid": "u", "controller": true}]},
        "status": {"phase": phase, "conditions": [
            {"type": "Ready", "status": if ready { "True" } else { "False" }}]}}))
    .expect("pod")
}

#[test]
fn the_operator_pod_is_told_from_others() {
    let other = pod("kube-proxy-x", "kube-system", "kube-proxy", "Running", true);
    let ours_elsewhere = pod("calico-node-windows-x", "other", DAEMONSET, "Running", true);
    assert_eq!(pod_state(&[other.clone(), ours_elsewhere]), PodState::Gone);
    let ours = |ready| {
        pod(
            "calico-node-windows-a",
            NAMESPACE,
            DAEMONSET,
            "Running",
            ready,
        )
    };
    let starting = pod_state(&[other.clone(), ours(false)]);
    assert!(matches!(starting, PodState::Starting(_)), "{starting:?}");
    let ready = ours(true);
    assert_eq!(
        pod_state(&[other, ready.clone()]),
        PodState::Ready("calico-node-windows-a".into())
    );
    let mut leaving = ready;
    leaving.metadata.deletion_timestamp = Some(
        k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(jiff::Timestamp::UNIX_EPOCH),
    );
    assert!(matches!(pod_state(&[leaving]), PodState::Terminating(_)));
}
