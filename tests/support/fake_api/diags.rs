//! The fleet DaemonSet's pods' diagnostics endpoint, as kube-apiserver's pod proxy reaches it
//! (`fleet diags`): `GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/diags`.
//!
//! kube-apiserver's pod proxy (kubernetes/kubernetes `pkg/registry/core/pod/rest/subresources.go`,
//! `ProxyREST.Connect`) takes the pod's IP and the port named in the path
//! (`pkg/registry/core/pod/strategy.go`, `ResourceLocation`: neither the pod's readiness nor a
//! declared containerPort is asked), joins the path behind `/proxy` to it, and hands the
//! request to an `UpgradeAwareProxyHandler`, which relays the pod's status and body as they
//! come. A pod with no IP is refused before any dial; nothing listening at the address is the
//! dial's own error, answered 503 ("error trying to reach service"). A pod that accepts and
//! never answers holds the request until the client gives up.

use bytes::Bytes;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// What a pod's endpoint does with `GET /diags`.
#[derive(Clone)]
pub enum Answer {
    /// Its bundle, whole.
    Bundle(Bytes),
    /// Accepts the connection and never answers.
    Silent,
    /// Answers with this status and sentence (the endpoint's own refusal).
    Status(u16, &'static str),
}

/// A pod's endpoint: the port it listens on and its answer.
#[derive(Clone)]
pub struct Endpoint {
    pub port: String,
    pub answer: Answer,
}

/// How long a silent endpoint holds the request: longer than any client waits.
const SILENT_FOR: Duration = Duration::from_secs(3600);

/// The proxy's answer to `GET /diags` of `ns/pod` at `port`: status, content type, body, and
/// how long it is held before it is sent.
pub fn answer(
    endpoints: &BTreeMap<String, Endpoint>,
    objects: &BTreeMap<String, Value>,
    (ns, pod, port): (&str, &str, &str),
) -> (u16, &'static str, Bytes, Duration) {
    let text = |code: u16, s: String| (code, "text/plain", Bytes::from(s), Duration::ZERO);
    let Some(p) = objects.get(&format!("/api/v1/namespaces/{ns}/pods/{pod}")) else {
        return text(404, format!("pods \"{pod}\" not found"));
    };
    let Some(ip) = p["status"]["podIP"].as_str() else {
        return text(
            503,
            format!("error trying to reach service: pod {pod} has no address"),
        );
    };
    let listening = endpoints
        .get(&format!("{ns}/{pod}"))
        .filter(|e| e.port == port && p["status"]["phase"] == "Running");
    let Some(e) = listening else {
        return text(
            503,
            format!(
                "error trying to reach service: dial tcp {ip}:{port}: connect: connection refused"
            ),
        );
    };
    match &e.answer {
        Answer::Bundle(b) => (200, "application/zip", b.clone(), Duration::ZERO),
        Answer::Silent => (200, "application/zip", Bytes::new(), SILENT_FOR),
        Answer::Status(code, s) => text(*code, (*s).to_owned()),
    }
}
