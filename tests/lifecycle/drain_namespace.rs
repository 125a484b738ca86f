//! A drain that meets a namespace being deleted, answered as `kubectl drain` answers it
//! (kubernetes `staging/src/k8s.io/kubectl/pkg/drain/drain.go`, `evictPods`): the eviction's
//! 403 with the cause `NamespaceTerminating` (the NamespaceLifecycle admission's, modelled in
//! the fake API server) is no failure.

use crate::support::Node;
use crate::support::fake_api::{Scripted, State};
use serde_json::json;

/// `reconfigure --drain` to VNI 4097 with this drain timeout: its exit code and stderr.
fn drain_to_4097(n: &Node, timeout: &str) -> (i32, String) {
    let args = [
        "--set",
        "vxlan.vni=4097",
        "--drain",
        "--drain-timeout",
        timeout,
    ];
    let (code, _, err) = n.run(&[&["reconfigure"][..], &args].concat());
    (code, err)
}

/// win-1, Ready, with a pod in `default` and two in `doomed`, a namespace being deleted: `old`
/// already being deleted by the namespace controller, `late` not yet.
fn installed() -> Node {
    let b = Node::healthy();
    let api = b.api();
    api.set_node_ready("win-1", "True", "kubelet is posting ready status");
    api.put_pod("default", "web-1", "win-1", Some("ReplicaSet"));
    api.put_pod("doomed", "old", "win-1", Some("ReplicaSet"));
    api.put_pod("doomed", "late", "win-1", Some("ReplicaSet"));
    let at = "2026-01-01T00:00:00Z";
    api.put(
        "/api/v1/namespaces/doomed",
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "doomed", "uid": "ns-doomed", "deletionTimestamp": at},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Terminating"}}),
    );
    let path = "/api/v1/namespaces/doomed/pods/old";
    let mut old = api.get(path).expect("pod");
    old["metadata"]["deletionTimestamp"] = json!(at);
    api.put(path, old);
    let n = b.installed().build();
    n.api().set_felix_vni(4097);
    n
}

/// The namespace `doomed` is gone, its pods with it: a scripted event of the fake API
/// server's (`FakeApi::when`), at one of the drain's own requests.
fn doomed_goes(st: &mut State) {
    st.objects.retain(|p, _| !p.contains("/namespaces/doomed"));
}

fn asked(n: &Node, pod: &str) -> usize {
    let end = format!("/namespaces/doomed/pods/{pod}/eviction");
    let requests = n.api().requests();
    requests
        .iter()
        .filter(|(m, p)| m == "POST" && p.ends_with(&end))
        .count()
}

/// The pod already being deleted is waited for, not asked again; the one not yet being
/// deleted is asked again (kubectl's 5 s) until the eviction is answered otherwise (404 once
/// the namespace is gone). The drain then goes on.
#[test]
fn pods_in_a_namespace_being_deleted_are_waited_for_as_kubectl_does() {
    let n = installed();
    // The namespace controller and the kubelet finish with both pods, then the namespace
    // goes, before the drain asks again: until then, the admission refuses even a pod that
    // is gone.
    let late = "/api/v1/namespaces/doomed/pods/late/eviction";
    n.api().when_nth(("POST", late, 2), doomed_goes);
    let (code, err) = drain_to_4097(&n, "30s");
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        asked(&n, "old"),
        1,
        "being deleted: waited for, not asked again"
    );
    assert_eq!(
        asked(&n, "late"),
        2,
        "asked again after 5 s, then gone (404)"
    );
    // The drain's own pause (kubectl's 5 s) between the two asks, read from when the fake
    // server saw them: a drain asking again at once would pass the counts above.
    let times: Vec<_> = (n.api().lock().eviction_times.iter())
        .filter(|(p, _)| p.ends_with("/pods/late/eviction"))
        .map(|(_, t)| *t)
        .collect();
    let waited = times[1].duration_since(times[0]);
    assert!(
        waited >= std::time::Duration::from_millis(4500),
        "asked again after {waited:?}, before kubectl's 5 s"
    );
    assert_eq!(n.calico_vsid(), Some(4097));
}

/// The namespace controller marks `late` deleted right after its eviction's first 403: read
/// again, it is waited for as `old` is, not asked again.
#[test]
fn a_pod_marked_deleted_after_its_refusal_is_waited_for_not_asked_again() {
    let n = installed();
    n.api().lock().marks_after_refusal = true;
    // Gone at the drain's next request after it read `late` again (its wait for the pods to
    // leave; kubectl's 5 s to ask again, were it asked again).
    n.api().when("GET", "/api/v1/namespaces/doomed/pods", |st| {
        st.scripted.push(Scripted::on(("", "", 1), doomed_goes));
    });
    let (code, err) = drain_to_4097(&n, "30s");
    assert_eq!(code, 0, "{err}");
    assert_eq!(asked(&n, "old"), 1);
    assert_eq!(
        asked(&n, "late"),
        1,
        "marked since: waited for, not asked again"
    );
    let read = n.api().requests();
    assert!(
        read.iter()
            .any(|(m, p)| m == "GET" && p == "/api/v1/namespaces/doomed/pods"),
        "the refused pod was not read again (listed by its name: the drain's roles grant list, not get): {read:?}"
    );
    assert_eq!(n.calico_vsid(), Some(4097));
}

/// A pod the namespace controller never reaches keeps the drain waiting until its timeout,
/// which says why.
#[test]
fn a_namespace_that_never_deletes_its_pod_ends_the_drain_at_its_timeout() {
    let n = installed();
    let (code, err) = drain_to_4097(&n, "2s");
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("evictions refused in a namespace being deleted, whose pods are not yet deleted: doomed/late"),
        "{err}"
    );
    assert_eq!(n.calico_vsid(), Some(4096), "the network was not deleted");
}
