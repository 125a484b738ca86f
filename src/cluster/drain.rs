//! Draining a node as `kubectl drain` does: cordon it, evict its pods through the Eviction API
//! (DaemonSet and mirror pods stay; a PodDisruptionBudget's 429 is retried), wait until they
//! are gone; and waiting for the node to be Ready again.

use super::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, Patch, PatchParams};
use serde::Serialize;
use std::time::{Duration, Instant};

/// How to drain.
#[derive(Clone, Copy, Debug)]
pub struct DrainOptions {
    /// How long evictions may be refused and pods take to go.
    pub timeout: Duration,
    /// Overrides each pod's own termination grace period.
    pub grace_period: Option<u32>,
    /// Also evict pods that no controller will recreate.
    pub force: bool,
}

/// A pod, by namespace and name (and uid, to tell it from a successor of the same name).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PodRef {
    pub namespace: String,
    pub name: String,
    #[serde(skip)]
    pub uid: String,
}

impl std::fmt::Display for PodRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

/// What a drain does with the pods on a node.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Selection {
    pub evict: Vec<PodRef>,
    /// DaemonSet and mirror pods, which stay.
    pub skipped: Vec<PodRef>,
    /// Pods without a controller: evicted only with `--force`, since nothing recreates them.
    pub unmanaged: Vec<PodRef>,
}

#[derive(Debug, thiserror::Error)]
pub enum DrainError {
    #[error(transparent)]
    Cluster(#[from] ClusterError),
    #[error("pods on node {node} have no controller and would be lost: {}", list(.pods))]
    Unmanaged { node: String, pods: Vec<PodRef> },
    #[error("the drain of node {node} did not finish within {}: {}", crate::duration::show(*.after), .detail)]
    Timeout {
        node: String,
        after: Duration,
        detail: String,
    },
    #[error("an eviction request ended without an answer: {0}")]
    Task(String),
    #[error("node {node} was not Ready within {} ({reason})", crate::duration::show(*.after))]
    NotReady {
        node: String,
        after: Duration,
        reason: String,
    },
}

impl DrainError {
    pub fn hint(&self) -> String {
        match self {
            Self::Cluster(e) => e.hint(),
            Self::Task(_) => "run the command again: evictions already made are not repeated".into(),
            Self::Unmanaged { .. } => "delete those pods yourself, or pass --force to evict them too (they are not recreated)".into(),
            Self::Timeout { .. } => "a PodDisruptionBudget may allow no disruption now ('kubectl get pdb -A'); scale the workload up, or give it longer with --drain-timeout".into(),
            Self::NotReady { node, .. } => format!(
                "check kubelet on the node and 'kubectl describe node {node}'; the node stays cordoned until 'kubectl uncordon {node}' or a rerun"
            ),
        }
    }

    pub fn is_timeout(&self) -> bool {
        match self {
            Self::Cluster(e) => matches!(e, ClusterError::Timeout { .. }),
            Self::Timeout { .. } | Self::NotReady { .. } => true,
            Self::Unmanaged { .. } | Self::Task(_) => false,
        }
    }
}

fn list(pods: &[PodRef]) -> String {
    pods.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn pod_ref(p: &Pod) -> PodRef {
    PodRef {
        namespace: p.metadata.namespace.clone().unwrap_or_default(),
        name: p.metadata.name.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
    }
}

/// Sorts the pods of a node as `kubectl drain` does: DaemonSet pods (their controller would
/// put them back at once) and mirror pods (kubelet's static pods) stay; pods with a controller
/// are evicted; the rest need `--force`.
pub fn select(pods: &[Pod]) -> Selection {
    let mut s = Selection::default();
    for p in pods {
        let owner = p
            .metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true));
        let mirror = p
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key("kubernetes.io/config.mirror"));
        let r = pod_ref(p);
        if mirror || owner.is_some_and(|o| o.kind == "DaemonSet") {
            s.skipped.push(r);
        } else if owner.is_some() {
            s.evict.push(r);
        } else {
            s.unmanaged.push(r);
        }
    }
    s
}

/// The pods scheduled on `node`, in every namespace.
pub fn pods_on(c: &Cluster, node: &str) -> Result<Vec<Pod>, ClusterError> {
    let pods: Api<Pod> = Api::all(c.client.clone());
    let lp = ListParams::default().fields(&format!("spec.nodeName={node}"));
    Ok(c.call("list", "pods", pods.list(&lp))?.items)
}

/// Whether the node is marked unschedulable.
pub fn is_cordoned(c: &Cluster, node: &str) -> Result<bool, ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let n = c.call("get", "nodes", nodes.get(node))?;
    Ok(n.spec.and_then(|s| s.unschedulable).unwrap_or(false))
}

/// Marks the node unschedulable (`on`) or schedulable again.
pub fn set_cordoned(c: &Cluster, node: &str, on: bool) -> Result<(), ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let patch =
        serde_json::json!({ "spec": { "unschedulable": if on { Some(true) } else { None } } });
    c.call(
        "patch",
        "nodes",
        nodes.patch(node, &PatchParams::default(), &Patch::Merge(&patch)),
    )?;
    Ok(())
}

/// The Eviction object for a pod. kube's own `evict` sends `delete_options`, which the API
/// server ignores, so the grace period would be lost; this is the documented body.
pub fn eviction_body(pod: &PodRef, grace_period: Option<u32>) -> serde_json::Value {
    let mut body = serde_json::json!({
        "apiVersion": "policy/v1",
        "kind": "Eviction",
        "metadata": {"name": pod.name, "namespace": pod.namespace},
    });
    if let Some(g) = grace_period {
        body["deleteOptions"] = serde_json::json!({ "gracePeriodSeconds": g });
    }
    body
}

/// What became of one eviction request.
enum Evicted {
    Accepted,
    Gone,
    /// 429: a PodDisruptionBudget allows no disruption now.
    Refused(String),
}

async fn evict_one(
    client: kube::Client,
    pod: PodRef,
    grace: Option<u32>,
) -> (PodRef, Result<Evicted, kube::Error>) {
    let path = format!(
        "/api/v1/namespaces/{}/pods/{}/eviction",
        pod.namespace, pod.name
    );
    let req = serde_json::to_vec(&eviction_body(&pod, grace))
        .map_err(kube::Error::SerdeError)
        .and_then(|body| {
            http::Request::post(path)
                .header(http::header::CONTENT_TYPE, "application/json")
                .body(body)
                .map_err(kube::Error::HttpError)
        });
    let result = match req {
        Err(e) => Err(e),
        Ok(req) => match client
            .request::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Status>(req)
            .await
        {
            Ok(_) => Ok(Evicted::Accepted),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok(Evicted::Gone),
            Err(kube::Error::Api(s)) if s.code == 429 => Ok(Evicted::Refused(s.message)),
            Err(e) => Err(e),
        },
    };
    (pod, result)
}

/// Evicts `pods` (all at once, retrying refusals) and waits until they are gone, within
/// `opts.timeout`. Returns how many were evicted.
pub fn evict_and_wait(
    c: &Cluster,
    node: &str,
    pods: Vec<PodRef>,
    opts: &DrainOptions,
) -> Result<usize, DrainError> {
    let deadline = Instant::now() + opts.timeout;
    let timeout = |detail: String| DrainError::Timeout {
        node: node.to_owned(),
        after: opts.timeout,
        detail,
    };
    let mut pending = pods;
    let mut evicted: Vec<PodRef> = Vec::new();
    while !pending.is_empty() {
        let batch = std::mem::take(&mut pending);
        let client = c.client_without_retries.clone();
        let grace = opts.grace_period;
        let results = c.call("create", "pods/eviction", async move {
            let mut set = tokio::task::JoinSet::new();
            for pod in batch {
                set.spawn(evict_one(client.clone(), pod, grace));
            }
            let mut out = Vec::new();
            while let Some(r) = set.join_next().await {
                out.push(r);
            }
            Ok::<_, kube::Error>(out)
        })?;
        let mut refused = Vec::new();
        for joined in results {
            // A task that did not finish would leave its pod unaccounted for: stop instead.
            let (pod, r) = joined.map_err(|e| DrainError::Task(e.to_string()))?;
            match r {
                Ok(Evicted::Accepted) => evicted.push(pod),
                Ok(Evicted::Gone) => {}
                Ok(Evicted::Refused(msg)) => {
                    refused.push(format!("{pod}: {msg}"));
                    pending.push(pod);
                }
                Err(kube::Error::Api(s)) => {
                    return Err(ClusterError::Api {
                        server: c.server.clone(),
                        verb: "create".into(),
                        resource: "pods/eviction".into(),
                        code: s.code,
                        message: format!("{pod}: {}", s.message),
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
            }
        }
        if pending.is_empty() {
            break;
        }
        if Instant::now() >= deadline {
            return Err(timeout(format!(
                "evictions still refused: {}",
                refused.join("; ")
            )));
        }
        std::thread::sleep(
            Duration::from_secs(1).min(deadline.saturating_duration_since(Instant::now())),
        );
    }

    // Evicted pods terminate in their own time; a pod of the same name with another uid is a
    // successor elsewhere, not the one evicted.
    let mut pause = Duration::from_millis(50);
    loop {
        let now: Vec<PodRef> = pods_on(c, node)?.iter().map(pod_ref).collect();
        let left: Vec<&PodRef> = evicted
            .iter()
            .filter(|p| now.iter().any(|n| n.uid == p.uid && n.name == p.name))
            .collect();
        if left.is_empty() {
            return Ok(evicted.len());
        }
        if Instant::now() >= deadline {
            return Err(timeout(format!(
                "pods still terminating: {}",
                left.iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_secs(1));
    }
}

/// Why the node is not Ready, or `None` when it is.
fn not_ready(n: &Node) -> Option<String> {
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"));
    match ready {
        Some(c) if c.status == "True" => None,
        Some(c) => Some(format!(
            "Ready is {}{}",
            c.status,
            c.message
                .as_deref()
                .map(|m| format!(": {m}"))
                .unwrap_or_default()
        )),
        None => Some("it reports no Ready condition".into()),
    }
}

/// Whether the node is Ready, with the reason when it is not.
pub fn readiness(c: &Cluster, node: &str) -> Result<Result<(), String>, ClusterError> {
    let nodes: Api<Node> = Api::all(c.client.clone());
    let n = c.call("get", "nodes", nodes.get(node))?;
    Ok(match not_ready(&n) {
        None => Ok(()),
        Some(why) => Err(why),
    })
}

/// Waits until the node reports Ready.
pub fn wait_ready(c: &Cluster, node: &str, timeout: Duration) -> Result<(), DrainError> {
    let deadline = Instant::now() + timeout;
    let mut pause = Duration::from_millis(100);
    loop {
        let reason = match readiness(c, node)? {
            Ok(()) => return Ok(()),
            Err(why) => why,
        };
        if Instant::now() >= deadline {
            return Err(DrainError::NotReady {
                node: node.to_owned(),
                after: timeout,
                reason,
            });
        }
        std::thread::sleep(pause.min(deadline.saturating_duration_since(Instant::now())));
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

impl crate::plan::exec::NodeControl for Cluster {
    fn is_cordoned(&self, node: &str) -> anyhow::Result<bool> {
        Ok(is_cordoned(self, node)?)
    }

    fn set_cordoned(&self, node: &str, on: bool) -> anyhow::Result<()> {
        Ok(set_cordoned(self, node, on)?)
    }

    fn drain(&self, node: &str, opts: &DrainOptions) -> anyhow::Result<()> {
        let s = select(&pods_on(self, node)?);
        if !s.unmanaged.is_empty() && !opts.force {
            return Err(DrainError::Unmanaged {
                node: node.to_owned(),
                pods: s.unmanaged,
            }
            .into());
        }
        let mut evict = s.evict;
        evict.extend(s.unmanaged);
        evict_and_wait(self, node, evict, opts)?;
        Ok(())
    }

    fn wait_ready(&self, node: &str, timeout: Duration) -> anyhow::Result<()> {
        Ok(wait_ready(self, node, timeout)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, owner: Option<&str>, mirror: bool) -> Pod {
        let mut v = serde_json::json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("u-{name}")}
        });
        if let Some(kind) = owner {
            v["metadata"]["ownerReferences"] = serde_json::json!([{
                "apiVersion": "apps/v1", "kind": kind, "name": "x", "uid": "o", "controller": true
            }]);
        }
        if mirror {
            v["metadata"]["annotations"] = serde_json::json!({"kubernetes.io/config.mirror": "h"});
        }
        serde_json::from_value(v).expect("pod")
    }

    #[test]
    fn daemonset_and_mirror_pods_stay_and_pods_without_a_controller_need_force() {
        let s = select(&[
            pod("web", Some("ReplicaSet"), false),
            pod("agent", Some("DaemonSet"), false),
            pod("static", None, true),
            pod("bare", None, false),
            pod("db", Some("StatefulSet"), false),
        ]);
        let names = |v: &[PodRef]| v.iter().map(|p| p.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&s.evict), ["web", "db"]);
        assert_eq!(names(&s.skipped), ["agent", "static"]);
        assert_eq!(names(&s.unmanaged), ["bare"]);
    }

    #[test]
    fn the_eviction_carries_the_grace_period_as_the_api_names_it() {
        let p = PodRef {
            namespace: "ns".into(),
            name: "web".into(),
            uid: String::new(),
        };
        let body = eviction_body(&p, Some(7));
        assert_eq!(body["deleteOptions"]["gracePeriodSeconds"], 7);
        assert_eq!(body["metadata"]["namespace"], "ns");
        assert!(eviction_body(&p, None).get("deleteOptions").is_none());
    }
}
