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
    /// Its bundle, whole, after the time the node took to build it: CalicoNode answers only
    /// once its child `diags --offline` made the zip (`supervise::diags_server`, `build_and_send`).
    Built(Duration, Bytes),
    /// Accepts the connection and never answers.
    Silent,
    /// Answers with this status and sentence, unmarked (another program on the port).
    Status(u16, &'static str),
    /// CalicoNode's own answer without a bundle: its status and the word it marks it with
    /// (`diags_gather::ANSWER_HEADER`, as `supervise::diags_server` writes it).
    Node(u16, &'static str),
    /// A real endpoint (CalicoNode's metrics server on loopback), relayed to (`relay`).
    Forward(std::net::SocketAddr),
}

/// A request to relay to a real endpoint once the server's state is let go (the endpoint's
/// review of the token calls the server back): where, what the pod proxy dialled, and the
/// request's token header.
#[derive(Clone)]
pub struct Relay {
    pub to: std::net::SocketAddr,
    pub dialled: String,
    pub token: Option<String>,
}

/// The pod proxy's relay of `GET /diags` to a real endpoint, as `UpgradeAwareHandler.ServeHTTP`
/// makes it (k8s.io/apimachinery `pkg/util/proxy/upgradeaware.go`: the request's headers cloned
/// onto an `httputil.ReverseProxy` request to the pod's address, in plain HTTP unless the path
/// names `https:`), its answer's status, headers and body relayed back; nothing listening is
/// the dial's error as a `Status` 503 (`pkg/util/proxy/transport.go`). No timeout of its own:
/// an endpoint that never answers holds the request until the client gives up.
pub async fn relay(r: Relay) -> super::serve::Reply {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let refused = |why: String| {
        let body = serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Failure", "reason": "ServiceUnavailable", "code": 503,
            "message": format!("error trying to reach service: dial tcp {}: {why}", r.dialled)});
        super::serve::respond(hyper::StatusCode::SERVICE_UNAVAILABLE, &body)
    };
    let mut conn = match tokio::net::TcpStream::connect(r.to).await {
        Ok(c) => c,
        Err(e) => return refused(e.to_string()),
    };
    let token = r
        .token
        .as_deref()
        .map(|t| format!("{}: {t}\r\n", calicoctl_win::fleet::diags::auth::HEADER))
        .unwrap_or_default();
    let request = format!(
        "GET /diags HTTP/1.1\r\nHost: {}\r\nUser-Agent: kube-apiserver\r\nAccept-Encoding: gzip\r\n{token}\r\n",
        r.dialled
    );
    if let Err(e) = conn.write_all(request.as_bytes()).await {
        return refused(e.to_string());
    }
    let mut all = Vec::new();
    let _ = conn.read_to_end(&mut all).await;
    let Some(end) = all.windows(4).position(|w| w == b"\r\n\r\n") else {
        return refused("the pod's answer has no head".into());
    };
    let head = String::from_utf8_lossy(&all[..end]).into_owned();
    let mut lines = head.split("\r\n");
    let code = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse::<u16>().ok())
        .unwrap_or(502);
    let mut reply = hyper::Response::new(http_body_util::Full::new(Bytes::from(
        all[end + 4..].to_vec(),
    )));
    *reply.status_mut() = hyper::StatusCode::from_u16(code).expect("code");
    for (name, value) in lines.filter_map(|l| l.split_once(':')) {
        let name = name.trim().to_ascii_lowercase();
        // Hop-by-hop and framing headers are the relay's own (net/http/httputil's
        // `removeHopByHopHeaders`; the body's length is set anew).
        if [
            "connection",
            "content-length",
            "transfer-encoding",
            "keep-alive",
        ]
        .contains(&name.as_str())
        {
            continue;
        }
        if let (Ok(n), Ok(v)) = (
            hyper::header::HeaderName::from_bytes(name.as_bytes()),
            hyper::header::HeaderValue::from_str(value.trim()),
        ) {
            reply.headers_mut().insert(n, v);
        }
    }
    reply
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
    token: Option<String>,
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
    if let Answer::Forward(to) = e.answer {
        let mut r = hyper::Response::new(http_body_util::Full::new(Bytes::new()));
        r.extensions_mut().insert(Relay {
            to,
            dialled: format!("{ip}:{port}"),
            token,
        });
        return (r, Duration::ZERO);
    }
    let (code, content_type, body, mark, delay) = match &e.answer {
        Answer::Bundle(b) => (
            200,
            "application/zip",
            b.clone(),
            Some("bundle"),
            Duration::ZERO,
        ),
        Answer::Built(took, b) => (200, "application/zip", b.clone(), Some("bundle"), *took),
        Answer::Silent => (200, "application/zip", Bytes::new(), None, SILENT_FOR),
        Answer::Status(code, s) => (*code, "text/plain", Bytes::from(*s), None, Duration::ZERO),
        Answer::Node(code, word) => (
            *code,
            "text/plain",
            Bytes::new(),
            Some(*word),
            Duration::ZERO,
        ),
        Answer::Forward(_) => unreachable!("relayed above"),
    };
    let mut r = hyper::Response::new(http_body_util::Full::new(body));
    *r.status_mut() = hyper::StatusCode::from_u16(code).expect("code");
    r.headers_mut()
        .insert("content-type", content_type.parse().expect("header"));
    if let Some(word) = mark {
        r.headers_mut().insert(
            calicoctl_win::fleet::diags::ANSWER_HEADER,
            word.parse().expect("header"),
        );
    }
    (r, delay)
}
