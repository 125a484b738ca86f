//! netexec's `/dial`, asked through the API server's pod proxy (`pods/NAME:PORT/proxy`) and its
//! answer read (kubernetes/kubernetes `test/images/agnhost/netexec/netexec.go`, `dialHandler`:
//! 200 with `responses` and `errors`, 400 for a name that does not resolve).

use super::image::HTTP_PORT;
use super::matrix::{Role, Target};
use serde::Deserialize;
use std::collections::BTreeMap;

/// The Service in front of the server: its name, and the port it serves on.
pub const SERVICE_NAME: &str = "server";
pub const SERVICE_PORT: i32 = 80;

/// What the run learned about the addresses a check can dial.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Addresses {
    pub namespace: String,
    /// The run's names: its pods' and its Service's.
    pub names: super::matrix::Names,
    pub pods: BTreeMap<Role, String>,
    pub service_ip: Option<String>,
    pub api_server_ip: Option<String>,
    /// The cluster's DNS domain (`--cluster-domain`, kubelet's `clusterDomain`).
    pub cluster_domain: String,
}

/// One `/dial` to ask a client pod, and the answer that counts as reaching the target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dial {
    /// The API path of the client pod's proxy, with the query.
    pub path: String,
    /// The body a reached target answers (`/hostname`: the server's name); None: any body.
    pub expect: Option<String>,
    /// The host, when it is a name the client pod looks up first (not an address).
    pub name: Option<String>,
}

/// The `/dial` for a client pod to a target, or None when an address is not known (the pod
/// has none: judged by the pod-address check).
pub fn dial(from: Role, to: &Target, a: &Addresses) -> Option<Dial> {
    let port = HTTP_PORT.to_string();
    let (host, port, request, expect) = match to {
        Target::Pods => return None,
        Target::Pod(r) => (a.pods.get(r)?.clone(), port, "hostname", Some(r.pod_name())),
        Target::ServiceIp => (
            a.service_ip.clone()?,
            SERVICE_PORT.to_string(),
            "hostname",
            Some(Role::Server.pod_name()),
        ),
        // The Service's single label: the client is in its namespace, whose suffix is the
        // one a Windows pod searches; a name with a dot is taken as fully qualified there
        // (Kubernetes' docs, "DNS for Services and Pods", DNS resolution on Windows nodes).
        Target::ServiceName => (
            a.names.of(SERVICE_NAME),
            SERVICE_PORT.to_string(),
            "hostname",
            Some(Role::Server.pod_name()),
        ),
        // Plain HTTP to the API server's TLS port: Go's TLS server answers it with a 400 and a
        // body ("Client sent an HTTP request to an HTTPS server."), which dialHTTP returns as
        // a response: the connection was made.
        Target::ApiServerIp => (a.api_server_ip.clone()?, "443".into(), "healthz", None),
        // Fully qualified for the same reason (`kubernetes.default` resolves on Linux only),
        // in the cluster's domain (kubelet's `clusterDomain`, `--cluster-domain`).
        Target::KubernetesName => (
            format!("kubernetes.default.svc.{}", a.cluster_domain),
            "443".into(),
            "healthz",
            None,
        ),
        Target::External(addr) => {
            let (h, p) = addr.rsplit_once(':')?;
            (h.to_owned(), p.to_owned(), "", None)
        }
    };
    Some(Dial {
        path: proxy_path(
            &a.namespace,
            &a.names.of(from.pod_name()),
            &host,
            &port,
            request,
        ),
        expect: expect.map(str::to_owned),
        name: host.parse::<std::net::IpAddr>().is_err().then_some(host),
    })
}

/// The pod proxy path of netexec's `/dial`. Every value is a name, an address or a port,
/// encoded for the query all the same.
pub fn proxy_path(ns: &str, pod: &str, host: &str, port: &str, request: &str) -> String {
    let q = |s: &str| -> String {
        s.bytes()
            .map(|b| match b {
                b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                    char::from(b).to_string()
                }
                _ => format!("%{b:02X}"),
            })
            .collect()
    };
    // An empty request is a 400 in netexec: "/" is what the egress check asks.
    let request = if request.is_empty() { "/" } else { request };
    format!(
        "/api/v1/namespaces/{ns}/pods/{pod}:{HTTP_PORT}/proxy/dial?request={}&protocol=http&host={}&port={}&tries=1",
        q(request),
        q(host),
        q(port)
    )
}

/// What a `/dial` came back with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Answer {
    /// The client pod reached the target; the bodies it got.
    Reached(Vec<String>),
    /// The client pod tried and failed (refused, timed out): netexec's errors.
    Failed(Vec<String>),
    /// The client pod could not resolve the host name (netexec's 400).
    Unresolved(String),
    /// The API server could not reach the client pod (its own 5xx), or no answer in time.
    NoProxy(String),
}

#[derive(Deserialize, Default)]
struct Json {
    #[serde(default)]
    responses: Vec<String>,
    #[serde(default)]
    errors: Vec<String>,
}

/// Reads the proxy's answer: its status and body (already capped by the caller).
pub fn answer(status: u16, body: &str) -> Answer {
    match status {
        200 => {
            let Ok(j) = serde_json::from_str::<Json>(body) else {
                return Answer::NoProxy(format!(
                    "netexec answered what is not its JSON: {body:.200}"
                ));
            };
            // netexec writes each key only when its list is not empty (`dialHandler`): a 200
            // `{}` has no error, so the dial is counted as reached.
            if j.responses.is_empty() && !j.errors.is_empty() {
                Answer::Failed(j.errors)
            } else {
                Answer::Reached(j.responses)
            }
        }
        400 if body.contains("host and/or port param are invalid") => {
            Answer::Unresolved(body.trim().to_owned())
        }
        _ => Answer::NoProxy(format!("HTTP {status}: {:.200}", body.trim())),
    }
}

/// Whether an answer reached the expected target.
pub fn reached(a: &Answer, expect: Option<&str>) -> bool {
    match a {
        Answer::Reached(bodies) => match expect {
            Some(name) => bodies.iter().any(|b| b.trim() == name),
            None => true,
        },
        _ => false,
    }
}

#[cfg(test)]
#[path = "dial_tests.rs"]
mod tests;
