//! The cluster side of `verify`: the nodes read into `NodeFacts`, the probe objects made and
//! deleted, the pods read into `PodState`s with their events, and netexec's `/dial` asked
//! through the pod proxy. Every call is bounded (`Cluster::call_within`).

use super::dial::{Answer, Dial, answer};
use super::judge::PodState;
use super::matrix::{NodeFacts, Os};
use super::objects::{self, OWNER_LABEL, OWNER_VALUE};
use crate::cluster::{Cluster, ClusterError, drain};
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, PodStatus, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use std::time::Duration;

/// The cluster's nodes, as the plan needs them, their Calico judged by the API server's
/// clock (this host's when it sends no `Date`).
pub fn nodes(c: &Cluster) -> Result<Vec<NodeFacts>, ClusterError> {
    let api: Api<Node> = Api::all(c.client.clone());
    let now = server_date(c, None)?.unwrap_or_else(crate::duration::now);
    let mut out = Vec::new();
    c.for_each_page_of(&api, "nodes", &ListParams::default().limit(250), |page| {
        out.extend(page.iter().map(|n| facts(n, now)));
        Ok::<(), ClusterError>(())
    })?;
    Ok(out)
}

/// Why a Windows node's Calico is not known good: its `CalicoWindowsReady` not True, or
/// stale, as `fleet status` judges it (`view::node_row`: a heartbeat older than
/// `CONDITION_STALE_AFTER` is Unknown).
fn calico_unready(n: &Node, now: i64) -> Option<String> {
    let row = crate::fleet::view::node_row(n, now);
    let why = |s: &str| {
        let reasons = row.reasons.as_deref().unwrap_or("no reason given");
        format!(
            "CalicoWindowsReady is {s}: {}",
            crate::fleet::view::shown(reasons)
        )
    };
    match row.calico_ready.as_deref() {
        Some("True") => None,
        Some(s) => Some(why(s)),
        None => Some(
            "no CalicoWindowsReady condition: calicoctl-win's CalicoNode does not run there".into(),
        ),
    }
}

fn facts(n: &Node, now: i64) -> NodeFacts {
    let labels = n.metadata.labels.clone().unwrap_or_default();
    let os = if labels.get("kubernetes.io/os").map(String::as_str) == Some("windows") {
        Os::Windows
    } else {
        Os::Linux
    };
    NodeFacts {
        name: crate::k8s_name::NodeName::from_api(n.metadata.name.clone().unwrap_or_default()),
        os,
        taints: n
            .spec
            .as_ref()
            .and_then(|s| s.taints.clone())
            .unwrap_or_default(),
        calico_unready: (os == Os::Windows)
            .then(|| calico_unready(n, now))
            .flatten(),
        windows_build: labels.get("node.kubernetes.io/windows-build").cloned(),
        usable: drain::not_ready(n).is_none() && !drain::unschedulable(n),
        control_plane: labels.contains_key("node-role.kubernetes.io/control-plane"),
    }
}

/// Our namespaces (by the label), to find what a killed run left.
pub fn our_namespaces(c: &Cluster) -> Result<Vec<Namespace>, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    Ok(c.call("list", "namespaces", api.list(&lp))?.items)
}

/// The API server's clock: the `Date` of its answer to `/api` (RFC 9110's IMF-fixdate), as
/// seconds since the epoch; `None` when it sends none. Ages of the cluster's objects are
/// judged by it, never by this host's clock, which may be skewed. Its call is never begun, or
/// ended, once `stop` (when given, with the call's bound) is requested.
pub fn server_date(
    c: &Cluster,
    stop: Option<(&crate::duration::Stop, Duration)>,
) -> Result<Option<i64>, ClusterError> {
    let Ok(req) = http::Request::get("/api").body(kube::client::Body::empty()) else {
        return Ok(None);
    };
    let what = ("get", "/api");
    let resp = match stop {
        Some((s, within)) => c.call_unless(s, within, what, c.client.send(req)),
        None => c.call(what.0, what.1, c.client.send(req)),
    }?;
    Ok(resp
        .headers()
        .get(http::header::DATE)
        .and_then(|v| v.to_str().ok())
        .and_then(|d| {
            jiff::fmt::rfc2822::DateTimeParser::new()
                .parse_timestamp(d)
                .ok()
        })
        .map(|t| t.as_second()))
}

/// Makes the namespace and, in it, the Service and the probe pods.
pub fn create<K>(
    c: &Cluster,
    api: &Api<K>,
    what: &str,
    object: &K,
) -> Result<Option<String>, ClusterError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    c.call("create", what, api.create(&PostParams::default(), object))
        .map(|made| made.meta().uid.clone())
}

/// Deletes the namespace only while it is the object of `uid` and, when given, of `version`,
/// its call bounded by `until` when given (a clean-up's bound): whether it is being deleted now
/// (or was gone), `false` when it is not this run's. 409 is an unmet precondition
/// (kube-apiserver `pkg/registry/core/namespace/storage/storage.go`).
pub fn delete_namespace(
    c: &Cluster,
    name: &str,
    (uid, version): (Option<&str>, Option<&str>),
    until: Option<std::time::Instant>,
) -> Result<bool, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{name}");
    let dp = only(uid, version);
    let asked = match until {
        Some(u) => c.call_opt_by(u, ("delete", &what), api.delete(name, &dp)),
        None => c.call_opt("delete", &what, api.delete(name, &dp)),
    };
    match asked {
        Ok(_) => Ok(true),
        Err(ClusterError::Api { code: 409, .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// DeleteOptions that delete only the object of `uid` (and `version`), when given.
pub fn only(uid: Option<&str>, version: Option<&str>) -> DeleteParams {
    let preconditions = kube::api::Preconditions {
        uid: uid.map(str::to_owned),
        resource_version: version.map(str::to_owned),
    };
    DeleteParams {
        preconditions: (uid.is_some() || version.is_some()).then_some(preconditions),
        ..DeleteParams::default()
    }
}

/// A delete's answer: gone already (404) or no longer the object listed (409) is fine.
pub(super) fn gone<T>(r: Result<T, ClusterError>) -> Result<(), ClusterError> {
    match r {
        Ok(_) | Err(ClusterError::Api { code: 409, .. }) => Ok(()),
        Err(e) => Err(e),
    }
}

/// The Service's ClusterIP, and the `kubernetes` Service's.
pub fn cluster_ip(c: &Cluster, ns: &str, name: &str) -> Result<Option<String>, ClusterError> {
    let api: Api<Service> = Api::namespaced(c.client.clone(), ns);
    let what = format!("services/{name}");
    Ok(c.call_opt("get", &what, api.get(name))?
        .and_then(|s| s.spec?.cluster_ip)
        .filter(|ip| !ip.is_empty() && ip != "None"))
}

/// The probe pods as they are now, each with its events.
pub fn pods(
    c: &Cluster,
    (ns, run): (&str, &objects::Names),
) -> Result<Vec<PodState>, ClusterError> {
    let api: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let lp = ListParams::default().labels(&run.selector());
    let pods = c.call("list", "pods", api.list(&lp))?.items;
    // Why a pod has no address is in its events: a missing right to read them is said, not
    // waited out.
    let events = events(c, ns, None)?;
    Ok(pods.iter().map(|p| state(p, &events)).collect())
}

/// Events asked for a page at a time, and the most pages read: a namespace given holds the
/// events of whatever else runs there.
pub const EVENTS_PAGE: u32 = 500;
pub const EVENTS_PAGES: usize = 10;

/// The namespace's events, a page of `EVENTS_PAGE` at a time by `limit` and `continue` (kubernetes
/// `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go`, `ListOptions.Limit`), at most
/// `EVENTS_PAGES` pages, each page's call bounded by `until` when given (a clean-up's bound).
pub fn events(
    c: &Cluster,
    ns: &str,
    until: Option<std::time::Instant>,
) -> Result<Vec<Event>, ClusterError> {
    let api: Api<Event> = Api::namespaced(c.client.clone(), ns);
    let mut out = Vec::new();
    let mut token: Option<String> = None;
    for _ in 0..EVENTS_PAGES {
        let mut lp = ListParams::default().limit(EVENTS_PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = match until {
            Some(u) => c.call_by(u, ("list", "events"), api.list(&lp)),
            None => c.call("list", "events", api.list(&lp)),
        }?;
        out.extend(page.items);
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
    }
    Ok(out)
}

fn state(p: &Pod, events: &[Event]) -> PodState {
    let name = p.metadata.name.clone().unwrap_or_default();
    let uid = p.metadata.uid.as_deref();
    let status = p.status.clone().unwrap_or_default();
    let waiting = status
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first()?.state.as_ref()?.waiting.clone())
        .map(|w| match w.message {
            Some(m) => format!("{}: {m}", w.reason.unwrap_or_default()),
            None => w.reason.unwrap_or_default(),
        });
    let events: Vec<String> = events
        .iter()
        // By uid: an earlier pod of the same name (a killed run's) had its own events.
        .filter(|e| uid.is_some() && e.involved_object.uid.as_deref() == uid)
        .map(|e| {
            let reason = e.reason.clone().unwrap_or_default();
            format!("{reason}: {}", e.message.clone().unwrap_or_default())
        })
        .collect();
    PodState {
        // Not bound yet: the node its affinity names (`objects::on_node`).
        node: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .or_else(|| pinned_to(p))
            .unwrap_or_default(),
        unschedulable: unschedulable(p, &status),
        ip: status.pod_ip.clone().filter(|ip| !ip.is_empty()),
        phase: status.phase.clone().unwrap_or_default(),
        ready: status
            .conditions
            .as_ref()
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        waiting,
        events,
        name,
    }
}

/// Why kube-scheduler placed the pod on no node, while it is not bound: its `PodScheduled`
/// False message, of reason `Unschedulable` (a filter rejected every node) or `SchedulerError`
/// (a bind, PreBind or extender error): kubernetes `pkg/scheduler/schedule_one.go`,
/// `handleSchedulingFailure`, which writes it beside its `FailedScheduling` event.
fn unschedulable(p: &Pod, status: &PodStatus) -> Option<String> {
    if p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return None;
    }
    let condition = status.conditions.iter().flatten().find(|c| {
        c.type_ == "PodScheduled"
            && c.status == "False"
            && matches!(
                c.reason.as_deref(),
                Some("Unschedulable" | "SchedulerError")
            )
    })?;
    Some(
        condition
            .message
            .clone()
            .or_else(|| condition.reason.clone())
            .unwrap_or_default(),
    )
}

/// The node a probe pod's required node affinity names (`metadata.name` in its first term).
fn pinned_to(p: &Pod) -> Option<String> {
    let terms = &p
        .spec
        .as_ref()?
        .affinity
        .as_ref()?
        .node_affinity
        .as_ref()?
        .required_during_scheduling_ignored_during_execution
        .as_ref()?
        .node_selector_terms;
    let field = terms.first()?.match_fields.as_ref()?.first()?;
    if field.key != "metadata.name" {
        return None;
    }
    field.values.as_ref()?.first().cloned()
}

/// Applies the run's deny-ingress policy (its uid as made), or deletes it, by `uid` when
/// given (the one this run made).
pub fn policy(
    c: &Cluster,
    (ns, run): (&str, &objects::Names),
    on: bool,
    uid: Option<&str>,
) -> Result<Option<String>, ClusterError> {
    let api: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let name = run.of(objects::POLICY_NAME);
    let what = format!("networkpolicies/{name}");
    if on {
        create(c, &api, &what, &objects::deny_server_ingress(ns, run))
    } else {
        c.call_opt("delete", &what, api.delete(&name, &only(uid, None)))
            .map(|_| None)
    }
}

/// Asks a client pod's netexec to dial, through the API server's pod proxy. A 403 is the
/// run's failure (the identity lacks `get pods/proxy`), not the dataplane's.
pub fn ask(c: &Cluster, d: &Dial, within: Duration) -> Result<Answer, ClusterError> {
    let Ok(req) = http::Request::get(&d.path).body(Vec::new()) else {
        return Ok(Answer::NoProxy(format!("not a request path: {}", d.path)));
    };
    match c.call_within(within, ("get", "pods/proxy"), c.client.request_text(req)) {
        Ok(text) => Ok(answer(200, &text)),
        Err(e @ ClusterError::Api { code: 403, .. }) => Err(e),
        Err(ClusterError::Api { code, message, .. }) => Ok(answer(code, &message)),
        // netexec bounds its dial at 5 s (`createHTTPClient`) but not the lookup before it
        // (`net.ResolveTCPAddr` in `dialHandler`): a name's answer that never came is DNS's.
        Err(ClusterError::Timeout { .. }) if d.name.is_some() => Ok(Answer::Unresolved(format!(
            "no answer within {} s: the pod's lookup of {} did not return",
            within.as_secs(),
            d.name.as_deref().unwrap_or_default()
        ))),
        Err(e) => Ok(Answer::NoProxy(e.to_string())),
    }
}

/// Asks the server pod's netexec `/healthz` through the pod proxy: the API server reaches the
/// pod (the answer's text when it does not).
pub fn healthz(
    c: &Cluster,
    ns: &str,
    pod: &str,
    within: Duration,
) -> Result<Result<(), String>, ClusterError> {
    let path = format!(
        "/api/v1/namespaces/{ns}/pods/{pod}:{}/proxy/healthz",
        super::image::HTTP_PORT
    );
    let Ok(req) = http::Request::get(&path).body(Vec::new()) else {
        return Ok(Err(format!("not a request path: {path}")));
    };
    match c.call_within(within, ("get", "pods/proxy"), c.client.request_text(req)) {
        Ok(_) => Ok(Ok(())),
        Err(e @ ClusterError::Api { code: 403, .. }) => Err(e),
        Err(ClusterError::Api { code, message, .. }) => {
            Ok(Err(format!("HTTP {code}: {:.200}", message.trim())))
        }
        Err(e) => Ok(Err(e.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pods_events_are_its_own_by_uid_not_an_earlier_pods_of_its_name() {
        let mut p = Pod::default();
        p.metadata.name = Some("server".into());
        p.metadata.uid = Some("new".into());
        let event = |uid: &str, reason: &str| {
            let mut e = Event::default();
            e.involved_object.kind = Some("Pod".into());
            e.involved_object.name = Some("server".into());
            e.involved_object.uid = Some(uid.into());
            e.reason = Some(reason.into());
            e
        };
        let s = state(
            &p,
            &[
                event("old", "FailedCreatePodSandBox"),
                event("new", "Scheduled"),
            ],
        );
        assert_eq!(s.events.len(), 1, "{:?}", s.events);
        assert!(s.events[0].starts_with("Scheduled"), "{:?}", s.events);
    }

    /// Not bound, with kube-scheduler's `PodScheduled` False `Unschedulable` or `SchedulerError`:
    /// the scheduler's words, and the node its affinity names; once bound, none.
    #[test]
    fn a_pod_not_bound_says_why_kube_scheduler_placed_it_nowhere() {
        let mut p: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "server", "uid": "u1"},
            "spec": {"containers": [], "affinity": {"nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In",
                        "values": ["win-a"]}]}]}}}},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                "status": "False", "reason": "Unschedulable",
                "message": "0/3 nodes are available: 1 Too many pods."}]}
        }))
        .unwrap();
        let s = state(&p, &[]);
        assert_eq!(s.node, "win-a");
        assert_eq!(
            s.unschedulable.as_deref(),
            Some("0/3 nodes are available: 1 Too many pods.")
        );
        // A bind or plugin error: reason SchedulerError, still the scheduler's words.
        let c = &mut p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0];
        c.reason = Some("SchedulerError".into());
        c.message = Some("binding rejected: pods \"server\" is forbidden".into());
        assert_eq!(
            state(&p, &[]).unschedulable.as_deref(),
            Some("binding rejected: pods \"server\" is forbidden")
        );
        p.spec.as_mut().unwrap().node_name = Some("win-a".into());
        assert_eq!(state(&p, &[]).unschedulable, None);
    }
}
