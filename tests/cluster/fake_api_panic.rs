//! The fake API server itself: a panic in one of its handlers (a test's set-up it cannot
//! apply) is answered as a 500 naming the request and the panic, once; the server and its
//! state stay usable, so the test fails with that message, not with a PoisonError at every
//! later request.

use crate::support::fake_api::{FakeApi, meta};
use calicoctl_win::cluster::ClusterError;
use k8s_openapi::api::core::v1::Namespace;
use kube::Api;
use serde_json::json;

#[test]
fn a_handler_panic_is_answered_once_by_name_and_the_server_goes_on() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    api.put("/api/v1/namespaces/a", meta("v1", "Namespace", "a", None));
    // `mergeOnto` an object that is not there: the delete handler panics holding the state.
    api.lock().written_before_delete.insert(
        "/api/v1/namespaces/a".into(),
        vec![(
            "/api/v1/namespaces/missing".into(),
            json!({"mergeOnto": {"data": {"k": "v"}}}),
        )],
    );
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let c = crate::support::connect(&kubeconfig);
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let err = c
        .call(
            "delete",
            "namespaces/a",
            namespaces.delete("a", &Default::default()),
        )
        .expect_err("the handler panicked");
    let ClusterError::Api { code, message, .. } = &err else {
        panic!("{err:?}")
    };
    assert_eq!(*code, 500, "{err}");
    assert!(message.contains("DELETE /api/v1/namespaces/a"), "{err}");
    assert!(
        message.contains("mergeOnto: no object at /api/v1/namespaces/missing to update"),
        "{err}"
    );
    // Later requests are answered from the state as the panic left it.
    let a = c
        .call("get", "namespaces/a", namespaces.get("a"))
        .expect("answered after the panic");
    assert_eq!(a.metadata.name.as_deref(), Some("a"));
    // Taken: the server's drop fails a test whose handlers panicked (this one means to).
    let panics = std::mem::take(&mut api.lock().panics);
    assert_eq!(panics.len(), 1, "{panics:?}");
    assert!(panics[0].contains("mergeOnto"), "{panics:?}");
}

/// A panic while the server stalls (provoked by its knob `panic_while_stalled`, as a fault
/// there would panic) is answered and recorded as a handler's is: the server's drop fails the
/// test.
#[test]
fn a_panic_while_the_server_stalls_is_recorded() {
    let api = FakeApi::start();
    let dir = tempfile::tempdir().expect("tempdir");
    let kubeconfig = api.kubeconfig(dir.path(), None);
    let c = crate::support::connect(&kubeconfig);
    {
        let mut st = api.lock();
        st.stalled = true;
        st.panic_while_stalled = true;
    }
    let namespaces: Api<Namespace> = Api::all(c.client.clone());
    let err = c
        .call("get", "namespaces/a", namespaces.get("a"))
        .expect_err("the stalled path panicked");
    let panics = std::mem::take(&mut api.lock().panics);
    assert_eq!(panics.len(), 1, "{panics:?} {err}");
    assert!(panics[0].contains("GET /api/v1/namespaces/a"), "{panics:?}");
    assert!(err.to_string().contains("panicked"), "{err}");
}
