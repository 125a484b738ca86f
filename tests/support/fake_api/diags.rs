//! The fleet DaemonSet's pods' diagnostics endpoint, as kube-apiserver's pod proxy reaches it
//! (`fleet diags`): `GET /api/v1/namespaces/NS/pods/NAME:PORT/proxy/diags`.
//!
//! kube-apiserver's pod proxy (kubernetes/kubernetes `pkg/registry/core/pod/rest/subresources.go`,
//! `ProxyREST.Connect`) takes the pod's IP and the port named in the path
//! (`pkg/registry/core/pod/strategy.go`, `ResourceLocation`: neither the pod's readiness nor a
//! declared containerPort is asked), joins the path behind `/proxy` to it, and hands the
//! request to an `UpgradeAwareProxyHandler`, which relays the pod's status and body as they
//! come, with the request's own headers passed on (`UpgradeAwareHandler.ServeHTTP` clones them
//! into the reverse proxy's request) and the pod's answer's headers relayed. A pod with no IP
//! is refused before any dial; nothing listening at the address is the dial's own error
//! (k8s.io/apimachinery `pkg/util/proxy/transport.go`: `NewServiceUnavailable("error trying to
//! reach service: ...")`), which the proxy's responder writes as a `Status` in JSON, as the API
//! server writes every refusal of its own. A pod that accepts and never answers holds the
//! request until the client gives up.

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
    /// Answers with this status and sentence, unmarked (another program on the port).
    Status(u16, &'static str),
    /// CalicoNode's own answer without a bundle: its status and the word it marks it with
    /// (`diags_gather::ANSWER_HEADER`, as `supervise::diags_server` writes it).
    Node(u16, &'static str),
}

/// A pod's endpoint: the port it listens on and its answer.
#[derive(Clone)]
pub struct Endpoint {
    pub port: String,
    pub answer: Answer,
}

/// How long a silent endpoint holds the request: longer than any client waits.
const SILENT_FOR: Duration = Duration::from_secs(3600);

/// The proxy's answer to `GET /diags` of `ns/pod` at `port`, and how long it is held before
/// it is sent.
pub fn answer(
    endpoints: &BTreeMap<String, Endpoint>,
    objects: &BTreeMap<String, Value>,
    (ns, pod, port): (&str, &str, &str),
) -> (super::serve::Reply, Duration) {
    let api = |code: u16, reason: &str, message: String| {
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "message": message, "reason": reason, "code": code});
        let code = hyper::StatusCode::from_u16(code).expect("code");
        (super::serve::respond(code, &body), Duration::ZERO)
    };
    let Some(p) = objects.get(&format!("/api/v1/namespaces/{ns}/pods/{pod}")) else {
        return api(404, "NotFound", format!("pods \"{pod}\" not found"));
    };
    let Some(ip) = p["status"]["podIP"].as_str() else {
        return api(
            503,
            "ServiceUnavailable",
            format!("error trying to reach service: pod {pod} has no address"),
        );
    };
    let listening = endpoints
        .get(&format!("{ns}/{pod}"))
        .filter(|e| e.port == port && p["status"]["phase"] == "Running");
    let Some(e) = listening else {
        return api(
            503,
            "ServiceUnavailable",
            format!(
                "error trying to reach service: dial tcp {ip}:{port}: connect: connection refused"
            ),
        );
    };
    let (code, content_type, body, mark, delay) = match &e.answer {
        Answer::Bundle(b) => (
            200,
            "application/zip",
            b.clone(),
            Some("bundle"),
            Duration::ZERO,
        ),
        Answer::Silent => (200, "application/zip", Bytes::new(), None, SILENT_FOR),
        Answer::Status(code, s) => (*code, "text/plain", Bytes::from(*s), None, Duration::ZERO),
        Answer::Node(code, word) => (
            *code,
            "text/plain",
            Bytes::new(),
            Some(*word),
            Duration::ZERO,
        ),
    };
    let mut r = hyper::Response::new(http_body_util::Full::new(body));
    *r.status_mut() = hyper::StatusCode::from_u16(code).expect("code");
    r.headers_mut()
        .insert("content-type", content_type.parse().expect("header"));
    if let Some(word) = mark {
        r.headers_mut().insert(
            calicoctl_win::cluster::diags_gather::ANSWER_HEADER,
            word.parse().expect("header"),
        );
    }
    (r, delay)
}
