//! kube-controller-manager's namespace controller for a namespace being deleted (kubernetes
//! v1.33 `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`,
//! `deleteAllContent`): each pod deleted gracefully (kept Terminating while its kubelet does
//! not confirm), everything else removed; the namespace goes once no pod remains, else it
//! says `NamespaceContentRemaining` (`status_condition_utils.go`). Its later passes are made
//! at once here, in the request that removes the last pod.

use super::State;
use serde_json::json;

/// The namespace `ns`, just marked, emptied as the controller's first pass does: each pod
/// deleted gracefully (kept Terminating when `lingers` says so), everything else removed.
pub(super) fn delete_content(st: &mut State, ns: &str, lingers: &dyn Fn(&State, &str) -> bool) {
    let inside = format!("/namespaces/{ns}/");
    let paths: Vec<String> = st
        .objects
        .keys()
        .filter(|p| p.contains(&inside))
        .cloned()
        .collect();
    let at = super::serve::now_text(st.clock_offset_s);
    for p in paths {
        if is_pod(&p) && lingers(st, &p) {
            mark(st, &p, &at);
        } else {
            st.objects.remove(&p);
        }
    }
    finish(st, ns);
}

/// A pod's graceful delete as kube-apiserver serves it: `deletionTimestamp` and
/// `deletionGracePeriodSeconds` set once, the pod kept.
pub(super) fn mark(st: &mut State, path: &str, at: &str) {
    let Some(pod) = st.objects.get_mut(path) else {
        return;
    };
    if !pod["metadata"]["deletionTimestamp"].is_string() {
        pod["metadata"]["deletionTimestamp"] = json!(at);
        pod["metadata"]["deletionGracePeriodSeconds"] =
            pod["spec"]["terminationGracePeriodSeconds"].clone();
        super::serve::bump(pod);
    }
}

/// The controller's next pass over `ns`, if it is being deleted: gone once nothing is left in
/// it (unless `namespaces_linger`: a finalizer that is not done), else `NamespaceContentRemaining`.
pub(super) fn finish(st: &mut State, ns: &str) {
    let path = format!("/api/v1/namespaces/{ns}");
    if !st
        .objects
        .get(&path)
        .is_some_and(|n| n["metadata"]["deletionTimestamp"].is_string())
    {
        return;
    }
    let inside = format!("/namespaces/{ns}/");
    let pods = st
        .objects
        .keys()
        .filter(|p| p.contains(&inside) && is_pod(p))
        .count();
    if pods == 0 {
        if !st.dataplane.namespaces_linger {
            st.objects.remove(&path);
        }
        return;
    }
    let at = super::serve::now_text(st.clock_offset_s);
    let message = format!("Some resources are remaining: pods. has {pods} resource instances");
    let Some(n) = st.objects.get_mut(&path) else {
        return;
    };
    let said = n["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "NamespaceContentRemaining" && c["message"] == message)
    });
    if said {
        return;
    }
    n["status"]["conditions"] = json!([{"type": "NamespaceContentRemaining", "status": "True",
        "lastTransitionTime": at, "reason": "SomeResourcesRemain", "message": message}]);
    super::serve::bump(n);
}

/// Whether `path` is a pod's (`/api/v1/namespaces/NS/pods/NAME`).
fn is_pod(path: &str) -> bool {
    path.starts_with("/api/v1/namespaces/")
        && path.rsplit('/').nth(1).is_some_and(|kind| kind == "pods")
}
