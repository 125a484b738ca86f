//! What a cluster's nodes do with the pods `verify` makes, for the fake API server: the
//! scheduler and the kubelet run a pod (an address, Running, Ready), the ClusterIP allocator
//! gives a Service its address, the namespace controller empties a deleted namespace, and the
//! pod proxy answers agnhost netexec's `/dial` from a scripted dataplane (which pairs connect,
//! which time out), NetworkPolicies taking effect after a programmable delay.
//!
//! Each stand-in and where the real behaviour is written:
//! - binding: kube-scheduler's NodeAffinity plugin honours a required `matchFields`
//!   `metadata.name` term (pkg/scheduler/framework/plugins/nodeaffinity), so the pod's
//!   `spec.nodeName` is that node; here it is set at once.
//! - running: the kubelet's SyncPod makes the sandbox (the CNI plugin gives the address,
//!   `status.podIP`) and starts the containers (pkg/kubelet/kuberuntime/kuberuntime_manager.go);
//!   a sandbox that fails is a `FailedCreatePodSandBox` event and the container stays waiting
//!   `ContainerCreating` (`stuck_on`). Ready follows the readiness probe
//!   (pkg/kubelet/status/generate.go); netexec's `/healthz` answers at once.
//! - Services: kube-apiserver allocates `spec.clusterIP` from the service CIDR on create
//!   (pkg/registry/core/service/ipallocator).
//! - namespaces: deleting one makes the namespace controller delete everything in it before
//!   the namespace goes (pkg/controller/namespace/deletion/namespaced_resources_deleter.go);
//!   here both happen at once.
//! - the pod proxy: `GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/PATH`
//!   (pkg/registry/core/pod/rest/subresources.go `ProxyREST`) forwards to the pod's address;
//!   a pod without one cannot be reached (503).
//! - `/dial`: test/images/agnhost/netexec/netexec.go `dialHandler` (see src/verify/dial.rs):
//!   200 with `responses` or `errors`; a name that does not resolve is a 400.

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

/// The scripted dataplane: healthy by default.
#[derive(Default)]
pub struct Dataplane {
    /// Pods on Windows nodes and pods on Linux nodes do not reach each other (VXLAN broken),
    /// nor does the API server (on a Linux node) reach pods on Windows nodes.
    pub no_overlay: bool,
    /// ClusterIPs do not reach their backends from pods on Windows nodes (no HNS load balancer).
    pub no_service_lb: bool,
    /// Names do not resolve in pods on Windows nodes.
    pub no_dns: bool,
    /// The kubelet's readiness probe never reaches the pods (Ready stays False).
    pub never_ready: bool,
    /// Nodes whose pods get no address (the CNI plugin fails the sandbox).
    pub stuck_on: BTreeSet<String>,
    /// The sandbox on a `stuck_on` node is made by the kubelet's retry this long after the
    /// failure (the pod worker syncs the pod again: pkg/kubelet/kuberuntime/kuberuntime_manager.go
    /// `SyncPod` step 4 records `FailedCreatePodSandBox` and returns, pkg/kubelet/pod_workers.go
    /// requeues the pod); `None`: never. The container then starts, the image already present
    /// (`Pulled`, pkg/kubelet/images/image_manager.go).
    pub sandbox_retried_after: Option<Duration>,
    /// How long after its creation a NetworkPolicy is enforced; `None`: never.
    pub policy_applies_after: Option<Duration>,
    /// How long after its deletion a NetworkPolicy stops being enforced; `None`: never.
    pub policy_removed_after: Option<Duration>,
    /// Nodes whose HNS applies no endpoint ACL, so no NetworkPolicy drops a packet to their
    /// pods: Windows Server 2025 before its April 2026 update (KB5082063, 26100.32690;
    /// microsoft/Windows-Containers#616). From that update an endpoint with any ACL denies
    /// what none allows (Microsoft on #616, 2026-05-11); Felix from v3.29.0 ends every tier
    /// with its own verdict and allows the host (endpoint_mgr.go), so such a node enforces
    /// policy as this dataplane does by default.
    pub acls_ignored_on: BTreeSet<String>,
    /// Every pod the kubelets ran, as made (its `spec.nodeName` set).
    pub pods_run: Vec<Value>,
    /// Addresses outside the cluster that answer (`host:port`).
    pub outside: BTreeSet<String>,
    /// How long the image pull takes on every node (`Duration::MAX`: it never ends); none by
    /// default (the image is present).
    pub pull_takes: Option<Duration>,
    /// Nodes that hold as many pods as they may (kube-scheduler's NodeResourcesFit: "Too many
    /// pods"; scheduler.rs).
    pub full: BTreeSet<String>,
    /// Nodes whose probe container does not run (it exits and the kubelet backs off).
    pub crash_on: BTreeSet<String>,
    /// The API server does not reach the pods (its pod proxy answers 503).
    pub proxy_broken: bool,
    /// A name's lookup in a Windows pod never returns (the answer comes after `slow_for`).
    pub dns_hangs: bool,
    /// How long the answer to a hanging lookup takes.
    pub slow_for: Duration,
    /// How long a new pod is not reached by others after it runs (Felix and kube-proxy
    /// programming its endpoint).
    pub programmed_after: Duration,
    /// How long a dial that reaches nothing takes to come back (netexec's HTTP client gives
    /// up after 5 s, `createHTTPClient`).
    pub refused_takes: Duration,
    /// A deleted namespace stays Terminating (a finalizer that is not done).
    pub namespaces_linger: bool,
    /// A deleted pod stays Terminating: its kubelet never confirms the delete (its containers
    /// do not stop), as a dead node's kubelet does not (serve.rs `delete`; a deleted
    /// namespace's pods too, namespace_controller.rs, which then hold it Terminating).
    pub pods_linger: bool,
    /// The cluster's DNS domain (kubelet's `clusterDomain`); `cluster.local` when `None`.
    pub cluster_domain: Option<String>,
    /// A test's scripted event, not a modelled behaviour: the node stops posting its status
    /// (Ready `Unknown`, as the node lifecycle controller marks it) as soon as the pod of this
    /// name runs on it, once. A test that waits for the pod from outside may miss it on a
    /// loaded machine; this happens under the server's lock, between two requests of the run.
    pub node_dies_when_running: Option<String>,
    /// Pods pulling their image, by object path, until when.
    pulling: Vec<(String, Instant)>,
    /// When each pod by name ran.
    ran: BTreeMap<String, Instant>,
    /// NetworkPolicies by `namespace/name`: the labels their pod selector matches, when made,
    /// and when deleted.
    policies: BTreeMap<String, (Value, Instant, Option<Instant>)>,
    next_pod: u32,
    next_service: u32,
}

impl Dataplane {
    pub fn healthy() -> Self {
        Self {
            policy_applies_after: Some(Duration::ZERO),
            policy_removed_after: Some(Duration::ZERO),
            ..Default::default()
        }
    }
}

fn node_os(objects: &BTreeMap<String, Value>, node: &str) -> String {
    objects
        .get(&format!("/api/v1/nodes/{node}"))
        .and_then(|n| n["metadata"]["labels"]["kubernetes.io/os"].as_str())
        .unwrap_or("linux")
        .to_owned()
}

/// A pod being made: bound to the node its affinity names, run, given an address (or left
/// waiting with an event on a node whose CNI fails). Returns the event to keep, if any.
pub fn run_pod(d: &mut Dataplane, ns: &str, pod: &mut Value) -> Option<Value> {
    let node = pod["spec"]["affinity"]["nodeAffinity"]
        ["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"][0]
        ["matchFields"][0]["values"][0]
        .as_str()
        .or(pod["spec"]["nodeName"].as_str())?
        .to_owned();
    pod["spec"]["nodeName"] = json!(node);
    d.pods_run.push(pod.clone());
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    if d.crash_on.contains(&node) {
        // The kubelet restarts a container that exits with a growing back-off
        // (pkg/kubelet/kuberuntime/kuberuntime_manager.go `doBackOff`: `CrashLoopBackOff`);
        // the sandbox, and so the address, stays.
        d.next_pod += 1;
        let ip = format!("10.244.{}.{}", d.next_pod / 200, 10 + d.next_pod % 200);
        pod["status"] = json!({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [{"name": "netexec", "ready": false, "state": {"waiting": {
                "reason": "CrashLoopBackOff",
                "message": "back-off 10s restarting failed container=netexec"}}}]});
        return None;
    }
    if let Some(takes) = d.pull_takes {
        // The kubelet pulls before it starts the container: `Pulling` said, the container
        // waiting `ContainerCreating` (pkg/kubelet/images/image_manager.go `EnsureImageExists`,
        // pkg/kubelet/events/event.go `PullingImage`).
        pod["status"] = json!({"phase": "Pending", "containerStatuses": [{"name": "netexec",
            "ready": false, "state": {"waiting": {"reason": "ContainerCreating"}}}]});
        let path = format!("/api/v1/namespaces/{ns}/pods/{name}");
        let due = Instant::now()
            .checked_add(takes)
            .unwrap_or(Instant::now() + Duration::from_secs(86_400));
        d.pulling.push((path, due));
        return Some(event(
            ns,
            &name,
            "Pulling",
            "Pulling image \"registry.k8s.io/e2e-test-images/agnhost:2.62\"",
        ));
    }
    if d.stuck_on.contains(&node) {
        pod["status"] = json!({"phase": "Pending", "containerStatuses": [{"name": "netexec",
            "ready": false, "state": {"waiting": {"reason": "ContainerCreating"}}}]});
        if let Some(after) = d.sandbox_retried_after {
            d.pulling.push((
                format!("/api/v1/namespaces/{ns}/pods/{name}"),
                Instant::now() + after,
            ));
        }
        return Some(json!({"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": format!("{name}.sandbox"), "namespace": ns},
            "involvedObject": {"kind": "Pod", "name": name, "namespace": ns},
            "reason": "FailedCreatePodSandBox", "type": "Warning",
            "message": "plugin type=\"calico\" failed (add): error getting ClusterInformation: connection is unauthorized"}));
    }
    started(d, pod);
    None
}

fn event(ns: &str, pod: &str, reason: &str, message: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": format!("{pod}.{}", reason.to_lowercase()), "namespace": ns},
        "involvedObject": {"kind": "Pod", "name": pod, "namespace": ns},
        "reason": reason, "type": "Normal", "message": message})
}

/// The pulls whose time has come end: `Pulled` said, the pod runs. Called on every request.
pub fn advance(d: &mut Dataplane, objects: &mut BTreeMap<String, Value>) {
    let now = Instant::now();
    let (done, left): (Vec<_>, Vec<_>) = d.pulling.drain(..).partition(|(_, due)| *due <= now);
    d.pulling = left;
    for (path, _) in done {
        let Some(mut pod) = objects.get(&path).cloned() else {
            continue;
        };
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        let name = pod["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        started(d, &mut pod);
        let mut e = event(&ns, &name, "Pulled", "Successfully pulled image");
        e["involvedObject"]["uid"] = pod["metadata"]["uid"].clone();
        objects.insert(path, pod);
        objects.insert(format!("/api/v1/namespaces/{ns}/events/{name}.pulled"), e);
    }
}

/// A pod whose container started: an address, Running; Ready at once unless it has a
/// readiness probe and the probe never reaches it (a container without one is Ready once it
/// runs: pkg/kubelet/prober/prober_manager.go `UpdatePodStatus`).
fn started(d: &mut Dataplane, pod: &mut Value) {
    d.next_pod += 1;
    let ip = format!("10.244.{}.{}", d.next_pod / 200, 10 + d.next_pod % 200);
    let probed = pod["spec"]["containers"][0]["readinessProbe"].is_object();
    let ready = if d.never_ready && probed {
        "False"
    } else {
        "True"
    };
    if let Some(n) = pod["metadata"]["name"].as_str() {
        d.ran.insert(n.to_owned(), Instant::now());
    }
    pod["status"] = json!({"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
        "conditions": [{"type": "Ready", "status": ready}],
        "containerStatuses": [{"name": "netexec", "ready": true, "state": {"running": {}}}]});
}

/// A Service being made gets its ClusterIP.
pub fn allocate(d: &mut Dataplane, service: &mut Value) {
    if service["spec"]["clusterIP"].is_string() {
        return;
    }
    d.next_service += 1;
    service["spec"]["clusterIP"] = json!(format!("10.96.1.{}", d.next_service));
}

/// A NetworkPolicy made or deleted, by `namespace/name`.
pub fn policy_made(d: &mut Dataplane, key: String, policy: &Value) {
    let selects = policy["spec"]["podSelector"]["matchLabels"].clone();
    d.policies.insert(key, (selects, Instant::now(), None));
}

pub fn policy_deleted(d: &mut Dataplane, key: &str) {
    if let Some(p) = d.policies.get_mut(key) {
        p.2 = Some(Instant::now());
    }
}

/// Whether a NetworkPolicy denies ingress to pod `p` now (Felix enforces it: a policy with
/// `policyTypes: [Ingress]` and no rule drops every packet to the pods it selects).
fn denied(d: &Dataplane, p: &Value) -> bool {
    let ns = p["metadata"]["namespace"].as_str().unwrap_or_default();
    let node = p["spec"]["nodeName"].as_str().unwrap_or_default();
    !d.acls_ignored_on.contains(node)
        && d.policies.iter().any(|(k, (selects, made, gone))| {
            k.starts_with(&format!("{ns}/"))
                && selects
                    .as_object()
                    .is_some_and(|m| m.iter().all(|(l, v)| p["metadata"]["labels"][l] == *v))
                && d.policy_applies_after.is_some_and(|a| made.elapsed() >= a)
                && match gone {
                    None => true,
                    Some(g) => d.policy_removed_after.is_none_or(|r| g.elapsed() < r),
                }
        })
}

/// The path of a pod proxy request: namespace, pod, port, the path behind it.
pub fn proxy_target(path: &str) -> Option<(String, String, String, String)> {
    let rest = path.strip_prefix("/api/v1/namespaces/")?;
    let (ns, rest) = rest.split_once("/pods/")?;
    let (pod, rest) = rest.split_once("/proxy")?;
    let (pod, port) = pod.split_once(':').unwrap_or((pod, "80"));
    Some((ns.into(), pod.into(), port.into(), rest.into()))
}

/// How long the answer to a pod proxy request takes: a name's lookup that hangs in the pod
/// (netexec's `net.ResolveTCPAddr` before its 5 s dial, not bounded by it).
pub fn delay(d: &Dataplane, query: &BTreeMap<String, String>, body: &str) -> Duration {
    if body.starts_with("{\"errors\"") {
        return d.refused_takes;
    }
    let name = query
        .get("host")
        .is_some_and(|h| h.parse::<std::net::IpAddr>().is_err());
    if d.dns_hangs && name {
        d.slow_for
    } else {
        Duration::ZERO
    }
}

/// What the API server answers a pod proxy request with: its status and body.
pub fn proxy(
    d: &Dataplane,
    objects: &BTreeMap<String, Value>,
    (ns, pod, rest): (&str, &str, &str),
    query: &BTreeMap<String, String>,
) -> (u16, String) {
    let Some(client) = objects.get(&format!("/api/v1/namespaces/{ns}/pods/{pod}")) else {
        return (404, format!("pods \"{pod}\" not found"));
    };
    let Some(_ip) = client["status"]["podIP"].as_str() else {
        return (
            503,
            format!("error trying to reach service: pod {pod} has no address"),
        );
    };
    if d.proxy_broken {
        return (
            503,
            format!("error trying to reach service: dial tcp {_ip}:8080: i/o timeout"),
        );
    }
    // kube-apiserver dials the pod's own IP for the pod proxy (kubernetes/kubernetes
    // `pkg/registry/core/pod/strategy.go`, `ResourceLocation`: the location is the pod IP and
    // port), from the control plane's node, which is Linux: a Windows pod is then reached
    // across the overlay between the OSes.
    let pod_os = node_os(
        objects,
        client["spec"]["nodeName"].as_str().unwrap_or_default(),
    );
    if d.no_overlay && pod_os == "windows" {
        return (
            503,
            format!("error trying to reach service: dial tcp {_ip}:8080: i/o timeout"),
        );
    }
    if client["status"]["containerStatuses"][0]["state"]["running"].is_null() {
        // Nothing listens at the address: kube-apiserver's proxy says so itself.
        return (
            503,
            format!(
                "error trying to reach service: dial tcp {_ip}:8080: connect: connection refused"
            ),
        );
    }
    if rest == "/healthz" {
        return (200, String::new());
    }
    if rest != "/dial" {
        return (404, "404 page not found".into());
    }
    let (Some(host), Some(port)) = (query.get("host"), query.get("port")) else {
        return (400, "host and/or port param are invalid. missing".into());
    };
    let request = query.get("request").cloned().unwrap_or_default();
    if request.is_empty() {
        return (400, "request parameter not specified. <nil>".into());
    }
    let from_os = node_os(
        objects,
        client["spec"]["nodeName"].as_str().unwrap_or_default(),
    );
    if d.dns_hangs && from_os == "windows" && host.parse::<std::net::IpAddr>().is_err() {
        return (
            400,
            format!(
                "host and/or port param are invalid. lookup {host} on 10.96.0.10:53: read udp: i/o timeout"
            ),
        );
    }
    let Some(ip) = resolve(d, objects, (host, ns), &from_os) else {
        return (
            400,
            format!("host and/or port param are invalid. lookup {host}: no such host"),
        );
    };
    let url = format!("http://{ip}:{port}/{}", request.trim_start_matches('/'));
    let body = match reach(d, objects, &ip, port, &from_os) {
        Some(answer) => json!({"responses": [answer]}),
        None => json!({"errors": [format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )]}),
    };
    (200, body.to_string())
}

/// A name as the pod's resolver finds it: an address stays one; `SVC.NS.svc.DOMAIN`
/// is the Service's ClusterIP, and so is a single label `SVC` in the pod's own namespace
/// `ns` (its search suffix). A partly qualified name (`SVC.NS`, `kubernetes.default`) resolves
/// from a Linux pod (the search list), never from a Windows pod: Windows takes a name with a
/// dot as fully qualified and has one DNS suffix, the pod's namespace's (Kubernetes' docs,
/// "DNS for Services and Pods", DNS resolution on Windows nodes: "you can resolve both
/// kubernetes.default.svc.cluster.local and kubernetes, but not the partially qualified
/// names (kubernetes.default or kubernetes.default.svc)").
fn resolve(
    d: &Dataplane,
    objects: &BTreeMap<String, Value>,
    (host, ns): (&str, &str),
    from_os: &str,
) -> Option<String> {
    if host.parse::<std::net::IpAddr>().is_ok() {
        return Some(host.to_owned());
    }
    if d.no_dns && from_os == "windows" {
        return None;
    }
    let domain = d.cluster_domain.as_deref().unwrap_or("cluster.local");
    let fqdn = host.strip_suffix(&format!(".svc.{domain}"));
    let (svc, svc_ns) = match (fqdn, host.split_once('.')) {
        (Some(name), _) => name.split_once('.')?,
        (None, None) => (host, ns),
        (None, Some(_)) if from_os == "windows" => return None,
        (None, Some((svc, rest))) => (svc, rest.split('.').next()?),
    };
    objects.get(&format!("/api/v1/namespaces/{svc_ns}/services/{svc}"))?["spec"]["clusterIP"]
        .as_str()
        .map(str::to_owned)
}

/// What answers at `ip:port` from a pod on `from_os`: a pod's hostname, the API server's
/// plain-HTTP refusal, an outside address's page; `None` when the packets go nowhere.
fn reach(
    d: &Dataplane,
    objects: &BTreeMap<String, Value>,
    ip: &str,
    port: &str,
    from_os: &str,
) -> Option<String> {
    let pods = objects
        .iter()
        .filter(|(k, _)| k.contains("/pods/"))
        .map(|(_, v)| v);
    if let Some(p) = pods.clone().find(|p| p["status"]["podIP"] == ip) {
        return pod_answers(d, objects, p, from_os);
    }
    let services = objects
        .iter()
        .filter(|(k, _)| k.contains("/services/"))
        .map(|(_, v)| v);
    if let Some(s) = services.clone().find(|s| s["spec"]["clusterIP"] == ip) {
        if d.no_service_lb && from_os == "windows" {
            return None;
        }
        if s["metadata"]["name"] == "kubernetes" && s["metadata"]["namespace"] == "default" {
            return Some("Client sent an HTTP request to an HTTPS server.\n".into());
        }
        let selector = s["spec"]["selector"].as_object()?;
        // Only Ready pods are a Service's endpoints (pkg/controller/endpointslice's
        // `ready` condition, which kube-proxy balances to).
        let backend = pods.clone().find(|p| {
            p["metadata"]["namespace"] == s["metadata"]["namespace"]
                && p["status"]["conditions"][0]["status"] == "True"
                && selector
                    .iter()
                    .all(|(k, v)| p["metadata"]["labels"][k] == *v)
        })?;
        return pod_answers(d, objects, backend, from_os);
    }
    d.outside
        .contains(&format!("{ip}:{port}"))
        .then(|| "outside".to_owned())
}

fn pod_answers(
    d: &Dataplane,
    objects: &BTreeMap<String, Value>,
    p: &Value,
    from_os: &str,
) -> Option<String> {
    let to_os = node_os(objects, p["spec"]["nodeName"].as_str().unwrap_or_default());
    if d.no_overlay && to_os != from_os {
        return None;
    }
    if denied(d, p) {
        return None;
    }
    let name = p["metadata"]["name"].as_str().unwrap_or_default();
    if d.ran
        .get(name)
        .is_some_and(|t| t.elapsed() < d.programmed_after)
    {
        return None;
    }
    // netexec's `/hostname` is the pod's host name: `spec.hostname` when set, else its name
    // (kubernetes `pkg/kubelet/kubelet_pods.go`, `GeneratePodHostNameAndDomain`).
    p["spec"]["hostname"]
        .as_str()
        .or(p["metadata"]["name"].as_str())
        .map(str::to_owned)
}
