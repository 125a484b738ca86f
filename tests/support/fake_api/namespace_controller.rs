//! kube-controller-manager's namespace controller, for a namespace being deleted
//! (kubernetes `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`).
//!
//! `Delete` finds the namespace marked (`deletionTimestamp`, phase `Terminating`: kube-apiserver's
//! `REST.Delete`, `pkg/registry/core/namespace/storage/storage.go`) and `deleteAllContent`
//! deletes what is in it with ordinary deletes: `deleteCollection` sends a `DeleteCollection`
//! with only `propagationPolicy: Background` (no grace period), which the pod registry serves
//! as a graceful delete of each pod (`pkg/registry/rest/delete.go`, `BeforeDelete`: the pod
//! marked and kept until its kubelet confirms with grace 0). It then lists what remains
//! (`deleteAllContentForGroupVersionResource`); anything left keeps the namespace
//! `Terminating`, with the condition `NamespaceContentRemaining` True, reason
//! `SomeResourcesRemain`, message `Some resources are remaining: pods. has N resource
//! instances` (`status_condition_utils.go`, `ProcessContentTotals`), and the controller
//! tries again later (`namespace_controller.go`: after the pods' grace estimate, else
//! rate-limited, and at every resync); only when nothing remains does it finalize the
//! namespace, which is then gone.
//!
//! A pod of a node that is not Ready (or gone) stays so: its kubelet never confirms. Pod GC
//! (`pkg/controller/podgc/gc_controller.go`) force-deletes a Terminating pod only when its
//! node carries the `node.kubernetes.io/out-of-service` taint and is not Ready
//! (`gcTerminating`), or when the Node object is gone, after a 40 s quarantine (`gcOrphaned`);
//! neither is modelled here (a node merely NotReady, the common case, gets neither), so a
//! Terminating pod goes only by a delete with grace 0.
//!
//! Everything but the pods goes in the first pass here, as the deleter did before
//! `OrderedNamespaceDeletion` (KEP-5080: beta and on by default from Kubernetes 1.33, locked on
//! in 1.34, as kubernetes/website's feature-gate page says), from which the pods go first and
//! the rest only once no pod remains: verify's clean-up judges only the namespace and its
//! pods, which both orders treat alike; a test that needs the newer order must model it.
//!
//! The controller's later tries are made at once here: the namespace goes in the same request
//! that removes its last content (`finish`), where kube-controller-manager takes from a
//! second to its resync (`--namespace-sync-period`, 5 minutes) to notice.

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
