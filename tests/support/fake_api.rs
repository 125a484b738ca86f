//! A fake Kubernetes API server: a test double, not a cluster. It serves real Kubernetes JSON
//! over HTTPS (its own CA, made with rcgen) on loopback, checks a bearer token, keeps objects
//! by their API path, answers 401/403/404 where a real server would, and records requests.

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// The objects and rules the server answers from.
#[derive(Default)]
pub struct State {
    /// Objects by path, like `/api/v1/namespaces/calico-system`.
    pub objects: BTreeMap<String, Value>,
    /// `(verb, resource)` pairs the identity may not do: requests get 403, access reviews
    /// `allowed: false`.
    pub forbidden: Vec<(String, String)>,
    /// Every request: method and path.
    pub requests: Vec<(String, String)>,
}

/// A running fake API server; it stops when dropped.
pub struct FakeApi {
    pub url: String,
    pub token: String,
    pub ca_pem: String,
    pub state: Arc<Mutex<State>>,
    _runtime: tokio::runtime::Runtime,
}

impl FakeApi {
    pub fn start() -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let ca_key = rcgen::KeyPair::generate().expect("key");
        let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).expect("params");
        ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca_params
            .distinguished_name
            .push(rcgen::DnType::CommonName, "fake-api-ca");
        let ca = rcgen::CertifiedIssuer::self_signed(ca_params, ca_key).expect("ca");
        let key = rcgen::KeyPair::generate().expect("key");
        let params = rcgen::CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()])
            .expect("params");
        let cert = params.signed_by(&key, &ca).expect("cert");

        let config = rustls::ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls::pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .expect("tls config");
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind loopback");
        let port = listener.local_addr().expect("addr").port();
        let token = "fake-admin-token-0123456789".to_owned();
        let state = Arc::new(Mutex::new(State::default()));
        let (st, tok) = (state.clone(), token.clone());
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let (acceptor, st, tok) = (acceptor.clone(), st.clone(), tok.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let service = hyper::service::service_fn(move |req| {
                        let (st, tok) = (st.clone(), tok.clone());
                        async move { Ok::<_, hyper::Error>(handle(req, &st, &tok).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), service)
                        .await;
                });
            }
        });
        Self {
            url: format!("https://127.0.0.1:{port}"),
            token,
            ca_pem: ca.pem(),
            state,
            _runtime: runtime,
        }
    }

    /// Stores an object at its API path.
    pub fn put(&self, path: &str, object: Value) {
        self.lock().objects.insert(path.to_owned(), object);
    }

    pub fn forbid(&self, verb: &str, resource: &str) {
        self.lock().forbidden.push((verb.into(), resource.into()));
    }

    pub fn requests(&self) -> Vec<(String, String)> {
        self.lock().requests.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("fake api state")
    }

    /// Writes an admin kubeconfig for this server into `dir` (the CA as a file beside it) and
    /// returns its path. `token` overrides the valid token.
    pub fn kubeconfig(&self, dir: &Path, token: Option<&str>) -> PathBuf {
        let ca = dir.join("fake-api-ca.pem");
        std::fs::write(&ca, &self.ca_pem).expect("write ca");
        let path = dir.join("admin.kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: admin\n  user:\n    token: {}\ncontexts:\n- name: fake\n  context:\n    cluster: fake\n    user: admin\ncurrent-context: fake\n",
            self.url,
            ca.display(),
            token.unwrap_or(&self.token)
        );
        std::fs::write(&path, text).expect("write kubeconfig");
        path
    }

    /// A cluster with Calico installed by the operator the way Windows nodes want it: VXLAN
    /// pool, strictAffinity, FelixConfiguration with VNI 4096, kube-dns, node `win-1`.
    pub fn healthy_calico(&self) {
        let crd = "/apis/crd.projectcalico.org/v1";
        self.put(
            "/api/v1/namespaces/calico-system",
            meta("v1", "Namespace", "calico-system", None),
        );
        self.put(&format!("{crd}/clusterinformations/default"), calico("ClusterInformation", "default", json!({"calicoVersion": "v3.30.2", "datastoreType": "kubernetes", "clusterType": "k8s,operator"})));
        self.put(&format!("{crd}/ippools/default-ipv4-ippool"), calico("IPPool", "default-ipv4-ippool", json!({"cidr": "10.244.0.0/16", "blockSize": 26, "ipipMode": "Never", "vxlanMode": "Always", "natOutgoing": true})));
        self.put(
            &format!("{crd}/ipamconfigs/default"),
            calico(
                "IPAMConfig",
                "default",
                json!({"strictAffinity": true, "autoAllocateBlocks": true}),
            ),
        );
        self.put(&format!("{crd}/felixconfigurations/default"), calico("FelixConfiguration", "default", json!({"vxlanEnabled": true, "vxlanVNI": 4096, "vxlanPort": 4789, "ipipEnabled": false})));
        let mut dns = meta("v1", "Service", "kube-dns", Some("kube-system"));
        dns["spec"] = json!({"clusterIP": "10.96.0.10", "ports": [{"name": "dns", "port": 53, "protocol": "UDP"}]});
        self.put("/api/v1/namespaces/kube-system/services/kube-dns", dns);
        let mut cidr = meta("networking.k8s.io/v1", "ServiceCIDR", "kubernetes", None);
        cidr["spec"] = json!({"cidrs": ["10.96.0.0/12"]});
        self.put("/apis/networking.k8s.io/v1/servicecidrs/kubernetes", cidr);
        let mut node = meta("v1", "Node", "win-1", None);
        node["metadata"]["labels"] = json!({"kubernetes.io/os": "windows"});
        self.put("/api/v1/nodes/win-1", node);
    }
}

/// An object's envelope.
pub fn meta(api_version: &str, kind: &str, name: &str, namespace: Option<&str>) -> Value {
    let mut m = json!({"name": name, "uid": format!("uid-{name}"), "resourceVersion": "1", "creationTimestamp": "2026-01-01T00:00:00Z"});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    json!({"apiVersion": api_version, "kind": kind, "metadata": m})
}

pub fn calico(kind: &str, name: &str, spec: Value) -> Value {
    let mut o = meta("crd.projectcalico.org/v1", kind, name, None);
    o["spec"] = spec;
    o
}

fn status(code: StatusCode, reason: &str, message: &str) -> Response<Full<Bytes>> {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code.as_u16()});
    respond(code, &body)
}

fn respond(code: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body.to_string())));
    *r.status_mut() = code;
    r.headers_mut()
        .insert("content-type", "application/json".parse().expect("header"));
    r
}

/// The resource a path names and, for a single object, its name: `/api/v1/nodes` lists
/// nodes, `/api/v1/namespaces/x` gets namespace x, `/apis/g/v/namespaces/x/pods/p` gets pod p.
fn parse_path(path: &str) -> (String, Option<String>) {
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    let skip = if parts.first() == Some(&"api") { 2 } else { 3 };
    let rest = &parts[skip.min(parts.len())..];
    match rest {
        [plural] => ((*plural).to_owned(), None),
        [plural, name] => ((*plural).to_owned(), Some((*name).to_owned())),
        ["namespaces", _, plural] => ((*plural).to_owned(), None),
        ["namespaces", _, plural, name, ..] => ((*plural).to_owned(), Some((*name).to_owned())),
        _ => (String::new(), None),
    }
}

/// Resources served even when no object of them exists.
const CORE: &[&str] = &[
    "namespaces",
    "nodes",
    "pods",
    "secrets",
    "services",
    "configmaps",
    "serviceaccounts",
];

async fn handle(
    req: Request<Incoming>,
    state: &Mutex<State>,
    token: &str,
) -> Response<Full<Bytes>> {
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let authorised = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == format!("Bearer {token}"));
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let mut st = state.lock().expect("fake api state");
    st.requests.push((method.clone(), path.clone()));
    if !authorised {
        return status(StatusCode::UNAUTHORIZED, "Unauthorized", "Unauthorized");
    }
    if method == "POST" && path == "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" {
        let mut review: Value = serde_json::from_slice(&body).unwrap_or_default();
        let attrs = &review["spec"]["resourceAttributes"];
        let verb = attrs["verb"].as_str().unwrap_or_default().to_owned();
        let resource = attrs["resource"].as_str().unwrap_or_default().to_owned();
        let allowed = !st
            .forbidden
            .iter()
            .any(|(v, r)| *v == verb && *r == resource);
        review["status"] = json!({"allowed": allowed});
        review["apiVersion"] = json!("authorization.k8s.io/v1");
        review["kind"] = json!("SelfSubjectAccessReview");
        return respond(StatusCode::CREATED, &review);
    }
    let (resource, name) = parse_path(&path);
    let verb = match (method.as_str(), &name) {
        ("GET", Some(_)) => "get",
        ("GET", None) => "list",
        ("POST", _) => "create",
        ("DELETE", _) => "delete",
        _ => "patch",
    };
    if st
        .forbidden
        .iter()
        .any(|(v, r)| v == verb && *r == resource)
    {
        let msg = format!(
            "{resource} is forbidden: User \"admin\" cannot {verb} resource \"{resource}\""
        );
        return status(StatusCode::FORBIDDEN, "Forbidden", &msg);
    }
    if method != "GET" {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            "not served by the fake API server",
        );
    }
    let served =
        CORE.contains(&resource.as_str()) || st.objects.keys().any(|p| parse_path(p).0 == resource);
    if let Some(name) = name {
        return match st.objects.get(&path) {
            Some(o) => respond(StatusCode::OK, o),
            None => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("{resource} \"{name}\" not found"),
            ),
        };
    }
    if !served {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            "the server could not find the requested resource",
        );
    }
    let prefix = format!("{path}/");
    let items: Vec<&Value> = st
        .objects
        .iter()
        .filter(|(p, _)| {
            p.strip_prefix(&prefix)
                .is_some_and(|rest| !rest.contains('/'))
        })
        .map(|(_, o)| o)
        .collect();
    let kind = items
        .first()
        .and_then(|o| o["kind"].as_str())
        .map_or_else(|| "List".to_owned(), |k| format!("{k}List"));
    let api_version = items
        .first()
        .and_then(|o| o["apiVersion"].as_str())
        .unwrap_or("v1");
    respond(
        StatusCode::OK,
        &json!({"apiVersion": api_version, "kind": kind, "metadata": {"resourceVersion": "1"}, "items": items}),
    )
}
