//! Every selected Windows node's redacted `diags` zip: each node's pod of the fleet DaemonSet
//! (on its node's network) is asked `GET /diags` through kube-apiserver's pod proxy (kubernetes
//! `pkg/registry/core/pod/rest/subresources.go`, `ProxyREST.Connect`). Each answer streams to a
//! file, hashed on the way, named `NODE.zip` only when whole; a node gets `node_timeout`, the run
//! `total_timeout`, at most `concurrency` at once. No bundle content is logged or put in an error.

pub mod auth;
mod fetch;
mod out;
pub mod rights;

use crate::cluster::{Cluster, ClusterError};
use crate::k8s_name::NodeName;
pub use fetch::{
    ANSWER_HEADER, Gather, NODE_BUILD_TIME, NODE_REVIEW_TIME, NODE_SEND_TIME, NODE_TIMEOUT,
    NodeBundle, PATH, Reason,
};
use k8s_openapi::api::apps::v1::DaemonSet;
use k8s_openapi::api::core::v1::Pod;
pub use out::{OutDir, OutError, prepare_out};
use std::collections::BTreeMap;
use std::path::Path;

/// Nodes asked at once by default: a fleet of 100 in two waves. kube-apiserver counts a pod
/// proxy request as long-running, outside `--max-requests-inflight`
/// (pkg/controlplane/apiserver/config.go).
pub const CONCURRENCY: usize = 64;
/// The most one bundle may hold: the API client reads no answer longer (`guard::BODY_CAP`).
pub const BUNDLE_CAP: u64 = crate::cluster::guard::BODY_CAP as u64;

/// The index of a run: a line per node, by name, and whether the run's timeout came.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Index {
    pub nodes: Vec<NodeBundle>,
    pub gathered: usize,
    pub failed: usize,
    pub run_timed_out: bool,
}

/// Gathers the selected nodes' bundles into `g.out`: a failed read of the DaemonSet, nodes or
/// pods is the run's error, each node's failure its line.
pub fn gather(c: &Cluster, g: &Gather) -> Result<Index, ClusterError> {
    let uid = daemon_set_uid(c, &g.namespace, &g.daemon_set)?;
    let nodes = windows_nodes(c, g.node_selector.as_deref())?;
    let mut pods = pods_by_node(c, &g.namespace, &g.pod_selector)?;
    let mut lines = Vec::new();
    let mut asked = Vec::new();
    let mut skipped_of = BTreeMap::new();
    for node in nodes {
        let (pod, skipped) = own_pod(pods.remove(node.as_str()).unwrap_or_default(), &uid, &node);
        match (unasked(g, pod.as_ref(), skipped.is_empty()), pod) {
            (None, Some(pod)) => {
                asked.push((node.clone(), pod.metadata.name.unwrap_or_default()));
                skipped_of.insert(node, skipped);
            }
            (why, _) => {
                let (reason, message) = why.unwrap_or((Reason::NoPod, String::new()));
                lines.push(NodeBundle {
                    skipped,
                    ..NodeBundle::failed_line(&node, reason, message)
                });
            }
        }
    }
    // Without kube's retries: a node's 503 (nothing listens) is its answer, and a retried GET
    // would make the node build its bundle again.
    let client = c.client_without_retries.clone();
    let (mut fetched, run_timed_out) = c.run(fetch::all(client, g, asked));
    for line in &mut fetched {
        line.skipped = skipped_of.remove(line.node.as_str()).unwrap_or_default();
    }
    lines.append(&mut fetched);
    lines.sort_by(|a, b| a.node.cmp(&b.node));
    let gathered = lines.iter().filter(|l| l.result == "ok").count();
    Ok(Index {
        failed: lines.len() - gathered,
        nodes: lines,
        gathered,
        run_timed_out,
    })
}

/// Why a node's `pod` (its own, `own_pod`) is not asked, if it is not.
fn unasked(g: &Gather, pod: Option<&Pod>, none_skipped: bool) -> Option<(Reason, String)> {
    let Some(pod) = pod else {
        return Some(if none_skipped {
            let (sel, ns) = (&g.pod_selector, &g.namespace);
            let why = format!("no pod of the DaemonSet ({sel} in {ns}) is on the node");
            (Reason::NoPod, why)
        } else {
            let ds = &g.daemon_set;
            let why = format!(
                "no pod on it is the DaemonSet {ds}'s own on the node's network: none was asked"
            );
            (Reason::NotOurPod, why)
        });
    };
    let name = pod.metadata.name.as_deref().unwrap_or_default();
    if !is_running(pod) {
        let why = format!("its pod {name} does not run (phase {})", phase(pod));
        return Some((Reason::PodNotRunning, why));
    }
    ipv6_address(pod).map(|ip| (Reason::Unreachable, format!(
        "its pod {name} has the address {ip}, an IPv6 one, which the API server's proxy would dial, and CalicoNode's endpoint listens on IPv4 only (Calico's Windows dataplane has no IPv6): not asked; give the node an IPv4 address first (the kubelet's --node-ip), then delete the pod (the DaemonSet makes it again with that address)"
    )))
}

/// The pod's address when IPv6, which the pod proxy would dial (kubernetes
/// `pkg/registry/core/pod/strategy.go` `getPodIP`) and CalicoNode does not listen on (calico
/// v3.32.1 `felix/dataplane/windows/endpoint_mgr.go`: no IPv6).
fn ipv6_address(pod: &Pod) -> Option<&str> {
    let ip = pod.status.as_ref()?.pod_ip.as_deref()?;
    ip.parse::<std::net::Ipv6Addr>().is_ok().then_some(ip)
}

/// The DaemonSet's uid, which its own pods name as their controller (none there: the run is
/// refused before any node is asked).
fn daemon_set_uid(c: &Cluster, namespace: &str, name: &str) -> Result<String, ClusterError> {
    let api: kube::Api<DaemonSet> = kube::Api::namespaced(c.client.clone(), namespace);
    let ds = c.call("get", "daemonsets", api.get(name)).map_err(|mut e| {
        // Roles written before the gatherer read the DaemonSet lack the rule.
        if let ClusterError::Api {
            code: 403, message, ..
        } = &mut e
        {
            message.push_str(" (a Role written by an earlier `fleet rbac --identity diags` lacks `get daemonsets`: apply `calicoctl-win fleet rbac --identity diags` again)");
        }
        e
    })?;
    Ok(ds.metadata.uid.unwrap_or_default())
}

/// Of a node's pods with the DaemonSet's labels, the newest that is its own, and the others
/// that are not, each named with why.
fn own_pod(pods: Vec<Pod>, uid: &str, node: &NodeName) -> (Option<Pod>, Vec<String>) {
    let mut own: Option<Pod> = None;
    let mut skipped = Vec::new();
    for pod in pods {
        if let Some(why) = not_ours(&pod, uid, node) {
            let name = pod.metadata.name.as_deref().unwrap_or_default();
            skipped.push(format!("pod {name}: {why}"));
        } else if own
            .as_ref()
            .is_none_or(|have| have.metadata.creation_timestamp < pod.metadata.creation_timestamp)
        {
            own = Some(pod);
        }
    }
    (own, skipped)
}

/// Why `pod` is not the DaemonSet's own on `node`'s network: anyone who may create pods sets a
/// label, but the controller's pods name its `uid` (`pkg/controller/daemon/daemon_controller.go`),
/// and a host-network pod's address is its node's (`pkg/kubelet/kubelet_pods.go`
/// `generateAPIPodStatus`).
fn not_ours(pod: &Pod, uid: &str, node: &NodeName) -> Option<String> {
    let controller = crate::cluster::drain::controller(pod);
    if !controller.is_some_and(|o| o.kind == "DaemonSet" && !uid.is_empty() && o.uid == uid) {
        return Some("its controller is not the DaemonSet".into());
    }
    let spec = pod.spec.as_ref();
    if spec.is_none_or(|s| s.host_network != Some(true)) {
        return Some("it is not on the node's network (hostNetwork)".into());
    }
    if spec.and_then(|s| s.node_name.as_deref()) != Some(node.as_str()) {
        return Some("it is not on the node".into());
    }
    let status = pod.status.as_ref();
    let ip = status.and_then(|s| s.pod_ip.as_deref());
    let host = status.and_then(|s| s.host_ip.as_deref());
    // The node's addresses as the kubelet reports them at every sync (`hostIP`, `hostIPs`); a
    // host-network pod's are set once, and may be from before the node's changed.
    let host_ips = status
        .and_then(|s| s.host_ips.as_ref())
        .into_iter()
        .flatten();
    let now: Vec<&str> = host
        .into_iter()
        .chain(host_ips.map(|h| h.ip.as_str()))
        .collect();
    if let Some(ip) = ip.filter(|ip| !now.contains(ip)) {
        return Some(format!(
            "its address {ip} is not its node's ({}): it is not on the node, or it is from before the node's address changed (delete it: the DaemonSet makes it again)",
            host.unwrap_or("none reported")
        ));
    }
    None
}

/// The Windows nodes' names, with `selector`'s labels too.
fn windows_nodes(c: &Cluster, selector: Option<&str>) -> Result<Vec<NodeName>, ClusterError> {
    let mut names = Vec::new();
    crate::cluster::node::for_each_windows_node_of(c, selector, |n| {
        names.extend(n.metadata.name.clone().map(NodeName::from_api));
    })?;
    names.sort();
    Ok(names)
}

/// The pods with the DaemonSet's labels, by their node.
fn pods_by_node(
    c: &Cluster,
    namespace: &str,
    selector: &str,
) -> Result<BTreeMap<String, Vec<Pod>>, ClusterError> {
    let api: kube::Api<Pod> = kube::Api::namespaced(c.client.clone(), namespace);
    let lp = kube::api::ListParams::default()
        .labels(selector)
        .limit(crate::cluster::PAGE);
    let mut by_node: BTreeMap<String, Vec<Pod>> = BTreeMap::new();
    c.for_each_page_of(&api, "pods", &lp, |page| {
        for pod in page {
            if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.clone()) {
                by_node.entry(node).or_default().push(pod);
            }
        }
        Ok::<(), ClusterError>(())
    })?;
    Ok(by_node)
}

/// Whether the pod runs with an address (not its readiness: an unhealthy node's bundle is
/// wanted most).
fn is_running(pod: &Pod) -> bool {
    let status = pod.status.as_ref();
    phase(pod) == "Running"
        && status.is_some_and(|s| s.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty()))
}

fn phase(pod: &Pod) -> String {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.clone())
        .unwrap_or_else(|| "unknown".into())
}

/// The index as text: a line per node, then the counts.
pub fn summary(index: &Index) -> String {
    let mut out = String::new();
    for l in &index.nodes {
        let line = match (&l.sha256, &l.message) {
            (Some(sha), _) => format!(
                "{}  ok  {} bytes  sha256 {sha}\n",
                l.node,
                l.size.unwrap_or(0)
            ),
            (None, m) => format!("{}  failed  {}\n", l.node, m.as_deref().unwrap_or_default()),
        };
        out.push_str(&line);
        for s in &l.skipped {
            out.push_str(&format!("{}  skipped {s}\n", l.node));
        }
    }
    out.push_str(&format!(
        "{} node(s): {} gathered, {} failed{}\n",
        index.nodes.len(),
        index.gathered,
        index.failed,
        if index.run_timed_out {
            "; the run's timeout came first"
        } else {
            ""
        }
    ));
    out
}

/// Writes the index (`index.json`, `index.txt`) into the output directory, each atomically.
pub fn write_index(out: &Path, index: &Index) -> std::io::Result<()> {
    let json = serde_json::to_vec_pretty(index).map_err(std::io::Error::other)?;
    for (name, body) in [
        ("index.json", json),
        ("index.txt", summary(index).into_bytes()),
    ] {
        let tmp = out.join(format!(".{name}.part"));
        fs_err::write(&tmp, body)?;
        fs_err::rename(&tmp, out.join(name))?;
    }
    Ok(())
}
