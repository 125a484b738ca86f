//! The cluster side of `verify`: the nodes read into `NodeFacts`, the probe objects made and
//! deleted, the pods read into `PodState`s with their events, and netexec's `/dial` asked
//! through the pod proxy. Every call is bounded (`Cluster::call_within`).

use super::dial::{Answer, answer};
use super::judge::PodState;
use super::matrix::{NodeFacts, Os};
use super::objects::{self, OWNER_LABEL, OWNER_VALUE};
use crate::cluster::{Cluster, ClusterError};
use k8s_openapi::api::core::v1::{Event, Namespace, Node, Pod, Service};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kube::Api;
use kube::api::{DeleteParams, ListParams, PostParams};
use std::time::Duration;

/// How long netexec's `/dial` may take through the proxy: its own HTTP client gives up after
/// 5 s (`createHTTPClient`), so 10 s covers a dial that times out and the proxy's way.
pub const DIAL_WITHIN: Duration = Duration::from_secs(10);

/// The cluster's nodes, as the plan needs them.
pub fn nodes(c: &Cluster) -> Result<Vec<NodeFacts>, ClusterError> {
    let api: Api<Node> = Api::all(c.client.clone());
    let mut out = Vec::new();
    c.for_each_page_of(&api, "nodes", &ListParams::default().limit(250), |page| {
        out.extend(page.iter().map(facts));
        Ok::<(), ClusterError>(())
    })?;
    Ok(out)
}

fn facts(n: &Node) -> NodeFacts {
    let labels = n.metadata.labels.clone().unwrap_or_default();
    let ready = n
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let cordoned = n
        .spec
        .as_ref()
        .and_then(|s| s.unschedulable)
        .unwrap_or(false);
    NodeFacts {
        name: n.metadata.name.clone().unwrap_or_default(),
        os: if labels.get("kubernetes.io/os").map(String::as_str) == Some("windows") {
            Os::Windows
        } else {
            Os::Linux
        },
        windows_build: labels.get("node.kubernetes.io/windows-build").cloned(),
        usable: ready && !cordoned,
        control_plane: labels.contains_key("node-role.kubernetes.io/control-plane"),
    }
}

/// Our namespaces (by the label), to find what a killed run left.
pub fn our_namespaces(c: &Cluster) -> Result<Vec<Namespace>, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let lp = ListParams::default().labels(&format!("{OWNER_LABEL}={OWNER_VALUE}"));
    Ok(c.call("list", "namespaces", api.list(&lp))?.items)
}

/// Makes the namespace and, in it, the Service and the probe pods.
pub fn create<K>(c: &Cluster, api: &Api<K>, what: &str, object: &K) -> Result<(), ClusterError>
where
    K: kube::Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    c.call("create", what, api.create(&PostParams::default(), object))
        .map(|_| ())
}

/// Deletes the namespace (the namespace controller deletes what is in it); gone already is
/// fine.
pub fn delete_namespace(c: &Cluster, name: &str) -> Result<(), ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    let what = format!("namespaces/{name}");
    c.call_opt("delete", &what, api.delete(name, &DeleteParams::default()))
        .map(|_| ())
}

/// Whether the namespace still exists.
pub fn namespace_exists(c: &Cluster, name: &str) -> Result<bool, ClusterError> {
    let api: Api<Namespace> = Api::all(c.client.clone());
    Ok(
        c.call_opt("get", &format!("namespaces/{name}"), api.get(name))?
            .is_some(),
    )
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
pub fn pods(c: &Cluster, ns: &str) -> Result<Vec<PodState>, ClusterError> {
    let api: Api<Pod> = Api::namespaced(c.client.clone(), ns);
    let pods = c
        .call("list", "pods", api.list(&ListParams::default()))?
        .items;
    let events: Api<Event> = Api::namespaced(c.client.clone(), ns);
    // Why a pod has no address is in its events: a missing right to read them is said, not
    // waited out.
    let events = c
        .call(
            "list",
            "events",
            events.list(&ListParams::default().limit(500)),
        )?
        .items;
    Ok(pods.iter().map(|p| state(p, &events)).collect())
}

fn state(p: &Pod, events: &[Event]) -> PodState {
    let name = p.metadata.name.clone().unwrap_or_default();
    let status = p.status.clone().unwrap_or_default();
    let waiting = status
        .container_statuses
        .as_ref()
        .and_then(|cs| cs.first()?.state.as_ref()?.waiting.clone())
        .map(|w| match w.message {
            Some(m) => format!("{}: {m}", w.reason.unwrap_or_default()),
            None => w.reason.unwrap_or_default(),
        });
    PodState {
        node: p
            .spec
            .as_ref()
            .and_then(|s| s.node_name.clone())
            .unwrap_or_default(),
        ip: status.pod_ip.clone().filter(|ip| !ip.is_empty()),
        phase: status.phase.clone().unwrap_or_default(),
        ready: status
            .conditions
            .as_ref()
            .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True")),
        waiting,
        events: events
            .iter()
            .filter(|e| e.involved_object.name.as_deref() == Some(name.as_str()))
            .map(|e| {
                let reason = e.reason.clone().unwrap_or_default();
                format!("{reason}: {}", e.message.clone().unwrap_or_default())
            })
            .collect(),
        name,
    }
}

/// Applies or deletes the deny-ingress policy.
pub fn policy(c: &Cluster, ns: &str, on: bool) -> Result<(), ClusterError> {
    let api: Api<NetworkPolicy> = Api::namespaced(c.client.clone(), ns);
    let what = format!("networkpolicies/{}", objects::POLICY_NAME);
    if on {
        create(c, &api, &what, &objects::deny_server_ingress(ns))
    } else {
        c.call_opt(
            "delete",
            &what,
            api.delete(objects::POLICY_NAME, &DeleteParams::default()),
        )
        .map(|_| ())
    }
}

/// Asks a client pod's netexec to dial, through the API server's pod proxy.
pub fn ask(c: &Cluster, path: &str) -> Answer {
    let Ok(req) = http::Request::get(path).body(Vec::new()) else {
        return Answer::NoProxy(format!("not a request path: {path}"));
    };
    match c.call_within(
        DIAL_WITHIN,
        ("get", "pods/proxy"),
        c.client.request_text(req),
    ) {
        Ok(text) => answer(200, &text),
        Err(ClusterError::Api { code, message, .. }) => answer(code, &message),
        Err(e) => Answer::NoProxy(e.to_string()),
    }
}
