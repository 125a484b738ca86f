//! How `making::ensure` sends a create of the grant's Role or RoleBinding: with the deadline
//! it asks the server for, sent again after a 429, and what a failed one may have left.

use crate::cluster::ClusterError;
use crate::duration::{Look, Pauses, poll_quietly};
use serde::Serialize;

/// The create of `obj` with the `timeout` query parameter (kube's `PostParams` has none), so a
/// create whose answer was lost stops committing within `SETTLE_WITHIN` (k8s.io/apiserver
/// pkg/endpoints/filters/request_deadline.go `withRequestDeadline`).
pub(super) async fn create_within<K>(client: &kube::Client, obj: &K) -> Result<K, kube::Error>
where
    K: kube::Resource<DynamicType = ()> + Serialize + serde::de::DeserializeOwned,
{
    let path = K::url_path(&(), obj.meta().namespace.as_deref());
    let body = serde_json::to_vec(obj).map_err(kube::Error::SerdeError)?;
    let req = http::Request::post(format!("{path}?timeout={}s", CREATE_TIMEOUT.as_secs()))
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(body)
        .map_err(kube::Error::HttpError)?;
    client.request::<K>(req).await
}

/// The server's deadline asked for each create: the client's own bound on a call.
pub(super) const CREATE_TIMEOUT: std::time::Duration = crate::cluster::CALL_TIMEOUT;

/// The create, sent again a second apart after a 429 for at most `THROTTLED_FOR`: API Priority
/// and Fairness refuses before the handler, so nothing was written (k8s.io/apiserver
/// `pkg/server/filters/priority-and-fairness.go`); kube's own retries are off for it.
pub(super) fn throttled<T>(
    create: impl Fn() -> Result<T, ClusterError>,
) -> Result<T, ClusterError> {
    let deadline = std::time::Instant::now() + THROTTLED_FOR;
    let pauses = Pauses::every(std::time::Duration::from_secs(1));
    let look = || match create() {
        Err(e @ ClusterError::Api { code: 429, .. }) => Ok(Look::Pending(e)),
        answer => answer.map(Look::Done),
    };
    poll_quietly(deadline, pauses, look, Err)
}

/// How long a create refused with 429 is asked again.
const THROTTLED_FOR: std::time::Duration = std::time::Duration::from_secs(10);

/// Whether a refused or unanswered create may have left the object there: another's (409),
/// or ours, committed before its answer was lost (a 504 past the deadline while the write goes
/// on; a 5xx or a timeout says nothing of whether it committed).
pub(super) fn may_be_there(e: &ClusterError) -> bool {
    match e {
        ClusterError::Api { code, .. } => *code == 409 || *code >= 500,
        ClusterError::Timeout { .. } | ClusterError::Unreachable { .. } => true,
        _ => false,
    }
}
