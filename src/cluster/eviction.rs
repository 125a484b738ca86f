//! The evictions of a drain, answered as `kubectl drain` does (kubernetes
//! `staging/src/k8s.io/kubectl/pkg/drain/drain.go` `evictPods`, at 168c15a3): accepted, gone
//! (404), asked again on a 429 after its `Retry-After` (client-go `rest/with_retry.go`
//! `checkWait`) else kubectl's 5 s, each pod at its own time; in a namespace being deleted (403,
//! cause `NamespaceTerminating`) waited for when already being deleted, else asked again; any
//! other answer ends the drain.

use super::drain::{DrainError, DrainOptions, PodRef, Watch, eviction_body, pod_ref, pods_on};
use super::{Cluster, ClusterError};
use crate::duration::{Look, Pauses, Wait, poll_until};
use crate::k8s_name::NodeName;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// kubectl drain's pause before it asks again after a 429 that reached it, and after a 403
/// `NamespaceTerminating` for a pod not yet being deleted: "will retry after 5s".
pub(super) const KUBECTL_RETRY: Duration = Duration::from_secs(5);

/// The longest `Retry-After` obeyed (kube-apiserver sends 1 s or 10 s): it is added to
/// `Instant`s, which panic past the clock's range; the drain's timeout bounds the wait anyway.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(60);

/// The cause NamespaceLifecycle admission gives the 403 refusing a create (an eviction is one)
/// in a namespace being deleted (k8s.io/api `core/v1` `NamespaceTerminatingCause`).
const NAMESPACE_TERMINATING: &str = "NamespaceTerminating";

/// What became of one eviction request.
#[derive(Debug, PartialEq, Eq)]
enum Evicted {
    Accepted,
    Gone,
    /// 429: asked again `after`. `budget`: a PodDisruptionBudget's refusal (a
    /// `DisruptionBudget` cause); `None` when the server sheds load (API Priority and
    /// Fairness), or the request was held back because it had.
    TooMany {
        budget: Option<String>,
        after: Duration,
    },
    NamespaceTerminating(String),
    /// Another answer: its code and message.
    Failed(u16, String),
}

/// An eviction's answer: a budget's 429 names a `DisruptionBudget` cause (kube-apiserver
/// `pkg/registry/core/pod/storage/eviction.go`); the wait is the `Retry-After` header alone, as
/// client-go reads it.
fn answer(code: u16, retry_after: Option<&str>, body: &[u8]) -> Evicted {
    let status: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let message = status["message"].as_str().unwrap_or_default().to_owned();
    let cause = |reason: &str| {
        status["details"]["causes"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["reason"] == reason)
            .map(|c| c["message"].as_str().unwrap_or_default().to_owned())
    };
    let with = |why: String| {
        if why.is_empty() {
            message.clone()
        } else {
            format!("{message} ({why})")
        }
    };
    match code {
        200..=299 => Evicted::Accepted,
        404 => Evicted::Gone,
        429 => {
            let after = retry_after
                .and_then(|h| h.trim().parse::<u64>().ok())
                .map_or(KUBECTL_RETRY, |s| {
                    Duration::from_secs(s.max(1)).min(MAX_RETRY_AFTER)
                });
            Evicted::TooMany {
                budget: cause("DisruptionBudget").map(with),
                after,
            }
        }
        403 => match cause(NAMESPACE_TERMINATING) {
            Some(_) => Evicted::NamespaceTerminating(message),
            None => Evicted::Failed(code, message),
        },
        _ => Evicted::Failed(code, message),
    }
}

async fn evict_one(
    client: kube::Client,
    pod: PodRef,
    grace: Option<u32>,
    hold: std::sync::Arc<std::sync::Mutex<Option<tokio::time::Instant>>>,
) -> (PodRef, Result<Evicted, kube::Error>) {
    // An overloaded server asked to wait: this request is not sent now.
    let held = hold
        .lock()
        .map(|h| h.map(|until| until.saturating_duration_since(tokio::time::Instant::now())))
        .unwrap_or_default()
        .filter(|left| !left.is_zero());
    if let Some(after) = held {
        return (
            pod,
            Ok(Evicted::TooMany {
                budget: None,
                after,
            }),
        );
    }
    let path = format!(
        "/api/v1/namespaces/{}/pods/{}/eviction",
        pod.namespace, pod.name
    );
    let result = async {
        let body =
            serde_json::to_vec(&eviction_body(&pod, grace)).map_err(kube::Error::SerdeError)?;
        let req = http::Request::post(path)
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(kube::client::Body::from(body))
            .map_err(kube::Error::HttpError)?;
        let resp = client.send(req).await?;
        let code = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(http::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = resp.into_body().collect_bytes().await?;
        Ok(answer(code, retry_after.as_deref(), &bytes))
    }
    .await;
    // An overloaded server sheds this client's flow, not one pod's: the others wait too (ours,
    // not kubectl's, whose goroutines each meet the 429). A budget's refusal is the pod's own.
    if let Ok(Evicted::TooMany {
        budget: None,
        after,
    }) = &result
        && let Ok(mut h) = hold.lock()
    {
        let until = tokio::time::Instant::now() + *after;
        *h = Some(h.map_or(until, |old| old.max(until)));
    }
    (pod, result)
}

/// Sends the evictions of `pods` with at most `limit` in flight (so the client reuses that
/// many connections), stopping new requests while an overloaded server asked to wait.
async fn evict_round(
    client: kube::Client,
    pods: Vec<PodRef>,
    grace: Option<u32>,
    limit: usize,
) -> Result<Vec<(PodRef, Result<Evicted, kube::Error>)>, kube::Error> {
    let hold = std::sync::Arc::new(std::sync::Mutex::new(None));
    let mut queue = pods.into_iter();
    let mut set = tokio::task::JoinSet::new();
    let mut out = Vec::new();
    for pod in queue.by_ref().take(limit.max(1)) {
        set.spawn(evict_one(client.clone(), pod, grace, hold.clone()));
    }
    while let Some(joined) = set.join_next().await {
        // A task that did not finish would leave its pod unaccounted for: stop instead.
        let done = joined.map_err(|e| kube::Error::Service(Box::new(e)))?;
        out.push(done);
        if let Some(pod) = queue.next() {
            set.spawn(evict_one(client.clone(), pod, grace, hold.clone()));
        }
    }
    Ok(out)
}

/// The pods this drain evicted, and those found leaving with their namespace (kubectl waits
/// for both; only the first are ours).
#[derive(Default)]
pub(super) struct Evictions {
    pub evicted: Vec<PodRef>,
    pub leaving: Vec<PodRef>,
}

/// Evicts `pods` and waits until they (and those leaving with their namespace) are gone, all
/// within `opts.timeout`; a stop ends either wait at once. Returns how many were evicted.
pub fn evict_and_wait(
    c: &Cluster,
    node: &NodeName,
    pods: Vec<PodRef>,
    opts: &DrainOptions,
    watch: &mut Watch<'_>,
) -> Result<usize, DrainError> {
    let deadline = Instant::now() + opts.timeout;
    let done = evict_all(c, node, pods, opts, watch)?;
    let left = deadline.saturating_duration_since(Instant::now());
    wait_gone(c, node, &done, opts, (left, watch))?;
    Ok(done.evicted.len())
}

/// The drain's timeout, with what was evicted before it.
fn timed_out(
    node: &NodeName,
    opts: &DrainOptions,
    detail: String,
    evicted: &[PodRef],
) -> DrainError {
    DrainError::Timeout {
        node: node.to_string(),
        after: opts.timeout,
        detail,
        evicted: evicted.to_vec(),
    }
}

/// Waits, for what is `left` of the timeout, until those pods are gone from the node; one of
/// the same name with another uid is a successor, not the one evicted.
fn wait_gone(
    c: &Cluster,
    node: &NodeName,
    done: &Evictions,
    opts: &DrainOptions,
    (left, watch): (Duration, &mut Watch<'_>),
) -> Result<(), DrainError> {
    let evicted = &done.evicted[..];
    let look = || -> Result<Look<(), String>, DrainError> {
        let now: Vec<PodRef> = pods_on(c, node)?.iter().map(pod_ref).collect();
        let left: Vec<String> = evicted
            .iter()
            .chain(&done.leaving)
            .filter(|p| now.iter().any(|n| n.uid == p.uid && n.name == p.name))
            .map(ToString::to_string)
            .collect();
        Ok(if left.is_empty() {
            Look::Done(())
        } else {
            Look::Pending(left.join(", "))
        })
    };
    let count = evicted.len() + done.leaving.len();
    let what = format!("the {count} evicted pod(s) to leave node {node}");
    let wait = Wait {
        what: &what,
        timeout: left,
        pauses: Pauses {
            first: Duration::from_millis(50),
            most: Duration::from_secs(1),
        },
        stop: watch.stop,
        say: &mut *watch.say,
    };
    poll_until(wait, look, |left| {
        let detail = format!("pods still terminating: {left}");
        Err(timed_out(node, opts, detail, evicted))
    })
    .map_err(|e| e.stopped_at(node, evicted))
}

/// Evicts the pods until each is accepted, gone or leaving with its namespace, asking again
/// those refused for now, each at its own time.
pub(super) fn evict_all(
    c: &Cluster,
    node: &NodeName,
    pods: Vec<PodRef>,
    opts: &DrainOptions,
    watch: &mut Watch<'_>,
) -> Result<Evictions, DrainError> {
    let done = std::cell::RefCell::new(Evictions::default());
    let what = format!("the evictions of {} pod(s) from node {node}", pods.len());
    let start = Instant::now();
    let mut pending: Vec<(PodRef, Instant)> = pods.into_iter().map(|p| (p, start)).collect();
    // Why each pod still waits, by pod: its last refusal.
    let mut why: BTreeMap<String, Refused> = BTreeMap::new();
    let mut look = || -> Result<Look<(), String>, DrainError> {
        let now = Instant::now();
        let (due, later): (Vec<_>, Vec<_>) = std::mem::take(&mut pending)
            .into_iter()
            .partition(|(_, at)| *at <= now);
        pending = later;
        let batch: Vec<PodRef> = due.into_iter().map(|(p, _)| p).collect();
        let client = c.client_without_retries.clone();
        let results = c.call(
            "create",
            "pods/eviction",
            evict_round(client, batch, opts.grace_period, opts.concurrency),
        )?;
        sort_round(c, results, &mut done.borrow_mut(), &mut pending, &mut why)?;
        let Some(next) = pending.iter().map(|(_, at)| *at).min() else {
            return Ok(Look::Done(()));
        };
        let pause = next.saturating_duration_since(Instant::now());
        Ok(Look::Again(refusals(&why), pause))
    };
    let wait = Wait {
        what: &what,
        timeout: opts.timeout,
        pauses: Pauses::every(KUBECTL_RETRY),
        stop: watch.stop,
        say: &mut *watch.say,
    };
    let ended = poll_until(wait, &mut look, |detail| {
        Err(timed_out(node, opts, detail, &done.borrow().evicted))
    });
    let done = done.into_inner();
    ended.map_err(|e| e.stopped_at(node, &done.evicted))?;
    Ok(done)
}

enum Refused {
    Budget(String),
    Overloaded,
    NamespaceTerminating(String),
}

/// The refusals still standing, in words, for the timeout's message.
fn refusals(why: &BTreeMap<String, Refused>) -> String {
    let (mut budget, mut terminating, mut overloaded) = (Vec::new(), Vec::new(), 0);
    for (pod, r) in why {
        match r {
            Refused::Budget(m) => budget.push(format!("{pod}: {m}")),
            Refused::NamespaceTerminating(m) => terminating.push(format!("{pod}: {m}")),
            Refused::Overloaded => overloaded += 1,
        }
    }
    let mut out = Vec::new();
    for (pods, refused) in [
        (budget, "evictions still refused by a PodDisruptionBudget"),
        (
            terminating,
            "evictions refused in a namespace being deleted, whose pods are not yet deleted",
        ),
    ] {
        if !pods.is_empty() {
            out.push(format!("{refused}: {}", pods.join("; ")));
        }
    }
    if overloaded > 0 {
        out.push(format!(
            "the API server was overloaded (429) for {overloaded} pod(s)"
        ));
    }
    out.join("; ")
}

/// A pod refused in a namespace being deleted, read again: whether the namespace controller
/// marked it deleted since it was listed; `None` when it is gone. (kubectl's `evictPods` has a
/// `refreshPod` for this that it never sets.)
fn marked(c: &Cluster, pod: &PodRef) -> Result<Option<bool>, ClusterError> {
    let api: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(c.client.clone(), &pod.namespace);
    // A list of the one name, as the drain's roles grant `list pods` and not `get`.
    let lp = kube::api::ListParams::default().fields(&format!("metadata.name={}", pod.name));
    let found = c.call("list", &format!("pods/{pod}"), api.list(&lp))?;
    Ok(found
        .items
        .into_iter()
        .find(|p| p.metadata.uid.as_deref() == Some(pod.uid.as_str()))
        .map(|p| p.metadata.deletion_timestamp.is_some()))
}

/// Sorts a round's answers: accepted into `evicted`; a pod already being deleted in a
/// namespace being deleted into `leaving` (kubectl: "if the pod is already marked deleted, we
/// can ignore this error ... but we will waitForDelete for this pod"; the deletion mark is the
/// pod's as listed, else as read again after the refusal, `marked`); refused for now back into
/// `pending` at its time; any other answer ends the drain.
fn sort_round(
    c: &Cluster,
    results: Vec<(PodRef, Result<Evicted, kube::Error>)>,
    done: &mut Evictions,
    pending: &mut Vec<(PodRef, Instant)>,
    why: &mut BTreeMap<String, Refused>,
) -> Result<(), DrainError> {
    let now = Instant::now();
    for (pod, r) in results {
        let again = match r {
            Ok(Evicted::Accepted) => {
                done.evicted.push(pod.clone());
                None
            }
            Ok(Evicted::Gone) => None,
            Ok(Evicted::NamespaceTerminating(_)) if pod.deleting => {
                done.leaving.push(pod.clone());
                None
            }
            Ok(Evicted::NamespaceTerminating(m)) => match marked(c, &pod)? {
                Some(true) => {
                    let deleting = PodRef {
                        deleting: true,
                        ..pod.clone()
                    };
                    done.leaving.push(deleting);
                    None
                }
                Some(false) => Some((Refused::NamespaceTerminating(m), KUBECTL_RETRY)),
                None => None,
            },
            Ok(Evicted::TooMany { budget, after }) => {
                Some((budget.map_or(Refused::Overloaded, Refused::Budget), after))
            }
            Ok(Evicted::Failed(code, message)) => {
                return Err(ClusterError::Api {
                    server: c.server.clone(),
                    verb: "create".into(),
                    resource: "pods/eviction".into(),
                    code,
                    message: format!("{pod}: {message}"),
                }
                .into());
            }
            Err(e) => {
                return Err(ClusterError::Unreachable {
                    server: c.server.clone(),
                    source: Box::new(e),
                }
                .into());
            }
        };
        match again {
            None => {
                why.remove(&pod.to_string());
            }
            Some((refused, after)) => {
                why.insert(pod.to_string(), refused);
                pending.push((pod, now + after));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// kubectl's pace for a 429 (client-go waits out a Retry-After header; evictPods' 5 s when
    /// there is none), whether a budget refused or the server shed load, the cause telling
    /// which; NamespaceLifecycle's 403 (a `NamespaceTerminating` cause) told from RBAC's,
    /// which ends the drain.
    #[test]
    fn each_eviction_answer_is_read_as_kubectl_reads_it() {
        // checkAndDecrement with no disruption allowed: NewTooManyRequests(..., 0), no header.
        let budget = br#"{"kind":"Status","message":"Cannot evict pod as it would violate the pod's disruption budget.","reason":"TooManyRequests","details":{"causes":[{"reason":"DisruptionBudget","message":"The disruption budget web needs 2 healthy pods and has 2 currently"}]},"code":429}"#;
        let overloaded = br#"{"kind":"Status","message":"Too many requests, please try again later.","reason":"TooManyRequests","details":{"retryAfterSeconds":3},"code":429}"#;
        let terminating = br#"{"kind":"Status","status":"Failure","message":"pods \"web\" is forbidden: unable to create new content in namespace doomed because it is being terminated","reason":"Forbidden","details":{"name":"web","kind":"pods","causes":[{"reason":"NamespaceTerminating","message":"namespace doomed is being terminated","field":"metadata.namespace"}]},"code":403}"#;
        let rbac = br#"{"kind":"Status","message":"pods \"web\" is forbidden: User \"x\" cannot create resource \"pods/eviction\"","reason":"Forbidden","code":403}"#;
        let said = "Cannot evict pod as it would violate the pod's disruption budget. (The disruption budget web needs 2 healthy pods and has 2 currently)";
        let refused = |after| Evicted::TooMany {
            budget: Some(said.into()),
            after,
        };
        let too_many = |after| Evicted::TooMany {
            budget: None,
            after,
        };
        let endless = u64::MAX.to_string();
        for (code, retry_after, body, want) in [
            (429, None, &budget[..], refused(KUBECTL_RETRY)),
            // createTooManyRequestsError: Retry-After 10, which client-go waits out.
            (429, Some("10"), budget, refused(Duration::from_secs(10))),
            (429, Some("2"), overloaded, too_many(Duration::from_secs(2))),
            // client-go reads no Retry-After from the body.
            (429, None, overloaded, too_many(KUBECTL_RETRY)),
            (429, None, b"not json", too_many(KUBECTL_RETRY)),
            (429, Some("86400"), b"{}", too_many(MAX_RETRY_AFTER)),
            (429, Some(&endless), b"{}", too_many(MAX_RETRY_AFTER)),
            (201, None, b"{}", Evicted::Accepted),
            (404, None, b"{}", Evicted::Gone),
            (
                500,
                None,
                br#"{"message":"boom"}"#,
                Evicted::Failed(500, "boom".into()),
            ),
        ] {
            let got = answer(code, retry_after, body);
            assert_eq!(
                got,
                want,
                "{code} {retry_after:?} {}",
                String::from_utf8_lossy(body)
            );
        }
        assert!(matches!(
            answer(403, None, terminating),
            Evicted::NamespaceTerminating(m) if m.contains("being terminated")
        ));
        assert!(matches!(answer(403, None, rbac), Evicted::Failed(403, _)));
    }
}
